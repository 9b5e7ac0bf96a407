"""PaddlePaddle (dynamic graph, CPU) as a gradspec engine: `load_engine('paddle')`.

It implements no clause; it lets the suite check Paddle against all clauses whose capabilities
(spec/README.md) it declares. What it found is in docs/findings.md.

Each adapter method is the paddle code a torch program statement maps onto:

    requires_grad            not t.stop_gradient (t.requires_grad_ to set it)
    retain_grad              t.retain_grads()
    register_hook            t.register_hook(fn), removable handle
    _version                 t.inplace_version
    autograd.grad            paddle.grad
    grad modes               paddle.no_grad / enable_grad / set_grad_enabled
    in-place ops             add_ subtract_ multiply_ divide_ pow_ clip_ ... F.relu_; Python
                             numbers become 0-d tensors of the target's dtype (paddle's add_
                             etc. take tensors only); `x += y` is Python's augmented assignment
    copy_                    paddle.assign(src, output=t), Paddle's documented mapping of
                             torch's copy_; src cast to t's dtype and broadcast to its shape
                             first (assign gives `output` src's shape and dtype)
    views                    reshape view t transpose (a permutation) unsqueeze squeeze expand,
                             basic indexing. All share data and inplace_version with their base
                             except expand, which copies (docs/findings.md).

Adapter limitations (not paddle divergences; docs/findings.md lists them):
- backward(inputs=...) has no paddle equivalent: `backward_inputs` is not declared, so the
  generator draws no `inputs=`; a replayed program that has one raises AdapterLimit (OTHER).
- `retains_grad` is not a paddle attribute: it is adapter bookkeeping, True once retain_grads()
  ran through the adapter on a tensor that is not a leaf.
- grad_fn: paddle's `grad_fn` exists but its node names (ExpGradNode, GradNodeAccumulation) are
  paddle's own, and every leaf, even one with stop_gradient=True, has a GradNodeAccumulation
  node, so 'grad_fn' is not declared. grad_fn_name/next_functions still report what paddle has.
- node_hooks: GradNodeBase has only a private _register_post_hook; not declared.
- post_accumulate_hooks: paddle has no public post-accumulate-grad hook; the only Tensor hook
  run after accumulation is the private `_register_backward_hook`, a void hook that takes no
  argument (PaddlePaddle/Paddle#32171). Not declared, so the generator draws none, and
  register_post_accumulate_grad_hook is not implemented (docs/findings.md, P14).
- warnings: paddle emits none of the warnings of spec/errors.md; not declared.

Error kinds (`classify_error`): paddle raises ValueError/RuntimeError/SystemError whose message
starts with an error class in parentheses. A kind is mapped when the paddle error means the
same thing as the spec's (spec/errors.md):

    LEAF_INPLACE            "Leaf Var (...) that doesn't stop gradient can't use inplace
                            strategy." (in-place op) / "Leaf Tensor (...) that doesn't stop
                            gradient can't use inplace strategy." (setitem)
    VERSION_MISMATCH        "Tensor '...' used in gradient computation has been modified by an
                            inplace operation. Its version is N but the expected version is M."
    GRAPH_FREED             "(Fatal) The TensorWrappers of SumGradNode do not exist."
    HOOK_NO_REQUIRES_GRAD   "Cannot register hook on a tensor that stop gradient." (register_hook)
    UNUSED_INPUT            "The 1-th input does not appear in the backward graph. Please check
                            the input tensor or set allow_unused=True to get None result." (also
                            what paddle says for an input that does not require grad, where
                            torch raises INPUT_NO_REQUIRES_GRAD)
    GRAD_OUTPUT_SHAPE       AssertionError "Tensor shape not match, Tensor of grad_tensor [...]
                            with shape [2, 3] mismatch Tensor [...] with shape [3]" (backward's
                            grad_tensor; paddle.grad does not check grad_outputs' shape)
Everything else is OTHER, e.g. "The Tensor can not be viewed, please call reshape." (view of a
0-d tensor) and "(PreconditionNotMet) ... Tensor Copy cannot be performed!" (.grad assignment).
"""
from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable
from typing import Any

from ..lang import ops
from .base import Engine

CAPABILITIES = frozenset({
    "core", "retain_grad", "hooks", "version_counter", "views", "inplace", "autograd_grad",
    "grad_modes", "retain_graph"})
# Conformance classes (spec/README.md): core only. torch-observable is torch's own build, which
# paddle does not share: its nodes have paddle's names (ExpGradNode, and GradNodeAccumulation
# even on leaves that stop gradient), it saves other tensors than torch's table (P6 in
# docs/findings.md) and runs the hooks of several leaves in another order (P17). diagnostics:
# paddle emits none of the warnings of spec/errors.md and words its errors its own way (the
# kinds are mapped from its messages below, the prefixes are paddle's).
CLASSES = frozenset({"core"})

