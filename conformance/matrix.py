"""`gradspec matrix`: several engines against one oracle, as a clauses x engines table.

    gradspec matrix --engines refimpl,torch,torch-compile,paddle --count 200 --out matrix

runs one campaign per engine (conformance/runner.py, into OUT/<engine>/) and writes:

    OUT/matrix.html   a self-contained page (inline CSS, no scripts, no network)
    OUT/matrix.md     the same table in Markdown
    OUT/matrix.json   the cells as data

Each cell is one of pass / diverges / xfail / n/a (report.set_statuses): a clause is "pass" only
if programs exercised it without divergence. Each cell links to its repro: for diverges and
xfail, the engine's repro script of the first divergent program on the clause; for pass, a
program that exercised it (OUT/<engine>/programs/..., replayable with `gradspec replay`). Every
clause links to its text (spec/<file>.md#<id>). An engine that cannot load gets a column of n/a
with the reason. The exit code is 0 when the matrix is written: divergences are its content
(`gradspec run` is the pass/fail gate), 2 for bad usage.
"""
from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engines import EngineError, load_engine
from .executor import execute
from .render import render, render_replay
from .report import safe_name
from .runner import ProgramSource, default_source, program_seeds, run_campaign
from .specdoc import load_spec, spec_dir
from .xfail import Xfail

STATES = ("pass", "diverges", "xfail", "n/a")


@dataclass
class Column:
    engine: str                       # as given on the command line
    ok: bool
    reason: str = ""                  # why it could not run
    version: str = ""
    device: str = ""
    folder: str = ""                  # relative to OUT
    programs: int = 0
    divergent: int = 0
    capability_notes: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)   # clause -> cell


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


def run_matrix(engines: list[str], oracle: str = "torch", out_dir: str | Path = "gradspec-matrix",
               count: int = 100, seed: int = 0, size: int = 20, jobs: int = 1,
               timeout: float = 10.0, device: str = "cpu", xfails: list[Xfail] | None = None,
               source: ProgramSource = default_source, progress=None,
               probe: bool = True, spec_url: str | None = None) -> list[Column]:
    """Run every engine and write OUT/matrix.{html,md,json}; the columns, in `engines` order.
    An oracle that cannot load is an EngineError (there is no matrix without one). Clause
    links are relative paths to the spec folder, or under `spec_url` (a page to publish)."""
    oracle_engine = load_engine(oracle, device)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = load_spec()
    seeds = program_seeds(seed, count)
    columns: list[Column] = []
    for name in engines:
        folder = out / safe_name(name)
        try:
            engine = load_engine(name, device)
            report = run_campaign(name, oracle, seed=seed, count=count, size=size, jobs=jobs,
                                  timeout=timeout, out_dir=folder, progress=progress,
                                  device=device, source=source, xfails=xfails, probe=probe)
        except EngineError as exc:
            columns.append(Column(name, False, str(exc)))
            continue
        col = Column(name, True, version=report.engine_version, device=report.device,
                     folder=_rel(folder, out), programs=report.programs,
                     divergent=len(report.divergences))
        col.capability_notes = [f"{c['capability']}: {c['verdict']}" for c in
                                report.capability_checks if c["verdict"] not in
                                ("ok", "unprobed")]
        col.stale = [f"line {x['line']}: {x['id']}: {x['stale']}" for x in report.stale_xfails]
        firsts: dict[str, dict[str, Any]] = {}
        for kind in ("divergences", "expected_failures"):
            for d in getattr(report, kind):
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


