"""The PaddlePaddle adapter (conformance/engines/paddle.py), method by method on small cases.

Skipped when paddle is not installed (the optional `paddle` extra). What paddle does differently
from the spec is asserted here only where the adapter depends on it; docs/findings.md lists the
divergences themselves.
"""
from __future__ import annotations

import pytest

pytest.importorskip("paddle", reason="paddlepaddle is not installed (extra 'paddle')")

from conformance.compare import close  # noqa: E402
from conformance.engines import base  # noqa: E402
from conformance.engines.paddle import (
    CAPABILITIES,
    AdapterLimit,
    paddle_engine,
)
from conformance.engines.torchlike import torch_engine  # noqa: E402
from conformance.executor import execute  # noqa: E402
from conformance.generate import GENERATOR_VERSION  # noqa: E402
from conformance.lang.ops import ROWS  # noqa: E402
from conformance.program import FUNCTIONS, Program, Stmt  # noqa: E402


@pytest.fixture(scope="module")
def pd():
    return paddle_engine()


@pytest.fixture(scope="module")
def th():
    return torch_engine()


def leaf(e, values, shape, rg=False, dtype="float32"):
    return e.leaf(values, shape, dtype, rg)


def test_identity_and_capabilities(pd):
    assert isinstance(pd, base.Engine)
    assert pd.name == "paddle" and pd.version.startswith("3.") and pd.device == "cpu"
    assert pd.capabilities == CAPABILITIES
    # paddle's grad_fn names are its own and every leaf has a node: not declared
    assert not {"grad_fn", "node_hooks", "warnings"} & pd.capabilities


def test_leaf_and_observations(pd):
    x = leaf(pd, [1, 2, 3, 4, 5, 6], [2, 3], rg=True, dtype="float64")
    assert pd.to_list(x) == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert pd.shape(x) == (2, 3) and pd.dtype(x) == "float64"
    assert pd.requires_grad(x) and pd.is_leaf(x) and pd.get_grad(x) is None
    s = leaf(pd, [2.5], [])
    assert pd.to_list(s) == 2.5 and pd.shape(s) == () and not pd.requires_grad(s)
    pd.requires_grad_(s, True)
    assert pd.requires_grad(s)


# the ops the generator draws for paddle: not the rows of capability deriv_ops, which the
# adapter does not declare (no paddle spelling of them is checked yet)
@pytest.mark.parametrize("fn", sorted(f for f in FUNCTIONS if ROWS[f].since <= GENERATOR_VERSION
                                      and ROWS[f].needs in (None, *CAPABILITIES)))
def test_call_matches_torch_values(pd, th, fn):
    kw = {"pow": {"exponent": 2}, "clamp": {"min": -0.5, "max": 1.0},
          "sum": {"dim": [1], "keepdim": True}, "mean": {"dim": 0, "keepdim": False}}.get(fn, {})
    vals = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75]

    def run(e):
        a = leaf(e, vals, [2, 3])
        b = leaf(e, vals, [3, 2]) if fn == "matmul" else leaf(e, vals, [2, 3])
        args = [a, b] if FUNCTIONS[fn] == 2 else [a]
        if fn == "abs" or fn == "log":
            args = [e.call("abs", [a], {})]
        return e.to_list(e.call(fn, args, kw))
    assert close(run(pd), run(th), "float32")


def test_binary_with_numbers(pd):
    x = leaf(pd, [1.0, 2.0], [2])
    assert pd.to_list(pd.call("sub", [2.0, x], {})) == [1.0, 0.0]
    assert pd.to_list(pd.call("div", [x, 2], {})) == [0.5, 1.0]


@pytest.mark.parametrize("fn,kw,shares", [
    ("reshape", {"shape": [3, 2]}, True), ("view", {"shape": [6]}, True), ("t", {}, True),
    ("transpose", {"dims": [0, -1]}, True), ("unsqueeze", {"dim": 0}, True),
    ("squeeze", {"dim": None}, True), ("expand", {"size": [2, 2, 3]}, False)])
