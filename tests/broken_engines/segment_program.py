"""A correct program engine: torch, handed the whole program as one unit. It must show no
divergence; `units` lists the ids of the units it was handed."""
from __future__ import annotations

from .segment_torch import SegmentTorch


class ProgramTorch(SegmentTorch):
    label = "segment_program"
    granularity = "program"


def factory(device: str = "cpu") -> ProgramTorch:
    return ProgramTorch(device)
