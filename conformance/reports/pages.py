"""The pages of `gradspec matrix`: the clauses x engines table as Markdown and as one
self-contained HTML page (inline CSS, no scripts, no network), from the columns the matrix
campaign (conformance/campaign/matrix.py) fills in.

A column is one engine; its cells are keyed by clause ID, each a status of STATES with the
reason for n/a, links to a repro and the traces, and for a diverging cell the number of
distinct problems whose primary clause it is; the column's problems are listed under the table,
each with a link to its smallest program. A column's head names the conformance classes the
engine claims and counts the divergent programs and distinct problems of each
(reports/classes.py).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

STATES = ("pass", "diverges", "xfail", "n/a")


@dataclass
class Column:
    """One engine's column of the matrix: how its campaign went, and its cells by clause."""

    engine: str                       # as given on the command line
    ok: bool
    reason: str = ""                  # why it could not run
    version: str = ""
    device: str = ""
    folder: str = ""                  # relative to OUT
    programs: int = 0
    divergent: int = 0
    problems: int = 0                 # distinct problems among the divergent programs
    groups: list[dict[str, Any]] = field(default_factory=list)  # one per problem (report.json)
    classes: list[str] = field(default_factory=list)    # the conformance classes it claims
    by_class: dict[str, dict[str, Any]] = field(default_factory=dict)   # report.json's
    capability_notes: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    unjudged: str = ""                # why its campaign could not judge it (report.json)
    cells: dict[str, dict[str, Any]] = field(default_factory=dict)   # clause -> cell


def _title(text: str) -> str:
    """A clause title as HTML: `code` spans become <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def cell_of(col: Column, cid: str) -> dict[str, Any]:
    if not col.ok:
        return {"status": "n/a", "reason": "engine unavailable (the column head says why)"}
    return col.cells.get(cid, {"status": "n/a", "reason": "not in the report"})


def _count(n: int) -> str:
    return f"{n} distinct problem{'s' if n != 1 else ''}"


def _problems(cell: dict[str, Any]) -> str:
    return f"({_count(cell['problems'])})"


def classes_text(col: Column) -> str:
    """The column's classes in words: claimed ones with their counts, then those not claimed
    with the programs not compared."""
    parts = []
    for cls, n in col.by_class.items():
        if n["claimed"]:
            parts.append(f"{cls}: {n['divergent_programs']} divergent, "
                         f"{_count(n['distinct_problems'])}")
        else:
            parts.append(f"{cls}: not claimed" + (f" ({n['not_applicable']} programs not "
                                                   f"compared)" if n["not_applicable"] else ""))
    return "; ".join(parts)


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
            if cell.get("problems"):
                text += f" {_problems(cell)}"
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
                   f"{col.divergent} divergent, {_count(col.problems)}; results in "
                   f"[{col.folder}/]({col.folder}/report.json)")
        if col.by_class:
            out.append(f"  - classes: {_md(classes_text(col))}")
        out += [f"  - {g['count']} x {g['primary'] or '-'} `{g['signature']}`: "
                f"[smallest program]({g['repro_engine']}) ({g['statements']} statements)"
                + (" (not judged: gradspec failed on these programs)"
                   if g.get("not_judged") else "") for g in col.groups[:20]]
        out += [f"  - capability {n}" for n in col.capability_notes]
        out += [f"  - stale expected failure, {s}" for s in col.stale]
        out += [f"  - {col.unjudged}"] if col.unjudged else []
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
                  f"divergent, {_count(col.problems)}<br><a href=\"" \
                  f"{e(col.folder)}/report.json\">report.json</a>"
            if col.by_class:
                sub += "".join(f"<br>{e(part)}" for part in classes_text(col).split("; "))
            sub += "".join(f"<br>capability {e(n)}" for n in col.capability_notes)
            sub += f"<br><b>{e(col.unjudged)}</b>" if col.unjudged else ""
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
            if cell.get("problems"):
                extra += f"<div class=\"small\">{e(_problems(cell))}</div>"
            if reason:
                extra += f"<div class=\"small\">{e(reason)}</div>"
            cls = "na" if status == "n/a" else status
            tds.append(f"<td class=\"{cls}\" title=\"{e(reason)}\">{label}{extra}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    stale = "".join(f"<li>{e(col.engine)}: stale expected failure, {e(s)}</li>"
                    for col in columns for s in col.stale)
    stale += "".join(f"<li>{e(col.engine)}: {g['count']} x {e(g['primary'] or '-')} "
                     f"<code>{e(g['signature'])}</code>: <a href=\"{e(g['repro_engine'])}\">"
                     f"smallest program</a> ({g['statements']} statements)"
                     + (" (not judged: gradspec failed on these programs)"
                        if g.get("not_judged") else "") + "</li>"
                     for col in columns for g in col.groups[:20])
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


__all__ = ["CSS", "Column", "STATES", "cell_of", "classes_text", "markdown", "page"]
