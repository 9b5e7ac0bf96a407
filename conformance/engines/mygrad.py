"""mygrad 2.5.0 as a gradspec engine: `gradspec run --engine mygrad` (extra and entry point
`mygrad`, pinned to the release docs/findings.md was checked against). It lets the suite check
mygrad (https://mygrad.readthedocs.io), a NumPy autograd library with NumPy's view semantics and
its own documented in-place semantics, on the host only. docs/examples/mygrad_adapter.py is the
guide's short example (core and views); this is the full adapter.

The mapping, where it is not mygrad's function of the op's name (mg.add, mg.exp, ...):

    leaf               mg.tensor(array, constant=not requires_grad) (an integer tensor that
                       requires grad: mygrad raises, as torch does)
    sub, div, neg, abs mg.subtract, mg.divide, mg.negative, mg.absolute
    sigmoid, relu      mygrad.nnet.activations.sigmoid / relu
    clone              mg.positive (a differentiable copy: Tensor.copy() returns a tensor
                       "with copy.creator=None", cut from the graph, as its docstring says)
    pow, clamp         mg.power(t, e), mg.clip(t, min, max); sum / mean: axis=, keepdims=
    views              reshape (for view and reshape), .T, mg.swapaxes, mg.expand_dims,
                       mg.squeeze (torch's squeeze(dim) of a dim that is not 1: t[...]),
                       mg.broadcast_to (-1 keeps the dim); narrow and select by basic
                       indexing; split, chunk and unbind as the slices they return
    in-place           the op's ufunc with out=target (`mg.exp(t, out=t)`), augmented
                       assignment as itself, and `t[...] = f(t)` for sigmoid_, relu_,
                       clamp_, zero_, fill_ and copy_ (mygrad has no method of those names)
    detach, data       mg.Tensor(t.data, constant=True, copy=False): shares memory, no graph
                       (mygrad has neither, nor a version counter)
    requires_grad_     mygrad fixes `constant` at creation: a call that would not change the
                       flag does nothing, one that would raises AdapterLimit
    backward           t.backward(gradient.data); no inputs=, no retain_graph (mygrad clears
                       the graph after every backward); autograd.backward: one tensor only
    set_grad           None: t.null_grad(); a tensor: AdapterLimit (.grad has no setter)
    get_grad           the .grad array as a constant tensor
    grad modes         mg.no_autodiff for no_grad and set_grad_enabled(False); enable_grad
                       and set_grad_enabled(True) are nothing outside it, AdapterLimit
                       inside (mygrad cannot re-enable); is_grad_enabled: mg.no_autodiff.state
    base               t.base
    is_leaf            adapter bookkeeping (mygrad's `creator` is cleared by backward, so it
                       cannot say): torch's rule, a tensor that does not require grad, or one
                       the adapter never saw with a creator

Capabilities: core, views, inplace, narrow_select, multi_views and view_base. The `inplace`
probe fails on purpose: mygrad documents in-place writes to tensors that are not constants,
leaves included (the Tensor docstring, "Producing a View of a Tensor"), where torch raises
LEAF_INPLACE; the declaration stands so that its in-place and view semantics are tested, and
the LEAF_INPLACE divergences are classed in docs/findings.md. Not declared: grad_modes (results
made under mg.no_autodiff are not constants: its probe fails on requires_grad), deriv_ops
(mg.floor / sign / rint refuse tensors that are not constants, astype leaves the graph, as
documented); the methods exist so that `gradspec engines --probe` shows why. No grad_fn, hooks,
retain_grad, version counter, autograd.grad, backward(inputs=) or warnings.

Error kinds, where mygrad's message means the spec's (spec/errors.md); the rest is OTHER:

    REQUIRES_GRAD_DTYPE  ValueError "Integer-valued tensors must be treated as constants."
    GRAD_OUTPUT_SHAPE    ValueError "`tensor.backward(grad)` was passed a gradient with an
                         incompatible shape" (mygrad broadcasts a gradient that fits, torch
                         refuses any other shape)
"""
from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

from ..lang import ops
from .base import Engine

RELEASE = "2.5.0"
CAPABILITIES = frozenset({"core", "views", "inplace", "narrow_select", "multi_views",
                          "view_base"})
CLASSES = frozenset({"core"})

