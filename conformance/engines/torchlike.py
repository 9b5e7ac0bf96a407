"""TorchLike: the Engine adapter for any module shaped like `torch` (torch itself, refimpl,
forks). Each method is the one line of torch code it stands for; the op statements (call, view,
inplace) are spelt by the op table (conformance/lang/ops.py), which also gives the renderer the
same lines as source, and tests/conformance/test_render.py checks they agree.
"""
from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ..lang import ops
from .base import Engine, Tensor

# The capability vocabulary of spec/README.md; a torch-shaped module is assumed to have it all.
ALL_CAPABILITIES = frozenset({
    "core", "grad_fn", "retain_grad", "hooks", "post_accumulate_hooks", "node_hooks",
    "version_counter", "views", "inplace", "autograd_grad", "grad_modes", "retain_graph",
    "warnings", "backward_inputs"})

# op -> its Python operator function, for the ops spelt as operators (from the op table)
BINARY = {r.name: ops.OPERATORS[r.operator] for r in ops.CALLS if r.form == "operator"}
AUGMENTED = {r.name: ops.OPERATORS[r.operator] for r in ops.INPLACE_OPS if r.augmented}


def nest(values: Sequence[Any], shape: Sequence[int]) -> Any:
    """Flat row-major values -> nested lists of `shape` (a scalar for shape [])."""
    if not shape:
        return values[0]
    step = len(values) // shape[0] if shape[0] else 0
    return [nest(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


class TorchLike(Engine):
    def __init__(self, module: ModuleType, name: str, device: str = "cpu",
                 capabilities: frozenset[str] = ALL_CAPABILITIES):
        self.torch = module
        self.name = name
        self.device = device
        self.version = str(getattr(module, "__version__", "?"))
        self.capabilities = frozenset(capabilities)

    # ---- construction and ops -------------------------------------------------------------
    def leaf(self, values, shape, dtype, requires_grad):
        kw: dict[str, Any] = {"dtype": getattr(self.torch, dtype)}
        if requires_grad:
            kw["requires_grad"] = True
        if self.device != "cpu":
            kw["device"] = self.device
        cast = {"int64": int, "bool": bool}.get(dtype, float)
        return self.torch.tensor(nest([cast(v) for v in values], list(shape)), **kw)

    def call(self, fn, args, kw):
        return ops.apply(ops.lookup("call", fn), args, kw)

    def view(self, target, fn, kw):
        return ops.apply(ops.lookup("view", fn), (target,), kw)

    def getitem(self, target, index):
        return target[_subscript(index)]

    def inplace(self, target, fn, args, kw):
        return ops.apply(ops.lookup("inplace", fn), (target, *args), kw)

    def setitem(self, target, index, value):
        target[_subscript(index)] = value

    def detach(self, t):
        return t.detach()

    def data(self, t):
        return t.data

    def requires_grad_(self, t, value):
        t.requires_grad_(value)

    def retain_grad(self, t):
        t.retain_grad()

    # ---- hooks ----------------------------------------------------------------------------
    def register_hook(self, t, fn):
        return t.register_hook(fn)

    def register_post_accumulate_grad_hook(self, t, fn):
        return t.register_post_accumulate_grad_hook(fn)

    def remove_hook(self, handle):
        handle.remove()

    def register_node_hook(self, t, kind, fn):
        if kind == "pre":
            return t.grad_fn.register_prehook(lambda grad_outputs: fn(grad_outputs))
        return t.grad_fn.register_hook(lambda grad_inputs, grad_outputs: fn(grad_inputs))

    # ---- grad modes -----------------------------------------------------------------------
    def grad_mode(self, mode, enabled=True):
        if mode == "set_grad_enabled":
            return self.torch.set_grad_enabled(enabled)
        return getattr(self.torch, mode)()

    def grad_mode_decorator(self, mode, enabled=True):
        return self.grad_mode(mode, enabled)    # torch's mode objects are decorators too

    def is_grad_enabled(self):
        return self.torch.is_grad_enabled()

    # ---- backward -------------------------------------------------------------------------
    def backward(self, t, gradient, retain_graph, inputs):
        t.backward(gradient=gradient, retain_graph=retain_graph,
                   inputs=list(inputs) if inputs is not None else None)

    def autograd_backward(self, tensors, grad_tensors, retain_graph):
        self.torch.autograd.backward(
            list(tensors), grad_tensors=list(grad_tensors) if grad_tensors is not None else None,
            retain_graph=retain_graph)

    def autograd_grad(self, outputs, inputs, grad_outputs, retain_graph, allow_unused):
        return self.torch.autograd.grad(
            list(outputs), list(inputs),
            grad_outputs=list(grad_outputs) if grad_outputs is not None else None,
            retain_graph=retain_graph, allow_unused=allow_unused)

    def set_grad(self, t, value):
        t.grad = value

    # ---- observation ----------------------------------------------------------------------
    def to_list(self, t):
        return t.tolist()

    def get_grad(self, t):
        return t.grad

    def is_leaf(self, t):
        return bool(t.is_leaf)

    def requires_grad(self, t):
        return bool(t.requires_grad)

    def shape(self, t):
        return tuple(int(s) for s in t.shape)

    def dtype(self, t):
        return str(t.dtype).rsplit(".", 1)[-1]

    def grad_fn_name(self, t):
        return t.grad_fn.name() if t.grad_fn is not None else None

    def next_functions(self, t):
        if t.grad_fn is None:
            return []
        return [f.name() if f is not None else None for f, _ in t.grad_fn.next_functions]

    def version_counter(self, t):
        return int(t._version)

    def retains_grad(self, t):
        return bool(t.retains_grad)

    def scale(self, g: Tensor, factor: float) -> Tensor:
        return g * factor

    def render_prelude(self):
        # A subclass changes behaviour in the adapter, which a script importing the module
        # would not reproduce: it gets a `gradspec replay` repro unless it says otherwise.
        if type(self) is not TorchLike:
            return None
        mod = self.torch.__name__
        return "import torch" if mod == "torch" else f"import {mod} as torch"


def torch_engine(device: str = "cpu") -> TorchLike:
    from . import EngineError
    try:
        import torch
    except Exception as exc:
        raise EngineError(f"engine 'torch': cannot import torch: {exc}") from None
    if device == "cuda" and not torch.cuda.is_available():
        raise EngineError(f"engine 'torch' on cuda: CUDA is not available in this torch "
                          f"build ({torch.__version__})")
    return TorchLike(torch, "torch", device)


def refimpl_engine(device: str = "cpu") -> TorchLike:
    from . import EngineError
    if device == "cuda":
        try:
            import cupy
            n = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            why = (str(exc).strip() or type(exc).__name__).splitlines()[0]
            raise EngineError(f"engine 'refimpl' on cuda needs cupy and a CUDA GPU: {why}") \
                from None
        if n < 1:
            raise EngineError("engine 'refimpl' on cuda: cupy finds no CUDA GPU")
    try:
        import refimpl
    except Exception as exc:
        raise EngineError(f"engine 'refimpl': cannot import refimpl: "
                          f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
    missing = [a for a in ("tensor", "float32", "no_grad", "autograd") if not hasattr(refimpl, a)]
    if missing:
        raise EngineError(f"engine 'refimpl': the refimpl module is incomplete (no "
                          f"{', '.join(missing)})")
    return TorchLike(refimpl, "refimpl", device)


def _subscript(index):
    """The subscript a script writes for an index: `t[0:]` for one item, not `t[(0:,)]`,
    which torch handles on another path (a full slice in a 1-tuple gives AliasBackward0,
    `t[0:]` SliceBackward0), so that the adapter does what the repro script does."""
    return index[0] if len(index) == 1 else index
