"""The shared base of the broken engines: torch on CPU through TorchLike."""
from __future__ import annotations

import torch

from conformance.engines.torchlike import TorchLike


class Broken(TorchLike):
    label = "broken"

    def __init__(self, device: str = "cpu"):
        super().__init__(torch, self.label, device)
