"""The pytest entry point (conformance/pytest_plugin.py): `pytest tests/conformance
--gradspec-engine X` fails with the divergence, its clauses and a repro for a broken engine,
names a bad engine in one line, and fails only the test whose program an engine crashes or
hangs on (the programs run in a worker process), with the program and its repro; the session
goes on. The shipped suite (`--pyargs conformance.suite`, conformance/suite/) has one item per
clause, and the plugin, loaded in every session where gradspec is installed, stays inert in a
session that does not ask for it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.pytest_plugin import PROFILE_TABLE, chosen, timeout
from tests.broken_engines import FAULTS

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parents[2]
TEST = "tests/conformance/test_engine_conformance.py::test_engine_conforms_to_oracle"


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


@pytest.mark.parametrize("flag", ["--gradspec-engine", "--engine"])
def test_unknown_engine_is_one_usage_error_line(flag):
    r = run_pytest(flag, "no_such_engine")
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ERROR: --gradspec-engine: cannot load engine: unknown engine "
                               "'no_such_engine'"), lines
    assert "Traceback" not in r.stdout + r.stderr


# ---- fault drills: the engine's programs run in a worker process (conformance_isolated) -----
OTHER = "tests/conformance/test_pytest_plugin.py::test_defaults_come_from_the_environment"


def _unjudged(r: subprocess.CompletedProcess, engine: str, verb: str) -> None:
    """The conformance test failed with the fault, the program and its repro, and the other
    test of the session still ran: pytest's own exit status for failed tests, 1."""
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert f"{engine} {verb} on a program: statement " in r.stdout, r.stdout[-3000:]
    assert "program and repro: " in r.stdout and "replay: gradspec replay " in r.stdout
    assert "repro (plain torch):" in r.stdout and "program JSON:" in r.stdout
    assert '"statements"' in r.stdout
    assert "1 failed, 1 passed" in r.stdout, r.stdout[-1000:]
    assert "INTERNALERROR" not in r.stdout + r.stderr


def test_a_crashing_engine_fails_its_test_not_the_session():
    spec = "tests.broken_engines.aborts:factory"
    assert FAULTS[spec] == "crash"
    r = run_pytest("--engine", spec, "--gradspec-profile", "ci", OTHER)
    _unjudged(r, "aborts", "crashed")
    assert "worker died (exit code -6)" in r.stdout


def test_a_hanging_engine_fails_its_test_after_the_timeout():
    spec = "tests.broken_engines.hangs:factory"
    assert FAULTS[spec] == "timeout"
    r = run_pytest("--engine", spec, "--gradspec-profile", "ci", "--gradspec-timeout", "1",
                   OTHER)
    _unjudged(r, "hangs", "hung")
    assert "no result within 1 s" in r.stdout and "--timeout 1" in r.stdout


@pytest.mark.parametrize("bad", ["0", "-1", "inf", "nan", "soon"])
def test_the_timeout_must_be_finite_and_positive(bad):
    assert timeout(_Config(**{"--gradspec-timeout": "2.5"})) == 2.5
    with pytest.raises(pytest.UsageError, match="--gradspec-timeout"):
        timeout(_Config(**{"--gradspec-timeout": bad}))


def test_an_unknown_device_is_a_usage_error_naming_the_device_option():
    r = run_pytest("--gradspec-engine", "refimpl", "--gradspec-device", "tpu")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 4 and len(lines) == 1, r.stderr[-2000:]
    assert lines[0].startswith("ERROR: --gradspec-device: unknown device 'tpu'"), lines


def test_a_bad_timeout_is_a_usage_error():
    r = run_pytest("--gradspec-timeout", "nan")
    assert r.returncode == 4 and "--gradspec-timeout" in r.stderr, r.stderr[-2000:]


class _Config:
    def __init__(self, **opts):
        self.opts = opts

    def getoption(self, name):
        if name not in self.opts:
            raise ValueError(name)
        return self.opts[name]


def test_defaults_come_from_the_environment(monkeypatch):
    for var in ("GRADSPEC_ENGINE", "GRADSPEC_ORACLE", "GRADSPEC_PROFILE", "CI", "TOX_ENV_NAME",
                "GRADSPEC_XFAIL", "GRADSPEC_CLASSES", "GRADSPEC_DEVICE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GRADSPEC_TEST_ENGINES", "torch")
    assert chosen(_Config()) == {"engine": "torch", "oracle": "torch", "device": "cpu",
                                 "profile": "dev", "xfail": "", "classes": ""}
    monkeypatch.setenv("GRADSPEC_XFAIL", "known.txt")
    assert chosen(_Config())["xfail"] == "known.txt"
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("GRADSPEC_ENGINE", "refimpl")
    assert chosen(_Config())["profile"] == "ci" and chosen(_Config())["engine"] == "refimpl"
    assert chosen(_Config(**{"gradspec_alias_engine": "x:y", "--gradspec-device": None,
                             "--gradspec-profile": "thorough"}))["engine"] == "x:y"
    assert chosen(_Config(**{"--gradspec-engine": "a:b", "--engine": "x:y"}))["engine"] == "a:b"
    assert PROFILE_TABLE["ci"].derandomize and not PROFILE_TABLE["dev"].derandomize


