"""The torch.compile adapter (conformance/engines/compiled.py) on small cases.

Each op statement is its own compiled region and backward runs under compiled autograd, so the
tensors observed are compiled functions' outputs. Skipped where torch._dynamo cannot compile
(no torch, or a platform torch.compile does not support).
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("torch._dynamo", reason="this torch has no torch._dynamo")

from conformance.engines.compiled import CompiledTorch, _index_src, compiled_engine  # noqa: E402
from conformance.engines.torchlike import torch_engine  # noqa: E402
from conformance.executor import execute  # noqa: E402
from conformance.program import Program, Stmt  # noqa: E402


@pytest.fixture(scope="module")
def tc():
    try:
        e = compiled_engine()
        x = e.leaf([1.0], [1], "float32", False)
        e.call("add", [x, 1.0], {})
    except Exception as exc:  # noqa: BLE001 - no working compiler here: skip, say why
        pytest.skip(f"torch.compile does not work here: {type(exc).__name__}: {exc}")
    return e


def test_identity(tc):
    assert isinstance(tc, CompiledTorch)
    assert tc.name == "torch-compile" and "aot_eager" in tc.version
    assert tc.render_prelude() is None
    # one CompiledFunctionBackward per region: node names cannot match eager torch's
    assert "grad_fn" not in tc.capabilities and "hooks" in tc.capabilities


def test_index_source():
    assert _index_src((0,)) == "0," and _index_src(()) == "()"
    assert _index_src((1, slice(None, 3, None), slice(-1, None, 2))) == "1, :3:, -1::2"


def test_call_is_compiled_and_cached(tc):
    x = tc.leaf([1.0, 2.0], [2], "float32", True)
    y = tc.call("mul", [x, 2.0], {})
    assert y.tolist() == [2.0, 4.0] and y.grad_fn.name() == "CompiledFunctionBackward"
    n = len(tc._fns)
    y2 = tc.call("mul", [x, 2.0], {})
    assert len(tc._fns) == n and y2.tolist() == [2.0, 4.0]
    z = tc.call("sum", [y], {"dim": [0], "keepdim": True})
    assert z.tolist() == [6.0]
    r = tc.call("sub", [3.0, x], {})
    assert r.tolist() == [2.0, 1.0]


def test_views_getitem_setitem_inplace(tc):
    base = tc.leaf([1, 2, 3, 4, 5, 6], [2, 3], "float64", False)
    v = tc.view(base, "transpose", {"dims": [0, 1]})
    assert v.shape == (3, 2) and v._base is base
    row = tc.getitem(base, (1, slice(0, 3, 2)))
    assert row.tolist() == [4.0, 6.0]
    tc.setitem(base, (0,), 0.0)
    assert base.tolist()[0] == [0.0, 0.0, 0.0] and base._version >= 1
    out = tc.inplace(base, "add_", [1.0], {})
    assert out is base and base.tolist()[1] == [5.0, 6.0, 7.0]
    out = tc.inplace(base, "iadd", [1.0], {})
    assert out is base


def test_backward_under_compiled_autograd(tc):
    x = tc.leaf([1.0, 2.0], [2], "float32", True)
    seen = []
    y = tc.call("mul", [x, x], {})
    tc.register_hook(y, lambda g: seen.append(g.tolist()))
    tc.backward(tc.call("sum", [y], {}), None, None, None)
    assert x.grad.tolist() == [2.0, 4.0] and seen == [[1.0, 1.0]]
    (g,) = tc.autograd_grad([tc.call("sum", [tc.call("exp", [x], {})], {})], [x], None, None,
                            False)
    assert g.tolist() == pytest.approx([2.7182817, 7.389056])


def test_classify_wrapped_errors(tc):
    x = tc.leaf([1.0, 2.0], [2], "float32", True)
    with pytest.raises(RuntimeError) as info:
        tc.inplace(x, "add_", [1.0], {})
    assert tc.classify_error(info.value) == "LEAF_INPLACE"


def test_program_through_executor(tc):
    prog = Program([
        Stmt("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2], "dtype": "float32",
                                      "requires_grad": True}),
        Stmt("call", out="y", args=["x", 3.0], params={"fn": "mul"}),
        Stmt("call", out="z", args=["y"], params={"fn": "sum"}),
        Stmt("backward", target="z"),
        Stmt("observe", target="x", params={"what": "grad"}),
        Stmt("observe", target="y", params={"what": "is_leaf"}),
        Stmt("observe", target="z", params={"what": "grad_fn"}),
    ])
    a, b = execute(prog, tc), execute(prog, torch_engine())
    assert [ev.status for ev in a.events] == ["ok"] * len(prog.statements)
    assert a.events[4].value == b.events[4].value == [3.0, 3.0]
    # every op result is a compiled function's output: the node names say so
    assert b.events[6].value == "SumBackward0"
    assert a.events[6].value == "CompiledFunctionBackward"


def test_a_data_alias_written_with_its_own_tensor_takes_data_inside_the_region(tc):
    """docs/findings.md, C5: `d = x.data; d.copy_(x)` used to pass x.data and x as two inputs
    sharing memory, which AOTAutograd refuses ("does not yet handle non-differentiable view
    input mutations"). The region now takes x alone and `.data` inside, as a user writes it."""
    for shape, dtype in [([], "float64"), ([2], "float32"), ([2, 2], "float64")]:
        n = 1
        for s in shape:
            n *= s
        x = tc.leaf([-0.25 * (i + 1) for i in range(n)], shape, dtype, True)
        before = x.tolist()
        d = tc.data(x)
        out = tc.inplace(d, "copy_", [x], {})        # no BackendCompilerFailed
        assert out.tolist() == before and x.tolist() == before and x.is_leaf
        assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        src = next(s for s in tc._fns if "d = a.data" in s)
        assert "d.copy_(a)" in src and src.startswith("def region(a):")
        # the operand side: x written with its own .data as operand
        y = tc.call("mul", [x, 2.0], {})
        tc.inplace(y, "add_", [tc.data(y)], {})
        assert y.tolist() == (4 * x).tolist()
        tc.setitem(tc.data(x), () if not shape else (slice(None, None, None),), x)
        assert x.tolist() == before


def test_a_data_alias_without_aliasing_operands_is_passed_as_it_is(tc):
    x = tc.leaf([1.0, 2.0], [2], "float64", True)
    d = tc.data(x)
    w = tc.leaf([3.0, 4.0], [2], "float64", True)
    out = tc.inplace(d, "copy_", [w], {})
    assert out is d and d.requires_grad and not d.is_leaf    # INPLACE-10, as eager
    assert x.tolist() == [3.0, 4.0] and x.is_leaf


def test_region_source_allows_data_and_its_local_only():
    from conformance.engines.compiled import region_source
    from conformance.lang.program import HarnessError
    ok = "def region(a):\n    d = a.data\n    return d.copy_(a)\n"
    assert region_source(ok, ["a"]) == ok
    ellipsis = "def region(a):\n    return a[..., :1:3]\n"       # an index's `...` (A1)
    assert region_source(ellipsis, ["a"]) == ellipsis
    for bad in ["def region(a):\n    e = a.data\n    return e\n",
                "def region(a):\n    return a.grad\n"]:
        with pytest.raises(HarnessError):
            region_source(bad, ["a"])
