"""Op statements as compiled regions: the part of the torch.compile and thunder adapters
(conformance/engines/compiled.py, thunder.py) that builds, checks and caches the one-statement
functions they compile. `RegionTorch` is TorchLike with every `call`, `view`, `getitem`,
`inplace` (incl. augmented assignment) and `setitem` run as its own function, compiled by the
subclass's `_compile`, its tensor operands as inputs and its constants (fn, exponent, dims,
index) inlined in the source. A region spanning several statements would leave errors and
intermediate tensors without a statement to attach them to.

Source. A region's source is written by the op table (conformance/lang/ops.py: `source`,
`index_source`, `literal`) from the op's row and Python literals only: an `fn` that is not a
row of the table, or a setting that is not a literal, is refused (OpError) before any source
is built; no name, label or other text of a program reaches it (its parameters are `a`,
`t0`, `t1`, ...). Before it is compiled, `region_source` parses the text and refuses
(HarnessError) any node, name, attribute, keyword or constant a region cannot hold.

Caches. A compiled function is cached per generated source text (one code object each);
`reset()` clears the cache (and the compiler's, in a subclass), every RESET_EVERY compiled
functions, to keep memory bounded.

`.data` aliases. A `.data` alias written together with the tensor it is of is not passed to the
region beside that tensor (AOTAutograd refuses two such inputs); the region takes `.data` itself
(`_written`, docs/findings.md C5).
"""
from __future__ import annotations

import ast
import math
from typing import Any, NoReturn

from ..lang import ops
from ..lang.program import HarnessError
from .torchlike import TorchLike

RESET_EVERY = 2000


def _index_src(index: tuple[Any, ...]) -> str:
    """A Python index (ints and slices) as the text between brackets, a tuple display."""
    return ops.index_source(index, as_tuple=True)


# What a region's source may hold, and nothing else: its parameters, the methods and
# operators of the op table's rows, the keywords of its settings, and number, bool, None and
# `...` literals (conformance/lang/ops.py, `literal`; `index_source` writes an index's Ellipsis
# as `...`). A value from a program file that is not one
# of those never reaches `exec`: region_source refuses the text first.
_METHODS = frozenset(r.method for r in ops.OPS)
_ATTRIBUTES = _METHODS | {"data"}      # `.data`, taken inside a region that writes it (C5)
_LOCALS = ("d",)                        # the one local a region may bind: `d = a.data`
_KEYWORDS = frozenset(k for r in ops.OPS for k in r.kw) | {"keepdim"}
_NODES = (ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign,
          ast.AugAssign, ast.Name, ast.Load, ast.Store, ast.Attribute, ast.Call, ast.keyword,
          ast.Constant, ast.Tuple, ast.List, ast.Subscript, ast.Slice, ast.UnaryOp, ast.USub,
          ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult, ast.Pow, ast.Compare,
          ast.Gt, ast.GtE, ast.Lt, ast.LtE, ast.Eq, ast.NotEq)


def _literal(value: Any) -> bool:
    """Whether a constant is one a region may hold: None, `...`, a bool, an int, a finite
    float."""
    return value is None or value is Ellipsis or isinstance(value, (bool, int)) or (
        isinstance(value, float) and math.isfinite(value))


def region_source(src: str, params: list[str]) -> str:
    """`src`, the source of one region (`def region(params): ...`), once it is checked to
    hold only what a region may (above); HarnessError otherwise."""
    def refuse(what: str) -> NoReturn:
        raise HarnessError(f"refusing to compile a region holding {what}: {src!r}")
    if not src.isascii() or not all(c.isprintable() or c == "\n" for c in src):
        refuse("a character other than printable ASCII and newlines")
    tree = ast.parse(src, mode="exec")
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        refuse("more than one function")
    fn = tree.body[0]
    if fn.name != "region" or fn.decorator_list or [a.arg for a in fn.args.args] != params:
        refuse("another signature")
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            refuse(type(node).__name__)
        if isinstance(node, ast.Name) and node.id not in params and node.id not in _LOCALS:
            refuse(f"the name {node.id!r}")
        if isinstance(node, ast.Attribute) and node.attr not in _ATTRIBUTES:
            refuse(f"the attribute {node.attr!r}")
        if isinstance(node, ast.keyword) and node.arg not in _KEYWORDS:
            refuse(f"the keyword {node.arg!r}")
        if isinstance(node, ast.Constant) and not _literal(node.value):
            refuse(f"the constant {node.value!r}")
    return src