def test_views_share_data_and_version(pd, fn, kw, shares):
    base_t = leaf(pd, [1, 2, 3, 4, 5, 6], [2, 3])
    src = pd.view(base_t, "unsqueeze", {"dim": 0}) if fn == "expand" else base_t
    v = pd.view(src, fn, kw)
    pd.inplace(base_t, "add_", [1.0], {})
    assert pd.version_counter(base_t) == 1
    # paddle's expand copies (docs/findings.md); every other view aliases its base
    assert (pd.version_counter(v) == 1) is shares
    first = pd.to_list(pd.view(v, "reshape", {"shape": [-1]}))[0]
    assert first == (2.0 if shares else 1.0)


def test_getitem_setitem(pd):
    x = leaf(pd, [1, 2, 3, 4, 5, 6], [2, 3])
    row = pd.getitem(x, (1, slice(0, 3, 2)))
    assert pd.to_list(row) == [4.0, 6.0]
    pd.setitem(x, (0, slice(1, None, None)), 7.0)
    assert pd.to_list(x) == [[1.0, 7.0, 7.0], [4.0, 5.0, 6.0]] and pd.version_counter(x) == 1
    pd.setitem(x, (1,), leaf(pd, [0, 0, 0], [3]))
    assert pd.to_list(x)[1] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("fn,args,kw,expect", [
    ("add_", [1.0], {}, [2.0, 3.0]), ("sub_", [1.0], {}, [0.0, 1.0]),
    ("mul_", [2.0], {}, [2.0, 4.0]), ("div_", [2.0], {}, [0.5, 1.0]),
    ("pow_", [], {"exponent": 2}, [1.0, 4.0]), ("clamp_", [], {"min": 1.5, "max": None},
                                                 [1.5, 2.0]),
    ("neg_", [], {}, [-1.0, -2.0]), ("relu_", [], {}, [1.0, 2.0]), ("zero_", [], {}, [0.0, 0.0]),
    ("fill_", [3.0], {}, [3.0, 3.0]), ("copy_", [5.0], {}, [5.0, 5.0])])
def test_inplace_ops(pd, fn, args, kw, expect):
    x = leaf(pd, [1.0, 2.0], [2])
    out = pd.inplace(x, fn, args, kw)
    assert out is x and pd.to_list(x) == expect


def test_augmented_assignment_rebinds(pd):
    # paddle's `x += y` makes a new tensor (docs/findings.md); the adapter rebinds the name
    x = leaf(pd, [1.0, 2.0], [2])
    out = pd.inplace(x, "iadd", [1.0], {})
    assert pd.to_list(out) == [2.0, 3.0]


def test_detach_data_retain(pd):
    x = leaf(pd, [1.0, 2.0], [2], rg=True)
    assert not pd.requires_grad(pd.detach(x)) and not pd.requires_grad(pd.data(x))
    y = pd.call("mul", [x, 2.0], {})
    assert not pd.retains_grad(y)
    pd.retain_grad(y)
    assert pd.retains_grad(y) and not pd.is_leaf(y)
    pd.backward(pd.call("sum", [pd.call("mul", [y, y], {})], {}), None, None, None)
    assert pd.to_list(pd.get_grad(y)) == [4.0, 8.0]
    assert pd.to_list(pd.get_grad(x)) == [8.0, 16.0]


def test_hooks_and_removal(pd):
    x = leaf(pd, [1.0, 2.0], [2], rg=True)
    seen = []
    h1 = pd.register_hook(x, lambda g: seen.append(("a", pd.to_list(g))))
    pd.register_hook(x, lambda g: pd.scale(g, 3.0))
    pd.backward(pd.call("sum", [x], {}), None, None, None)
    assert seen == [("a", [1.0, 1.0])] and pd.to_list(pd.get_grad(x)) == [3.0, 3.0]
    pd.remove_hook(h1)
    pd.backward(pd.call("sum", [x], {}), None, None, None)
    assert len(seen) == 1 and pd.to_list(pd.get_grad(x)) == [6.0, 6.0]


