"""The deliberate error moves of memory shared within a write: PARTIAL_OVERLAP (an operand
that partly overlaps its target, INPLACE-17) and SELF_OVERLAPPING_WRITE (a target whose
elements share memory: an expanded .grad a backward adds into, LEAF-12, or from vocabulary 11
an expanded view written in place, INPLACE-18). errors.py imports this module for its
declarations."""
from __future__ import annotations

from typing import Any

from .. import model
from ..kinds import of
from ..lang.ops import ROWS
from ..lang.program import Stmt
from ..model.tables import NUMBERS
from .error_move import error_move


@error_move("SELF_OVERLAPPING_WRITE", clause="LEAF-12", needs=("views",), since=10)
def self_overlapping_write(g: Any) -> bool:
    """An expanded tensor of a leaf's shape and dtype is accepted as its .grad (LEAF-12); the
    backward that would accumulate into it raises, and .grad = None then lets later passes
    accumulate again. From vocabulary 11 also an in-place op or a setitem on an expanded view
    (INPLACE-18)."""
    if g.vocabulary >= 11 and g.has("inplace") and g.boolean("write to an expanded view", 50):
        return _expanded_write(g)
    x = g.make_leaf(shape=g.choice("expanded .grad shape", [(2, 3), (3, 2), (2, 2)]), rg=True)
    small = g.make_leaf(shape=(1, *x.shape[1:]), dtype=x.dtype, rg=False, hidden=True)
    grad = g.add_view(small, x.shape, True, True)
    g.emit(Stmt("view", out=grad.name, target=small.name,
                params={"fn": "expand", "kw": {"size": list(x.shape)}}), ["GRAPH-10", "VER-13"])
    x.has_grad = True
    g.emit(Stmt("set_grad", target=x.name, args=[grad.name]), ["LEAF-12", "LEAF-13"])
    y = g.call1(x, "mul", [2.0], {}, ["GRAPH-6"])
    root = g.sum_of(y)
    g.emit_backward(root, [], retain=None, inputs=[], kind="SELF_OVERLAPPING_WRITE")
    # the nodes before x's accumulator ran and freed what they saved: nothing uses them again
    y.hidden = root.hidden = True
    x.has_grad = False
    g.emit(Stmt("set_grad", target=x.name, args=[None]), ["LEAF-14"])
    return True


# the writes INPLACE-18 refuses on an expanded view: in-place ops with a number or with no
# operand, and a setitem of a number over the whole view
_EXPANDED_WRITES = (("add_", 2), ("mul_", 2), ("exp_", 1), ("neg_", 1), ("setitem", 1))


def _expanded_write(g: Any) -> bool:
    """e = t.expand(...) of a fresh non-leaf or a tensor that does not require grad, then a
    write to e: it raises before writing, so nothing changes."""
    if g.boolean("expanded non-leaf", 50):
        t = g.call1(g.make_leaf(shape=g.choice("expanded shape", [(1, 3), (2, 1), (3,), ()]),
                                rg=True), "mul", [2.0], {}, ["GRAPH-6"])
    else:
        t = g.make_leaf(shape=g.choice("expanded shape", [(1, 3), (2, 1), (3,), ()]), rg=False)
    e = of("view").emit(g, t, *g.choice("expand", [o for o in model.view_options(t)
                                                   if o[0] == "expand"]))
    fn = g.weighted("write to the expanded view", _EXPANDED_WRITES)
    if fn == "setitem":
        g.emit(Stmt("setitem", target=e.name, args=[g.choice("number", NUMBERS)],
                    params={"index": ["..."]}), ["INPLACE-18"], "SELF_OVERLAPPING_WRITE")
    else:
        args = [g.choice("number", NUMBERS)] if ROWS[fn].arity else []
        g.emit(Stmt("inplace", target=e.name, args=args, params={"fn": fn, "kw": {}}),
               ["INPLACE-18"], "SELF_OVERLAPPING_WRITE")
    return True


@error_move("PARTIAL_OVERLAP", clause="INPLACE-17", needs=("inplace", "views"), since=5)
def partial_overlap(g: Any) -> bool:
    """An in-place op, a setitem or an in-place op through a transpose whose operand is
    another dense view of the same memory, partly overlapping the target: it raises before
    writing, so nothing changes. From vocabulary 10 also the forms of _OVERLAPS_10."""
    if g.vocabulary >= 10 and g.boolean("overlap form of vocabulary 10", 50):
        return _overlap_10(g)
    a = g.make_leaf(shape=g.choice("overlap shape", [(3,), (2, 2)]))
    y = g.call1(a, "mul", [2.0], {}, ["GRAPH-6"])
    if y.shape == (2, 2):
        t = g.add_view(y, (2, 2), True, False)
        g.emit(Stmt("view", out=t.name, target=y.name, params={"fn": "t", "kw": {}}),
               ["GRAPH-10"])
        target, operand, index = t, y, None
    else:
        first = {"slice": [0, 2, None]}
        operand = of("getitem").emit(g, y, [{"slice": [1, 3, None]}])
        if g.boolean("overlap by setitem", 25):
            target, index = y, [first]
        else:
            target, index = of("getitem").emit(g, y, [first]), None
    if index is not None:
        g.emit(Stmt("setitem", target=target.name, args=[operand.name],
                    params={"index": index}), ["INPLACE-17"], "PARTIAL_OVERLAP")
    else:
        fn = g.choice("overlap fn", ["add_", "sub_", "mul_", "copy_"])
        g.emit(Stmt("inplace", target=target.name, args=[operand.name],
                    params={"fn": fn, "kw": {}}), ["INPLACE-17"], "PARTIAL_OVERLAP")
    return True


# vocabulary 10: operands that cover the target's memory with other strides (y.add_(y.t()),
# y.t().copy_(y)), a one-element target its 0-d operand starts on (y[0:1].add_(y[0])), an
# operand that starts before the target (y[1:3].add_(y[0:2])); refimpl's overlap check has a
# branch for each (mutation score, benchmarks/README.md)
_OVERLAPS_10 = ("transposed operand", "transposed target", "one-element target",
                "operand before")


def _overlap_10(g: Any) -> bool:
    form = g.choice("overlap form", _OVERLAPS_10)
    square = form.startswith("transposed")
    y = g.call1(g.make_leaf(shape=(2, 2) if square else (3,)), "mul", [2.0], {}, ["GRAPH-6"])
    if square:
        t = g.add_view(y, (2, 2), True, False)
        g.emit(Stmt("view", out=t.name, target=y.name, params={"fn": "t", "kw": {}}),
               ["GRAPH-10"])
        target, operand = (y, t) if form == "transposed operand" else (t, y)
    elif form == "one-element target":
        target = of("getitem").emit(g, y, [{"slice": [0, 1, None]}])
        operand = of("getitem").emit(g, y, [0])
    else:
        operand = of("getitem").emit(g, y, [{"slice": [0, 2, None]}])
        target = of("getitem").emit(g, y, [{"slice": [1, 3, None]}])
    fn = g.choice("overlap fn", ["add_", "sub_", "mul_", "copy_"])
    g.emit(Stmt("inplace", target=target.name, args=[operand.name],
                params={"fn": fn, "kw": {}}), ["INPLACE-17"], "PARTIAL_OVERLAP")
    return True
