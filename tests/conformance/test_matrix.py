"""`gradspec matrix`: the HTML page is parsed and its
structure and links checked, the Markdown table too; an engine that cannot load gets a column of
n/a with the reason, a name that is no engine is refused before any runs. The page is also
rendered in headless Chromium when one is installed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conformance.cli import main
from conformance.matrix import STATES, run_matrix
from conformance.specdoc import load_spec
from tests.conformance.test_executor import MOD, source

VOID = {"meta", "br", "img", "hr", "link", "input"}      # elements without an end tag
ENGINES = ["torch", f"{MOD}:no_leaf_check", "no-such-engine"]
HERE = "tests.conformance.test_matrix"


class Table(HTMLParser):
    """Rows of the page's table: per cell, its tag, class, text and links."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[dict]] = []
        self.cell: dict | None = None
        self.tags: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag not in VOID:
            self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th") and self.rows:
            self.cell = {"tag": tag, "class": a.get("class"), "text": "", "links": []}
            self.rows[-1].append(self.cell)
        elif tag == "a":
            self.links.append(a["href"])
            if self.cell is not None:
                self.cell["links"].append(a["href"])

    def handle_endtag(self, tag):
        assert self.tags and self.tags[-1] == tag, f"</{tag}> closes <{self.tags[-1:]}>"
        self.tags.pop()
        if tag in ("td", "th"):
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    out = tmp_path_factory.mktemp("matrix")
    columns = run_matrix(ENGINES, "torch", out, count=6, source=source, probe=False)
    return out, columns


def _target(out: Path, href: str) -> Path:
    url = urlparse(href)
    assert url.scheme in ("", "file") and not url.netloc, href   # self-contained: no network
    return Path(unquote(url.path)) if url.scheme == "file" else out / unquote(url.path)


