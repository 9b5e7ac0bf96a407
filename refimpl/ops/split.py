"""The views that come several at once: `split`, `split_with_sizes`, `chunk` and `unbind`
(VIEW-6), which may not be written in place (VIEW-7), with one node for all of them (VIEW-9,
GRAPH-4).

Each output is the slice or select of views.py, a ViewStep; a recorded call has one node whose
output i is output i (engine._deliver), and its backward puts each output's gradient in its
region of zeros and sums them. Tensor hooks and retain_grad of each output run on that
output's gradient (None where it got none), node hooks on all of them (refimpl/engine.py).
"""
from __future__ import annotations

from .. import errors, grad_mode
from ..node import Node
from ..tensor import Tensor, adjoint_name, linear, make_view
from .views import _dim, _select_step, _slice_step


class MultiViewNode(Node):
    """The one node of a split, chunk or unbind call; info holds one ViewStep per output."""
    __slots__ = ("n_outputs",)


def _multi_backward(node, grads):
    """Each output's gradient put back in its region of zeros, and summed; an output that got
    none adds nothing. Under create_graph each placement is recorded (DOUBLE-2)."""
    total, name = None, adjoint_name(node._name)
    for step, g in zip(node.info, grads if node.n_outputs > 1 else (grads,), strict=True):
        if g is not None:
            g = linear(g, step.bwd, step.fwd, name, node._name) if g.__class__ is Tensor \
                else step.bwd(g)
            total = g if total is None else total + g
    return (total,)


def _multi(a, name, steps):
    """Views of `a`, one per step, with one node: output i is its output i (GRAPH-4). Made
    with grad mode on, none may be written in place while recording (VIEW-7)."""
    outs = tuple(make_view(a, name, s) for s in steps)
    first = outs[0]._grad_fn if outs else None
    if first is not None:
        node = MultiViewNode(name, _multi_backward, first.next_functions, first.in_meta, steps)
        node.n_outputs = len(outs)
        for i, o in enumerate(outs):
            o._grad_fn, o._output_nr = node, i
    for o in outs:
        if o._view_no_grad != errors.INFERENCE_VIEW:
            o._view_no_grad = errors.MULTI_OUTPUT_VIEW if grad_mode.enabled[0] else True
    return outs


def split(a, split_size_or_sections, dim=0):
    """SplitBackward0 for an int (pieces of that size, the last one smaller; one empty piece of
    an empty dim), else SplitWithSizesBackward0 (the sizes listed, which add up to the dim)."""
    if a._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _dim(a, dim)
    size = a._data.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={step}")
        if step == 0 and size:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {size}")
        sizes = [min(step, size - s) for s in range(0, size, step)] if size else [0]
        name = "SplitBackward0"
    else:
        sizes, name = list(split_size_or_sections), "SplitWithSizesBackward0"
        if any(n < 0 for n in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={sizes}")
        if sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                               f"(input tensor's size at dimension {dim}), but got "
                               f"split_sizes={sizes}")
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return _multi(a, name, [_slice_step(a, d, slice(s, s + sizes[i]))
                            for i, s in enumerate(starts)])


def split_with_sizes(a, split_sizes, dim=0):
    return split(a, list(split_sizes), dim)


def chunk(a, chunks, dim=0):
    """SplitBackward0, pieces of ceil(size / chunks); an empty dim gives `chunks` empty pieces,
    through SplitWithSizesBackward0 (as torch's chunk)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if a._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    size = a._data.shape[_dim(a, dim)]
    return split(a, (size + chunks - 1) // chunks if size else [0] * chunks, dim)


def unbind(a, dim=0):                       # UnbindBackward0, one select per index
    d = _dim(a, dim)
    return _multi(a, "UnbindBackward0",
                  [_select_step(a, d, i) for i in range(a._data.shape[d])])
