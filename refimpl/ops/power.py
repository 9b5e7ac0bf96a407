"""pow: a tensor to a Python-scalar power, and a Python scalar to a tensor's power (`__rpow__`),
each forward beside its backward, as in refimpl/ops/elementwise.py (GRAPH-3, GRAPH-6, DOUBLE-2).
"""
from __future__ import annotations

from .. import errors
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
    x, b, be = _operands(a, base)
    out, node = record(b ** x, be, "PowBackward2", _rpow_bw, (a,), (b, be.xp))
    if node is not None:
        node.save(saved(node, a, 0), saved_result(node, out))
    return out


def _rpow_bw(node, g):
    _, r = unpack(node, g)
    b, xp = node.info
    if b == 0:
        return (_zeros(g),)
    return (g * r * float(xp.log(xp.asarray(float(b)))),)
