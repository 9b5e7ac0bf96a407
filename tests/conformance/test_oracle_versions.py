"""Oracle versions: clauses newer than the oracle's torch release are not
applicable, and divergences on them do not fail the run. The old oracle is torch reporting an
old version, loaded by import path."""
from __future__ import annotations

import pytest

from conformance.engines.torchlike import torch_engine
from conformance.program import Program
from conformance.program import Stmt as S
from conformance.report import newer_than, release
from conformance.runner import run_campaign
from conformance.specdoc import load_spec

MOD = "tests.conformance.test_oracle_versions"
CORE = "tests.conformance.test_executor"


def old_torch(device="cpu"):
    e = torch_engine(device)
    e.version = "2.0.1+cpu"
    return e


def _leaf_inplace(clause: str) -> Program:
    """An in-place op on a leaf that requires grad, tagged with `clause`: torch raises
    LEAF_INPLACE, the no_leaf_check engine does not."""
    return Program([
        S("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2], "dtype": "float32",
                                   "requires_grad": True}, clauses=["LEAF-1"]),
        S("inplace", target="x", args=[1.0], params={"fn": "add_"}, clauses=[clause]),
        S("observe", target="x", params={"what": "value"}),
    ])


def lenient_grad(device="cpu"):
    """torch, but a .grad of the wrong shape is dropped instead of refused (breaks LEAF-12)."""
    e = torch_engine(device)
    e.name = "lenientgrad"
    assign = e.set_grad

    def set_grad(t, value):
        if value is None or tuple(value.shape) == tuple(t.shape):
            assign(t, value)
    e.set_grad = set_grad
    return e


def newer_source(seed, capabilities=None, size=20):
    """A .grad of the wrong shape assigned: torch raises GRAD_ASSIGN_SHAPE, whose clause is
    LEAF-12 (since 2.1); the lenient_grad engine does not."""
    return Program([
        S("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2], "dtype": "float32",
                                   "requires_grad": True}, clauses=["LEAF-1"]),
        S("leaf", out="g", params={"values": [1.0, 2.0, 3.0], "shape": [3],
                                   "dtype": "float32"}, clauses=["LEAF-1"]),
        S("set_grad", target="x", args=["g"], clauses=["LEAF-12"]),
        S("observe", target="x", params={"what": "requires_grad"}),
    ])


def older_source(seed, capabilities=None, size=20):
    return _leaf_inplace("INPLACE-1")       # since 0.4


@pytest.mark.parametrize("since,version,newer", [
    ("2.1", "2.0.1+cpu", True), ("2.1", "2.1.0", False), ("2.1", "2.13.0+cpu", False),
    ("2.2", "2.13.0", False),               # 13 > 2: numbers, not strings
    ("1.11", "1.9.1", True), ("0.4", "0.4.1", False), ("2.2", "2.2.0a0+git12ab", False),
    ("2.1", "2.0.0 (aot_eager)", True), ("2.1", "?", False), ("2.1", "", False),
])
def test_versions_compare_as_releases(since, version, newer):
    assert newer_than(since, version) is newer


def test_release_numbers():
    assert release("2.13.0+cpu") == (2, 13, 0) and release("v1.8") == (1, 8)
    assert release("unknown") is None


def test_clauses_newer_than_the_oracle_are_not_applicable(tmp_path):
    report = run_campaign(f"{MOD}:lenient_grad", f"{MOD}:old_torch", count=2,
                          out_dir=tmp_path, progress=None, source=newer_source, probe=False)
    assert report.oracle_version == "2.0.1+cpu"
    assert report.exit_code == 0 and report.divergences == []
    assert len(report.not_applicable) == 2
    assert "LEAF-12: since torch 2.1" in report.not_applicable[0]["not_applicable"]
    row = report.clauses["LEAF-12"]
    assert row["status"] == "n/a" and "newer than the oracle (2.0.1+cpu)" in row["reason"]
    spec = load_spec()
    for cid, r in report.clauses.items():   # every clause after 2.0 is n/a
        if newer_than(spec.clauses[cid].since, "2.0.1"):
            assert r["status"] == "n/a", cid


def test_the_same_divergence_on_a_current_oracle_fails(tmp_path):
    report = run_campaign(f"{MOD}:lenient_grad", "torch", count=2, out_dir=tmp_path,
                          progress=None, source=newer_source, probe=False)
    assert report.exit_code == 1 and report.clauses["LEAF-12"]["status"] == "diverges"


def test_older_clauses_still_diverge_on_an_old_oracle(tmp_path):
    report = run_campaign(f"{CORE}:no_leaf_check", f"{MOD}:old_torch", count=2,
                          out_dir=tmp_path, progress=None, source=older_source, probe=False)
    assert report.exit_code == 1 and report.clauses["INPLACE-1"]["status"] == "diverges"
