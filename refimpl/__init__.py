"""refimpl: a small reference engine for the autograd semantics written down in spec/.

`import refimpl as torch` runs programs within the spec's subset unchanged (spec/README.md,
"Scope"). The public names mirror torch's: construction (tensor, ones, zeros, *_like, arange,
randn and rand seeded by manual_seed), grad modes, autograd.grad / autograd.backward, dtypes,
and `nn` (Module, Parameter, Linear: refimpl/nn).

randn and rand draw from Python's own generator: seeded runs repeat, but the values differ from
torch's (UNSPEC-4).
"""
from __future__ import annotations

from . import autograd, backend, dtypes, nn, ops
from . import factories as _fac
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .layout import contiguous_format, memory_format, preserve_format
from .ops import discrete as _disc
from .ops import elementwise as _ew
from .ops import inplace as _ip
from .ops import linalg as _la
from .ops import power as _power
from .ops import reduce as _red
from .ops import split as _split
from .ops import views as _views
from .sizes import Size, device
from .tensor import Tensor

__all__ = ["autograd", "backend", "nn", "ops", "Tensor", "Size", "device", "tensor", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "is_inference", "memory_format", "contiguous_format",
           "preserve_format"]
dtype = dtypes.dtype
bool, float32, float64, int64 = dtypes.bool_, dtypes.float32, dtypes.float64, dtypes.int64  # noqa: A001
float, double, long = float32, float64, int64  # noqa: A001
__version__ = "2.13.0"  # the torch release whose semantics refimpl implements

# making tensors (refimpl/factories.py)
tensor, full, arange, manual_seed = _fac.from_data, _fac.full, _fac.arange, _fac.manual_seed
ones, zeros, ones_like, zeros_like = _fac.ones, _fac.zeros, _fac.ones_like, _fac.zeros_like
randn, randn_like, set_requires_grad = _fac.randn, _fac.randn_like, _fac.set_requires_grad
rand = _fac.rand
set_default_device = backend.set_default_device
set_warn_always = autograd.set_warn_always  # warnings torch gives once (DOUBLE-8)
is_warn_always_enabled = autograd.is_warn_always_enabled


def is_tensor(obj):
    return isinstance(obj, Tensor)


# functional forms: torch.exp(x), torch.add(x, y), ...
add, sub, mul, div, neg, pow = _ew.add, _ew.sub, _ew.mul, _ew.div, _ew.neg, _power.pow
exp, log, sin, cos, tanh, sigmoid = _ew.exp, _ew.log, _ew.sin, _ew.cos, _ew.tanh, _ew.sigmoid
sqrt = _ew.sqrt
relu, abs, clamp, clip, reciprocal = _ew.relu, _ew.abs, _ew.clamp, _ew.clamp, _ew.reciprocal  # noqa: A001
sum, mean, matmul, addmm = _red.sum, _red.mean, _la.matmul, _la.addmm  # noqa: A001
mm = mv = dot = _la.matmul
reshape, t, transpose = _views.reshape, _views.t, _views.transpose
squeeze, unsqueeze, clone = _views.squeeze, _views.unsqueeze, _ip.clone
narrow, select = _views.narrow, _views.select
split, chunk, unbind = _split.split, _split.chunk, _split.unbind
split_with_sizes = _split.split_with_sizes
floor, sign, round, where = _disc.floor, _disc.sign, _disc.round, _disc.where  # noqa: A001
max, min, argmax, argmin = _red.reduce_max, _red.reduce_min, _red.argmax, _red.argmin  # noqa: A001
nonzero = _disc.nonzero
lt, le, gt, ge, eq, ne = (getattr(Tensor, n) for n in ("lt", "le", "gt", "ge", "eq", "ne"))


def detach(x):
    return x.detach()


def is_inference(input) -> bool:  # noqa: A002 - torch's parameter name
    """torch.is_inference(t): t.is_inference() (INFER-2); anything but a tensor is refused as
    torch's argument parser refuses it."""
    if not isinstance(input, Tensor):
        raise TypeError("is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_inference()
