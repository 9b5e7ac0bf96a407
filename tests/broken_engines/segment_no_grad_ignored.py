"""Broken statement by statement, run as segments: no_grad is ignored (breaks MODE-1) whether
the statements run in a unit or one at a time, so the eager replay of a divergent program
diverges too and localises the first differing statement."""
from __future__ import annotations

from .no_grad_ignored import NoGradIgnored


class SegmentNoGradIgnored(NoGradIgnored):
    label = "segment_no_grad_ignored"
    granularity = "segment"


def factory(device: str = "cpu") -> SegmentNoGradIgnored:
    return SegmentNoGradIgnored(device)
