"""Ignores no_grad and set_grad_enabled(False) (breaks MODE-1): results computed inside them
still record a graph."""
from __future__ import annotations

import contextlib

from ._base import Broken


class _Ignored(contextlib.ContextDecorator):
    """A grad mode that does nothing, as a context manager and as a decorator (MODE-5), so
    that the engine breaks the rule of no_grad and nothing else."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class NoGradIgnored(Broken):
    label = "no_grad_ignored"

    def grad_mode(self, mode, enabled=True):
        if mode == "no_grad" or (mode == "set_grad_enabled" and not enabled):
            return _Ignored()
        return super().grad_mode(mode, enabled)


def factory(device: str = "cpu") -> NoGradIgnored:
    return NoGradIgnored(device)
