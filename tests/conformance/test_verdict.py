"""The verdict on a divergence (conformance/judge/verdict.py): one primary clause, the clause
that defines what the oracle did at the first differing observation (by error kind, by
observable, by the statement that made what is observed), beside the involved ones; a
behaviour whose defining clause the engine cannot express is not compared; divergent programs
grouped by signature in report.json, the summary and the matrix; torch and refimpl still agree
with torch."""
from __future__ import annotations

import json

import pytest

from conformance.engines import load_engine
from conformance.engines.torchlike import ALL_CAPABILITIES, TorchLike
from conformance.judge.compare import compare
from conformance.judge.defining import ALLOWS, CITED, DEFINES
from conformance.judge.executor import execute
from conformance.judge.problems import group
from conformance.judge.verdict import lead, verdict
from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from conformance.lang.trace import Event, Trace
from conformance.pytest_plugin import split_expected
from conformance.reports.summary import print_summary
from conformance.runner import run_campaign
from conformance.spec.reader import load_errors, load_spec
from tests.conformance.test_executor import MOD, leaf, obs

HERE = "tests.conformance.test_verdict"
BROKEN = "tests.broken_engines"


def judged(program: Program, engine: str) -> list:
    return compare(program, execute(program, load_engine("torch")),
                   execute(program, load_engine(engine)))


def untagged(program: Program) -> Program:
    """The program with no clause tags: the verdict must not need them."""
    strip = [S.from_json(s.to_json() | {"clauses": []}) for s in program.statements]
    return Program(strip, seed=program.seed)


# ---- the primary clause ----------------------------------------------------------------------

def hook_divergence(p: Program, oracle_hooks: list[str], engine_hooks: list[str],
                    engine_values: list[list[float]] | None = None):
    """The one divergence of traces of `p` that agree but for the hook calls of its last
    statement (labels in call order, each with the gradient [1.0], or on the engine's side
    `engine_values` in call order)."""
    def trace(hooks, values=None):
        events = [Event(str(i), s.op) for i, s in enumerate(p.statements)]
        values = values or [[1.0]] * len(hooks)
        events[-1].hooks = [[h, v, "float32"] for h, v in zip(hooks, values, strict=True)]
        return Trace("t", "1", "cpu", events)
    (d,) = compare(p, trace(oracle_hooks), trace(engine_hooks, engine_values))
    return d

def test_every_clause_the_verdict_cites_exists():
    spec = load_spec()
    assert [c for c in CITED if c not in spec.clauses] == []
    assert set(ALLOWS) <= set(load_errors())
    assert all(t and all(c is None or c in spec.clauses for c in t) for t in DEFINES.values())


def twice_backward() -> Program:
    return Program([
        leaf("x", [1.0, 2.0], [2], "float64", clauses=["LEAF-1"]),
        S("call", out="y", args=["x"], params={"fn": "exp"}, clauses=["GRAPH-1", "VER-10"]),
        S("call", out="s", args=["y"], params={"fn": "sum"}, clauses=["GRAPH-1"]),
        S("backward", target="s", clauses=["LEAF-5", "LEAF-9", "FREE-1"]),
        S("backward", target="s", clauses=["LEAF-5", "LEAF-9", "LEAF-7", "FREE-5", "FREE-1"]),
    ], seed=3)


@pytest.mark.parametrize("strip", [False, True])
def test_an_error_the_oracle_raises_names_the_clause_of_its_kind(strip):
    p = untagged(twice_backward()) if strip else twice_backward()
    divs = judged(p, f"{BROKEN}.never_frees:factory")
    assert [(d.path, d.primary, d.signature) for d in divs] == [
        ("4", "FREE-1", "backward/outcome/GRAPH_FREED/ok")]
    assert verdict(divs) == (["FREE-1"], "backward/outcome/GRAPH_FREED/ok")
    assert ("[FREE-1]" in str(divs[0])) and (strip or "involved: LEAF-5" in str(divs[0]))


