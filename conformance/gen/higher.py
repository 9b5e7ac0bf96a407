"""Higher-order gradients in generated programs (spec/double.md): from generator vocabulary 5,
where the engine declares `create_graph`, a scenario builds a function of one leaf in a few
steps, takes its gradient with `autograd.grad(..., create_graph=True)` and runs a pass through
the gradient's graph (`(g * x).sum()`, which requires grad whatever g does), then looks at the
leaf's `.grad`: the second derivative, through in-place ops and writes through views too
(CopySlices), DOUBLE-1, -2, -5 and -10.

The model predicts whether the gradient is recorded (requires grad, DOUBLE-1) from what each
step's backward formula reads; tests/conformance/test_higher_draws.py checks the prediction
against torch on every program it draws.
"""
from __future__ import annotations

from typing import Any

from ..kinds import KINDS
from ..lang import ops
from ..lang.program import Program, Stmt
from ..model import T, predict, reach
from ..model.tables import NUMBERS
from .scenario import scenario

# What a step's backward formula does to the gradient under create_graph, probed on torch
# 2.13.0 for each op and its in-place form. RECORDING: it reads a saved value that requires
# grad (an input or a result on the path from the leaf), so the gradient it sends back is
# recorded. ZEROING: it sends back constant zeros (DERIV-2; and the overwrites fill_, zero_
# and copy_, whose target's old value no longer counts), so what later steps recorded is lost;
# through a view only the view's part is zero, and the rest passes on. The others pass on what
# they are given, recorded or not: neg, clone, the linear ops and views, sum, mean, clamp (a
# mask: DOUBLE-10); pow with exponent 0 is never drawn. The step nearest the leaf that records
# or zeroes decides (the backward pass reaches it last).
RECORDING = frozenset({"exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "abs", "sqrt",
                       "pow"})
ZEROING = frozenset({"floor", "sign", "round", "fill", "zero", "copy"})
# products and quotients: their gradient reads the other operand (the denominator too)
PRODUCTS = frozenset({"mul", "div"})
# the steps of the function, drawn by weight: an op of one operand, the running tensor times
# itself, an in-place op on it, or an in-place op through a view of it (CopySlices)
STEPS = (("unary", 4), ("square", 1), ("inplace", 2), ("view write", 2))
# DOUBLE-10: the ops whose recorded gradient it states
DOUBLE_10 = frozenset({"relu", "abs", "clamp"})
# ops whose derivative reads their input again (DOUBLE-6: a write to it between a create_graph
# pass and a pass through its gradient's graph is seen)
READS_INPUT = ("sin", "cos")


def _base(fn: str) -> str:
    """An op's out-of-place name: exp_ -> exp, imul -> mul."""
    if fn in ops.AUGMENTED:
        return fn[1:]
    return fn[:-1] if fn.endswith("_") else fn


def records(g: Any, stmt: Any, running: str) -> bool | None:
    """What the call or in-place statement `stmt`, a step of the function on the tensor named
    `running`, does to the gradient under create_graph: True records it, False makes it
    constant zeros, None passes it on."""
    fn = _base(stmt.params["fn"])
    if fn in RECORDING:
        return True
    if fn in ZEROING:
        return False
    if fn not in PRODUCTS:
        return None
    names = [stmt.target] if stmt.target else []
    names += [a for a in stmt.args if isinstance(a, str)]
    if names.count(running) > 1 or (fn == "div" and names[1:2] == [running]):
        return True             # x * x, or x in the denominator
    return True if any(g.tensors[n].rg for n in names if n != running) else None


def _one_operand(g: Any, y: T) -> list[str]:
    """The calls of one tensor operand the vocabulary draws (with their settings) that may
    take y: those whose results jump only on exactly computed operands (ops.Op.jumps)."""
    return [f for f, _ in g.call_fns if ops.ROWS[f].family == "unary"
            and ops.ROWS[f].dtype is None and (not ops.ROWS[f].jumps or y.exact_now())]


