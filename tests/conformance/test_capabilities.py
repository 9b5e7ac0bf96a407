"""Capabilities checked both ways: a declared
capability that fails, an absent one that works, and clauses needing a missing capability
reported as n/a, never as pass."""
from __future__ import annotations

import json

import pytest

from conformance.capabilities import (
    MODULE_PROBES,
    PROBES,
    check_declarations,
    probe,
    probe_program,
)
from conformance.engines import load_engine
from conformance.engines.torchlike import ALL_CAPABILITIES, TorchLike
from conformance.runner import run_campaign
from conformance.specdoc import CAPABILITIES, load_spec

MOD = "tests.conformance.test_capabilities"


def _torch():
    import torch
    return torch


def modest(device="cpu"):
    """Declares hooks and warnings absent, but has them (torch itself)."""
    return TorchLike(_torch(), "modest", device, ALL_CAPABILITIES - {"hooks", "warnings"})


class NoHooks(TorchLike):
    """Has no tensor hooks, and says so unless told otherwise."""

    def register_hook(self, t, fn):
        raise NotImplementedError("no tensor hooks")


def no_hooks(device="cpu"):
    return NoHooks(_torch(), "no-hooks", device, ALL_CAPABILITIES - {"hooks"})


def boastful(device="cpu"):
    return NoHooks(_torch(), "boastful", device)    # declares hooks, has none


@pytest.fixture(scope="module")
def oracle():
    return load_engine("torch")


def test_every_capability_but_those_probed_through_the_module_has_a_probe_program(oracle):
    assert set(PROBES) | set(MODULE_PROBES) == set(CAPABILITIES)
    assert not set(PROBES) & set(MODULE_PROBES)
    for cap in CAPABILITIES:
        if cap not in MODULE_PROBES:
            assert probe_program(cap).capabilities()[0] == "core"


def test_torch_passes_every_probe(oracle):
    results = check_declarations(oracle, oracle, absent_only=False)
    assert [r.capability for r in results] == list(CAPABILITIES)
    assert all(r.verdict == "ok" and r.works for r in results), [str(r) for r in results]


def test_an_absent_capability_that_works_is_reported(oracle):
    results = {r.capability: r for r in check_declarations(modest(), oracle)}
    assert set(results) == {"hooks", "warnings"}
    assert all(r.verdict == "declared absent but works" for r in results.values())


def test_an_absent_capability_that_is_absent_is_fine(oracle):
    r = probe(no_hooks(), oracle, "hooks")
    assert r.verdict == "ok" and r.works is False and "NotImplementedError" in r.detail


def test_a_declared_capability_that_fails_is_reported(oracle):
    r = probe(boastful(), oracle, "hooks")
    assert r.verdict == "declared but fails" and "statement" in r.detail


def test_paddle_has_no_post_accumulate_hooks_and_its_probe_agrees(oracle):
    """The Paddle adapter used to compare a private void hook with torch's post-accumulate
    hook (docs/findings.md, P14); it now declares the capability absent, and the probe finds
    it absent (not "declared absent but works")."""
    pytest.importorskip("paddle", reason="paddlepaddle is not installed (extra 'paddle')")
    e = load_engine("paddle")
    assert "post_accumulate_hooks" not in e.capabilities
    r = probe(e, oracle, "post_accumulate_hooks")
    assert r.verdict == "ok" and r.works is False and "NotImplementedError" in r.detail, r


def test_node_hooks_are_probed_only_through_a_faithful_module(oracle):
    assert probe(oracle, oracle, "node_hooks").works is True
    assert probe(no_hooks(), oracle, "node_hooks").verdict == "unprobed"  # a subclass


def test_custom_functions_are_probed_through_the_module(oracle):
    assert probe(oracle, oracle, "custom_function").works is True
    r = probe(load_engine("refimpl"), oracle, "custom_function")
    assert r.verdict == "ok" and r.works is True, r
    assert probe(no_hooks(), oracle, "custom_function").verdict == "unprobed"  # a subclass