def no_grad_inplace() -> Program:
    """An in-place write on a leaf under no_grad (INPLACE-4), tagged as the generator tags it."""
    return Program([
        leaf("x", [1.0, 2.0], [2], clauses=["LEAF-1"]),
        S("mode", params={"mode": "no_grad"}, clauses=["MODE-4", "MODE-1"], body=[
            S("inplace", target="x", args=[1.0], params={"fn": "add_"},
              clauses=["INPLACE-4", "VER-2"]),
        ]),
        obs("x", "version", ["VER-2", "VER-3"]),
    ], seed=4)


def test_an_error_the_oracle_does_not_raise_names_the_rule_that_allows_it():
    divs = judged(no_grad_inplace(), f"{BROKEN}.no_grad_ignored:factory")
    assert (divs[0].path, divs[0].primary) == ("1.0", "INPLACE-4")
    assert divs[0].signature == "inplace/outcome/ok/LEAF_INPLACE"


def matmul_backward(caps: list[str] | None) -> Program:
    """[1] @ [1, 3], summed, a backward: drawn under `caps` (meta, as the generator records
    them; None: a program of no known capabilities)."""
    return Program([
        leaf("x", [-1.25], [1], "float64", clauses=["LEAF-1"]),
        leaf("w", [1.25, -1.25, 0.625], [1, 3], "float64", rg=False, clauses=["LEAF-1"]),
        S("call", out="y", args=["x", "w"], params={"fn": "matmul"}, clauses=["GRAPH-1"]),
        S("call", out="s", args=["y"], params={"fn": "sum"}, clauses=["GRAPH-1"]),
        S("backward", target="s", clauses=["LEAF-5", "LEAF-9"]),
    ], seed=5, meta={} if caps is None else {"capabilities": caps})


@pytest.mark.parametrize(("caps", "primary"), [
    (sorted(set(ALL_CAPABILITIES) - {"custom_function"}), "LEAF-5"),
    (sorted(ALL_CAPABILITIES), "FUNC-8"),
    (None, "FUNC-8"),
])
def test_an_error_only_the_engine_raises_names_its_kind_only_where_the_program_can_reach_it(
        caps, primary):
    # FUNCTION_INVALID_GRADIENT is FUNC-8's, a custom Function's; an engine whose functions are
    # custom Functions inside (thunder) raises it at a plain backward. Drawn without
    # custom_function, FUNC-8 is n/a to the campaign: the backward's own clause names it.
    p = matmul_backward(caps)
    oracle = Trace("torch", "1", "cpu", [Event(str(i), s.op) for i, s in enumerate(p.statements)])
    engine = Trace("e", "1", "cpu", [Event(str(i), s.op) for i, s in enumerate(p.statements)])
    engine.events[-1] = Event("4", "backward", "error", "FUNCTION_INVALID_GRADIENT")
    (d,) = compare(p, oracle, engine)
    assert (d.primary, d.signature) == (primary, "backward/outcome/ok/FUNCTION_INVALID_GRADIENT")
    assert "custom_function" in load_spec().clauses["FUNC-8"].requires


def hooks_on_one_tensor() -> Program:
    return Program([
        leaf("x", [1.0, 2.0], [2]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
        S("hook", out="h1", target="y", params={"behaviour": "record", "label": "h1"}),
        S("hook", out="h2", target="y", params={"behaviour": "scale", "factor": 3.0,
                                                "label": "h2"}),
        S("call", out="s", args=["y"], params={"fn": "sum"}),
        S("backward", target="s", clauses=["LEAF-5", "LEAF-9", "HOOK-1", "MODE-8"]),
    ])


def test_hook_order_on_one_tensor_is_hook_2_whatever_the_tags():
    """Reversed, the scaling hook runs first and the recording one gets three times the
    gradient: the calls differ, not only their order, so the divergence is HOOK-2's, of its
    class (core), not the torch-observable class of the same calls in another order."""
    divs = judged(hooks_on_one_tensor(), f"{BROKEN}.reversed_hooks:factory")
    assert [(d.what, d.primary, d.signature, d.cls) for d in divs] == [
        ("hooks", "HOOK-2", "backward/hooks/calls/reordered-other-gradients", "core")]


def retained_nonleaf() -> Program:
    return Program([
        leaf("x", [1.0, 2.0], [2]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}, clauses=["GRAPH-1"]),
        obs("y", "retains_grad", ["RETAIN-1"]),
        S("call", out="s", args=["y"], params={"fn": "sum"}),
        S("backward", target="s", clauses=["LEAF-5", "LEAF-9"]),
        obs("y", "grad", ["RETAIN-7"]),
    ])


