"""Scenarios of the tensor `.grad` holds (spec/grad.md), from generator vocabulary 21 where the
engine declares grad_tensor: a .grad bound to a name or assigned and kept, written into, added
into by a later pass, saved by a graph that a later pass then refuses (GRAD-1 to GRAD-4), and
leaves whose layout a first .grad takes (GRAD-2)."""
from __future__ import annotations

from typing import Any

from ..kinds import KINDS
from ..model import T
from .scenario import backward_pass, scenario

SINCE = 21
_NEEDS = ("grad_tensor",)


def _then_added_into(g: Any, x: T, h: T) -> bool:
    """h is x's .grad: sometimes a write into h and a look at x.grad (GRAD-3); sometimes a
    graph that saves h; then a pass that adds into x.grad (GRAD-4) and a look at h, at
    `x.grad is h`, and at the graph that saved h (VERSION_MISMATCH, GRAD-4)."""
    if g.boolean("write into the .grad", 40) and g.draw_on("inplace", h) is not None:
        KINDS["observe"].draw(g, x, "grad")
    saver = None
    if g.has("version_counter") and g.boolean("a graph saves the .grad", 30):
        w = g.make_leaf(shape=h.shape, dtype=h.dtype, rg=True)
        saver = KINDS["call"].pair(g, "mul", w, h)
    fn = g.choice("grad op", ("mul", "exp", "sin"))
    backward_pass(g, g.call1(x, fn, [2.0] if fn == "mul" else [], {}, []))
    KINDS["observe"].draw(g, h, "value")
    KINDS["grad_is"].draw(g, h)
    if saver is not None:
        backward_pass(g, saver)
    return True


@scenario("a leaf's .grad bound to a name, then added into", _NEEDS, weight=0,
          reweighted=((SINCE, 3),))
def grad_bound(g: Any) -> bool:
    x = g.make_leaf(rg=True, dtype=g.choice("leaf dtype", ("float32", "float64")))
    backward_pass(g, g.call1(x, "mul", [3.0], {}, ["GRAPH-6"]))
    h = g.draw_on("grad_ref", x)
    if h is None:
        return True
    return _then_added_into(g, x, h)


@scenario("a leaf of another layout, and the .grad a pass gives it", _NEEDS + ("views",),
          weight=0, reweighted=((SINCE, 2),))
def grad_layout(g: Any) -> bool:
    """A leaf made from a transpose, a strided slice or an expand of a tensor (detach(), then
    requires_grad_()): its first .grad takes its strides, or is row-major (GRAD-2), and a
    second pass keeps them (GRAD-4)."""
    n, m = g.choice("layout shape", ((2, 3), (3, 2), (3, 4)))
    how = g.choice("layout", ("t", "slice", "expand"))
    if how == "expand":
        b = g.make_leaf(shape=(m,), rg=False)
        v = KINDS["view"].emit(g, b, "expand", {"size": [n, m]}, (n, m))
    elif how == "t":
        b = g.make_leaf(shape=(n, m), rg=False)
        v = KINDS["view"].emit(g, b, "t", {}, (m, n))
    else:
        b = g.make_leaf(shape=(n, 2 * m), rg=False)
        v = KINDS["getitem"].emit(g, b, [{"slice": [None, None, None]},
                                         {"slice": [None, None, 2]}])
    x = g.draw_on("detach", v)
    if x is None:
        return False
    KINDS["requires_grad_"].emit(g, x, True)
    backward_pass(g, g.call1(x, "mul", [3.0], {}, ["GRAPH-6"]))
    KINDS["observe"].draw(g, x, "grad_layout")
    if g.boolean("second pass", 50):
        backward_pass(g, g.call1(x, "exp", [], {}, []))
        KINDS["observe"].draw(g, x, "grad_layout")
    return True


@scenario("a tensor assigned to .grad and kept, then added into", _NEEDS, weight=0,
          reweighted=((SINCE, 2),))
def grad_assigned(g: Any) -> bool:
    x = g.make_leaf(rg=True, dtype=g.choice("leaf dtype", ("float32", "float64")))
    with g.on(x):
        KINDS["set_grad"].draw(g, none=False, keep=True)
    v = g.tensors[g.out[-1].args[0]]
    return _then_added_into(g, x, v)
