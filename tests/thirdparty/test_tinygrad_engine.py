"""The tinygrad adapter (conformance/engines/tinygrad.py): its declaration against the probes,
its methods on small cases, and a few programs through it.

Skipped when tinygrad is not installed (the optional `tinygrad` extra, pinned to 0.10.3). What
tinygrad does differently from the spec is asserted here only where the adapter depends on it
(the declaration, the workarounds it documents).
"""
from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

pytest.importorskip("tinygrad", reason="tinygrad is not installed (extra 'tinygrad')")

from conformance.compare import close, compare  # noqa: E402
from conformance.engines import base, load_engine  # noqa: E402
from conformance.engines.tinygrad import (  # noqa: E402
    CAPABILITIES,
    CLASSES,
    RELEASE,
    AdapterLimit,
    tinygrad_engine,
    tinygrad_views_engine,
)
from conformance.engines.torchlike import torch_engine  # noqa: E402
from conformance.executor import execute  # noqa: E402
from conformance.generate import GENERATOR_VERSION  # noqa: E402
from conformance.judge.probes import check_declarations  # noqa: E402
from conformance.lang.ops import ROWS  # noqa: E402
from conformance.program import FUNCTIONS, Program, Stmt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FACTORY = "conformance.engines.tinygrad:tinygrad_engine"


@pytest.fixture(scope="module")
def tg():
    return tinygrad_engine()


@pytest.fixture(scope="module")
def th():
    return torch_engine()


def leaf(e, values, shape, rg=False, dtype="float32"):
    return e.leaf(values, shape, dtype, rg)


def test_identity_and_declaration(tg):
    assert isinstance(tg, base.Engine)
    assert tg.name == "tinygrad" and tg.version == RELEASE == "0.10.3" and tg.device == "cpu"
    assert tg.capabilities == CAPABILITIES == frozenset({"core", "autograd_grad"})
    assert tg.classes == CLASSES == frozenset({"core"})
    assert tg.tg_device == "PYTHON"
    assert load_engine(FACTORY).capabilities == CAPABILITIES    # load_engine's checks pass


def test_the_probes_agree_with_the_declaration(tg, th):
    results = {r.capability: r for r in check_declarations(tg, th, absent_only=False)}
    # node_hooks, custom_function, data_assign and saved_tensors_hooks are probed through a
    # torch-shaped module only; detach_inplace by detaching a view in place, which an engine
    # without views cannot be asked; multi_grad_hooks by a program, which fails here (no hooks)
    assert {c: r.verdict for c, r in results.items() if r.verdict != "ok"} == \
        {c: "unprobed" for c in ("node_hooks", "custom_function", "data_assign",
                                 "saved_tensors_hooks", "detach_inplace")}
    assert results["multi_grad_hooks"].works is False
    # why the absent ones are absent, as the module docstring says
    assert "requires_grad = True" in results["grad_modes"].detail      # Tensor.test()
    assert "requires_grad = True" in results["deriv_ops"].detail       # x > 0 requires grad
    assert "GRAPH_FREED" in results["retain_graph"].detail              # never frees a graph
    assert "Ops.VIEW" in results["views"].detail                        # the 0.10.3 bug


def test_the_views_variant_declares_views_and_its_probe_fails(th):
    e = tinygrad_views_engine()
    assert e.capabilities == CAPABILITIES | {"views"}
    (views,) = [r for r in check_declarations(e, th, absent_only=False)
                if r.capability == "views"]
    assert views.verdict == "declared but fails" and "Ops.VIEW" in views.detail


def test_leaf_and_observations(tg):
    x = leaf(tg, [1, 2, 3, 4, 5, 6], [2, 3], rg=True, dtype="float64")
    assert tg.to_list(x) == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert tg.shape(x) == (2, 3) and tg.dtype(x) == "float64"
    assert tg.requires_grad(x) and tg.is_leaf(x) and tg.get_grad(x) is None
    s = leaf(tg, [2.5], [])
    assert tg.to_list(s) == 2.5 and tg.shape(s) == () and not tg.requires_grad(s)
    tg.requires_grad_(s, True)
    assert tg.requires_grad(s) and tg.is_leaf(s)
    i = leaf(tg, [1, -2], [2], dtype="int64")
    b = leaf(tg, [True, False], [2], dtype="bool")
    assert tg.to_list(i) == [1, -2] and tg.dtype(i) == "int64"
    assert tg.to_list(b) == [True, False] and tg.dtype(b) == "bool"


