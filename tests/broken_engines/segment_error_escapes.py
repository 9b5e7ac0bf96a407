"""Correct torch whose in-place errors escape the unit they happen in, as an error raised inside
a compiled graph leaves the whole graph past the executor's capture of each statement's errors
(a traced try/except does not catch it). Statement by statement it is correct torch; the
executor reruns a program whose unit failed so, each of the unit's statements alone, and that
run is torch's."""
from __future__ import annotations

from .segment_torch import SegmentTorch


class ErrorEscapes(SegmentTorch):
    label = "segment_error_escapes"

    def __init__(self, device: str = "cpu"):
        super().__init__(device)
        self.escaped: Exception | None = None

    def inplace(self, t, fn, args, kw):
        try:
            return super().inplace(t, fn, args, kw)
        except Exception as exc:
            self.escaped = self.escaped or exc
            raise

    def run_segment(self, body, segment):
        self.escaped = None
        super().run_segment(body, segment)
        if self.escaped is not None:
            raise self.escaped


def factory(device: str = "cpu") -> ErrorEscapes:
    return ErrorEscapes(device)
