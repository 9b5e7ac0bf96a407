"""Conformance classes (spec/README.md): each compared divergence has one (conformance/judge/
verdict.py, defining.py), an engine claims classes (conformance/engines/base.py), a run judges
a program by its first divergence in a claimed class and sets apart, as not applicable, one
that diverges only in classes the engine does not claim; report.json, the summary and the
matrix count per class; `gradspec run --classes` overrides the claim."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.engines import load_engine
from conformance.engines.base import Engine
from conformance.judge.compare import Divergence, compare
from conformance.judge.executor import execute
from conformance.judge.verdict import judged, lead, verdict
from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from conformance.reports.classes import ClassError, claim
from conformance.reports.pages import Column, classes_text
from conformance.reports.summary import print_summary
from conformance.runner import run_campaign
from conformance.spec.reader import CLASSES, load_spec, spec_dir
from tests.broken_engines.renamed_nodes import RenamedNodes
from tests.broken_engines.retains_every_grad import RetainsEveryGrad
from tests.conformance.test_cli import in_process, one_line_error
from tests.conformance.test_executor import leaf, obs
from tests.conformance.test_verdict import hook_divergence

HERE = "tests.conformance.test_classes"
RENAMED = "tests.broken_engines.renamed_nodes:factory"
ROOT = Path(__file__).resolve().parents[2]


class NamesAndRetains(RenamedNodes, RetainsEveryGrad):
    """Wrong node names (torch-observable) and retains every non-leaf's grad (core)."""
    label = "names_and_retains"


def names_and_retains(device="cpu"):
    return NamesAndRetains(device)


def names_and_retains_core(device="cpu"):
    engine = NamesAndRetains(device)
    engine.classes = frozenset({"core"})
    return engine


def renamed_core(device="cpu"):
    """The renamed-nodes engine, claiming what it conforms to."""
    engine = RenamedNodes(device)
    engine.classes = frozenset({"core", "diagnostics"})
    return engine


def claims_no_class(device="cpu"):
    engine = RenamedNodes(device)
    engine.classes = frozenset({"torch"})
    return engine


def names_then_retains(seed: int = 0, capabilities=None, size: int = 20) -> Program:
    """A node name observed, then a non-leaf's retains_grad: the first diverges in
    torch-observable on NamesAndRetains, the second in core."""
    return Program([
        leaf("x", [1.0, 2.0], [2], clauses=["LEAF-1"]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}, clauses=["GRAPH-1"]),
        obs("y", "grad_fn", ["GRAPH-3"]),
        obs("y", "retains_grad", ["RETAIN-1"]),
    ], seed=seed)


def names_only(seed: int = 0, capabilities=None, size: int = 20) -> Program:
    return Program(names_then_retains().statements[:3], seed=seed)


def judge(program: Program, engine: Engine) -> list[Divergence]:
    return compare(program, execute(program, load_engine("torch")), execute(program, engine))


@pytest.fixture
def all_core(monkeypatch):
    """Every clause of class core, whatever the spec's tables say now: what differs must
    decide the class of a divergence in the cases below, not the clause."""
    for c in load_spec().clauses.values():
        monkeypatch.setattr(c, "cls", "core")


# ---- the class of a divergence ---------------------------------------------------------------
def test_node_names_and_edges_are_torch_observable_whatever_the_clause(all_core):
    p = Program([
        leaf("x", [1.0, 2.0], [2], clauses=["LEAF-1"]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}, clauses=["GRAPH-1"]),
        obs("y", "grad_fn", ["GRAPH-3"]),
        obs("y", "next_functions", ["GRAPH-4"]),
    ])
    divs = judge(p, RenamedNodes())
    assert [(d.path, d.signature, d.cls) for d in divs] == [
        ("2", "observe/grad_fn/name/other-name", "torch-observable"),
        ("3", "observe/next_functions/tensor/other-values", "torch-observable")]
    # whether there is a node at all is graph recording: the clause's class
    oracle = execute(p, load_engine("torch"))
    engine = execute(p, RenamedNodes())
    engine.events[2].value = None
    (d,) = compare(p, oracle, engine)[:1]
    assert (d.signature, d.cls) == ("observe/grad_fn/name/None", "core")