def test_zero_d_leaves_of_equal_value_keep_their_own_gradient(tg):
    # Tensor(2.5, requires_grad=True) is a constant UOp shared by equal values in 0.10.3
    # (tinygrad issue #9597): the adapter makes 0-d leaves from a buffer instead
    a, b = leaf(tg, [2.5], [], rg=True), leaf(tg, [2.5], [], rg=True)
    tg.backward(tg.call("mul", [tg.call("add", [a, b], {}), 2.5], {}), None, None, None)
    assert tg.to_list(tg.get_grad(a)) == 2.5 and tg.to_list(tg.get_grad(b)) == 2.5


def test_is_leaf_bookkeeping(tg):
    x = leaf(tg, [1.0, 2.0], [2], rg=True)
    c = leaf(tg, [1.0, 2.0], [2])
    y = tg.call("exp", [x], {})
    assert not tg.is_leaf(y) and tg.requires_grad(y)
    z = tg.call("exp", [c], {})         # made without grad: a leaf, and stays one
    assert tg.is_leaf(z) and not tg.requires_grad(z)
    tg.requires_grad_(z, True)
    assert tg.is_leaf(z) and tg.requires_grad(z)
    d = tg.detach(y)
    assert tg.is_leaf(d) and not tg.requires_grad(d)
    assert tg.is_leaf(tg.data(y)) and not tg.requires_grad(tg.data(y))


# the ops the generator draws for tinygrad: not the rows of capability deriv_ops
@pytest.mark.parametrize("fn", sorted(f for f in FUNCTIONS if ROWS[f].since <= GENERATOR_VERSION
                                      and ROWS[f].needs in (None, *CAPABILITIES)))
def test_call_matches_torch_values(tg, th, fn):
    kw = {"pow": {"exponent": 2}, "clamp": {"min": -0.5, "max": 1.0},
          "sum": {"dim": [1], "keepdim": True}, "mean": {"dim": 0, "keepdim": False}}.get(fn, {})
    vals = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75]

    def run(e):
        a = leaf(e, vals, [2, 3])
        b = leaf(e, vals, [3, 2]) if fn == "matmul" else leaf(e, vals, [2, 3])
        args = [a, b] if FUNCTIONS[fn] == 2 else [a]
        if fn in ("log", "sqrt"):
            args = [e.call("abs", [a], {})]
        return e.to_list(e.call(fn, args, kw))
    assert close(run(tg), run(th), "float32")


def test_binary_with_numbers_and_dtypes(tg):
    x = leaf(tg, [1.0, 2.0], [2])
    assert tg.to_list(tg.call("sub", [2.0, x], {})) == [1.0, 0.0]
    assert tg.to_list(tg.call("div", [x, 2], {})) == [0.5, 1.0]
    i = leaf(tg, [3, 4], [2], dtype="int64")
    assert tg.dtype(tg.call("div", [i, 2], {})) == "float32"
    assert tg.dtype(tg.call("add", [i, 1], {})) == "int64"


@pytest.mark.parametrize("fn,kw,shape", [
    ("reshape", {"shape": [3, 2]}, (3, 2)), ("view", {"shape": [6]}, (6,)), ("t", {}, (3, 2)),
    ("transpose", {"dims": [0, -1]}, (3, 2)), ("unsqueeze", {"dim": 0}, (1, 2, 3)),
    ("squeeze", {"dim": None}, (2, 3)), ("expand", {"size": [4, 2, 3]}, (4, 2, 3))])
def test_views_and_their_gradients(tg, th, fn, kw, shape):
    def run(e):
        x = leaf(e, [1, 2, 3, 4, 5, 6], [2, 3], rg=True)
        v = e.view(x, fn, kw)
        e.backward(e.call("sum", [e.call("mul", [v, v], {})], {}), None, None, None)
        return e.shape(v), e.to_list(e.get_grad(x))
    assert run(tg) == run(th) and run(tg)[0] == shape


