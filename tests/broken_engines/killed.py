"""A fault drill: the process is killed (SIGKILL, as the kernel's out-of-memory killer does) in
every backward pass. The campaign must report a crash at that statement."""
from __future__ import annotations

import os
import signal

from ._base import Broken


class Killed(Broken):
    label = "killed"

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        os.kill(os.getpid(), signal.SIGKILL)


def factory(device: str = "cpu") -> Killed:
    return Killed(device)