def test_no_post_accumulate_hooks(pd):
    # paddle has no public post-accumulate-grad hook (only the private void hook
    # _register_backward_hook): the capability is not declared and the method not implemented,
    # so the generator draws none and the probe finds it absent (docs/findings.md, P14)
    assert "post_accumulate_hooks" not in pd.capabilities
    x = leaf(pd, [1.0, 2.0], [2], rg=True)
    with pytest.raises(NotImplementedError):
        pd.register_post_accumulate_grad_hook(x, lambda t: None)
    assert base.unimplemented(pd, {"post_accumulate_hooks"}) == [
        "post_accumulate_hooks: register_post_accumulate_grad_hook"]


def test_generated_programs_have_no_post_accumulate_hooks():
    from conformance.generate import program_for_seed
    for seed in range(30):
        p = program_for_seed(seed, CAPABILITIES, 20)
        assert not any(s.op == "post_hook" for _, s in p.walk())


# copy_ is paddle.assign(src, output=t), Paddle's documented mapping (docs/findings.md, P10):
# it broadcasts and casts src into t, bumps inplace_version, and records the write
@pytest.mark.parametrize("dshape,ddt,src,sshape,sdt,expect", [
    ([1, 3], "float32", [4.0, 5.0, 6.0], [3], "float32", [[4.0, 5.0, 6.0]]),
    ([2, 2], "float32", [7.0, 8.0], [2], "float64", [[7.0, 8.0], [7.0, 8.0]]),
    ([2], "float64", [7.5], [], "float32", [7.5, 7.5]),
    ([], "float64", [2.5], [], "float64", 2.5)])
def test_copy_broadcasts_casts_and_bumps_the_version(pd, th, dshape, ddt, src, sshape, sdt,
                                                    expect):
    for e in (pd, th):
        n = 1
        for d in dshape:
            n *= d
        t = leaf(e, [1.0] * n, dshape, dtype=ddt)
        assert e.inplace(t, "copy_", [leaf(e, src, sshape, dtype=sdt)], {}) is t
        assert e.to_list(t) == expect and e.shape(t) == tuple(dshape) and e.dtype(t) == ddt
        assert e.version_counter(t) == 1


def test_copy_records_the_write(pd):
    w = leaf(pd, [1.0, 2.0], [2])
    s = leaf(pd, [3.0, 4.0], [2], rg=True)
    pd.inplace(w, "copy_", [s], {})                     # INPLACE-10: w now requires grad
    assert pd.requires_grad(w) and not pd.is_leaf(w)
    pd.backward(pd.call("sum", [pd.call("mul", [w, 3.0], {})], {}), None, None, None)
    assert pd.to_list(pd.get_grad(s)) == [3.0, 3.0]
    x = leaf(pd, [1.0, 2.0], [2], rg=True)              # over a saved tensor: VERSION_MISMATCH
    y = pd.call("mul", [x, 1.0], {})
    z = pd.call("sum", [pd.call("mul", [y, y], {})], {})
    pd.inplace(y, "copy_", [leaf(pd, [10.0, 20.0], [2])], {})
    assert pd.classify_error(_raise(lambda: pd.backward(z, None, None, None))) == \
        "VERSION_MISMATCH"


def test_grad_modes(pd):
    x = leaf(pd, [1.0], [1], rg=True)
    with pd.grad_mode("no_grad"):
        assert not pd.requires_grad(pd.call("exp", [x], {}))
        with pd.grad_mode("enable_grad"):
            assert pd.requires_grad(pd.call("exp", [x], {}))
    with pd.grad_mode("set_grad_enabled", False):
        assert not pd.requires_grad(pd.call("exp", [x], {}))
    assert pd.requires_grad(pd.call("exp", [x], {}))


