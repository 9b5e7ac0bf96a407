"""A fault drill: the process aborts (os.abort, SIGABRT) in every backward pass, as a native
engine does on a failed assertion. The campaign must report a crash at that statement."""
from __future__ import annotations

import os

from ._base import Broken


class Aborts(Broken):
    label = "aborts"

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        os.abort()


def factory(device: str = "cpu") -> Aborts:
    return Aborts(device)
