"""Shrink the programs on which the engine crashed or hung.

A divergence is shrunk inside the worker that found it (campaign/worker.py); a crash kills that
worker and a hang must be killed, so a crashed or hung program is shrunk from the parent
instead: the same delta debugging (judge/minimize.py), each candidate run as a task of its own
in a pool of workers, a candidate kept when the engine still fails the same way: a crash again
(or a hang again) of the engine, not the oracle, while running a statement of the same kind
and op as the original's. A crash costs one worker; a hang costs the time limit, so the
number of candidates is bounded (`MAX_TESTS`, a count, so that the result does not depend on
timing) and so is the number of programs shrunk per failure signature (`PER_SIGNATURE`, the
first ones by seed; the others keep their cut after the failing statement). The repro of each
shrunk program names the statement that was running in the shrunk program.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..judge.compare import Divergence
from ..judge.minimize import minimize
from ..lang.program import Program
from .pool import Pool, Task

MAX_TESTS = 40          # candidates tried per program
PER_SIGNATURE = 3       # programs shrunk per (crash or timeout, op of the failing statement)


def _op_at(program: Program, path: str) -> str | None:
    """The op of the statement at `path` (None when there is none)."""
    stmt = dict(program.walk()).get(path)
    return None if stmt is None else stmt.op


def shrink_one(pool: Pool, program: Program, target: Divergence, timeout: float,
               max_seconds: float) -> tuple[Program, dict[str, Any]] | None:
    """The smallest program found on which the engine still fails like `target` in `pool`,
    and that run's failure result; None when it does not fail so any more."""
    op = _op_at(program, target.path)
    last: dict[str, Any] = {}

    def fails_alike(p: Program) -> bool:
        out: dict[str, Any] = {}
        pool.run([Task(0, ("program", p.to_json()), timeout)],
                 lambda task, result: out.update(result))
        f = out.get("failure")
        if not f or f.get("what") != target.what or _op_at(p, f.get("path", "")) != op:
            return False
        last.clear()
        last.update(program=p.to_json(), failure=f)
        return True

    top = int(target.path.split(".")[0]) if target.path[:1].isdigit() \
        else len(program.statements)
    start = program
    if top + 1 < len(program.statements):       # the statements after it are likely idle
        cut = Program(program.statements[:top + 1], seed=program.seed, meta=dict(program.meta))
        if fails_alike(cut):
            start = cut
    if not last and not fails_alike(program):
        return None
    small = minimize(start, fails_alike, max_tests=MAX_TESTS, max_seconds=max_seconds)
    if Program.from_json(last["program"]).statements != small.statements:
        return None         # no result for the program minimize kept: report the unshrunk one
    small.meta["minimized_from"] = sum(1 for _ in program.walk())
    return small, dict(last["failure"])


def shrink_failures(make_pool: Callable[[], Pool], results: list[dict[str, Any] | None],
                    programs: Callable[[int], Program], timeout: float) -> None:
    """Shrink, in `results` (one per program index), the engine's crashes and hangs: each
    shrunk one gains "program" (the shrunk program's JSON) and its own "failure"."""
    seen: dict[tuple[str, str | None], int] = {}
    pool = make_pool()
    with pool:
        for index, result in enumerate(results):
            if not result or "failure" not in result:
                continue
            target = Divergence.from_json(result["failure"])
            program = programs(index)
            key = (target.what, _op_at(program, target.path))
            if seen.get(key, 0) >= PER_SIGNATURE or len(program.statements) < 2:
                continue
            seen[key] = seen.get(key, 0) + 1
            found = shrink_one(pool, program, target, timeout,
                               # a safety net only: the count (MAX_TESTS) is the bound, so
                               # that the result does not depend on timing
                               max_seconds=MAX_TESTS * (timeout + 60.0))
            if found is not None:
                small, failure = found
                result.update(program=small.to_json(), failure=failure)