def test_data_assignment_is_probed_through_the_module(oracle):
    assert probe(oracle, oracle, "data_assign").works is True
    r = probe(load_engine("refimpl"), oracle, "data_assign")
    assert r.verdict == "ok" and r.works is True, r
    assert probe(no_hooks(), oracle, "data_assign").verdict == "unprobed"  # a subclass


def test_saved_tensor_hooks_are_probed_through_the_module(oracle):
    assert probe(oracle, oracle, "saved_tensors_hooks").works is True
    r = probe(load_engine("refimpl"), oracle, "saved_tensors_hooks")
    assert r.verdict == "ok" and r.works is True, r
    assert probe(no_hooks(), oracle, "saved_tensors_hooks").verdict == "unprobed"  # a subclass


def test_a_module_whose_hooks_never_run_fails_the_saved_tensors_hooks_probe(oracle):
    import contextlib
    import types
    graph = types.ModuleType("bare.autograd.graph")   # hooks accepted, and never called
    graph.saved_tensors_hooks = lambda pack, unpack: contextlib.nullcontext()
    graph.disable_saved_tensors_hooks = lambda message: contextlib.nullcontext()
    bare = types.ModuleType("bare")
    bare.tensor, bare.autograd = _torch().tensor, types.ModuleType("bare.autograd")
    bare.autograd.graph = graph
    r = probe(TorchLike(bare, "bare", "cpu"), oracle, "saved_tensors_hooks")
    assert r.verdict == "declared but fails" and "expected" in r.detail, r


def test_a_module_whose_data_assignment_keeps_the_old_values_fails_its_probe(oracle):
    import types

    class Frozen:   # a tensor whose .data = and set_() change nothing
        def __init__(self, t):
            self.__dict__["t"] = t

        def __getattr__(self, name):
            return getattr(self.t, name)

        def __setattr__(self, name, value):
            pass

        def set_(self, src):
            return self

        def __mul__(self, other):
            return self.t * (other.t if isinstance(other, Frozen) else other)

    bare = types.ModuleType("bare")
    bare.float64 = _torch().float64
    bare.tensor = lambda *a, **k: Frozen(_torch().tensor(*a, **k))
    bare.zeros = lambda *a, **k: Frozen(_torch().zeros(*a, **k))
    r = probe(TorchLike(bare, "bare", "cpu"), oracle, "data_assign")
    assert r.verdict == "declared but fails" and "expected" in r.detail, r


def test_multi_grad_hooks_are_probed_by_a_program(oracle):
    assert probe(oracle, oracle, "multi_grad_hooks").works is True
    r = probe(load_engine("refimpl"), oracle, "multi_grad_hooks")
    assert r.verdict == "ok" and r.works is True, r
    broken = load_engine("refimpl")
    broken.register_multi_grad_hook = lambda tensors, fn, mode: (_ for _ in ()).throw(
        NotImplementedError("no multi-grad hooks"))
    assert probe(broken, oracle, "multi_grad_hooks").works is False


def test_a_module_whose_multi_grad_hook_fires_per_tensor_fails_its_probe(oracle):
    import types

    def per_tensor(tensors, fn, mode="all"):    # one call per gradient: not a multi-grad hook
        def call(i, g):
            fn(g if mode == "any" else [g if j == i else None for j in range(len(tensors))])
        hs = [t.register_hook(lambda g, i=i: call(i, g)) for i, t in enumerate(tensors)]
        return types.SimpleNamespace(remove=lambda: [h.remove() for h in hs])
    class Like(types.ModuleType):       # torch itself, but for the attributes set on it
        def __init__(self, name, of):
            super().__init__(name)
            self._of = of

        def __getattr__(self, name):
            return getattr(self._of, name)
    torch = _torch()
    bare = Like("bare", torch)
    bare.autograd = Like("bare.autograd", torch.autograd)
    bare.autograd.graph = Like("bare.autograd.graph", torch.autograd.graph)
    bare.autograd.graph.register_multi_grad_hook = per_tensor
    r = probe(TorchLike(bare, "bare", "cpu"), oracle, "multi_grad_hooks")
    # the probe program runs to the hooks and differs in their calls, not earlier
    assert r.verdict == "declared but fails" and r.works is False, r
    assert "hook" in r.detail, r
    bare.autograd.graph.register_multi_grad_hook = torch.autograd.graph.register_multi_grad_hook
    assert probe(TorchLike(bare, "bare", "cpu"), oracle, "multi_grad_hooks").works is True


