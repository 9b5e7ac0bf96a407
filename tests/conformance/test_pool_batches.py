"""conformance.campaign.pool: tasks handed to a worker in batches. Every task is finished
exactly once; a worker that crashes, hangs or retires in a batch costs the task it was on
alone (a failure) and the rest of its batch runs again elsewhere; a task's time limit counts
its own work, not its batch's."""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time

import pytest

from conformance.campaign.failfast import Enough
from conformance.campaign.pool import Pool, Task

pytestmark = pytest.mark.skipif(
    "fork" not in mp.get_all_start_methods(), reason="the drills fork their workers")


def setup(progress):
    return {}


def work(state, payload, progress, keep):
    return {"pid": os.getpid(), "batch": 0}, False


def work_batch(state, items, progress):
    """Two phases, as worker.work_batch has: each task's first half for the whole batch, then
    each task's second half; a task's action ("crash", "hang", "retire") is taken in its
    second half. `half` seconds of sleep in each half, `gap` seconds before the second half
    begins (the worker then names the task before it)."""
    used = {}
    for index, (_, action) in items:
        progress.begin(index)
        time.sleep(action.get("half", 0.0))
        used[index] = action.get("half", 0.0)
    for index, (_, action) in items:
        time.sleep(action.get("gap", 0.0))      # between two tasks, naming neither
        progress.resume(index, used[index])
        time.sleep(action.get("half", 0.0))
        if action.get("do") == "crash":
            os._exit(3)
        if action.get("do") == "hang":
            time.sleep(60)
        yield index, {"pid": os.getpid(), "batch": len(items)}, action.get("do") == "retire"
    if any(a.get("do") == "die_after" for _, (_, a) in items):
        os._exit(7)     # after the batch's last result: a finalizer the paused collector ran


def failure(task, what, detail, who, path):
    return {"failure": what}


def run(actions, jobs=1, batch=4, seconds=5.0, slow=0.0):
    """Each task's result by index, and how many times each was finished."""
    results, finished = {}, {}

    def finish(task, result):
        results[task.index] = result
        finished[task.index] = finished.get(task.index, 0) + 1
        time.sleep(slow)
    pool = Pool(mp.get_context("fork"), jobs, setup, (), work, failure, batch=batch,
                work_batch=work_batch)
    pool.run([Task(i, ("check", a), seconds, batchable=True) for i, a in enumerate(actions)],
             finish)
    assert finished == dict.fromkeys(range(len(actions)), 1)      # each once, none lost
    return results


def test_batchable_tasks_go_to_a_worker_in_batches_of_at_most_the_pools_batch():
    results = run([{}] * 9, batch=4)
    assert [r["batch"] for r in results.values()] == [4, 4, 4, 4, 4, 4, 4, 4, 1]


def test_the_queue_is_shared_out_so_that_no_worker_waits_at_the_end():
    results = run([{}] * 6, jobs=2, batch=10)
    # a batch is at most the queue's share per worker when it is handed out: 3 of 6, 2 of 3
    assert sorted(r["batch"] for r in results.values()) == [1, 2, 2, 3, 3, 3]


def test_tasks_that_are_not_batchable_go_one_at_a_time():
    results = {}
    pool = Pool(mp.get_context("fork"), 1, setup, (), work, failure, batch=4,
                work_batch=work_batch)
    pool.run([Task(i, ("check", {}), 5.0) for i in range(3)],
             lambda t, r: results.__setitem__(t.index, r))
    assert [r["batch"] for r in results.values()] == [0, 0, 0]     # work, not work_batch


@pytest.mark.parametrize("what", ["crash", "hang"])
def test_a_task_that_crashes_or_hangs_its_batch_fails_alone(what):
    results = run([{}, {}, {"do": what}, {}, {}], batch=5, seconds=1.0)
    assert results[2] == {"failure": "crash" if what == "crash" else "timeout"}
    first = results[0]["pid"]
    assert results[1]["pid"] == first and first != results[3]["pid"]   # 3 and 4: elsewhere
    assert results[3]["pid"] == results[4]["pid"]
    assert all("failure" not in results[i] for i in (0, 1, 3, 4))


def test_a_task_that_retires_its_worker_leaves_the_rest_of_the_batch_to_another():
    results = run([{}, {"do": "retire"}, {}, {}], batch=4)
    assert results[0]["pid"] == results[1]["pid"] != results[2]["pid"] == results[3]["pid"]
    assert all("failure" not in r for r in results.values())


