"""Backward formulas that also run under create_graph (DOUBLE-1, DOUBLE-2, DOUBLE-6).

Each op's backward formula (refimpl/ops) is written once, for gradients of two kinds: backend
arrays in a plain pass, and refimpl tensors under create_graph, where everything the formula
computes is recorded, so that the gradient has a graph of its own. A formula tells which it got
by the type of its gradient: `unpack(node, g)` gives the saved values as arrays, or as tensors
on the graph; `math(g, xp)` the namespace to compute with: xp itself, or TENSORS, the few Array
API functions the formulas call, as recorded refimpl ops. `diagonal` records a gradient that is
a mask or a sign read off saved values; `sum_to` and `astype` are the engine's own steps.
"""
from __future__ import annotations

import weakref

from .backend import namespace_of
from .broadcast import sum_to as _sum_to
from .node import AccumulateGrad, SavedValue
from .tensor import Tensor, linear, wrap


def unpack(node, g):
    """node's saved values: arrays, or, when g is a tensor (create_graph), tensors on the graph."""
    values = node.unpack()
    if g.__class__ is not Tensor:
        return values
    return tuple(_on_graph(node, s, v, g._be) for s, v in zip(node.saved, values, strict=True))


def _on_graph(node, s, value, be):
    """A saved value as torch unpacks it under create_graph: the saved data, with the version
    counter of the tensor saved, or of the tensor the unpack hook returned for a value packed
    by one (a later write to it makes the second backward raise, DOUBLE-6, SAVED-6), and
    the edge the node has to it: its input's, or the node itself for its own result."""
    if s is None or s.dtype is None:  # not saved, or a Python number
        return value
    leaf = s.origin
    if s.idx is not None and s.idx >= 0 and s.__class__ is SavedValue and \
            isinstance(leaf, Tensor) and leaf.grad_fn is None:
        # torch keeps a leaf input itself: it counts as it is now, one that started requiring
        # grad since it was saved (requires_grad_) too (DOUBLE-1)
        return leaf
    t = wrap(be, value, s.vc)
    idx = s.idx  # the edge: its node and which of its outputs (split's pieces, VIEW-6)
    fn, nr = ((s.edge or node), 0) if idx == -1 else \
        node.next_functions[idx] if idx is not None else (None, 0)
    if isinstance(fn, AccumulateGrad):  # a leaf packed by a pack hook: what reaches t reaches
        # the leaf's accumulator, as the leaf was when saved, whether it requires grad now or
        # not (DOUBLE-1, SAVED-12); one that did not then has no edge (fn None)
        t._requires_grad, t._accumulator = True, weakref.ref(fn)
    elif fn is not None:
        t._grad_fn, t._output_nr = fn, nr
    return t


def array(v):
    """The array of a saved value (a tensor under create_graph), or the value itself."""
    return v._data if v.__class__ is Tensor else v


def zeros_like(g):
    """Zeros shaped like g (not g * 0, which keeps inf and nan): a constant under create_graph."""
    if g.__class__ is Tensor:
        return wrap(g._be, g._be.xp.zeros_like(g._data))
    return namespace_of(g).zeros_like(g)


def diagonal(g, fn, name, *depends):
    """fn(g), fn elementwise and linear in g (a mask, a sign). Under create_graph one node that
    is its own adjoint, with the saved tensors it was read off (`depends`) as inputs of zero
    gradient, as torch's formulas take them (threshold_backward takes relu's result)."""
    if g.__class__ is Tensor:
        return linear(g, fn, fn, name, depends=tuple(d for d in depends if d.__class__ is Tensor))
    return fn(g)


def sum_to(t: Tensor, shape) -> Tensor:
    """The engine's sum of a broadcast gradient to its input's shape (LEAF-8), recorded."""
    be, full = t._be, t._data.shape
    return linear(t, lambda a: _sum_to(be.xp, a, shape), lambda a: be.expand(a, full),
                  "SumBackward1", "ExpandBackward0")


def astype(t: Tensor, dtype) -> Tensor:
    """The engine's cast of a gradient to its input's dtype, recorded (ToCopyBackward0)."""
    be, src = t._be, t._dtype
    return linear(t, lambda a: be.xp.astype(a, be.native[dtype]),
                  lambda a: be.xp.astype(a, be.native[src]), "ToCopyBackward0")


def math(g, xp):
    """The namespace a formula computes g's gradients with: xp, or TENSORS for a tensor."""
    return TENSORS if g.__class__ is Tensor else xp


class _Tensors:
    """The Array API functions backward formulas call, as recorded refimpl ops (looked up on
    Tensor when called: refimpl/ops attaches them). It stands in for a Backend too (`xp`,
    `expand`), for the formulas that take one."""
    cos = staticmethod(lambda t: t.cos())
    sin = staticmethod(lambda t: t.sin())
    sum = staticmethod(lambda t: t.sum())
    matmul = staticmethod(lambda a, b: a.matmul(b))
    matrix_transpose = staticmethod(lambda t: t.transpose(-2, -1))
    reshape = staticmethod(lambda t, shape: t.reshape(*shape))
    expand_dims = staticmethod(lambda t, axis: t.unsqueeze(axis))
    expand = staticmethod(lambda t, shape: t.expand(*shape))
    zeros_like = staticmethod(zeros_like)

    @property
    def xp(self):
        return self


TENSORS = _Tensors()
