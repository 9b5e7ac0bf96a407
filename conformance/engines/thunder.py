"""lightning-thunder 0.2.6 as a gradspec engine: `gradspec run --engine thunder` (extra and
entry point `thunder`, pyproject.toml). It implements no clause; thunder's reference is eager
torch, so every divergence is a thunder bug, a limitation thunder documents, or the adapter's.

Compatibility (checked 2026-12-04 with torch 2.13.0+cpu, Python 3.11): lightning-thunder 0.2.6,
the newest release, registers `torch.Tensor.align_as`, `align_to`, `has_names`, `refine_names`
and `rename` at import (thunder/torch/default_torch_ops.py), and torch 2.13 removed named
tensors, so `import thunder` fails with AttributeError (the wheels of 0.2.3 to 0.2.5 name the
same methods there: read, not installed; known upstream, Lightning-AI/lightning-thunder#2829).
`_import_thunder` gives torch.Tensor stand-ins of those five names (raising
NotImplementedError, named as thunder's check wants) for the import only and deletes them
afterwards, so the torch other engines see is unchanged. Nothing else is needed on CPU: no
nvFuser (thunder's default executors are then sdpa, torchcompile_xentropy, torch and python;
the first two claim attention and cross-entropy only, no op of the table), no environment
variable. transformer_engine's "module not found" warning at import is silenced.

Regions. Like torch-compile (conformance/engines/compiled.py), every op statement (`call`,
`view`, `getitem`, `inplace`, augmented assignment, `setitem`) runs as its own function,
built and checked by conformance/engines/regions.py from op-table identifiers and literals
only, and compiled with `thunder.jit` (default options). The tensors a program observes are
the outputs of thunder functions: their grad_fn is `ThunderOutputFunctionBackward` (a
torch.autograd.Function whose backward runs thunder's backward trace), and in-place ops on
inputs are functionalized and copied back by the function's epilogue. Everything else
(leaves, detach, .data, hooks, grad modes, backward, autograd.grad, observations) is eager
torch, as in a program that jits its functions.

Capabilities: those the probes (`gradspec engines --probe --engine thunder`) confirm (see
CAPABILITIES, which says why each other one is left out).
"""
from __future__ import annotations

import warnings
from typing import Any

from .regions import RegionTorch

RELEASE = "0.2.6"
# names thunder 0.2.6 registers at import that torch 2.13 no longer has (named tensors)
NAMED_TENSOR_METHODS = ("align_as", "align_to", "has_names", "refine_names", "rename")

# What the probes confirm (`gradspec engines --probe --engine thunder`, every capability
# declared on a copy; thunder 0.2.6, torch 2.13.0): these run as on the oracle. Left out:
#   grad_fn         y.grad_fn is 'ThunderOutputFunctionBackward', one node per region (by design)
#   inplace         y.neg_() in a region on a non-leaf that requires grad: the gradient ignores
#                   the write (docs/findings.md, T1); thunder_inplace_engine declares it
#   deriv_ops       x.where(c, f) raises "Expected pred to be a tensor with dtype bool" (T2)
#   create_graph    autograd.grad(..., create_graph=True) returns a gradient that does not
#                   require grad (T3)
#   detach_inplace  a pass through a node that saved a tensor detach_()ed since does not raise
#                   SAVED_DETACHED_INPLACE (T4)
#   node_hooks, custom_function, data_assign, saved_tensors_hooks: unprobed (their probes
#                   need a torch-shaped module that is the engine; this one is torch's own,
#                   and the statements would run in eager torch, not through thunder)
CAPABILITIES = frozenset({
    "core", "retain_grad", "hooks", "post_accumulate_hooks", "version_counter", "views",
    "autograd_grad", "grad_modes", "retain_graph", "warnings", "backward_inputs",
    "inference_mode", "multi_grad_hooks", "narrow_select", "multi_views", "grad_dtype",
    "requires_grad_setter", "grad_tensor", "view_base", "nn_module"})


def _stand_in(name: str) -> Any:
    def method(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"torch.Tensor.{name}: named tensors were removed from torch")
    method.__name__ = method.__qualname__ = name
    return method


def _import_thunder() -> Any:
    """`import thunder` beside a torch without named tensors (module docstring)."""
    import sys

    import torch
    if "thunder" in sys.modules:
        return sys.modules["thunder"]
    added = [n for n in NAMED_TENSOR_METHODS if not hasattr(torch.Tensor, n)]
    for n in added:
        setattr(torch.Tensor, n, _stand_in(n))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="transformer_engine module not found")
            import thunder
    finally:
        for n in added:
            delattr(torch.Tensor, n)
    return thunder


class ThunderTorch(RegionTorch):
    """TorchLike with every op statement run through `thunder.jit`."""

    def __init__(self, device: str = "cpu", capabilities: frozenset[str] = CAPABILITIES):
        from importlib import metadata

        import torch
        self.thunder = _import_thunder()
        super().__init__(torch, "thunder", device, capabilities)
        self.version = (f"{metadata.version('lightning-thunder')} (torch {torch.__version__}, "
                        f"default executors)")

    def _compile(self, fn: Any) -> Any:
        return self.thunder.jit(fn)

    def classify_error(self, exc):
        kind = super().classify_error(exc)
        inner: BaseException | None = exc
        for _ in range(8):          # thunder may re-raise torch's error as the cause
            if kind is not None or inner is None:
                break
            inner = inner.__cause__ or inner.__context__
            if inner is not None:
                kind = super().classify_error(inner)
        return kind

    def render_prelude(self):
        return None     # repros of this engine are `gradspec replay ... --engine thunder`


def thunder_engine(device: str = "cpu") -> ThunderTorch:
    from . import EngineError
    try:
        _import_thunder()
    except Exception as exc:
        raise EngineError(f"engine 'thunder': cannot import thunder ({type(exc).__name__}: "
                          f"{exc}); install the 'thunder' extra") from None
    if device != "cpu":
        raise EngineError("engine 'thunder': the adapter runs on cpu only (checked there)")
    return ThunderTorch(device)


def thunder_inplace_engine(device: str = "cpu") -> ThunderTorch:
    """The registered engine plus `inplace`, whose probe fails (T1): for campaigns that look
    for what else in-place statements through thunder do (`--engine
    conformance.engines.thunder:thunder_inplace_engine`)."""
    engine = thunder_engine(device)
    engine.capabilities = CAPABILITIES | {"inplace"}
    return engine


# the deriv_ops calls whose op probe fails (`gradspec engines --probe --engine
# conformance.engines.thunder:thunder_deriv_engine`, every row probed with this set emptied):
# a backward through floor raises NO_GRAD_FN, round and argmin find no gradient transform,
# where wants a bool predicate (T2), and regions.py refuses max(dim) / min(dim)'s `.values`
DERIV_LACKS = frozenset({"floor", "round", "argmin", "where", "max_dim", "min_dim"})


def thunder_deriv_engine(device: str = "cpu") -> ThunderTorch:
    """The registered engine plus `deriv_ops` less DERIV_LACKS (`lacks_ops`): comparisons,
    casts, sign, max, min and argmax through thunder (`--engine
    conformance.engines.thunder:thunder_deriv_engine`)."""
    engine = thunder_engine(device)
    engine.capabilities = CAPABILITIES | {"deriv_ops"}
    engine.lacks_ops = DERIV_LACKS
    return engine
