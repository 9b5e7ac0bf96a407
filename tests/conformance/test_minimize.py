"""conformance.minimize: delta debugging keeps the divergence and drops dependents."""
from __future__ import annotations

from conformance.compare import compare
from conformance.engines import load_engine
from conformance.executor import execute
from conformance.minimize import diverges_like, minimize, prune
from conformance.program import Program
from conformance.program import Stmt as S
from tests.conformance.test_executor import leaf, obs, sample


def test_prune_drops_dependents_and_empty_blocks():
    stmts = [
        S("call", out="y", args=["x"], params={"fn": "exp"}),      # x is gone
        obs("y", "value"),
        leaf("z", [1.0], []),
        S("mode", params={"mode": "no_grad"}, body=[obs("y", "value")]),
        S("mode", params={"mode": "no_grad"}, body=[obs("z", "value"), obs("y", "grad")]),
    ]
    kept = prune(stmts)
    assert [s.op for s in kept] == ["leaf", "mode"] and len(kept[1].body) == 1


def test_minimize_keeps_the_divergence():
    oracle, engine = load_engine("torch"), load_engine(
        "tests.conformance.test_executor:no_leaf_check")
    p = sample()
    first = compare(p, execute(p, oracle), execute(p, engine))[0]
    small = minimize(p, diverges_like(oracle, engine, first))
    assert [s.op for s in small.statements] == ["leaf", "inplace"]
    again = compare(small, execute(small, oracle), execute(small, engine))
    assert again and again[0].what == first.what and again[0].clauses[0] == "INPLACE-1"
    assert small.meta["minimized_from"] == sum(1 for _ in p.walk()) and small.seed == p.seed


def test_minimize_shrinks_grad_mode_bodies():
    body = [leaf(f"u{i}", [1.0], []) for i in range(6)] + [obs("u3", "requires_grad")]
    p = Program([leaf("x", [1.0], []), S("mode", params={"mode": "no_grad"}, body=body)])

    def test(q: Program) -> bool:   # "diverges" while u3's observation is there
        return any(s.op == "observe" for _, s in q.walk())
    small = minimize(p, test)
    assert [s.op for _, s in small.walk()] == ["mode", "leaf", "observe"]


def test_minimize_respects_its_budget():
    p = sample()
    calls = []

    def test(q: Program) -> bool:
        calls.append(q)
        return any(s.op == "retain_grad" for s in q.statements)
    small = minimize(p, test, max_tests=3)
    assert len(calls) == 3
    assert any(s.op == "retain_grad" for s in small.statements)     # the last good one


def test_the_generator_s_predictions_follow_their_statements_as_it_shrinks():
    """meta "expect" names statements by path (segment engines run a statement predicted to
    raise as a unit of its own): every candidate's, and the result's, must name the same
    statements as the original's, dropped where the statement is gone or was rewritten."""
    stmts = [leaf("x", [1.0, 2.0], [2], rg=True), leaf("k", [1.0], []),
             S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
             S("inplace", target="x", args=[1.0], params={"fn": "add_"}),
             S("mode", params={"mode": "no_grad"},
               body=[leaf("u", [1.0], []), S("inplace", target="x", args=[1.0],
                                                  params={"fn": "mul_"})]),
             obs("y", "value")]
    expect = {"3": "LEAF_INPLACE", "4.1": "LEAF_INPLACE"}
    p = Program(stmts, seed=5, meta={"expect": dict(expect), "generator": 22})
    seen = []

    def test(q: Program) -> bool:
        for path, kind in q.meta["expect"].items():
            top, _, rest = path.partition(".")
            s = q.statements[int(top)]
            if rest:
                s = s.body[int(rest)]
            seen.append((s.op, s.params["fn"], kind))
        assert q.meta["generator"] == 22
        return any(s.op == "inplace" for s in q.statements)
    small = minimize(p, test)
    assert [s.op for s in small.statements] == ["leaf", "inplace"]
    assert small.meta["expect"] == {"1": "LEAF_INPLACE"}
    assert seen and set(seen) <= {("inplace", "add_", "LEAF_INPLACE"),
                                  ("inplace", "mul_", "LEAF_INPLACE")}
    assert p.meta["expect"] == expect           # the original's meta is not touched