def _step(g: Any, y: T, step: str) -> tuple[T, bool | None, str] | None:
    """One step of the function on y: (the running tensor after it, what it does to the
    gradient (records), its op), or None when the step does not fit."""
    before, running = len(g.out), y.name
    if step == "unary":
        fns = _one_operand(g, y)
        if not fns:         # every unary op lacked
            return None
        piecewise = [f for f in fns if f in DOUBLE_10]
        fn = g.choice("double op", piecewise if piecewise and g.boolean(
            "piecewise linear op", 45) else fns)
        y = g.call1(y, fn, [], KINDS["call"]._draw_settings(g, ops.ROWS[fn]),
                    list(ops.ROWS[fn].clauses))
    elif step == "square":
        y = KINDS["call"].twice(g, y)
    elif step == "inplace":
        if not g.inplace_ok(y) or not _in_place(g, y):    # every such op lacked: none
            return None
        g.draw_on("inplace", y, target=y, fn=g.choice("double in-place op", _in_place(g, y)))
    else:
        if not y.ndim or not g.has("views"):
            return None
        v = KINDS["getitem"].emit(g, y, g.draw_index(y, wide=True))
        if not g.inplace_ok(v) or not _in_place(g, v):
            return None
        running = v.name
        g.draw_on("inplace", v, target=v, fn=g.choice("double in-place op", _in_place(g, v)))
    if len(g.out) == before or g.out[-1].op not in ("call", "inplace"):
        return None
    stmt = g.out[-1]
    effect = records(g, stmt, running)
    if step == "view write" and effect is False:
        effect = None       # zeros in the view's part of the gradient only
    return y, effect, _base(stmt.params["fn"])


def _in_place(g: Any, t: T) -> list[str]:
    """The in-place ops of no tensor operand the vocabulary draws (their settings drawn) that
    may take t: those whose results jump only on an exactly computed t (else the in-place
    draw would put another op in their place, maybe one of a tensor operand, which the
    prediction does not follow)."""
    return [f for f, _ in g.inplace_fns if not ops.ROWS[f].arity and f != "zero_"
            and (not ops.ROWS[f].jumps or t.exact_now())]


@scenario("autograd.grad with create_graph, then a pass through the gradient's graph",
          ("autograd_grad", "create_graph"), weight=0, reweighted=((5, 5),))
def second_derivative(g: Any) -> bool:
    x = g.rg_tensor("double leaf", lambda u: u.leaf and u.node is not None) if g.boolean(
        "reuse a leaf", 40) else g.make_leaf(rg=True)
    if g.has("hooks") and x.hookable() and g.boolean("hook on the leaf", 35):
        # it runs in both passes (DOUBLE-9), in the first with grad mode on (DOUBLE-7)
        g.draw_on("hook", x, behaviour=g.choice("leaf hook", ["record", "scale"]))
    before = set(g.tensors)
    y = g.call1(x, "mul", [g.choice("number", NUMBERS)], {}, ["GRAPH-6"])
    y.exact = x.exact_now()         # an IEEE-rounded product: floor, sign, round may follow
    effects, fns = [], []
    # vocabulary 16: sometimes a function of relu alone, whose gradient's graph reaches the
    # leaf only through relu's saved result, which its double backward sends zeros (DOUBLE-10)
    relu_alone = g.vocabulary >= 16 and "relu" in _one_operand(g, y) and g.boolean(
        "a function of relu alone", 20)
    if relu_alone:
        y = g.call1(y, "relu", [], {}, list(ops.ROWS["relu"].clauses))
        effects, fns = [True], ["relu"]
    y0, first = y, None
    if not relu_alone and _read_again(g):   # sin or cos first (DOUBLE-6, _write_between)
        fn = g.choice("read-again op", READS_INPUT)
        y = g.call1(y, fn, [], {}, list(ops.ROWS[fn].clauses))
        effects, fns, first = [True], [fn], ("unary", fn)
    for _ in range(0 if relu_alone else g.integer("double steps", 1, 3)):
        step = g.weighted("double step", STEPS)
        done = _step(g, y, step)
        if done is not None:
            y, effect, fn = done
            effects, fns = effects + [effect], fns + [fn]
            first = first or (step, fn)
    recorded = next((e for e in effects if e is not None), False)
    root = g.sum_of(y) if y.shape else y
    hooked = x.node is not None and bool(x.node.hooks)
    cl = (["DOUBLE-10"] if DOUBLE_10.intersection(fns) else []) + (
        ["DOUBLE-7"] if hooked else [])
    made = KINDS["grad"].emit_recorded(g, root, [x], recorded, cl)
    if made is None:
        return False
    grad = made[0]
    KINDS["observe"].draw(g, grad, "requires_grad")
    wrote = _write_between(g, y0, first)
    if g.vocabulary >= 15 and recorded and "abs" not in fns and (relu_alone or g.boolean(
            "a pass from the gradient alone", 70 if DOUBLE_10.intersection(fns) else 30)):
        # the gradient's graph alone: a node whose input is reached only through a saved
        # value (relu's result in its double backward) still sends it zeros (DOUBLE-10). Not
        # after abs: torch 2.13's sgn backward gives a ZeroTensor, which becomes the leaf's
        # .grad and cannot be read (tolist raises; pytorch/pytorch#89034)
        z = s = g.sum_of(grad) if grad.shape else grad
    else:
        z = KINDS["call"].pair(g, "mul", grad, x)
        s = g.sum_of(z)
    # What the gradient's graph saves, and so which later writes and frees a pass through it
    # notices, is open (UNSPEC-9): nothing uses it again.
    for t in (grad, z, s):
        t.hidden = True
    predicted = predict(reach([s.node]))
    if predicted is not None and not (wrote and predicted == "VERSION_MISMATCH"):
        return True     # the model's graph of it is coarse (it reaches all of root's)
    retain = g.draw_retain()
    # vocabulary 15: sometimes that pass records too (a third-order graph, DOUBLE-3), and
    # half of those run twice, the second adding a recorded gradient to the recorded .grad
    deeper = g.vocabulary >= 15 and g.boolean("the second pass with create_graph", 25)
    twice = deeper and not wrote and "retain_graph" in g.caps and g.boolean(
        "twice with create_graph", 50)
    if twice:
        g.emit_backward(s, [], True, create_graph=True)
    g.emit_backward(s, [], retain, create_graph=deeper)
    _tag(g, g.out[-1], "DOUBLE-2", *([] if retain else ["DOUBLE-5"]),
         *(["DOUBLE-9"] if hooked else []), *(["DOUBLE-6"] if wrote else []))
    if wrote:           # it raised VERSION_MISMATCH: no second derivative to look at
        return True
    if not retain:      # which nodes of the function's graph that pass freed follows the
        for name in set(g.tensors) - before:    # gradient's graph's edges (UNSPEC-9)
            if not g.tensors[name].leaf:
                g.tensors[name].hidden = True
    if not KINDS["observe"].draw(g, x, "grad"):
        return False
    _tag(g, g.out[-1], "DOUBLE-2")      # the second derivative, where it shows
    return True


