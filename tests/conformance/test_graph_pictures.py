"""Pictures of the backward graph (conformance/reports/graph.py, `gradspec graph`): what the
DOT text says about a program's graph on torch and on refimpl, the pictures of a divergence
folder and their highlight, the DOT text where Graphviz's `dot` is absent, and one line and
exit 2 for bad input. Assertions read the DOT text as nodes (id -> label, attributes) and edges,
so that they say what the picture shows, not how it is spelt.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.engines import load_engine
from conformance.engines.torchlike import ALL_CAPABILITIES, TorchLike
from conformance.judge.compare import Divergence
from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from conformance.reports import graph
from conformance.runner import run_campaign
from tests.conformance.test_cli import in_process, one_line_error

pytest.importorskip("graphviz", reason="the graphviz package (extra 'graph') is not installed")

NEVER_FREES = "tests.broken_engines.never_frees:factory"
HAS_DOT = shutil.which("dot") is not None
NEEDS_DOT = pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot program is not installed "
                               "(apt-get install graphviz); the DOT fallback is tested instead")
_NODE = re.compile(r'^\s*(\w+) \[(.*)\]$')
_EDGE = re.compile(r'^\s*(\w+) -> (\w+)(?: \[(.*)\])?$')
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^ "]+)')


def leaf(out, values, shape, rg=True):
    return S("leaf", out=out, params={"values": values, "shape": shape, "dtype": "float32",
                                      "requires_grad": rg})


def call(out, fn, *args):
    return S("call", out=out, args=list(args), params={"fn": fn})


def seed_example() -> Program:
    """The seed articles' worked example: l1 = input*w1; l2 = l1 + w2; l3 = l1*w3;
    l4 = l2*l3; loss = l4.mean(); then loss.backward()."""
    return Program([
        leaf("input", [1.0] * 4, [2, 2], rg=False), leaf("w1", [2.0], []),
        leaf("w2", [3.0], []), leaf("w3", [4.0], []),
        call("l1", "mul", "input", "w1"), call("l2", "add", "l1", "w2"),
        call("l3", "mul", "l1", "w3"), call("l4", "mul", "l2", "l3"),
        call("loss", "mean", "l4"), S("backward", target="loss"),
    ])


def second_backward(seed: int = 0, capabilities=None, size: int = 20) -> Program:
    """Two backward passes through one graph: the second raises GRAPH_FREED (FREE-1) on torch
    and goes through on an engine that never frees."""
    return Program([
        leaf("x", [0.5], []), call("s", "sin", "x"), call("t", "sum", "s"),
        S("backward", target="t", params={"retain_graph": False}),
        S("backward", target="t"),
    ], seed=seed)


def parse(dot: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]]]:
    """Nodes (id -> attributes, the label's lines joined by '|') and edges of DOT text."""
    nodes, edges = {}, []
    for line in dot.splitlines():
        if m := _EDGE.match(line):
            edges.append((m[1], m[2], _attrs(m[3] or "")))
        elif (m := _NODE.match(line)) and m[1] not in ("node", "edge"):
            nodes[m[1]] = _attrs(m[2])
    return nodes, edges


def _attrs(text: str) -> dict[str, str]:
    out = {k: v[1:-1] if v.startswith('"') else v for k, v in _ATTR.findall(text)}
    if "label" in out:
        out["label"] = out["label"].replace("\\n", "|")
    return out


def by_label(nodes: dict[str, dict[str, str]], start: str) -> str:
    """The one node whose label starts with `start`."""
    found = [k for k, a in nodes.items() if a.get("label", "").startswith(start)]
    assert len(found) == 1, (start, nodes)
    return found[0]


@pytest.mark.parametrize("name", ["torch", "refimpl"])
def test_the_seed_example_before_backward(name):
    dot = graph.to_dot(graph.capture(seed_example(), load_engine(name), "8"))
    nodes, edges = parse(dot)
    leaves = {a["label"]: a for k, a in nodes.items() if k.startswith("t")}
    assert sorted(leaves) == ["w1|[] float32", "w2|[] float32", "w3|[] float32"]
    assert all(a["shape"] == "ellipse" and a["fillcolor"] == graph.LEAF_FILL
               for a in leaves.values())
    loss, l4 = by_label(nodes, "MeanBackward0|grad_fn of loss"), \
        by_label(nodes, "MulBackward0|grad_fn of l4")
    l2, l3 = by_label(nodes, "AddBackward0|grad_fn of l2"), \
        by_label(nodes, "MulBackward0|grad_fn of l3")
    l1 = by_label(nodes, "MulBackward0|grad_fn of l1")
    arrows = {(a, b): attrs.get("label") for a, b, attrs in edges if b.startswith("n")}
    assert {(loss, l4): None, (l4, l2): "[0]", (l4, l3): "[1]", (l2, l1): "[0]",
            (l3, l1): "[0]"}.items() <= arrows.items()
    # each weight's AccumulateGrad, reached from the node that used it, linked to its leaf
    accumulate = {a: b for a, b, attrs in edges if b.startswith("t")
                  and attrs.get("style") == "dotted"}
    assert sorted(nodes[b]["label"].split("|")[0] for b in accumulate.values()) == \
        ["w1", "w2", "w3"]
    assert all(nodes[a]["label"] == "torch::autograd::AccumulateGrad" for a in accumulate)
    by_leaf = {nodes[b]["label"].split("|")[0]: a for a, b in accumulate.items()}
    assert (l1, by_leaf["w1"]) in arrows and (l2, by_leaf["w2"]) in arrows \
        and (l3, by_leaf["w3"]) in arrows
    assert not any("freed" in a.get("label", "") for a in nodes.values())
    assert "input" not in {a["label"].split("|")[0] for a in nodes.values()}  # no grad


def test_saved_values_on_torch_name_the_program_tensors_they_are():
    nodes, _ = parse(graph.to_dot(graph.capture(seed_example(), load_engine("torch"), "8")))
    l4 = nodes[by_label(nodes, "MulBackward0|grad_fn of l4")]["label"].split("|")
    assert "saved self: l2" in l4 and "saved other: l3" in l4
    l1 = nodes[by_label(nodes, "MulBackward0|grad_fn of l1")]["label"].split("|")
    assert "saved self: input" in l1      # `other` (w1) is not saved: input needs no grad


@pytest.mark.parametrize("name", ["torch", "refimpl"])
def test_after_backward_the_nodes_that_saved_tensors_are_freed(name):
    program = seed_example()
    dot = graph.to_dot(graph.capture(program, load_engine(name)))
    nodes, _ = parse(dot)
    freed = sorted(a["label"].split("|")[1] for a in nodes.values()
                   if "saved values freed" in a.get("label", ""))
    assert freed == ["grad_fn of l1", "grad_fn of l3", "grad_fn of l4"]
    assert all("dashed" in nodes[by_label(nodes, f"MulBackward0|{f}")]["style"]
               for f in freed)
    assert "freed by a backward pass" in dot
    assert dot == graph.to_dot(graph.capture(program, load_engine(name)))  # deterministic


def test_an_engine_that_cannot_say_what_it_saved_gets_a_legend_line():
    data = {"engine": "other", "tensors": [
        {"names": ["a"], "leaf": True, "node": None, "shape": [2], "dtype": "float64"},
        {"names": ["b", "c"], "leaf": False, "node": 0, "shape": [2], "dtype": "float64"}],
        "nodes": [{"name": "ExpBackward0", "saved": None, "freed": None, "variable": None},
                  {"name": "AccumulateGrad", "saved": None, "freed": None, "variable": 0}],
        "edges": [[0, 1, 0]]}
    dot = graph.to_dot(data, highlight=["a"])
    nodes, edges = parse(dot)
    assert nodes["n0"]["label"] == "ExpBackward0|grad_fn of b, c"
    assert ("n0", "n1", {}) in edges and nodes["t0"]["color"] == graph.HIGHLIGHT
    assert nodes["n1"]["color"] == graph.HIGHLIGHT      # the leaf's AccumulateGrad too
    assert "saved values: not shown where other cannot say" in dot


def test_a_divergence_folder_has_both_pictures_with_the_divergence_in_red(tmp_path):
    report = run_campaign(NEVER_FREES, "torch", count=1, out_dir=tmp_path, progress=None,
                          probe=False, shrink=False,
                          source=second_backward)
    assert report.exit_code == 1 and report.divergences[0]["path"] == "4"
    folder = Path(report.divergences[0]["folder"])
    suffix = "svg" if HAS_DOT else "dot"
    pictures = {side: (folder / f"graph-{side}.{suffix}").read_text(encoding="utf-8")
                for side in ("oracle", "engine")}
    assert not (folder / "notes.txt").exists() or not HAS_DOT
    for side, text in pictures.items():
        sum_node = _block(text, "SumBackward0")
        assert graph.HIGHLIGHT in sum_node and "grad_fn of t" in sum_node, side
    assert "saved values freed" in _block(pictures["oracle"], "SinBackward0")
    assert "saved values freed" not in _block(pictures["engine"], "SinBackward0")


def _block(picture: str, name: str) -> str:
    """The SVG group (or DOT line) of the node named `name`."""
    parts = re.split(r'(?=<g id="node)', picture) if picture.lstrip().startswith("<") \
        else picture.splitlines()
    found = [p for p in parts if f">{name}<" in p or f'"{name}\\n' in p]
    assert len(found) == 1, (name, picture)
    return found[0]


def test_drawing_never_fails_a_run(tmp_path, monkeypatch):
    def broken(*args, **kw):
        raise RuntimeError("a bug in the drawing\nsecond line")
    monkeypatch.setattr(graph, "to_dot", broken)
    report = run_campaign(NEVER_FREES, "torch", count=1, out_dir=tmp_path, progress=None,
                          probe=False, shrink=False, source=second_backward)
    assert report.exit_code == 1
    notes = (Path(report.divergences[0]["folder"]) / "notes.txt").read_text().splitlines()
    assert notes == [f"graph-{side}: drawing failed: RuntimeError: a bug in the drawing"
                     for side in ("oracle", "engine")]


def test_an_engine_without_grad_fn_gets_no_picture(tmp_path, monkeypatch):
    import torch
    monkeypatch.setenv("PATH", str(tmp_path))       # no dot: the fallback writes DOT text
    engine = TorchLike(torch, "no-grad-fn", capabilities=ALL_CAPABILITIES - {"grad_fn"})
    div = Divergence("4", "backward", "outcome", "raised GRAPH_FREED", "ok")
    pair = graph.capture_pair(second_backward(), [div], engine, load_engine("torch", "cpu"))
    notes = graph.draw_folder(tmp_path, pair)
    assert [p.name for p in sorted(tmp_path.glob("graph-*"))] == ["graph-oracle.dot"]
    assert notes[1] == ("graph-engine: not drawn: engine no-grad-fn lacks the grad_fn "
                        "capability: it cannot say what its graph is")
    # the file by its name: a campaign's folder is drawn in staging and renamed after
    assert notes[0].startswith("Graphviz's dot program is not installed: wrote the DOT text "
                               "to graph-oracle.dot beside it") and str(tmp_path) not in notes[0]
    assert (tmp_path / "notes.txt").read_text().splitlines() == notes


def test_without_dot_the_command_writes_the_dot_text_and_says_so(tmp_path, monkeypatch,
                                                                capsys):
    program = tmp_path / "program.json"
    program.write_text(seed_example().dumps())
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, err = in_process(capsys, "graph", str(program), "--engine", "refimpl",
                           "--out", str(tmp_path / "g.svg"))
    assert code == 0 and not (tmp_path / "g.svg").exists()
    assert len(err.splitlines()) == 1 and "dot program is not installed" in err
    assert "MeanBackward0" in (tmp_path / "g.dot").read_text()


def test_graphviz_reports_a_missing_dot_as_executable_not_found(tmp_path, monkeypatch):
    import graphviz
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(graphviz.ExecutableNotFound):
        graphviz.Source("digraph { a }").pipe(format="svg")


def test_the_command_writes_dot_to_stdout_and_a_dot_file(tmp_path, capsys):
    program = tmp_path / "program.json"
    program.write_text(seed_example().dumps())
    assert main(["graph", str(tmp_path), "--engine", "torch", "--at", "4"]) == 0
    nodes, _ = parse(capsys.readouterr().out)   # after l1 = input * w1: its node, w1's
    assert sorted(a["label"].split("|")[0] for a in nodes.values()) == [   # and the leaves
        "MulBackward0", "torch::autograd::AccumulateGrad", "w1", "w2", "w3"]
    out = tmp_path / "g.dot"
    assert in_process(capsys, "graph", str(program), "--engine", "torch",
                      "--out", str(out))[0] == 0
    assert "saved values freed" in out.read_text()


@NEEDS_DOT
def test_the_command_renders_svg(tmp_path, capsys):
    program = tmp_path / "program.json"
    program.write_text(seed_example().dumps())
    code, err = in_process(capsys, "graph", str(program), "--engine", "refimpl",
                           "--out", str(tmp_path / "g.svg"))
    assert code == 0 and err == ""
    svg = (tmp_path / "g.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and ">MeanBackward0<" in svg


@pytest.mark.parametrize("args, words", [
    (["missing.json", "--engine", "torch"], "cannot read"),
    (["{p}", "--engine", "no-such-engine"], "unknown engine 'no-such-engine'"),
    (["{p}", "--engine", "torch", "--at", "10"], "--at 10: no statement '10'"),
    (["{p}", "--engine", "torch", "--at", "2.0"], "--at 2.0: no statement '2.0'"),
    (["{p}", "--engine", "paddle"], "lacks the grad_fn capability"),
    (["{p}", "--engine", "torch", "--out", "g.unknown"], "--out"),
    (["{bad}", "--engine", "torch"], "bad.json"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.json").write_text(seed_example().dumps())
    bad = json.loads(seed_example().dumps())
    bad["statements"][4]["args"] = ["nobody", "w1"]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    if args[2:3] == ["paddle"]:
        pytest.importorskip("paddle", reason="PaddlePaddle is not installed")
    args = [a.format(p="p.json", bad="bad.json") for a in args]
    one_line_error(in_process(capsys, "graph", *args), words)