# paddle message fragment -> spec error kind (see the module docstring)
ERROR_KINDS: list[tuple[str, str]] = [
    (r"Leaf (Var|Tensor) \(.*\) that doesn't stop gradient can't use inplace strategy",
     "LEAF_INPLACE"),
    (r"used in gradient computation has been modified by an inplace operation",
     "VERSION_MISMATCH"),
    (r"The TensorWrappers of \w+ do not exist", "GRAPH_FREED"),
    (r"Cannot register hook on a tensor that stop gradient", "HOOK_NO_REQUIRES_GRAD"),
    (r"input does not appear in the backward graph", "UNUSED_INPUT"),
    (r"Tensor shape not match, Tensor of grad_tensor", "GRAD_OUTPUT_SHAPE"),
]

# Where paddle spells an op of the table (conformance/lang/ops.py) otherwise than torch: a
# method of another name with the same arguments, or a function (engine, target, operands, kw)
# in SPELLING below. Every other op runs as torch spells it; both tables are checked against
# the rows at import.
RENAMED = {"clamp": "clip", "clamp_": "clip_", "sub_": "subtract_", "mul_": "multiply_",
           "div_": "divide_"}
# In-place ops whose number operands paddle takes only as tensors (0-d, of the target's dtype).
NUMBERS_AS_TENSORS = frozenset({"add_", "sub_", "mul_", "div_"})


class AdapterLimit(NotImplementedError):
    """A statement this adapter cannot express on paddle (not a paddle divergence)."""


def _import_paddle():
    os.environ.setdefault("GLOG_minloglevel", "2")      # paddle's C++ log lines on stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # "No ccache found" at import
        import paddle
    return paddle


class PaddleEngine(Engine):
    name = "paddle"
    capabilities = CAPABILITIES
    classes = CLASSES

    def __init__(self, device: str = "cpu"):
        self.paddle = _import_paddle()
        import paddle.nn.functional as F
        self.F = F
        self.version = self.paddle.__version__
        self.device = device
        self.paddle.set_device("gpu" if device == "cuda" else "cpu")
        self._retaining: dict[int, Any] = {}    # id -> tensor (kept alive so ids stay unique)

    # ---- construction and ops -------------------------------------------------------------
    def leaf(self, values, shape, dtype, requires_grad):
        import numpy as np
        arr = np.array(values, dtype=dtype).reshape(list(shape))
        return self.paddle.to_tensor(arr, dtype=dtype, stop_gradient=not requires_grad)

    def _tensor(self, v: Any, like: Any) -> Any:
        """A Python number as a 0-d tensor of `like`'s dtype (paddle's in-place ops need one)."""
        if isinstance(v, (int, float)):
            return self.paddle.to_tensor(float(v), dtype=like.dtype)
        return v

    def _apply(self, row: ops.Op, args: list[Any], kw: dict[str, Any]) -> Any:
        special = SPELLING.get(row.name)
        if special is not None:
            return special(self, args[0], args[1:], kw)
        return ops.apply(row, args, kw, RENAMED.get(row.name))

    def call(self, fn, args, kw):
        return self._apply(ops.lookup("call", fn), list(args), kw)

    def view(self, target, fn, kw):
        return self._apply(ops.lookup("view", fn), [target], kw)

    def getitem(self, target, index):
        return target[index]

    def inplace(self, target, fn, args, kw):
        """The name stays bound to `target`, except for augmented assignment: Python rebinds to
        what paddle's `x += y` returns, which is a new tensor (docs/findings.md)."""
        row = ops.lookup("inplace", fn)
        if row.augmented:
            return ops.apply(row, [target, *args], kw)
        if fn in NUMBERS_AS_TENSORS:
            args = [self._tensor(a, target) for a in args]
        self._apply(row, [target, *args], kw)
        return target

    def setitem(self, target, index, value):
        target[index] = value

    def detach(self, t):
        return t.detach()

    def data(self, t):
        return t.data

    def requires_grad_(self, t, value):
        t.requires_grad_(value)

    def retain_grad(self, t):
        t.retain_grads()
        self._retaining[id(t)] = t

    # ---- hooks ----------------------------------------------------------------------------
    def register_hook(self, t, fn):
        return t.register_hook(fn)

    def remove_hook(self, handle):
        handle.remove()

    # ---- grad modes -----------------------------------------------------------------------
    def grad_mode(self, mode, enabled=True):
        if mode == "set_grad_enabled":
            return self.paddle.set_grad_enabled(enabled)
        return getattr(self.paddle, mode)()

    def grad_mode_decorator(self, mode, enabled=True):
        return self.grad_mode(mode, enabled)    # paddle's mode objects decorate too

    def is_grad_enabled(self):
        return self.paddle.is_grad_enabled()

    # ---- backward -------------------------------------------------------------------------
    def backward(self, t, gradient, retain_graph, inputs):
        if inputs is not None:
            raise AdapterLimit("paddle: Tensor.backward has no inputs= (adapter limitation)")
        t.backward(grad_tensor=gradient, retain_graph=bool(retain_graph))

    def autograd_backward(self, tensors, grad_tensors, retain_graph):
        self.paddle.autograd.backward(list(tensors), grad_tensors=list(grad_tensors)
                                      if grad_tensors is not None else None,
                                      retain_graph=bool(retain_graph))

    def autograd_grad(self, outputs, inputs, grad_outputs, retain_graph, allow_unused):
        return self.paddle.grad(list(outputs), list(inputs),
                                grad_outputs=list(grad_outputs) if grad_outputs is not None
                                else None,
                                retain_graph=retain_graph, allow_unused=allow_unused)

    def set_grad(self, t, value):
        t.grad = value

    # ---- observation ----------------------------------------------------------------------
    def to_list(self, t):
        return t.numpy().tolist()

    def get_grad(self, t):
        return t.grad

    def is_leaf(self, t):
        return bool(t.is_leaf)

    def requires_grad(self, t):
        return not t.stop_gradient

    def shape(self, t):
        return tuple(int(s) for s in t.shape)

    def dtype(self, t):
        return str(t.dtype).rsplit(".", 1)[-1]

    def grad_fn_name(self, t):
        return t.grad_fn.name() if t.grad_fn is not None else None

    def next_functions(self, t):
        if t.grad_fn is None:
            return []
        return [f.name() if f is not None else None for f in t.grad_fn.next_functions]

    def version_counter(self, t):
        return int(t.inplace_version)

    def retains_grad(self, t):
        return id(t) in self._retaining and self._retaining[id(t)] is t and not t.is_leaf

    def scale(self, g, factor):
        return g * factor

    def wrong_shape(self, g):
        n = 1
        for s in g.shape:
            n *= int(s)
        return self.paddle.zeros([n + 1], dtype=g.dtype)

    # ---- errors ---------------------------------------------------------------------------
    def classify_error(self, exc):
        if isinstance(exc, AdapterLimit):
            return None
        text = str(exc)
        for pattern, kind in ERROR_KINDS:
            if re.search(pattern, text):
                return kind
        return None



