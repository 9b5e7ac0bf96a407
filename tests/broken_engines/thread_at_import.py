"""A fault drill: importing the engine starts a thread that holds a lock most of the time, as
engines with a runtime thread do (tinygrad). A process forked from one that imported it may
inherit the lock held, with no thread left to release it: the factory then blocks forever. The
campaign must start its workers so that each imports the engine itself, and judge it like torch.
"""
from __future__ import annotations

import threading
import time

from ._base import Broken

_lock = threading.Lock()


def _runtime() -> None:
    while True:
        with _lock:
            time.sleep(0.05)
        time.sleep(0.001)


threading.Thread(target=_runtime, name="engine-runtime", daemon=True).start()


class ThreadAtImport(Broken):
    label = "thread_at_import"


def factory(device: str = "cpu") -> ThreadAtImport:
    with _lock:     # blocks forever where the lock was inherited held through a fork
        return ThreadAtImport(device)
