"""report.html beside report.json: a run's report for a browser.

What it shows, from report.json's data and the run's folders: the run (engines, versions,
spec, seed, verdict), a summary per conformance class (`classes`, `by_class`), the clause
statuses, and one section per problem (`groups`: divergent programs grouped by signature and
primary clause) with its smallest program: the first divergence, links to the folder, the
program and both repro scripts (the engine's inline as well), both traces side by side (a table
per statement: source, oracle, engine, the divergent statements marked; traces.txt where the
folder has no divergence.json to build it from), and the backward graph pictures
(graph-oracle.svg, graph-engine.svg) where the folder has them. Then every divergent program,
and the crashes, timeouts, oracle failures, expected failures and programs not compared.

The page is self-contained (inline style, no script, nothing fetched) apart from relative
links and pictures into the run folder, so the folder can be moved or archived whole. Writing
it never makes a run fail: `write_safely` turns any failure into one line on stderr.
"""
from __future__ import annotations

import html
import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..judge.compare import outcome
from ..lang.program import Program
from ..lang.trace import Event
from .render import statement

PICTURES = ("graph-oracle", "graph-engine")
MAX_INLINE = 20_000     # characters of a repro script shown inline; longer ones are linked
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;
 margin:16px 28px;background:#fff}
h1{border-bottom:1px solid #d0d7de;padding-bottom:6px}h2{margin-top:32px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d0d7de;padding:3px 8px;
 text-align:left;vertical-align:top}th{background:#f3f5f8}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px;overflow:auto}
.problem{border:1px solid #d0d7de;border-radius:8px;padding:4px 16px 12px;margin:16px 0}
.badge{display:inline-block;font-size:12px;font-weight:600;padding:1px 8px;border-radius:10px;
 color:#fff;background:#6e7781;white-space:nowrap}
.class-core{background:#0969da}.class-torch-observable{background:#8250df}
.class-diagnostics{background:#bf8700}
.verdict-0{color:#1a7f37}.verdict-1{color:#cf222e}.verdict-3,.verdict-130{color:#9a6700}
tr.diverges td{background:#ffebe9}td.mark{color:#cf222e;font-weight:700}
.pictures{display:flex;gap:16px;flex-wrap:wrap}.pictures figure{margin:0;flex:1 1 420px}
.pictures img{max-width:100%;border:1px solid #d0d7de;background:#fff}
"""
VERDICTS = {0: "judged: no divergence", 1: "divergences", 3: "could not judge",
            130: "interrupted: incomplete"}


def _e(x: Any) -> str:
    return html.escape(str(x))


class _Folder:
    """Where the run's files are now (`here`: report.json's folder, which may still be the
    staging folder) and where their recorded paths say (`recorded`: report.json's `folder`):
    a recorded path as a relative link, and the file it names read from where it is now."""

    def __init__(self, here: Path, recorded: str):
        self.here, self.recorded = here, recorded or str(here)

    def rel(self, path: str) -> str | None:
        if not path:
            return None
        rel = Path(os.path.relpath(path, self.recorded)).as_posix()
        return None if rel.startswith("../") or rel == ".." else rel

    def file(self, rel: str) -> Path:
        return self.here / rel

    def link(self, path: str, text: str | None = None) -> str:
        rel = self.rel(path)
        label = _e(text if text is not None else (rel or path))
        return f'<a href="{quote(rel)}">{label}</a>' if rel else label


def _badge(cls: str | None) -> str:
    return f'<span class="badge class-{_e(cls)}">{_e(cls)}</span>' if cls else ""


def _table(head: list[str] | None, rows: list[list[str]], cls: str = "") -> str:
    """A table of cells given as HTML; `head`: the column names (text), or None for none."""
    out = [f'<table class="{cls}">' if cls else "<table>"]
    if head:
        out.append("<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead>")
    out.append("<tbody>")
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows]
    return "".join(out) + "</tbody></table>"


def run_section(d: dict[str, Any]) -> str:
    code = d.get("exit_code")
    rows = [["engine", _e(f"{d['engine']} {d['engine_version']} ({d['device']})")],
            ["oracle", _e(f"{d['oracle']} {d['oracle_version']}")],
            ["spec", _e(d["spec_version"])],
            ["programs", _e(f"{d['programs']} of {d['count']} (seed {d['seed']}, size "
                            f"{d['size']}, {d['seconds']} s)")],
            ["verdict", f'<b class="verdict-{_e(code)}">exit {_e(code)}: '
                        f'{_e(VERDICTS.get(code, "?"))}</b>'
                        + (f" ({_e(d['unjudged'])})" if d.get("unjudged") else "")],
            ["counts", _e(f"{d['divergent_programs']} divergent programs, "
                          f"{d.get('not_judged_programs', 0)} not judged, "
                          f"{d['distinct_problems']} distinct problems, "
                          f"{d['crashed_programs']} crashed, {d['timed_out_programs']} timed "
                          f"out, {len(d['oracle_failures'])} oracle failures")]]
    states = [r.get("status") for r in d.get("clauses", {}).values()]
    if any(states):
        rows.append(["clauses", _e(", ".join(f"{states.count(k)} {k}" for k in
                                             ("pass", "diverges", "xfail", "n/a")))])
    return _table(None, rows, "run")


def class_section(d: dict[str, Any]) -> str:
    """One row per conformance class: claimed, and the programs counted in it."""
    rows = []
    for cls, c in d.get("by_class", {}).items():
        rows.append([_badge(cls), "yes" if c.get("claimed") else "no (not compared)",
                     _e(c.get("divergent_programs", 0)), _e(c.get("distinct_problems", 0)),
                     _e(c.get("expected_failures", 0)), _e(c.get("not_applicable", 0))])
    claimed = ", ".join(d.get("classes", [])) or "none"
    return (f'<h2 id="classes">Conformance classes</h2><p>The engine is judged on: '
            f"{_e(claimed)}.</p>"
            + _table(["class", "claimed", "divergent programs", "distinct problems",
                      "expected failures", "not applicable"], rows, "classes"))


def _cell(ev: dict[str, Any] | None) -> str:
    if ev is None:
        return "-"
    e = Event.from_json(ev)
    text = outcome(e)
    if "value" in ev and e.status == "ok":
        text = json.dumps(e.value)
    if e.warnings:
        text += f" warns {','.join(e.warnings)}"
    if e.hooks:
        text += " hooks " + " ".join(f"{h[0]}={json.dumps(h[1])}" for h in e.hooks)
    return f"<code>{_e(text)}</code>"


def traces_table(folder: Path) -> str:
    """Both traces side by side, from the folder's program.json and divergence.json."""
    program = Program.loads((folder / "program.json").read_bytes())
    data = json.loads((folder / "divergence.json").read_text(encoding="utf-8"))
    traces = [data.get("oracle_trace"), data.get("engine_trace")]
    events = [{e["path"]: e for e in t["events"]} if t else {} for t in traces]
    names = [f"{t['engine']} {t['version']}" if t else "-" for t in traces]
    bad = {x.get("path") for x in data.get("divergences", [])}
    rows = []
    for path, s in program.walk():
        src = "    " * path.count(".") + statement(s, path)[0]
        mark = "!!" if path in bad else ""
        rows.append(f'<tr class="{"diverges" if mark else ""}"><td class="mark">{mark}</td>'
                    f"<td>{_e(path)}</td><td><code>{_e(src)}</code></td>"
                    f"<td>{_cell(events[0].get(path))}</td><td>{_cell(events[1].get(path))}"
                    "</td></tr>")
    head = "".join(f"<th>{_e(h)}</th>" for h in
                   ("", "path", "statement", f"oracle {names[0]}", f"engine {names[1]}"))
    return (f'<table class="traces"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _traces(where: _Folder, rel: str) -> str:
    folder = where.file(rel)
    if (folder / "divergence.json").is_file() and (folder / "program.json").is_file():
        return traces_table(folder)
    if (folder / "traces.txt").is_file():
        return f"<pre>{_e((folder / 'traces.txt').read_text(encoding='utf-8'))}</pre>"
    return "<p>(no traces recorded)</p>"


def _pictures(where: _Folder, rel: str) -> str:
    figures = []
    for stem, role in zip(PICTURES, ("oracle", "engine"), strict=True):
        if where.file(f"{rel}/{stem}.svg").is_file():
            figures.append(f'<figure><img src="{quote(rel)}/{stem}.svg" alt="the backward '
                           f'graph on the {role}"><figcaption>{role}: {stem}.svg</figcaption>'
                           "</figure>")
        elif where.file(f"{rel}/{stem}.dot").is_file():
            figures.append(f'<figure><a href="{quote(rel)}/{stem}.dot">{stem}.dot</a> '
                           "(DOT text: Graphviz's dot was not installed)</figure>")
    notes = where.file(f"{rel}/notes.txt")
    note = f"<pre>{_e(notes.read_text(encoding='utf-8'))}</pre>" if notes.is_file() else ""
    if not figures:
        return note
    return f'<div class="pictures">{"".join(figures)}</div>{note}'


def _repro(where: _Folder, entry: dict[str, Any]) -> str:
    links = [where.link(entry[k], Path(entry[k]).name)
             for k in ("program", "repro_torch", "repro_engine") if entry.get(k)]
    out = "<p>Files: " + ", ".join(links) + "</p>" if links else ""
    rel = where.rel(entry.get("repro_engine", ""))
    if rel and where.file(rel).is_file():
        text = where.file(rel).read_text(encoding="utf-8")
        if len(text) <= MAX_INLINE:
            out += (f"<details><summary>{_e(Path(rel).name)}</summary><pre>{_e(text)}</pre>"
                    "</details>")
    return out


def problem_section(n: int, g: dict[str, Any], entry: dict[str, Any], where: _Folder) -> str:
    """One problem: its signature, its smallest program's divergence, repro, traces and
    pictures."""
    rel = where.rel(g.get("folder", ""))
    head = (f'<div class="problem" id="problem-{n}"><h3>{_e(g["count"])} &times; '
            f'[{_e(g.get("primary") or "-")}] <code>{_e(g["signature"])}</code> '
            f'{_badge(g.get("class"))}'
            + (" (not judged: gradspec failed on these programs)" if g.get("not_judged") else "")
            + f'</h3><p>Smallest program: #{_e(g["smallest"])} '
            f'(seed {_e(g["program_seed"])}, {_e(g["statements"])} statements), in '
            f'{where.link(g.get("folder", ""))}; programs '
            f'{_e(", ".join(f"#{i}" for i in g.get("programs", [])))}.</p>'
            f'<pre>{_e(entry.get("first", g.get("first", "")))}</pre>')
    body = _repro(where, entry)
    if rel and where.file(rel).is_dir():
        body += "<h4>Traces</h4>" + _traces(where, rel)
        body += "<h4>The backward graph</h4>" + (_pictures(where, rel) or "<p>(none)</p>")
    return head + body + "</div>"


def _problem_or_note(n: int, g: dict[str, Any], entry: dict[str, Any], where: _Folder) -> str:
    """problem_section; a folder it cannot read is a line in the page, not a page lost."""
    try:
        return problem_section(n, g, entry, where)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return (f'<div class="problem" id="problem-{n}"><p>{_e(g.get("signature", "?"))}: '
                f"not shown: {_e(type(exc).__name__)}: {_e(exc)}</p></div>")


def _entry_row(x: dict[str, Any], where: _Folder, extra: str | None) -> list[str]:
    """A program of a list: index, primary clauses, signature, class, its first divergence
    (first line) or the `extra` field, and its folder."""
    first = str(x.get("first", x.get("detail", ""))).splitlines() or [""]
    said = _e(str(x.get(extra, ""))) if extra else f"<code>{_e(first[0])}</code>"
    return [_e(f"#{x.get('index', '?')}"), _e(", ".join(x.get("primary", [])) or "-"),
            f"<code>{_e(x.get('signature', x.get('what', '')))}</code>",
            _badge(x.get("class")), said,
            where.link(x["folder"], "folder") if x.get("folder") else "-"]


def _entries(title: str, anchor: str, entries: list[dict[str, Any]], where: _Folder,
             extra: str | None = None) -> str:
    if not entries:
        return ""
    return (f'<h2 id="{anchor}">{_e(title)} ({len(entries)})</h2>'
            + _table(["program", "primary", "signature", "class",
                      extra or "first divergence", ""],
                     [_entry_row(x, where, extra) for x in entries]))


def render_report(data: dict[str, Any], here: str | Path) -> str:
    """The text of report.html for report.json's `data`; `here`: the folder it is written
    into, where the divergence folders are now."""
    where = _Folder(Path(here), data.get("folder", ""))
    by_index = {x["index"]: x for x in data.get("divergences", [])}
    groups = data.get("groups", [])
    problems = "".join(_problem_or_note(n, g, by_index.get(g["smallest"], g), where)
                       for n, g in enumerate(groups, 1))
    title = (f"gradspec report: {data['engine']} vs {data['oracle']}, "
             f"{data['divergent_programs']} divergent")
    body = [f"<h1>{_e(title)}</h1>", run_section(data), class_section(data),
            f'<h2 id="problems">Problems ({data.get("distinct_problems", len(groups))}'
            + (f", and {len(groups) - data['distinct_problems']} group(s) not judged"
               if len(groups) > data.get("distinct_problems", len(groups)) else "")
            + ")</h2>",
            problems or "<p>No divergence.</p>",
            _entries("Divergent programs", "divergences", data.get("divergences", []), where),
            _entries("Crashes", "crashes", data.get("crashes", []), where),
            _entries("Timeouts", "timeouts", data.get("timeouts", []), where),
            _entries("Oracle failures", "oracle-failures", data.get("oracle_failures", []),
                     where),
            _entries("Expected failures", "expected", data.get("expected_failures", []),
                     where),
            _entries("Not applicable", "not-applicable", data.get("not_applicable", []),
                     where, "not_applicable"),
            '<p>The data: <a href="report.json">report.json</a>.</p>']
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def write_report_html(data: dict[str, Any], here: str | Path) -> Path:
    path = Path(here) / "report.html"
    path.write_text(render_report(data, here), encoding="utf-8")
    return path


def write_safely(data: dict[str, Any], here: str | Path) -> Path | None:
    """write_report_html, whose failure is one line on stderr and never the run's."""
    try:
        return write_report_html(data, here)
    except Exception as exc:  # noqa: BLE001 - a page must never fail the run
        first = (str(exc).splitlines() or [""])[0]
        print(f"gradspec: report.html not written: {type(exc).__name__}: {first}",
              file=sys.stderr)
        return None
