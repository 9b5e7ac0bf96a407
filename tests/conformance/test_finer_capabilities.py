"""Finer capabilities (conformance/spec/capabilities.py, docs/engines.md "Finer capabilities"):
declarations checked at load, the generator honouring each over many seeds, node names left out
of the comparison for graph structure alone, and the probes that catch a lying declaration."""
from __future__ import annotations

import pytest
from hypothesis import given, settings

from conformance.engines import EngineError, capabilities_of, load_engine
from conformance.engines.torchlike import ALL_CAPABILITIES, TorchLike
from conformance.gen.core import program_for_seed, programs
from conformance.gen.lacks import ops_used
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.judge.probes import probe, probe_names
from conformance.judge.verdict import attribute
from conformance.lang import ops
from conformance.lang.program import Program, Stmt
from conformance.reports.report import clause_rows, set_statuses
from conformance.spec.capabilities import closure, combine
from conformance.spec.reader import load_spec

MOD = "tests.conformance.test_finer_capabilities"
SEEDS = range(300)
VIEW_KINDS = ("view", "getitem", "multi_view")
WRITES = ("inplace", "setitem", "dirty_function", "set_", "set_data")


def _torch():
    import torch
    return torch


def _engine(name: str, caps=ALL_CAPABILITIES, lacks=frozenset(), cls=TorchLike):
    e = cls(_torch(), name, "cpu", frozenset(caps))
    e.lacks_ops = lacks
    return e


# ---- factories load_engine is pointed at ----------------------------------------------------
def unknown_op(device="cpu"):
    return _engine("unknown-op", lacks=frozenset({"fil_"}))


def lacks_sum(device="cpu"):
    return _engine("lacks-sum", lacks=frozenset({"sum", "fill_"}))


def lacks_a_string(device="cpu"):
    return _engine("lacks-a-string", lacks="fill_")


def copying_views_with_base(device="cpu"):
    return _engine("copying-base", (ALL_CAPABILITIES - {"views"}) | {"view_ops"})


def finer_only(device="cpu"):
    return _engine("finer-only", {"core", "view_ops", "no_grad", "graph_structure"},
                   frozenset({"fill_", "matmul"}))


def _load_error(factory: str) -> str:
    with pytest.raises(EngineError) as info:
        load_engine(f"{MOD}:{factory}")
    message = str(info.value)
    assert "\n" not in message
    return message


# ---- load-time validation -------------------------------------------------------------------
def test_an_op_the_table_lacks_is_refused_at_load_in_one_line():
    assert "lacks_ops names ops the op table does not have: fil_" in _load_error("unknown_op")


def test_an_op_every_backward_pass_needs_cannot_be_lacked():
    assert "lacks_ops names sum" in _load_error("lacks_sum")


def test_lacks_ops_must_be_a_set_of_names():
    assert "lacks_ops must be a set of op names" in _load_error("lacks_a_string")


def test_view_base_with_views_that_copy_is_refused_as_contradictory():
    message = _load_error("copying_views_with_base")
    assert "declares view_base with view_ops but not views" in message


def test_finer_capabilities_alone_load_and_reach_the_generator():
    e = load_engine(f"{MOD}:finer_only")
    caps = combine(capabilities_of(e), capabilities_of(load_engine("torch")))
    assert caps == {"core", "view_ops", "no_grad", "graph_structure", "lacks:fill_",
                    "lacks:matmul"}


def test_combined_capabilities_of_coarse_engines_are_what_they_were():
    torch, refimpl = load_engine("torch"), load_engine("refimpl")
    assert combine(capabilities_of(refimpl), capabilities_of(torch)) == \
        frozenset(refimpl.capabilities) & frozenset(torch.capabilities)


# ---- the generator honouring each -----------------------------------------------------------
@pytest.mark.parametrize("lacked", [("fill_", "copy_", "add"), ("view", "expand", "t", "narrow"),
                                    ("exp", "add_", "mul_", "neg", "where")])
def test_lacked_ops_are_never_drawn(lacked):
    caps = set(ALL_CAPABILITIES) | {f"lacks:{op}" for op in lacked}
    named = {op: 0 for op in lacked}
    for seed in SEEDS:
        p = program_for_seed(seed, caps, 20)
        used = {s.params.get("fn") for _, s in p.walk() if s.op in ("call", "view", "inplace")}
        assert not used & set(lacked), (seed, used & set(lacked))
        for op in lacked:
            named[op] += op in {s.params.get("fn") for _, s in program_for_seed(seed).walk()}
    assert all(named.values()), named      # the same seeds name each when nothing is lacked


