"""Scenarios of layouts, from generator vocabulary 11: what torch computes from sizes and
strides rather than from the graph. A view of a view that is not contiguous or has three dims
(torch's computeStride merges and splits dims chunk by chunk, spec/view.md), a narrow that
starts at its dim's end (an empty view, VIEW-5), a view of a tensor of more than 256
elements, and a setitem whose value broadcasts to the view it writes (INPLACE-9). Seed 0's
stream at vocabulary 10 reached these too rarely to catch a fault of refimpl's code for them
(benchmarks/README.md, mutation score).
"""
from __future__ import annotations

from typing import Any

from ..kinds import KINDS
from ..model import predict, reach
from ..model.shapes import broadcast_values, index_shape, rank_views, solid_views, unit_views
from ..model.tables import VALUES_3
from .scenario import backward_then_grad, scenario

# the leaf shapes the scenarios start from: two dims, so that a transpose or a narrow makes a
# tensor that is not contiguous
_MATRICES = [(2, 3), (3, 2), (2, 2)]
# a tensor of more than 256 elements: CPython keeps one object per small int (up to 256), so
# only past it does a size compared with `is` instead of `==` go wrong
_LARGE = ((16, 17), (17, 16), (272,))
# indices that write a view of two dims of a matrix (INDEX encoding, conformance/program.py):
# its value may then drop a leading 1 or broadcast along either dim
_WHOLE_ROWS = (["..."], [{"slice": [None, None, None]}], [{"slice": [1, None, None]}],
               [{"slice": [None, None, None]}, {"slice": [0, None, None]}])
_LARGE_VIEWS = (("view", {"shape": [-1]}, (272,)), ("reshape", {"shape": [17, -1]}, (17, 16)),
                ("view", {"shape": [16, 17]}, (16, 17)), ("reshape", {"shape": [2, 8, 17]},
                                                          (2, 8, 17)))


@scenario("a view of a view that is not contiguous or has three dims, then backward",
          ("views",), weight=0, reweighted=((11, 6),))
def view_of_view(g: Any) -> bool:
    x = g.make_leaf(shape=g.choice("viewed leaf shape", _MATRICES), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    y = KINDS["call"].join(g, y) or y       # a graph of two leaves, three once joined again
    first = [o for o in solid_views(y.shape)
             if o[0] != "narrow" or "narrow_select" in g.caps]
    v = KINDS["view"].emit(g, y, *g.choice("first view", first))
    if g.boolean("a view with a size-1 dim put in or taken out", 50):
        second = unit_views(v.shape)
    else:
        second = rank_views(v.shape, v.contiguous) or unit_views(v.shape)
    w = KINDS["view"].emit(g, v, *g.choice("second view", second))
    return backward_then_grad(g, x, w)


@scenario("a narrow at its dim's end (an empty view), then backward",
          ("views", "narrow_select"), weight=0, reweighted=((11, 2),))
def empty_narrow(g: Any) -> bool:
    x = g.make_leaf(shape=g.choice("narrowed leaf shape", [(3,), *_MATRICES]), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    d = g.choice("narrowed dim", list(range(-len(y.shape), len(y.shape))))
    n = y.shape[d]
    e = KINDS["view"].emit(g, y, "narrow", {"dim": d, "start": n, "length": 0},
                           y.shape[:d % len(y.shape)] + (0,) + y.shape[d % len(y.shape) + 1:])
    s = g.sum_of(e)
    e.hidden = True         # empty: no other statement is drawn with it in mind
    if s.node is not None and not g.ok_kind(predict(reach([s.node]))):
        return False
    g.emit_backward(s, [], "draw")
    s.hidden = True
    return KINDS["observe"].draw(g, x, "grad")


@scenario("a view of a tensor of more than 256 elements, then backward", ("views",),
          weight=0, reweighted=((11, 2),))
def large_view(g: Any) -> bool:
    shape = g.choice("large shape", _LARGE)
    step = g.integer("large values step", 1, len(VALUES_3) - 1)
    values = [VALUES_3[(i * step) % len(VALUES_3)] for i in range(272)]
    x = g.make_leaf(shape=shape, rg=True, values=values)
    y = g.call1(x, "mul", [2.0], {}, [])
    w = KINDS["view"].emit(g, y, *g.choice("large view", [o for o in _LARGE_VIEWS
                                                          if o[2] != shape]))
    return backward_then_grad(g, x, w)


@scenario("setitem of a value broadcast to the view it writes, then backward", ("inplace",),
          weight=0, reweighted=((11, 3),))
def setitem_broadcast(g: Any) -> bool:
    """y[index] = v with v of another shape than y[index] that broadcasts to it: torch drops
    v's leading 1s, then expands and copies (refimpl/ops/views.py, setitem)."""
    x = g.make_leaf(shape=g.choice("written leaf shape", _MATRICES), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    index = g.choice("index of the view written", _WHOLE_ROWS) if g.boolean(
        "a view of two dims written", 50) else g.draw_index(y)
    shape = index_shape(y.shape, index)
    if not shape:
        return False
    value = g.make_leaf(shape=g.choice("broadcast value shape", broadcast_values(shape)),
                        rg=g.boolean("value requires grad", 50))
    KINDS["setitem"].emit(g, y, index, value)
    return backward_then_grad(g, x, y)