def test_backward_gradient_and_autograd_grad(pd):
    x = leaf(pd, [1.0, 2.0], [2], rg=True)
    w = leaf(pd, [1.0, 1.0], [2], rg=True)
    y = pd.call("mul", [x, x], {})
    (gx, gw) = pd.autograd_grad([y], [x, w], [leaf(pd, [1.0, 0.5], [2])], True, True)
    assert pd.to_list(gx) == [2.0, 2.0] and gw is None and pd.get_grad(x) is None
    pd.backward(y, leaf(pd, [1.0, 1.0], [2]), None, None)
    assert pd.to_list(pd.get_grad(x)) == [2.0, 4.0]
    pd.set_grad(x, None)
    assert pd.get_grad(x) is None
    with pytest.raises(AdapterLimit):
        pd.backward(pd.call("sum", [x], {}), None, None, [x])


def _raise(f):
    try:
        f()
    except Exception as exc:    # noqa: BLE001 - the adapter classifies whatever paddle raises
        return exc
    raise AssertionError("expected an error")


def test_classify_error(pd):
    x = leaf(pd, [1.0, 2.0], [2], rg=True)
    c = leaf(pd, [1.0, 2.0], [2])
    cases = {
        "LEAF_INPLACE": lambda: pd.inplace(x, "add_", [1.0], {}),
        "HOOK_NO_REQUIRES_GRAD": lambda: pd.register_hook(c, lambda g: None),
        "UNUSED_INPUT": lambda: pd.autograd_grad([pd.call("sum", [x], {})],
                                                 [leaf(pd, [1.0], [1], rg=True)], None, None,
                                                 False),
        "GRAD_OUTPUT_SHAPE": lambda: pd.backward(x, leaf(pd, [1.0, 2.0, 3.0], [3]), None, None),
    }
    for kind, f in cases.items():
        assert pd.classify_error(_raise(f)) == kind.strip(), kind
    # version mismatch, and a second backward through freed saved tensors
    y = leaf(pd, [1.0, 2.0], [2], rg=True)
    e = pd.call("exp", [y], {})
    s = pd.call("sum", [e], {})
    pd.inplace(e, "add_", [1.0], {})
    assert pd.classify_error(_raise(lambda: pd.backward(s, None, None, None))) == \
        "VERSION_MISMATCH"
    s2 = pd.call("sum", [pd.call("exp", [y], {})], {})
    pd.backward(s2, None, None, None)
    assert pd.classify_error(_raise(lambda: pd.backward(s2, None, None, None))) == "GRAPH_FREED"
    assert pd.classify_error(AdapterLimit("x")) is None
    assert pd.classify_error(ValueError("something else")) is None


def test_program_through_executor_agrees_with_torch(pd, th):
    prog = Program([
        Stmt("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2], "dtype": "float32",
                                      "requires_grad": True}),
        Stmt("call", out="y", args=["x", "x"], params={"fn": "mul"}),
        Stmt("retain_grad", target="y"),
        Stmt("hook", out="h", target="y", params={"behaviour": "record"}),
        Stmt("call", out="z", args=["y"], params={"fn": "sum"}),
        Stmt("backward", target="z"),
        Stmt("observe", target="x", params={"what": "grad"}),
        Stmt("observe", target="y", params={"what": "grad"}),
        Stmt("observe", target="y", params={"what": "is_leaf"}),
    ])
    a, b = execute(prog, pd), execute(prog, th)
    assert [ev.status for ev in a.events] == ["ok"] * len(prog.statements)
    assert [ev.value for ev in a.events] == [ev.value for ev in b.events]


def test_generated_programs_have_no_backward_inputs():
    from conformance.generate import program_for_seed
    assert "backward_inputs" not in CAPABILITIES
    for seed in range(30):
        p = program_for_seed(seed, CAPABILITIES, 20)
        assert not any(s.op == "backward" and s.params.get("inputs") is not None
                       for _, s in p.walk())
