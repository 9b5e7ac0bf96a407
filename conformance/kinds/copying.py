"""Views that copy (capability view_ops without views, conformance/spec/capabilities.py):
what the view kinds leave alone so that torch's aliasing is never seen. The writes and the
`version` a view op's memory would show are left out by the generator (Gen.view_shared)."""
from __future__ import annotations

from typing import Any

# what a pass writes into in place (GRAD-4) and zero_grad zeroes (GRAD-6): a view of it would
# show the write where views alias
_WRITTEN_BY_PASSES = ("held_grad", "assigned_grad")


def viewable(g: Any, t: Any) -> bool:
    """Whether a view of t may be drawn: anywhere views alias; where they copy, not of a
    tensor some `.grad` holds, nor with grad mode off (torch's view of a tensor that requires
    grad says it requires grad only because it aliases it, MODE-9, and refuses
    requires_grad_(False), LEAF-11: a copy made there is a constant)."""
    return not (g.copy_views and (t.origin in _WRITTEN_BY_PASSES or not g.grad_enabled
                                  or g.inference))
