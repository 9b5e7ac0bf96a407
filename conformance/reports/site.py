"""The spec as a static site: `gradspec spec --html DIR`.

One page per area file (spec/reader.py's AREA_FILES: leaf.md becomes leaf.html), index.html
(every clause with its area, status, class, since, added and revised, from the reader's
Clause records), and definitions.html, errors.html, CHANGES.html and README.html (how the spec
is written). Pages are self-contained: the stylesheet is inline, there is no script and
nothing is fetched from the network; the plain files the spec links to (ids.json,
clauses.lock, VERSION) are copied beside the pages so that those links resolve too.

Markdown is rendered by markdown-it-py (the optional extra `site`), a CommonMark parser, with
its table rule. Three small rules of our own run over its token stream, because they are about
the spec's conventions, which no Markdown library knows:

- every heading gets the id GitHub gives it (lowercase, punctuation dropped, spaces as
  hyphens), so `## LEAF-5` is `#leaf-5` here as on GitHub, and `definitions.md#the-tensor-a-
  setitem-writes` still finds its heading;
- a clause ID named in text (VER-7) links to its clause (`version.html#ver-7`, `#ver-7` on its
  own page); only IDs the spec has, so "UTF-8" stays text; never inside a link, a code span or
  a clause's own heading;
- links to other Markdown files of the spec (`inplace.md#inplace-4`) point at their pages.

A clause's heading carries a badge with its class (and its status when withdrawn); its
metadata row (status, class, verified, since, added, revised, requires) and its examples are
the Markdown's own table and code blocks.
"""
from __future__ import annotations

import html
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any

from ..spec.reader import AREA_FILES, Clause, Spec, SpecError, load_spec, spec_dir
from .progress import Bar

# The pages besides the areas and the index: (Markdown file, the label the navigation gives it).
DOCUMENTS = (("definitions.md", "Definitions"), ("errors.md", "Error kinds"),
             ("CHANGES.md", "Changes"), ("README.md", "How the spec is written"))
INSTALL = "pip install 'gradspec[site]'"
_MD_LINK = re.compile(r"^(?P<stem>[A-Za-z0-9_.-]+)\.md(?P<anchor>#.*)?$")
_CLAUSE_ID = re.compile(r"\b[A-Z]+-[0-9]+\b")
_CLAUSE_HEADING = re.compile(r"^[A-Z]+-[0-9]+$")

STYLE = """
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;
 background:#fff;display:flex}
nav{width:220px;flex:none;background:#f3f5f8;border-right:1px solid #d0d7de;padding:16px;
 min-height:100vh;box-sizing:border-box}
nav h2{font-size:15px;margin:0 0 8px}nav ul{list-style:none;padding:0;margin:0 0 16px}
nav li{margin:2px 0}nav a{color:#0550ae;text-decoration:none}nav a.here{font-weight:700}
main{padding:16px 32px;max-width:980px;min-width:0}
a{color:#0550ae}h1{border-bottom:1px solid #d0d7de;padding-bottom:6px}
h2{margin-top:36px;border-bottom:1px solid #eaeef2;padding-bottom:4px}
code{background:#eff1f3;padding:1px 4px;border-radius:4px;font-size:90%}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:10px;overflow:auto}
pre code{background:none;padding:0}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d0d7de;padding:3px 8px;
 text-align:left;vertical-align:top}th{background:#f3f5f8}
.badge{display:inline-block;font-size:12px;font-weight:600;padding:1px 8px;border-radius:10px;
 margin-left:8px;vertical-align:middle;color:#fff;white-space:nowrap}
#clauses td:first-child,a.clause{white-space:nowrap}
.class-core{background:#0969da}.class-torch-observable{background:#8250df}
.class-diagnostics{background:#bf8700}.status-withdrawn{background:#6e7781}
.permalink{margin-left:6px;font-size:70%;color:#8c959f;text-decoration:none}
"""


def _slug(text: str) -> str:
    """The id GitHub gives a heading: lowercase, only letters, digits, '-' and '_', spaces as
    hyphens (github-slugger's rule, which the spec's links were written against)."""
    text = unicodedata.normalize("NFKC", text).strip().lower()
    kept = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _plain(inline: Any) -> str:
    """The text of an inline token, markup dropped (what a heading's slug is made from)."""
    return "".join(t.content for t in inline.children or []
                   if t.type in ("text", "code_inline"))