# ---- --gradspec-xfail / GRADSPEC_XFAIL: the expected-failure file of `gradspec run` ---------
def test_xfail_file_marks_a_test_by_node_id(tmp_path):
    known = tmp_path / "known.txt"
    known.write_text(f"{TEST}  @never_frees,tests.broken_engines.never_frees:factory  "
                     f"never frees saved values\n")
    r = run_pytest("--engine", "tests.broken_engines.never_frees:factory",
                   "--gradspec-profile", "ci", "--gradspec-xfail", str(known),
                   "--search-unshrunk")
    assert r.returncode == 0, r.stdout[-3000:]
    assert "1 xfailed" in r.stdout


def test_xfail_file_from_the_environment_and_bad_files(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("LEAF-5\n")     # no reason
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADSPEC_", "PYTEST_"))}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:xdist", TEST, "--engine", "no_such_engine"], cwd=ROOT,
                       env={**env, "GRADSPEC_XFAIL": str(bad)}, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 4, r.stdout[-2000:] + r.stderr[-2000:]
    assert "--gradspec-xfail:" in r.stderr and "LEAF-5 has no reason" in r.stderr


def test_clause_entries_turn_expected_divergences_into_xfails():
    import pytest

    from conformance.engines import load_engine
    from conformance.program import Program, Stmt
    from conformance.pytest_plugin import check_program, split_expected
    from conformance.xfail import parse
    p = Program([
        Stmt("leaf", out="x", params={"values": [1.0], "shape": [], "dtype": "float64",
                                      "requires_grad": True}),
        Stmt("call", out="y", args=["x"], params={"fn": "exp"}),
        Stmt("backward", target="y"),
        Stmt("backward", target="y", clauses=["FREE-1"]),     # GRAPH_FREED, but not here
    ])
    engine, oracle = load_engine("tests.broken_engines.never_frees:factory"), load_engine("torch")
    with pytest.raises(pytest.fail.Exception):
        check_program(p, oracle, engine)
    with pytest.raises(pytest.fail.Exception):
        check_program(p, oracle, engine, parse("LEAF-5  another clause\n"))
    with pytest.raises(pytest.xfail.Exception, match="FREE-1: never frees"):
        check_program(p, oracle, engine, parse("FREE-1  never frees\n"))
    check_program(p, oracle, oracle, parse("FREE-1  never frees\n"))   # no divergence: passes
    assert split_expected([], parse("FREE-1  x\n")) == ([], [])


# ---- the shipped suite (conformance/suite/) and the plugin in sessions that do not ask -------
def suite_run(pytester: pytest.Pytester, monkeypatch, *args: str):
    """`python -m pytest --pyargs conformance.suite ARGS` from pytester's empty folder, the
    plugin loaded as its entry point loads it (the same module, under the same name)."""
    for var in [v for v in os.environ if v.startswith(("GRADSPEC_", "PYTEST_"))] + ["CI"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH",
                                                                                   "")]))
    return pytester.runpytest_subprocess("-p", "conformance.pytest_plugin", "-p",
                                         "no:cacheprovider", "-p", "no:xdist", *args,
                                         timeout=600)


PLAIN = '''
import sys

def test_plain(request):
    assert request.config.pluginmanager.has_plugin("conformance.pytest_plugin")
    loaded = [m for m in ("conformance.engines", "conformance.judge", "conformance.spec",
                          "conformance.suite.clauses", "refimpl", "torch") if m in sys.modules]
    assert loaded == []
'''


def test_the_plugin_is_inert_in_an_unrelated_session(pytester, monkeypatch):
    pytester.makepyfile(test_plain=PLAIN)
    r = suite_run(pytester, monkeypatch, "-v")
    r.assert_outcomes(passed=1)
    said = [ln for ln in r.stdout.lines + r.stderr.lines if ln.startswith("gradspec")]
    assert said == []       # no header line (pytest's own list of plugins may name it)
    collected = suite_run(pytester, monkeypatch, "--collect-only", "-q")
    items = [ln for ln in collected.stdout.lines if "::" in ln]
    assert items == ["test_plain.py::test_plain"]


