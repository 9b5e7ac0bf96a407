"""Ops whose derivative is zero or that have none (DERIV-1, DERIV-2, DERIV-3), and `where`
(DERIV-6); each forward beside its backward, names and saved values as DERIV-7 and DERIV-8 say.

floor, sign and round are recorded and give a zero gradient; casts to another floating dtype
are recorded and cast the gradient back; casts to int64 or bool, and nonzero, record nothing.
The comparisons live with the other binary ops (elementwise.compare).
"""
from __future__ import annotations

from .. import dtypes, errors
from ..differentiable import astype, diagonal, zeros_like
from ..tensor import Tensor, record, saved, wrap


def _zero_bw(node, g):
    """zeros_like(grad): 0 wherever the incoming gradient is NaN or infinite too (a constant
    under create_graph, DOUBLE-2)."""
    return (zeros_like(g),)


def _zero_derivative(a, fn, name, integers=None):  # saves: nothing
    xp, x = a._be.xp, a._data
    if a._dtype.is_floating_point:
        out = fn(xp, x)
    else:                                       # floor and round of integers: a copy
        out = integers(xp, x) if integers else a._be.copy(x)
    out, _ = record(out, a._be, name, _zero_bw, (a,), xp)
    return out


def floor(a):
    if a._dtype.name == "bool":
        raise errors.bool_kernel("floor_vml_cpu")
    return _zero_derivative(a, lambda xp, x: xp.floor(x), "FloorBackward0")


def sign(a):                                    # torch's sign of NaN is 0
    return _zero_derivative(
        a, lambda xp, x: xp.where(xp.isnan(x), xp.zeros_like(x), xp.sign(x)), "SignBackward0",
        lambda xp, x: xp.sign(x) if x.dtype != xp.bool else xp.asarray(x, copy=True))


def round(a, decimals=0):                       # noqa: A001 - torch's name; half to even
    if a._dtype.name == "bool":
        raise errors.bool_kernel("round_cpu" if decimals else "round_vml_cpu")
    if not decimals:
        return _zero_derivative(a, lambda xp, x: xp.round(x), "RoundBackward0")
    scale = 10.0 ** abs(decimals)               # torch's kernel, in the tensor's dtype
    if decimals > 0:
        return _zero_derivative(a, lambda xp, x: xp.round(x * scale) / scale, "RoundBackward1")
    return _zero_derivative(a, lambda xp, x: xp.round(x / scale) * scale, "RoundBackward1")


# ======================= casts (DERIV-1, DERIV-3) =======================

def to(a, *args, dtype=None, copy=False, **kwargs):
    """Tensor.to(dtype), to(other) and to(device) on this tensor's own device: the tensor itself
    when nothing changes (unless copy=True), else a copy; ToCopyBackward0 into a floating dtype,
    nothing recorded into an integer or bool one."""
    for arg in args:
        if isinstance(arg, dtypes.dtype):
            dtype = arg
        elif isinstance(arg, Tensor):
            dtype = arg._dtype
        elif str(arg).split(":")[0] != a._be.device:
            raise NotImplementedError(f"refimpl: to({arg!r}) moves between devices")
    if kwargs.get("device") is not None and str(kwargs["device"]).split(":")[0] != a._be.device:
        raise NotImplementedError("refimpl: to(device=...) moves between devices")
    dtype = dtype or a._dtype
    if dtype is a._dtype and not copy:
        return a
    arr = a._be.xp.astype(a._data, a._be.native[dtype])
    if not dtype.is_floating_point:             # saves: nothing
        return wrap(a._be, arr)
    out, _ = record(arr, a._be, "ToCopyBackward0", _cast_bw, (a,), a._be)
    return out


def _cast_bw(node, g):
    """The gradient cast back to the input's dtype by the formula itself (DERIV-3), as torch's
    ToCopyBackward0 does: a leaf whose grad_dtype is None gets its own dtype, not the cast's
    (LEAF-9)."""
    dtype, be = node.in_meta[0][1], node.info
    if g.__class__ is Tensor:
        return (g if g._dtype is dtype else astype(g, dtype),)
    return (g if be.dtype_of[g.dtype] is dtype else be.xp.astype(g, be.native[dtype]),)


def long(a):
    return to(a, dtypes.int64)


def double(a):
    return to(a, dtypes.float64)


def float_(a):
    return to(a, dtypes.float32)


def nonzero(a):
    """The indices of the nonzero elements, one row each: an int64 leaf (DERIV-1)."""
    xp, x, be = a._be.xp, a._data, a._be
    i64 = be.native[dtypes.int64]
    if x.ndim == 0:
        return wrap(be, xp.zeros((1 if bool(x) else 0, 0), dtype=i64))
    return wrap(be, xp.astype(xp.stack(xp.nonzero(x), axis=-1), i64))


# ======================= where (DERIV-6) =======================

def where(condition, a, b):                     # saves: the condition
    if not isinstance(condition, Tensor) or condition._dtype is not dtypes.bool_:
        got = condition._dtype.c_name.capitalize() if isinstance(condition, Tensor) else "?"
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {got}")
    be, xp = condition._be, condition._be.xp
    want = be.native[dtypes.result_type([v for v in (a, b)])]
    x, y = (xp.astype(v._data, want) if isinstance(v, Tensor) else xp.asarray(v, dtype=want)
            for v in (a, b))
    out, node = record(xp.where(condition._data, x, y), be, "WhereBackward0", _where_bw, (a, b),
                       xp)
    if node is not None:
        node.save(saved(node, condition, None))
    return out


def _where_bw(node, g):
    """g where the condition holds to `a`, elsewhere to `b`: a selection, not a product."""
    (c,) = node.unpack()
    xp = node.info  # each a mask of g alone, recorded as one node under create_graph (DOUBLE-2)
    return (diagonal(g, lambda a: xp.where(c, a, xp.zeros_like(a)), "WhereBackward0"),
            diagonal(g, lambda a: xp.where(c, xp.zeros_like(a), a), "WhereBackward0"))


def where_method(a, condition, other):          # Tensor.where(condition, other)
    return where(condition, a, other)
