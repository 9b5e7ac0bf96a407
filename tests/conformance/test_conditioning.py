"""The comparison rule's widening for ill-conditioned values (spec/README.md, "Comparing
traces"; UNSPEC-4): a value may differ by its measured sensitivity to the program's inputs,
never a well-conditioned one beyond the plain rule, never NaN against a number."""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from conformance.engines import load_engine
from conformance.judge.compare import EPS, compare
from conformance.judge.conditioning import PERTURB, SCALE, Relief, measure, perturbed
from conformance.judge.executor import execute
from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from tests.conformance.test_executor import leaf, obs

HERE = Path(__file__).parent / "ill_conditioned"


@pytest.fixture(scope="module")
def torch_engine():
    return load_engine("torch", "cpu")


def _call(out, fn, *args):
    return S("call", out=out, args=list(args), params={"fn": fn, "kw": {}},
             clauses=["GRAPH-1"])


def _relief(p, o, engine):
    return Relief(p, o, lambda q: execute(q, engine))


def test_perturbation_moves_float_leaves_by_a_few_ulps_and_nothing_else():
    p = Program([leaf("x", [0.25, -1.5, 0.0], [3]),
                 leaf("i", [1, 2], [2], "int64", rg=False),
                 S("mode", params={"mode": "no_grad"}, body=[leaf("y", [3.0], [1], "float64")]),
                 _call("z", "mul", "x", 2.0)])
    a, b, again = perturbed(p, 0), perturbed(p, 1), perturbed(p, 0)
    assert a == again                          # seeded by the pattern alone
    assert a != b
    xs, ys = a.statements[0].params["values"], a.statements[2].body[0].params["values"]
    for moved, orig, dtype in ((xs[0], 0.25, "float32"), (xs[1], -1.5, "float32"),
                               (ys[0], 3.0, "float64")):
        assert abs(moved - orig) == pytest.approx(abs(orig) * PERTURB * EPS[dtype])
    assert xs[2] == 0.0                        # zeros stay on the exact points of kinks
    assert a.statements[1].params["values"] == [1, 2]   # integers are not rounded values
    assert a.statements[3] == p.statements[3]           # scalars of ops stay as written
    assert p.statements[0].params["values"] == [0.25, -1.5, 0.0]   # the original is intact


def _cos_of_large(value):
    """cos(x * 3000) * 1, x = `value` in float32: the argument's rounding moves the result
    by about 0.01, so two correct engines may disagree far beyond 512 ulps."""
    return Program([leaf("x", [value], [1]), _call("y", "mul", "x", 3000.0),
                    _call("z", "cos", "y"), obs("z", "value")])


def test_an_ill_conditioned_value_may_differ_by_its_spread(torch_engine):
    p = _cos_of_large(30.25)
    o = execute(p, torch_engine)
    e = copy.deepcopy(o)
    e.by_path()["3"].value = [o.by_path()["3"].value[0] + 1e-3]   # ~8000 ulps of float32
    assert [d.what for d in compare(p, o, e)] == ["value"]          # the plain rule
    assert compare(p, o, e, _relief(p, o, torch_engine)) == []


def test_a_well_conditioned_value_gets_no_more_than_the_plain_rule(torch_engine):
    p = Program([leaf("x", [0.5, 1.25], [2]), _call("y", "exp", "x"),
                 _call("s", "sum", "y"), S("backward", target="s", clauses=["GRAPH-1"]),
                 obs("x", "grad"), obs("s", "value")])
    o = execute(p, torch_engine)
    spreads = measure(p, o, lambda q: execute(q, torch_engine))
    assert spreads is not None
    grad = o.by_path()["4"].value
    for want, spread in zip(grad, spreads[("4", "value", 0)], strict=True):
        # exp's own condition is |x| <= 1.25: the allowance stays near the plain 512 ulps
        assert SCALE * spread <= 4 * 512 * EPS["float32"] * abs(want)
    for path, bad in (("4", [grad[0] * (1 + 1e-3), grad[1]]),
                      ("5", o.by_path()["5"].value * (1 + 1e-4))):
        e = copy.deepcopy(o)
        e.by_path()[path].value = bad
        found = compare(p, o, e, _relief(p, o, torch_engine))
        assert [(d.path, d.what) for d in found] == [(path, "value")]


def test_nan_against_a_number_is_never_widened(torch_engine):
    p = _cos_of_large(30.25)
    o = execute(p, torch_engine)
    e = copy.deepcopy(o)
    e.by_path()["3"].value = [math.nan]
    assert [d.what for d in compare(p, o, e, _relief(p, o, torch_engine))] == ["value"]


def test_no_widening_when_a_perturbed_run_does_something_else(torch_engine):
    """A perturbation that changes what the program does (here: a statement that raises)
    changed more than rounding: nothing is widened."""
    p = _cos_of_large(30.25)
    o = execute(p, torch_engine)
    e = copy.deepcopy(o)
    e.by_path()["3"].value = [o.by_path()["3"].value[0] + 1e-3]

    def raising(q):
        t = execute(q, torch_engine)
        t.events[2].status, t.events[2].error = "error", "OTHER"
        return t
    assert measure(p, o, raising) is None
    assert [d.what for d in compare(p, o, e, Relief(p, o, raising))] == ["value"]


def test_hook_gradients_are_widened_like_values(torch_engine):
    p = Program([leaf("x", [30.25], [1]), _call("y", "mul", "x", 3000.0),
                 _call("z", "sin", "y"),
                 S("hook", target="x", out="h", params={"behaviour": "record", "label": "hx"},
                   clauses=["HOOK-1"]),
                 S("backward", target="z", clauses=["GRAPH-1"])])
    o = execute(p, torch_engine)
    calls = o.by_path()["4"].hooks
    assert [c[0] for c in calls] == ["hx"], calls
    e = copy.deepcopy(o)
    e.by_path()["4"].hooks[0][1] = [calls[0][1][0] + 3.0]     # d/dx = 3000 cos(3000 x)
    assert [d.what for d in compare(p, o, e)] == ["hooks"]
    assert compare(p, o, e, _relief(p, o, torch_engine)) == []


@pytest.mark.parametrize("name", sorted(f.name for f in HERE.glob("*.json")))
def test_measured_false_divergences_are_gone(name, torch_engine):
    """Five programs of a 100,000-program refimpl campaign that the plain rule called
    divergent (exp chains near 1e12, cos of large float32 sums, cancelling float64 sums):
    both engines are right within what the programs' inputs determine."""
    p = Program.from_json(json.loads((HERE / name).read_text()))
    refimpl = load_engine("refimpl", "cpu")
    o, e = execute(p, torch_engine), execute(p, refimpl)
    assert compare(p, o, e, _relief(p, o, torch_engine)) == []
