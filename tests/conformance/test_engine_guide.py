"""docs/engines.md, the guide for engine authors: it names every statement kind, op, observable
and capability with the methods each capability needs (so it cannot fall behind the
language), and its worked example, docs/examples/mygrad_adapter.py, loads and runs a judged
campaign where mygrad installs."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.engines.base import NEEDS
from conformance.kinds import KINDS
from conformance.kinds.observe import TABLE
from conformance.lang import ops

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "engines.md").read_text(encoding="utf-8")
EXAMPLES = ROOT / "docs" / "examples"


def _table_rows(header: str) -> dict[str, str]:
    """The rows of the guide's table whose first column is `header`, by their first cell (a
    `name` in backquotes)."""
    rows: dict[str, str] = {}
    inside = False
    for line in GUIDE.splitlines():
        if line.startswith(f"| {header} |"):
            inside = True
        elif inside and not line.startswith("|"):
            break
        elif inside and (m := re.match(r"\| `([^`]+)` \|(.*)", line)):
            rows[m.group(1)] = m.group(2)
    assert rows, f"no table headed {header!r} in docs/engines.md"
    return rows


def test_the_guide_names_every_statement_kind_and_op():
    kinds = _table_rows("kind")
    assert set(KINDS) <= set(kinds), sorted(set(KINDS) - set(kinds))
    rows = _table_rows("op")
    for name, row in ops.ROWS.items():
        assert name in rows, name
        for key in row.kw:
            assert f"`{key}`" in rows[name], (name, key)


def test_the_guide_lists_every_capability_with_its_methods():
    rows = _table_rows("capability")
    for cap, methods in NEEDS.items():
        assert cap in rows, cap
        for m in methods:
            assert f"`{m}`" in rows[cap], (cap, m)


def test_the_guide_names_every_observable():
    for what in TABLE:
        assert f"`{what}`" in GUIDE, what


def test_the_worked_example_runs_a_judged_campaign(tmp_path):
    pytest.importorskip("mygrad", reason="mygrad is not installed (pip install mygrad==2.5.0)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(EXAMPLES), str(ROOT)]))
    r = subprocess.run([sys.executable, "-m", "conformance", "run", "--engine",
                        "mygrad_adapter:engine", "--count", "40", "--size", "12", "--out",
                        str(tmp_path), "--quiet"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode in (0, 1), (r.returncode, r.stderr[-2000:])
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["programs"] == 40 and report["engine"] == "mygrad"
    assert report["crashes"] == report["timeouts"] == report["oracle_failures"] == []
    assert not any(d["what"] == "harness" for d in report["divergences"])
    assert report["capabilities"] == ["core", "views"]
    # the backward docstring's difference shows up as its own problem, with its clause
    signatures = {g["signature"]: g["primary"] for g in report["groups"]}
    assert signatures.get("backward/outcome/IMPLICIT_GRAD_NONSCALAR/ok") == "API-1", signatures
    checks = {c["capability"]: c["verdict"] for c in report["capability_checks"]}
    assert checks["views"] in ("ok", "declared but fails") and "core" in checks
