"""The deliberate error moves of `detach_()` (spec/view.md VIEW-8, spec/version.md VER-16),
from generator vocabulary 20 where the engine declares detach_inplace: detaching a view in
place, which leaves the view as it was, and a pass through a node that saved, as itself, an
input detached in place since."""
from __future__ import annotations

from typing import Any

from .. import model
from ..lang.ops import SAVES_INPUT
from ..lang.program import Stmt
from .error_move import error_move
from .errors_backward import saving_op

SINCE = 20


@error_move("DETACH_VIEW_INPLACE", clause="VIEW-8", needs=("views", "detach_inplace"),
            no_grad_ok=True, since=SINCE)
def detach_view_inplace(g: Any) -> bool:
    """v.detach_() on a view of a tensor made outside inference mode, in either grad mode (an
    output of split, chunk or unbind is left out: the model cannot tell it from what a custom
    Function returns, which is no view under no_grad, FUNC-14)."""
    if g.inference:         # inside inference mode detach_() refuses nothing (VIEW-8)
        return False
    v = g.pick("view to detach", lambda u: u.base is not None and not u.multi_view)
    if v is None:
        a = g.pick("base of a view", lambda u: u.ndim >= 1) or g.make_leaf(shape=(2,))
        index = g.draw_index(a)
        v = g.add_view(a, model.index_shape(a.shape, index), True, False)
        g.emit(Stmt("getitem", out=v.name, target=a.name, params={"index": index}),
               ["GRAPH-10"] + (["GRAPH-1"] if v.rg else []))
    g.emit(Stmt("detach_", target=v.name), ["VIEW-8"], "DETACH_VIEW_INPLACE")
    return True


@error_move("SAVED_DETACHED_INPLACE", clause="VER-16", needs=("detach_inplace",), since=SINCE)
def saved_detached_inplace(g: Any) -> bool:
    """h = a * 2 for an a that requires grad; y = f(h) for an f that saves its input; then
    h.detach_() and a pass from y: backward, or autograd.grad of a leaf behind it."""
    a = g.rg_tensor("input of what is detached")
    h = g.call1(a, "mul", [2.0], {}, ["GRAPH-6"])
    fn, kw = saving_op(g, SAVES_INPUT, ["sin", "cos", "pow"])
    y = g.call1(h, fn, [], kw, ["VER-9"])
    cl = model.detach_in_place(h, model.every_node(g.tensors.values()))
    g.emit(Stmt("detach_", target=h.name), cl)
    root = y if not y.shape else g.sum_of(y)
    leaves = [u for u in g.live(lambda u: u.leaf and u.rg and u.node is not None)
              if u.node in model.reach([root.node])]
    if g.has("autograd_grad") and leaves and g.boolean("via autograd.grad", 40):
        g.emit(Stmt("grad", params={
            "outputs": [root.name], "inputs": [leaves[0].name], "grad_outputs": None,
            "retain_graph": None, "allow_unused": False, "outs": [g.fresh("g")]}),
            ["API-6", "VER-16"], "SAVED_DETACHED_INPLACE")
        return True
    return g.emit_backward(root, [], retain=None, inputs=[], kind="SAVED_DETACHED_INPLACE")
