"""tinygrad 0.10.3 as a gradspec engine: `gradspec run --engine tinygrad` (extra and entry
point `tinygrad`, pyproject.toml). It implements no clause; it lets the suite check tinygrad
against the clauses of the capabilities it declares.

Pinned to 0.10.3, the newest tinygrad whose Tensor has both `requires_grad` and a no-grad mode
(`Tensor.no_grad`, set by the context decorator `Tensor.test()`): 0.11.0 and 0.12.0 dropped
`Tensor.no_grad` (tinygrad PR #10556), 0.13.0 and 0.14.0 `requires_grad` too.

Device: `GRADSPEC_TINYGRAD_DEVICE`, else PYTHON, tinygrad's pure-Python backend: it needs no
compiler (0.10.3's CPU backend calls clang with `--target=`, which gcc refuses) and is the
one compute device 0.10.3 opens outside the main process (campaign programs run in workers). It
rounds every ALU result to its dtype, as a compiled kernel does.

The mapping, where it is not the op table's spelling (method or operator of the same name):

    leaf               Tensor(nested list, dtype=, requires_grad=); 0-d: Tensor([v]).reshape(())
                       (Tensor(v) is a constant UOp shared by equal values, so equal 0-d
                       leaves would share a gradient: tinygrad #9597, fixed in 0.12.0)
    clamp, t, where    clamp(min_, max_); .T on 2-D, the identity permute on 0-D and 1-D
                       (torch's t() returns those as they are); cond.where(a, b)
    detach, data       t.detach() for both: tinygrad has no `.data` tensor, and the two differ
                       in torch only by the version counter (VER-6), which tinygrad has not
    backward           t.backward(gradient): tinygrad never frees a graph (retain_graph has
                       nothing to say); no inputs=. autograd.backward: one tensor only
    autograd.grad      outputs[0].gradient(*inputs, gradient=g), one output only; with
                       allow_unused, one gradient() per input, None where tinygrad says "not
                       found"
    requires_grad      `t.requires_grad is True` (None, tinygrad's default, gets no gradient)
    is_leaf            adapter bookkeeping (tinygrad has no such notion), torch's rule on
                       tinygrad's tensors: made by the adapter (leaf, detach, data), or an op's
                       result that did not require grad when made, or not requiring grad now
    grad modes         Tensor.test(True / False / not enabled); is_grad_enabled: not
                       Tensor.no_grad
    in-place, setitem  Tensor.assign of the op's result; t[index] = v

Capabilities: core and autograd_grad, as the probes (`gradspec engines --probe`) confirm. The
others are absent: no grad_fn, hooks, retain_grad() (yet backward gives every tensor that
requires grad a .grad), version counter, backward(inputs=), warnings; in-place ops, grad modes
and the deriv_ops rows are implemented so that their probes run, and fail: Tensor.assign
asserts that its source does not require grad, results made under Tensor.test() and comparison
results require grad; no GRAPH_FREED for retain_graph's probe. The view ops fail their probe on
a 0.10.3 bug (see tinygrad_views_engine). Conformance class: core only.

Error kinds, where tinygrad's message means the spec's (spec/errors.md); the rest is OTHER:

    IMPLICIT_GRAD_NONSCALAR  AssertionError "when no gradient is provided, backward must be
                             called on a scalar tensor"
    GRAD_OUTPUT_SHAPE        AssertionError "grad shape must match tensor shape" (backward's
                             own check; an internal shape assertion may fail before it)
    UNUSED_INPUT             RuntimeError "... not found in ..." (gradient() of an input the
                             output does not reach)
"""
from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..lang import ops
from .base import Engine

RELEASE = "0.10.3"
CAPABILITIES = frozenset({"core", "autograd_grad"})
CLASSES = frozenset({"core"})
DEVICE_ENV = "GRADSPEC_TINYGRAD_DEVICE"

# (exception type, message fragment, spec error kind): see the module docstring
ERROR_KINDS: list[tuple[type[BaseException], str, str]] = [
    (AssertionError, "when no gradient is provided, backward must be called on a scalar",
     "IMPLICIT_GRAD_NONSCALAR"),
    (AssertionError, "grad shape must match tensor shape", "GRAD_OUTPUT_SHAPE"),
    (RuntimeError, "not found in", "UNUSED_INPUT"),
]


