"""Focus moves: combinations too rare to leave to the statement draw.

From generator vocabulary 3 the statement draw has a "focus" entry (order.py) of WEIGHT: a
focus move, drawn by weight from the table below, is a deliberate error move (errors.py) or
one of the scenarios below: a few statements that build what one behaviour
needs (a hooked tensor used twice, hooks on two tensors of one pass, an in-place op on a
hooked or retained tensor, a retained tensor reached twice, a write through a detached alias or
a view of a non-leaf, two in-place ops in a row, a hook removed that is not the newest and
another registered), so that rare clauses come up in many more programs: the target is every
clause a program can exercise in 20 programs of 300 in both profiles; the default campaign's
rarest are at 11 to 19 and the pytest profile's lower (tests/generator_stats.py measures
them, tests/conformance/test_generator_stats.py holds a floor). Each scenario draws its statements
through the statement kinds' own draws (`Gen.on` points their pick at the tensor at hand), so a
kind's model updates and clause tags have one home.
"""
from __future__ import annotations

import functools
from typing import Any

from ..kinds import KINDS
from ..kinds.deriv_ops import FLOAT_CASTS
from ..lang import ops
from ..lang.ops import INPLACE_SAVES_OUTPUT, weight_in
from ..lang.program import Stmt
from ..model import T, predict, reach
from ..model.tables import FACTORS, KINKS, VALUES_3
from . import errors, errors_backward
from .scenario import ORDER, REWEIGHTED_SCENARIOS, SCENARIOS, backward_then_grad, scenario
from .scenario import backward_pass as _backward

# the weight of "focus" in the statement draw, from generator vocabulary 3 on (0 before): about
# a third of the steps (tests/generator_stats.py: programs per clause)
REWEIGHTED = ((3, 60), (4, 90), (6, 100))


def weight(vocabulary: int) -> int:
    """The weight of "focus" in the statement draw of a generator vocabulary."""
    return weight_in(vocabulary, 0, REWEIGHTED)
# the selections whose result is a value, not an index: max and min, over all or along a dim
SELECTIONS = [r.name for r in ops.OPS if r.family == "select" and r.dtype is None]
# the calls with kinks (DERIV-4: relu, abs, sqrt, pow, clamp)
KINK_OPS = [r.name for r in ops.OPS if r.kink_clause and r.kind == "call"]
# error moves (by kind) reweighted so, in the focus table
REWEIGHTED_ERRORS: dict[str, tuple[tuple[int, int], ...]] = {
    "UNUSED_INPUT": ((4, 3),), "VIEW_OF_LEAF_INPLACE": ((4, 6),),
    "IMPLICIT_GRAD_NONSCALAR": ((5, 2),), "INFERENCE_INPLACE": ((6, 2),),
    "INFERENCE_REQUIRES_GRAD": ((6, 2),), "INFERENCE_VIEW_INPLACE": ((6, 3),),
    # vocabulary 16: the pytest profile's stream reached VER-15 (autograd.grad) once in 300
    "VERSION_MISMATCH": ((16, 5),)}


def _nonleaf(g: Any, dims: bool = False) -> T:
    """A fresh non-leaf that requires grad: 2 * (a tensor that requires grad); with `dims`,
    not 0-d."""
    a = g.rg_tensor("focus input", (lambda u: u.ndim >= 1) if dims else None)
    if dims and not a.ndim:
        a = g.make_leaf(shape=(2,), rg=True)
    return g.call1(a, "mul", [2.0], {}, [])


