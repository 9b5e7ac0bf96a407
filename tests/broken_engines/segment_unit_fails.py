"""Broken only as a unit: a segment of more than LONGEST top-level statements fails as a whole,
before any of it runs, as a compiler that gives up on a large graph would. Statement by statement
(`eager`) it is correct torch."""
from __future__ import annotations

from .segment_torch import SegmentTorch

LONGEST = 10


class UnitFails(SegmentTorch):
    label = "segment_unit_fails"

    def run_segment(self, body, segment):
        if segment.size > LONGEST:
            raise RuntimeError(f"segment {segment.id} is too long to run as one unit")
        super().run_segment(body, segment)


def factory(device: str = "cpu") -> UnitFails:
    return UnitFails(device)
