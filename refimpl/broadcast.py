"""Broadcast shapes: summing a broadcast gradient back to its input's shape (LEAF-8), used by the
engine's validation of each gradient and by expand's backward; the shape two operands broadcast
to, with torch's error when they do not."""
from __future__ import annotations

from . import errors


def shape_of(a, b):
    """The shape operands of shapes a and b broadcast to; torch's RuntimeError (of no spec kind)
    when they do not, rather than the array library's own error."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in reversed(range(n)):        # torch names the last dim that does not match
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            raise errors.size_mismatch(a[i], b[i], i)
    return tuple(y if x == 1 else x for x, y in zip(a, b, strict=True))


def sum_to(xp, g, shape):
    """Sum a broadcast gradient back to `shape` (LEAF-8), as torch's sum_to: one keepdim sum,
    then a view that drops the leading dims; to a 0-d shape, one plain sum (no view, so the
    gradient autograd.grad returns for a 0-d input is no view made under no_grad, MODE-9)."""
    if g.shape == shape:
        return g
    if not shape:
        return xp.sum(g)
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and g.shape[lead + i] != 1)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True)
    return xp.reshape(g, shape) if lead else g


def expandable(shape, to):
    """Whether `shape` broadcasts to `to`."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], to[::-1], strict=False))
