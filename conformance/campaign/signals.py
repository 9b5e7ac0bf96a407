"""Interrupts a campaign honours: Ctrl-C (SIGINT) and SIGTERM (what `timeout`, CI cancellation
and `docker stop` send) stop the programs and keep the partial report; once every result is
in, they wait until the report is written, so that nothing already judged is lost.

Python's `signal` module is all this needs; a handler can only be set from the main thread,
so elsewhere (a campaign run from a thread) both are left as they are.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def sigterm_interrupts() -> None:
    """From now on SIGTERM interrupts as Ctrl-C does (KeyboardInterrupt): the run stops and
    its partial report is kept."""
    if _main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)


@contextlib.contextmanager
def held() -> Iterator[Callable[[], bool]]:
    """SIGINT and SIGTERM are held while the block writes the results; the block is handed a
    function that says whether one arrived (the caller then stops as interrupted)."""
    if not _main_thread():
        yield lambda: False
        return
    got: list[int] = []
    kept = {s: signal.signal(s, lambda signum, frame: got.append(signum))
            for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: bool(got)
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)
