"""`gradspec matrix`: several engines against one oracle, as a clauses x engines table.

    gradspec matrix --engines refimpl,torch,torch-compile,paddle --count 200 --out matrix

runs one campaign per engine (campaign/runner.py, into OUT/<engine>/) and writes, through
conformance/reports/pages.py:

    OUT/matrix.html   a self-contained page (inline CSS, no scripts, no network)
    OUT/matrix.md     the same table in Markdown
    OUT/matrix.json   the cells as data

Each cell is one of pass / diverges / xfail / n/a (reports/report.py, set_statuses): a clause
is "pass" only if programs exercised it without divergence, and it diverges only in programs
whose primary clause it is (conformance/judge/verdict.py). A diverging cell counts its distinct
problems (groups of programs with one signature, reports/report.py) beside its programs, and
each column its distinct problems, listed under the table. Each cell links to its repro: for
diverges, the engine's repro script of the smallest program of the cell's largest problem; for
xfail, of the first expected failure on the clause; for pass, a program that exercised it
(OUT/<engine>/programs/..., replayable with `gradspec replay`). Every clause links to its text
(spec/<file>.md#<id>). Each column says which conformance classes the engine claims, and per
class its divergent programs and distinct problems (reports/classes.py); a clause of a class it
does not claim is n/a. Every engine named must name one (`named_engines`: a mistyped name is
refused before anything runs); one that then cannot load gets a column of n/a with the reason.
The
exit code is 0 when the matrix is written and every column judged: divergences are its content
(`gradspec run` is the pass/fail gate); 3 when it is written but some column could not be
judged (an engine named that cannot load, except, under `--engines all`, a built-in whose
package is not installed; or a campaign that could not judge, as `gradspec run`'s exit 3); 2
for bad usage, a name that is no engine among it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..engines import EngineError, check_name, every_engine_name, load_engine
from ..judge.executor import execute
from ..judge.xfail import Xfail
from ..reports.classes import class_counts
from ..reports.pages import STATES, Column, markdown, page
from ..reports.progress import CampaignProgress
from ..reports.render import render, render_replay
from ..reports.report import safe_name
from ..spec.reader import load_spec, spec_dir
from .outdir import Lock
from .runner import ProgramSource, default_source, program_seeds, run_campaign


class EnginesError(ValueError):
    """`--engines` names no engine, one twice, `all` beside others, or one that is no engine
    (campaign/matrix.py, named_engines); the message is one line."""


def named_engines(text: str) -> tuple[list[str], bool]:
    """The engines of `--engines TEXT` (comma-separated, or `all`: every built-in and
    entry-point engine) and whether it was `all`. Each name is checked before anything runs
    (engines.check_name): a mistyped one is an EnginesError, not a column of n/a after the
    others ran. An engine that is named right but does not load (its package is not
    installed) is still a column of n/a."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return every_engine_name(), True
    if "all" in names:
        raise EnginesError("--engines all names every engine: give it alone")
    if not names:
        raise EnginesError("--engines names no engine")
    if len(set(names)) != len(names):
        raise EnginesError("--engines names an engine twice")
    for name in names:
        try:
            check_name(name)
        except EngineError as exc:
            raise EnginesError(f"--engines: {exc}") from None
    return names, False


def _rel(path: str | Path, out: Path) -> str:
    try:
        return Path(os.path.relpath(Path(path).resolve(), out.resolve())).as_posix()
    except ValueError:      # another drive: an absolute URI still opens
        return Path(path).resolve().as_uri()


def _write_program(out: Path, folder: Path, index: int, pseed: int, source: ProgramSource,
                   caps: frozenset[str], size: int, engine_spec: str, oracle_spec: str,
                   device: str, oracle, prelude: str | None) -> str:
    """A program that exercised a clause, as program.json and a repro script; returns the
    script's path relative to OUT."""
    where = folder / "programs" / f"{index:04d}-seed{pseed}"
    script = where / "repro.py"
    if script.exists():
        return _rel(script, out)
    program = source(pseed, caps, size)
    where.mkdir(parents=True, exist_ok=True)
    (where / "program.json").write_text(program.dumps() + "\n", encoding="utf-8")
    title = f"gradspec program #{index} of the {engine_spec} campaign (no divergence)"
    text = render(program, prelude, [execute(program, oracle)], title) if prelude else \
        render_replay("program.json", engine_spec, oracle_spec, device)
    script.write_text(text, encoding="utf-8")
    return _rel(script, out)


def _bar(progress: Any, name: str) -> Any:
    """The progress of engine `name`'s campaign: for `progress` True a line on a terminal
    (reports/progress.py), else `progress` itself (a campaign's callback, or None)."""
    return CampaignProgress(what=name) if progress is True else progress


