"""A conformance campaign: generate programs, run each on the engine and the oracle in worker
processes, compare, shrink each divergence and write it out (conformance/reports/report.py).

Workers are separate processes so that an engine that crashes or hangs on one program is
reported (a divergence of kind crash or timeout) and the run goes on with a fresh worker.
Program i is generated from its own seed, derived from the campaign seed alone, so the results
do not depend on --jobs or on timing.

After the run: divergences on clauses newer than the oracle's torch release are "not
applicable", those an expected-failure file lists (conformance/judge/xfail.py, the matcher the
pytest plugin uses too) are expected failures; neither fails the run. Each clause gets a status
(reports/report.py, set_statuses), and the capabilities the engine declares absent are probed
(conformance/judge/probes.py).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import random
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from ..engines import EngineError, load_engine
from ..engines.base import Engine
from ..judge.compare import Divergence, compare, is_harness
from ..judge.executor import execute
from ..judge.localise import localise
from ..judge.minimize import diverges_like, minimize
from ..judge.probes import check_declarations
from ..judge.xfail import Xfail, attributed
from ..judge.xfail import match as xfail_match
from ..judge.xfail import stale as stale_xfails
from ..lang.program import Program
from ..lang.trace import Trace
from ..reports.report import (
    Report,
    apply_oracle_version,
    clause_rows,
    set_statuses,
    write_divergence,
)
from ..spec.reader import load_spec

ProgramSource = Callable[[int, frozenset[str], int], Program]
Progress = Callable[[int, int, int, float], None]


def program_seeds(seed: int, count: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(48) for _ in range(count)]


def default_source(seed: int, capabilities: frozenset[str], size: int) -> Program:
    from ..generate import program_for_seed
    return program_for_seed(seed, capabilities, size)


def check(program: Program, oracle: Engine, engine: Engine, shrink: bool = True,
          shrink_seconds: float = 10.0,
          on_engine: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run one program on both engines; a JSON-able result, the program shrunk if divergent.
    `on_engine` is called between the oracle's run and the engine's."""
    o = execute(program, oracle)
    if on_engine:
        on_engine()
    e = execute(program, engine)
    found = compare(program, o, e)
    result: dict[str, Any] = {"clauses": program.clauses(), "divergences": []}
    if not found:
        return result
    if shrink:
        small = minimize(program, diverges_like(oracle, engine, found[0]),
                         max_seconds=shrink_seconds)
        so, se = execute(small, oracle), execute(small, engine)
        again = compare(small, so, se)
        if again:
            program, o, e, found = small, so, se, again
    if engine.granularity != "statement":   # found in a unit: where does an eager replay differ
        where = localise(program, o, engine)
        for d in found:
            d.localised_to = where
    result.update(program=program.to_json(), oracle=o.to_json(), engine=e.to_json(),
                  divergences=[d.to_json() for d in found])
    return result


def _worker(conn: Connection, phase: Any, engine_spec: str, oracle_spec: str, device: str,
            size: int, caps: frozenset[str], source: ProgramSource, shrink: bool,
            shrink_s: float) -> None:
    try:
        engine, oracle = load_engine(engine_spec, device), load_engine(oracle_spec, device)
    except EngineError as exc:
        conn.send(("fatal", None, str(exc)))
        return
    while True:
        task = conn.recv()
        if task is None:
            return
        index, pseed = task
        try:
            program = source(pseed, caps, size)
            # a crash or hang is the oracle's until the engine's turn is marked in `phase`
            # (shared memory, not a message: no system call per program)
            first = check(program, oracle, engine, shrink=False,
                          on_engine=lambda i=index: setattr(phase, "value", i))
            if first["divergences"] and shrink:
                conn.send(("diverged", index, first))   # kept if shrinking dies or hangs
                first = check(program, oracle, engine, shrink=True, shrink_seconds=shrink_s)
            conn.send(("done", index, first))
        except Exception:
            conn.send(("done", index, {"clauses": [], "internal": traceback.format_exc()}))