class AdapterLimit(NotImplementedError):
    """A statement this adapter cannot express on tinygrad (not a tinygrad divergence)."""


def _import_tinygrad():
    import tinygrad
    return tinygrad


class TinygradEngine(Engine):
    name = "tinygrad"
    capabilities = CAPABILITIES
    classes = CLASSES

    def __init__(self, device: str = "cpu", tg_device: str | None = None):
        tg = _import_tinygrad()
        from tinygrad import Device, Tensor, dtypes
        self.tg, self.Tensor, self.dtypes = tg, Tensor, dtypes
        from importlib import metadata
        self.version = metadata.version("tinygrad")
        self.device = device
        self.tg_device = (tg_device or os.environ.get(DEVICE_ENV) or "PYTHON").upper()
        Device.DEFAULT = self.tg_device     # tinygrad's own constants follow its default
        self._dtype = {"float32": dtypes.float32, "float64": dtypes.float64,
                       "int64": dtypes.int64, "bool": dtypes.bool}
        self._names = {v: k for k, v in self._dtype.items()}
        # id -> (weak reference, is a leaf): the tensors this adapter has seen made
        self._made: dict[int, tuple[weakref.ref, bool]] = {}

    # ---- bookkeeping for is_leaf ----------------------------------------------------------
    def _known(self, t: Any) -> bool:
        entry = self._made.get(id(t))
        return entry is not None and entry[0]() is t

    def _mark(self, t: Any, leaf: bool) -> Any:
        """Record how `t` was made, unless the adapter has seen it already (tinygrad returns
        the operand itself for an op that changes nothing, e.g. a reshape to its own shape)."""
        if isinstance(t, self.Tensor) and not self._known(t):
            key = id(t)
            self._made[key] = (weakref.ref(t, lambda _r, k=key: self._made.pop(k, None)), leaf)
        return t

    def _result(self, t: Any) -> Any:
        return self._mark(t, not self.requires_grad(t)) if isinstance(t, self.Tensor) else t

    # ---- construction and ops -------------------------------------------------------------
    def leaf(self, values, shape, dtype, requires_grad):
        cast = {"int64": int, "bool": bool}.get(dtype, float)
        vals = [cast(v) for v in values]
        kw = {"dtype": self._dtype[dtype], "device": self.tg_device,
              "requires_grad": bool(requires_grad)}
        if not shape:       # not Tensor(v): a constant UOp, shared by equal values (#9597)
            t = self.Tensor(vals, **kw).reshape(())
            t.requires_grad = bool(requires_grad)
        else:
            t = self.Tensor(_nest(vals, list(shape)), **kw)
        return self._mark(t, True)

    def call(self, fn, args, kw):
        row = ops.lookup("call", fn)
        special = SPELLING.get(fn)
        out = special(self, list(args), kw) if special else ops.apply(row, list(args), kw)
        return self._result(out)

    def view(self, target, fn, kw):
        row = ops.lookup("view", fn)
        special = SPELLING.get(fn)
        out = special(self, [target], kw) if special else ops.apply(row, [target], kw)
        return self._result(out)

    def getitem(self, target, index):
        return self._result(target[index[0] if len(index) == 1 else index])

    def detach(self, t):
        return self._mark(t.detach(), True)

    def data(self, t):
        return self._mark(t.detach(), True)     # see the module docstring

    def requires_grad_(self, t, value):
        t.requires_grad_(bool(value))

    # ---- in-place ops (implemented, not declared: see the module docstring) ----------------
    def inplace(self, target, fn, args, kw):
        """Tensor.assign, tinygrad's only in-place write (`t += b` is its __iadd__)."""
        row = ops.lookup("inplace", fn)
        if row.augmented:
            return ops.apply(row, [target, *args], kw)
        if fn == "zero_":
            new = target.zeros_like()
        elif fn == "fill_":
            new = target.full_like(args[0])
        elif fn == "copy_":
            src = args[0]
            new = (target.full_like(src) if not isinstance(src, self.Tensor)
                   else src.cast(target.dtype).expand(target.shape))
        else:
            of = ops.ROWS[row.of]   # type: ignore[index]
            special = SPELLING.get(of.name)
            new = special(self, [target, *args], kw) if special else \
                ops.apply(of, [target, *args], kw)
        return target.assign(new)

    def setitem(self, target, index, value):
        target[index[0] if len(index) == 1 else index] = value

    # ---- what tinygrad has not (the capabilities are not declared) --------------------------
    def _absent(self, what: str):
        raise AdapterLimit(f"tinygrad 0.10.3 has no {what}")

    def retain_grad(self, t):
        self._absent("retain_grad() (backward gives every tensor that requires grad a .grad)")

    def retains_grad(self, t):
        self._absent("retains_grad")

    def register_hook(self, t, fn):
        self._absent("tensor hooks")

    def register_post_accumulate_grad_hook(self, t, fn):
        self._absent("post-accumulate-grad hooks")

    def register_node_hook(self, t, kind, fn):
        self._absent("graph nodes (grad_fn)")

    def remove_hook(self, handle):
        self._absent("hooks")

    def grad_fn_name(self, t):
        self._absent("grad_fn (its graph is of UOps, not autograd nodes)")

    next_functions = grad_fn_name

    def version_counter(self, t):
        self._absent("version counter")

    # ---- grad modes (implemented, not declared: see the module docstring) ------------------
    def grad_mode(self, mode, enabled=True) -> AbstractContextManager[Any]:
        if mode == "no_grad":
            return self.Tensor.test(True)
        if mode == "enable_grad":
            return self.Tensor.test(False)
        if mode == "set_grad_enabled":
            return self.Tensor.test(not enabled)
        raise AdapterLimit(f"tinygrad: no grad mode {mode!r}")

    def grad_mode_decorator(self, mode, enabled=True) -> Callable[[Any], Any]:
        return self.grad_mode(mode, enabled)    # Tensor.test is a ContextDecorator

    def is_grad_enabled(self):
        return not self.Tensor.no_grad

    # ---- backward -------------------------------------------------------------------------
    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        if inputs is not None:
            raise AdapterLimit("tinygrad: Tensor.backward has no inputs=")
        if create_graph:
            raise AdapterLimit("tinygrad: Tensor.backward has no create_graph=")
        t.backward(gradient)

    def autograd_backward(self, tensors, grad_tensors, retain_graph, create_graph=False):
        tensors = list(tensors)
        if len(tensors) != 1:
            raise AdapterLimit("tinygrad has no backward of several tensors at once")
        self.backward(tensors[0], grad_tensors[0] if grad_tensors else None, retain_graph,
                      None, create_graph)

    def autograd_grad(self, outputs, inputs, grad_outputs, retain_graph, allow_unused,
                      create_graph=False):
        outputs, inputs = list(outputs), list(inputs)
        if len(outputs) != 1:
            raise AdapterLimit("tinygrad: Tensor.gradient differentiates one tensor")
        if create_graph:
            raise AdapterLimit("tinygrad: Tensor.gradient has no create_graph=")
        out = outputs[0]
        g = grad_outputs[0] if grad_outputs else None
        try:
            grads = out.gradient(*inputs, gradient=g)
        except RuntimeError as exc:
            if not allow_unused or "not found in" not in str(exc):
                raise
            grads = []
            for x in inputs:        # None where tinygrad says the input is not in the graph
                try:
                    grads.append(out.gradient(x, gradient=g)[0])
                except RuntimeError as one:
                    if "not found in" not in str(one):
                        raise
                    grads.append(None)
        return [self._mark(r, True) if r is not None else None for r in grads]

    def set_grad(self, t, value):
        t.grad = value

    # ---- observation ----------------------------------------------------------------------
    def to_list(self, t):
        """Tensor.numpy() but its `.to("CPU")` copy: 0.10.3 opens CPU in the main process
        only (campaign workers are not), so this reads the realized copy where it is."""
        import numpy as np
        shape = self.shape(t)
        if 0 in shape:
            return np.empty(shape).tolist()
        buf = t.cast(t.dtype.base).contiguous().realize().lazydata.base.buffer
        return buf.numpy().reshape(shape).tolist()

    def get_grad(self, t):
        return t.grad

    def is_leaf(self, t):
        if not self.requires_grad(t):
            return True
        entry = self._made.get(id(t))
        return entry is not None and entry[0]() is t and entry[1]

    def requires_grad(self, t):
        return t.requires_grad is True

    def shape(self, t):
        return tuple(int(s) for s in t.shape)

    def dtype(self, t):
        return self._names.get(t.dtype, t.dtype.name)

    # ---- errors ---------------------------------------------------------------------------
    def classify_error(self, exc):
        if isinstance(exc, AdapterLimit):
            return None
        text = str(exc)
        for typ, fragment, kind in ERROR_KINDS:
            if isinstance(exc, typ) and fragment in text:
                return kind
        return None


