"""Scenarios of custom Functions (spec/function.md), from generator vocabulary 19 where the
engine declares `custom_function`: what the statement draw reaches too rarely to judge an
engine on. A dirty input that holds a retained .grad (FUNC-11: a recorded call drops it), a
Function of two outputs with a pass from one of them (FUNC-9, FUNC-10: the other's gradient
is zeros, or None once materializing is off), and a pass from a Function whose backward
returns None for a fresh leaf, then that leaf's .grad (FUNC-6)."""
from __future__ import annotations

from typing import Any

from ..kinds import KINDS
from ..kinds.function import emit_apply
from ..lang.functions import ROWS
from ..model import T
from .scenario import backward_pass, scenario

SINCE = 19
_NEEDS = ("custom_function",)


def _nonleaf(g: Any) -> Any:
    """A fresh non-leaf that requires grad: 2 * (a tensor that requires grad)."""
    return g.call1(g.rg_tensor("Function input"), "mul", [2.0], {}, [])


@scenario("a retained tensor marked dirty between two passes",
          _NEEDS + ("retain_grad", "inplace"), weight=0, reweighted=((SINCE, 3),))
def dirty_retained(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("retain_grad", y)
    if not backward_pass(g, y, retain=True if g.has("retain_graph") else "draw"):
        return False
    if not KINDS["dirty_function"].draw(g, target=y) or y.hidden:
        return False
    KINDS["observe"].draw(g, y, "grad")
    backward_pass(g, y)
    return KINDS["observe"].draw(g, y, "grad")


@scenario("a pass from one output of a Function of two", _NEEDS, weight=0,
          reweighted=((SINCE, 3),))
def one_of_two_outputs(g: Any) -> bool:
    row = ROWS[g.choice("Function of two outputs", ("Pair", "PairLazy", "WithFloor"))]
    a = g.rg_tensor("Function input", T.exact_now if row.nondiff else None)  # floor jumps
    first = emit_apply(g, row, a)
    used = first
    if row.name != "WithFloor" and g.boolean("the second output", 50):
        used = g.tensors[g.out[-1].params["outs"][1]]
    if not backward_pass(g, used):
        return False
    return KINDS["observe"].draw(g, a, "grad") if a.leaf else True


@scenario("a pass from a Function that sends a leaf no gradient", _NEEDS, weight=0,
          reweighted=((SINCE, 2),))
def none_for_a_leaf(g: Any) -> bool:
    a = g.rg_tensor("Function input")
    y = emit_apply(g, ROWS["FirstOnly"], a)
    cut = g.tensors[g.out[-1].args[0]]
    if not backward_pass(g, y):
        return False
    return KINDS["observe"].draw(g, cut, "grad")