def test_by_observable_retains_grad_and_grad_of_a_non_leaf():
    divs = judged(retained_nonleaf(), f"{BROKEN}.retains_every_grad:factory")
    assert [(d.path, d.what, d.primary, d.signature) for d in divs] == [
        ("2", "value", "RETAIN-1", "observe/retains_grad/False/True"),
        ("5", "warnings", "RETAIN-7", "observe/warnings/NONLEAF_GRAD_ACCESS/none"),
        ("5", "value", "RETAIN-7", "observe/grad/None/tensor")]


def test_by_the_statement_that_made_the_version():
    """The observed tensor's own write made its version: VER-2, not the VER-4 of its view."""
    p = Program([
        leaf("x", [1.0, 2.0], [2], rg=False),
        S("view", out="v", target="x", params={"fn": "reshape", "kw": {"shape": [2, 1]}}),
        S("inplace", target="x", args=[1.0], params={"fn": "add_"}, clauses=["VER-2"]),
        obs("x", "version", ["VER-2", "VER-3"]),
        obs("v", "version", ["VER-2", "VER-3", "VER-4"]),
    ])
    divs = judged(p, f"{BROKEN}.no_version_check:factory")
    assert [(d.path, d.primary) for d in divs] == [("3", "VER-2"), ("4", "VER-4")]
    assert lead(divs) is divs[0]