def test_t_of_one_and_zero_dims_is_a_new_tensor(tg):
    x = leaf(tg, [1.0, 2.0], [2], rg=True)
    v = tg.view(x, "t", {})
    assert v is not x and tg.shape(v) == (2,) and not tg.is_leaf(v)
    assert tg.shape(tg.view(leaf(tg, [1.0], []), "t", {})) == ()


def test_getitem(tg):
    x = leaf(tg, [1, 2, 3, 4, 5, 6], [2, 3])
    assert tg.to_list(tg.getitem(x, (1, slice(0, 3, 2)))) == [4.0, 6.0]
    assert tg.shape(tg.getitem(x, (None, Ellipsis, 1))) == (1, 2)
    assert tg.to_list(tg.getitem(x, (slice(None, None, -1),))) == [[4.0, 5.0, 6.0],
                                                                    [1.0, 2.0, 3.0]]


def test_backward_and_autograd_grad(tg):
    x = leaf(tg, [1.0, 2.0], [2], rg=True)
    w = leaf(tg, [1.0, 1.0], [2], rg=True)
    y = tg.call("mul", [x, x], {})
    (gx, gw) = tg.autograd_grad([y], [x, w], [leaf(tg, [1.0, 0.5], [2])], None, True)
    assert tg.to_list(gx) == [2.0, 2.0] and gw is None and tg.get_grad(x) is None
    tg.backward(y, leaf(tg, [1.0, 1.0], [2]), None, None)
    assert tg.to_list(tg.get_grad(x)) == [2.0, 4.0]
    tg.autograd_backward([tg.call("sum", [x], {})], None, None)
    assert tg.to_list(tg.get_grad(x)) == [3.0, 5.0]
    tg.set_grad(x, None)
    assert tg.get_grad(x) is None
    with pytest.raises(AdapterLimit):
        tg.backward(tg.call("sum", [x], {}), None, None, [x])
    with pytest.raises(AdapterLimit):
        tg.autograd_backward([tg.call("sum", [x], {}), tg.call("sum", [w], {})], None, None)
    with pytest.raises(AdapterLimit):
        tg.autograd_grad([tg.call("sum", [x], {}), tg.call("sum", [w], {})], [x], None, None,
                         False)


def test_grad_modes_are_tinygrads_flag(tg):
    x = leaf(tg, [1.0], [1], rg=True)
    assert tg.is_grad_enabled()
    with tg.grad_mode("no_grad"):
        assert not tg.is_grad_enabled()
        y = tg.call("exp", [x], {})
        assert tg.requires_grad(y)          # tinygrad: ops still record (not declared)
        with tg.grad_mode("enable_grad"):
            assert tg.is_grad_enabled()
    with tg.grad_mode("set_grad_enabled", False):
        tg.backward(tg.call("sum", [x], {}), None, None, None)
    assert tg.get_grad(x) is None           # a backward under Tensor.test() accumulates nothing
    assert tg.is_grad_enabled()


def _raise(f):
    try:
        f()
    except Exception as exc:    # noqa: BLE001 - the adapter classifies whatever tinygrad raises
        return exc
    raise AssertionError("expected an error")


def test_classify_error(tg):
    x = leaf(tg, [1.0, 2.0], [2], rg=True)
    cases = {
        "IMPLICIT_GRAD_NONSCALAR": lambda: tg.backward(tg.call("exp", [x], {}), None, None,
                                                       None),
        # backward from the leaf itself: tinygrad's own shape check is the first to fail (with
        # more tensors in the graph, an internal shape assertion may fail first)
        "GRAD_OUTPUT_SHAPE": lambda: tg.backward(leaf(tg, [1.0, 2.0], [2], rg=True),
                                                 leaf(tg, [1.0, 1.0, 1.0], [3]), None, None),
        "UNUSED_INPUT": lambda: tg.autograd_grad([tg.call("sum", [x], {})],
                                                 [leaf(tg, [1.0], [1], rg=True)], None, None,
                                                 False),
    }
    for kind, f in cases.items():
        assert tg.classify_error(_raise(f)) == kind, kind
    assert tg.classify_error(AdapterLimit("x")) is None
    assert tg.classify_error(_raise(lambda: tg.retain_grad(x))) is None
    assert tg.classify_error(ValueError("something else")) is None


