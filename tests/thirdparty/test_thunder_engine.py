"""The lightning-thunder adapter (conformance/engines/thunder.py): its declaration against the
probes, its regions on small cases, a few programs through it and a small campaign.

Skipped when thunder is not installed (the optional `thunder` extra, pinned to 0.2.6) or does
not import beside this torch. What thunder does differently from eager torch is asserted here
only where the adapter depends on it; the findings themselves are docs/findings.md's T entries
(tests/thirdparty/test_findings.py runs their repros).
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

if importlib.util.find_spec("thunder") is None:
    pytest.skip("lightning-thunder is not installed (extra 'thunder')", allow_module_level=True)

from conformance.engines import load_engine  # noqa: E402
from conformance.engines.thunder import (  # noqa: E402
    CAPABILITIES,
    NAMED_TENSOR_METHODS,
    RELEASE,
    ThunderTorch,
    _import_thunder,
    thunder_engine,
    thunder_inplace_engine,
)
from conformance.engines.torchlike import ALL_CAPABILITIES, torch_engine  # noqa: E402
from conformance.executor import execute  # noqa: E402
from conformance.judge.probes import check_declarations  # noqa: E402
from conformance.program import Program, Stmt  # noqa: E402
from conformance.spec.capabilities import FINER  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def th():
    try:
        _import_thunder()
    except Exception as exc:  # noqa: BLE001 - say why thunder cannot run here
        pytest.skip(f"thunder does not import here: {type(exc).__name__}: {exc}")
    return thunder_engine()


@pytest.fixture(scope="module")
def oracle():
    return torch_engine()


def test_identity_and_declaration(th):
    import torch
    assert isinstance(th, ThunderTorch) and th.name == "thunder" and th.device == "cpu"
    assert th.version.startswith(RELEASE) and torch.__version__ in th.version
    assert th.capabilities == CAPABILITIES and th.render_prelude() is None
    assert load_engine("thunder").capabilities == CAPABILITIES    # the entry point


def test_the_import_shim_leaves_torch_unchanged():
    import torch
    before = {n: hasattr(torch.Tensor, n) for n in NAMED_TENSOR_METHODS}
    _import_thunder()
    assert {n: hasattr(torch.Tensor, n) for n in NAMED_TENSOR_METHODS} == before


def test_the_probes_agree_with_the_declaration(th, oracle):
    e = thunder_engine()
    e.capabilities = ALL_CAPABILITIES        # probe every capability, declared or not
    results = {r.capability: r for r in check_declarations(e, oracle, absent_only=False)}
    works = {c for c, r in results.items() if r.works}
    assert works - set(FINER) == CAPABILITIES
    # of the finer ones, graph_structure fails too: the region's node has one more edge
    # (next_functions ['node', 'node', None] where torch has ['node', None])
    assert works & set(FINER) == {"view_ops", "no_grad"}
    assert "['node', 'node', None]" in results["graph_structure"].detail
    unprobed = {c for c, r in results.items() if r.works is None}
    assert unprobed == {"node_hooks", "custom_function", "data_assign", "saved_tensors_hooks"}
    # why the failing ones are left out (the module's CAPABILITIES comment; findings T1-T4)
    assert "ThunderOutputFunctionBackward" in results["grad_fn"].detail
    assert "x.grad" in results["inplace"].detail                       # T1
    assert "Expected pred to be a tensor with dtype bool" in results["deriv_ops"].detail  # T2
    assert "requires_grad" in results["create_graph"].detail            # T3
    assert "SAVED_DETACHED_INPLACE" in results["detach_inplace"].detail  # T4


def test_op_statements_run_through_thunder(th):
    x = th.leaf([1.0, 2.0], [2], "float32", True)
    y = th.call("mul", [x, 2.0], {})
    assert y.tolist() == [2.0, 4.0] and y.grad_fn.name() == "ThunderOutputFunctionBackward"
    n = len(th._fns)
    th.call("mul", [x, 2.0], {})
    assert len(th._fns) == n                 # one thunder function per region source
    r = th.call("sub", [3.0, x], {})
    assert r.tolist() == [2.0, 1.0]
    v = th.view(th.leaf([1, 2, 3, 4, 5, 6], [2, 3], "float64", True), "transpose",
                {"dims": [0, 1]})
    assert v.shape == (3, 2)
    th.backward(th.call("sum", [y], {}), None, None, None)
    assert x.grad.tolist() == [2.0, 2.0]


def test_an_ellipsis_index_is_a_region_literal(th):
    x = th.leaf([1.0, 2.0, 3.0, 4.0], [2, 2], "float64", False)
    assert th.getitem(x, (Ellipsis, slice(None, 1, None))).tolist() == [[1.0], [3.0]]


def test_a_leaf_written_in_place_raises_as_torch(th):
    x = th.leaf([1.0, 2.0], [2], "float32", True)
    with pytest.raises(RuntimeError) as info:
        th.inplace(x, "add_", [1.0], {})
    assert th.classify_error(info.value) == "LEAF_INPLACE"


def test_the_inplace_variant_declares_inplace():
    assert thunder_inplace_engine().capabilities == CAPABILITIES | {"inplace"}


def test_a_program_through_the_executor_agrees_with_torch(th, oracle):
    prog = Program([
        Stmt("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2], "dtype": "float32",
                                      "requires_grad": True}),
        Stmt("call", out="y", args=["x", 3.0], params={"fn": "mul"}),
        Stmt("view", out="v", target="y", params={"fn": "unsqueeze", "kw": {"dim": 0}}),
        Stmt("call", out="z", args=["v"], params={"fn": "sum"}),
        Stmt("backward", target="z"),
        Stmt("observe", target="x", params={"what": "grad"}),
    ])
    a, b = execute(prog, th), execute(prog, oracle)
    assert [ev.status for ev in a.events] == ["ok"] * len(prog.statements)
    assert a.events[5].value == b.events[5].value == [3.0, 3.0]


def test_a_small_campaign(tmp_path):
    from conformance.campaign.runner import run_campaign
    run_campaign("thunder", "torch", seed=3, count=4, size=10, jobs=1, timeout=120.0,
                 out_dir=tmp_path, progress=None, shrink=False)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["engine"] == "thunder" and data["programs"] >= 4
    assert set(data["capabilities"]) == set(CAPABILITIES)
    assert not data["unjudged"]         # every statement was expressible (no harness error)
    assert not any(g["signature"].endswith("/harness/-/-") for g in data["groups"])


def test_extra_and_entry_point_are_declared():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["thunder"] == [f"lightning-thunder=={RELEASE}"]
    assert project["entry-points"]["gradspec.engines"]["thunder"] == \
        "conformance.engines.thunder:thunder_engine"


def test_the_deriv_engine_lacks_exactly_the_calls_whose_probes_fail(oracle):
    """thunder_deriv_engine: every deriv_ops call it does not declare lacking runs as on torch
    (its op probe), and every one it lacks fails."""
    from conformance.engines.thunder import DERIV_LACKS
    from conformance.lang.ops import ROWS
    e = load_engine("conformance.engines.thunder:thunder_deriv_engine")
    assert e.capabilities == CAPABILITIES | {"deriv_ops"} and e.lacks_ops == DERIV_LACKS
    calls = {f"op:{n}" for n, r in ROWS.items() if r.needs == "deriv_ops" and r.kind == "call"}
    results = {r.capability: r for r in check_declarations(e, oracle, absent_only=False)
               if r.capability in calls}
    assert set(results) == calls and all(r.verdict == "ok" for r in results.values())
    assert {c[3:] for c, r in results.items() if not r.works} == DERIV_LACKS
