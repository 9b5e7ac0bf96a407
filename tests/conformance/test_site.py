"""`gradspec spec --html DIR` (conformance/reports/site.py): the spec as a static site.

The pages are parsed with the stdlib's html.parser: every internal link and picture resolves to
a page of the site and to an id on it, every clause has its anchor and class badge on its area
page and a row in the index with the reader's data, clause IDs named in text link to their
clauses, links between Markdown files point at the pages, and nothing is fetched from the
network. Then headless Chromium (found as tests/conformance/test_matrix.py finds it) loads every
page: the anchors the links need are in the DOM it renders, and screenshots of the index and
of an area page are of the window's size and not blank. The helpers here (`Page`, `parse`,
`chromium`, `assert_not_blank`) are shared with test_report_html.py.
"""
from __future__ import annotations

import html
import json
import re
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conformance.cli import main
from conformance.reports.site import DOCUMENTS, write_site
from conformance.spec.reader import AREA_FILES, load_spec, spec_dir
from tests.conformance.test_cli import in_process, one_line_error
from tests.conformance.test_matrix import CHROMIUM

NEEDS_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium installed "
                                    "(apt-get install chromium)")
WINDOW = (1200, 900)
MARKDOWN = "markdown-it-py (extra 'site') is not installed"
PAGES = ["index"] + [Path(n).stem for n in AREA_FILES] + [Path(d).stem for d, _ in DOCUMENTS]


class Page(HTMLParser):
    """What a page holds: ids, links (href, text), resource URLs (src, stylesheet, script),
    the text of its code blocks, and per element with an id, the classes of the elements
    inside it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[list[str]] = []        # [href, text]
        self.resources: list[str] = []
        self.scripts = 0
        self.blocks: list[str] = []             # the text of each code block (<pre>)
        self.inside: dict[str, list[str]] = {}  # id -> classes of elements within it
        self._open: list[tuple[str, str | None]] = []
        self._link: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        for _, eid in self._open:
            if eid and a.get("class"):
                self.inside[eid] += a["class"].split()
        if tag == "a" and "href" in a:
            self._link = [a["href"], ""]
            self.links.append(self._link)
        if tag == "script":
            self.scripts += 1
        if tag == "pre":
            self.blocks.append("")
        if tag in ("img", "script", "iframe") and a.get("src"):
            self.resources.append(a["src"])
        if tag == "link" and a.get("href"):
            self.resources.append(a["href"])
        if tag not in ("meta", "br", "img", "hr", "link", "input"):
            self._open.append((tag, a.get("id")))
            if a.get("id"):
                self.inside[a["id"]] = []

    def handle_endtag(self, tag):
        while self._open:
            if self._open.pop()[0] == tag:
                break
        if tag == "a":
            self._link = None

    def handle_data(self, data):
        if self._link is not None:
            self._link[1] += data
        if any(tag == "pre" for tag, _ in self._open):
            self.blocks[-1] += data


def parse(text: str) -> Page:
    p = Page()
    p.feed(text)
    p.close()
    return p


def chromium(*args: str) -> subprocess.CompletedProcess:
    """Headless Chromium with the flags test_matrix.py uses: no network of its own, a fresh
    profile."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--disable-background-networking", "--no-first-run",
                               "--disable-component-update", "--disable-sync",
                               f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)


def screenshot(page: Path, shot: Path, window: tuple[int, int] = WINDOW) -> Path:
    chromium(f"--window-size={window[0]},{window[1]}", f"--screenshot={shot}",
             page.resolve().as_uri())
    assert shot.exists(), f"Chromium wrote no screenshot of {page}"
    return shot


def assert_not_blank(shot: Path, window: tuple[int, int] = WINDOW) -> None:
    """A PNG of the window's size with many colours (text, tables, badges), not one colour."""
    image = pytest.importorskip("PIL.Image", reason="Pillow (extra 'test') is not installed")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with image.open(shot) as im:
        assert im.size == window
        colours = im.convert("RGB").getcolors(maxcolors=1 << 24)
    assert len(colours) > 100, f"{shot}: {len(colours)} colours, a blank page"
    assert max(n for n, _ in colours) < 0.98 * window[0] * window[1]


