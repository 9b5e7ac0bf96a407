"""The deliberate error move of saved-tensor hooks (spec/saved.md, SAVED-3), from generator
vocabulary 18 where the engines declare `saved_tensors_hooks`: an unpack hook that returns no
tensor. PACK_HOOK_INPLACE (SAVED-8) has no move: a pack hook that writes its input leaves
values the spec does not fix (UNSPEC-13)."""
from __future__ import annotations

from typing import Any

from ..kinds import of
from .error_move import error_move


@error_move("UNPACK_NOT_TENSOR", clause="SAVED-3", needs=("saved_tensors_hooks",), since=18)
def unpack_not_tensor(g: Any) -> bool:
    """y = t.exp() (it saves its result) or t.sin() (its input) under hooks whose unpack
    returns a list, then a pass from y: it raises when it reaches y's node. y and the sum
    below it are never used again, so that no later pass reaches that node."""
    t = g.rg_tensor("packed op input")
    made = []
    fn = g.choice("packed op", ["exp", "sin"])
    pack = g.choice("pack", ["keep", "copy", "key"])
    if not of("saved_hooks").draw(g, pack=pack, unpack="non_tensor", body=lambda g: made.append(
            g.call1(t, fn, [], {}, ["SAVED-1"]))):
        return False
    y = made[0]
    root = y if not y.shape else g.sum_of(y)
    g.emit_backward(root, [], retain=None, inputs=[], kind="UNPACK_NOT_TENSOR")
    y.hidden = root.hidden = True
    return True