def _program(read_before_grad: bool) -> Program:
    rg = {"dtype": "float32", "requires_grad": True}
    return Program([
        Stmt("leaf", out="x", params={"values": [1.0, 2.0, 3.0, 4.0], "shape": [2, 2], **rg}),
        Stmt("leaf", out="w", params={"values": [0.5], "shape": [], **rg}),
        Stmt("call", out="y", args=["x", "w"], params={"fn": "mul"}),
        Stmt("call", out="z", args=["y"], params={"fn": "sum"}),
        *([Stmt("observe", target="z", params={"what": "value"})] if read_before_grad else []),
        Stmt("grad", params={"outputs": ["z"], "inputs": ["w"], "grad_outputs": None,
                             "retain_graph": True, "allow_unused": False, "outs": ["g"]}),
        Stmt("observe", target="g", params={"what": "value"}),
        Stmt("backward", target="z"),
        Stmt("observe", target="x", params={"what": "grad"}),
        Stmt("observe", target="w", params={"what": "grad"}),
        Stmt("observe", target="y", params={"what": "is_leaf"}),
        Stmt("observe", target="y", params={"what": "requires_grad"}),
        Stmt("observe", target="z", params={"what": "value"}),
    ])


def test_a_program_through_the_executor_agrees_with_torch(tg, th):
    prog = _program(read_before_grad=False)
    a, b = execute(prog, tg), execute(prog, th)
    assert [ev.status for ev in a.events] == ["ok"] * len(prog.statements)
    assert [ev.value for ev in a.events] == [ev.value for ev in b.events]
    assert not compare(prog, b, a)


def test_reading_a_value_first_loses_the_0d_leaf(tg, th):
    # tinygrad 0.10.3 (fixed by 0.12.0): reading z realizes the graph and rewrites the UOp of
    # w (a 0-d leaf is a reshape of a buffer), so gradient() no longer finds w in z's graph.
    # Pinned here: the day it passes, the finding is stale.
    prog = _program(read_before_grad=True)
    a, b = execute(prog, tg), execute(prog, th)
    assert b.events[5].status == "ok" and a.events[5].status == "error"
    assert a.events[5].error == "UNUSED_INPUT"
    (first, *_) = compare(prog, b, a)
    assert first.path == "5" and first.what == "outcome"


def test_generated_programs_stay_in_the_declaration():
    from conformance.generate import program_for_seed
    for seed in range(30):
        p = program_for_seed(seed, CAPABILITIES, 20)
        ops = {s.op for _, s in p.walk()}
        assert not ops & {"view", "getitem", "inplace", "setitem", "hook", "mode",
                          "retain_grad", "post_hook", "node_hook"}, ops
        assert not any(s.op == "backward" and s.params.get("inputs") is not None
                       for _, s in p.walk())


def _read_in_child(queue):
    e = tinygrad_engine()
    x = e.leaf([1.0, 2.0], [2], "float32", True)
    queue.put(e.to_list(e.call("mul", [x, 3.0], {})))


def test_values_read_in_a_worker_process():
    # 0.10.3 opens devices other than PYTHON, DISK and NPY only in the main process, and its
    # Tensor.numpy() copies to CPU: the adapter reads without that copy (campaign workers)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_read_in_child, args=(queue,))
    proc.start()
    try:
        assert queue.get(timeout=60) == [3.0, 6.0]
    finally:
        proc.join(60)
    assert proc.exitcode == 0


def test_extra_and_entry_point_are_declared():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["tinygrad"] == [f"tinygrad=={RELEASE}"]
    assert project["entry-points"]["gradspec.engines"]["tinygrad"] == \
        "conformance.engines.tinygrad:tinygrad_engine"
