"""TorchLike: the Engine adapter for any module shaped like `torch` (torch itself, refimpl,
forks). Each method is the one line of torch code it stands for; the op statements (call, view,
inplace) are spelt by the op table (conformance/lang/ops.py), which also gives the renderer the
same lines as source, and tests/conformance/test_render.py checks they agree.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from ..lang import functions, ops
from .base import Engine, Tensor
from .graph_data import graph_data

# The capability vocabulary of spec/README.md; a torch-shaped module is assumed to have it all.
ALL_CAPABILITIES = frozenset({
    "core", "grad_fn", "retain_grad", "hooks", "post_accumulate_hooks", "node_hooks",
    "version_counter", "views", "inplace", "autograd_grad", "grad_modes", "retain_graph",
    "warnings", "backward_inputs", "deriv_ops", "create_graph", "inference_mode",
    "custom_function", "data_assign", "saved_tensors_hooks", "multi_grad_hooks",
    "narrow_select", "multi_views", "grad_dtype", "requires_grad_setter", "detach_inplace",
    "grad_tensor", "view_base", "nn_module"})

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
                 capabilities: frozenset[str] | None = None):
        """`capabilities`: those declared; by default a subclass's own class attribute
        `capabilities` where it has one (as any Engine declares them), else all."""
        self.torch = module
        self.name = name
        self.device = device
        self.version = str(getattr(module, "__version__", "?"))
        if capabilities is None:    # TorchLike declares none: Engine's default is no one's
            declared = type(self).capabilities
            capabilities = ALL_CAPABILITIES if declared is Engine.capabilities else declared
        self.capabilities = frozenset(capabilities)
        cuda = getattr(module, "cuda", None)
        if device == "cuda" and cuda is not None and not cuda.is_available():
            from . import EngineError
            raise EngineError(f"engine {name!r} on cuda: CUDA is not available in this "
                              f"{getattr(module, '__name__', 'module')} build ({self.version})")

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

    def view_many(self, target, fn, kw):
        first = {"split": (kw.get("size"),), "chunk": (kw.get("chunks"),), "unbind": ()}[fn]
        return list(getattr(target, fn)(*first, dim=kw["dim"]))

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

    def detach_(self, t):
        t.detach_()

    def set_(self, t, src):
        t.set_(src)

    def requires_grad_(self, t, value):
        t.requires_grad_(value)

    def set_requires_grad(self, t, value):
        t.requires_grad = value

    def set_data(self, t, value):
        t.data = value

    def set_grad_dtype(self, t, dtype):
        t.grad_dtype = None if dtype is None else getattr(self.torch, dtype)

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

    def register_multi_grad_hook(self, tensors, fn, mode):
        return self.torch.autograd.graph.register_multi_grad_hook(tuple(tensors), fn, mode=mode)

    # ---- grad modes -----------------------------------------------------------------------
    def grad_mode(self, mode, enabled=None):
        # enabled None: the program gave no argument, and inference_mode() runs with the
        # library's default (INFER-1); set_grad_enabled has none, the language's is true
        if mode == "set_grad_enabled":
            return self.torch.set_grad_enabled(True if enabled is None else enabled)
        if mode == "inference_mode" and enabled is not None:
            return self.torch.inference_mode(enabled)
        return getattr(self.torch, mode)()

    def grad_mode_decorator(self, mode, enabled=None):
        return self.grad_mode(mode, enabled)    # torch's mode objects are decorators too

    def is_grad_enabled(self):
        return self.torch.is_grad_enabled()

    # ---- saved-tensor hooks ----------------------------------------------------------------
    def saved_tensors_hooks(self, pack, unpack):
        return self.torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    def clone(self, t):
        return t.detach().clone()

    def save_on_cpu(self):
        return self.torch.autograd.graph.save_on_cpu()

    def disable_saved_tensors_hooks(self, message):
        return self.torch.autograd.graph.disable_saved_tensors_hooks(message)

    # ---- custom Functions ------------------------------------------------------------------
    def apply_function(self, name, args, legacy=False):
        if getattr(self, "_functions", None) is None:
            self._functions = functions.define(self.torch)    # defined once per engine
        cls = getattr(self._functions, name)
        return cls()(*args) if legacy else cls.apply(*args)

    # ---- backward -------------------------------------------------------------------------
    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        t.backward(gradient=gradient, retain_graph=retain_graph, create_graph=create_graph,
                   inputs=list(inputs) if inputs is not None else None)

    def autograd_backward(self, tensors, grad_tensors, retain_graph, create_graph=False):
        self.torch.autograd.backward(
            list(tensors), grad_tensors=list(grad_tensors) if grad_tensors is not None else None,
            retain_graph=retain_graph, create_graph=create_graph)

    def autograd_grad(self, outputs, inputs, grad_outputs, retain_graph, allow_unused,
                      create_graph=False):
        return self.torch.autograd.grad(
            list(outputs), list(inputs),
            grad_outputs=list(grad_outputs) if grad_outputs is not None else None,
            retain_graph=retain_graph, allow_unused=allow_unused, create_graph=create_graph)

    def set_grad(self, t, value):
        t.grad = value

    def parameter(self, t):
        return self.torch.nn.Parameter(t)

    def module_zero_grad(self, params, set_to_none):
        module = self.torch.nn.Module()
        for i, p in enumerate(params):
            module.register_parameter(f"p{i}", p)
        module.zero_grad(set_to_none=set_to_none)

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

    def base(self, t):
        return t._base

    def stride(self, t):
        return tuple(int(s) for s in t.stride())

    def dtype(self, t):
        return str(t.dtype).rsplit(".", 1)[-1]

    def grad_dtype(self, t):
        d = t.grad_dtype
        return None if d is None else str(d).rsplit(".", 1)[-1]

    def grad_fn_name(self, t):
        return t.grad_fn.name() if t.grad_fn is not None else None

    def next_functions(self, t):
        if t.grad_fn is None:
            return []
        return [f.name() if f is not None else None for f, _ in t.grad_fn.next_functions]

    def graph_of(self, tensors):
        return graph_data(self, tensors)

    def version_counter(self, t):
        return int(t._version)

    def retains_grad(self, t):
        return bool(t.retains_grad)

    def is_inference(self, t):
        return bool(t.is_inference())

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
    _warm(torch)
    return TorchLike(torch, "torch", device)


def _warm(torch) -> None:
    """Pay torch's lazy import at load, not inside a program: the first backward given a
    gradient tensor imports torch.fx.experimental.symbolic_shapes and sympy (torch 2.13's
    autograd/__init__.py, _make_grads), which on a busy machine outlasted a program's timeout
    (a campaign's worker reported "the oracle timed out"). Only the import: running a backward
    here would start torch's threads in a process that campaigns fork their workers from."""
    try:
        importlib.import_module("torch.fx.experimental.symbolic_shapes")
    except Exception:  # noqa: BLE001 - only a saving of time, never fatal
        pass


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
