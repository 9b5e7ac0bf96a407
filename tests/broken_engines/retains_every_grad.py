"""Retains the gradient of every non-leaf (breaks RETAIN-7 and RETAIN-1): each result that
requires grad gets retain_grad() as soon as it is made."""
from __future__ import annotations

from ._base import Broken


class RetainsEveryGrad(Broken):
    label = "retains_every_grad"

    def _retain(self, t):
        if t.requires_grad and not t.is_leaf:
            t.retain_grad()
        return t

    def call(self, fn, args, kw):
        return self._retain(super().call(fn, args, kw))

    def view(self, target, fn, kw):
        return self._retain(super().view(target, fn, kw))

    def getitem(self, target, index):
        return self._retain(super().getitem(target, index))


def factory(device: str = "cpu") -> RetainsEveryGrad:
    return RetainsEveryGrad(device)
