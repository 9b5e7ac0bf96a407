"""In-place statements: in-place ops and augmented assignment, and setitem."""
from __future__ import annotations

from .registry import Kind, kind


@kind
class Inplace(Kind):
    name = "inplace"


@kind
class Setitem(Kind):
    name = "setitem"
