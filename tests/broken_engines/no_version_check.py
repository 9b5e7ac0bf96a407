"""Skips the saved-tensor version check (breaks VER-7): every in-place write resets the shared
version counter, so backward silently uses the overwritten values."""
from __future__ import annotations

import torch

from ._base import Broken


class NoVersionCheck(Broken):
    label = "no_version_check"

    def _unbump(self, t, before: int) -> None:
        torch._C._autograd._unsafe_set_version_counter((t,), (before,))

    # an inference tensor has no counter to read (INFER-3): its writes are left as torch does
    # them, so that the one rule broken is VER-7's
    def inplace(self, target, fn, args, kw):
        if target.is_inference():
            return super().inplace(target, fn, args, kw)
        before = target._version
        out = super().inplace(target, fn, args, kw)
        self._unbump(out, before)
        return out

    def setitem(self, target, index, value):
        if target.is_inference():
            return super().setitem(target, index, value)
        before = target._version
        super().setitem(target, index, value)
        self._unbump(target, before)


def factory(device: str = "cpu") -> NoVersionCheck:
    return NoVersionCheck(device)