def _title(text: str) -> str:
    """A clause title as HTML: `code` spans become <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def cell_of(col: Column, cid: str) -> dict[str, Any]:
    if not col.ok:
        return {"status": "n/a", "reason": "engine unavailable (the column head says why)"}
    return col.cells.get(cid, {"status": "n/a", "reason": "not in the report"})


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(spec, clauses: list[str], links: dict[str, str], columns: list[Column],
             meta: dict[str, Any]) -> str:
    head = ["clause"] + [c.engine + (f" {c.version}" if c.ok else " (unavailable)")
                         for c in columns]
    out = ["# gradspec conformance matrix", "",
           f"Oracle {meta['oracle']} {meta['oracle_version']}, spec {meta['spec']}, "
           f"{meta['count']} programs of {meta['size']} statements per engine, seed "
           f"{meta['seed']}, device {meta['device']}. Cells: pass, diverges, xfail (expected "
           f"failure), n/a (not applicable, with the reason).", "",
           "| " + " | ".join(_md(h) for h in head) + " |",
           "|" + "---|" * len(head)]
    for cid in clauses:
        row = [f"[{cid}]({links[cid]}) {_md(spec.clauses[cid].title)}"]
        for col in columns:
            cell = cell_of(col, cid)
            text = f"[{cell['status']}]({cell['repro']})" if cell.get("repro") else \
                cell["status"]
            if cell.get("reason"):
                text += f" ({_md(cell['reason'])})"
            row.append(text)
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    for col in columns:
        if not col.ok:
            out.append(f"- **{col.engine}** could not run: {_md(col.reason)}")
            continue
        out.append(f"- **{col.engine}** {col.version} ({col.device}): {col.programs} programs, "
                   f"{col.divergent} divergent; results in [{col.folder}/]({col.folder}/"
                   f"report.json)")
        out += [f"  - capability {n}" for n in col.capability_notes]
        out += [f"  - stale expected failure, {s}" for s in col.stale]
    return "\n".join(out) + "\n"


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
thead th { background: #f4f4f4; position: sticky; top: 0; }
td.pass { background: #dff5df; } td.diverges { background: #f9d0d0; }
td.xfail { background: #fbe8c4; } td.na { background: #eee; color: #777; }
td a { color: inherit; } .clause a { font-weight: 600; } .small { font-size: 12px; color: #555; }
"""


def page(spec, clauses: list[str], links: dict[str, str], columns: list[Column],
         meta: dict[str, Any]) -> str:
    e = html.escape
    heads = []
    for col in columns:
        if col.ok:
            sub = f"{col.version} ({col.device})<br>{col.programs} programs, {col.divergent} " \
                  f"divergent<br><a href=\"{e(col.folder)}/report.json\">report.json</a>"
            sub += "".join(f"<br>capability {e(n)}" for n in col.capability_notes)
        else:
            sub = f"unavailable: {e(col.reason)}"
        heads.append(f"<th>{e(col.engine)}<div class=\"small\">{sub}</div></th>")
    rows = []
    for cid in clauses:
        c = spec.clauses[cid]
        tds = [f"<th class=\"clause\"><a href=\"{e(links[cid])}\">{e(cid)}</a> "
               f"<span class=\"small\">{_title(c.title)}</span></th>"]
        for col in columns:
            cell = cell_of(col, cid)
            status, reason = cell["status"], cell.get("reason", "")
            label = (f"<a href=\"{e(cell['repro'])}\">{e(status)}</a>" if cell.get("repro")
                     else e(status))
            extra = f" <a class=\"small\" href=\"{e(links[cid])}\">spec</a>"
            if cell.get("traces"):
                extra += f" <a class=\"small\" href=\"{e(cell['traces'])}\">traces</a>"
            if reason:
                extra += f"<div class=\"small\">{e(reason)}</div>"
            cls = "na" if status == "n/a" else status
            tds.append(f"<td class=\"{cls}\" title=\"{e(reason)}\">{label}{extra}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    stale = "".join(f"<li>{e(col.engine)}: stale expected failure, {e(s)}</li>"
                    for col in columns for s in col.stale)
    return "\n".join([
        "<!DOCTYPE html>", "<html lang=\"en\">", "<head>", "<meta charset=\"utf-8\">",
        "<title>gradspec conformance matrix</title>", f"<style>{CSS}</style>", "</head>",
        "<body>", "<h1>gradspec conformance matrix</h1>",
        f"<p>Oracle {e(meta['oracle'])} {e(meta['oracle_version'])}, spec {e(meta['spec'])}, "
        f"{meta['count']} programs of {meta['size']} statements per engine, seed "
        f"{meta['seed']}, device {e(meta['device'])}. A cell is <b>pass</b> (exercised, no "
        f"divergence; links to a program that exercised the clause), <b>diverges</b> (links "
        f"to the repro), <b>xfail</b> (an expected failure) or <b>n/a</b> (not applicable, "
        f"with the reason).</p>",
        "<table>", "<thead><tr><th>clause</th>" + "".join(heads) + "</tr></thead>",
        "<tbody>", *rows, "</tbody>", "</table>",
        f"<ul>{stale}</ul>" if stale else "", "</body>", "</html>", ""])


__all__ = ["Column", "STATES", "markdown", "page", "run_matrix"]
