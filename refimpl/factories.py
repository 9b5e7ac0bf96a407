"""Making tensors: torch.tensor (`from_data`), ones, zeros, full, arange, the *_like forms, and
randn and rand seeded by manual_seed (LEAF-15 for their requires_grad=).

randn and rand draw from Python's own generator: seeded runs repeat, but the values differ from
torch's (UNSPEC-4).
"""
from __future__ import annotations

import random

from . import backend, dtypes, errors
from .sizes import Size
from .tensor import Tensor, wrap

float32, int64 = dtypes.float32, dtypes.int64


def from_data(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """torch.tensor: infer bool/int64/float32 from Python data unless dtype is given."""
    be = backend.get(device)
    if isinstance(data, Tensor):
        data = data.tolist()
    if dtype is None:
        dtype = _infer(data)
    array = be.xp.asarray(data, dtype=be.native[dtype])
    if not isinstance(data, (list, tuple, bool, int, float)):
        array = be.copy(array)      # an array: torch.tensor copies it, never shares its memory
    return set_requires_grad(wrap(be, array), requires_grad, "tensor")


def set_requires_grad(t: Tensor, flag, fn: str) -> Tensor:
    """requires_grad= of the factory functions (their error text differs from requires_grad_'s):
    a bool, or None (False) for all but torch.tensor, as torch's argument parser takes."""
    if flag is not None or fn == "tensor":
        errors.check_bool(flag, fn)
    if flag:
        if not t._dtype.is_floating_point:
            raise errors.requires_grad_dtype()  # LEAF-15
        t._requires_grad = True
    return t


def _infer(data):
    kinds = set()

    def walk(v):
        if isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        else:
            kinds.add(dtypes.of_scalar(v).rank)
    walk(data)
    return dtypes.float32 if not kinds else dtypes.ALL[max(kinds)]


def _factory(fill, name):
    def make(*size, dtype=None, device=None, requires_grad=False):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        be = backend.get(device)
        dtype = dtype or float32
        t = wrap(be, be.xp.full(tuple(size), fill, dtype=be.native[dtype]))
        return set_requires_grad(t, requires_grad, name)
    return make


ones, zeros = _factory(1, "ones"), _factory(0, "zeros")


def _like(fill, name):
    def make(other, dtype=None, device=None, requires_grad=False):
        return _factory(fill, name)(*other.shape, dtype=dtype or other.dtype,
                              device=device or other._be.device, requires_grad=requires_grad)
    return make


ones_like, zeros_like = _like(1, "ones_like"), _like(0, "zeros_like")


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    return _factory(fill_value, "full")(*size, dtype=dtype or dtypes.of_scalar(fill_value),
                                        device=device, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        floats = any(not isinstance(v, int) for v in (start, end, step))
        dtype = float32 if floats else int64
    be = backend.get(device)
    t = wrap(be, be.xp.arange(start, end, step, dtype=be.native[dtype]))
    return set_requires_grad(t, requires_grad, "arange")


_rng = random.Random(0)


def manual_seed(seed):
    _rng.seed(seed)


def randn(*size, dtype=None, device=None, requires_grad=False):
    return _random(lambda: _rng.gauss(0.0, 1.0), size, dtype, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    """Uniform on [0, 1): as torch, a multiple of 2**-24 in float32 (2**-53 in float64), which
    the dtype holds exactly, so that no value rounds up to 1."""
    bits = 53 if dtype is dtypes.float64 else 24
    return _random(lambda: _rng.getrandbits(bits) / 2 ** bits, size, dtype, device, requires_grad)


def _random(draw, size, dtype, device, requires_grad):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    values = [draw() for _ in range(Size(size).numel())]
    be = backend.get(device)
    arr = be.xp.reshape(be.xp.asarray(values, dtype=be.native[dtype or float32]), tuple(size))
    t = wrap(be, arr)
    return set_requires_grad(t, requires_grad, "randn")


def randn_like(other, dtype=None, device=None, requires_grad=False):
    return randn(*other.shape, dtype=dtype or other.dtype, device=device,
                 requires_grad=requires_grad)
