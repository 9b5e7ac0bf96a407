"""The programs of a campaign run in a pool of worker processes (campaign/pool.py), each on the
oracle and the engine, a divergent one shrunk in a fresh worker (campaign/worker.py): the part
of a campaign that both a local run (campaign/runner.py) and a slice on a Dask worker
(campaign/cluster.py) perform."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..engines import EngineError
from . import worker
from .pool import Pool, PoolError, Task, context

# a campaign's progress callback: (programs done, programs in all, failing, seconds so far)
Progress = Callable[[int, int, int, float], None]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during run_programs: `results` holds the programs finished (None for the rest)."""

    def __init__(self, results: list[dict[str, Any] | None]):
        super().__init__("interrupted")
        self.results = results


def check_programs(engine_spec: str, oracle_spec: str, device: str, seeds: list[int],
                   jobs: int, timeout: float, options: dict[str, Any], shrink: bool,
                   progress: Progress | None) -> list[dict[str, Any] | None]:
    """Each program run in `jobs` worker processes, a divergent one shrunk (`options`: the
    workers', campaign/worker.py); results in seed order, crashes and hangs unshrunk."""
    results: list[dict[str, Any] | None] = [None] * len(seeds)
    counts = {"done": 0, "failing": 0}
    start = time.monotonic()

    def follow(task: Task, result: dict[str, Any]) -> Task | None:
        if shrink and task.payload[0] == "check" and result.get("divergences"):
            return Task(task.index, ("shrink", seeds[task.index]), 3 * timeout, result)
        return None

    def finish(task: Task, result: dict[str, Any]) -> None:
        if task.partial and not (result.get("divergences") or result.get("failure")):
            result = task.partial       # not reproduced while shrinking: keep what was found
        results[task.index] = result
        counts["done"] += 1
        counts["failing"] += failing(result)
        if progress:
            progress(counts["done"], len(seeds), counts["failing"], time.monotonic() - start)

    pool = Pool(context([engine_spec, oracle_spec], device), jobs, worker.setup,
                (engine_spec, oracle_spec, device, options), worker.work,
                lambda task, what, detail, who, path: worker.failure(
                    task.partial, what, detail, who, path), follow)
    try:
        pool.run([Task(i, ("check", s), timeout) for i, s in enumerate(seeds)], finish)
    except PoolError as exc:
        raise EngineError(str(exc)) from None
    except KeyboardInterrupt:
        raise Interrupted(results) from None
    return results


def failing(result: dict[str, Any]) -> bool:
    """Whether a program's result counts as failing in the progress line (the oracle's own
    failures do not)."""
    return bool(result.get("divergences") or result.get("failure") or result.get("internal"))
