"""Worker processes that run programs and survive the engine crashing or hanging on one.

A `Pool` hands tasks to worker processes, one task at a time each or, for tasks that allow
it, a batch of several (a campaign's programs: campaign/worker.py, work_batch), and collects
one result per task. A worker that dies (the engine aborted, or was killed) or does not answer
within the task's time limit is killed and replaced; the task gets a failure result that says
which engine was running (the oracle or the engine under test) and which statement (workers
write both into shared memory as they go: `Progress`, no system call per statement), and the
tasks of its batch it had not finished run again in another worker. A task's clock starts when
the worker begins it, not when it was queued: a fresh worker's start-up does not count; in a
batch it counts that task's own work alone. What a worker does with the tasks it is handed is
campaign/serve.py.

Hygiene (campaign/process.py):
- a worker exits when the process that started it dies, by any signal: on Linux through
  prctl(PR_SET_PDEATHSIG), everywhere through a thread that watches the parent's pid;
- workers ignore SIGINT: Ctrl-C reaches the parent alone, which stops every worker (it is
  blocked in a worker, and a forkserver, from its start until then: signals.sigint_blocked);
- the start method (`start_method`): fork only when every engine of the run is a built-in
  known to be fork-safe (torch, refimpl) on CPU under Linux, where it starts workers fastest;
  otherwise forkserver (Linux) or spawn, so that an engine that starts threads when imported
  is imported in the workers alone, never inherited half-locked through a fork.
  GRADSPEC_START_METHOD overrides the choice.
"""
from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from .process import (  # noqa: F401 - FORK_SAFE..WHO: this module's API before process.py
    ENGINE,
    FORK_SAFE,
    NOT_STARTED,
    ORACLE,
    PATH_BYTES,
    PRELOAD,
    WHO,
    Progress,
    _main_not_rerun,
    _start,
    context,
    start_method,
)
from .serve import BatchWork, Setup, Work, _serve


@dataclass
class Task:
    """One unit of work: `payload` goes to the worker; `seconds` is its time limit from when
    the worker begins it; `partial` is the result kept should it crash or hang. A `batchable`
    task may be given to a worker with others of its kind (Pool's `batch`)."""

    index: int
    payload: Any
    seconds: float
    partial: Any = None
    fresh: bool = False         # run it in a worker that has run nothing before
    batchable: bool = False     # (a fresh one never is: it runs alone)


class PoolError(Exception):
    """A worker could not set up (its engines did not load): the message says why."""


class _Slot:
    """One worker process and the tasks it is on: one, or a batch of several, in the order
    given, those done removed."""

    def __init__(self, pool: Pool):
        ctx = pool.ctx
        self.conn, child = ctx.Pipe()
        self.progress = Progress(ctx)
        self.proc = ctx.Process(target=_serve, daemon=True, args=(
            child, self.progress, os.getpid(), pool.setup, pool.setup_args, pool.work,
            pool.work_batch))
        method = ctx.get_start_method()
        with _main_not_rerun(method):
            _start(self.proc, method)
        child.close()
        self.tasks: list[Task] = []
        self.batched = False
        self.used = False
        self.served = False     # it has given a result: its setup is not what failed
        self.between = 0.0      # until when a batch's worker may name none of its tasks
        self.begun = False      # it said 'begin' to what it was given last
        self.deadline = 0.0
        self.warmup = pool.warmup
        self.failed = False     # it crashed or hung on a task: to be killed, never kept

    @property
    def busy(self) -> bool:
        """On a task, or failed one (hung past its limit, or dead): stopped by a kill, at once,
        where an idle worker is asked to exit."""
        return self.task is not None or self.failed

    @property
    def task(self) -> Task | None:
        """The first task not done (None: the worker is idle)."""
        return self.tasks[0] if self.tasks else None

    def give(self, task: Task, *more: Task, batch: bool = False) -> None:
        """Hand the worker `task`, or with `batch` `task` and `more` as one batch (Pool's
        work_batch)."""
        self.tasks, self.batched, self.used, self.begun = [task, *more], batch, True, False
        self.deadline = time.monotonic() + self.warmup      # until the worker begins it
        # a worker that died since its last result (between batches) cannot be sent to: its
        # end of the pipe reads as closed and the next step reports the crash
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if batch:
                self.conn.send([(t.index, t.payload) for t in self.tasks])
            else:
                self.conn.send((task.index, task.payload))

    def current(self) -> Task:
        """The task the worker is on: in a batch, the one its progress record names (the
        first not done before it names one)."""
        index = self.progress.index.value
        for t in self.tasks:
            if t.index == index:
                return t
        return self.tasks[0]

    def clock(self) -> tuple[Task | None, float | None]:
        """In a batch, the task the worker's progress record names and its deadline: its
        limit from the start of its clock, which counts that task's own work alone
        (Progress.resume), read as one; (None, None) while the record names none of the
        batch."""
        index, started = self.progress.task_clock()
        for t in self.tasks:
            if t.index == index:
                return t, started + t.seconds
        return None, None

    def stop(self, kill: bool = False) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            if kill:
                self.proc.kill()
            else:
                self.conn.send(None)
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