def test_hook_calls_after_remove_and_off_the_path():
    """Synthetic traces: a removed hook called is HOOK-6, a hook off the backward path called
    is HOOK-9, hooks of two tensors in another order HOOK-14."""
    p = Program([
        leaf("x", [1.0], [1]), leaf("z", [1.0], [1]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
        S("hook", out="a", target="y", params={"label": "a"}),
        S("hook", out="b", target="x", params={"label": "b"}),
        S("hook", out="c", target="z", params={"label": "c"}),
        S("remove", target="a"),
        S("call", out="s", args=["y"], params={"fn": "sum"}),
        S("backward", target="s"),
    ])

    def run(oracle_hooks, engine_hooks):
        d = hook_divergence(p, oracle_hooks, engine_hooks)
        return d.primary, d.signature.split("/")[-1]
    assert run(["b"], ["a", "b"]) == ("HOOK-6", "extra")
    assert run(["b"], ["b", "c"]) == ("HOOK-9", "extra")
    assert run(["b", "c"], ["c", "b"]) == ("HOOK-14", "reordered")
    assert run(["b"], []) == ("HOOK-1", "missing")


# ---- a clause's requires excuses nothing --------------------------------------------------
class SilentBackward(TorchLike):
    """Backward on a tensor that does not require grad does nothing where torch raises
    NO_GRAD_FN (API-4); it declares no autograd_grad, a capability API-4 requires."""

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        if t.requires_grad:
            super().backward(t, gradient, retain_graph, inputs, create_graph)


def silent_backward(device="cpu"):
    import torch
    return SilentBackward(torch, "silent_backward", device,
                          ALL_CAPABILITIES - {"autograd_grad"})


def no_grad_fn(seed: int = 0, capabilities=None, size: int = 20) -> Program:
    """Backward on a leaf that does not require grad, tagged as the generator tags it for an
    engine without autograd_grad: API-4 left out, API-5 ("backward on a leaf that requires
    grad") in."""
    return Program([
        leaf("x", [1.0, 2.0], [2], rg=False, clauses=["LEAF-1", "LEAF-2"]),
        leaf("g", [1.0, 1.0], [2], rg=False),
        S("backward", target="x", args=["g"],
          clauses=["LEAF-5", "LEAF-9", "FREE-1", "FREE-7", "API-2", "API-5"]),
    ], seed=seed, meta={"capabilities": sorted(ALL_CAPABILITIES - {"autograd_grad"})})


def test_backward_without_grad_fn_is_api_4_and_fails_even_without_autograd_grad(tmp_path):
    """API-4's `requires` names autograd_grad (its example's), but its rule covers backward:
    the engine was asked, and its divergence is not excused."""
    divs = judged(no_grad_fn(), f"{HERE}:silent_backward")
    assert [(d.primary, d.signature) for d in divs] == [
        ("API-4", "backward/outcome/NO_GRAD_FN/ok")]
    assert "API-5" in divs[0].clauses            # involved, never the primary
    unexpected, met = split_expected(divs, [], 0, no_grad_fn())
    assert unexpected == divs and met == []
    report = run_campaign(f"{HERE}:silent_backward", "torch", count=2, out_dir=tmp_path,
                          progress=None, source=no_grad_fn, probe=False, shrink=False)
    assert report.exit_code == 1 and report.not_applicable == []
    assert [e["primary"] for e in report.divergences] == [["API-4"], ["API-4"]]
    assert [g["primary"] for g in report.groups] == ["API-4"]
    assert report.clauses["API-5"]["status"] == "pass"


# ---- grouping ----------------------------------------------------------------------------
def leaf_write(fn: str, values: list[float], extra: int) -> Program:
    pad = [leaf(f"p{i}", [0.5], [1]) for i in range(extra)]
    return Program(pad + [
        leaf("x", values, [len(values)], clauses=["LEAF-1"]),
        S("inplace", target="x", args=[2.0], params={"fn": fn}, clauses=["INPLACE-1"]),
    ])


def test_the_same_problem_in_different_programs_has_one_signature():
    a = judged(leaf_write("add_", [1.0, 2.0], 2), f"{MOD}:no_leaf_check")
    b = judged(leaf_write("mul_", [3.0], 0), f"{MOD}:no_leaf_check")
    assert a[0].signature == b[0].signature == "inplace/outcome/LEAF_INPLACE/ok"
    entries = [{"index": i, "program_seed": i, "statements": n, "folder": f"f{i}",
                "repro_engine": f"r{i}", "first": str(d[0]), "primary": verdict(d)[0],
                "signature": verdict(d)[1]} for i, (n, d) in enumerate([(4, a), (2, b)])]
    entries.append({**entries[0], "index": 2, "signature": "other/outcome/ok/OTHER"})
    groups = group(entries)
    assert [(g["signature"], g["count"], g["smallest"], g["programs"]) for g in groups] == [
        ("inplace/outcome/LEAF_INPLACE/ok", 2, 1, [0, 1]), ("other/outcome/ok/OTHER", 1, 2, [2])]
    assert groups[0]["primary"] == "INPLACE-1" and groups[0]["folder"] == "f1"


def test_report_summary_and_json_group_by_problem(tmp_path, capsys):
    from tests.conformance.test_executor import source
    report = run_campaign(f"{MOD}:no_leaf_check", "torch", count=6, out_dir=tmp_path,
                          progress=None, source=source, probe=False)
    data = json.loads((tmp_path / "report.json").read_text())
    n = len(report.divergences)     # the programs of kind "sample": several, one problem
    assert n >= 2 and data["divergent_programs"] == n and data["distinct_problems"] == 1
    (g,) = data["groups"]
    assert g["signature"] == "inplace/outcome/LEAF_INPLACE/ok" and g["primary"] == "INPLACE-1"
    assert g["count"] == n and (tmp_path / g["folder"].split(str(tmp_path) + "/")[1]).is_dir()
    assert all(d["signature"] == g["signature"] for d in data["divergences"])
    print_summary(report, tmp_path)
    out = capsys.readouterr().out
    assert f"{n} divergent programs, 1 distinct problem(s)" in out
    assert f"{n} x [INPLACE-1] inplace/outcome/LEAF_INPLACE/ok: #{g['smallest']}" in out


# ---- the oracle agrees with itself, and refimpl with it ----------------------------------
@pytest.mark.parametrize("engine", ["torch", "refimpl"])
def test_no_divergence_against_torch(engine, tmp_path):
    report = run_campaign(engine, "torch", count=300, seed=11, out_dir=tmp_path,
                          progress=None, probe=False)
    assert report.programs == 300 and report.divergences == [] and report.groups == []
    assert report.not_applicable == [] and report.exit_code == 0
