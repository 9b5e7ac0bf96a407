"""The mygrad adapter (conformance/engines/mygrad.py): its declaration against the probes, its
methods on small cases, and a small campaign through it.

Skipped when mygrad is not installed (the optional `mygrad` extra, pinned to 2.5.0). What mygrad
does differently from the spec is asserted here only where the adapter depends on it (the
declaration, the spellings it documents); the findings themselves are the python blocks of
docs/findings.md and the scripts of docs/bugs/mygrad-*.md, which test_findings.py and
test_bug_reports.py re-run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mygrad", reason="mygrad is not installed (extra 'mygrad')")

from conformance.compare import close  # noqa: E402
from conformance.engines import base, load_engine  # noqa: E402
from conformance.engines.mygrad import (  # noqa: E402
    CAPABILITIES,
    CLASSES,
    RELEASE,
    AdapterLimit,
    mygrad_engine,
)
from conformance.engines.torchlike import torch_engine  # noqa: E402
from conformance.generate import GENERATOR_VERSION  # noqa: E402
from conformance.judge.probes import check_declarations  # noqa: E402
from conformance.lang.ops import ROWS  # noqa: E402
from conformance.program import FUNCTIONS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FACTORY = "conformance.engines.mygrad:mygrad_engine"


@pytest.fixture(scope="module")
def mg():
    return mygrad_engine()


@pytest.fixture(scope="module")
def th():
    return torch_engine()


def leaf(e, values, shape, rg=False, dtype="float64"):
    return e.leaf(values, shape, dtype, rg)


def test_identity_and_declaration(mg):
    assert isinstance(mg, base.Engine)
    assert mg.name == "mygrad" and mg.version == RELEASE == "2.5.0" and mg.device == "cpu"
    assert mg.capabilities == CAPABILITIES == frozenset(
        {"core", "views", "inplace", "narrow_select", "multi_views", "view_base"})
    assert mg.classes == CLASSES == frozenset({"core"})
    assert load_engine(FACTORY).capabilities == CAPABILITIES
    assert load_engine("mygrad").name == "mygrad"        # the entry point, once installed


def test_the_probes_agree_with_the_declaration(mg, th):
    results = {r.capability: r for r in check_declarations(mg, th, absent_only=False)}
    verdicts = {c: r.verdict for c, r in results.items() if r.verdict != "ok"}
    # inplace is declared although its probe fails: mygrad documents in-place writes to
    # leaves, where torch raises LEAF_INPLACE (the module docstring; docs/findings.md M5)
    assert verdicts == {"inplace": "declared but fails",
                        **{c: "unprobed" for c in ("node_hooks", "custom_function",
                                                   "data_assign", "saved_tensors_hooks")}}
    assert "LEAF_INPLACE" in results["inplace"].detail
    # why the absent ones are absent, as the module docstring says
    assert "requires_grad = True" in results["grad_modes"].detail     # mg.no_autodiff
    assert "cannot involve non-constant" in results["deriv_ops"].detail  # mg.floor


def test_leaf_and_observations(mg):
    x = leaf(mg, [1, 2, 3, 4, 5, 6], [2, 3], rg=True)
    assert mg.to_list(x) == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert mg.shape(x) == (2, 3) and mg.dtype(x) == "float64"
    assert mg.requires_grad(x) and mg.is_leaf(x) and mg.get_grad(x) is None
    s = leaf(mg, [2.5], [], dtype="float32")
    assert mg.to_list(s) == 2.5 and mg.shape(s) == () and mg.dtype(s) == "float32"
    i = leaf(mg, [1, -2], [2], dtype="int64")
    assert mg.to_list(i) == [1, -2] and mg.dtype(i) == "int64" and not mg.requires_grad(i)


def test_is_leaf_bookkeeping_survives_backward(mg):
    x = leaf(mg, [1.0, 2.0], [2], rg=True)
    y = mg.call("mul", [x, 3.0], {})
    assert not mg.is_leaf(y)
    mg.backward(mg.call("sum", [y], {}), None, None, None)
    assert y.creator is None            # mygrad clears the graph: creator cannot say
    assert not mg.is_leaf(y) and mg.is_leaf(x)
    d = mg.detach(y)
    assert mg.is_leaf(d) and not mg.requires_grad(d)


def test_an_inplace_write_makes_a_leaf_a_non_leaf(mg):
    x = leaf(mg, [1.0, 2.0], [2], rg=True)
    mg.inplace(x, "add_", [1.0], {})    # torch raises LEAF_INPLACE; mygrad documents it
    assert mg.to_list(x) == [2.0, 3.0] and not mg.is_leaf(x)


# the ops the generator draws for mygrad: not the rows of capability deriv_ops
@pytest.mark.parametrize("fn", sorted(f for f in FUNCTIONS if ROWS[f].since <= GENERATOR_VERSION
                                      and ROWS[f].needs in (None, *CAPABILITIES)))
def test_call_matches_torch_values_and_gradients(mg, th, fn):
    kw = {"pow": {"exponent": 2}, "clamp": {"min": -0.5, "max": 1.0},
          "sum": {"dim": [1], "keepdim": True}, "mean": {"dim": 0, "keepdim": False}}.get(fn, {})
    vals = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75]

    def run(e):
        a = leaf(e, vals, [2, 3], rg=True)
        b = leaf(e, vals, [3, 2]) if fn == "matmul" else leaf(e, vals, [2, 3])
        args = [a, b] if FUNCTIONS[fn] == 2 else [a]
        if fn in ("log", "sqrt"):
            args = [e.call("abs", [a], {})]
        out = e.call(fn, args, kw)
        e.backward(e.call("sum", [out], {}), None, None, None)
        return e.to_list(out), e.to_list(e.get_grad(a))
    (v1, g1), (v2, g2) = run(mg), run(th)
    assert close(v1, v2, "float64") and close(g1, g2, "float64")


@pytest.mark.parametrize("fn,kw,shape", [
    ("reshape", {"shape": [3, 2]}, (3, 2)), ("view", {"shape": [6]}, (6,)), ("t", {}, (3, 2)),
    ("transpose", {"dims": [0, -1]}, (3, 2)), ("unsqueeze", {"dim": 0}, (1, 2, 3)),
    ("squeeze", {"dim": 0}, (2, 3)),
    ("expand", {"size": [4, -1, 3]}, (4, 2, 3)),
    ("narrow", {"dim": 1, "start": -2, "length": 2}, (2, 2)),
    ("select", {"dim": -1, "index": 1}, (2,))])
def test_views_their_base_and_their_gradients(mg, th, fn, kw, shape):
    def run(e):
        x = leaf(e, [1, 2, 3, 4, 5, 6], [2, 3], rg=True)
        v = e.view(x, fn, kw)
        e.backward(e.call("sum", [e.call("mul", [v, v], {})], {}), None, None, None)
        return e.shape(v), e.to_list(e.get_grad(x)), e.base(v) is x
    assert run(mg) == run(th) and run(mg)[0] == shape


@pytest.mark.parametrize("fn,kw", [("split", {"size": 2, "dim": 1}),
                                   ("split", {"size": [1, 2], "dim": -1}),
                                   ("chunk", {"chunks": 2, "dim": 1}),
                                   ("unbind", {"dim": 0})])
def test_view_many(mg, th, fn, kw):
    def run(e):
        x = leaf(e, [1, 2, 3, 4, 5, 6], [2, 3])
        return [e.to_list(v) for v in e.view_many(x, fn, kw)]
    assert run(mg) == run(th)


@pytest.mark.parametrize("fn,args,kw", [
    ("add_", [1.0], {}), ("mul_", [2.0], {}), ("exp_", [], {}), ("pow_", [], {"exponent": 2}),
    ("clamp_", [], {"min": 0.0, "max": 2.0}), ("sigmoid_", [], {}), ("relu_", [], {}),
    ("zero_", [], {}), ("fill_", [3.0], {}), ("iadd", [2.0], {}), ("idiv", [2.0], {})])
def test_inplace_on_a_non_leaf_matches_torch(mg, th, fn, args, kw):
    def run(e):
        x = leaf(e, [0.5, -1.0, 2.0], [3], rg=True)
        y = e.call("mul", [x, 1.5], {})
        y = e.inplace(y, fn, args, kw)
        e.backward(e.call("sum", [e.call("mul", [y, y], {})], {}), None, None, None)
        return e.to_list(y), e.to_list(e.get_grad(x))
    (v1, g1), (v2, g2) = run(mg), run(th)
    assert close(v1, v2, "float64") and close(g1, g2, "float64")


def test_setitem_through_a_view_reaches_the_base(mg):
    x = leaf(mg, [1.0, 2.0, 3.0, 4.0], [4], rg=True)
    y = mg.call("mul", [x, 1.0], {})
    v = mg.getitem(y, (slice(0, 2),))
    mg.setitem(v, (0,), 10.0)
    assert mg.to_list(y) == [10.0, 2.0, 3.0, 4.0]
    mg.backward(mg.call("sum", [y], {}), None, None, None)
    assert mg.to_list(mg.get_grad(x)) == [0.0, 1.0, 1.0, 1.0]


def test_what_the_adapter_refuses(mg):
    x = leaf(mg, [1.0, 2.0], [2], rg=True)
    c = leaf(mg, [1.0, 2.0], [2])
    mg.requires_grad_(x, True)          # nothing to change: allowed
    mg.requires_grad_(c, False)
    for f in (lambda: mg.requires_grad_(c, True),
              lambda: mg.set_grad(x, leaf(mg, [0.0, 0.0], [2])),
              lambda: mg.backward(mg.call("sum", [x], {}), None, None, [x]),
              lambda: mg.backward(mg.call("sum", [x], {}), None, True, None),
              lambda: mg.autograd_backward([x, x], None, None)):
        with pytest.raises(AdapterLimit):
            f()
    mg.backward(mg.call("sum", [x], {}), None, None, None)
    mg.set_grad(x, None)                # null_grad()
    assert mg.get_grad(x) is None


def test_grad_modes_are_no_autodiff(mg):
    x = leaf(mg, [1.0], [1], rg=True)
    assert mg.is_grad_enabled()
    with mg.grad_mode("no_grad"):
        assert not mg.is_grad_enabled()
        y = mg.call("exp", [x], {})
        with pytest.raises(AdapterLimit):
            mg.grad_mode("enable_grad")
    assert mg.requires_grad(y) and y.creator is None    # not a constant: not declared
    with mg.grad_mode("enable_grad"):
        assert mg.is_grad_enabled()
    assert mg.grad_mode_decorator("no_grad")(mg.is_grad_enabled)() is False


def _raise(f):
    try:
        f()
    except Exception as exc:    # noqa: BLE001 - the adapter classifies whatever mygrad raises
        return exc
    raise AssertionError("expected an error")


def test_classify_error(mg):
    x = leaf(mg, [1.0, 2.0], [2], rg=True)
    assert mg.classify_error(_raise(lambda: leaf(mg, [1, 2], [2], rg=True,
                                                 dtype="int64"))) == "REQUIRES_GRAD_DTYPE"
    bad = _raise(lambda: mg.backward(mg.call("mul", [x, 2.0], {}),
                                     leaf(mg, [1.0, 1.0, 1.0], [3]), None, None))
    assert mg.classify_error(bad) == "GRAD_OUTPUT_SHAPE"
    assert mg.classify_error(AdapterLimit("x")) is None
    assert mg.classify_error(ValueError("something else")) is None


def test_a_small_campaign(tmp_path):
    r = subprocess.run([sys.executable, "-m", "conformance", "run", "--engine", "mygrad",
                        "--count", "40", "--size", "12", "--out", str(tmp_path), "--quiet"],
                       cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode in (0, 1), (r.returncode, r.stderr[-2000:])
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["programs"] == 40 and report["engine"] == "mygrad"
    assert report["crashes"] == report["timeouts"] == report["oracle_failures"] == []
    assert not any(d["what"] == "harness" for d in report["divergences"])
    assert report["capabilities"] == sorted(CAPABILITIES)


def test_extra_and_entry_point_are_declared():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["mygrad"] == [f"mygrad=={RELEASE}"]
    assert project["entry-points"]["gradspec.engines"]["mygrad"] == FACTORY


def test_the_deriv_engine_lacks_exactly_the_ops_whose_probes_fail(th):
    """conformance/engines/mygrad_deriv.py: every deriv_ops row it does not declare lacking
    runs as on torch (its op probe), and every one it lacks fails."""
    from conformance.engines.mygrad_deriv import LACKS
    e = load_engine("conformance.engines.mygrad_deriv:engine")
    assert e.capabilities == CAPABILITIES | {"deriv_ops"} and e.lacks_ops == LACKS
    deriv = {f"op:{n}" for n, r in ROWS.items() if r.needs == "deriv_ops"}
    results = {r.capability: r for r in check_declarations(e, th, absent_only=False)
               if r.capability in deriv}
    assert set(results) == deriv
    assert all(r.verdict == "ok" for r in results.values()), [str(r) for r in results.values()
                                                             if r.verdict != "ok"]
    assert {c[3:] for c, r in results.items() if not r.works} == LACKS
