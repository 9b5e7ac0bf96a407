"""Scenarios of layouts, from generator vocabulary 11: what torch computes from sizes and
strides rather than from the graph. A view of a view that is not contiguous or has three dims
(torch's computeStride merges and splits dims chunk by chunk, spec/view.md), a narrow that
starts at its dim's end (an empty view, VIEW-5), a view of a tensor of more than 256
elements, and a setitem whose value broadcasts to the view it writes (INPLACE-9). Seed 0's
stream at vocabulary 10 reached these too rarely to catch a fault of refimpl's code for them
(benchmarks/README.md, mutation score). From vocabulary 13 also: views of tensors of four
dims, an expand adding leading dims to a matrix, an index with None among slices and ints, a
view across a stride above 256, and the zero_ and fill_ INPLACE-18 allows on an expanded view.
"""
from __future__ import annotations

from typing import Any

from ..kinds import KINDS
from ..lang.ops import ROWS
from ..lang.program import Stmt
from ..model import predict, reach, view_options
from ..model.shapes import (
    broadcast_values,
    index_shape,
    merged_views,
    numel,
    rank_views,
    solid_views,
    unit_views,
)
from ..model.tables import NUMBERS, VALUES_3
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
# from vocabulary 13 also a tensor whose dims have a stride of more than 256 (272), merged
# by its views: only there is a stride compared with `is` instead of `==` wrong
_WIDE = (2, 272)
_WIDE_VIEWS = (("view", {"shape": [-1]}, (544,)), ("view", {"shape": [4, -1]}, (4, 136)),
               ("reshape", {"shape": [8, 68]}, (8, 68)))
# tensors of four dims (vocabulary 13): torch's computeStride walks their dims in chunks from
# the last; a view that merges the last two dims needs the stride test of the dim before them
_QUADS = ((2, 2, 2, 2), (1, 2, 3, 2), (2, 1, 2, 3), (2, 3, 2, 1))


def _first_views(g: Any, y: Any) -> list[Any]:
    """solid_views of y, narrow among them where the engine has it."""
    return [o for o in solid_views(y.shape) if o[0] != "narrow" or "narrow_select" in g.caps]


