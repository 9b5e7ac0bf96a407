"""A worker process's life apart from its tasks (conformance/campaign/pool.py hands those
out): the multiprocessing start method, the progress record it keeps in shared memory, and its
hygiene (it dies with the process that started it; it runs torch on one thread; it never runs
the parent's main script again).
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib
import multiprocessing as mp
import os
import signal
import sys
import threading
import time

from . import signals

FORK_SAFE = frozenset({"torch", "refimpl"})
# imported once by a forkserver, or by the process that forks the workers itself (`context`),
# so that each worker starts warm (torch_warm: torch's lazy imports, which each worker would
# otherwise pay on a program's clock); never the engines themselves (they are imported in the
# workers). A one-program pool (a replay) pays them too, about 1 s, for that reason.
PRELOAD = ["conformance.importpath", "numpy", "torch", "conformance.campaign.torch_warm",
           "conformance.campaign.runner"]
PATH_BYTES = 128
NOT_STARTED, ORACLE, ENGINE = 0, 1, 2
WHO = {NOT_STARTED: "the worker", ORACLE: "the oracle", ENGINE: "the engine"}
_PATH_DATA: dict[str, bytes] = {}     # Progress.statement's encoded paths


def start_method(specs: list[str], device: str) -> str:
    """The multiprocessing start method for workers running the engines `specs` on `device`."""
    chosen = os.environ.get("GRADSPEC_START_METHOD")
    if chosen:
        known = mp.get_all_start_methods()
        if chosen not in known:
            from ..engines import EngineError  # the error the commands report in one line
            raise EngineError(f"GRADSPEC_START_METHOD={chosen!r} is not a start method of "
                              f"this platform (choose from {', '.join(known)})")
        return chosen
    if not sys.platform.startswith("linux"):
        return "spawn"      # macOS frameworks are not fork-safe; Windows has spawn only
    if device == "cpu" and all(s in FORK_SAFE for s in specs):
        return "fork"       # CUDA cannot cross a fork
    return "forkserver"


def context(specs: list[str], device: str):
    """A multiprocessing context for workers running the engines `specs` on `device`."""
    method = start_method(specs, device)
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    elif method == "fork" and "torch" in sys.modules:
        for name in PRELOAD:        # (none of them starts a thread: safe to fork after)
            with contextlib.suppress(Exception):     # only a saving of time, never fatal
                importlib.import_module(name)
    return ctx


def _start(proc, method: str) -> None:
    """Start a worker process with SIGINT blocked in it until _serve ignores it. Under
    forkserver the server is made sure of first, under the block (its workers inherit its
    mask), and the worker is asked of it outside the block: that waits until the server has
    imported PRELOAD, which a Ctrl-C must be able to cut short."""
    if method != "forkserver":
        with signals.sigint_blocked():
            proc.start()
        return
    from multiprocessing import forkserver, resource_tracker
    resource_tracker.ensure_running()   # first: its own start unblocks SIGINT when done
    with signals.sigint_blocked():
        forkserver.ensure_running()
    proc.start()


class Progress:
    """What a worker is doing, in shared memory: the task's index, when its clock started
    (time.monotonic, one clock for every process of the machine), which engine is running
    (ORACLE or ENGINE) and the path of the statement it runs."""

    def __init__(self, ctx):
        self.index = ctx.RawValue("q", -1)
        self.started = ctx.RawValue("d", 0.0)
        self.who = ctx.RawValue("i", NOT_STARTED)
        self.path = ctx.RawArray("c", PATH_BYTES)

    def begin(self, index: int) -> None:
        """Task `index` begins: its clock starts now."""
        self.resume(index, 0.0)

    def resume(self, index: int, used: float) -> None:
        """Task `index` goes on (a batch's task, between its oracle's run and its engine's),
        having used `used` seconds so far: its clock counts them. The start is stored before
        the index, which the parent reads first (Pool's batch deadline)."""
        self.started.value = time.monotonic() - used
        self.index.value, self.who.value, self.path.value = index, NOT_STARTED, b""

    def task_clock(self) -> tuple[int, float]:
        """(index, clock start) of the task the worker is on, read as one: the index again
        after the start, so that a start never belongs to another task."""
        while True:
            index = self.index.value
            started = self.started.value
            if self.index.value == index:
                return index, started

    def running(self, who: int) -> None:
        self.who.value, self.path.value = who, b""

    def statement(self, path: str) -> None:
        # called for every statement of every run: the bytes of a path are kept (programs
        # share their paths, "0" to "130" and a few nested ones), which takes a third off
        data = _PATH_DATA.get(path)
        if data is None:
            if len(_PATH_DATA) >= 4096:      # a crafted program's many paths: bounded
                _PATH_DATA.clear()
            data = _PATH_DATA[path] = path.encode()[:PATH_BYTES - 1]
        self.path.value = data

    def where(self) -> tuple[str, str]:
        """(who, statement path) of the last report; path '' before the first statement."""
        return WHO.get(self.who.value, "the worker"), self.path.value.decode()


def _die_with_parent(parent: int) -> None:
    """End this process when `parent` (the process that runs the pool) dies: the kernel's
    parent-death signal where there is one (Linux), and a thread that watches both this
    process's parent (a dead parent's children are handed to another at once) and `parent`
    itself (a forkserver's children: their parent is the server, which outlives `parent` while
    they hold its pipe)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)      # PR_SET_PDEATHSIG
    ppid = os.getppid()

    def watch() -> None:
        while os.getppid() == ppid and _alive(parent):
            time.sleep(0.25)
        os._exit(1)
    if ppid != parent and not _alive(parent):
        os._exit(1)
    threading.Thread(target=watch, name="gradspec-parent-watch", daemon=True).start()


def _one_torch_thread() -> None:
    """Run torch's ops in this worker on one thread. A worker forked from a process whose
    torch had started its OpenMP thread pool (a `max(dim)` does, on any size: the pytest
    plugin's campaign forks from a test process that may have run one) hangs in its next
    parallel region; on one thread torch never enters one. Programs hold a few elements:
    threads buy nothing there."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(1)


def _alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return True     # no /proc: the signal check is all there is


@contextlib.contextmanager
def _main_not_rerun(method: str):
    """Start a worker without running the parent's main script again in it. A worker's code is
    all in this module, but spawn and forkserver run a main script given by path again in each
    child (as __mp_main__), which starts an unguarded script (a repro) over; hiding the path
    while the worker starts prevents it. A main module run by name is imported by name, which
    runs nothing under `if __name__ == "__main__"`, and is left alone."""
    main = sys.modules.get("__main__")
    if method == "fork" or main is None or getattr(main, "__spec__", None) is not None \
            or "__file__" not in vars(main):
        yield
        return
    path = vars(main).pop("__file__")
    try:
        yield
    finally:
        main.__file__ = path