class _Slot:
    """One worker process and the task it is on."""

    def __init__(self, ctx, args: tuple[Any, ...]):
        self.conn, child = ctx.Pipe()
        self.phase = ctx.RawValue("q", -1)     # index of the program the engine is running
        self.proc = ctx.Process(target=_worker, args=(child, self.phase, *args), daemon=True)
        self.proc.start()
        child.close()
        self.task: tuple[int, int] | None = None
        self.deadline = 0.0
        self.partial: dict[str, Any] | None = None

    def give(self, task: tuple[int, int], timeout: float) -> None:
        self.task, self.deadline, self.partial = task, time.monotonic() + timeout, None
        self.conn.send(task)

    @property
    def culprit(self) -> str:
        return "engine" if self.task and self.phase.value == self.task[0] else "oracle"

    def stop(self, kill: bool = False) -> None:
        try:
            if kill:
                self.proc.kill()
            else:
                self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _failure(slot: _Slot, what: str, detail: str) -> dict[str, Any]:
    """A crash or hang. The engine's is a divergence; the oracle's cannot judge the engine
    and is reported apart (it is a bug in the oracle, or a program to stop generating)."""
    if slot.partial:
        return slot.partial
    if slot.culprit == "oracle":
        verb = {"crash": "crashed", "timeout": "timed out"}[what]
        return {"oracle_failure": f"the oracle {verb}: {detail}"}
    return {"failure": Divergence("", "program", what, "completed", detail).to_json()}


def run_programs(engine_spec: str, oracle_spec: str, device: str, seeds: list[int], size: int,
                 caps: frozenset[str], jobs: int, timeout: float,
                 source: ProgramSource = default_source, shrink: bool = True,
                 progress: Progress | None = None) -> list[dict[str, Any]]:
    """Results per program, in seed order; crashes and hangs become failure results."""
    # fork starts workers fastest; CUDA (torch or cupy) cannot cross a fork, and macOS
    # frameworks are not fork-safe, so spawn there
    method = os.environ.get("GRADSPEC_START_METHOD") or (
        "fork" if sys.platform.startswith("linux") and device == "cpu" else "spawn")
    ctx = mp.get_context(method)
    args = (engine_spec, oracle_spec, device, size, caps, source, shrink, 2 * timeout)
    tasks = list(enumerate(seeds))[::-1]
    results: list[dict[str, Any] | None] = [None] * len(seeds)
    slots = [_Slot(ctx, args) for _ in range(max(1, min(jobs, len(seeds))))]
    done = divergent = 0
    start = time.monotonic()

    def finish(slot: _Slot, result: dict[str, Any]) -> None:
        nonlocal done, divergent
        assert slot.task is not None
        results[slot.task[0]] = result
        done += 1
        divergent += bool(result.get("divergences") or result.get("failure")
                          or result.get("internal"))  # oracle failures are not the engine's
        slot.task = None
        if progress:
            progress(done, len(seeds), divergent, time.monotonic() - start)

    try:
        while done < len(seeds):
            for slot in slots:
                if slot.task is None and tasks:
                    slot.give(tasks.pop(), timeout)
            busy = [s for s in slots if s.task is not None]
            now = time.monotonic()
            ready = wait([s.conn for s in busy], timeout=max(0.0, min(
                s.deadline for s in busy) - now))
            for i, slot in enumerate(slots):
                if slot.task is None:
                    continue
                if slot.conn in ready:
                    try:
                        kind, index, payload = slot.conn.recv()
                    except (EOFError, OSError):
                        slot.proc.join(timeout=5)
                        finish(slot, _failure(
                            slot, "crash", f"worker died (exit code {slot.proc.exitcode})"))
                        slot.stop(kill=True)
                        slots[i] = _Slot(ctx, args)
                        continue
                    if kind == "fatal":
                        raise EngineError(payload)
                    if kind == "diverged":  # shrinking next: give it more time
                        slot.partial, slot.deadline = payload, time.monotonic() + 3 * timeout
                    else:
                        finish(slot, payload)
                elif time.monotonic() > slot.deadline:
                    finish(slot, _failure(slot, "timeout", f"no result within {timeout:g} s"))
                    slot.stop(kill=True)
                    slots[i] = _Slot(ctx, args)
    finally:
        for slot in slots:
            slot.stop(kill=slot.task is not None)
    return [r or {} for r in results]