def _narrowed(g: Any) -> tuple[Any, Any, int]:
    """A leaf x, y = x * 2 of one or two dims, and a dim of y counted from either end."""
    x = g.make_leaf(shape=g.choice("narrowed leaf shape", [(3,), *_MATRICES]), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    return x, y, g.choice("narrowed dim", list(range(-len(y.shape), len(y.shape))))


def _narrow(g: Any, y: Any, d: int, start: int, length: int) -> Any:
    """Emit y.narrow(d, start, length); the view it makes."""
    k = d % len(y.shape)
    return KINDS["view"].emit(g, y, "narrow", {"dim": d, "start": start, "length": length},
                              y.shape[:k] + (length,) + y.shape[k + 1:])


@scenario("a view of a view that is not contiguous or has three dims, then backward",
          ("views",), weight=0, reweighted=((11, 6),))
def view_of_view(g: Any) -> bool:
    x = g.make_leaf(shape=g.choice("viewed leaf shape", _MATRICES), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    y = KINDS["call"].join(g, y) or y       # a graph of two leaves, three once joined again
    v = KINDS["view"].emit(g, y, *g.choice("first view", _first_views(g, y)))
    if g.boolean("a view with a size-1 dim put in or taken out", 50):
        second = unit_views(v.shape)
    else:
        second = rank_views(v.shape, v.contiguous) or unit_views(v.shape)
    w = KINDS["view"].emit(g, v, *g.choice("second view", second))
    return backward_then_grad(g, x, w)


@scenario("a narrow at its dim's end (an empty view), then backward",
          ("views", "narrow_select"), weight=0, reweighted=((11, 2),))
def empty_narrow(g: Any) -> bool:
    x, y, d = _narrowed(g)
    e = _narrow(g, y, d, y.shape[d], 0)
    s = g.sum_of(e)
    e.hidden = True         # empty: no other statement is drawn with it in mind
    if s.node is not None and not g.ok_kind(predict(reach([s.node]))):
        return False
    g.emit_backward(s, [], "draw")
    s.hidden = True
    return KINDS["observe"].draw(g, x, "grad")


@scenario("a view of a tensor of more than 256 elements, then backward", ("views",),
          weight=0, reweighted=((11, 2), (19, 3)))    # 19: 3 of 300 programs of seed 0 at 2
def large_view(g: Any) -> bool:
    shape = g.choice("large shape", _LARGE + (_WIDE,) if g.vocabulary >= 13 else _LARGE)
    step = g.integer("large values step", 1, len(VALUES_3) - 1)
    values = [VALUES_3[(i * step) % len(VALUES_3)] for i in range(numel(shape))]
    x = g.make_leaf(shape=shape, rg=True, values=values)
    y = g.call1(x, "mul", [2.0], {}, [])
    views = _WIDE_VIEWS if shape == _WIDE else [o for o in _LARGE_VIEWS if o[2] != shape]
    w = KINDS["view"].emit(g, y, *g.choice("large view", views))
    return backward_then_grad(g, x, w)


@scenario("a view of a tensor of four dims, then backward", ("views",), weight=0,
          reweighted=((13, 2), (19, 3)))      # 19: its view merging two dims left the stream
def view_of_quad(g: Any) -> bool:
    """view and reshape of a contiguous tensor of four dims that merge two neighbouring dims
    or all of them (spec/view.md: the strides torch computes for them)."""
    x = g.make_leaf(shape=g.choice("leaf shape of four dims", _QUADS), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    y = KINDS["call"].join(g, y) or y
    w = KINDS["view"].emit(g, y, *g.choice("merging view", merged_views(y.shape)))
    return backward_then_grad(g, x, w)


@scenario("an expand that adds leading dims to a matrix, then backward", ("views",),
          weight=0, reweighted=((13, 2), (18, 3)))    # 18: 3 of 300 programs of seed 0 at 2
def expand_leading(g: Any) -> bool:
    """t.expand(k, *t.shape) of a matrix, some sizes given as -1 (keep the dim): the
    backward sums over the new dims (ExpandBackward0, VIEW-5's expand)."""
    x = g.make_leaf(shape=g.choice("expanded leaf shape", _MATRICES), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    a, b = y.shape
    w = KINDS["view"].emit(g, y, *g.choice("expand adding dims", (
        ("expand", {"size": [2, a, b]}, (2, a, b)),
        ("expand", {"size": [3, -1, b]}, (3, a, b)),
        ("expand", {"size": [2, a, -1]}, (2, a, b)),
        ("expand", {"size": [2, 1, -1, -1]}, (2, 1, a, b)))))
    return backward_then_grad(g, x, w)


# indices of a matrix (INDEX encoding) with a None after a dim that an index keeps or
# consumes, then an int: the int addresses the dim after the new one
_NONE_INDICES = ([{"slice": [None, None, None]}, None, 0], ["...", None, -1],
                 [{"slice": [1, None, None]}, None, {"slice": [None, None, 2]}],
                 [0, None, {"slice": [None, -1, None]}], [None, -1, None, 0])


@scenario("an index with None among slices and ints, then backward", ("views",), weight=0,
          reweighted=((13, 2),))
def index_with_none(g: Any) -> bool:
    x = g.make_leaf(shape=g.choice("indexed leaf shape", _MATRICES), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    index = g.choice("index with None", _NONE_INDICES)
    w = KINDS["getitem"].emit(g, y, [dict(i, slice=list(i["slice"])) if isinstance(i, dict)
                                     else i for i in index])
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


@scenario("zero_ or fill_ of an expanded view of a tensor that does not require grad",
          ("views", "inplace"), weight=0, reweighted=((13, 2),))
def expanded_fill(g: Any) -> bool:
    """The two writes INPLACE-18 allows on an expanded view: one value for every element, so
    its base holds that value (its errors are gen/errors_overlap.py's). What a backward does
    through them is left open, so the base does not require grad."""
    t = g.make_leaf(shape=g.choice("expanded shape", [(1, 3), (2, 1), (3,), ()]), rg=False)
    e = KINDS["view"].emit(g, t, *g.choice("expand", [o for o in view_options(t)
                                                      if o[0] == "expand"]))
    fn = g.choice("fill of the expanded view", ["zero_", "fill_"])
    args = [g.choice("number", NUMBERS)] if fn == "fill_" else []
    cl = g.apply_inplace(e, [], False) + list(ROWS[fn].clauses) + ["INPLACE-18"]
    g.emit(Stmt("inplace", target=e.name, args=args, params={"fn": fn, "kw": {}}), cl)
    return KINDS["observe"].draw(g, t, "value")


# leaf shapes with a size-1 dim (vocabulary 15): a transpose of (1, n) is still contiguous, and
# a reshape of it a view; a tensor of one element may be viewed as 0-d (`t.reshape(())`)
_UNIT_SHAPES = ((1,), (1, 1), (1, 3), (3, 1), (1, 2), (2, 1))
_ZERO_D = (("reshape", {"shape": []}, ()), ("view", {"shape": []}, ()))


def _to_zero_d(t: Any) -> tuple[Any, ...]:
    """reshape and (where the model knows it contiguous) view of a one-element tensor to 0-d."""
    if numel(t.shape) != 1 or not t.shape:
        return ()
    return _ZERO_D if t.contiguous else _ZERO_D[:1]


@scenario("a view of a tensor with a size-1 dim, then a reshape or view of it, then backward",
          ("views",), weight=0, reweighted=((15, 3),))
def unit_dim_views(g: Any) -> bool:
    """torch decides from the strides whether a reshape is a view (ViewBackward0) or a copy; a
    size-1 dim's stride does not count (spec/view.md)."""
    x = g.make_leaf(shape=g.choice("leaf shape with a size-1 dim", _UNIT_SHAPES), rg=True)
    y = g.call1(x, "mul", [2.0], {}, [])
    v = KINDS["view"].emit(g, y, *g.choice("first view", _first_views(g, y) + list(_to_zero_d(y))))
    second = rank_views(v.shape, v.contiguous) + _to_zero_d(v) or unit_views(v.shape)
    w = KINDS["view"].emit(g, v, *g.choice("second view", second))
    return backward_then_grad(g, x, w)


@scenario("a narrow that starts from the end of its dim, then backward",
          ("views", "narrow_select"), weight=0, reweighted=((15, 2),))
def narrow_from_end(g: Any) -> bool:
    """narrow(dim, start, length) with a negative start, counted from the dim's end (VIEW-5)."""
    x, y, d = _narrowed(g)
    start = g.integer("negative start", -y.shape[d], -1)
    w = _narrow(g, y, d, start, g.integer("length", 1, -start))
    return backward_then_grad(g, x, w)
