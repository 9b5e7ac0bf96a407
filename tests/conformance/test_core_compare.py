"""conformance.compare: tolerances, errors by kind and statement, what spec/unspecified.md
leaves open (UNSPEC-1, UNSPEC-3, UNSPEC-5), and the clauses a divergence cites."""
from __future__ import annotations

import copy

import pytest

from conformance.compare import TOLERANCES, close, compare, involved_clauses
from conformance.engines import load_engine
from conformance.executor import execute
from conformance.program import Program
from conformance.program import Stmt as S
from tests.conformance.test_core_programs import leaf, obs, sample, saved_output


@pytest.fixture(scope="module")
def torch_engine():
    return load_engine("torch")


def traces(program, engine):
    t = execute(program, engine)
    return t, copy.deepcopy(t)


def test_close_per_dtype():
    rel, _ = TOLERANCES["float32"]
    assert close([1.0, 2.0], [1.0 + rel / 2, 2.0], "float32")
    assert not close([1.0], [1.0 + 10 * rel], "float32")
    assert close(float("nan"), float("nan"), "float64")
    assert not close(float("inf"), 1e308, "float64")
    assert not close(1, 2, None) and close(3, 3, None)
    assert not close(True, 1, None) and not close(None, 0.0, None)
    assert not close([1.0], [1.0, 2.0], "float32")


def test_value_beyond_tolerance_diverges_and_cites_clauses(torch_engine):
    p = sample()
    o, e = traces(p, torch_engine)
    ev = e.by_path()["12"]                          # x.grad after the first backward
    ev.value[0][0] += 1.0
    found = compare(p, o, e)
    assert [(d.path, d.what) for d in found] == [("12", "value")]
    # its own clause first, then those of the statements that made x
    assert found[0].clauses[0] == "LEAF-5" and "LEAF-1" in found[0].clauses
    ev.value[0][0] -= 1.0 - 1e-7                  # back within tolerance
    assert compare(p, o, e) == []


def test_errors_compare_by_kind_not_text(torch_engine):
    p = sample()
    o, e = traces(p, torch_engine)
    e.by_path()["10"].message = "RuntimeError: worded differently"     # UNSPEC-5
    assert compare(p, o, e) == []
    e.by_path()["10"].error = "VERSION_MISMATCH"
    found = compare(p, o, e)
    assert found[0].what == "outcome" and "LEAF_INPLACE" in found[0].oracle
    assert "VERSION_MISMATCH" in found[0].engine and found[0].clauses[0] == "INPLACE-1"


def test_error_on_one_side_only(torch_engine):
    p = saved_output()
    o, e = traces(p, torch_engine)
    ev = e.by_path()["5"]
    ev.status, ev.error, ev.message = "ok", None, None
    found = compare(p, o, e)
    assert (found[0].path, found[0].what) == ("5", "outcome")
    assert found[0].clauses[0] == "VER-7" and "VER-2" in found[0].clauses


def test_warnings_and_hooks(torch_engine):
    p = sample()
    o, e = traces(p, torch_engine)
    e.by_path()["14"].warnings = []
    e.by_path()["11"].hooks.reverse()
    assert [(d.path, d.what) for d in compare(p, o, e)] == [("11", "hooks"), ("14", "warnings")]


def test_grad_after_a_failed_backward_is_unspecified(torch_engine):
    """UNSPEC-1: no .grad is compared after a raising backward until it is assigned again."""
    p = Program([
        leaf("x", [1.0, 2.0], [2]),
        S("call", out="y", args=["x"], params={"fn": "exp"}),
        S("inplace", target="y", args=[1.0], params={"fn": "add_"}),
        S("call", out="s", args=["y"], params={"fn": "sum"}),
        S("backward", target="s"),                         # VERSION_MISMATCH
        obs("x", "grad"),
        S("set_grad", target="x", args=[None]),
        obs("x", "grad"),
    ])
    o, e = traces(p, torch_engine)
    assert o.by_path()["4"].error == "VERSION_MISMATCH"
    e.by_path()["5"].value = [9.0, 9.0]
    assert compare(p, o, e) == []
    e.by_path()["7"].value = [9.0, 9.0]
    assert [d.path for d in compare(p, o, e)] == ["7"]


def test_value_of_a_tensor_stored_as_grad_is_unspecified(torch_engine):
    """UNSPEC-3: `x.grad = g` may store g or a copy; accumulation may write into it."""
    p = Program([
        leaf("x", [1.0, 2.0], [2]),
        leaf("g", [1.0, 1.0], [2], rg=False),
        S("set_grad", target="x", args=["g"]),
        S("call", out="s", args=["x"], params={"fn": "sum"}),
        S("backward", target="s"),
        obs("g", "value"),
        obs("x", "grad"),
    ])
    o, e = traces(p, torch_engine)
    e.by_path()["5"].value = [1.0, 1.0]            # a copying engine left g alone
    assert compare(p, o, e) == []


def test_skipped_statements_are_not_compared(torch_engine):
    p = sample()
    o, e = traces(p, torch_engine)
    e.by_path()["26"].status = "skipped"
    assert compare(p, o, e) == []


def test_involved_clauses_follow_the_data():
    p = saved_output()
    assert involved_clauses(p, "5") == ["VER-7", "VER-2", "VER-10"]
    assert involved_clauses(p, "99") == []
    assert "MODE-1" in involved_clauses(sample(), "18.1")


def test_wrong_return_types_are_divergences_not_crashes(torch_engine):
    import json

    from tests.conformance.test_core_programs import wrong_types
    p = sample()
    o, e = execute(p, torch_engine), execute(p, wrong_types())
    json.dumps(e.to_json())                         # still plain data
    found = compare(p, o, e)
    assert [(d.path, d.what) for d in found] == [("15", "value")]
    assert "<object>" in found[0].engine
