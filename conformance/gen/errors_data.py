"""The deliberate error moves of `.data =` (spec/data.md, DATA-6), from generator vocabulary
17 where the engines declare `data_assign`: integer contents for a tensor that requires grad,
and anything but a tensor. Both leave the target as it was, so the model changes nothing. From
vocabulary 20 those of `set_()`: a source of another dtype (DATA-7), and a pass through the node
it records, which has no derivative (DATA-8)."""
from __future__ import annotations

from typing import Any

from ..kinds import of
from ..lang.program import Stmt
from .error_move import error_move

SINCE = 17


def _target(g: Any, pred: Any) -> Any:
    return g.pick("set .data of", lambda u: pred(u) and not u.inference)


@error_move("DATA_REQUIRES_GRAD_DTYPE", clause="DATA-6", needs=("data_assign",), no_grad_ok=True,
            since=SINCE)
def data_requires_grad_dtype(g: Any) -> bool:
    """`t.data = ints` for a t that requires grad: a leaf, a non-leaf or a view, in any grad
    mode."""
    t = _target(g, lambda u: u.rg) or g.make_leaf(rg=True)
    v = g.make_leaf(shape=g.choice("data shape", (t.shape, (2,))), dtype="int64", rg=False,
                    hidden=True)
    g.emit(Stmt("set_data", target=t.name, args=[v.name]), ["DATA-6"],
           "DATA_REQUIRES_GRAD_DTYPE")
    return True


@error_move("DATA_NOT_TENSOR", clause="DATA-6", needs=("data_assign",), no_grad_ok=True,
            since=SINCE)
def data_not_tensor(g: Any) -> bool:
    """`t.data = None`, whatever t is."""
    t = _target(g, lambda u: True) or g.make_leaf()
    g.emit(Stmt("set_data", target=t.name, args=[None]), ["DATA-6"], "DATA_NOT_TENSOR")
    return True


@error_move("SET_DTYPE", clause="DATA-7", needs=("data_assign",), no_grad_ok=True, since=20)
def set_dtype(g: Any) -> bool:
    """`t.set_(src)` for a src of the other float dtype, in either grad mode: refused before
    anything changes (DATA-7), on a tensor that owns its memory (with grad mode enabled one
    that is no leaf requiring grad, which LEAF_INPLACE might refuse first)."""
    t = _target(g, lambda u: u.is_float and u.base is None and not (
        g.grad_enabled and u.leaf and u.rg)) or g.make_leaf(rg=False)
    src = g.make_leaf(shape=t.shape, dtype="float64" if t.dtype == "float32" else "float32",
                      rg=False, hidden=True)
    g.emit(Stmt("set_", target=t.name, args=[src.name]), ["DATA-7"], "SET_DTYPE")
    return True


@error_move("SET_BACKWARD", clause="DATA-8", needs=("data_assign",), since=20)
def set_backward(g: Any) -> bool:
    """p.set_(b) for a p that does not require grad and a b that does, which records a node
    without a derivative; a pass from p's graph reaches it (DATA-8)."""
    p = g.make_leaf(rg=False)
    b = g.make_leaf(shape=p.shape, dtype=p.dtype, rg=True, hidden=True)
    of("set_").draw(g, target=p, src=b)
    y = g.call1(p, "mul", [3.0], {}, ["GRAPH-6"])
    root = y if not y.shape else g.sum_of(y)
    return g.emit_backward(root, [], retain=None, inputs=[], kind="SET_BACKWARD")
