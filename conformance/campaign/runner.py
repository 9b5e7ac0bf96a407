"""A conformance campaign: generate programs, run each on the engine and the oracle in worker
processes, compare, shrink each divergence and write it out (conformance/reports/report.py).

Workers are separate processes so that an engine that crashes or hangs on one program is
reported (a divergence of kind crash or timeout) and the run goes on with a fresh worker.
Program i is generated from its own seed, derived from the campaign seed alone, so the results
do not depend on --jobs or on timing.

After the run: a divergent program whose primary clause (conformance/judge/verdict.py) is
newer than the oracle's torch release, or whose divergences are all of conformance classes the
engine does not claim (reports/classes.py), is "not applicable" (not compared); those an
expected-failure file lists (conformance/judge/xfail.py, the matcher the pytest plugin uses
too) are expected failures; neither fails the run. The
failing ones are grouped by problem (`Report.groups`). Each clause gets a status
(reports/report.py, set_statuses), and the capabilities the engine declares absent are probed
(conformance/judge/probes.py).
"""
from __future__ import annotations

import functools
import math
import random
import time
from pathlib import Path
from typing import Any

from ..engines import EngineError, capabilities_of, every_engine_name, load_engine
from ..generate import NOT_GENERATED, program_for_seed
from ..judge.probes import probe_names
from ..judge.problems import group
from ..judge.xfail import Xfail, unusable
from ..judge.xfail import stale as stale_xfails
from ..lang.program import Program
from ..reports.classes import apply_classes, engine_claim
from ..reports.progress import CampaignProgress
from ..reports.report import (
    MAX_UNJUDGED,
    PATH_KEYS,
    Report,
    apply_oracle_version,
    clause_rows,
    newer_clauses,
    set_statuses,
)
from ..spec.capabilities import combine
from ..spec.reader import load_spec
from . import signals, worker
from .coverage import SCAN, campaign_top_up, eligible
from .entries import Context, column, fails_run, record, record_oracle_failure, regenerate
from .failfast import StopAfter
from .failures import shrink_failures
from .outdir import Staging
from .pool import Pool, PoolError, context
from .programs import Interrupted, Progress, check_programs, failing, probe_isolated  # noqa: F401 - API
from .replay import replay  # noqa: F401 - part of this module's API (moved to replay.py)
from .worker import ProgramSource, check  # noqa: F401 - check: part of this module's API


def program_seeds(seed: int, count: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(48) for _ in range(count)]


def default_source(seed: int, capabilities: frozenset[str], size: int) -> Program:
    return program_for_seed(seed, capabilities, size)


