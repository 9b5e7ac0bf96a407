"""In-place ops (INPLACE-1..INPLACE-14, VER-2, VER-14, HOOK-11, RETAIN-6) and clone.

An in-place op is its out-of-place twin followed by commit_inplace (refimpl/tensor.py): check
that the target may be modified, compute, write the result into the target's storage, bump the
shared version counter once, and make the new node the target's history (through CopySlices for
a view). zero_, fill_ and copy_ exist only in place.
"""
from __future__ import annotations

from ..backend import namespace_of
from ..tensor import Tensor, check_inplace, check_overlap, commit_inplace, record
from .elementwise import _zeros


def inplace(op):
    """The `_` variant of an out-of-place op: torch.Tensor.add_ from add, and so on."""
    def method(self, *args, **kwargs):
        check_inplace(self, args + tuple(kwargs.values()))
        for other in args:
            check_overlap(self, other)
        return commit_inplace(self, op(self, *args, **kwargs))
    method.__name__ = op.__name__ + "_"
    return method


def clone(a):                               # CloneBackward0; saves: nothing
    out, _ = record(a._be.copy(a._data), a._be, "CloneBackward0", _identity_bw, (a,))
    return out


def _identity_bw(node, g):
    return (g,)


def zero_(a):                               # ZeroBackward0; saves: nothing
    check_inplace(a)
    out, _ = record(a._be.xp.zeros_like(a._data), a._be, "ZeroBackward0", _zeros_bw, (a,))
    return commit_inplace(a, out, fill=True)


def _zeros_bw(node, g):
    return (_zeros(g),) + (None,) * (len(node.next_functions) - 1)


def fill_(a, value):                        # FillBackward2 (scalar) / FillBackward3 (tensor)
    xp = a._be.xp
    if isinstance(value, Tensor):
        check_inplace(a, (value,))
        arr = xp.broadcast_to(xp.astype(value._data, a._be.native[a._dtype]), a._data.shape)
        out, _ = record(arr, a._be, "FillBackward3", _fill_tensor_bw, (a, value))
    else:
        check_inplace(a)
        arr = xp.full(a._data.shape, value, dtype=a._be.native[a._dtype])
        out, _ = record(arr, a._be, "FillBackward2", _zeros_bw, (a,))
    # a Python number may fill an expanded tensor; a tensor value may not (as torch)
    return commit_inplace(a, out, fill=not isinstance(value, Tensor))


def _fill_tensor_bw(node, g):
    xp = namespace_of(g)
    return _zeros(g), xp.sum(g)


def copy_(a, src):                          # CopyBackwards; saves: nothing
    check_inplace(a, (src,))
    check_overlap(a, src)
    xp, be, arr = a._be.xp, a._be, src._data
    if src._dtype is not a._dtype:
        arr = xp.astype(arr, a._be.native[a._dtype])
    if arr.shape == a._data.shape and be.address(arr) == be.address(a._data) \
            and be.strides(arr) == be.strides(a._data):
        arr = a._data  # the same data: torch's copy_ returns early
    arr = xp.broadcast_to(arr, a._data.shape) if arr is not a._data else arr
    out, _ = record(arr, a._be, "torch::autograd::CopyBackwards", _copy_bw, (a, src))
    return commit_inplace(a, out)


def _copy_bw(node, g):
    return _zeros(g), g  # the engine casts and sums g to src's dtype and shape