def _nest(values: list[Any], shape: list[int]) -> Any:
    if not shape:
        return values[0]
    step = len(values) // shape[0] if shape[0] else 0
    return [_nest(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


# ---- tinygrad's own spellings ------------------------------------------------------------
Spelling = Callable[[TinygradEngine, list[Any], dict[str, Any]], Any]


def _clamp(e: TinygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
    return args[0].clamp(kw.get("min"), kw.get("max"))


def _t(e: TinygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
    t = args[0]
    if t.ndim > 2:
        raise AdapterLimit("torch's t() takes at most 2 dims; tinygrad has no t()")
    return t.T if t.ndim == 2 else t.permute(tuple(range(t.ndim)))


def _cast(dtype: str) -> Spelling:
    def run(e: TinygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
        return args[0].cast(e._dtype[dtype])
    return run


def _select(method: str) -> Spelling:
    def run(e: TinygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
        return getattr(args[0], method)(kw.get("dim"), keepdim=bool(kw.get("keepdim", False)))
    return run


def _where(e: TinygradEngine, args: list[Any], kw: dict[str, Any]) -> Any:
    a, cond, b = args           # torch: a.where(cond, b); tinygrad: cond.where(a, b)
    return cond.where(a, b)


# Ops that tinygrad spells otherwise than torch; the others run as the op table spells them.
# The deriv_ops rows are spelt too (not declared), so that their probe runs.
SPELLING: dict[str, Spelling] = {
    "clamp": _clamp, "t": _t,
    "double": _cast("float64"), "float": _cast("float32"), "long": _cast("int64"),
    "max_dim": _select("max"), "min_dim": _select("min"),
    "argmax": _select("argmax"), "argmin": _select("argmin"), "where": _where,
}


def _check_against_the_table() -> None:
    unknown = sorted(set(SPELLING) - set(ops.ROWS))
    if unknown:
        raise ValueError(f"tinygrad adapter: {unknown} are not rows of the op table")


_check_against_the_table()


def tinygrad_engine(device: str = "cpu") -> TinygradEngine:
    from . import EngineError
    try:
        _import_tinygrad()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise EngineError(f"engine 'tinygrad': cannot import tinygrad ({type(exc).__name__}: "
                          f"{first}); install the 'tinygrad' extra (tinygrad=={RELEASE})"
                          ) from None
    if device != "cpu":
        raise EngineError(f"engine 'tinygrad' on {device}: this adapter runs tinygrad on the "
                          f"host only (its device from {DEVICE_ENV}, default PYTHON)")
    return TinygradEngine(device)


def tinygrad_views_engine(device: str = "cpu") -> TinygradEngine:
    """The same adapter declaring `views` too: tinygrad has every view op, but its probe
    fails on a tinygrad 0.10.3 bug (reading the value of a movement op's result, or of
    anything computed from it, makes a later backward through it raise "failed to compute
    gradient for Ops.VIEW"; fixed by 0.12.0), so the registered engine does not declare it.
    For campaigns that exercise the view ops anyway:
    `gradspec run --engine conformance.engines.tinygrad:tinygrad_views_engine`."""
    e = tinygrad_engine(device)
    e.capabilities = CAPABILITIES | {"views"}
    return e


engine = tinygrad_engine
