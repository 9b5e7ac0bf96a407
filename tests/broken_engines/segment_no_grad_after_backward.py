"""Broken only as a unit (breaks MODE-1 from the outside): the segment that follows the
program's first backward-like statement runs under torch.no_grad(), as a compiler that kept the
grad mode of the backward it traced would. Statement by statement (`eager`) it is correct
torch, so an eager replay does not diverge."""
from __future__ import annotations

import torch

from .segment_torch import SegmentTorch


class NoGradAfterBackward(SegmentTorch):
    label = "segment_no_grad_after_backward"

    def run_segment(self, body, segment):
        if segment.index != 1:
            return super().run_segment(body, segment)
        self.units.append(segment.id)
        with torch.no_grad():
            body()


def factory(device: str = "cpu") -> NoGradAfterBackward:
    return NoGradAfterBackward(device)