def _head(name: str, report, folder: Path, out: Path) -> Column:
    """A column's head, from its campaign's report: counts, problems, notes."""
    col = Column(name, True, version=report.engine_version, device=report.device,
                 folder=_rel(folder, out), programs=report.programs,
                 divergent=report.divergent, problems=report.problems,
                 groups=[{**g, "repro_engine": _rel(g["repro_engine"], out)}
                         for g in report.groups if g.get("repro_engine")],
                 classes=list(report.classes), by_class=class_counts(report))
    col.capability_notes = [f"{c['capability']}: {c['verdict']}" for c in
                            report.capability_checks if c["verdict"] not in ("ok", "unprobed")]
    col.stale = [f"line {x['line']}: {x['id']}: {x['stale']}" for x in report.stale_xfails]
    col.unjudged = report.unjudged() or ""
    return col


def run_matrix(engines: list[str], oracle: str = "torch", out_dir: str | Path = "gradspec-matrix",
               count: int = 100, seed: int = 0, size: int = 20, jobs: int = 1,
               timeout: float = 10.0, device: str = "cpu", xfails: list[Xfail] | None = None,
               source: ProgramSource = default_source, progress=None,
               probe: bool = True, spec_url: str | None = None) -> list[Column]:
    """Run every engine and write OUT/matrix.{html,md,json}; the columns, in `engines` order.
    An oracle that cannot load is an EngineError (there is no matrix without one). Clause links
    are relative paths to the spec folder, or under `spec_url`. `progress`: see `_bar`."""
    oracle_engine = load_engine(oracle, device)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with Lock(out):     # one run at a time in OUT (campaign/outdir.py), its columns' too
        spec = load_spec()
        seeds = program_seeds(seed, count)
        columns: list[Column] = []
        for name in engines:
            folder = out / safe_name(name)
            try:
                engine = load_engine(name, device)
                report = run_campaign(name, oracle, seed=seed, count=count, size=size,
                                      jobs=jobs, timeout=timeout, out_dir=folder,
                                      progress=_bar(progress, name), device=device,
                                      source=source, xfails=xfails, probe=probe)
            except EngineError as exc:
                columns.append(Column(name, False, str(exc)))
                continue
            col = _head(name, report, folder, out)
            firsts: dict[str, dict[str, Any]] = {}
            problems: dict[str, int] = {}
            for g in report.groups:     # most frequent first: a cell links to its largest one
                if g["primary"]:
                    firsts.setdefault(g["primary"], {**g, "traces": str(Path(g["folder"]) /
                                                                       "traces.txt")})
                    problems[g["primary"]] = problems.get(g["primary"], 0) + 1
            for d in report.expected_failures:
                for cid in d["primary"]:
                    firsts.setdefault(cid, d)
            caps = frozenset(report.capabilities)
            prelude = engine.render_prelude()
            for cid, row in report.clauses.items():
                cell: dict[str, Any] = {"status": row["status"], "programs": row["programs"],
                                        "divergences": row["divergences"]}
                if row["status"] == "n/a":
                    cell["reason"] = row.get("reason", "")
                elif row["status"] in ("diverges", "xfail") and cid in firsts:
                    d = firsts[cid]
                    if cid in problems:
                        cell["problems"] = problems[cid]
                    cell["repro"] = _rel(d["repro_engine"], out)
                    cell["traces"] = _rel(d["traces"], out)
                    if d.get("xfail"):
                        cell["reason"] = d["xfail"]["reason"]
                    elif row.get("reason"):     # diverged on a clause it lacks a capability for
                        cell["reason"] = row["reason"]
                elif row["status"] == "pass" and cid in report.first_programs:
                    i = report.first_programs[cid]
                    cell["repro"] = _write_program(out, folder, i, seeds[i], source, caps, size,
                                                   name, oracle, device, oracle_engine, prelude)
                col.cells[cid] = cell
            columns.append(col)
        clauses = [c.id for c in spec.active()]
        base = spec_url.rstrip("/") if spec_url else _rel(spec_dir(), out)
        links = {cid: f"{base}/{spec.clauses[cid].file}#{cid.lower()}" for cid in clauses}
        meta = {"oracle": oracle, "oracle_version": oracle_engine.version, "spec": spec.version,
                "seed": seed, "count": count, "size": size, "device": device}
        (out / "matrix.json").write_text(json.dumps(
            {**meta, "clauses": {cid: {"title": spec.clauses[cid].title, "link": links[cid]}
                                 for cid in clauses},
             "engines": [c.__dict__ for c in columns]}, indent=1) + "\n", encoding="utf-8")
        (out / "matrix.md").write_text(markdown(spec, clauses, links, columns, meta),
                                       encoding="utf-8")
        (out / "matrix.html").write_text(page(spec, clauses, links, columns, meta),
                                         encoding="utf-8")
        return columns


__all__ = ["Column", "EnginesError", "STATES", "markdown", "named_engines", "page",
           "run_matrix"]
