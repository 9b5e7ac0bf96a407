"""A fault drill: every backward pass blocks forever. The campaign must report a timeout at
that statement and go on."""
from __future__ import annotations

import threading

from ._base import Broken


class Hangs(Broken):
    label = "hangs"

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        threading.Event().wait()


def factory(device: str = "cpu") -> Hangs:
    return Hangs(device)
