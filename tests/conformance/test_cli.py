"""`gradspec run` and `gradspec replay`: exit 0 without divergence, 1 with, 2 for any user
error, which is one line on stderr (a bad engine, a broken adapter, a missing or corrupt file).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from tests.conformance.test_executor import MOD, saved_output

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ["--source", f"{MOD}:source"]


def gradspec(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def in_process(capsys, *args: str) -> tuple[int, str]:
    """main() here: user errors stop before any worker starts, so no interpreter is needed."""
    try:
        code = main(list(args))
    except SystemExit as exc:     # argparse
        code = exc.code
    return code, capsys.readouterr().err


def one_line_error(code_err: tuple[int, str], words: str) -> None:
    code, err = code_err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], err


def test_run_without_divergence_exits_0(tmp_path):
    r = gradspec("run", "--engine", "torch", "--count", "3", "--out", str(tmp_path), *SOURCE)
    assert r.returncode == 0, r.stderr
    assert "clause" in r.stdout and "0 divergent" in r.stdout
    assert r.stderr == ""                 # no progress line off a terminal (test_progress.py)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["engine"] == "torch" and data["seed"] == 0 and data["divergences"] == []


def test_run_with_divergence_exits_1_with_runnable_repros(capsys, monkeypatch, tmp_path):
    r = gradspec("run", "--engine", f"{MOD}:no_leaf_check", "--count", "4", "--out",
                 str(tmp_path), "--seed", "3", "-n", "2", *SOURCE)
    assert r.returncode == 1, r.stderr
    data = json.loads((tmp_path / "report.json").read_text())
    d = data["divergences"][0]
    assert d["clauses"][0] == "INPLACE-1" and "INPLACE-1" in r.stdout
    torch_repro = subprocess.run([sys.executable, d["repro_torch"]], capture_output=True,
                                 text=True, cwd=ROOT)
    assert torch_repro.returncode == 0 and "raised RuntimeError" in torch_repro.stdout
    engine_repro = subprocess.run([sys.executable, d["repro_engine"]], capture_output=True,
                                  text=True, cwd=ROOT)
    assert engine_repro.returncode == 1 and "1 divergence(s)" in engine_repro.stdout
    # replay the saved program on any engine
    monkeypatch.chdir(ROOT)
    assert main(["replay", d["folder"], "--engine", "torch"]) == 0
    assert main(["replay", d["program"], "--engine", f"{MOD}:no_leaf_check"]) == 1
    assert "!! 1" in capsys.readouterr().out


@pytest.mark.parametrize("args, words", [
    (["run", "--engine", "nope"], "unknown engine 'nope'"),
    (["run", "--engine", f"{MOD}:not_an_engine"], "not an Engine"),
    (["run", "--engine", f"{MOD}:failing_factory"], "factory failed"),
    (["run", "--oracle", "no_such_module:f"], "cannot import no_such_module"),
    (["run", "--engine", "torch", "--device", "cuda"], "cuda"),
    (["run", "--count", "0"], "--count"),
    (["run", "--jobs", "x"], "--jobs"),
    (["run", "--per-clause", "-1"], "--per-clause"),
    (["run", "--per-clause", "many"], "--per-clause"),
    (["run", "--source", "no_such_module:f"], "--source"),
    (["run", "--engine", "torch", "--out", "pyproject.toml"], "cannot write to pyproject.toml"),
    (["replay", "missing.json", "--engine", "torch"], "cannot read missing.json"),
    (["replay", "pyproject.toml", "--engine", "torch"], "not valid JSON"),
    (["replay", "--engine", "torch"], "file"),
])
def test_user_errors_are_one_line_and_exit_2(capsys, monkeypatch, args, words):
    monkeypatch.chdir(ROOT)
    one_line_error(in_process(capsys, *args), words)


def test_replay_rejects_a_program_of_another_format(capsys, tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"gradspec_program": 99, "statements": []}))
    one_line_error(in_process(capsys, "replay", str(bad), "--engine", "torch"),
                   "unsupported program")
    bad.write_text(json.dumps({"gradspec_program": 1, "statements": [{"op": "frobnicate"}]}))
    one_line_error(in_process(capsys, "replay", str(bad), "--engine", "torch"),
                   "unknown or missing op")
    one_line_error(in_process(capsys, "replay", str(tmp_path), "--engine", "torch"),
                   "cannot read")        # a folder without program.json


def test_replay_of_a_clean_program_exits_0(capsys, tmp_path):
    f = tmp_path / "program.json"
    f.write_text(saved_output().dumps())
    assert main(["replay", str(f), "--engine", "torch"]) == 0
    assert "VERSION_MISMATCH" in capsys.readouterr().out


def test_run_and_replay_judge_a_program_by_the_same_divergence(tmp_path, capsys):
    """An engine that retains every gradient differs first in a sweep's warnings and, at the
    same statement, in a value: the program is judged by the value (RETAIN-1). The report's
    entry gave RETAIN-1 beside the warnings' line, and replay named RETAIN-7."""
    engine = "tests.broken_engines.retains_every_grad:factory"
    assert main(["run", "--engine", engine, "--count", "20", "--quiet", "--no-probe",
                 "--out", str(tmp_path / "out")]) == 1
    entries = json.loads((tmp_path / "out" / "report.json").read_text())["divergences"]
    swept = [e for e in entries if e["primary"] == ["RETAIN-1"]]
    assert swept, [e["primary"] for e in entries]
    for e in swept:
        assert e["what"] == "value" and "[RETAIN-1]" in e["first"].splitlines()[0]
    capsys.readouterr()
    assert main(["replay", swept[0]["folder"], "--engine", engine]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith("value [RETAIN-1]")


def test_replay_judges_by_the_classes_its_run_judged(tmp_path, capsys):
    """A run under --classes core records them beside each program: a replay of a program
    whose divergences are all torch-observable (hooks in another order, the same calls) is not
    applicable there too (exit 0), as the run reported it."""
    engine = "tests.broken_engines.reversed_hooks:factory"
    assert main(["run", "--engine", engine, "--count", "30", "--quiet", "--no-probe",
                 "--classes", "core", "--out", str(tmp_path / "out")]) in (0, 1)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    folder = report["not_applicable"][0]["folder"]
    assert json.loads((Path(folder) / "divergence.json").read_text())["classes"] == "core"
    capsys.readouterr()
    assert main(["replay", folder, "--engine", engine]) == 0
    assert "not applicable" in capsys.readouterr().out