def _clause_href(cid: str, env: dict[str, Any]) -> str:
    page = Path(env["clauses"][cid].file).stem
    return f"#{cid.lower()}" if page == env["page"] else f"{page}.html#{cid.lower()}"


def _heading_ids(state: Any) -> None:
    """Core rule: GitHub's ids on headings (a repeated slug gets -1, -2, as on GitHub); a
    clause heading is marked for its badge."""
    seen: dict[str, int] = {}
    tokens, clauses = state.tokens, state.env.get("clauses", {})
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open":
            continue
        text = _plain(tokens[i + 1])
        base = _slug(text)
        n = seen.get(base, 0)
        seen[base] = n + 1
        tok.attrs["id"] = base if n == 0 else f"{base}-{n}"
        if _CLAUSE_HEADING.match(text) and text in clauses:
            tokens[i + 1].meta["clause_heading"] = True
            tokens[i + 2].meta["clause"] = text


def _link_token(href: str, text: str) -> list[Any]:
    from markdown_it.token import Token
    return [Token("link_open", "a", 1, attrs={"href": href, "class": "clause"}),
            Token("text", "", 0, content=text), Token("link_close", "a", -1)]


def _linked_text(tok: Any, env: dict[str, Any]) -> list[Any]:
    """A text token split so that each clause ID the spec has becomes a link to it."""
    from markdown_it.token import Token
    out, pos = [], 0
    for m in _CLAUSE_ID.finditer(tok.content):
        if m.group() not in env["clauses"]:
            continue
        if m.start() > pos:
            out.append(Token("text", "", 0, content=tok.content[pos:m.start()]))
        out += _link_token(_clause_href(m.group(), env), m.group())
        pos = m.end()
    if not out:
        return [tok]
    if pos < len(tok.content):
        out.append(Token("text", "", 0, content=tok.content[pos:]))
    return out


def _page_href(href: str, env: dict[str, Any]) -> str:
    """A link to a Markdown file of the spec as one to its page; other relative links are to
    plain files of the spec folder, copied beside the pages (env["assets"])."""
    m = _MD_LINK.match(href)
    if m:
        stem = m["stem"]
        if stem in env["pages"]:
            return f"{stem}.html{m['anchor'] or ''}"
        return href
    if href and not re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", href):
        env["assets"].add(href.split("#")[0])
    return href


def _links(state: Any) -> None:
    """Core rule: clause IDs in text become links; links to the spec's Markdown files point
    at their pages. Text rendered without a page (`renderInline`) is left as it is."""
    if "page" not in state.env:
        return
    for tok in state.tokens:
        if tok.type != "inline" or tok.meta.get("clause_heading"):
            continue
        children, depth = [], 0
        for child in tok.children or []:
            if child.type == "link_open":
                depth += 1
                child.attrs["href"] = _page_href(str(child.attrs.get("href", "")), state.env)
            elif child.type == "link_close":
                depth -= 1
            if child.type == "text" and depth == 0:
                children += _linked_text(child, state.env)
            else:
                children.append(child)
        tok.children = children


def _badges(c: Clause) -> str:
    out = f'<span class="badge class-{c.cls}" title="conformance class">{c.cls}</span>'
    if c.status != "active":
        out += f'<span class="badge status-{c.status}">{c.status}</span>'
    return out


def _heading_close(self: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
    """A clause heading ends with its badges and a permalink to its anchor."""
    cid = tokens[idx].meta.get("clause")
    if not cid:
        return self.renderToken(tokens, idx, options, env)
    c = env["clauses"][cid]
    return (f'{_badges(c)}<a class="permalink" href="#{cid.lower()}" '
            f'title="link to {cid}">&#182;</a></{tokens[idx].tag}>\n')


def markdown() -> Any:
    """The Markdown renderer the site uses; SpecError (one line) without markdown-it-py."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        raise SpecError(f"gradspec spec --html needs markdown-it-py: {INSTALL}") from None
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.core.ruler.push("gradspec_heading_ids", _heading_ids)
    md.core.ruler.push("gradspec_links", _links)
    md.add_render_rule("heading_close", _heading_close)
    return md


def _nav(spec: Spec, here: str, md: Any) -> str:
    def item(stem: str, label: str) -> str:
        cls = ' class="here"' if stem == here else ""
        return f'<li><a{cls} href="{stem}.html">{md.renderInline(label)}</a></li>'
    areas = {}
    for c in spec.clauses.values():
        areas.setdefault(Path(c.file).stem, spec.areas[c.area])
    return ("<nav><h2>gradspec spec " + html.escape(spec.version) + "</h2><ul>"
            + item("index", "Clause index")
            + "".join(item(Path(d).stem, label) for d, label in DOCUMENTS)
            + "</ul><h2>Areas</h2><ul>"
            + "".join(item(stem, title) for stem, title in areas.items()) + "</ul></nav>")


def page(spec: Spec, md: Any, here: str, title: str, body: str) -> str:
    """A whole page: the navigation, then `body`; inline style, no script."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)} - gradspec spec {html.escape(spec.version)}</title>"
            f"<style>{STYLE}</style></head>\n<body>{_nav(spec, here, md)}\n<main>\n{body}\n"
            "</main></body></html>\n")