class RegionTorch(TorchLike):
    """TorchLike with every op statement run as a compiled region (module docstring); a
    subclass gives `_compile` (a region's function -> the callable to run) and may extend
    `reset`."""

    def __init__(self, module: Any, name: str, device: str, capabilities: frozenset[str]):
        super().__init__(module, name, device, capabilities)
        self._fns: dict[str, Any] = {}
        self._compiled = 0          # functions compiled since the last reset
        from torch.utils.weak import WeakIdKeyDictionary
        self._data_of: Any = WeakIdKeyDictionary()     # a `.data` alias -> the tensor it is of

    def _compile(self, fn: Any) -> Any:
        raise NotImplementedError

    def reset(self) -> None:
        self._fns.clear()
        self._compiled = 0

    def _run(self, params: list[str], body: list[str], *args: Any) -> Any:
        """Compile `def region(params): body` (the body's lines) once per source text with
        the engine's compiler (`_compile`) and call it on args."""
        src = f"def region({', '.join(params)}):\n" + "".join(f"    {ln}\n" for ln in body)
        fn = self._fns.get(src)
        if fn is None:
            if self._compiled >= RESET_EVERY:
                self.reset()
            scope: dict[str, Any] = {}
            exec(compile(region_source(src, params), f"<gradspec region {len(self._fns)}>",
                         "exec"), scope)
            fn = self._fns[src] = self._compile(scope["region"])
            self._compiled += 1
        return fn(*args)

    def _operands(self, args: list[Any]) -> tuple[list[str], list[Any]]:
        """Source text per operand: tensors become parameters, numbers are inlined."""
        names, tensors = [], []
        for a in args:
            if isinstance(a, (int, float)) and not isinstance(a, bool):
                names.append(ops.literal(a))
            else:
                names.append(f"t{len(tensors)}")
                tensors.append(a)
        return names, tensors

    def call(self, fn, args, kw):
        row = ops.lookup("call", fn)
        names, tensors = self._operands(list(args))
        params = [f"t{i}" for i in range(len(tensors))]
        return self._run(params, [f"return {ops.source(row, names, kw)}"], *tensors)

    def view(self, target, fn, kw):
        row = ops.lookup("view", fn)
        return self._run(["a"], [f"return {ops.source(row, ['a'], kw)}"], target)

    def getitem(self, target, index):
        return self._run(["a"], [f"return a[{_index_src(index)}]"], target)

    def inplace(self, target, fn, args, kw):
        row = ops.lookup("inplace", fn)
        params, inputs, first, t, names = self._written(target, list(args))
        src = ops.source(row, [t, *names], kw)
        body = [*first, src, f"return {t}"] if row.augmented else [*first, f"return {src}"]
        out = self._run(params, body, *inputs)
        if first:               # the name is bound to the region's own `.data` of the tensor
            self._data_of[out] = self._data_of[target]
        return out

    def setitem(self, target, index, value):
        params, inputs, first, t, names = self._written(target, [value])
        self._run(params, [*first, f"{t}[{_index_src(index)}] = {names[0]}"], *inputs)

    def _written(self, target: Any, args: list[Any]
                 ) -> tuple[list[str], list[Any], list[str], str, list[str]]:
        """The pieces of a region that writes `target` with operands `args`: its parameters,
        its inputs, the lines before the op, the target's text and the operands' texts.

        Without `.data` aliases that is parameters a, t0, t1, ... for target and tensor
        operands. A `.data` alias (made by `data`, nothing recorded on it since) that shares
        memory with another operand is not passed as an input of its own: AOTAutograd refuses a
        region that mutates one of two inputs sharing memory that are not differentiable views
        of each other ("does not yet handle non-differentiable view input mutations"), a case
        made only by passing the alias in from outside. The region takes `.data` of the tensor
        the alias is of instead, as a user who writes `d = x.data; d.copy_(x)` in a compiled
        function does, and the name is bound to the `d` the region returns (docs/findings.md,
        C5)."""
        names, tensors = self._operands(args)
        operands = [target, *tensors]
        alias = [self._data_of.get(t) is not None and t.grad_fn is None and not t.requires_grad
                 and any(u is not t and _shares_memory(u, t) for u in operands)
                 for t in operands]
        if not any(alias):
            return ["a"] + [f"t{i}" for i in range(len(tensors))], operands, [], "a", names
        inputs: list[Any] = []
        texts: list[str] = []
        for t, of in zip(operands, alias, strict=True):
            t = self._data_of[t] if of else t
            at = next((i for i, u in enumerate(inputs) if u is t), None)
            if at is None:
                at = len(inputs)
                inputs.append(t)
            texts.append(("a" if at == 0 else f"t{at - 1}") + (".data" if of else ""))
        params = ["a"] + [f"t{i}" for i in range(len(inputs) - 1)]
        rename = {f"t{i}": text for i, text in enumerate(texts[1:])}
        first = [f"d = {texts[0]}"] if alias[0] else []
        return (params, inputs, first, "d" if alias[0] else texts[0],
                [rename.get(n, n) for n in names])

    # ---- aliases ----------------------------------------------------------------------------
    def data(self, t):
        alias = t.data
        self._data_of[alias] = t
        return alias


def _shares_memory(a: Any, b: Any) -> bool:
    """Whether two tensors use the same storage (numbers never do)."""
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except (AttributeError, RuntimeError):
        return False
