"""The pytest entry point (conformance/pytest_plugin.py): `pytest tests/conformance --engine X`
fails with the divergence, its clauses and a repro for a broken engine, and names a bad
engine in one line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conformance.pytest_plugin import PROFILE_TABLE, chosen

ROOT = Path(__file__).resolve().parents[2]
TEST = "tests/conformance/test_gen_selfcheck.py::test_engine_conforms_to_oracle"


def run_pytest(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADSPEC_", "PYTEST_"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", TEST, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_broken_engine_fails_with_a_report():
    r = run_pytest("--engine", "tests.broken_engines.never_frees:factory",
                   "--gradspec-profile", "ci")
    assert r.returncode == 1, r.stdout[-3000:]
    assert "divergence(s) of never_frees" in r.stdout and "FREE-1" in r.stdout
    assert "repro (plain torch)" in r.stdout


def test_unknown_engine_is_one_line():
    r = run_pytest("--engine", "no_such_engine")
    assert r.returncode == 1
    assert "cannot load engine: unknown engine 'no_such_engine'" in r.stdout


class _Config:
    def __init__(self, **opts):
        self.opts = opts

    def getoption(self, name):
        if name not in self.opts:
            raise ValueError(name)
        return self.opts[name]


def test_defaults_come_from_the_environment(monkeypatch):
    for var in ("GRADSPEC_ENGINE", "GRADSPEC_ORACLE", "GRADSPEC_PROFILE", "CI", "TOX_ENV_NAME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GRADSPEC_TEST_ENGINES", "torch")
    assert chosen(_Config()) == {"engine": "torch", "oracle": "torch", "device": "cpu",
                                 "profile": "dev"}
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("GRADSPEC_ENGINE", "refimpl")
    assert chosen(_Config())["profile"] == "ci" and chosen(_Config())["engine"] == "refimpl"
    assert chosen(_Config(**{"--engine": "x:y", "--oracle": None, "--gradspec-device": None,
                             "--gradspec-profile": "thorough"}))["engine"] == "x:y"
    assert PROFILE_TABLE["ci"].derandomize and not PROFILE_TABLE["dev"].derandomize
