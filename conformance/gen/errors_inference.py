"""The deliberate error moves of inference mode (spec/infer.md), from generator vocabulary 6
where the engines declare `inference_mode`, and the inference-mode block they and the scenario
of gen/inference.py draw.

Each move draws a `with torch.inference_mode():` block (or a function it decorates) that makes
the tensor the error needs, then the one statement outside the block that must raise: reading
an inference tensor's `_version` (INFER-3), writing it in place (INFER-4), an op that would
save it for backward (INFER-5), making it require grad (INFER-6), and writing in place a view
of an ordinary tensor taken inside the block (INFER-7). What the block makes is marked in the
model (`T.inference`): undirected draws never pick it, so no later statement meets an error the
model does not predict.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kinds import KINDS, of
from ..lang.program import Stmt
from ..model import T
from ..model.tables import NUMBERS
from .error_move import error_move

# the ops an inference block applies to an ordinary tensor (its result: an inference tensor);
# none that a grid value could take outside its domain (log, sqrt)
INSIDE_OPS = (("mul", [2.0]), ("add", [1.5]), ("neg", []), ("exp", []), ("sin", []),
              ("tanh", []), ("clone", []))
SINCE = 6


def inference_block(g: Any, body: Callable[[Any], Any]) -> bool:
    """Emit an inference-mode block whose statements body(g) draws (Mode.draw: a with-block,
    or a function the mode decorates); False where none may be drawn (inside another block
    two deep, or inside inference mode)."""
    return KINDS["mode"].draw(g, mode="inference_mode", body=body)


def op_inside(g: Any, a: T) -> T:
    """Within an inference block: emit out = op(a) for an ordinary tensor a; the model of out,
    an inference tensor that does not require grad (INFER-1, INFER-2)."""
    fn, numbers = g.choice("inference op", INSIDE_OPS)
    t = g.result(a.shape, a.dtype, [a])
    g.emit(Stmt("call", out=t.name, args=[a.name, *numbers], params={"fn": fn, "kw": {}}),
           ["INFER-1", "INFER-2"])
    return t


def made_inside(g: Any, label: str) -> T | None:
    """An inference tensor made in a fresh inference block: a factory's, or an op's result
    on a live float tensor. None where no block may be drawn."""
    made: list[T] = []

    def body(g: Any) -> None:
        if g.boolean(label + " is a factory's", 40):
            made.append(g.make_leaf(rg=False))
        else:
            a = g.pick(label, lambda u: u.is_float) or g.make_leaf(rg=False)
            made.append(op_inside(g, a))
    if not inference_block(g, body) or not made:
        return None
    return made[0]


@error_move("INFERENCE_VERSION", clause="INFER-3", needs=("inference_mode", "version_counter"),
            no_grad_ok=True, since=SINCE)
def inference_version(g: Any) -> bool:
    t = made_inside(g, "unversioned")
    if t is None:
        return False
    if t.ndim and g.has("views") and g.boolean("version of a view", 30):
        t = of("getitem").emit(g, t, g.draw_index(t))
    g.emit(Stmt("observe", target=t.name, params={"what": "version"}), ["INFER-3"],
           "INFERENCE_VERSION")
    return True


@error_move("INFERENCE_INPLACE", clause="INFER-4", needs=("inference_mode", "inplace"),
            no_grad_ok=True, since=SINCE)
def inference_inplace(g: Any) -> bool:
    t = made_inside(g, "written")
    if t is None:
        return False
    if t.ndim and g.boolean("write by setitem", 30):
        g.emit(Stmt("setitem", target=t.name, args=[g.choice("number", NUMBERS)],
                    params={"index": g.draw_index(t)}), ["INFER-4"], "INFERENCE_INPLACE")
    else:
        fn = g.choice("refused in-place fn", ["add_", "mul_", "zero_"])
        args = [] if fn == "zero_" else [g.choice("number", NUMBERS)]
        g.emit(Stmt("inplace", target=t.name, args=args, params={"fn": fn, "kw": {}}),
               ["INFER-4"], "INFERENCE_INPLACE")
    # what the tensor holds after the refused write is open (UNSPEC-10: torch writes first)
    for u in g.tensors.values():
        if u.memory() is t.memory():
            u.hidden = True
    return True


@error_move("INFERENCE_SAVED", clause="INFER-5", needs=("inference_mode",), since=SINCE)
def inference_saved(g: Any) -> bool:
    a = g.rg_tensor("saving operand", lambda u: not u.expanded)
    made: list[T] = []
    if not inference_block(g, lambda g: made.append(op_inside(g, a))):
        return False
    fn = g.choice("saving op", ["mul", "div"])
    args = [a.name, made[0].name] if g.boolean("inference operand second", 50) else [
        made[0].name, a.name]
    g.emit(Stmt("call", out=g.fresh(), args=args, params={"fn": fn, "kw": {}}), ["INFER-5"],
           "INFERENCE_SAVED")
    return True


@error_move("INFERENCE_REQUIRES_GRAD", clause="INFER-6", needs=("inference_mode",),
            no_grad_ok=True, since=SINCE)
def inference_requires_grad(g: Any) -> bool:
    t = made_inside(g, "flagged")
    if t is None or not t.is_float:
        return False
    g.emit(Stmt("requires_grad_", target=t.name, params={
        "value": True, **({"setter": True} if g.draw_setter() else {})}), ["INFER-6"],
        "INFERENCE_REQUIRES_GRAD")
    return True


@error_move("INFERENCE_VIEW_INPLACE", clause="INFER-7",
            needs=("inference_mode", "views", "inplace"), since=SINCE)
def inference_view_inplace(g: Any) -> bool:
    t = g.rg_tensor("base", lambda u: u.ndim >= 1 and not u.expanded)
    if not t.shape:
        t = g.make_leaf(shape=(2,), rg=True)
    made: list[T] = []
    if not inference_block(g, lambda g: made.append(of("getitem").emit(g, t, g.draw_index(t)))):
        return False
    fn = g.choice("refused in-place fn", ["add_", "mul_"])
    g.emit(Stmt("inplace", target=made[0].name, args=[g.choice("number", NUMBERS)],
                params={"fn": fn, "kw": {}}), ["INFER-7"], "INFERENCE_VIEW_INPLACE")
    return True
