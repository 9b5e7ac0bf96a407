"""Observation: one observable of one tensor."""
from __future__ import annotations

from .registry import Kind, kind


@kind
class Observe(Kind):
    name = "observe"