def test_warnings_are_diagnostics_and_the_rest_takes_the_clause_class(all_core, monkeypatch):
    p = Program([
        leaf("x", [1.0, 2.0], [2]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}, clauses=["GRAPH-1"]),
        obs("y", "retains_grad", ["RETAIN-1"]),
        S("call", out="s", args=["y"], params={"fn": "sum"}),
        S("backward", target="s", clauses=["LEAF-5", "LEAF-9"]),
        obs("y", "grad", ["RETAIN-7"]),
    ])
    divs = judge(p, RetainsEveryGrad())
    assert [(d.path, d.what, d.cls) for d in divs] == [
        ("2", "value", "core"), ("5", "warnings", "diagnostics"), ("5", "value", "core")]
    # a clause of another class gives its divergences that class; a warning stays diagnostics
    monkeypatch.setattr(load_spec().clauses["RETAIN-7"], "cls", "torch-observable")
    assert [d.cls for d in judge(p, RetainsEveryGrad())] == [
        "core", "diagnostics", "torch-observable"]


def test_hook_calls_reordered_are_torch_observable_missing_ones_are_not(all_core):
    p = Program([
        leaf("x", [1.0], [1]), leaf("z", [1.0], [1]),
        S("hook", out="b", target="x", params={"label": "b"}),
        S("hook", out="c", target="z", params={"label": "c"}),
        S("call", out="s", args=["x", "z"], params={"fn": "add"}),
        S("backward", target="s"),
    ])

    def run(oracle_hooks, engine_hooks):
        d = hook_divergence(p, oracle_hooks, engine_hooks)
        return d.signature.split("/")[-1], d.cls
    assert run(["b", "c"], ["c", "b"]) == ("reordered", "torch-observable")
    assert run(["b", "c"], ["b"]) == ("missing", "core")
    # reordered, and what a hook got changed with it: no longer the same calls (HOOK-14 is
    # this program's primary clause, whose class decides)
    d = hook_divergence(p, ["b", "c"], ["c", "b"], engine_values=[[2.0], [1.0]])
    assert (d.signature.split("/")[-1], d.primary) == ("reordered-other-gradients", "HOOK-14")
    assert d.cls == load_spec().clauses["HOOK-14"].cls
    # what the comparison forgives (float32's last bits) is the same call
    d = hook_divergence(p, ["b", "c"], ["c", "b"], engine_values=[[1.0000001], [1.0]])
    assert (d.signature.split("/")[-1], d.cls) == ("reordered", "torch-observable")


def test_a_divergence_keeps_its_class_through_json_and_failures_have_none(all_core):
    (d, _) = judge(names_then_retains(), NamesAndRetains())
    data = d.to_json()
    assert data["class"] == "torch-observable" and "cls" not in data
    assert Divergence.from_json(json.loads(json.dumps(data))) == d
    crash = Divergence("", "program", "crash", "completed", "killed")
    assert "class" not in crash.to_json() and Divergence.from_json(crash.to_json()) == crash


def test_a_program_is_judged_by_its_first_divergence_in_a_claimed_class(all_core):
    divs = judge(names_then_retains(), NamesAndRetains())
    assert [d.cls for d in divs] == ["torch-observable", "core"]
    assert lead(divs) is divs[0] and lead(divs, {"core"}) is divs[1]
    assert verdict(divs, {"core"}) == (["RETAIN-1"], "observe/retains_grad/False/True")
    assert judged(divs, {"diagnostics"}) == divs       # none claimed: judged by its first
    failure = Divergence("", "program", "crash", "completed", "killed")
    assert judged([failure], {"core"}) == [failure]     # no class: always counted