def test_the_html_page_is_well_formed_and_complete(matrix):
    out, columns = matrix
    text = (out / "matrix.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text
    page = Table()
    page.feed(text)
    page.close()
    assert page.tags == []                                  # every element closed
    head, *body = page.rows
    assert [c["text"].split("\n")[0] for c in head][:1] == ["clause"]
    assert [c["text"] for c in head[1:]][0].startswith("torch")
    spec = load_spec()
    assert [r[0]["text"].split()[0] for r in body] == [c.id for c in spec.active()]
    for row in body:
        cid = row[0]["text"].split()[0]
        clause = spec.clauses[cid]
        assert row[0]["links"] == [row[0]["links"][0]]
        link = row[0]["links"][0]
        assert link.endswith(f"spec/{clause.file}#{cid.lower()}"), link
        assert len(row) == 1 + len(ENGINES)
        for cell in row[1:]:
            status = cell["class"].replace("na", "n/a")
            assert status in STATES and cell["text"].startswith(status)
            if status in ("pass", "diverges", "xfail"):
                assert len(cell["links"]) >= 2, (cid, cell)   # repro and clause text
            assert any(h.endswith(f"#{cid.lower()}") for h in cell["links"])
    for href in page.links:
        assert _target(out, href.split("#")[0]).exists(), href


def test_cells_say_what_happened(matrix):
    out, columns = matrix
    torch_col, broken, missing = columns
    assert torch_col.ok and torch_col.divergent == 0
    assert {c["status"] for c in torch_col.cells.values()} <= {"pass", "n/a"}
    assert torch_col.cells["LEAF-1"]["status"] == "pass"
    assert broken.cells["INPLACE-1"]["status"] == "diverges"
    # one problem (LEAF_INPLACE not raised) in every divergent program, counted once
    assert broken.divergent >= 2 and broken.problems == len(broken.groups) == 1
    assert broken.cells["INPLACE-1"]["problems"] == 1
    assert broken.groups[0]["primary"] == "INPLACE-1" and broken.groups[0]["count"] == \
        broken.divergent and (out / broken.groups[0]["repro_engine"]).exists()
    assert sum(c["status"] == "diverges" for c in broken.cells.values()) == 1
    repro = out / broken.cells["INPLACE-1"]["repro"]
    assert repro.exists() and repro.name.startswith("repro_")
    for cid, cell in torch_col.cells.items():
        if cell["status"] == "n/a":
            assert cell["reason"], cid
        if cell["status"] == "pass":
            assert cell["programs"] > 0 and (out / cell["repro"]).exists()
    assert not missing.ok and "unknown engine 'no-such-engine'" in missing.reason
    text = (out / "matrix.html").read_text()
    assert text.count("<div class=\"small\">engine unavailable (the column head says why)") \
        == len(load_spec().active())
    assert text.count("unavailable: unknown engine &#x27;no-such-engine&#x27;") == 1


def test_pass_repros_run(matrix):
    out, columns = matrix
    script = out / columns[0].cells["LEAF-1"]["repro"]
    run = subprocess.run([os.sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr


def test_the_markdown_table(matrix):
    out, _ = matrix
    lines = (out / "matrix.md").read_text().splitlines()
    table = [ln for ln in lines if ln.startswith("|")]
    n = len(load_spec().active())
    assert len(table) == n + 2
    assert all(ln.count(" | ") == len(ENGINES) for ln in table[2:])
    assert "[LEAF-1](" in table[2 + [c.id for c in load_spec().active()].index("LEAF-1")]
    assert any("[diverges](" in ln for ln in table)
    assert any("n/a (engine unavailable" in ln for ln in table)
    assert any("could not run: unknown engine 'no-such-engine'" in ln for ln in lines)
    assert any("divergent, 1 distinct problem;" in ln for ln in lines)
    assert any("x INPLACE-1 `inplace/outcome/LEAF_INPLACE/ok`: [smallest program](" in ln
               for ln in lines)
    assert "(1 distinct problem)" in next(ln for ln in table if "[INPLACE-1](" in ln)
    data = json.loads((out / "matrix.json").read_text())
    assert [e["engine"] for e in data["engines"]] == ENGINES


def unloadable(device: str = "cpu"):
    """An engine named right whose package is not installed: its factory fails."""
    raise ImportError("No module named 'mytorch'")


def test_the_command(tmp_path, capsys):
    code = main(["matrix", "--engines", f"torch,{HERE}:unloadable", "--count", "2",
                 "--size", "8", "--quiet", "--out", str(tmp_path),
                 "--spec-url", "https://example.org/spec/"])
    out = capsys.readouterr().out
    assert code == 3 and (tmp_path / "matrix.html").exists()    # unloadable: not judged
    assert "[LEAF-1](https://example.org/spec/leaf.md#leaf-1)" in \
        (tmp_path / "matrix.md").read_text()
    assert "unloadable" in out and "unavailable" in out and "mytorch" in out and "pass" in out
    assert main(["matrix", "--engines", ",", "--out", str(tmp_path)]) == 2
    assert main(["matrix", "--engines", "torch", "--oracle", "nope", "--out",
                 str(tmp_path)]) == 2
    assert "gradspec: error: oracle: unknown engine" in capsys.readouterr().err


CHROMIUM = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(b)), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium installed")
def test_headless_chromium_renders_the_page(matrix):
    out, _ = matrix
    shot = out / "matrix.png"
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-background-networking", "--no-first-run",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", "--window-size=1200,900",
                        f"--screenshot={shot}", (out / "matrix.html").resolve().as_uri()],
                       capture_output=True, timeout=120)
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000       # a rendered table, not a blank page


def test_engines_all_names_every_builtin_and_entry_point_engine(monkeypatch, tmp_path, capsys):
    from conformance.campaign import matrix as matrix_module
    from conformance.engines import builtin_names, entry_points, every_engine_name
    names = every_engine_name()
    assert names[:len(builtin_names())] == builtin_names()
    assert {ep.name for ep in entry_points()} <= set(names)
    assert len(names) == len(set(names))
    seen = {}

    def fake(engines, *args, **kwargs):
        seen["engines"] = engines
        return []
    monkeypatch.setattr(matrix_module, "run_matrix", fake)
    assert main(["matrix", "--engines", "all", "--quiet", "--out", str(tmp_path)]) == 0
    assert seen["engines"] == names
    assert main(["matrix", "--engines", "all,torch", "--out", str(tmp_path)]) == 2
    assert "--engines all names every engine: give it alone" in capsys.readouterr().err


