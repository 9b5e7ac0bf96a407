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
from .failfast import Enough, StopAfter
from .pool import Pool, PoolError, Task, context

# programs a worker is handed at once (worker.work_batch says why; benchmarks/README.md
# measures sizes from 1 to 60: 10 takes most of the gain, and a worker that crashes or hangs
# loses at most the other 9 programs' runs, which run again elsewhere)
BATCH = 10
# a campaign's progress callback: (programs done, programs in all, failing, seconds so far)
Progress = Callable[[int, int, int, float], None]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during run_programs: `results` holds the programs finished (None for the rest)."""

    def __init__(self, results: list[dict[str, Any] | None]):
        super().__init__("interrupted")
        self.results = results


def program_pool(engine_spec: str, oracle_spec: str, device: str, jobs: int, timeout: float,
                 options: dict[str, Any], shrink: bool) -> Pool:
    """The pool check_programs runs a campaign's programs in: a divergent program's result is
    followed by its shrinking, in a fresh worker."""
    def follow(task: Task, result: dict[str, Any]) -> Task | None:
        if shrink and task.payload[0] == "check" and result.get("divergences"):
            return Task(task.index, ("shrink", task.payload[1]), 3 * timeout, result)
        return None

    return Pool(context([engine_spec, oracle_spec], device), jobs, worker.setup,
                (engine_spec, oracle_spec, device, options), worker.work,
                lambda task, what, detail, who, path: worker.failure(
                    task.partial, what, detail, who, path), follow,
                batch=BATCH, work_batch=worker.work_batch)


def check_programs(engine_spec: str, oracle_spec: str, device: str, seeds: list[int],
                   jobs: int, timeout: float, options: dict[str, Any], shrink: bool,
                   progress: Progress | None, pool: Pool | None = None,
                   stop: StopAfter | None = None) -> list[dict[str, Any] | None]:
    """Each program run in `jobs` worker processes, a divergent one shrunk (`options`: the
    workers', campaign/worker.py); results in seed order, crashes and hangs unshrunk. `pool`:
    a program_pool of the same arguments whose workers are kept (`with pool:`) to use. `stop`
    (--maxfail, campaign/failfast.py): the programs after the prefix that reached its limit
    are not run (None)."""
    results: list[dict[str, Any] | None] = [None] * len(seeds)
    counts = {"done": 0, "failing": 0}
    start = time.monotonic()
    enough = stop.watch(seeds, results) if stop is not None else None

    def finish(task: Task, result: dict[str, Any]) -> None:
        if task.partial and not (result.get("divergences") or result.get("failure")):
            result = task.partial       # not reproduced while shrinking: keep what was found
        results[task.index] = result
        counts["done"] += 1
        counts["failing"] += failing(result)
        if progress:
            progress(counts["done"], len(seeds), counts["failing"], time.monotonic() - start)
        if enough is not None:
            enough()

    if pool is None:
        pool = program_pool(engine_spec, oracle_spec, device, jobs, timeout, options, shrink)
    try:
        pool.run([Task(i, ("check", s), timeout, batchable=True) for i, s in enumerate(seeds)],
                 finish)
    except Enough as reached:
        StopAfter.truncate(results, reached)
    except PoolError as exc:
        raise EngineError(str(exc)) from None
    except KeyboardInterrupt:       # (while the pool stopped, the stop's prefix stands)
        if stop is not None and stop.at is not None:
            StopAfter.truncate(results, stop.at)
        raise Interrupted(results) from None
    return results


def failing(result: dict[str, Any]) -> bool:
    """Whether a program's result counts as failing in the progress line (the oracle's own
    failures do not)."""
    return bool(result.get("divergences") or result.get("failure") or result.get("internal"))


def probe_isolated(engine_spec: str, oracle_spec: str, device: str, timeout: float,
                   capabilities: list[str]) -> list[dict[str, Any]]:
    """The capability probes (judge/probes.py) run in a worker process, one per capability, so
    that an engine that crashes or hangs on a probe program does not take gradspec with it: a
    capability whose probe crashed or hung the engine does not work (works False), one that
    crashed the oracle is unprobed."""
    out: list[dict[str, Any]] = [{} for _ in capabilities]

    def failure(task: Task, what: str, detail: str, who: str, path: str) -> dict[str, Any]:
        verb = {"crash": "crashed", "timeout": "hung"}.get(what, what)
        return {"failed": f"{who} {verb} on the probe program"
                          f"{f' at statement {path}' if path else ''}: {detail}"[:300],
                "who": who}

    def finish(task: Task, result: dict[str, Any]) -> None:
        out[task.index] = result
    pool = Pool(context([engine_spec, oracle_spec], device), 1, worker.setup,
                (engine_spec, oracle_spec, device, {}), worker.work, failure)
    try:
        pool.run([Task(i, ("probe", c), timeout) for i, c in enumerate(capabilities)], finish)
    except PoolError as exc:
        raise EngineError(str(exc)) from None
    from ..engines import load_engine
    from ..judge.probes import declared
    engine = load_engine(engine_spec, device)
    results = []
    for cap, r in zip(capabilities, out, strict=True):
        if "probe" in r:
            results.append(r["probe"])
            continue
        works = None if r.get("who") == "the oracle" or "failed" not in r else False
        detail = r.get("failed") or (r.get("internal") or "no result").strip().splitlines()[-1]
        is_declared = declared(engine, cap)
        verdict = "unprobed" if works is None else (
            "ok" if works == is_declared else
            "declared but fails" if is_declared else "declared absent but works")
        results.append({"capability": cap, "declared": is_declared, "works": works,
                        "detail": detail, "verdict": verdict})
    return results
