"""refimpl: a small reference engine for the autograd semantics written down in spec/.

`import refimpl as torch` runs programs within the spec's subset unchanged (spec/README.md,
"Scope"). The public names mirror torch's: construction (tensor, ones, zeros, *_like, arange,
randn seeded by manual_seed), grad modes, autograd.grad / autograd.backward, dtypes.

randn draws from Python's own generator: seeded runs repeat, but the values differ from torch's
(UNSPEC-4).
"""
from __future__ import annotations

import random as _random

from . import autograd, backend, dtypes, ops
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .ops import elementwise as _ew
from .ops import inplace as _ip
from .ops import linalg as _la
from .ops import reduce as _red
from .ops import views as _views
from .tensor import Size, Tensor, device, set_requires_grad
from .tensor import from_data as tensor
from .tensor import wrap as _wrap

__all__ = ["autograd", "backend", "ops", "Tensor", "Size", "device", "tensor", "no_grad",
           "enable_grad", "set_grad_enabled", "is_grad_enabled"]
dtype = dtypes.dtype
bool, float32, float64, int64 = dtypes.bool_, dtypes.float32, dtypes.float64, dtypes.int64  # noqa: A001
float, double, long = float32, float64, int64  # noqa: A001
__version__ = "2.13.0"  # the torch release whose semantics refimpl implements


def _factory(fill):
    def make(*size, dtype=None, device=None, requires_grad=False):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        be = backend.get(device)
        dtype = dtype or float32
        t = _wrap(be, be.xp.full(tuple(size), fill, dtype=be.native[dtype]))
        return set_requires_grad(t, requires_grad)
    return make


ones, zeros = _factory(1), _factory(0)


def _like(fill):
    def make(other, dtype=None, device=None, requires_grad=False):
        return _factory(fill)(*other.shape, dtype=dtype or other.dtype,
                              device=device or other._be.device, requires_grad=requires_grad)
    return make


ones_like, zeros_like = _like(1), _like(0)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    return _factory(fill_value)(*size, dtype=dtype or dtypes.of_scalar(fill_value), device=device,
                                requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        floats = any(not isinstance(v, int) for v in (start, end, step))
        dtype = float32 if floats else int64
    be = backend.get(device)
    t = _wrap(be, be.xp.arange(start, end, step, dtype=be.native[dtype]))
    return set_requires_grad(t, requires_grad)


_rng = _random.Random(0)


def manual_seed(seed):
    _rng.seed(seed)


def randn(*size, dtype=None, device=None, requires_grad=False):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    n = Size(size).numel()
    values = [_rng.gauss(0.0, 1.0) for _ in range(n)]
    be = backend.get(device)
    arr = be.xp.reshape(be.xp.asarray(values, dtype=be.native[dtype or float32]), tuple(size))
    t = _wrap(be, arr)
    return set_requires_grad(t, requires_grad)


def randn_like(other, dtype=None, device=None, requires_grad=False):
    return randn(*other.shape, dtype=dtype or other.dtype, device=device,
                 requires_grad=requires_grad)


set_default_device = backend.set_default_device


def is_tensor(obj):
    return isinstance(obj, Tensor)


# functional forms: torch.exp(x), torch.add(x, y), ...
add, sub, mul, div, neg, pow = _ew.add, _ew.sub, _ew.mul, _ew.div, _ew.neg, _ew.pow
exp, log, sin, cos, tanh, sigmoid = _ew.exp, _ew.log, _ew.sin, _ew.cos, _ew.tanh, _ew.sigmoid
relu, abs, clamp, clip, reciprocal = _ew.relu, _ew.abs, _ew.clamp, _ew.clamp, _ew.reciprocal  # noqa: A001
sum, mean, matmul = _red.sum, _red.mean, _la.matmul  # noqa: A001
mm = mv = dot = _la.matmul
reshape, t, transpose = _views.reshape, _views.t, _views.transpose
squeeze, unsqueeze, clone = _views.squeeze, _views.unsqueeze, _ip.clone


def detach(x):
    return x.detach()