@pytest.mark.parametrize("bad,words", [
    ("refimpll", "unknown engine 'refimpll'"),
    ("tests.conformance.no_such_module:engine", "cannot import tests.conformance.no_such_"),
    (f"{HERE}:no_such_factory", "has no attribute 'no_such_factory'"),
])
def test_a_name_that_is_no_engine_is_refused_before_any_runs(tmp_path, capsys, monkeypatch,
                                                              bad, words):
    """A mistyped engine, wherever it stands in the list, is one line and exit 2 before the
    first engine runs: no campaign starts and nothing is written."""
    from conformance.campaign import matrix as matrix_module
    ran = []
    monkeypatch.setattr(matrix_module, "run_campaign", lambda *a, **k: ran.append(a[0]))
    out = tmp_path / "m"
    assert main(["matrix", "--engines", f"torch,{bad},refimpl", "--count", "2", "--quiet",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gradspec: error: --engines: ")
    assert words in err and ran == [] and not out.exists()


def test_a_column_that_could_not_be_judged_makes_the_matrix_exit_3(tmp_path, capsys):
    """An engine that crashes on every program: its campaign could not judge it (exit 3 for
    `gradspec run`), so the matrix, written all the same, is no pass either."""
    code = main(["matrix", "--engines", "refimpl,tests.broken_engines.aborts:factory",
                 "--oracle", "refimpl", "--count", "2", "--size", "6", "--quiet",
                 "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 3 and (tmp_path / "matrix.html").exists()
    assert "could not judge: 2 crash(es)" in captured.out
    assert "could not judge tests.broken_engines.aborts:factory" in captured.err
    data = json.loads((tmp_path / "matrix.json").read_text())
    assert [bool(c["unjudged"]) for c in data["engines"]] == [False, True]


def test_under_all_only_a_builtin_that_is_not_installed_is_excused(monkeypatch, tmp_path,
                                                                   capsys):
    """`--engines all` runs every engine gradspec knows: a built-in whose package is absent
    is expected to be unavailable; an entry point is installed, and one that fails to load is
    a column that could not be judged (exit 3)."""
    from conformance.campaign import matrix as matrix_module
    from conformance.reports.pages import Column
    columns = {"paddle": [Column("paddle", False, "cannot import paddle")],
               "plugin": [Column("paddle", False, "cannot import paddle"),
                          Column("my-plugin", False, "factory raised")]}
    for case, want in (("paddle", 0), ("plugin", 3)):
        monkeypatch.setattr(matrix_module, "run_matrix", lambda *a, c=case, **k: columns[c])
        assert main(["matrix", "--engines", "all", "--quiet", "--out", str(tmp_path)]) == want
    assert "could not judge my-plugin" in capsys.readouterr().err


def test_a_group_gradspec_could_not_judge_is_marked_on_both_pages():
    """A column's problems are listed under the table; a group of programs gradspec failed on
    is not the engine's and says so, on the HTML page as in the Markdown."""
    from conformance.reports.pages import Column, markdown, page
    from conformance.specdoc import load_spec
    groups = [{"count": 2, "primary": None, "signature": "3/harness/-/-", "statements": 4,
               "repro_engine": "x/repro.py", "not_judged": True},
              {"count": 1, "primary": "LEAF-1", "signature": "observe/grad/None/tensor",
               "statements": 3, "repro_engine": "y/repro.py"}]
    col = Column("refimpl", True, version="1", device="cpu", folder="refimpl", programs=3,
                 divergent=1, problems=1, groups=groups)
    meta = {"oracle": "torch", "oracle_version": "2.13.0", "spec": "2.0.0", "count": 3,
            "size": 20, "seed": 0, "device": "cpu"}
    for text in (page(load_spec(), [], {}, [col], meta),
                 markdown(load_spec(), [], {}, [col], meta)):
        lines = [ln for ln in text.replace("<li>", "\n").splitlines()
                 if "smallest program" in ln]
        marked = [("not judged: gradspec failed" in ln) for ln in lines]
        assert marked == [True, False], lines
