"""Grad-mode statements: with-blocks and decorated blocks, and is_grad_enabled."""
from __future__ import annotations

from .registry import Kind, kind


@kind
class Mode(Kind):
    name = "mode"


@kind
class GradEnabled(Kind):
    name = "grad_enabled"
