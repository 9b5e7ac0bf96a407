"""A correct segment engine: torch, handed one segment at a time, runs each as one unit under
a context the unit shares (torch.inference_mode(False), which changes nothing). It must show no
divergence; `units` lists the ids of the segments it was handed, in order."""
from __future__ import annotations

import torch

from ._base import Broken


class SegmentTorch(Broken):
    label = "segment_torch"
    granularity = "segment"

    def __init__(self, device: str = "cpu"):
        super().__init__(device)
        self.units: list[str] = []

    def run_segment(self, body, segment):
        self.units.append(segment.id)
        with torch.inference_mode(False):
            body()


def factory(device: str = "cpu") -> SegmentTorch:
    return SegmentTorch(device)