def _lacking(pred) -> frozenset[str]:
    return frozenset(r.name for r in ops.OPS if pred(r))


@pytest.mark.parametrize("lacked", [
    _lacking(lambda r: r.kind == "inplace"),
    _lacking(lambda r: r.kind == "inplace" and not r.arity and r.name != "zero_"),
    _lacking(lambda r: r.kind in ("call", "inplace") and not r.arity),
    _lacking(lambda r: r.name not in ("sum", "mul")),
], ids=["all-in-place", "unary-in-place-but-zero_", "all-unary", "all-but-sum-mul"])
def test_a_draw_whose_every_op_is_lacked_draws_something_else(lacked):
    """Where every op a draw could name is lacked the draw gives way (or the program is drawn
    again), never an error: a few hundred seeds, each a program naming none of them."""
    caps = frozenset(ALL_CAPABILITIES) | {f"lacks:{op}" for op in lacked}
    for seed in SEEDS:
        p = program_for_seed(seed, caps, 20)
        used = {s.params.get("fn") for _, s in p.walk() if s.op in ("call", "view", "inplace")}
        assert not used & lacked, (seed, used & lacked)


@settings(max_examples=60, deadline=None)
@given(programs(frozenset(ALL_CAPABILITIES) | {f"lacks:{op}" for op in _lacking(
    lambda r: r.name not in ("sum", "mul"))}))
def test_hypothesis_draws_for_an_engine_lacking_most_ops_name_none(p):
    assert ops_used(p) <= {"sum", "mul", None}, ops_used(p)


def test_lacked_ops_leave_the_op_tables_before_any_redraw():
    caps = frozenset(ALL_CAPABILITIES) | {"lacks:add_", "lacks:exp"}
    assert "add_" not in dict(ops.weights("inplace", 22, caps))
    assert "exp" not in dict(ops.weights("call", 22, caps))
    assert ops.weights("call", 22, frozenset(ALL_CAPABILITIES)) == \
        ops.weights("call", 22, frozenset(ALL_CAPABILITIES) | {"lacks:nothing"})


def test_no_grad_alone_draws_only_plain_no_grad_blocks():
    caps = (set(ALL_CAPABILITIES) - {"grad_modes"}) | {"no_grad"}
    blocks = 0
    for seed in SEEDS:
        for path, s in program_for_seed(seed, caps, 20).walk():
            assert s.op != "grad_enabled", (seed, path)
            if s.op == "mode" and s.params["mode"] != "inference_mode":
                blocks += 1
                assert s.params == {"mode": "no_grad"}, (seed, path, s.params)
    assert blocks >= 30, blocks


def _grad_enabled(stmts: dict[str, Stmt], path: str) -> bool:
    """Grad mode at the statement at path: that of the innermost grad-mode block around it."""
    parts = path.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        s = stmts[".".join(parts[:depth])]
        if s.op == "mode":
            mode = s.params["mode"]
            return mode == "enable_grad" or (mode == "set_grad_enabled" and s.params["enabled"])
    return True


def _aliasing_shown(program: Program) -> list[str]:
    """Statements that would show whether views alias: a write to anything that shares memory
    with a view (through view ops, detach() or .data), `version` of it, a view of a bound
    .grad, `_base`, detach_() of a view, a view made with grad mode off (torch's says the
    base's requires_grad, MODE-9, and requires_grad_(False) on it raises, LEAF-11);
    statements the generator expects to raise aside."""
    parent: dict[str, str] = {}

    def root(n: str) -> str:
        while parent.get(n, n) != n:
            n = parent[n]
        return n
    viewed, views, grads, found = set(), set(), set(), []
    expect = program.meta.get("expect", {})
    stmts = dict(program.walk())
    for path, s in stmts.items():
        shared = {root(v) for v in viewed}
        if s.op in VIEW_KINDS and not _grad_enabled(stmts, path):
            found.append(f"{path}: a view made with grad mode off")
        if s.op in VIEW_KINDS:
            outs = s.params.get("outs") or [s.out]
            views.update(outs)
            found += [f"{path}: a view of a .grad"] if s.target in grads else []
            for o in outs:
                parent[root(o)] = root(s.target)
            viewed.add(s.target)
        elif s.op in ("detach", "data"):
            parent[root(s.out)] = root(s.target)
        elif s.op == "grad_ref":
            grads.add(s.out)
        if path in expect:
            continue
        if s.op in WRITES and root(s.target) in shared:
            found.append(f"{path}: {s.op} of {s.target}")
        if s.op == "detach_" and s.target in views or s.op == "base_is":
            found.append(f"{path}: {s.op}")
        seen = [(s.target, s.params.get("what"))] if s.op == "observe" else \
            [(n, w) for n, w, _ in s.params.get("of", [])] if s.op == "sweep" else []
        found += [f"{path}: version of {n}" for n, w in seen
                  if w == "version" and root(n) in shared]
    return found


