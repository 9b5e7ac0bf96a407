"""What `gradspec run` and `gradspec replay` write and print.

Per divergent program, a folder under OUT/divergences/:
    program.json         the (minimized) program; `gradspec replay` reads it
    divergence.json      the divergences (with clause IDs) and both traces
    traces.txt           the two traces side by side, differing statements marked
    repro_torch.py       the program as plain torch code
    repro_<engine>.py    the same on the engine under test (`import X as torch`), or a script
                         that runs `gradspec replay` for engines without a torch-shaped module
    graph-oracle.svg     the backward graph on each engine after the first differing statement,
    graph-engine.svg     what the divergence names in red (reports/graph.py; .dot without
                         Graphviz's dot); notes.txt says what was not drawn, and why
The same for a program the engine crashed on (OUT/crashes/) or hung on (OUT/timeouts/), and for
one the oracle failed on (OUT/oracle-failures/): none of these is a divergence, each has its own
list and count in report.json, its own columns in the clause table and its own summary line.
OUT/report.json holds the run's metadata, per-clause counts and the divergences with their
repro paths, each with its primary clause, signature and conformance class, and `groups`: the
divergent programs grouped by problem (signature and primary clause,
conformance/judge/verdict.py), each with its count and its smallest program; `classes`, the
conformance classes the engine claims, and `by_class`, the counts per class
(reports/classes.py); `clause_table` is the table `print_summary` (reports/summary.py) prints
at the end of a run, before the counts per class and one line per problem.

A run's verdict (`Report.exit_code`): 0 every program judged and none divergent; 1 divergences,
or crashes and timeouts on at most `max_unjudged` of the programs; 3 could not judge: a harness
error, an oracle failure, or more than `max_unjudged` (a fraction, default MAX_UNJUDGED) of the
programs crashed or timed out; 130 interrupted (the report is partial: `complete` false).

Per clause, a status: pass (exercised, no divergence), diverges, xfail (diverges, as an
expected-failure file says) or n/a, with the reason: the engine lacks a capability the clause
requires, the clause's `since` is newer than the oracle's release, or no program of the run
exercised it. A clause is never "pass" unless programs exercised it.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..engines.base import Engine
from ..judge.compare import INTERNAL, Divergence, is_harness, not_judged, outcome
from ..judge.executor import VALUED
from ..lang import ops
from ..lang.program import Program
from ..lang.trace import Event, Trace
from ..spec.capabilities import closure, lacked_ops
from .classes import class_counts
from .graph import draw_folder
from .render import render, render_replay, statement
from .report_html import write_safely as write_report_html

MAX_UNJUDGED = 0.01     # the fraction of programs that may crash or time out in a judged run
EXIT_UNJUDGED, EXIT_INTERRUPTED = 3, 130
# the keys of a report entry that hold paths (of its folder and the files in it)
PATH_KEYS = ("folder", "program", "divergence", "traces", "repro_torch", "repro_engine")


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "engine"


def _cell(ev: Event | None) -> str:
    if ev is None:
        return "-"
    text = outcome(ev)
    if ev.op in VALUED and ev.status == "ok":
        text = json.dumps(ev.value)
    if ev.warnings:
        text += f" warns {','.join(ev.warnings)}"
    if ev.hooks:
        text += " hooks " + " ".join(f"{h[0]}={json.dumps(h[1])}" for h in ev.hooks)
    return text


def side_by_side(program: Program, oracle: Trace | None, engine: Trace | None,
                 divergences: list[Divergence], width: int = 60) -> str:
    """One row per statement: source, oracle, engine; '!!' marks a divergent statement."""
    bad = {d.path for d in divergences}
    ob = oracle.by_path() if oracle else {}
    eb = engine.by_path() if engine else {}
    oname = f"oracle {oracle.engine} {oracle.version}" if oracle else "oracle"
    ename = f"engine {engine.engine} {engine.version}" if engine else "engine"
    rows = [f"   {'path':<6} {'statement':<{width}}  {oname}  ||  {ename}"]
    for path, s in program.walk():
        src = ("    " * path.count(".") + statement(s, path)[0])[:width]
        rows.append(f"{'!!' if path in bad else '  '} {path:<6} {src:<{width}}  "
                    f"{_cell(ob.get(path))}  ||  {_cell(eb.get(path))}")
    return "\n".join([*rows, "", *map(str, divergences)]) + "\n"


def write_divergence(folder: Path, program: Program, oracle: Trace | None,
                     engine_trace: Trace | None, divergences: list[Divergence],
                     engine: Engine, engine_spec: str, oracle_spec: str,
                     graphs: dict[str, Any] | None = None, classes: Iterable[str] = ()
                     ) -> dict[str, str]:
    """Write one divergence folder; returns the paths written, by role. `graphs`: what the
    worker captured of both graphs (graph.capture_pair); `classes`: those the run judged."""
    folder.mkdir(parents=True, exist_ok=True)
    traces = [t for t in (oracle, engine_trace) if t is not None]
    first = divergences[0] if divergences else None
    title = (f"gradspec divergence: {engine.name} vs {oracle_spec}"
             + (f", statement {first.path}: {first.what} [{', '.join(first.clauses)}]"
                if first and first.path else f": {first.what}" if first else ""))
    paths = {"program": folder / "program.json", "divergence": folder / "divergence.json",
             "traces": folder / "traces.txt", "repro_torch": folder / "repro_torch.py"}
    ename = safe_name(engine.name)
    paths["repro_engine"] = folder / f"repro_{ename if ename != 'torch' else 'engine'}.py"
    paths["program"].write_text(program.dumps() + "\n", encoding="utf-8")
    paths["divergence"].write_text(json.dumps({
        "engine": engine_spec, "oracle": oracle_spec, "device": engine.device,
        **({"classes": ",".join(classes)} if classes else {}),
        "divergences": [d.to_json() for d in divergences],
        "oracle_trace": oracle.to_json() if oracle else None,
        "engine_trace": engine_trace.to_json() if engine_trace else None,
    }, indent=1) + "\n", encoding="utf-8")
    paths["traces"].write_text(side_by_side(program, oracle, engine_trace, divergences),
                               encoding="utf-8")
    guard_all = not traces      # a crash or hang: which statements raise is unknown
    paths["repro_torch"].write_text(render(program, "import torch", traces, title, guard_all),
                                    encoding="utf-8")
    prelude = engine.render_prelude()
    paths["repro_engine"].write_text(
        render(program, prelude, traces, title, guard_all) if prelude else
        render_replay("program.json", engine_spec, oracle_spec, engine.device),
        encoding="utf-8")
    if oracle is not None and engine_trace is not None:     # judged: the worker captured them
        draw_folder(folder, graphs)
    return {k: str(v) for k, v in paths.items()}


@dataclass
class Report:
    engine: str
    engine_version: str
    device: str
    oracle: str
    oracle_version: str
    spec_version: str
    seed: int
    count: int
    size: int
    jobs: int
    programs: int = 0                       # programs run to the end (or crashed/timed out)
    clauses: dict[str, dict[str, Any]] = field(default_factory=dict)
    divergences: list[dict[str, Any]] = field(default_factory=list)
    oracle_failures: list[dict[str, Any]] = field(default_factory=list)  # not divergences
    crashes: list[dict[str, Any]] = field(default_factory=list)     # the engine's; not
    timeouts: list[dict[str, Any]] = field(default_factory=list)    # divergences either
    seconds: float = 0.0
    # divergences that do not fail the run: expected (an xfail file), or on newer clauses
    expected_failures: list[dict[str, Any]] = field(default_factory=list)
    not_applicable: list[dict[str, Any]] = field(default_factory=list)
    stale_xfails: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)  # the divergences by problem
    capability_checks: list[dict[str, Any]] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)   # engine's & oracle's, sorted
    classes: list[str] = field(default_factory=list)    # conformance classes claimed (classes.py)
    first_programs: dict[str, int] = field(default_factory=dict)  # clause -> program index
    timeout: float = 10.0                   # seconds per program
    max_unjudged: float = MAX_UNJUDGED
    complete: bool = True                   # False: interrupted, `programs` of `count` ran
    folder: str = ""                        # where report.json is
    scheduler: str = ""                     # the Dask scheduler it ran on (campaign/cluster.py)
    # --per-clause's figures (campaign/coverage.py, campaign_top_up); empty without it
    coverage: dict[str, Any] = field(default_factory=dict)
    maxfail: int = 0                        # --maxfail (campaign/failfast.py); 0: none
    stopped: bool = False                   # True: stopped at `maxfail` failing programs

    @property
    def exit_code(self) -> int:
        """0 judged, no divergence; 1 failing; 3 could not judge (`unjudged`); 130 incomplete."""
        if not self.complete:
            return EXIT_INTERRUPTED
        if self.unjudged():
            return EXIT_UNJUDGED
        return 1 if self.divergences or self.crashes or self.timeouts else 0

    @property
    def divergent(self) -> int:
        """Programs the engine diverged on: `divergences` less those gradspec failed on."""
        return sum(not not_judged(d) for d in self.divergences)

    @property
    def problems(self) -> int:
        """Distinct problems of the engine: the groups of divergent programs, less those of
        programs gradspec failed on (not judged)."""
        return sum(not g.get("not_judged") for g in self.groups)

    def unjudged(self) -> str | None:
        """Why the run could not judge the engine, in one line; None if it could."""
        harness = [d for d in self.divergences if is_harness(d)]
        if harness:
            return (f"could not judge {len(harness)} program(s): gradspec could not express a "
                    f"statement; first: {harness[0]['first'].splitlines()[0]}")
        failed_us = [d for d in self.divergences if d.get("what") == INTERNAL]
        if failed_us:
            why = (failed_us[0].get("traceback") or "").strip().splitlines() or [""]
            return (f"could not judge {len(failed_us)} program(s): gradspec failed on them "
                    f"(its bug, or the program source's); first: {why[-1]}")
        if self.oracle_failures:
            return (f"could not judge {len(self.oracle_failures)} program(s): the oracle "
                    f"failed; first: {self.oracle_failures[0]['detail']}")
        failed = len(self.crashes) + len(self.timeouts)
        if failed and failed > self.max_unjudged * self.programs:
            return (f"could not judge: {len(self.crashes)} crash(es) and {len(self.timeouts)} "
                    f"timeout(s) in {self.programs} programs, more than "
                    f"{self.max_unjudged:.1%} (--max-unjudged)")
        return None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["divergent_programs"], d["distinct_problems"] = self.divergent, self.problems
        d["not_judged_programs"] = len(self.divergences) - self.divergent
        d["crashed_programs"], d["timed_out_programs"] = len(self.crashes), len(self.timeouts)
        d["exit_code"], d["unjudged"] = self.exit_code, self.unjudged()
        d["by_class"] = class_counts(self)
        return d

    def write(self, path: Path) -> None:
        """report.json at `path`, and report.html beside it (whose failure is one line on
        stderr, never the run's)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.to_json()
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        write_report_html(data, path.parent)


def clause_rows(spec, capabilities: frozenset[str], exercised: dict[str, int],
                divergent: dict[str, int], crashes: dict[str, int] | None = None,
                timeouts: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Per active clause: programs that exercised it, divergent programs citing it, and
    whether the engine can express it at all (its `requires` are all capabilities). With
    `crashes` and `timeouts` (a campaign's), also the programs that crashed or hung on a
    statement citing it."""
    rows: dict[str, dict[str, Any]] = {}
    tagged = [*exercised, *(crashes or {}), *(timeouts or {})]
    for c in spec.active():
        rows[c.id] = {"programs": exercised.get(c.id, 0), "divergences": divergent.get(c.id, 0),
                      "applicable": closure(capabilities).issuperset(c.requires)}
    for cid in tagged:   # clauses tagged in programs but absent from the spec
        rows.setdefault(cid, {"programs": exercised.get(cid, 0),
                              "divergences": divergent.get(cid, 0), "applicable": True})
    if crashes is not None or timeouts is not None:
        for cid, row in rows.items():
            row["crashes"] = (crashes or {}).get(cid, 0)
            row["timeouts"] = (timeouts or {}).get(cid, 0)
    return rows


def release(version: str) -> tuple[int, ...] | None:
    """The release numbers of a version string: '2.13.0+cpu' -> (2, 13, 0), '2.2.0a0+git1' ->
    (2, 2, 0), '2.13.0 (aot_eager)' -> (2, 13, 0), '1.11' -> (1, 11); None if it has none."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version or "")
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def newer_than(since: str, version: str) -> bool:
    """Is a clause dated `since` (a torch release) newer than the oracle `version`? An
    unreadable version is taken as new enough for every clause."""
    a, b = release(since), release(version)
    if a is None or b is None:
        return False
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)) > b + (0,) * (n - len(b))


def newer_clauses(spec, oracle_version: str) -> set[str]:
    """The IDs of the spec's clauses newer than the oracle's release."""
    return {cid for cid, c in spec.clauses.items() if newer_than(c.since, oracle_version)}


def apply_oracle_version(spec, rows: dict[str, dict[str, Any]], oracle_version: str) -> set[str]:
    """Clauses newer than the oracle's release become not applicable, with the reason; returns
    their IDs."""
    newer = newer_clauses(spec, oracle_version) & set(rows)
    for cid in sorted(newer):
        row = rows[cid]
        if row["applicable"]:
            row["applicable"] = False
            row["reason"] = (f"since torch {spec.clauses[cid].since}, newer than the oracle "
                             f"({oracle_version})")
    return newer


def set_statuses(spec, rows: dict[str, dict[str, Any]], capabilities: frozenset[str],
                 expected: dict[str, int], programs: int,
                 too_new: set[str] | frozenset[str] = frozenset(),
                 not_generated: Mapping[str, str] | None = None) -> None:
    """Add `status` (pass | diverges | xfail | n/a) and, for n/a, `reason` to each row.
    `expected`: clause -> divergent programs on it that an expected-failure entry covers;
    `too_new`: clauses newer than the oracle; `not_generated`: clause -> why the program
    source never draws it (the generator's NOT_GENERATED, handed in by the campaign), the
    reason an unexercised one gets. A clause whose `requires` the engine lacks (a coarse
    capability implies its finer ones) is n/a: a campaign counts no divergence against it (a
    program whose primary clause it is was not compared); rows that count some say so."""
    for cid, row in rows.items():
        c = spec.clauses.get(cid)
        lacking = [r for r in c.requires if r not in closure(capabilities)] if c else []
        if row["divergences"] and cid not in too_new:
            row["status"] = "xfail" if expected.get(cid, 0) >= row["divergences"] else \
                "diverges"
            if lacking:
                row["reason"] = f"diverged, though it requires {', '.join(lacking)}, which " \
                                f"the engine lacks"
        elif row.get("crashes") or row.get("timeouts"):
            row["status"] = "n/a"
            row["reason"] = (f"not judged: the engine crashed on {row['crashes']} and hung on "
                             f"{row['timeouts']} program(s) at a statement citing it")
        elif not row["applicable"]:
            row["status"] = "n/a"
            if "reason" not in row:
                row["reason"] = f"the engine lacks {', '.join(lacking)}" if lacking else \
                    "not applicable"
        elif not row["programs"]:
            row["status"] = "n/a"
            row["reason"] = _why_unexercised(cid, programs, not_generated or {},
                                             lacked_ops(capabilities))
        else:
            row["status"] = "pass"


def clause_table(rows: dict[str, dict[str, Any]]) -> str:
    """Per clause: programs, divergences, and (for a campaign's rows) crashes and timeouts."""
    w = max([len(c) for c in rows] + [6])
    failures = any("crashes" in r for r in rows.values())
    cols = [("programs", 8), ("divergences", 11)] + (
        [("crashes", 7), ("timeouts", 8)] if failures else [])
    out = ["  ".join([f"{'clause':<{w}}"] + [f"{k:>{n}}" for k, n in cols])]
    for cid, r in rows.items():
        cells = [f"{('n/a' if not r['applicable'] else r.get(k, 0)):>{n}}" for k, n in cols]
        out.append("  ".join([f"{cid:<{w}}"] + cells))
    return "\n".join(out)


def _why_unexercised(cid: str, programs: int, not_generated: Mapping[str, str],
                     lacked: frozenset[str] = frozenset()) -> str:
    if lacked and (by := ops.exercised_by(cid)) and set(by) <= lacked:   # Engine.lacks_ops
        return f"exercised only by ops the engine lacks ({', '.join(by)})"
    if cid.startswith("UNSPEC-"):
        return "left open by the spec (spec/unspecified.md): never compared"
    if cid in not_generated:
        return f"not generated ({not_generated[cid]}); spec examples and differential tests " \
               "check it"
    return f"no program of {programs} exercised it"