def stderr_progress(done: int, total: int, divergent: int, seconds: float) -> None:
    """A progress line on stderr: rewritten in place on a terminal, every 10% otherwise."""
    tty = sys.stderr.isatty()
    if not tty and done != total and done % max(1, total // 10):
        return
    rate = done / seconds if seconds > 0 else 0.0
    line = f"[{done}/{total}] {rate:.1f} programs/s, {divergent} divergent"
    end = "\n" if not tty or done == total else ""
    print(("\r" if tty else "") + line, end=end, file=sys.stderr, flush=True)


def run_campaign(engine_spec: str = "refimpl", oracle_spec: str = "torch", seed: int = 0,
                 count: int = 300, size: int = 20, jobs: int = 1, timeout: float = 10.0,
                 out_dir: str | Path = "gradspec-out", progress: Progress | bool | None = True,
                 device: str = "cpu", source: ProgramSource = default_source,
                 shrink: bool = True, xfails: list[Xfail] | None = None,
                 probe: bool = True) -> Report:
    """Run `count` generated programs on engine and oracle; write OUT/report.json and a folder
    per divergent program; return the Report (exit_code 0 or 1).

    Divergences that an entry of `xfails` expects, and those on clauses newer than the
    oracle's release, are reported apart and do not fail the run. With `probe`, capabilities
    the engine declares absent are probed (conformance/judge/probes.py)."""
    engine, oracle = load_engine(engine_spec, device), load_engine(oracle_spec, device)
    caps = frozenset(engine.capabilities) & frozenset(oracle.capabilities)
    xf = [x for x in xfails or [] if x.applies_to(engine_spec) or x.applies_to(engine.name)]
    spec = load_spec()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)      # fail now, not after the run
    shutil.rmtree(out / "divergences", ignore_errors=True)
    shutil.rmtree(out / "oracle-failures", ignore_errors=True)
    report = Report(engine.name, engine.version, engine.device, oracle.name, oracle.version,
                    spec.version, seed, count, size, jobs, capabilities=sorted(caps))
    start = time.monotonic()
    if probe:
        report.capability_checks = [r.to_json() for r in check_declarations(engine, oracle)]
    seeds = program_seeds(seed, count)
    results = run_programs(engine_spec, oracle_spec, device, seeds, size, caps, jobs, timeout,
                           source, shrink,
                           stderr_progress if progress is True else progress or None)
    exercised: dict[str, int] = {}
    divergent: dict[str, int] = {}
    entries: list[dict[str, Any]] = []
    for index, (pseed, r) in enumerate(zip(seeds, results, strict=True)):
        for cid in r.get("clauses", []):
            exercised[cid] = exercised.get(cid, 0) + 1
            report.first_programs.setdefault(cid, index)
        if r.get("oracle_failure"):
            report.oracle_failures.append(_record_oracle_failure(
                index, pseed, r["oracle_failure"], engine, engine_spec, oracle_spec, caps, size,
                source, out))
            continue
        entry = _record(index, pseed, r, engine, engine_spec, oracle_spec, caps, size, source,
                        out)
        if entry:
            entries.append(entry)
            for cid in entry["primary"]:
                divergent[cid] = divergent.get(cid, 0) + 1
    report.programs = len(results)
    report.clauses = rows = clause_rows(spec, caps, exercised, divergent)
    too_new = apply_oracle_version(spec, rows, oracle.version)
    expected: dict[str, int] = {}
    used: set[int] = set()
    for entry in entries:
        primary = entry["primary"]
        # only the oracle's age excuses a divergence: a statement the generator drew for the
        # engine is one it can express, whatever `requires` its clauses list
        if is_harness(entry):       # gradspec's own failure: nothing excuses it
            report.divergences.append(entry)
        elif primary and all(c in too_new for c in primary):
            entry["not_applicable"] = "; ".join(
                f"{c}: {rows[c].get('reason', 'newer than the oracle')}" for c in primary)
            report.not_applicable.append(entry)
        elif (x := xfail_match(xf, primary, entry["program_seed"])) is not None:
            entry["xfail"] = x.to_json()
            used.add(x.line)
            report.expected_failures.append(entry)
            for cid in primary:
                expected[cid] = expected.get(cid, 0) + 1
        else:
            report.divergences.append(entry)
    from ..generate import NOT_GENERATED
    set_statuses(spec, rows, caps, expected, report.programs, too_new, NOT_GENERATED)
    diverged = {e["program_seed"] for e in entries}
    report.stale_xfails = stale_xfails(xf, set(spec.clauses), rows,
                                       {s: s in diverged for s in seeds}, used)
    report.seconds = round(time.monotonic() - start, 3)
    report.write(out / "report.json")
    return report