# (exception type, message fragment, spec error kind): see the module docstring
ERROR_KINDS: list[tuple[type[BaseException], str, str]] = [
    (ValueError, "Integer-valued tensors must be treated as constants", "REQUIRES_GRAD_DTYPE"),
    (ValueError, "was passed a gradient with an incompatible shape", "GRAD_OUTPUT_SHAPE"),
]


class AdapterLimit(NotImplementedError):
    """A statement this adapter cannot express on mygrad (not a mygrad divergence)."""


def _import_mygrad():
    import mygrad
    return mygrad


class MygradEngine(Engine):
    name = "mygrad"
    capabilities = CAPABILITIES
    classes = CLASSES

    def __init__(self, device: str = "cpu"):
        import numpy as np
        self.mg, self.np = _import_mygrad(), np
        from importlib import metadata

        from mygrad.nnet.activations import relu, sigmoid
        self.version = metadata.version("mygrad")
        self.device = device
        self._dtype = {"float32": np.float32, "float64": np.float64, "int64": np.int64,
                       "bool": np.bool_}
        mg = self.mg
        self._calls: dict[str, Callable[..., Any]] = {
            "add": mg.add, "sub": mg.subtract, "mul": mg.multiply, "div": mg.divide,
            "neg": mg.negative, "exp": mg.exp, "log": mg.log, "sin": mg.sin, "cos": mg.cos,
            "tanh": mg.tanh, "abs": mg.absolute, "sqrt": mg.sqrt, "matmul": mg.matmul,
            "clone": mg.positive, "sigmoid": sigmoid, "relu": relu, "floor": mg.floor,
            "sign": mg.sign, "round": mg.rint}
        # id -> (weak reference, seen with a creator): the tensors this adapter has seen
        self._made: dict[int, tuple[weakref.ref, bool]] = {}

    # ---- bookkeeping for is_leaf ----------------------------------------------------------
    def _mark(self, t: Any) -> Any:
        if not isinstance(t, self.mg.Tensor):
            return t
        entry = self._made.get(id(t))
        had = t.creator is not None
        if entry is not None and entry[0]() is t:
            had = had or entry[1]
        key = id(t)
        self._made[key] = (weakref.ref(t, lambda _r, k=key: self._made.pop(k, None)), had)
        return t

    def _sweep(self) -> None:
        """Note every live tensor that has a creator now (an in-place write gives the target
        and its views one; backward clears them all)."""
        for ref, _ in list(self._made.values()):
            t = ref()
            if t is not None:
                self._mark(t)

    def _result(self, t: Any) -> Any:
        self._mark(t)
        self._sweep()
        return t

    # ---- construction and ops -------------------------------------------------------------
    def leaf(self, values, shape, dtype, requires_grad):
        data = self.np.array(values, dtype=self._dtype[dtype]).reshape(shape)
        return self._mark(self.mg.tensor(data, constant=not requires_grad))

    def call(self, fn, args, kw):
        return self._result(self._compute(fn, list(args), kw))

    def _compute(self, fn: str, args: list[Any], kw: dict[str, Any]) -> Any:
        special = SPELLING.get(fn)
        if special is not None:
            return special(self, args, kw)
        if fn not in self._calls:
            raise AdapterLimit(f"mygrad adapter: no op {fn}")
        return self._calls[fn](*args)

    def view(self, target, fn, kw):
        return self._result(VIEWS[fn](self, target, kw))

    def view_many(self, target, fn, kw):
        n = target.shape[kw["dim"]] if target.ndim else 0
        if fn == "unbind":
            return [self.view(target, "select", {"dim": kw["dim"], "index": i})
                    for i in range(n)]
        if fn == "chunk":
            step = -(-n // kw["chunks"]) if n else 1
            sizes = [min(step, n - s) for s in range(0, n, step)] or [0]
        elif isinstance(kw["size"], int):
            sizes = [min(kw["size"], n - s) for s in range(0, n, kw["size"])] or [0]
        else:
            sizes = list(kw["size"])
        out, start = [], 0
        for size in sizes:
            out.append(self.view(target, "narrow", {"dim": kw["dim"], "start": start,
                                                    "length": size}))
            start += size
        return out

    def getitem(self, target, index):
        return self._result(target[index[0] if len(index) == 1 else index])

    def detach(self, t):
        return self._mark(self.mg.Tensor(t.data, constant=True, copy=False))

    data = detach       # mygrad has no `.data` tensor; see the module docstring

    def requires_grad_(self, t, value):
        if bool(value) != self.requires_grad(t):
            raise AdapterLimit("mygrad fixes `constant` when a tensor is made")

    # ---- in-place ops ---------------------------------------------------------------------
    def inplace(self, target, fn, args, kw):
        row = ops.lookup("inplace", fn)
        if row.augmented:
            out = ops.apply(row, [target, *args], kw)
        elif fn in ("zero_", "fill_", "copy_"):
            target[...] = 0.0 if fn == "zero_" else args[0]
            out = target
        elif row.of in ("sigmoid", "relu", "clamp"):
            target[...] = self._compute(row.of, [target], kw)
            out = target
        elif row.of == "pow":
            out = self.mg.power(target, kw["exponent"], out=target)
        else:
            out = self._calls[row.of](target, *args, out=target)    # type: ignore[index]
        return self._result(out)

    def setitem(self, target, index, value):
        target[index[0] if len(index) == 1 else index] = value
        self._result(target)

    # ---- grad modes (implemented, not declared: see the module docstring) ------------------
    def grad_mode(self, mode, enabled=True):
        off = mode == "no_grad" or (mode == "set_grad_enabled" and not enabled)
        if off:
            return self.mg.no_autodiff
        if mode in ("enable_grad", "set_grad_enabled"):
            if self.is_grad_enabled():
                return contextlib.nullcontext()
            raise AdapterLimit("mygrad cannot turn graph tracking on inside mg.no_autodiff")
        raise AdapterLimit(f"mygrad: no grad mode {mode!r}")

    def grad_mode_decorator(self, mode, enabled=True):
        def wrap(f):
            def run(*a, **k):
                with self.grad_mode(mode, enabled):
                    return f(*a, **k)
            return run
        return wrap

    def is_grad_enabled(self):
        return bool(self.mg.no_autodiff.state)

    # ---- backward -------------------------------------------------------------------------
    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        if inputs is not None:
            raise AdapterLimit("mygrad: Tensor.backward has no inputs=")
        if retain_graph or create_graph:
            raise AdapterLimit("mygrad clears the graph after every backward")
        self._sweep()
        t.backward(None if gradient is None else gradient.data)

    def autograd_backward(self, tensors, grad_tensors, retain_graph, create_graph=False):
        tensors = list(tensors)
        if len(tensors) != 1:
            raise AdapterLimit("mygrad backpropagates from one tensor at a time")
        self.backward(tensors[0], grad_tensors[0] if grad_tensors else None, retain_graph,
                      None, create_graph)

    def set_grad(self, t, value):
        if value is not None:
            raise AdapterLimit("mygrad's .grad has no setter (only null_grad())")
        t.null_grad()

    # ---- observation ----------------------------------------------------------------------
    def to_list(self, t):
        return self.np.asarray(t.data if isinstance(t, self.mg.Tensor) else t).tolist()

    def get_grad(self, t):
        g = t.grad
        return None if g is None else self.mg.Tensor(g, constant=True, copy=False)

    def is_leaf(self, t):
        if not self.requires_grad(t):
            return True
        self._mark(t)
        return not self._made[id(t)][1]

    def requires_grad(self, t):
        return not t.constant

    def shape(self, t):
        return tuple(int(s) for s in t.shape)

    def dtype(self, t):
        return self.np.dtype(t.dtype).name

    def base(self, t):
        return t.base

    # ---- errors ---------------------------------------------------------------------------
    def classify_error(self, exc):
        if isinstance(exc, AdapterLimit):
            return None
        for typ, fragment, kind in ERROR_KINDS:
            if isinstance(exc, typ) and fragment in str(exc):
                return kind
        return None


# ---- mygrad's own spellings --------------------------------------------------------------
Spelling = Callable[[MygradEngine, list[Any], dict[str, Any]], Any]


def _axis(kw: dict[str, Any]) -> Any:
    dim = kw.get("dim")
    return tuple(dim) if isinstance(dim, list) else dim


def _reduce(name: str) -> Spelling:
    def run(e: MygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
        return getattr(e.mg, name)(args[0], axis=_axis(kw), keepdims=bool(kw.get("keepdim")))
    return run


def _constant(name: str) -> Spelling:
    """Results mygrad returns as NumPy values (comparisons, argmax), as constant tensors."""
    def run(e: MygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
        f = getattr(e.mg, name)
        out = f(*args) if name not in ("argmax", "argmin") else \
            f(args[0], axis=kw.get("dim"), keepdims=bool(kw.get("keepdim")))
        return e.mg.Tensor(e.np.asarray(out), constant=True)
    return run


def _cast(dtype: str) -> Spelling:
    def run(e: MygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
        return args[0].astype(e._dtype[dtype])
    return run


SPELLING: dict[str, Spelling] = {
    "pow": lambda e, a, kw: e.mg.power(a[0], kw["exponent"]),
    "clamp": lambda e, a, kw: e.mg.clip(a[0], kw.get("min"), kw.get("max")),
    "sum": _reduce("sum"), "mean": _reduce("mean"),
    "max": _reduce("max"), "min": _reduce("min"),
    "max_dim": _reduce("max"), "min_dim": _reduce("min"),
    "argmax": _constant("argmax"), "argmin": _constant("argmin"),
    **{n: _constant(f) for n, f in (("gt", "greater"), ("lt", "less"), ("ge", "greater_equal"),
                                    ("le", "less_equal"), ("eq", "equal"),
                                    ("ne", "not_equal"))},
    "double": _cast("float64"), "float": _cast("float32"), "long": _cast("int64"),
    "where": lambda e, a, kw: e.mg.where(a[1], a[0], a[2]),     # torch: a.where(cond, b)
}


def _dim(t: Any, dim: int) -> int:
    return dim + t.ndim if dim < 0 else dim


def _narrow(e: MygradEngine, t: Any, kw: dict[str, Any]) -> Any:
    d = _dim(t, kw["dim"])
    start = kw["start"] + t.shape[d] if kw["start"] < 0 else kw["start"]
    return t[(slice(None),) * d + (slice(start, start + kw["length"]),)]


def _select(e: MygradEngine, t: Any, kw: dict[str, Any]) -> Any:
    return t[(slice(None),) * _dim(t, kw["dim"]) + (kw["index"],)]


def _squeeze(e: MygradEngine, t: Any, kw: dict[str, Any]) -> Any:
    dim = kw.get("dim")
    if dim is None:
        return e.mg.squeeze(t)
    if t.ndim == 0 or t.shape[_dim(t, dim)] != 1:
        return t[...]       # torch: a view of the same shape
    return e.mg.squeeze(t, axis=dim)


def _expand(e: MygradEngine, t: Any, kw: dict[str, Any]) -> Any:
    size = list(kw["size"])
    lead = len(size) - t.ndim
    size = [t.shape[i - lead] if s == -1 else s for i, s in enumerate(size)]
    return e.mg.broadcast_to(t, tuple(size))


ViewFn = Callable[[MygradEngine, Any, dict[str, Any]], Any]
VIEWS: dict[str, ViewFn] = {
    "reshape": lambda e, t, kw: t.reshape(tuple(kw["shape"])),
    "view": lambda e, t, kw: t.reshape(tuple(kw["shape"])),
    "t": lambda e, t, kw: t.T,
    "transpose": lambda e, t, kw: e.mg.swapaxes(t, *kw["dims"]),
    "unsqueeze": lambda e, t, kw: e.mg.expand_dims(t, kw["dim"]),
    "squeeze": _squeeze, "expand": _expand, "narrow": _narrow, "select": _select,
}


def _check_against_the_table() -> None:
    unknown = sorted((set(SPELLING) | set(VIEWS)) - set(ops.ROWS))
    if unknown:
        raise ValueError(f"mygrad adapter: {unknown} are not rows of the op table")


_check_against_the_table()


def mygrad_engine(device: str = "cpu") -> MygradEngine:
    from . import EngineError
    try:
        _import_mygrad()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise EngineError(f"engine 'mygrad': cannot import mygrad ({type(exc).__name__}: "
                          f"{first}); install the 'mygrad' extra (mygrad=={RELEASE})") from None
    if device != "cpu":
        raise EngineError(f"engine 'mygrad' on {device}: mygrad runs on NumPy, on the host only")
    return MygradEngine(device)


engine = mygrad_engine
