"""Reductions sum and mean, over all dims or given dims, with keepdim (GRAPH-3, VER-13).

Neither saves a tensor, only the input's shape, so a second backward through them never raises
(FREE-3).
"""
from __future__ import annotations

from .. import dtypes
from ..tensor import record


def _dims(dim, ndim):
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % ndim if ndim else 0 for d in dims))


def _expand_back(g, shape, dims, keepdim, be):
    """The gradient of a reduction: g expanded back over the reduced dims (a stride-0 view)."""
    if not keepdim and dims:
        g = be.xp.reshape(g, tuple(1 if i in dims else s for i, s in enumerate(shape)))
    return be.expand(g, shape)


def sum(a, dim=None, keepdim=False):        # saves: nothing (the input's shape)
    xp, x = a._be.xp, a._data
    kind = a._dtype.category < 2  # bool and integer sums are int64, as in torch
    if dim is None:
        out = xp.sum(x, dtype=a._be.native[dtypes.int64]) if kind else xp.sum(x)
        out, _ = record(out, a._be, "SumBackward0", _sum_bw, (a,), (x.shape, (), False, a._be))
        return out
    dims = _dims(dim, x.ndim)
    out = xp.sum(x, axis=dims, keepdims=keepdim,
                 **({"dtype": a._be.native[dtypes.int64]} if kind else {}))
    out, _ = record(out, a._be, "SumBackward1", _sum_bw, (a,), (x.shape, dims, keepdim, a._be))
    return out


def _sum_bw(node, g):
    shape, dims, keepdim, be = node.info
    return (_expand_back(g, shape, dims, keepdim, be),)


def mean(a, dim=None, keepdim=False):       # saves: nothing (the input's shape)
    if not a._dtype.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {a._dtype.c_name.capitalize()}")
    xp, x = a._be.xp, a._data
    if dim is None:
        out, _ = record(xp.mean(x), a._be, "MeanBackward0", _mean_bw, (a,),
                        (x.shape, (), False, a._be, max(_numel(x.shape), 1)))
        return out
    dims = _dims(dim, x.ndim)
    n = 1
    for d in dims:
        n *= x.shape[d] if x.ndim else 1
    out, _ = record(xp.mean(x, axis=dims, keepdims=keepdim), a._be, "MeanBackward1", _mean_bw,
                    (a,), (x.shape, dims, keepdim, a._be, n))
    return out


def _mean_bw(node, g):
    shape, dims, keepdim, be, n = node.info
    return (_expand_back(g, shape, dims, keepdim, be) / n,)  # a new array, as in torch


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n
