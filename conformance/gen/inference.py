"""Inference mode in generated programs (spec/infer.md): from generator vocabulary 6, where the
engines declare `inference_mode`, a scenario draws an inference-mode block that reads a tensor
that requires grad: a factory's inference tensor, an op of the tensor (an inference tensor that
does not require grad, INFER-1, INFER-2), sometimes a view of it (ordinary, INFER-2), the grad
mode as seen inside (INFER-1) and an in-place op inside (on the inference tensor, INFER-3, or
on the ordinary one it reads, whose version counts, INFER-2), and from vocabulary 20 a
detach_() of what it reads, which changes nothing there (VER-16, VIEW-8); then, outside,
whether each is an inference tensor, and sometimes what may be done with one there: an op that
records without saving it, and a backward pass through it (INFER-5). What must raise is drawn
by the error moves of gen/errors_inference.py.
"""
from __future__ import annotations

from typing import Any

from ..kinds import KINDS, of
from ..lang.program import Stmt
from ..model import T, predict, reach
from .errors_inference import inference_block, op_inside
from .scenario import scenario


@scenario("inference mode", ("inference_mode",), weight=2)
def inference_mode(g: Any) -> bool:
    a = g.rg_tensor("inference input", lambda u: not u.expanded)
    made: dict[str, T] = {}

    def body(g: Any) -> None:
        made["factory"] = g.make_leaf(rg=False)
        made["op"] = op_inside(g, a)
        if a.ndim and g.has("views") and g.boolean("a view inside", 50):
            made["view"] = of("getitem").emit(g, a, g.draw_index(a))
        if g.has("grad_modes"):
            g.emit(Stmt("grad_enabled"), ["INFER-1"])
        if g.has("inplace") and g.boolean("an in-place op inside", 40):
            # on the inference tensor (INFER-3), or on the ordinary one the block reads, whose
            # version counts and whose write nothing records (INFER-2): a later backward
            # through a graph that saved it raises VERSION_MISMATCH, which the model predicts
            inference = g.boolean("on the inference tensor", 50) or not g.inplace_ok(a)
            t = made["op"] if inference else a
            if KINDS["inplace"].draw(g, target=t):
                g.out[-1].clauses = g.tags([*g.out[-1].clauses,
                                            "INFER-3" if inference else "INFER-2"])
        if g.vocabulary >= 20 and g.has("detach_inplace") and g.boolean("detach_ inside", 35):
            # changes nothing in inference mode (VER-16), on a view of a too (VIEW-8)
            with g.on(made.get("view") or a):
                KINDS["detach_"].draw(g)
    if not inference_block(g, body):
        return False
    for t in made.values():
        KINDS["observe"].draw(g, t, "is_inference")
    i = made["op"]
    if a.rg and i.shape == a.shape and g.boolean("an op that saves nothing", 60):
        r = KINDS["call"].pair(g, g.choice("op saving nothing", ["add", "sub"]), a, i)
        g.out[-1].clauses = g.tags([*g.out[-1].clauses, "INFER-5"])
        r.version_open = True       # computed from an inference tensor (UNSPEC-10)
        if r.node is not None and g.ok_kind(predict(reach([r.node]))):
            s = g.sum_of(r) if r.shape else r
            g.emit_backward(s, [], None)
            if a.leaf:
                KINDS["observe"].draw(g, a, "grad")
    return True
