"""Interrupts a campaign honours: Ctrl-C (SIGINT) and SIGTERM (what `timeout`, CI cancellation
and `docker stop` send) stop the programs and keep the partial report; once every result is
in, a first one waits until the report is written, so that nothing already judged is lost, and
the run then ends with its verdict; a second one interrupts at once.

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
    """A first SIGINT or SIGTERM waits while the block writes the results; the block is
    handed a function that says whether one arrived (the caller then ends as interrupted).
    A second one interrupts at once, as before the block: a block that hangs (a program
    source that never returns) can always be stopped."""
    if not _main_thread():
        yield lambda: False
        return
    got: list[int] = []
    kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for s, handler in kept.items():
            if handler is not None:     # (None: set outside Python, not ours to restore)
                signal.signal(s, handler)

    def hold(signum: int, frame: object) -> None:
        got.append(signum)
        restore()

    for s in kept:
        signal.signal(s, hold)
    try:
        yield lambda: bool(got)
    finally:
        restore()


def interrupt_handled() -> None:
    """Tell the interpreter that no KeyboardInterrupt is left unhandled, before the command
    returns its exit status (130 when interrupted). CPython marks one as unhandled when it
    escapes code that eval() or exec() ran from a string, even where a caller then catches
    it (pythonrun.c, run_eval_code_obj), and at exit a marked interpreter kills itself with
    SIGINT in place of the status it was given. The standard library's namedtuple evals a
    string for every class it makes, many while torch imports: a Ctrl-C that landed in one
    ended `gradspec run` by SIGINT right after "gradspec: interrupted". Each such eval
    clears the mark first, so one that completes leaves it clear."""
    eval("None")


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in the calling thread while the block starts processes, which inherit the
    mask: a Ctrl-C (sent to the whole process group) that reaches a child before it ignores
    SIGINT stays pending there and is dropped when it does (sigint_unblocked), instead of
    ending it with a traceback (a forkserver imports its preload first, for seconds). Here it
    waits until the block ends and then interrupts as ever. multiprocessing starts its
    resource tracker the same way (bpo-33613)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def sigint_unblocked() -> None:
    """In a child started under sigint_blocked, once it ignores SIGINT: the mask lifted (a
    Ctrl-C pending meanwhile was dropped when it was ignored)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