def _read_again(g: Any) -> bool:
    """Vocabulary 21: sometimes the function starts with sin or cos, whose input a write may
    change between the passes (_write_between)."""
    return g.vocabulary >= 21 and g.has("inplace", "version_counter") and g.boolean(
        "a function its derivative reads again", 50)


def _write_between(g: Any, y0: T, first: tuple[str, str] | None) -> bool:
    """Vocabulary 21: sometimes a write, between the two passes, into y0, the input of the
    function's first step where that is sin or cos, whose derivative in the gradient's graph
    reads it again (DOUBLE-6): whether it wrote."""
    if not (g.vocabulary >= 21 and first is not None and first[0] == "unary"
            and first[1] in READS_INPUT and g.has("inplace", "version_counter")
            and g.inplace_ok(y0) and g.boolean("write between the passes", 85)
            and _in_place(g, y0)):
        return False
    g.draw_on("inplace", y0, target=y0, fn=g.choice("double in-place op", _in_place(g, y0)))
    return True


def _tag(g: Any, stmt: Any, *clauses: str) -> None:
    """Add clauses to an emitted statement's tags (those the capabilities allow)."""
    stmt.clauses = g.tags([*stmt.clauses, *clauses])


def observe_recorded_grads(g: Any) -> None:
    """Vocabulary 22, before the closing sweep: the node of each .grad a create_graph pass
    recorded that the model knows the spec fixes (T.grad_node_known; CopyBackwards, a
    CloneBackward0 or AddBackward0, or none where DOUBLE-1 records nothing: DOUBLE-4), of the
    first two such live tensors, with no draw (the program before them is what it would be
    without them). A retained tensor's only while no plain pass followed a create_graph one
    (UNSPEC-16: that pass may replace its .grad or add into it), as the comparator has it."""
    if g.vocabulary < 22 or not g.has("grad_fn", "create_graph"):
        return
    known = [u for u in g.live() if u.grad_node_known and u.is_float and not u.inference
             and not u.packed_grad and not u.fn_grad]
    if not known:
        return
    if not all(u.leaf for u in known[:2]) and plain_after_graphed(
            s for _, s in Program(g.out).walk()):
        known = [u for u in known if u.leaf]
    for u in known[:2]:
        g.emit(Stmt("observe", target=u.name, params={"what": "grad_grad_fn"}),
               ["DOUBLE-4", "DOUBLE-1"])


def plain_after_graphed(stmts: Any) -> bool:
    """Whether a backward pass without create_graph follows one with it among `stmts`."""
    graphed = False
    for s in stmts:
        if KINDS[s.op].backward_pass:
            if graphed and not s.params.get("create_graph"):
                return True
            graphed = graphed or bool(s.params.get("create_graph"))
    return False