def test_views_that_copy_are_drawn_where_their_aliasing_cannot_be_seen():
    caps = (set(ALL_CAPABILITIES) - {"views", "view_base"}) | {"view_ops"}
    drawn = 0
    for seed in SEEDS:
        p = program_for_seed(seed, caps, 20)
        drawn += sum(1 for _, s in p.walk() if s.op in VIEW_KINDS)
        assert not _aliasing_shown(p), (seed, _aliasing_shown(p))
    assert drawn >= 200, drawn


def test_the_aliasing_check_sees_what_views_that_alias_show():
    shown = sum(1 for seed in SEEDS if _aliasing_shown(program_for_seed(seed, ALL_CAPABILITIES)))
    assert shown >= 30, shown


def test_graph_structure_alone_observes_nodes():
    caps = (set(ALL_CAPABILITIES) - {"grad_fn", "node_hooks"}) | {"graph_structure"}
    seen = set()
    for seed in range(60):
        for _, s in program_for_seed(seed, caps, 20).walk():
            seen.update([s.params.get("what")] if s.op == "observe" else
                        [w for _, w, _ in s.params.get("of", [])])
    assert {"grad_fn", "next_functions"} <= seen


# ---- comparing structure without node names ------------------------------------------------
class Renamed(TorchLike):
    """torch with its own node names: the same graph, named otherwise."""

    def grad_fn_name(self, t):
        name = super().grad_fn_name(t)
        return None if name is None else f"node{len(name)}"

    def next_functions(self, t):
        return [None if n is None else "edge" for n in super().next_functions(t)]


class Unpatterned(Renamed):
    """... and next_functions without the None of an input that needs no grad."""

    def next_functions(self, t):
        return [n for n in super().next_functions(t) if n is not None]


def _graph_program(caps: list[str]) -> Program:
    leaf = {"shape": [2], "dtype": "float64"}
    return Program([
        Stmt("leaf", out="x", params={"values": [1.0, 2.0], "requires_grad": True, **leaf}),
        Stmt("leaf", out="c", params={"values": [3.0, 4.0], "requires_grad": False, **leaf}),
        Stmt("call", out="y", args=["x", "c"], params={"fn": "mul", "kw": {}}),
        Stmt("observe", target="y", params={"what": "grad_fn"}),
        Stmt("observe", target="y", params={"what": "next_functions"}),
        Stmt("sweep", params={"of": [["y", "grad_fn", []], ["x", "grad_fn", []]]}),
    ], meta={"capabilities": caps})


@pytest.mark.parametrize(("cls", "caps", "diverges"), [
    (Renamed, ["core", "graph_structure"], False),
    (Renamed, ["core", "grad_fn"], True),
    (Unpatterned, ["core", "graph_structure"], True),
])
def test_graph_structure_alone_compares_no_node_names(cls, caps, diverges):
    program = _graph_program(caps)
    oracle = load_engine("torch")
    engine = _engine("renamed", cls=cls)
    found = compare(program, execute(program, oracle), execute(program, engine))
    assert bool(found) == diverges, found


@pytest.mark.parametrize("caps", [["core", "graph_structure"], ["core", "grad_fn"]])
def test_a_structure_divergence_names_a_clause_the_engine_is_judged_on(caps):
    """next_functions without the None of an input that needs no grad: the clause named is one
    whose requires the capabilities cover (graph_structure, or grad_fn that implies it), and
    the clause table counts it as diverging, not n/a."""
    program = _graph_program(caps)
    oracle = execute(program, load_engine("torch"))
    engine = execute(program, _engine("unpatterned", cls=Unpatterned))
    primaries = {d.primary for d in attribute(program, oracle, engine,
                                              compare(program, oracle, engine))}
    spec = load_spec()
    assert primaries and all(set(spec.clauses[c].requires) <= closure(caps) for c in primaries)
    rows = clause_rows(spec, frozenset(caps), {}, {c: 1 for c in primaries})
    set_statuses(spec, rows, frozenset(caps), {}, 1)
    assert {rows[c]["status"] for c in primaries} == {"diverges"}, rows
    assert all("reason" not in rows[c] for c in primaries), rows