@scenario("hooked tensor used twice", ("hooks",), reweighted=((5, 3),))
def hooked_used_twice(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("hook", y)
    return _backward(g, KINDS["call"].twice(g, y))


@scenario("hooks on two tensors of one pass", ("hooks",), weight=2)
def two_hooked(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("hook", y)
    z = KINDS["call"].join(g, y) or y
    if z is not y:
        g.draw_on("hook", z)
    return _backward(g, z)


@scenario("in-place op on a hooked tensor", ("hooks", "inplace"), weight=2)
def hooked_inplace(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("hook", y)
    g.draw_on("inplace", y, target=y)
    return _backward(g, y)


@scenario("autograd.grad through a hooked tensor", ("hooks", "autograd_grad"), weight=2,
          reweighted=((4, 4),))
def grad_through_hook(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("hook", y)
    KINDS["call"].join(g, y)
    return KINDS["grad"].draw(g)


@scenario("retained tensor reached twice", ("retain_grad", "retain_graph"), weight=2,
          reweighted=((4, 5),))
def retained_twice(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("retain_grad", y)
    s = g.sum_of(y) if y.shape else y
    if g.vocabulary >= 5 and s.node is not None and not g.ok_kind(predict(reach([s.node]))):
        return False        # an error the capabilities do not let a program keep
    # vocabulary 16: half the time both passes record, and the second replaces the retained
    # .grad with a recorded sum (DOUBLE-3)
    recorded = g.vocabulary >= 16 and g.has("create_graph") and g.boolean(
        "retained under create_graph", 50)
    g.emit_backward(s, [], True, create_graph=recorded)
    done = g.emit_backward(s, [], None, create_graph=recorded)
    return KINDS["observe"].draw(g, y, "grad") if recorded else done


@scenario("in-place op on a retained tensor", ("retain_grad", "inplace"), weight=2,
          reweighted=((4, 4),))
def retained_inplace(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("retain_grad", y)
    g.draw_on("inplace", y, target=y)
    _backward(g, y)
    return KINDS["observe"].draw(g, y, "grad")


@scenario("autograd.grad with a retained tensor", ("retain_grad", "autograd_grad"), weight=2,
          reweighted=((4, 4),))
def retained_autograd_grad(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("retain_grad", y)
    KINDS["call"].join(g, y)
    return KINDS["grad"].draw(g)


@scenario("write through a detached alias", ("inplace",))
def detached_write(g: Any) -> bool:
    y = _nonleaf(g)
    d = g.draw_on("detach", y)
    if d is not None and g.inplace_ok(d):
        g.draw_on("inplace", d, target=d)
    return _backward(g, y)


@scenario("write through a view of a non-leaf", ("views", "inplace"),
          reweighted=((4, 4),))
def view_write(g: Any) -> bool:
    y = _nonleaf(g, dims=True)
    v = g.draw_on("getitem", y) if y.ndim else None
    if v is not None and g.inplace_ok(v):
        g.draw_on("inplace", v, target=v)
    return _backward(g, y)


@scenario("two in-place ops in a row", ("inplace",), weight=2)
def inplace_twice(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("inplace", y, target=y)
    if g.inplace_ok(y):
        g.draw_on("inplace", y, target=y)
    return _backward(g, y)


@scenario("a hook removed that is not the newest, then another", ("hooks",))
def hook_removed_out_of_order(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("hook", y, behaviour="record")
    first = g.out[-1].out
    g.draw_on("hook", y, behaviour="scale")
    if first in g.handles:
        KINDS["remove"].draw(g, first)
    g.draw_on("hook", y, behaviour="record")
    return _backward(g, y)


@scenario("a no_grad block", ("grad_modes",))
def no_grad_block(g: Any) -> bool:
    return KINDS["mode"].draw(g, "no_grad")


@scenario("leaves that require grad made under no_grad, and the mode asked", ("grad_modes",),
          reweighted=((4, 2),))
def leaves_under_no_grad(g: Any) -> bool:
    def body(g: Any) -> None:
        g.make_leaf(rg=True)
        KINDS["grad_enabled"].draw(g)
    return KINDS["mode"].draw(g, "no_grad", body)


@scenario("a node post-hook scaling a gradient beside an undefined one, then backward",
          ("node_hooks", "grad_fn"), weight=0, reweighted=((11, 2), (13, 3)))
def node_hook_beside_none(g: Any) -> bool:
    """x * c with c not requiring grad: the node's grad_inputs are (gradient, None), and a
    hook that scales the first returns the None in its place (HOOK-17)."""
    x = g.rg_tensor("scaled operand", lambda u: u.leaf)
    c = g.make_leaf(shape=x.shape, dtype=x.dtype, rg=False)
    y = KINDS["call"].pair(g, "mul", x, c)
    KINDS["node_hook"].emit(g, y, "post", "scale", g.choice("factor", FACTORS))
    return backward_then_grad(g, x, y)


@scenario("a node hook, then a backward pass", ("node_hooks", "grad_fn"))
def node_hooked(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("node_hook", y)
    return _backward(g, y)


@scenario("an enable_grad block", ("grad_modes",),
          reweighted=((4, 3),))
def enable_grad_block(g: Any) -> bool:
    return KINDS["mode"].draw(g, "enable_grad")


@scenario("a retained tensor with a hook", ("hooks", "retain_grad"))
def retained_hooked(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("hook", y)
    g.draw_on("retain_grad", y)
    _backward(g, y)
    return KINDS["observe"].draw(g, y, "grad")


@scenario("matmul of graphs",
          reweighted=((4, 3),))
def matmul(g: Any) -> bool:
    a = g.rg_tensor("matmul input", lambda u: 1 <= u.ndim <= 2)
    if a.ndim == 0 or not KINDS["call"].emit(g, "matmul", a):
        return False
    return _backward(g, g.tensors[g.out[-1].out])


@scenario("a leaf written in place under no_grad", ("grad_modes", "inplace"))
def leaf_written_under_no_grad(g: Any) -> bool:
    t = g.rg_tensor("leaf", lambda u: u.leaf and not g.view_shared(u))   # views copy: unseen
    errors_backward.write_under_no_grad(g, t)
    return _backward(g, t)


@scenario(".grad reset to None, then another backward pass", weight=2)
def grad_reset(g: Any) -> bool:
    t = g.rg_tensor("leaf", lambda u: u.leaf)
    _backward(g, t)
    g.draw_on("set_grad", t, none=True)
    _backward(g, t)
    return KINDS["observe"].draw(g, t, "grad")


@scenario("autograd.backward on two roots")
def two_roots(g: Any) -> bool:
    y = _nonleaf(g)
    KINDS["call"].join(g, y)
    _nonleaf(g)
    return KINDS["backward_many"].draw(g)


@scenario("setitem on a non-leaf", ("inplace",))
def setitem_nonleaf(g: Any) -> bool:
    y = _nonleaf(g, dims=True)
    if y.ndim:
        g.draw_on("setitem", y)
    return _backward(g, y)


@scenario("a write through .data", ("inplace",))
def data_write(g: Any) -> bool:
    y = _nonleaf(g)
    d = g.draw_on("detach", y, data=True)
    if d is not None and g.inplace_ok(d):
        g.draw_on("inplace", d, target=d)
        if g.has("version_counter"):
            KINDS["observe"].draw(g, y, "version")
    return _backward(g, y)


@scenario("an augmented assignment", ("inplace",))
def augmented(g: Any) -> bool:
    y = _nonleaf(g)
    g.draw_on("inplace", y, target=y, fn=g.choice("operator", ["iadd", "imul"]))
    return _backward(g, y)


@scenario("an in-place op that saves its output, then backward", ("inplace",))
def inplace_saving_output(g: Any) -> bool:
    fns = [f for f, _ in g.inplace_fns if f in INPLACE_SAVES_OUTPUT]
    if not fns:             # every such op lacked
        return False
    y = _nonleaf(g)
    g.draw_on("inplace", y, target=y, fn=g.choice("in-place fn", fns))
    return _backward(g, y)


@scenario("a non-leaf overwritten (fill_, copy_), then backward", ("inplace",))
def overwritten(g: Any) -> bool:
    # not zero_: zeros would reach the kinks of relu, abs, sqrt and pow, whose derivatives
    # the spec does not fix yet (the grid of leaf values avoids them too: model/tables.py)
    y = _nonleaf(g)
    g.draw_on("inplace", y, target=y, fn=g.choice("overwrite", ["fill_", "copy_"]))
    return _backward(g, y)


@scenario("a set_grad_enabled block", ("grad_modes",))
def set_grad_enabled_block(g: Any) -> bool:
    return KINDS["mode"].draw(g, "set_grad_enabled")


def _made(g: Any, fn: str, a: T) -> T | None:
    """Emit a call of fn with a as its first operand; the tensor it binds."""
    return g.tensors[g.out[-1].out] if KINDS["call"].emit(g, fn, a) else None


@scenario("where with a graph as its first operand, then backward", ("deriv_ops",), weight=0,
          reweighted=((4, 4),))
def where_of_a_graph(g: Any) -> bool:
    y = _made(g, "where", _nonleaf(g))      # its condition drawn or made (kinds/deriv_ops.py)
    return y is not None and _backward(g, y)


@scenario("a cast to the other float dtype, then backward and the leaf's .grad",
          ("deriv_ops",), weight=0, reweighted=((4, 3),))
def cast_then_backward(g: Any) -> bool:
    x = g.rg_tensor("cast of", lambda u: u.leaf)
    y = _made(g, FLOAT_CASTS["float64" if x.dtype == "float32" else "float32"], x)
    if y is None:
        return False
    _backward(g, KINDS["call"].join(g, y) or y)
    return KINDS["observe"].draw(g, x, "grad")


@scenario("max or min over tied elements, then backward", ("deriv_ops",), weight=0,
          reweighted=((4, 3),))
def selection_ties(g: Any) -> bool:
    v, w = g.choice("tied value", VALUES_3), g.choice("other value", VALUES_3)
    x = g.make_leaf(shape=g.choice("tied shape", [(4,), (2, 2)]), rg=True, values=[v, v, w, w])
    y = _made(g, g.choice("selection", SELECTIONS), x)
    return y is not None and _backward(g, y)


@scenario("an op at its kinks, then backward and the leaf's .grad", weight=0,
          reweighted=((4, 3),))
def at_kinks(g: Any) -> bool:
    x = g.make_leaf(shape=g.choice("kinks shape", [(4,), (2, 2)]), rg=True,
                    values=[*KINKS, g.choice("value", VALUES_3)])
    y = _made(g, g.choice("op with kinks", KINK_OPS), x)
    if y is None:
        return False
    return backward_then_grad(g, x, y)


@scenario("an in-place op between two disjoint views of one tensor, then backward",
          ("views", "inplace"), weight=0, reweighted=((4, 3),))
def disjoint_views(g: Any) -> bool:
    a = g.make_leaf(shape=g.choice("rows of", [(2,), (2, 3), (3, 2), (2, 2)]), rg=True)
    y = g.call1(a, "mul", [2.0], {}, [])
    v0, v1 = (KINDS["getitem"].emit(g, y, [i]) for i in g.choice("rows", [(0, 1), (1, 0)]))
    fn = g.choice("in-place fn", ["add_", "sub_", "copy_"])     # saving nothing of v1
    cl = g.apply_inplace(v0, [v1], False)
    g.emit(Stmt("inplace", target=v0.name, args=[v1.name], params={"fn": fn, "kw": {}}), cl)
    return backward_then_grad(g, a, y)


# the scenarios of the other modules (their order in the focus table is scenario.ORDER)
from . import functions, grad_tensor, higher, inference, layouts  # noqa: E402, F401

# error moves with two routes (two clauses, or two ways to raise) weigh three times as much
TWO_ROUTES = ("VIEW_OF_LEAF_INPLACE", "VERSION_MISMATCH", "GRAD_OUTPUT_SHAPE")


@functools.cache
def focus_table(caps: frozenset[str], vocabulary: int = 3) -> tuple[tuple[str, int], ...]:
    """The focus moves the capabilities allow with their weights in a vocabulary, in a fixed
    order: SKIP (weight 0: never drawn at random; shrinking goes there), the error moves (as
    "error:KIND"), then the scenarios in scenario.ORDER (those of weight 0 left out)."""
    moves = [(SKIP, 0)] + [
        (f"error:{k}", weight_in(vocabulary, 3 if k in TWO_ROUTES else 1,
                                 REWEIGHTED_ERRORS.get(k, ())))
        for k, m in errors.MOVES.items() if caps.issuperset(m.needs) and m.since <= vocabulary]
    if set(ORDER) != set(SCENARIOS) or len(ORDER) != len(set(ORDER)):
        raise RuntimeError("scenario.ORDER must name every declared scenario once: "
                           f"{sorted(set(ORDER) ^ set(SCENARIOS))}")
    scenarios = [(n, weight_in(vocabulary, w, REWEIGHTED_SCENARIOS.get(n, ())))
                 for n in ORDER for needs, w, _ in [SCENARIOS[n]] if caps.issuperset(needs)]
    return tuple(moves + [(n, w) for n, w in scenarios if w])


SKIP = "skip"


def draw_focus(g: Any) -> bool:
    """The "focus" entry of the statement draw: one focus move the capabilities allow."""
    return make(g, g.weighted("focus", focus_table(g.caps, g.vocabulary)))


def make(g: Any, move: str) -> bool:
    """Make the focus move `move` into g (False when nothing fitted, or when grad mode is off
    and the move builds graphs). SKIP makes nothing, and is True."""
    if move == SKIP:
        return True
    if move.startswith("error:"):
        m = errors.MOVES[move[6:]]
        return (g.grad_enabled or m.no_grad_ok) and m.recipe(g)
    return g.grad_enabled and SCENARIOS[move][2](g)
