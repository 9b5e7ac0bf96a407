"""A fault drill: loading the engine takes longer than one program may (1.5 s), as a JIT's
start-up does. A program's clock starts when the worker begins it, so no program times out."""
from __future__ import annotations

import time

from ._base import Broken


class SlowStart(Broken):
    label = "slow_start"


def factory(device: str = "cpu") -> SlowStart:
    time.sleep(1.5)
    return SlowStart(device)