def test_claims_are_validated_and_ordered():
    assert claim(["diagnostics", "core"]) == ("core", "diagnostics")
    assert claim(" core , torch-observable") == ("core", "torch-observable")
    assert claim(Engine.classes) == CLASSES                     # the default: all three
    assert load_engine("refimpl").classes == frozenset(CLASSES)
    for bad in (["core", "torch"], []):
        with pytest.raises(ClassError):
            claim(bad)


# ---- campaigns ---------------------------------------------------------------------------
def stable(report) -> str:
    """report.json without what depends on time or the output folder."""
    data = report.to_json()
    for key in ("seconds", "folder", "jobs"):
        data.pop(key)
    text = json.dumps(data, sort_keys=True)
    return text.replace(report.folder, "OUT")


def test_renamed_nodes_diverge_only_in_torch_observable(tmp_path, capsys):
    """Generated programs: every divergence of the engine is torch-observable; claiming core
    and diagnostics (by --classes, or by the engine's own declaration) the run passes, the
    programs not applicable; serial and -n 2 give the same report."""
    common = {"count": 16, "seed": 5, "progress": None, "probe": False, "shrink": False}
    full = run_campaign(RENAMED, "torch", out_dir=tmp_path / "all", **common)
    n = len(full.divergences)
    assert full.exit_code == 1 and n >= 8
    assert {e["class"] for e in full.divergences} == {"torch-observable"}
    data = json.loads((tmp_path / "all" / "report.json").read_text())
    assert data["classes"] == list(CLASSES)
    assert {c: (v["divergent_programs"], v["distinct_problems"])
            for c, v in data["by_class"].items()} == {
        "core": (0, 0), "torch-observable": (n, len(full.groups)), "diagnostics": (0, 0)}
    assert {g["class"] for g in data["groups"]} == {"torch-observable"}

    core = run_campaign(RENAMED, "torch", out_dir=tmp_path / "core",
                        classes=["core", "diagnostics"], **common)
    assert core.exit_code == 0 and core.divergences == [] and core.groups == []
    assert [e["index"] for e in core.not_applicable] == [e["index"] for e in full.divergences]
    assert all(e["not_applicable"] == "class torch-observable, which the engine does not "
               "claim" for e in core.not_applicable)
    data = json.loads((tmp_path / "core" / "report.json").read_text())
    assert data["classes"] == ["core", "diagnostics"] and data["exit_code"] == 0
    assert data["by_class"]["torch-observable"] == {
        "claimed": False, "divergent_programs": 0, "distinct_problems": 0,
        "expected_failures": 0, "not_applicable": n}
    print_summary(core, tmp_path / "core")
    out = capsys.readouterr().out
    assert "classes claimed: core, diagnostics" in out
    assert re.search(rf"torch-observable +not claimed, {n} program\(s\) not compared", out)

    declared = run_campaign(f"{HERE}:renamed_core", "torch", out_dir=tmp_path / "declared",
                            **common)
    assert declared.exit_code == 0 and declared.classes == ["core", "diagnostics"]
    assert len(declared.not_applicable) == n

    parallel = run_campaign(RENAMED, "torch", out_dir=tmp_path / "par", jobs=2,
                            classes=["core", "diagnostics"], **common)
    assert stable(parallel) == stable(core)


def test_a_core_divergence_after_a_torch_observable_one_still_fails(tmp_path):
    """The engine claims core: the program is judged, and shrunk, by its core divergence."""
    report = run_campaign(f"{HERE}:names_and_retains_core", "torch", count=2,
                          out_dir=tmp_path, progress=None, probe=False,
                          source=names_then_retains)
    assert report.exit_code == 1 and report.not_applicable == []
    assert [(e["primary"], e["class"], e["what"]) for e in report.divergences] == [
        (["RETAIN-1"], "core", "value")] * 2
    assert "retains_grad" in report.divergences[0]["first"]
    program = json.loads(Path(report.divergences[0]["program"]).read_text())
    assert any(s.get("params", {}).get("what") == "retains_grad"
               for s in program["statements"])
    assert report.to_json()["by_class"]["core"]["divergent_programs"] == 2