def _regenerate(source: ProgramSource, pseed: int, caps: frozenset[str], size: int) -> Program:
    try:
        return source(pseed, caps, size)
    except Exception:
        return Program([], seed=pseed)


def _record_oracle_failure(index: int, pseed: int, detail: str, engine: Engine,
                           engine_spec: str, oracle_spec: str, caps: frozenset[str], size: int,
                           source: ProgramSource, out: Path) -> dict[str, Any]:
    program = _regenerate(source, pseed, caps, size)
    folder = out / "oracle-failures" / f"{index:04d}-seed{pseed}"
    div = Divergence("", "program", "oracle failure", detail, "not judged")
    paths = write_divergence(folder, program, None, None, [div], engine, engine_spec,
                             oracle_spec)
    return {"index": index, "program_seed": pseed, "detail": detail, "folder": str(folder),
            "repro_torch": paths["repro_torch"]}


def _record(index: int, pseed: int, r: dict[str, Any], engine: Engine, engine_spec: str,
            oracle_spec: str, caps: frozenset[str], size: int, source: ProgramSource,
            out: Path) -> dict[str, Any] | None:
    """Write the folder of a divergent program; its entry for report.json (None if none)."""
    if not (r.get("divergences") or r.get("failure") or r.get("internal")):
        return None
    oracle_trace = engine_trace = None
    if r.get("divergences"):
        program = Program.from_json(r["program"])
        divs = [Divergence.from_json(d) for d in r["divergences"]]
        oracle_trace, engine_trace = Trace.from_json(r["oracle"]), Trace.from_json(r["engine"])
    else:  # crash, timeout or a gradspec bug: regenerate the program, it is deterministic
        program = _regenerate(source, pseed, caps, size)
        divs = [Divergence.from_json(r["failure"]) if r.get("failure") else
                Divergence("", "program", "internal", "completed",
                           r["internal"].strip().splitlines()[-1])]
        if r.get("internal"):
            divs[0].engine += " (a gradspec bug: see the traceback in report.json)"
    folder = out / "divergences" / f"{index:04d}-seed{pseed}"
    paths = write_divergence(folder, program, oracle_trace, engine_trace, divs, engine,
                             engine_spec, oracle_spec)
    # `clauses`: every clause involved (the backward slices); `primary`: those the divergences
    # are attributed to, which the per-clause table counts and expected failures match
    cites: dict[str, None] = {}
    for d in divs:
        cites.update(dict.fromkeys(d.clauses))
    return {"index": index, "program_seed": pseed, "what": divs[0].what,
            "path": divs[0].path, "clauses": list(cites), "primary": attributed(program, divs),
            "statements": sum(1 for _ in program.walk()),
            "minimized_from": program.meta.get("minimized_from"), "first": str(divs[0]),
            "folder": str(folder), **{k: v for k, v in paths.items()},
            **({"traceback": r["internal"]} if r.get("internal") else {}),
            **{k: getattr(divs[0], k) for k in ("segment", "localised_to")
               if getattr(divs[0], k) is not None}}