def test_a_tasks_time_limit_counts_its_own_work_not_its_batchs():
    # each task works 2 x 0.25 s, within its 1.5 s; the batch of 5 works 2.5 s
    results = run([{"half": 0.25}] * 5, batch=5, seconds=1.5)
    assert all("failure" not in r for r in results.values())
    assert [r["batch"] for r in results.values()] == [5] * 5


def test_a_task_over_its_own_limit_in_a_batch_times_out():
    # task 1 works 2 x 1.0 s against its 1.2 s: its clock runs out 0.2 s into its second
    # half, long before its result would come (the pool must not wait a whole limit after
    # task 0's result before it looks at task 1's clock)
    results = run([{"half": 0.1}, {"half": 1.0, "gap": 0.1}, {"half": 0.1}], batch=3,
                  seconds=1.2)
    assert results[1] == {"failure": "timeout"}
    assert "failure" not in results[0] and "failure" not in results[2]


@pytest.mark.parametrize("slow", [0.0, 0.3])
def test_a_worker_that_dies_between_batches_fails_no_task_and_stops_nothing(slow):
    # it dies after its batch's last result: while the pool hands it the next batch (slow 0),
    # or before (0.3: the pipe is closed when the pool sends); no task of the next batch ran
    results = run([{}, {"do": "die_after"}, {}, {}], batch=2, slow=slow)
    assert all("failure" not in r for r in results.values())
    assert results[0]["pid"] == results[1]["pid"] != results[2]["pid"] == results[3]["pid"]


def test_the_task_whose_clock_ran_out_is_the_one_that_fails():
    from conformance.campaign import pool as pool_mod

    class Record:                       # the worker moved on between the pool's two reads
        def __init__(self):
            self.reads = 0

        def task_clock(self):
            return 1, time.monotonic() - 10.0

        @property
        def index(self):
            return type("V", (), {"value": 2})()

        def where(self):
            return "the engine", "3"

    failed = []
    p = Pool(mp.get_context("fork"), 1, setup, (), work, failure, batch=4,
             work_batch=work_batch)
    slot = pool_mod._Slot(p)
    try:
        slot.tasks = [Task(i, None, 1.0, batchable=True) for i in (1, 2, 3)]
        slot.batched, slot.begun, slot.deadline = True, True, 0.0
        slot.progress = Record()
        assert not p._step(slot, False, lambda t, r: failed.append(t.index), [])
        assert failed == [1]
    finally:
        slot.stop(kill=True)


@pytest.mark.parametrize("kept", [False, True], ids=["run", "with-pool"])
@pytest.mark.parametrize("stop", [Enough(1), KeyboardInterrupt()], ids=["maxfail", "ctrl-c"])
def test_a_worker_that_hung_is_killed_when_its_failure_stops_the_run(monkeypatch, kept, stop):
    """--maxfail reached, or Ctrl-C, in `finish` of the hung task's own failure: the worker
    that hung is killed at once (it reads no request to exit: asked, the pool waited 5 s for it
    before the kill), and never kept for another run; the idle worker is asked to exit."""
    from conformance.campaign import pool as pool_mod
    stops, real = [], pool_mod._Slot.stop

    def recording(slot, kill=False):
        stops.append((slot.proc.pid, kill))
        real(slot, kill)
    monkeypatch.setattr(pool_mod._Slot, "stop", recording)
    results = {}

    def finish(task, result):
        results[task.index] = result
        if "failure" in result:
            raise stop
    pool = Pool(mp.get_context("fork"), 2, setup, (), work, failure, batch=2,
                work_batch=work_batch)
    # one worker is handed 0 and 1 (1 hangs), the other 2 and 3, which it finishes: idle
    tasks = [Task(i, ("check", a), 1.0, batchable=True)
             for i, a in enumerate([{}, {"do": "hang"}, {}, {}])]
    with pytest.raises(type(stop)):
        with pool if kept else contextlib.nullcontext():
            pool.run(tasks, finish)
    hung, idle = results[0]["pid"], results[2]["pid"]
    assert results[1] == {"failure": "timeout"} and hung != idle
    assert [kill for pid, kill in stops if pid == hung] == [True]
    assert [kill for pid, kill in stops if pid == idle] == [False]