# ---- paddle's own spellings ---------------------------------------------------------------
Spelling = Callable[[PaddleEngine, Any, list[Any], dict[str, Any]], Any]


def _reduce(method: str) -> Spelling:
    def run(e: PaddleEngine, t: Any, operands: list[Any], kw: dict[str, Any]) -> Any:
        return getattr(t, method)(axis=kw.get("dim"), keepdim=bool(kw.get("keepdim", False)))
    return run


def _sizes(method: str, key: str) -> Spelling:
    def run(e: PaddleEngine, t: Any, operands: list[Any], kw: dict[str, Any]) -> Any:
        return getattr(t, method)(list(kw[key]))
    return run


def _transpose(e: PaddleEngine, t: Any, operands: list[Any], kw: dict[str, Any]) -> Any:
    n = len(t.shape)            # paddle's transpose takes a whole permutation
    d0, d1 = (d % n if n else d for d in kw["dims"])
    perm = list(range(n))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return t.transpose(perm)


def _copy_(e: PaddleEngine, t: Any, operands: list[Any], kw: dict[str, Any]) -> Any:
    """torch's `t.copy_(src)` as Paddle's documented mapping of it, `paddle.assign(src,
    output=t)` (docs/findings.md, P10; not the undocumented C method `Tensor.copy_(src, True)`).
    assign gives `output` the shape and dtype of `src` (its documented return), so a `src` of
    another dtype or shape is first cast to t's dtype and broadcast to t's shape, as a user
    porting a broadcasting copy_ writes it; a number becomes a full tensor like t."""
    src = operands[0]
    if isinstance(src, (int, float)):
        src = e.paddle.full_like(t, float(src))
    else:
        if src.dtype != t.dtype:
            src = src.astype(t.dtype)
        if list(src.shape) != list(t.shape):
            src = e.paddle.broadcast_to(src, list(t.shape))
    e.paddle.assign(src, output=t)
    return t


SPELLING: dict[str, Spelling] = {
    "relu": lambda e, t, operands, kw: e.F.relu(t),
    "sum": _reduce("sum"), "mean": _reduce("mean"),
    "reshape": _sizes("reshape", "shape"), "view": _sizes("view", "shape"),
    "expand": _sizes("expand", "size"), "transpose": _transpose,
    "relu_": lambda e, t, operands, kw: e.F.relu_(t),
    "fill_": lambda e, t, operands, kw: t.fill_(operands[0]),
    "copy_": _copy_,
}


def _check_against_the_table() -> None:
    for table in (RENAMED, NUMBERS_AS_TENSORS, SPELLING):
        unknown = sorted(set(table) - set(ops.ROWS))
        if unknown:
            raise ValueError(f"paddle adapter: {unknown} are not rows of the op table")


_check_against_the_table()


def paddle_engine(device: str = "cpu") -> PaddleEngine:
    from . import EngineError
    try:
        _import_paddle()
    except Exception as exc:
        raise EngineError(f"engine 'paddle': cannot import paddle ({type(exc).__name__}: "
                          f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); "
                          f"install the 'paddle' extra") from None
    if device == "cuda":
        import paddle
        if not paddle.device.is_compiled_with_cuda():
            raise EngineError("engine 'paddle' on cuda: this paddle build has no CUDA")
    return PaddleEngine(device)
