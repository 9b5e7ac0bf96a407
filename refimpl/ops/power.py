"""pow: a tensor to a Python-scalar power, and a Python scalar to a tensor's power (`__rpow__`),
each forward beside its backward, as in refimpl/ops/elementwise.py (GRAPH-3, GRAPH-6, DOUBLE-2).
"""
from __future__ import annotations

from .. import dtypes, errors
from ..backend import namespace_of
from ..differentiable import unpack
from ..differentiable import zeros_like as _zeros
from ..tensor import Tensor, record, saved, saved_result
from .elementwise import _operands


def pow(a, exponent):                       # saves: self (a scalar exponent only)
    """An int64 or bool tensor to a negative integer power is refused, as torch checks the
    exponent (an empty tensor too; numpy raises ValueError, and only for some values)."""
    if isinstance(exponent, Tensor):
        raise NotImplementedError("refimpl: pow supports a Python scalar exponent only")
    if not a._dtype.is_floating_point and isinstance(exponent, int) and exponent < 0:
        raise errors.negative_integer_power()
    x, e, be = _operands(a, exponent)
    if isinstance(e, bool):     # a bool tensor to a bool power: itself (a copy), or all True
        return record(x | (not e), be, "PowBackward0", _pow_bw, (a,), e)[0]
    out, node = record(_power(x, e, be.xp), be, "PowBackward0", _pow_bw, (a,), e)
    if node is not None:
        node.save(saved(node, a, 0))
    return out


def _power(x, e, xp):
    """x ** e as torch's pow kernel computes it: exponent -0.5 is 1 / sqrt(x), so that
    -0.0 gives -inf (IEEE pow gives +inf), in pow and in pow(x, 0.5)'s derivative."""
    return 1 / xp.sqrt(x) if e == -0.5 else x ** e


def _pow_bw(node, g):
    (a,) = unpack(node, g)
    e = node.info
    if e == 0:
        return (_zeros(g),)
    if a.__class__ is Tensor:       # under create_graph: recorded, through pow above
        return (g * (e * a ** (e - 1)),)
    return (g * (e * _power(a, e - 1, namespace_of(a))),)


def rpow(a, base):                          # base ** a for a Python scalar base; saves: a, result
    """torch has no pow kernel for bool, so a Python bool to a bool tensor's power is refused;
    integers compute as torch's integer kernel does (_integer_power)."""
    if isinstance(base, bool) and a._dtype is dtypes.bool_:
        raise errors.bool_kernel("pow")
    x, b, be = _operands(a, base)
    r = _integer_power(b, x, be.xp) if be.dtype_of[x.dtype] is dtypes.int64 else b ** x
    out, node = record(r, be, "PowBackward2", _rpow_bw, (a,), (b, be.xp))
    if node is not None:
        node.save(saved(node, a, 0), saved_result(node, out))
    return out


def _integer_power(b: int, x, xp):
    """b ** x of integers as torch's kernel computes it: a negative exponent gives 1 for base
    1, -1 or 1 by parity for base -1, and 0 for any other base (numpy refuses it)."""
    r = b ** xp.abs(x)
    return r if b in (1, -1) else xp.where(x < 0, xp.zeros_like(r), r)


def _rpow_bw(node, g):
    _, r = unpack(node, g)
    b, xp = node.info
    if b == 0:
        return (_zeros(g),)
    return (g * r * float(xp.log(xp.asarray(float(b)))),)