def index_body(spec: Spec, md: Any) -> str:
    """Every clause: ID (a link to its anchor), title, area, status, class, verified, since,
    added and revised."""
    head = ("<h1>Clause index</h1>\n<p>Spec version " + html.escape(spec.version) + ", "
            f"{len(spec.clauses)} clauses. Each ID links to its clause; "
            '<a href="README.html#conformance-classes">conformance classes</a> are explained '
            'in <a href="README.html">how the spec is written</a>.</p>\n')
    cols = ("ID", "title", "area", "status", "class", "verified", "since", "added", "revised")
    rows = ["<table id=\"clauses\"><thead><tr>" + "".join(f"<th>{c}</th>" for c in cols)
            + "</tr></thead><tbody>"]
    for c in spec.clauses.values():
        href = f"{Path(c.file).stem}.html#{c.id.lower()}"
        cells = (f'<a href="{href}">{c.id}</a>', md.renderInline(c.title),
                 html.escape(spec.areas[c.area]), html.escape(c.status),
                 f'<span class="badge class-{c.cls}">{c.cls}</span>',
                 html.escape(c.verified), html.escape(c.since), html.escape(c.added or "-"),
                 html.escape(c.revised or "-"))
        rows.append(f'<tr id="row-{c.id.lower()}">' + "".join(f"<td>{x}</td>" for x in cells)
                    + "</tr>")
    return head + "\n".join(rows) + "</tbody></table>"


def _title(text: str, fallback: str) -> str:
    m = re.search(r"^# (.+)$", text, re.M)
    return m.group(1).replace("`", "").strip() if m else fallback


def pages_of(spec: Spec, folder: Path) -> list[tuple[str, str, str]]:
    """(page stem, title, Markdown text) of every page rendered from a Markdown file."""
    out = []
    for name in AREA_FILES + tuple(d for d, _ in DOCUMENTS):
        text = (folder / name).read_text(encoding="utf-8")
        out.append((Path(name).stem, _title(text, name), text))
    return out


def write_site(out: str | Path, directory: str | Path | None = None,
               progress: bool | None = None) -> list[Path]:
    """Write the site into `out` (created); return the pages written, index.html first.
    `directory`: the spec folder (default: the one the reader uses). `progress`: a line per
    page on stderr; by default only when stderr is a terminal. A folder that cannot be
    written is a SpecError (one line)."""
    folder = Path(directory) if directory else spec_dir()
    spec = load_spec(str(folder) if directory else None)
    md = markdown()
    sources = pages_of(spec, folder)
    bar = Bar(len(sources) + 1, "pages", "site", progress)
    env_base = {"clauses": spec.clauses, "pages": {s for s, _, _ in sources} | {"index"},
                "assets": set()}
    out = Path(out)
    rendered = [("index", page(spec, md, "index", "Clause index", index_body(spec, md)))]
    for n, (stem, title, text) in enumerate(sources, 1):
        bar.to(n, f"{stem}.html")
        env = dict(env_base, page=stem)
        rendered.append((stem, page(spec, md, stem, title, md.render(text, env))))
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for stem, text in rendered:
            (out / f"{stem}.html").write_text(text, encoding="utf-8")
            written.append(out / f"{stem}.html")
        for asset in sorted(env_base["assets"]):
            src = folder / asset
            if src.is_file() and ".." not in Path(asset).parts:
                (out / asset).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, out / asset)
    except OSError as exc:
        bar.close()
        raise SpecError(f"cannot write the site to {out}: {exc.strerror or exc}") from None
    bar.to(len(sources) + 1, "index.html")
    bar.close()
    return written
