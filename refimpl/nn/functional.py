"""refimpl.nn.functional: `linear` only, the op nn.Linear runs (refimpl/ops/linalg.py)."""
from __future__ import annotations

from ..ops.linalg import linear

__all__ = ["linear"]
