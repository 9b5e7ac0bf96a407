"""The deliberate error moves of `.data =` (spec/data.md, DATA-6), from generator vocabulary
17 where the engines declare `data_assign`: integer contents for a tensor that requires grad,
and anything but a tensor. Both leave the target as it was, so the model changes nothing."""
from __future__ import annotations

from typing import Any

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