def checked(source: ProgramSource) -> ProgramSource:
    """`source`, its programs validated (worker.CheckedSource) unless it is the generator's."""
    if source is default_source or isinstance(source, worker.CheckedSource):
        return source
    return worker.CheckedSource(source)


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C during run_campaign: `report` is the partial report (complete False), written to
    `report.folder`, a folder of its own beside OUT; OUT is as it was."""

    def __init__(self, report: Report):
        super().__init__("interrupted")
        self.report = report


def run_programs(engine_spec: str, oracle_spec: str, device: str, seeds: list[int], size: int,
                 caps: frozenset[str], jobs: int, timeout: float,
                 source: ProgramSource = default_source, shrink: bool = True,
                 progress: Progress | None = None, classes: frozenset[str] | None = None,
                 scheduler: str | None = None, stop: StopAfter | None = None
                 ) -> list[dict[str, Any] | None]:
    """Results per program, in seed order; crashes and hangs become failure results. A
    divergent program is shrunk in a fresh worker (campaign/worker.py) for its first divergence
    in `classes` (None: the engine's claim); then the crashes and hangs are (failures.py: the
    first few of each kind over the whole run). Ctrl-C raises Interrupted with the results so
    far. With `scheduler`, the address of a Dask scheduler, the programs run on its cluster
    (campaign/cluster.py) and `jobs` is not used; the crashes are shrunk here. With `stop`
    (--maxfail, campaign/failfast.py), the programs after the prefix holding its limit of
    failing ones are not run (None)."""
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be finite and positive, not {timeout!r}")
    source = checked(source)
    if scheduler and stop is not None:
        raise ValueError("--maxfail is not available with --scheduler")
    options = {"source": source, "caps": caps, "size": size, "shrink_seconds": 2 * timeout,
               "classes": classes}
    if scheduler:
        from .. import __version__
        from .cluster import run_on_cluster
        versions = (__version__, load_engine(engine_spec, device).version,
                    load_engine(oracle_spec, device).version)
        results = run_on_cluster(scheduler, engine_spec, oracle_spec, device, seeds, timeout,
                                 options, shrink, progress, versions)
    else:
        results = check_programs(engine_spec, oracle_spec, device, seeds, jobs, timeout,
                                 options, shrink, progress, stop=stop)
    try:
        if shrink and any(r and "failure" in r for r in results):
            shrink_failures(lambda: Pool(
                context([engine_spec, oracle_spec], device), 1, worker.setup,
                (engine_spec, oracle_spec, device, options), worker.work,
                lambda task, what, detail, who, path: worker.failure(
                    None, what, detail, who, path)),
                results, lambda i: regenerate(source, seeds[i], caps, size), timeout)
    except PoolError as exc:
        raise EngineError(str(exc)) from None
    except KeyboardInterrupt:
        raise Interrupted(results) from None
    if stop is not None and stop.stopped:
        return results      # None: not run, after the prefix that reached --maxfail
    return [r or {} for r in results]


def run_campaign(engine_spec: str = "refimpl", oracle_spec: str = "torch", seed: int = 0,
                 count: int = 300, size: int = 20, jobs: int = 1, timeout: float = 10.0,
                 out_dir: str | Path = "gradspec-out", progress: Progress | bool | None = True,
                 device: str = "cpu", source: ProgramSource = default_source,
                 shrink: bool = True, xfails: list[Xfail] | None = None,
                 probe: bool = True, max_unjudged: float = MAX_UNJUDGED,
                 classes: list[str] | tuple[str, ...] | None = None,
                 scheduler: str | None = None, per_clause: int = 0, maxfail: int = 0
                 ) -> Report:
    """Run `count` generated programs on engine and oracle; write OUT/report.json and a folder
    per divergent, crashed or timed-out program; return the Report (its exit_code: see
    Report.exit_code).

    The run writes into a fresh folder beside OUT and swaps it in when complete
    (campaign/outdir.py); Ctrl-C leaves a partial report (`complete` False) in that folder
    (`report.folder`) and raises CampaignInterrupted. Divergences that an entry of `xfails`
    expects, and those on clauses newer than the oracle's release, are reported apart and do
    not fail the run, and so do divergences of conformance classes the engine does not claim
    (`classes` overrides its claim). With `probe`, capabilities the engine declares absent are
    probed (conformance/judge/probes.py). With `scheduler` (a Dask scheduler's address) the
    programs run on that cluster (campaign/cluster.py), with the report a serial run writes.
    With `per_clause`, further programs of the stream are run until every clause a program can
    exercise is exercised by that many (campaign/coverage.py; the report's `coverage`).
    With `maxfail`, the run stops once that many programs fail it (campaign/failfast.py; the
    report's `stopped`)."""
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be finite and positive, not {timeout!r}")
    if scheduler and maxfail:
        raise ValueError("--maxfail is not available with --scheduler")
    source = checked(source)
    engine, oracle = load_engine(engine_spec, device), load_engine(oracle_spec, device)
    if scheduler:
        from .cluster import check
        check(scheduler)        # one line now, not after the probes
    caps = combine(capabilities_of(engine), capabilities_of(oracle))
    claims = engine_claim(engine, classes)
    xf = [x for x in xfails or [] if x.applies_to(engine_spec) or x.applies_to(engine.name)]
    unused = unusable(xfails or [], {*every_engine_name(), engine_spec, engine.name})
    spec = load_spec()
    report = Report(engine.name, engine.version, engine.device, oracle.name, oracle.version,
                    spec.version, seed, count, size, jobs, capabilities=sorted(caps),
                    timeout=timeout, max_unjudged=max_unjudged, classes=list(claims),
                    scheduler=scheduler or "", maxfail=maxfail)
    too_new = newer_clauses(spec, oracle.version)     # as the report's rows will say
    stop = StopAfter(maxfail, fails_run(claims, too_new, xf)) if maxfail else None
    start = time.monotonic()
    staging = Staging(out_dir)  # fails now, not after the run, if OUT cannot be written or is
    try:                        # another run's (its lock): released when this run ends
        seeds = program_seeds(seed, count)
        run = functools.partial(_run_part, engine_spec, oracle_spec, device, size, caps, jobs,
                                timeout, source, shrink, progress, frozenset(claims), scheduler,
                                stop)
        if probe and not _probed(report, engine, engine_spec, oracle_spec, device, timeout):
            results, report.complete = [None] * len(seeds), False
        else:
            results, report.complete = run(seeds, None)
        if per_clause > 0 and report.complete and not (stop and stop.stopped):
            further = program_seeds(seed, count + SCAN)[count:]
            seeds, results, report.complete, report.coverage = campaign_top_up(
                run, seeds, results, further, source, caps, size, per_clause, max_unjudged)
        ctx = Context(engine, engine_spec, oracle_spec, caps, size, source, staging.path,
                       claims)
        report.stopped = bool(stop and stop.stopped)
        with signals.held():        # every result is in: a first interrupt loses nothing now
            _collect(report, spec, ctx, seeds, results, xf, unused)
            _write(report, staging, eligible(caps), per_clause, time.monotonic() - start)
    except BaseException:
        staging.discard()
        raise
    finally:
        staging.release()
    if not report.complete:
        raise CampaignInterrupted(report)
    return report       # (an interrupt held while it was written: the run ends with its verdict)


def _probed(report: Report, engine, engine_spec: str, oracle_spec: str, device: str,
            timeout: float) -> bool:
    """Probe the capabilities into the report: all of them (a declared one may fail too), in
    a worker, since a probe may crash it. False when Ctrl-C stopped the probes: no program has
    run, and the run ends interrupted, with its partial report, as it does later on."""
    try:
        report.capability_checks = probe_isolated(engine_spec, oracle_spec, device, timeout,
                                                  probe_names(engine))
    except KeyboardInterrupt:
        return False
    return True


def _write(report: Report, staging: Staging, eligible: Any, per_clause: int,
           seconds: float) -> None:
    """Write the report; a complete run's output is swapped into OUT, an interrupted one's
    stays in the staging folder."""
    if report.coverage:     # what is short after the programs ran, not as drawn
        report.coverage["short"] = {
            c: report.clauses[c]["programs"] for c in eligible
            if report.clauses.get(c, {}).get("programs", 0) < per_clause}
    report.seconds = round(seconds, 3)
    report.folder = str(staging.path if not report.complete else staging.out)
    if report.complete:
        _relocate(report, staging)
    report.write(staging.path / "report.json")
    if report.complete:
        staging.commit()


def _run_part(engine_spec: str, oracle_spec: str, device: str, size: int, caps: frozenset[str],
              jobs: int, timeout: float, source: ProgramSource, shrink: bool,
              progress: Progress | bool | None, claims: frozenset[str], scheduler: str | None,
              stop: StopAfter | None, seeds: list[int], what: str | None
              ) -> tuple[list[dict[str, Any] | None], bool]:
    """run_programs on `seeds` behind a progress bar named `what` (progress True): the
    results, None for a program not run, and whether all ran (False: interrupted)."""
    bar = CampaignProgress(what=what) if progress is True else None
    try:
        return list(run_programs(engine_spec, oracle_spec, device, seeds, size, caps, jobs,
                                 timeout, source, shrink, bar or progress or None, claims,
                                 scheduler, stop)), True
    except Interrupted as stop:
        return list(stop.results), False
    finally:
        if bar is not None:
            bar.close()


def _collect(report: Report, spec, ctx: Context, seeds: list[int],
             results: list[dict[str, Any] | None], xf: list[Xfail],
             unused: list[dict[str, Any]]) -> None:
    """Fill the report from the results of the programs run (None: not run, interrupted).
    `xf`: the expected failures for this engine; `unused`: the entries stale in any
    campaign (xfail.unusable)."""
    exercised: dict[str, int] = {}
    tallies: dict[str, dict[str, int]] = {"divergences": {}, "crashes": {}, "timeouts": {},
                                          "not_applicable": {}}
    entries: list[dict[str, Any]] = []
    for index, (pseed, r) in enumerate(zip(seeds, results, strict=True)):
        if r is None:
            continue
        report.programs += 1
        for cid in r.get("clauses", []):
            exercised[cid] = exercised.get(cid, 0) + 1
            report.first_programs.setdefault(cid, index)
        if r.get("oracle_failure"):
            report.oracle_failures.append(record_oracle_failure(index, pseed, r, ctx))
            continue
        entry = record(index, pseed, r, ctx)
        if entry is None:
            continue
        # not applicable: its divergences are of classes the engine does not claim
        column = "not_applicable" if entry.get("not_applicable") else {
            "crash": "crashes", "timeout": "timeouts"}.get(entry["what"], "divergences")
        if column == "divergences":
            entries.append(entry)
        else:
            getattr(report, column).append(entry)
        for cid in entry["primary"]:
            tallies[column][cid] = tallies[column].get(cid, 0) + 1
    report.clauses = rows = clause_rows(spec, ctx.caps, exercised, tallies["divergences"],
                                        tallies["crashes"], tallies["timeouts"])
    _sort(report, spec, rows, entries, xf, seeds, unused)
    report.groups = group(report.divergences)


def _sort(report: Report, spec, rows: dict[str, dict[str, Any]], entries: list[dict[str, Any]],
          xf: list[Xfail], seeds: list[int], unused: list[dict[str, Any]]) -> None:
    """Divergences into failing, expected and not applicable (the primary clause is newer than
    the oracle); clause statuses; stale xfails. A clause's `requires` never excuses a
    divergence: it names what the clause's examples need, and a statement drawn for the
    engine is one the engine can be asked (API-4's rule covers `backward`, its example uses
    autograd.grad)."""
    too_new = apply_oracle_version(spec, rows, report.oracle_version)
    apply_classes(spec, rows, report.classes)
    expected: dict[str, int] = {}
    used: set[int] = set()
    for entry in entries:
        where, x = column(entry, too_new, xf)
        if where == "not_applicable":
            entry["not_applicable"] = "; ".join(
                f"{c}: {rows[c].get('reason', 'newer than the oracle')}" for c in entry["primary"])
        elif x is not None:
            entry["xfail"] = x.to_json()
            used.add(x.line)
            for cid in entry["primary"]:
                expected[cid] = expected.get(cid, 0) + 1
        getattr(report, where).append(entry)
    report.not_applicable.sort(key=lambda e: e["index"])
    set_statuses(spec, rows, frozenset(report.capabilities), expected, report.programs,
                 too_new, NOT_GENERATED)
    diverged = {e["program_seed"] for e in entries}
    if report.stopped:      # the programs not run might have been the ones an entry expects
        return
    told = {x["line"] for x in unused}
    report.stale_xfails = sorted(unused + stale_xfails(
        [x for x in xf if x.line not in told], set(spec.clauses), rows,
        {s: s in diverged for s in seeds}, used), key=lambda x: x["line"])


def _relocate(report: Report, staging: Staging) -> None:
    """The paths of a complete run's entries, as they will be once swapped into OUT."""
    for kind in ("divergences", "crashes", "timeouts", "oracle_failures", "expected_failures",
                 "not_applicable", "groups"):
        for entry in getattr(report, kind):
            for key in PATH_KEYS:
                if entry.get(key):
                    entry[key] = staging.final(entry[key])
