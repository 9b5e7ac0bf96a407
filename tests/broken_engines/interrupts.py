"""A fault drill: every backward pass raises KeyboardInterrupt (a BaseException, not an
Exception), as an engine's native code may when it catches a SIGINT of its own. The campaign
must report it as a crash of the engine at that statement, with no traceback."""
from __future__ import annotations

from ._base import Broken


class Interrupts(Broken):
    label = "interrupts"

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        raise KeyboardInterrupt


def factory(device: str = "cpu") -> Interrupts:
    return Interrupts(device)
