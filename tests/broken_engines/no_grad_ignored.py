"""Ignores no_grad and set_grad_enabled(False) (breaks MODE-1): results computed inside them
still record a graph."""
from __future__ import annotations

import contextlib

from ._base import Broken


class NoGradIgnored(Broken):
    label = "no_grad_ignored"

    def grad_mode(self, mode, enabled=True):
        if mode == "no_grad" or (mode == "set_grad_enabled" and not enabled):
            return contextlib.nullcontext()
        return super().grad_mode(mode, enabled)


def factory(device: str = "cpu") -> NoGradIgnored:
    return NoGradIgnored(device)