# how soon the pool looks again at a batch's worker that names none of its tasks (it has just
# sent one's result and is about to begin the next)
RECHECK = 0.05
Failure = Callable[[Task, str, str, str, str], Any]   # task, crash|timeout, detail, who, path


class Pool:
    """`jobs` workers, each running `setup(*setup_args)` once and then `work` per task.
    `failure(task, what, detail, who, path)` is the result of a task whose worker crashed
    (what 'crash') or hung ('timeout'); `follow(task, result)` may return a task to run next
    in a fresh worker (a divergent program's shrinking). With `batch` > 1 and `work_batch`,
    a worker is handed up to `batch` batchable tasks at once, fewer as the queue runs short
    so that every worker keeps some; where a batch's worker crashes or hangs, the task it was
    on gets the failure and those it had not done run again elsewhere."""

    def __init__(self, ctx, jobs: int, setup: Setup, setup_args: tuple[Any, ...], work: Work,
                 failure: Failure, follow: Callable[[Task, Any], Task | None] | None = None,
                 warmup: float = 120.0, batch: int = 1, work_batch: BatchWork | None = None):
        self.ctx, self.jobs, self.setup, self.setup_args, self.work = (
            ctx, jobs, setup, setup_args, work)
        self.failure, self.follow, self.warmup = failure, follow, warmup
        self.batch, self.work_batch = (batch, work_batch) if work_batch else (1, None)
        self._kept: list[_Slot] | None = None

    def __enter__(self) -> Pool:
        """Within `with pool:`, workers outlive each `run` and serve the next (one task at a
        time runs many short runs without starting a process for each)."""
        self._kept = []
        return self

    def __exit__(self, *exc: object) -> None:
        for slot in self._kept or []:
            slot.stop(kill=slot.busy)
        self._kept = None

    def run(self, tasks: list[Task], finish: Callable[[Task, Any], None]) -> None:
        """Run every task; `finish(task, result)` once per task, in completion order. Ctrl-C
        (KeyboardInterrupt) stops every worker and propagates."""
        queue = list(reversed(tasks))
        want = max(1, min(self.jobs, len(tasks)))
        kept = self._kept or []
        for slot in [s for s in kept if not s.proc.is_alive()]:     # died while idle (the
            kept.remove(slot)                                       # OOM killer): replaced
            slot.stop(kill=True)
        slots = kept[:want]
        del kept[:want]
        try:
            while len(slots) < want:    # (within the try: a Ctrl-C here stops those started)
                slots.append(_Slot(self))
            while queue or any(s.task for s in slots):
                for i, slot in enumerate(slots):
                    if slot.task is None and queue:
                        if slot.used and not slot.proc.is_alive():    # died between tasks
                            slot.stop(kill=True)
                            slots[i] = slot = _Slot(self)
                        if queue[-1].fresh and slot.used:
                            slot.stop()
                            slots[i] = slot = _Slot(self)
                        tasks = self._take(queue, len(slots))
                        slot.give(*tasks, batch=self._batches(tasks[0]))
                busy = [s for s in slots if s.task is not None]
                ready = wait([s.conn for s in busy], timeout=max(0.0, min(
                    s.deadline for s in busy) - time.monotonic()))
                for i, slot in enumerate(slots):
                    if slot.task is not None and not self._step(slot, slot.conn in ready,
                                                                finish, queue):
                        slot.stop(kill=True)
                        slots[i] = _Slot(self)
        finally:
            for slot in slots:
                if self._kept is not None and not slot.busy:
                    self._kept.append(slot)
                else:
                    slot.stop(kill=slot.busy)

    def _take(self, queue: list[Task], workers: int) -> list[Task]:
        """The next task, with the batchable ones after it up to a batch: at most `batch`,
        and at most the queue's share per worker, so that no worker idles at the end while
        another holds a long batch."""
        tasks = [queue.pop()]
        if self._batches(tasks[0]):
            n = min(self.batch, -(-(len(queue) + 1) // workers))
            while len(tasks) < n and queue and self._batches(queue[-1]):
                tasks.append(queue.pop())
        return tasks

    def _batches(self, task: Task) -> bool:
        """Whether `task` goes to work_batch (a fresh task runs alone, through work)."""
        return self.batch > 1 and task.batchable and not task.fresh

    def _step(self, slot: _Slot, ready: bool, finish, queue: list[Task]) -> bool:
        """Handle what a busy worker said, or its silence; False when it must be replaced."""
        if not ready:
            if time.monotonic() <= slot.deadline:
                return True
            if slot.conn.poll():                # it said something since: heard first
                return True
            named, deadline = slot.clock() if slot.batched else (None, None)
            if deadline is not None and time.monotonic() <= deadline:
                slot.deadline = deadline        # the worker is on another task of the batch
                return True
            if slot.batched and slot.begun and named is None and \
                    time.monotonic() <= slot.between:
                slot.deadline = time.monotonic() + RECHECK      # between two of its tasks
                return True
            if slot.batched and slot.served and not slot.begun:
                self._requeue(slot, queue)      # stuck between batches: none of these ran
                return False
            # the task whose clock ran out, not one the worker may have moved on to since
            task = named or slot.current()
            who, path = slot.progress.where()
            self._failed(slot, task, self.failure(task, "timeout", f"no result within "
                                                  f"{task.seconds:g} s", who, path),
                         finish, queue)
            return False
        try:
            kind, index, payload = slot.conn.recv()
        except (EOFError, OSError):
            slot.proc.join(timeout=5)
            if slot.batched and slot.served and not slot.begun:
                # it died after its last batch, before this one (a finalizer that the paused
                # collector ran late, the OOM killer): none of these tasks was running
                self._requeue(slot, queue)
                return False
            task = slot.current()
            who, path = slot.progress.where()
            self._failed(slot, task, self.failure(task, "crash", f"worker died (exit code "
                                                  f"{slot.proc.exitcode})", who, path),
                         finish, queue)
            return False
        if kind == "fatal":
            raise PoolError(payload)
        if kind == "crash":     # the task raised a BaseException: the worker has ended
            slot.proc.join(timeout=5)
            task = slot.current()
            who, path = slot.progress.where()
            self._failed(slot, task, self.failure(task, "crash", payload, who, path), finish,
                         queue)
            return False
        if kind == "begin":
            slot.begun = True
            slot.deadline = time.monotonic() + slot.tasks[0].seconds
        elif kind == "keep":
            slot.tasks[0].partial = payload
        else:
            result, retire = payload
            slot.served = True
            task = next(t for t in slot.tasks if t.index == index)
            slot.tasks.remove(task)
            if retire:
                self._requeue(slot, queue)
            elif slot.tasks:
                # the next task's clock once the worker names it (a moment after its result):
                # never a whole limit from now, which would let the next task run over its own
                slot.deadline = slot.clock()[1] or time.monotonic() + RECHECK
                slot.between = time.monotonic() + slot.tasks[0].seconds
            self._done(task, result, finish, queue)
            return not retire
        return True

    def _failed(self, slot: _Slot, task: Task, result: Any, finish, queue: list[Task]) -> None:
        """`task`, the one a worker was on, failed with `result`; the rest of its batch runs
        again elsewhere. The worker is marked failed first: `finish` may raise (--maxfail
        reached, Ctrl-C) before the caller kills it, and a hung worker never reads a request
        to exit."""
        slot.failed = True
        slot.tasks.remove(task)
        self._requeue(slot, queue)
        self._done(task, result, finish, queue)

    @staticmethod
    def _requeue(slot: _Slot, queue: list[Task]) -> None:
        """The tasks of a batch the worker will not do, next in the queue, in their order."""
        queue.extend(reversed(slot.tasks))
        slot.tasks = []

    def _done(self, task: Task, result: Any, finish, queue: list[Task]) -> None:
        nxt = self.follow(task, result) if self.follow else None
        if nxt is not None:
            nxt.fresh = True
            queue.append(nxt)
        else:
            finish(task, result)
