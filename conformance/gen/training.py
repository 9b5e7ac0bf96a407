"""Training-step programs: what users compile with torch.compile, drawn on request only.

A program of this family is a few training steps of one model: parameters (torch.nn.Parameter
where the engine declares nn_module, else leaves that require grad) and a batch that does not
require grad, drawn once; a forward drawn once (per parameter a layer: a binary op of the
running value and the parameter, or a matmul by a square parameter, sometimes an elementwise
nonlinearity after it, out of place or in place) and a loss (sum or mean), replayed every step
on the parameters as they are then; sometimes a hook (recording or scaling) on the first
parameter, registered once before the steps, and retain_grad on the first layer's output in
each step, its .grad observed in the update block; the loss observed; a backward from it; and
the update under no_grad (a decorated function sometimes, as grad-mode blocks are drawn):
`g = p.grad`, sometimes clipped in place (`g.clamp_(...)`), `p -= lr * g` (or `p.sub_(...)`),
then the .grad set to None, zeroed in place (`g.zero_()`) or zeroed by a module's zero_grad.
Two or three steps, so that a compiler meets the same step again with the parameters it
updated; at the end the parameters' values and .grads are observed. Only what the engine's
capabilities cover is drawn: without grad_tensor or grad_modes, or with neither `p -= ...` nor
`p.sub_(...)` (no `inplace`, or both lacked), there is no update, and each step ends at its
backward with the parameters' .grads set to None; an in-place op or one the engine lacks
(`lacks_ops`) is never drawn.

Engines of granularity "step" (conformance/judge/segments.py) run forward, loss, backward
and update as one unit: the step function a user compiles. The family is opt-in, through
`gradspec run --source conformance.gen.training:program` (the draws of the default generator
are untouched: every existing seed draws the program it drew). Statements are emitted
through the statement kinds' own emitters and the model, so each carries the clauses it
exercises and the divergences found cite them as for any program.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from ..kinds import KINDS
from ..kinds.grad_tensor import bindable
from ..lang import ops
from ..lang.program import Program, Stmt
from ..model import T, numel
from ..spec.capabilities import normal
from .core import Gen
from .strategies import RandomChooser

# what the update needs of an engine: leaves' .grad bound to a name, grad-mode blocks; without
# them a step ends at its backward, its .grads set to None (no parameter is updated)
NEEDS = ("grad_tensor", "grad_modes")
SHAPES = ((3,), (2, 3), (4,), (2, 2))
LAYER_OPS = ("mul", "add", "sub", "matmul")
NONLINEAR = ("tanh", "sigmoid", "sin", "relu")
RATES = (0.5, 0.25, 0.125)       # exact in binary: the update rounds as eager torch's does


def program(seed: int, capabilities: Iterable[str] | None = None, size: int = 20) -> Program:
    """The training-step program of a seed (the `--source` signature: size is unused)."""
    from .vocabulary import ALL_CAPABILITIES
    caps = set(capabilities if capabilities is not None else ALL_CAPABILITIES) | {"core"}
    g = Gen(RandomChooser(seed), caps, size)
    g.dtype = g.choice("program dtype", ("float32", "float64"))
    shape = g.choice("parameter shape", SHAPES)
    fns = [g.choice("layer op", _covered(g, LAYER_OPS))
           for _ in range(g.integer("parameters", 1, 3))]
    params = [_parameter(g, (shape[-1], shape[-1]) if fn == "matmul" else shape) for fn in fns]
    batch = g.make_leaf(shape=shape, dtype=g.dtype, rg=False)
    nonlinear = _covered(g, NONLINEAR)
    layers = [Layer(fn, g.choice("nonlinearity", nonlinear)
                    if nonlinear and g.boolean("nonlinear", 60) else None,
                    g.boolean("in place", 30)) for fn in fns]
    if g.has("hooks") and g.boolean("a hook on a parameter", 40):
        KINDS["hook"].draw(g, g.choice("hook behaviour", ("record", "scale")), params[0])
    plan = Plan(layers, g.choice("loss", _covered(g, ("sum", "mean"))),
                g.choice("learning rate", RATES),
                g.boolean("p -= update", 50), g.has("retain_grad") and g.boolean("retain", 30),
                g.boolean("clip the .grad", 30),
                g.choice("zeroing", ("none", *_covered(g, ("zero_",)))
                         + (("zero_grad",) if g.has("nn_module") else ())))
    for _ in range(g.integer("steps", 2, 3)):
        if not _step(g, params, batch, plan):
            break
    for p in params:
        KINDS["observe"].draw(g, p, "value")
        KINDS["observe"].draw(g, p, "grad")
    prog = Program(g.out, meta={"generator": g.vocabulary, "size": size, "family": "training",
                                "capabilities": sorted(normal(g.caps)),
                                "expect": g._expected(g.out, "")})
    prog.seed = seed
    return prog


def _covered(g: Gen, names: tuple[str, ...]) -> tuple[str, ...]:
    """The ops among names the engine runs: their row's capability (ops.Op.needs) and, for an
    in-place op, `inplace` declared, and not among the ops it lacks (Engine.lacks_ops). The
    tuple is `names` itself where all are (the draws of an engine that has them unchanged)."""
    return tuple(n for n in names if (ops.ROWS[n].needs is None or g.has(ops.ROWS[n].needs))
                 and (ops.ROWS[n].kind != "inplace" or g.has("inplace"))
                 and n not in g.lacked)


def _parameter(g: Gen, shape: tuple[int, ...]) -> T:
    values = g.draw_values(numel(shape), g.dtype)
    if g.has("nn_module"):
        return KINDS["parameter"].emit(g, shape, g.dtype, values)
    return g.make_leaf(shape=shape, dtype=g.dtype, rg=True, values=values)


class Layer(NamedTuple):
    fn: str                     # a binary op of the running value and the parameter, or matmul
    nonlinear: str | None       # an elementwise op after it, or none
    in_place: bool              # ... applied in place (relu_, tanh_, ...)


class Plan(NamedTuple):
    """What every step of a program repeats."""
    layers: list[Layer]
    loss: str                   # sum | mean
    rate: float
    augmented: bool             # p -= step, else p.sub_(step)
    retain: bool                # retain_grad on the first layer's output, its .grad observed
    clip: bool                  # the .grad clamped in place before the update
    zero: str                   # none (.grad = None) | zero_ | zero_grad


def _step(g: Gen, params: list[T], batch: T, plan: Plan) -> bool:
    """Emit one step: forward, loss (observed), backward, the update block. False when the
    model predicts the backward raises (no update follows then)."""
    h, first = batch, None
    for p, layer in zip(params, plan.layers, strict=True):
        h = _matmul(g, h, p) if layer.fn == "matmul" else KINDS["call"].pair(g, layer.fn, h, p)
        if first is None and plan.retain:
            first = h
            g.draw_on("retain_grad", h)
        if layer.nonlinear and layer.in_place and g.inplace_ok(h) and _covered(
                g, (layer.nonlinear + "_",)):
            KINDS["inplace"].draw(g, h, layer.nonlinear + "_")
        elif layer.nonlinear:
            h = g.call1(h, layer.nonlinear, [], {}, [])
    loss = g.result((), h.dtype, [h])
    g.emit(Stmt("call", out=loss.name, args=[h.name], params={"fn": plan.loss, "kw": {}}),
           ["GRAPH-1"])
    KINDS["observe"].draw(g, loss, "value")
    before = len(g.out)
    g.emit_backward(loss, [], None, draw_inputs=False)
    if g.expect.get(id(g.out[before])):
        return False
    if not (g.has(*NEEDS) and _covered(g, ("isub", "sub_"))):
        for p in params:
            with g.on(p):
                KINDS["set_grad"].draw(g, none=True)
        return True
    return KINDS["mode"].draw(g, "no_grad", lambda g: _update(g, params, plan, first))


def _matmul(g: Gen, h: T, w: T) -> T:
    """Emit h @ w of a square parameter w: the model of the result (h's shape)."""
    y = g.result(h.shape, h.dtype, [h, w], saved=[h.storage, w.storage])
    g.emit(Stmt("call", out=y.name, args=[h.name, w.name], params={"fn": "matmul", "kw": {}}),
           ["GRAPH-1"])
    return y


def _update(g: Gen, params: list[T], plan: Plan, retained: T | None) -> None:
    """The body of the update block: the retained tensor's .grad observed (in the block, so
    that the step's unit holds it), each parameter moved against its .grad, then the .grads
    zeroed as drawn."""
    if retained is not None:
        KINDS["observe"].draw(g, retained, "grad")
    held: list[Any] = []
    for p in params:
        if not bindable(p):
            continue
        grad = KINDS["grad_ref"].bind(g, p)
        if plan.clip and _covered(g, ("clamp_",)):
            KINDS["inplace"].draw(g, grad, "clamp_")
        step = g.call1(grad, "mul", [plan.rate], {}, [])
        forms = _covered(g, ("isub", "sub_"))
        fn = forms[0] if len(forms) == 1 else "isub" if plan.augmented else "sub_"
        cl = g.apply_inplace(p, [step], False)
        g.emit(Stmt("inplace", target=p.name, args=[step.name], params={"fn": fn, "kw": {}}),
               cl + (["INPLACE-13"] if fn == "isub" else []))
        held.append((p, grad))
    if plan.zero == "zero_grad":
        KINDS["zero_grad"].emit(g, params, g.boolean("set_to_none", 50))
    elif plan.zero == "zero_":
        for _, grad in held:
            cl = g.apply_inplace(grad, [], False)
            g.emit(Stmt("inplace", target=grad.name, args=[], params={"fn": "zero_", "kw": {}}),
                   cl)
    else:
        for p, _ in held:
            with g.on(p):
                KINDS["set_grad"].draw(g, none=True)