# ---- probes of lying declarations ----------------------------------------------------------
class NoExp(TorchLike):
    def call(self, fn, args, kw):
        if fn == "exp":
            raise NotImplementedError("no exp")
        return super().call(fn, args, kw)


def test_an_op_declared_lacking_that_works_is_reported():
    r = probe(_engine("has-fill", lacks=frozenset({"fill_"})), load_engine("torch"), "op:fill_")
    assert r.verdict == "declared absent but works", str(r)


def test_an_op_not_declared_lacking_that_fails_is_reported():
    engine = _engine("no-exp", lacks=frozenset({"fill_"}), cls=NoExp)
    names = probe_names(engine)
    assert "op:exp" in names and "op:fill_" in names
    r = probe(engine, load_engine("torch"), "op:exp")
    assert r.verdict == "declared but fails" and "NotImplementedError" in r.detail, str(r)


class CopyingViews(TorchLike):
    """torch whose view ops copy: right values and gradients, no aliasing."""

    def view(self, target, fn, kw):
        return super().view(target, fn, kw).clone()

    def getitem(self, target, index):
        return super().getitem(target, index).clone()


COPYING = (set(ALL_CAPABILITIES) - {"views", "view_base"}) | {"view_ops"}


def test_views_that_copy_fail_the_views_probe_and_pass_the_view_ops_one():
    engine, oracle = _engine("copying", COPYING, cls=CopyingViews), load_engine("torch")
    assert probe(engine, oracle, "views").verdict == "ok"      # declared absent, and fails
    assert probe(engine, oracle, "view_ops").verdict == "ok"   # declared, and works
    assert probe(load_engine("torch"), oracle, "views").verdict == "ok"


def test_detaching_a_view_in_place_is_unprobed_without_views():
    engine = _engine("copying", COPYING - {"detach_inplace"}, cls=CopyingViews)
    r = probe(engine, load_engine("torch"), "detach_inplace")
    assert r.verdict == "unprobed" and "views" in r.detail, str(r)


def test_ops_are_probed_only_for_engines_that_declare_lacking_some():
    assert not [n for n in probe_names(load_engine("torch")) if n.startswith("op:")]


def test_graph_structure_probe_passes_other_names_that_grad_fn_refuses():
    oracle = load_engine("torch")
    engine = _engine("renamed", (ALL_CAPABILITIES - {"grad_fn"}) | {"graph_structure"},
                     cls=Renamed)
    assert probe(engine, oracle, "graph_structure").verdict == "ok"
    assert probe(engine, oracle, "grad_fn").verdict == "ok"     # absent, and it fails
    assert probe(engine, oracle, "grad_fn").works is False


def test_a_capability_probe_that_names_a_lacked_op_is_left_to_the_op_probes():
    engine = _engine("no-where", lacks=frozenset({"where"}))
    r = probe(engine, load_engine("torch"), "deriv_ops")
    assert r.works is None and "names ops the engine lacks: where" in r.detail, str(r)


def test_a_clause_only_lacked_ops_exercise_is_not_applicable_and_says_why():
    from conformance.reports.report import clause_rows, set_statuses
    from conformance.spec.reader import load_spec
    spec = load_spec()
    caps = frozenset(ALL_CAPABILITIES) | {"lacks:where"}
    rows = clause_rows(spec, caps, {"DERIV-8": 3}, {})
    set_statuses(spec, rows, caps, {}, 10)
    assert rows["DERIV-6"]["status"] == "n/a"
    assert rows["DERIV-6"]["reason"] == "exercised only by ops the engine lacks (where)"
    assert rows["DERIV-8"]["status"] == "pass"      # max and min exercise it too


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(programs(frozenset(ALL_CAPABILITIES) | {"lacks:add", "lacks:mul_", "lacks:view"}, 12))
def test_hypothesis_programs_never_name_a_lacked_op(p):
    used = {s.params.get("fn") for _, s in p.walk() if s.op in ("call", "view", "inplace")}
    assert not used & {"add", "mul_", "view"}


def test_the_per_clause_minimum_does_not_hunt_clauses_only_lacked_ops_exercise():
    from conformance.campaign.coverage import eligible
    every = eligible(frozenset(ALL_CAPABILITIES))
    without = eligible(frozenset(ALL_CAPABILITIES) | {"lacks:where", "lacks:double",
                                                      "lacks:float"})
    assert set(every) - set(without) == {"DERIV-3", "DERIV-6"}
