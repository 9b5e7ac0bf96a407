"""Errors escape the unit at once, as an error raised inside a compiled graph leaves the whole
graph (a traced try/except does not catch it): the statements after it in the unit do not run.
With `wrong_in_units`, a `mul` in a unit of several statements also gives 1.5 times its value:
a bug only a shared graph shows, which statements run alone (the executor's rerun of a failed
unit) do not. Without it, statement by statement it is correct torch."""
from __future__ import annotations

from .segment_torch import SegmentTorch


class _Escape(BaseException):
    """Past the executor's per-statement capture, which catches Exception."""

    def __init__(self, exc: Exception):
        super().__init__(exc)
        self.exc = exc


class EscapesAtOnce(SegmentTorch):
    label = "segment_escapes_at_once"

    def __init__(self, device: str = "cpu", wrong_in_units: bool = False):
        super().__init__(device)
        self.wrong_in_units = wrong_in_units
        self.size = 1

    def call(self, fn, args, kw):
        out = super().call(fn, args, kw)
        return out * 1.5 if self.wrong_in_units and fn == "mul" and self.size > 1 else out

    def inplace(self, t, fn, args, kw):
        try:
            return super().inplace(t, fn, args, kw)
        except Exception as exc:
            raise _Escape(exc) from None

    def run_segment(self, body, segment):
        self.size = segment.size
        try:
            super().run_segment(body, segment)
        except _Escape as escaped:
            raise escaped.exc from None


def factory(device: str = "cpu") -> EscapesAtOnce:
    return EscapesAtOnce(device)