def test_an_option_of_another_project_named_engine_wins(pytester, monkeypatch):
    """The deprecated aliases yield: a project whose conftest has its own --engine keeps it."""
    pytester.makeconftest('def pytest_addoption(parser):\n'
                          '    parser.addoption("--engine", default="theirs")\n')
    pytester.makepyfile(test_theirs='def test_theirs(request):\n'
                                    '    assert request.config.getoption("--engine") == "mine"\n')
    suite_run(pytester, monkeypatch, "--engine", "mine").assert_outcomes(passed=1)


def test_the_suite_has_one_item_per_clause_and_refimpl_passes_it(pytester, monkeypatch):
    r = suite_run(pytester, monkeypatch, "--pyargs", "conformance.suite", "--gradspec-engine",
                  "refimpl", "--gradspec-profile", "ci", "-k", "VER-7", "-v")
    items = [ln for ln in r.stdout.lines if "::test_" in ln and "PASSED" in ln]
    assert len(items) == 1 and "test_clause[VER-7] PASSED" in items[0], r.stdout.str()[-3000:]
    r.assert_outcomes(passed=1)
    assert "gradspec: engine refimpl vs oracle torch on cpu, profile ci, stream seed 0, at " \
        "least 20 programs a clause" in r.stdout.str()


def test_a_broken_engine_fails_the_item_of_the_clause_it_breaks(pytester, monkeypatch):
    r = suite_run(pytester, monkeypatch, "--pyargs", "conformance.suite", "--gradspec-engine",
                  "tests.broken_engines.no_version_check:factory", "--gradspec-profile", "ci",
                  "-k", "VER-7 or LEAF-5")
    r.assert_outcomes(failed=1, passed=1)
    out = r.stdout.str()
    failed = [ln for ln in r.stdout.lines if ln.startswith("FAILED ")]
    assert len(failed) == 1 and "test_clauses.py::test_clause[VER-7]" in failed[0], out[-3000:]
    assert "VER-7: " in out and "with VER-7 as their primary clause" in out
    assert "[primary VER-7, class core]" in out and "repro (plain torch):" in out


def test_the_old_option_names_still_work(pytester, monkeypatch):
    r = suite_run(pytester, monkeypatch, "--pyargs", "conformance.suite", "--engine",
                  "tests.broken_engines.no_version_check:factory", "--oracle", "torch",
                  "--gradspec-profile", "ci", "-k", "VER-7")
    r.assert_outcomes(failed=1)
    assert "gradspec: --engine is deprecated, use --gradspec-engine" in r.stdout.str()
    helps = suite_run(pytester, monkeypatch, "--help").stdout.str()
    assert "--gradspec-engine" in helps and "deprecated alias of --gradspec-engine" in helps


def test_only_the_claimed_classes_are_judged(pytester, monkeypatch):
    """renamed_nodes gives nodes other names: torch-observable divergences (GRAPH-3 is their
    primary clause), which fail the engine's claim (every class) and nothing when it claims
    core alone. (reversed_hooks was the example once; a reorder that gives a hook another
    gradient is HOOK-2's own class, core: tests/conformance/test_verdict.py.)"""
    args = ("--pyargs", "conformance.suite", "--gradspec-engine",
            "tests.broken_engines.renamed_nodes:factory", "--gradspec-profile", "ci",
            "-k", "test_clause and GRAPH-3")
    suite_run(pytester, monkeypatch, *args).assert_outcomes(failed=1)
    core = suite_run(pytester, monkeypatch, *args, "--gradspec-classes", "core", "-rs")
    core.assert_outcomes(skipped=1)     # every program of GRAPH-3 not applicable: no verdict
    assert "torch-observable" in core.stdout.str(), core.stdout.str()[-2000:]
    bad = suite_run(pytester, monkeypatch, *args, "--gradspec-classes", "nope")
    assert bad.ret == 4 and "--gradspec-classes: 'nope' is not a conformance class" in \
        bad.stderr.str()


def test_the_suite_lists_stale_clause_entries_as_gradspec_run_does(pytester,
                                                                          monkeypatch):
    """The one matcher's staleness in a pytest session too: a clause entry whose item passed
    now passes; an entry for a clause whose item did not run is neither, and so is a seed
    entry (a test's own program may have it)."""
    pytester.path.joinpath("known.txt").write_text(
        "VER-7  fixed since\nseed:5  no such program\nLEAF-5  its item is deselected\n")
    r = suite_run(pytester, monkeypatch, "--pyargs", "conformance.suite", "--gradspec-engine",
                  "refimpl", "--gradspec-profile", "ci", "-k", "VER-7",
                  "--gradspec-xfail", "known.txt")
    r.assert_outcomes(passed=1)
    stale = [ln for ln in r.stdout.lines if ln.startswith("stale expected failure")]
    assert stale == ["stale expected failure, line 1: VER-7: now passes: its clause item "
                     "passed"], r.stdout.str()[-3000:]
