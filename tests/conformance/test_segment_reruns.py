"""The executor's rerun of a unit that failed as it ran (conformance/judge/segments.py,
`Failed`): it must not hide what only the unit showed, the graph drawn of a program is that of
the run `execute` keeps, and the statements a program predicts raise are read safely."""
from __future__ import annotations

from conformance.engines import load_engine
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.judge.segments import predicted_to_raise
from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from conformance.reports import graph
from tests.broken_engines.segment_escapes_at_once import EscapesAtOnce
from tests.conformance.test_executor import leaf, obs


def escaping() -> Program:
    """One unit (no backward): y observed, then a leaf's in-place write raises LEAF_INPLACE."""
    return Program([
        leaf("x", [1.0, 2.0], [2]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
        obs("y", "value"),
        S("inplace", target="x", args=[1.0], params={"fn": "add_"}),
        S("call", out="z", args=["y", 3.0], params={"fn": "add"}),
        obs("z", "value"),
    ])


def test_a_rerun_that_explains_the_failure_stands():
    p = escaping()
    o = execute(p, load_engine("torch"))
    engine = EscapesAtOnce()
    trace = execute(p, engine)
    assert compare(p, o, trace) == []
    assert engine.units == ["0-5"] + [f"{i}-{i}" for i in range(6)]


def test_a_rerun_does_not_hide_what_only_the_unit_showed():
    """y's value is wrong in the unit and right alone: the failed run, which shows it, stays."""
    p = escaping()
    o = execute(p, load_engine("torch"))
    trace = execute(p, EscapesAtOnce(wrong_in_units=True))
    found = compare(p, o, trace)
    assert found and (found[0].path, found[0].what, found[0].segment) == ("2", "value", "0-5")


def test_the_graph_drawn_is_that_of_the_run_execute_keeps():
    p = escaping()
    engine = EscapesAtOnce()
    assert execute(p, engine).by_path()["4"].status == "ok"      # z bound, in the rerun
    names = [n for t in graph.capture(p, engine)["tensors"] for n in t["names"]]
    assert sorted(names) == ["x", "y", "z"]


def test_a_prediction_s_paths_are_ascii_digits_only():
    # str.isdigit() holds for '²' and '¹²', which int() refuses: read as no statement
    assert predicted_to_raise({"expect": {"²": "A", "¹²": "B", "٣": "C", "2": "D"}}) == {2}
    p = Program(escaping().statements, meta={"expect": {"²": "LEAF_INPLACE"}})
    execute(p, EscapesAtOnce())     # does not raise