def test_a_module_without_custom_functions_fails_their_probe(oracle):
    import types
    bare = types.ModuleType("bare")     # torch's tensors, an autograd without Function
    bare.tensor, bare.autograd = _torch().tensor, types.ModuleType("bare.autograd")
    r = probe(TorchLike(bare, "bare", "cpu"), oracle, "custom_function")
    assert r.verdict == "declared but fails" and "AttributeError" in r.detail, r


class _DetachForgetsSaved(TorchLike):
    """detach_() as a copy detached beside the tensor: the tensor keeps its history."""
    def detach_(self, t):
        t.detach()


def test_detach_inplace_is_probed_on_what_a_saved_input_becomes(oracle):
    assert probe(oracle, oracle, "detach_inplace").works is True
    assert probe(load_engine("refimpl"), oracle, "detach_inplace").works is True
    r = probe(_DetachForgetsSaved(_torch(), "forgets", "cpu"), oracle, "detach_inplace")
    assert r.verdict == "declared but fails" and r.works is False, r


def test_a_run_reports_capability_checks_and_na_clauses(tmp_path, capsys):
    from conformance.runner import print_summary
    report = run_campaign(f"{MOD}:modest", "torch", count=4, size=12, out_dir=tmp_path,
                          progress=None)
    checks = {c["capability"]: c["verdict"] for c in report.capability_checks}
    assert {c: v for c, v in checks.items() if v != "ok"} == {
        "hooks": "declared absent but works", "warnings": "declared absent but works"}
    assert checks["core"] == checks["views"] == "ok"        # the declared ones are probed too
    spec = load_spec()
    for cid, row in report.clauses.items():
        c = spec.clauses[cid]
        if "hooks" in c.requires or "warnings" in c.requires:
            assert row["status"] == "n/a" and "lacks" in row["reason"], cid
        if row["status"] == "pass":
            assert row["programs"] > 0, cid      # never "pass" without a program
    print_summary(report, tmp_path)
    out = capsys.readouterr().out
    assert "capability hooks: declared absent but works" in out


def test_probing_can_be_turned_off(tmp_path):
    report = run_campaign(f"{MOD}:modest", "torch", count=1, size=6, out_dir=tmp_path,
                          progress=None, probe=False)
    assert report.capability_checks == []


def test_a_run_reports_a_declared_capability_that_fails(tmp_path, capsys):
    """`gradspec run` probes what the engine declares as well as what it declares absent, and
    prints a declared capability whose probe fails."""
    from conformance.runner import print_summary
    report = run_campaign(f"{MOD}:boastful", "torch", count=2, size=8, out_dir=tmp_path,
                          progress=None)
    checks = {c["capability"]: c for c in report.capability_checks}
    assert checks["hooks"]["verdict"] == "declared but fails" and checks["hooks"]["declared"]
    print_summary(report, tmp_path)
    assert "capability hooks: declared but fails: statement" in capsys.readouterr().out


def test_engines_probe_takes_an_import_path(capsys):
    from conformance.cli import main
    assert main(["engines", "--probe", "--engine", f"{MOD}:boastful", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == [f"{MOD}:boastful"]
    assert rows[0]["source"] == "import path"
    verdicts = {p["capability"]: p["verdict"] for p in rows[0]["probes"]}
    assert verdicts["hooks"] == "declared but fails" and verdicts["core"] == "ok"
    assert main(["engines", "--engine", "refimpl", "--engine", "refimpl"]) == 0
    assert capsys.readouterr().out.count("refimpl ") == 1
    assert main(["engines", "--engine", "no.such.module:engine"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot import no.such" in err[0]
