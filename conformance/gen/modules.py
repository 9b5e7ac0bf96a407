"""A module's zero_grad (spec/grad.md: GRAD-5, GRAD-6), drawn at the end of a program from
generator vocabulary 22 where the engine declares nn_module, before the nodes of recorded
.grads are read (higher.py) and the program's sweep: so its draws come after every draw of the
program before it, which stays what it would be without them.

Fresh parameters and a fresh leaf that is no parameter meet in one loss; a pass (sometimes with
create_graph) gives each a .grad, one of which the program may keep under a name; a module of
the first parameters (not always all of them) zeroes their .grads, to None (GRAD-5) or in place
(GRAD-6); what the .grads, the kept tensor and the other leaf's .grad show then is observed, and
after a second pass, which stores new .grads (GRAD-5) or adds into the zeroed ones (GRAD-6),
whether the kept tensor still is the .grad (the closing sweep shows the values). The loss has
no view, so no two first .grads share memory (UNSPEC-16)."""
from __future__ import annotations

from typing import Any

from ..kinds import KINDS
from ..kinds.grad_tensor import bindable
from ..model import numel
from ..model.tables import SHAPES

# shapes of the parameters: a scalar, a vector, a matrix (one per module, all alike)
MODULE_SHAPES = tuple(s for s in SHAPES if len(s) <= 2)


def module_zero_grad(g: Any) -> None:
    """The module scenario at the end of a program, sometimes (see the module docstring)."""
    if not (g.vocabulary >= 22 and g.has("nn_module") and g.grad_enabled and g.boolean(
            "a module's zero_grad", 20)):
        return
    shape = g.choice("parameter shape", MODULE_SHAPES)
    dtype = g.dtype if g.dtype in ("float32", "float64") else "float32"
    params = [KINDS["parameter"].emit(g, shape, dtype, g.draw_values(numel(shape), dtype))
              for _ in range(g.integer("parameters", 2, 3))]
    other = g.make_leaf(shape=shape, dtype=dtype, rg=True)
    graphed = g.has("create_graph") and g.boolean("the first pass with create_graph", 35)
    if not _pass(g, params, other, graphed):
        return
    registered = params[:g.integer("registered parameters", 1, len(params))]
    kept = _keep(g, registered[0])
    set_to_none = g.boolean("set_to_none", 50)
    KINDS["zero_grad"].emit(g, registered, set_to_none)
    clause = "GRAD-5" if set_to_none else "GRAD-6"
    _look(g, params, other, kept, clause, graphed and not set_to_none)
    if _pass(g, params, other, False) and kept is not None:
        # a new .grad (GRAD-5), or the zeroed one added into (GRAD-6); the sweep shows values
        _tagged(g, clause, KINDS["observe"].draw(g, registered[0], "grad"))
        _tagged(g, clause, KINDS["grad_is"].draw(g, kept))


def _pass(g: Any, params: list, other: Any, graphed: bool) -> bool:
    """Emit a loss of the parameters and the other leaf, mul then add, and a pass from it."""
    y = KINDS["call"].pair(g, "mul", params[0], params[1])
    for t in params[2:] + [other]:
        y = KINDS["call"].pair(g, g.choice("module op", ["add", "mul"]), y, t)
    return g.emit_backward(g.sum_of(y) if y.shape else y, [], None, create_graph=graphed,
                           draw_inputs=False)


def _keep(g: Any, p: Any) -> Any:
    """Sometimes bind p's .grad to a name (where the engine hands out the .grad tensor)."""
    if g.has("grad_tensor") and bindable(p) and g.boolean("keep the .grad", 60):
        return KINDS["grad_ref"].bind(g, p)
    return None


def _look(g: Any, params: list, other: Any, kept: Any, clause: str, recorded: bool) -> None:
    """Observe the parameters' .grads, the other leaf's, the kept tensor and whether it is
    still the .grad, each tagged with the zero_grad's clause; after zeroing a recorded .grad
    in place, its node (none: GRAD-6)."""
    observe = KINDS["observe"]
    for t in params + [other]:
        _tagged(g, clause, observe.draw(g, t, "grad"))
    if kept is not None:
        _tagged(g, clause, observe.draw(g, kept, "value"))
        _tagged(g, clause, KINDS["grad_is"].draw(g, kept))
    if recorded and g.has("grad_fn"):
        _tagged(g, clause, observe.draw(g, params[0], "grad_grad_fn"))


def _tagged(g: Any, clause: str, drawn: bool) -> None:
    """The statement just drawn exercises `clause` first, too."""
    if drawn:
        g.out[-1].clauses = g.tags([clause, *g.out[-1].clauses])
