"""Reductions: sum and mean (GRAPH-3, VER-13), max and min (DERIV-5, DERIV-7, DERIV-8), and
argmax and argmin (DERIV-1), over all dims or one given dim, with keepdim.

sum and mean save no tensor, only the input's shape, so a second backward through them never
raises (FREE-3). max() and min() save their input and result (ties share the gradient evenly);
max(dim) and min(dim) save their indices, which alone decide where the gradient goes.
"""
from __future__ import annotations

from collections import namedtuple

from .. import dtypes
from ..differentiable import array, math
from ..tensor import Tensor, adjoint_name, linear, record, saved, saved_result, wrap


def _dims(dim, ndim):
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % ndim if ndim else 0 for d in dims))


def _expand_back(g, shape, dims, keepdim, be):
    """The gradient of a reduction: g expanded back over the reduced dims (a stride-0 view);
    under create_graph a reshape and an expand, recorded (DOUBLE-2)."""
    be = math(g, be)
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


# ======================= max, min and their indices (DERIV-1, DERIV-5) =======================
_RESULTS = {"max": namedtuple("max", ("values", "indices")),
            "min": namedtuple("min", ("values", "indices"))}


def _dim(dim, ndim):
    """A dim in range, counted from the front (a 0-d tensor takes 0 and -1, as in torch)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _extreme(a, dim, keepdim, name):
    if isinstance(dim, Tensor):
        raise NotImplementedError(f"refimpl: {name}(other), the elementwise form, is out of scope")
    xp, x, be = a._be.xp, a._data, a._be
    reduce, arg = (xp.max, xp.argmax) if name == "max" else (xp.min, xp.argmin)
    title = name.capitalize()
    if dim is None:                         # saves: self and result
        if x.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        out, node = record(reduce(x), be, f"{title}Backward1", _evenly_bw, (a,), xp)
        if node is not None:
            node.save(saved(node, a, 0), saved_result(node, out))
        return out
    d = _dim(dim, x.ndim)                   # saves: indices
    if x.ndim == 0:
        values, idx = be.copy(x), xp.zeros((), dtype=be.native[dtypes.int64])
    else:
        idx = arg(x, axis=d, keepdims=True)
        values = xp.take_along_axis(x, idx, axis=d)
        if not keepdim:
            idx, values = xp.squeeze(idx, axis=d), xp.squeeze(values, axis=d)
    indices = wrap(be, idx)
    out, node = record(values, be, f"{title}Backward0", _selected_bw, (a,),
                       (x.shape, d, keepdim, xp))
    if node is not None:
        node.save(saved_result(node, indices))
    return _RESULTS[name](out, indices)


def _evenly_bw(node, g):
    """The gradient shared evenly by every element equal to the result (NaN: every NaN)."""
    x, r = node.unpack()
    xp = node.info
    hit = xp.where(xp.isnan(r), xp.isnan(x), x == r)
    dt = array(g).dtype
    n = xp.sum(xp.astype(hit, dt))

    def share(a):
        return xp.where(hit, a / n, xp.zeros(hit.shape, dtype=dt))
    if g.__class__ is Tensor:  # create_graph: a linear map of g, recorded (DOUBLE-2)
        return (linear(g, share, lambda b: xp.sum(xp.where(hit, b, xp.zeros_like(b))) / n,
                       adjoint_name(node.name())),)
    return (share(g),)


def _selected_bw(node, g):
    """The whole gradient to the element each index names, zero elsewhere."""
    (idx,) = node.unpack()
    shape, d, keepdim, xp = node.info
    if not shape:
        return (g,)
    if not keepdim:
        idx = xp.expand_dims(idx, axis=d)
    along = xp.reshape(xp.arange(shape[d], dtype=idx.dtype),
                       tuple(-1 if i == d else 1 for i in range(len(shape))))
    hit = along == idx

    def scatter(a):
        a = a if keepdim else xp.expand_dims(a, axis=d)
        return xp.where(hit, a, xp.zeros_like(a))

    def gather(b):  # scatter's adjoint: what the second pass sends back to g
        picked = xp.take_along_axis(b, idx, axis=d)
        return picked if keepdim else xp.squeeze(picked, axis=d)
    if g.__class__ is Tensor:  # create_graph: recorded as one node (DOUBLE-2)
        return (linear(g, scatter, gather, adjoint_name(node.name())),)
    return (scatter(g),)


def reduce_max(a, dim=None, keepdim=False):  # Tensor.max (a module-level `max` would shadow
    return _extreme(a, dim, keepdim, "max")   # the builtin the other reductions use)


def reduce_min(a, dim=None, keepdim=False):  # Tensor.min
    return _extreme(a, dim, keepdim, "min")


def _arg(a, dim, keepdim, fn):
    """argmax / argmin: the first extreme index, an int64 leaf that never requires grad."""
    xp, x, be = a._be.xp, a._data, a._be
    if dim is None:
        idx = fn(xp.reshape(x, (-1,)))
        return wrap(be, xp.reshape(idx, (1,) * x.ndim) if keepdim else idx)
    d = _dim(dim, x.ndim)
    return wrap(be, fn(x, axis=d, keepdims=keepdim) if x.ndim else xp.zeros_like(
        fn(xp.reshape(x, (-1,)))))


def argmax(a, dim=None, keepdim=False):
    return _arg(a, dim, keepdim, a._be.xp.argmax)


def argmin(a, dim=None, keepdim=False):
    return _arg(a, dim, keepdim, a._be.xp.argmin)