def test_an_expected_failure_may_name_a_class(tmp_path):
    from conformance.judge.xfail import parse
    xf = parse("class:torch-observable  names are ours for now\n")
    report = run_campaign(f"{HERE}:names_and_retains", "torch", count=2, out_dir=tmp_path,
                          progress=None, probe=False, source=names_only, xfails=xf)
    assert report.exit_code == 0 and report.divergences == []
    assert [e["xfail"]["id"] for e in report.expected_failures] == ["class:torch-observable"] * 2
    assert report.to_json()["by_class"]["torch-observable"]["expected_failures"] == 2


# ---- the command line, a spec copy with classes, the matrix's words ----------------------------
def with_class(spec: Path, cid: str, cls: str) -> None:
    """Set the class of clause `cid` in a copy of spec/: its metadata table's class cell,
    added when the table has none."""
    for md in spec.glob("*.md"):
        lines = md.read_text(encoding="utf-8").splitlines()
        if f"## {cid}" not in lines:
            continue
        at = next(i for i in range(lines.index(f"## {cid}"), len(lines))
                  if lines[i].startswith("| status"))
        keys = [k.strip() for k in lines[at].strip("|").split("|")]
        cells = [c.strip() for c in lines[at + 2].strip("|").split("|")]
        if "class" in keys:
            cells[keys.index("class")] = cls
        else:
            keys, cells = keys + ["class"], cells + [cls]
        lines[at] = "| " + " | ".join(keys) + " |"
        lines[at + 1] = "|" + "---|" * len(keys)
        lines[at + 2] = "| " + " | ".join(cells) + " |"
        md.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return
    raise AssertionError(f"{cid} is not in {spec}")


def test_a_clause_of_an_unclaimed_class_is_not_applicable(tmp_path):
    spec = tmp_path / "spec"
    shutil.copytree(spec_dir(), spec)
    with_class(spec, "GRAPH-3", "torch-observable")
    with_class(spec, "GRAPH-1", "core")
    env = dict(os.environ, GRADSPEC_SPEC_DIR=str(spec))
    run = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--engine", RENAMED, "--count", "2",
         "--out", str(tmp_path / "out"), "--source", f"{HERE}:names_only", "--no-probe",
         "--quiet", "--classes", "core"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    row = data["clauses"]["GRAPH-3"]
    assert row["status"] == "n/a" and row["reason"] == \
        "class torch-observable, which the engine does not claim"
    assert data["clauses"]["GRAPH-1"]["status"] == "pass"
    assert [e["class"] for e in data["not_applicable"]] == ["torch-observable"] * 2


@pytest.mark.parametrize("args,words", [
    (["--classes", "core,nope"], "'nope' is not a conformance class"),
    (["--classes", ","], "name at least one conformance class"),
    (["--engine", f"{HERE}:claims_no_class", "--count", "1"], "'torch' is not a conformance"),
])
def test_bad_classes_are_one_line_and_exit_2(capsys, tmp_path, args, words):
    one_line_error(in_process(capsys, "run", "--out", str(tmp_path), "--quiet", *args), words)


def test_the_matrix_words_each_class():
    col = Column("paddle", True, classes=["core"], by_class={
        "core": {"claimed": True, "divergent_programs": 3, "distinct_problems": 2,
                 "expected_failures": 0, "not_applicable": 0},
        "torch-observable": {"claimed": False, "divergent_programs": 0,
                             "distinct_problems": 0, "expected_failures": 0,
                             "not_applicable": 4},
        "diagnostics": {"claimed": False, "divergent_programs": 0, "distinct_problems": 0,
                        "expected_failures": 0, "not_applicable": 0}})
    assert classes_text(col) == ("core: 3 divergent, 2 distinct problems; torch-observable: "
                                 "not claimed (4 programs not compared); diagnostics: not "
                                 "claimed")


def test_paddle_claims_core_only():
    from conformance.engines import paddle
    assert paddle.PaddleEngine.classes == frozenset({"core"}) <= frozenset(CLASSES)
