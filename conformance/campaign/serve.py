"""What a pool's worker process does (conformance/campaign/pool.py hands it tasks, and
campaign/process.py starts it): it sets up once (its engines load), then serves one task at a
time, or one batch of them, until the pool sends None or closes the pipe, and tells the pool
of a setup that failed ('fatal') and of a task that raised a BaseException ('crash').
"""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from typing import Any

from . import signals
from .process import Progress, _die_with_parent, _one_torch_thread

Setup = Callable[..., Any]
Work = Callable[[Any, Any, Progress, Callable[[Any], None]], tuple[Any, bool]]
# (state, [(index, payload), ...], progress) -> (index, result, retire) as each task is done
BatchWork = Callable[[Any, list[tuple[int, Any]], Progress], Iterator[tuple[int, Any, bool]]]


def _serve(conn: Connection, progress: Progress, parent: int, setup: Setup,
           setup_args: tuple[Any, ...], work: Work, work_batch: BatchWork | None = None
           ) -> None:
    """A worker's life: `state = setup(progress, *setup_args)`, then for each task
    `work(state, payload, progress, keep)` -> (result, retire); `keep(partial)` sends a result
    to keep should the rest of the task crash or hang; for each batch of tasks (a list),
    `work_batch(state, tasks, progress)` -> (index, result, retire) as each is done. A setup
    that raises ends the pool (a 'fatal' message); a task whose work raises (only a
    BaseException escapes worker.work and work_batch: an engine's KeyboardInterrupt or
    SystemExit) is a crash of it (a 'crash' message) and ends this worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signals.sigint_unblocked()          # blocked while it started (_start)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # (the parent's makes it a Ctrl-C)
    _die_with_parent(parent)
    _one_torch_thread()
    try:
        state = setup(progress, *setup_args)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        conn.send(("fatal", -1, f"{exc}"))
        return
    _one_torch_thread()
    while True:
        try:
            task = conn.recv()
        except EOFError:        # the parent closed the pipe (it is shutting down): done
            return
        if task is None:
            return
        try:
            if not _serve_one(conn, task, progress, state, work, work_batch):
                return
        except BaseException as exc:  # noqa: BLE001 - an engine's KeyboardInterrupt, SystemExit
            # work() turns every Exception into a result; what escapes it is a BaseException
            # an engine raised, which may have left the process half-way: a crash of the task
            # the progress record names (the parent replaces this worker), told in one line
            # rather than a traceback
            first = (str(exc).strip().splitlines() or [""])[0]
            with contextlib.suppress(OSError):
                conn.send(("crash", progress.index.value, f"raised {type(exc).__name__}"
                                                          f"{f': {first}' if first else ''}"))
            return


def _serve_one(conn: Connection, task: Any, progress: Progress, state: Any, work: Work,
               work_batch: BatchWork | None) -> bool:
    """Do one task, or one batch of tasks (a list), sending its results; False when the
    worker must retire."""
    if isinstance(task, list):
        assert work_batch is not None
        # the record names the batch's first task, nothing yet running: never what the last
        # batch's last task ran (a crash before work_batch begins a task is not that task's
        # engine at that task's statement)
        progress.begin(task[0][0])
        conn.send(("begin", task[0][0], None))
        for index, result, retire in work_batch(state, task, progress):
            conn.send(("done", index, (result, retire)))
            if retire:
                return False
        return True
    index, payload = task
    progress.begin(index)
    conn.send(("begin", index, None))
    result, retire = work(state, payload, progress,
                          lambda partial, i=index: conn.send(("keep", i, partial)))
    conn.send(("done", index, (result, retire)))
    return not retire