def dom(page: Path) -> str:
    r = chromium("--dump-dom", page.resolve().as_uri())
    assert r.returncode == 0 and "</html>" in r.stdout, r.stderr[-2000:]
    return r.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("markdown_it", reason=MARKDOWN)
    out = tmp_path_factory.mktemp("site")
    written = write_site(out, progress=False)
    assert [p.stem for p in written] == PAGES
    return out


@pytest.fixture(scope="module")
def pages(site) -> dict[str, Page]:
    return {name: parse((site / f"{name}.html").read_text(encoding="utf-8")) for name in PAGES}


def internal_links(pages: dict[str, Page]) -> list[tuple[str, str, str]]:
    """(page, file linked, anchor) of every link that is not to another site."""
    out = []
    for name, p in pages.items():
        for href, _ in p.links:
            url = urlparse(href)
            if url.scheme or url.netloc:
                continue
            out.append((name, unquote(url.path) or f"{name}.html", unquote(url.fragment)))
    return out


def test_every_internal_link_resolves_to_a_page_and_an_anchor(site, pages):
    links = internal_links(pages)
    spec = load_spec()
    assert len(links) > 3 * len(spec.clauses)      # the index alone links every clause
    broken = []
    for name, target, anchor in links:
        path = site / target
        if not path.is_file():
            broken.append(f"{name}.html -> {target} (no such file)")
        elif anchor and anchor not in pages[path.stem].ids:
            broken.append(f"{name}.html -> {target}#{anchor} (no such anchor)")
        elif anchor and path.suffix != ".html":
            broken.append(f"{name}.html -> {target}#{anchor} (anchor into a plain file)")
    assert not broken, "\n".join(broken)
    assert not [t for _, t, _ in links if t.endswith(".md")], "a link still to Markdown"


def test_pages_are_self_contained(site, pages):
    for name, p in pages.items():
        assert p.scripts == 0 and p.resources == [], name
        text = (site / f"{name}.html").read_text(encoding="utf-8")
        assert "<style>" in text and "@import" not in text and "url(" not in text, name
    copied = {t for _, t, _ in internal_links(pages) if not t.endswith(".html")}
    assert {"ids.json", "VERSION", "clauses.lock"} <= copied
    assert (site / "ids.json").read_bytes() == (spec_dir() / "ids.json").read_bytes()


def test_each_clause_has_its_anchor_class_badge_and_examples(site, pages):
    spec = load_spec()
    for c in spec.clauses.values():
        stem = Path(c.file).stem
        p, anchor = pages[stem], c.id.lower()
        assert anchor in p.ids, c.id
        assert f"class-{c.cls}" in p.inside[anchor], c.id
        for ex in c.examples:
            assert ex.code in p.blocks, ex.id
    meta = re.compile(r'<h2 id="(\w+-\d+)">')
    leaf = (site / "leaf.html").read_text(encoding="utf-8")
    assert meta.findall(leaf) == [c.id.lower() for c in spec.clauses.values() if c.area == "LEAF"]


