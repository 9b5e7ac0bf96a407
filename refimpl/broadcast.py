"""Broadcast shapes: summing a broadcast gradient back to its input's shape (LEAF-8), used by the
engine's validation of each gradient and by expand's backward."""
from __future__ import annotations


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
