"""report.html beside report.json in every `gradspec run` folder (conformance/reports/
report_html.py), from a small run of an engine that never frees its graph
(tests/broken_engines/never_frees.py) on two programs of two problems: the summary per
conformance class is report.json's, each problem has its section with its smallest program,
its repro scripts, both traces side by side and the graph pictures; every link and picture
resolves inside the run folder and nothing is fetched from elsewhere; a failure to write the
page is one line on stderr and never the run's. Headless Chromium renders the page (helpers
from test_site.py).
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from conformance.reports import report_html
from conformance.runner import run_campaign
from tests.conformance.test_site import (
    NEEDS_CHROMIUM,
    assert_not_blank,
    dom,
    parse,
    screenshot,
)

NEVER_FREES = "tests.broken_engines.never_frees:factory"
HAS_PICTURES = shutil.which("dot") is not None


def _leaf(out: str, values: list[float]) -> S:
    return S("leaf", out=out, params={"values": values, "shape": [len(values)],
                                      "dtype": "float32", "requires_grad": True})


def two_problems(seed: int = 0, capabilities=None, size: int = 20) -> Program:
    """Even seeds: a second backward through a freed graph; odd seeds: autograd.grad through
    one. Both raise GRAPH_FREED (FREE-1) on torch and go through on never_frees: two
    signatures, so two problems."""
    head = [_leaf("x", [0.5, 1.0]), S("call", out="s", args=["x"], params={"fn": "sin"}),
            S("call", out="t", args=["s"], params={"fn": "sum"}),
            S("backward", target="t", params={"retain_graph": False})]
    last = S("backward", target="t") if seed % 2 == 0 else S(
        "grad", params={"outputs": ["t"], "inputs": ["x"], "outs": ["g"],
                        "grad_outputs": None, "retain_graph": False, "allow_unused": True})
    return Program(head + [last], seed=seed)


def entry_value(folder: Path):
    """What the engine's last statement saw, as divergence.json records it."""
    data = json.loads((folder / "divergence.json").read_text(encoding="utf-8"))
    return data["engine_trace"]["events"][-1]["value"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "out"
    report = run_campaign(NEVER_FREES, "torch", count=4, seed=1, out_dir=out, progress=None,
                          probe=False, source=two_problems)
    assert report.exit_code == 1
    page = out / "report.html"
    assert page.is_file() and (out / "report.json").is_file()
    return out, json.loads((out / "report.json").read_text(encoding="utf-8")), page


def test_report_html_is_beside_report_json_and_every_link_resolves(run):
    out, data, page = run
    p = parse(page.read_text(encoding="utf-8"))
    targets = [urlparse(h) for h, _ in p.links] + [urlparse(s) for s in p.resources]
    assert len(data["groups"]) == 2 and len(targets) > 10
    for url in targets:
        assert not url.scheme and not url.netloc, url      # nothing from elsewhere
        path = unquote(url.path)
        if path:
            assert (out / path).is_file() or (out / path).is_dir(), path
        if url.fragment:
            assert not path and url.fragment in p.ids, url
    assert p.scripts == 0
    for src in p.resources:          # the only resources are the pictures
        assert Path(unquote(src)).name in ("graph-oracle.svg", "graph-engine.svg")


def test_summary_per_class_is_report_json(run):
    _, data, page = run
    text = page.read_text(encoding="utf-8")
    table = text.split('<table class="classes">')[1].split("</table>")[0]
    rows = table.split("<tr>")[2:]
    assert len(rows) == len(data["by_class"]) == 3
    for row, (cls, counts) in zip(rows, data["by_class"].items(), strict=True):
        cells = [c.split("</td>")[0] for c in row.split("<td>")[1:]]
        assert f"class-{cls}" in cells[0]
        assert cells[2:] == [str(counts[k]) for k in ("divergent_programs",
                             "distinct_problems", "expected_failures", "not_applicable")]
    assert data["by_class"]["core"]["distinct_problems"] == 2


def test_each_problem_has_its_smallest_program_repros_traces_and_pictures(run):
    out, data, page = run
    text = page.read_text(encoding="utf-8")
    p = parse(text)
    by_index = {d["index"]: d for d in data["divergences"]}
    for n, g in enumerate(data["groups"], 1):
        section = text.split(f'id="problem-{n}"')[1].split('<div class="problem"')[0]
        assert g["signature"] in section and f"[{g['primary']}]" in section
        entry = by_index[g["smallest"]]
        folder = Path(entry["folder"]).relative_to(out).as_posix()
        for key in ("program", "repro_torch", "repro_engine"):
            assert f'href="{folder}/{Path(entry[key]).name}"' in section, key
        repro = Path(entry["repro_engine"]).read_text(encoding="utf-8")
        assert any(repro == b for b in p.blocks)            # inline as well
        # both traces side by side: the statement that diverges is marked, oracle | engine
        row = section.split('<tr class="diverges">')[1].split("</tr>")[0]
        cells = [re.sub(r"<[^>]*>", "", "<td" + c) for c in row.split("<td")[1:]]
        assert cells[:2] == ["!!", "4"] and cells[3] == "raised GRAPH_FREED"
        assert cells[4] == ("ok" if g["signature"].startswith("backward") else
                            json.dumps(entry_value(out / folder)))
        assert section.count('<tr class="diverges">') == 1
        for stem in ("graph-oracle", "graph-engine"):
            if (out / folder / f"{stem}.svg").is_file():
                assert f'<img src="{folder}/{stem}.svg"' in section
            else:
                assert f'href="{folder}/{stem}.dot"' in section


@pytest.mark.skipif(not HAS_PICTURES, reason="Graphviz's dot is not installed: no SVG "
                    "pictures to embed (apt-get install graphviz)")
def test_pictures_are_embedded_when_drawn(run):
    out, data, page = run
    p = parse(page.read_text(encoding="utf-8"))
    assert len(p.resources) == 2 * len(data["groups"])
    for src in p.resources:
        assert (out / unquote(src)).read_text(encoding="utf-8").lstrip().startswith("<")


def test_a_failure_to_write_the_page_is_one_line_and_not_the_runs(tmp_path, monkeypatch,
                                                                  capsys):
    def broken(data, here):
        raise RuntimeError("a bug in the page\nsecond line")
    (tmp_path / "report.html").write_text("an earlier run's page")
    monkeypatch.setattr(report_html, "render_report", broken)
    report = run_campaign(NEVER_FREES, "torch", count=1, out_dir=tmp_path, progress=None,
                          probe=False, source=two_problems)
    assert report.exit_code == 1 and (tmp_path / "report.json").is_file()
    assert capsys.readouterr().err.splitlines() == [
        "gradspec: report.html not written: RuntimeError: a bug in the page"]
    assert not (tmp_path / "report.html").exists()      # never the page of another run


def test_a_run_without_divergence_says_so(tmp_path):
    report = run_campaign("torch", "torch", count=1, out_dir=tmp_path, progress=None,
                          probe=False, source=two_problems)
    assert report.exit_code == 0
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "No divergence." in text and "exit 0: judged: no divergence" in text


@NEEDS_CHROMIUM
def test_chromium_renders_the_report(run, tmp_path):
    out, data, page = run
    rendered = parse(dom(page))
    assert {f"problem-{n}" for n in range(1, len(data["groups"]) + 1)} <= rendered.ids
    assert len(rendered.resources) == len(parse(page.read_text(encoding="utf-8")).resources)
    assert "class-core" in rendered.inside["problem-1"]
    window = (1200, 1600)
    assert_not_blank(screenshot(page, tmp_path / "report.png", window), window)