def test_index_lists_every_clause_with_its_data(site):
    spec = load_spec()
    ids = json.loads((spec_dir() / "ids.json").read_text(encoding="utf-8"))["clauses"]
    text = (site / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr id="row-([a-z]+-\d+)">(.*?)</tr>', text)
    assert [r[0] for r in rows] == [cid.lower() for cid in spec.clauses]
    for rid, row in rows:
        cells = [re.sub(r"<[^>]+>", "", x) for x in re.findall(r"<td>(.*?)</td>", row)]
        c, entry = spec.get(rid), ids[rid.upper()]
        assert cells[0] == c.id and cells[2] == html.escape(spec.areas[c.area])
        assert cells[3:] == [c.status, entry["class"], c.verified, entry["since"],
                             entry["added"], entry["revised"] or "-"]
        assert f'href="{Path(c.file).stem}.html#{rid}"' in row


def test_clause_ids_in_text_link_to_their_clause(pages):
    spec = load_spec()
    named = [(name, href, text) for name, p in pages.items() for href, text in p.links
             if text in spec.clauses and name != "index"]
    assert len(named) > 100
    for name, href, text in named:
        stem = Path(spec.get(text).file).stem
        want = f"#{text.lower()}" if stem == name else f"{stem}.html#{text.lower()}"
        assert href == want, (name, href, text)
    # VER-7 is named in the text of LEAF and INPLACE clauses
    assert ["version.html#ver-7", "VER-7"] in pages["inplace"].links



def test_a_clause_heading_is_not_a_link(site):
    leaf = (site / "leaf.html").read_text(encoding="utf-8")
    assert re.search(r'<h2 id="leaf-1">LEAF-1<span class="badge class-core"', leaf)


def test_links_between_markdown_files_point_at_pages(pages):
    assert "the-tensor-a-setitem-writes" in pages["definitions"].ids
    assert any(h == "definitions.html#the-tensor-a-setitem-writes"
               for h, _ in pages["inplace"].links)
    readme = [h for h, _ in pages["README"].links]
    assert "index.html" in readme and "definitions.html" in readme and "CHANGES.html" in readme
    assert "conformance-classes" in pages["README"].ids


def test_spec_html_cli(tmp_path, capsys):
    pytest.importorskip("markdown_it", reason=MARKDOWN)
    out = tmp_path / "site"
    assert main(["spec", "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""          # no progress off a terminal
    assert "index.html" in captured.out and (out / "leaf.html").is_file()
    one_line_error(in_process(capsys, "spec"), "needs a clause ID")
    one_line_error(in_process(capsys, "spec", "LEAF-1", "--html", str(out)), "no clause ID")
    (tmp_path / "file").write_text("x")
    one_line_error(in_process(capsys, "spec", "--html", str(tmp_path / "file" / "sub")),
                   "cannot write the site")


def test_progress_only_when_asked_or_on_a_terminal(tmp_path, capsys):
    pytest.importorskip("markdown_it", reason=MARKDOWN)
    write_site(tmp_path / "a", progress=True)
    err = capsys.readouterr().err
    assert f"{len(PAGES)}/{len(PAGES)}" in err and "index.html" in err
    write_site(tmp_path / "b")          # stderr is not a terminal here
    assert capsys.readouterr().err == ""


def test_without_markdown_it_one_line(monkeypatch, capsys, tmp_path):
    import sys
    monkeypatch.setitem(sys.modules, "markdown_it", None)
    one_line_error(in_process(capsys, "spec", "--html", str(tmp_path)), "gradspec[site]")


@NEEDS_CHROMIUM
def test_chromium_renders_every_anchor_the_links_need(site, pages):
    needed: dict[str, set[str]] = {}
    for _, target, anchor in internal_links(pages):
        if target.endswith(".html") and anchor:
            needed.setdefault(Path(target).stem, set()).add(anchor)
    for name, anchors in needed.items():
        rendered = parse(dom(site / f"{name}.html"))
        assert not anchors - rendered.ids, (name, sorted(anchors - rendered.ids)[:5])
        assert len(rendered.links) == len(pages[name].links), name


@NEEDS_CHROMIUM
def test_chromium_dom_has_clause_anchor_and_class_badge(site):
    spec = load_spec()
    for stem, cid in (("leaf", "LEAF-5"), ("graph", "GRAPH-3")):
        rendered = parse(dom(site / f"{stem}.html"))
        assert cid.lower() in rendered.ids
        assert "badge" in rendered.inside[cid.lower()]
        assert f"class-{spec.get(cid).cls}" in rendered.inside[cid.lower()]


@NEEDS_CHROMIUM
def test_chromium_screenshots_are_not_blank(site, tmp_path):
    for name in ("index", "leaf"):
        assert_not_blank(screenshot(site / f"{name}.html", tmp_path / f"{name}.png"))
