"""A fault drill: `set_grad_enabled(False)` as a block (or decorator) turns grad mode off and
never restores it (breaks MODE-4 and MODE-5), so the mode leaks out of the block, and out of the
program into the next one run in the same process. The campaign must report the program that
left the mode changed, and no other."""
from __future__ import annotations

import contextlib

from ._base import Broken


class LeaksGradMode(Broken):
    label = "leaks_grad_mode"

    def grad_mode(self, mode, enabled=True):
        if mode == "set_grad_enabled" and not enabled:
            return _Leak(self.torch)
        return super().grad_mode(mode, enabled)


class _Leak(contextlib.ContextDecorator):
    def __init__(self, torch):
        self.torch = torch

    def __enter__(self):
        self.torch.set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        return False        # the bug: the previous mode is not restored


def factory(device: str = "cpu") -> LeaksGradMode:
    return LeaksGradMode(device)
