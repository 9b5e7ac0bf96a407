"""Expected-failure files: the format, bad lines (one
line, exit 2), expected failures that do not fail the run, and stale entries; one matcher for
`gradspec run` and pytest, on the clauses a divergence is attributed to; stale pytest node-ID
entries."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.judge.xfail import attributed, marked_tests, match, stale_tests
from conformance.program import Program, Stmt
from conformance.runner import program_seeds, run_campaign
from conformance.spec.reader import load_errors
from conformance.xfail import XfailError, load, parse
from tests.conformance.test_executor import MOD, source

ROOT = Path(__file__).resolve().parents[2]
NEVER_FREES = "tests.broken_engines.never_frees:factory"

NOWHERE = "LEAF-" + "999"      # built, so that the repo cites no missing clause
GOOD = f"""\
# a comment, then a blank line

INPLACE-1   leaves may be modified in place  https://example.org/issues/1
GRAPH-2     this clause passes, so the entry is stale
{NOWHERE}    no such clause
seed:12345  no program has this seed
HOOK-1      @paddle,torch-compile  only for those engines
tests/conformance/test_x.py::test_y[3]  a pytest node ID
"""


def test_the_format():
    entries = parse(GOOD)
    assert [x.id for x in entries] == ["INPLACE-1", "GRAPH-2", NOWHERE, "seed:12345",
                                       "HOOK-1", "tests/conformance/test_x.py::test_y[3]"]
    assert [x.kind for x in entries] == ["clause", "clause", "clause", "seed", "clause",
                                        "test"]
    first = entries[0]
    assert first.reason == "leaves may be modified in place  https://example.org/issues/1"
    assert first.line == 3 and first.applies_to("anything")
    hook = entries[4]
    assert hook.engines == ("paddle", "torch-compile") and hook.reason == "only for those engines"
    assert hook.applies_to("paddle") and not hook.applies_to("refimpl")
    assert entries[3].seed == 12345


@pytest.mark.parametrize("text,words", [
    ("LEAF-5\n", "xfail file:1: LEAF-5 has no reason"),
    ("\nleaf-5 lower case\n", "xfail file:2: 'leaf-5' is not a clause ID"),
    ("LEAF-5 @ reason\n", "bad engine list '@'"),
    ("LEAF-5 @paddle\n", "LEAF-5 has no reason"),
    ("seed:x why\n", "'seed:x' is not a clause ID"),
    ("LEAF-5 a\nLEAF-5 b\n", "xfail file:2: LEAF-5 is listed twice (first on line 1)"),
    ("sig:a/b/c three fields\n", "'sig:a/b/c' is not a clause ID"),
    ("sig:a/b/c/d/e five fields\n", "'sig:a/b/c/d/e' is not a clause ID"),
    ("sig: why\n", "'sig:' is not a clause ID"),
    ("graph_freed lower case\n", "'graph_freed' is not a clause ID"),
])
def test_bad_lines(text, words):
    with pytest.raises(XfailError) as info:
        parse(text)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_error_kind_and_signature_entries():
    entries = parse("GRAPH_FREED  @x  kind\nsig:inplace/outcome/LEAF_INPLACE/ok  sig\n"
                    "sig:observe/grad/*  pattern\nINPLACE-1  clause\n")
    assert [(x.kind, x.pattern) for x in entries] == [
        ("error", ""), ("signature", "inplace/outcome/LEAF_INPLACE/ok"),
        ("signature", "observe/grad/*"), ("clause", "")]
    kind, sig, pattern, clause = entries
    assert match(entries, [], 1, "grad/outcome/GRAPH_FREED/HOOK_CHANGED_SIZE") is kind
    assert match(entries, [], 1, "backward/outcome/ok/GRAPH_FREED") is kind   # engine's too
    assert match(entries, [], 1, "observe/grad/None/tensor") is pattern
    assert match(entries, [], 1, "observe/version/number/other-number") is None
    assert match(entries, ["INPLACE-1"], 1, "inplace/outcome/LEAF_INPLACE/ok") is sig
    assert match(entries[3:], ["INPLACE-1"], 1) is clause      # an old call: no signature
    assert match(entries, [], 1, "observe/value/tensor/GRAPH_FREED") is None  # no outcome


def test_an_error_kind_entry_goes_stale_when_its_clauses_pass(tmp_path):
    """VERSION_MISMATCH is VER-7's kind: the sample programs exercise VER-7 without a
    divergence, so the entry now passes; LEAF_INPLACE (INPLACE-1) expects what diverges."""
    text = "VERSION_MISMATCH  fixed since\nLEAF_INPLACE  no leaf check\n"
    report = run_campaign(f"{MOD}:no_leaf_check", "torch", count=6, out_dir=tmp_path,
                          progress=None, source=source, xfails=parse(text), probe=False)
    assert report.divergences == [] and report.expected_failures
    assert {d["xfail"]["id"] for d in report.expected_failures} == {"LEAF_INPLACE"}
    (x,) = report.stale_xfails
    assert x["id"] == "VERSION_MISMATCH" and x["stale"].startswith("now passes: VER-7")


def test_an_unknown_error_kind_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "xfail.txt"
    bad.write_text("# fine\nGRAPH_FREED  known\nGRAPH_FREEDOM  a typo\n")
    assert main(["run", "--engine", "torch", "--count", "1", "--xfail", str(bad),
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and ":3: GRAPH_FREEDOM is not an error or warning kind" in err


def test_a_bad_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "xfail.txt"
    bad.write_text("LEAF-5\n")
    assert main(["run", "--engine", "torch", "--count", "1", "--xfail", str(bad),
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("gradspec: error: ") and ":1: LEAF-5" in err
    assert main(["run", "--count", "1", "--xfail", str(tmp_path / "none.txt")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_expected_failures_do_not_fail_the_run_and_stale_ones_are_reported(tmp_path):
    report = run_campaign(f"{MOD}:no_leaf_check", "torch", count=6, out_dir=tmp_path,
                          progress=None, source=source, xfails=parse(GOOD), probe=False)
    sample = [i for i, s in enumerate(program_seeds(0, 6)) if s % 3 == 0]
    assert report.exit_code == 0 and report.divergences == []
    assert [d["index"] for d in report.expected_failures] == sample
    assert report.expected_failures[0]["xfail"]["id"] == "INPLACE-1"
    assert report.clauses["INPLACE-1"]["status"] == "xfail"
    stale = {x["id"]: x["stale"] for x in report.stale_xfails}
    node = "tests/conformance/test_x.py::test_y[3]"
    assert sorted(stale) == sorted(["GRAPH-2", NOWHERE, "seed:12345", node])
    assert stale["GRAPH-2"].startswith("now passes")
    assert stale[NOWHERE] == "matches nothing: no such clause in the spec"
    assert stale["seed:12345"].startswith("matches nothing")
    assert stale[node].startswith("matches nothing in a campaign: a pytest node ID")
    data = json.loads((tmp_path / "report.json").read_text())
    assert len(data["expected_failures"]) == len(sample) and len(data["stale_xfails"]) == 4


ENGINE_NAMES = f"""\
GRAPH-2  @padle  a typo of paddle: never applies
HOOK-1  @paddle  another engine, a built-in: not this run's, not stale
LEAF-5  @torch,padle  one name of two misspelt
seed:12345  @{MOD}:no_leaf_check  an engine given by import path, this one
seed:54321  @pkg.module:factory  an import path: cannot be checked unimported
tests/conformance/test_x.py::test_y  a pytest node ID: marks tests under pytest only
"""


def test_a_campaign_reports_unknown_engines_and_node_ids_as_stale(tmp_path, capsys):
    """An entry naming an engine gradspec does not know would excuse nothing, ever, and a
    node ID marks pytest tests only: a campaign says both are stale, in file order, whatever
    engine it runs (`gradspec run` and each matrix column)."""
    f = tmp_path / "xfail.txt"
    f.write_text(ENGINE_NAMES)
    code = main(["run", "--engine", "torch", "--source", "tests.conformance.test_executor:"
                 "source", "--count", "2", "--quiet", "--no-probe", "--xfail", str(f),
                 "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0
    told = [ln.strip() for ln in out.splitlines() if "stale expected failure" in ln]
    assert told == [
        "stale expected failure, line 1: GRAPH-2: padle: gradspec knows no engine of that "
        "name (`gradspec engines` lists those it knows)",
        "stale expected failure, line 3: LEAF-5: padle: gradspec knows no engine of that "
        "name (`gradspec engines` lists those it knows)",
        "stale expected failure, line 6: tests/conformance/test_x.py::test_y: matches "
        "nothing in a campaign: a pytest node ID marks tests under pytest's "
        "--gradspec-xfail only"]
    data = json.loads((tmp_path / "o" / "report.json").read_text())
    assert [x["line"] for x in data["stale_xfails"]] == [1, 3, 6]


def test_seed_entries_and_programs_that_now_pass(tmp_path):
    seeds = program_seeds(0, 6)
    sample = next(s for s in seeds if s % 3 == 0)
    clean = next(s for s in seeds if s % 3 == 2)
    text = f"seed:{sample} this program diverges\nseed:{clean} this one is fixed\n"
    report = run_campaign(f"{MOD}:no_leaf_check", "torch", count=6, out_dir=tmp_path,
                          progress=None, source=source, xfails=parse(text), probe=False)
    assert [d["program_seed"] for d in report.expected_failures] == [sample]
    assert sample not in [d["program_seed"] for d in report.divergences]
    assert [x["id"] for x in report.stale_xfails] == [f"seed:{clean}"]
    assert report.stale_xfails[0]["stale"].startswith("now passes")


def test_the_cli_prints_expected_and_stale(tmp_path, capsys):
    f = tmp_path / "xfail.txt"
    f.write_text(GOOD.replace(f"{NOWHERE}    no such clause\n", ""))  # refused: see below
    code = main(["run", "--engine", f"{MOD}:no_leaf_check", "--source",
                 "tests.conformance.test_executor:source", "--count", "3", "--quiet",
                 "--xfail", str(f), "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0
    assert "expected failure #0 (INPLACE-1: leaves may be modified in place" in out
    assert "stale expected failure, line 5: seed:12345: matches nothing" in out


# ---- one matcher: the clauses a divergence is attributed to ---------------------------------
def sliced(seed: int = 0, capabilities=None, size: int = 20) -> Program:
    """A program whose one divergence on never_frees (no GRAPH_FREED at statement 3) is on a
    statement tagged FREE-1, with GRAPH-1 earlier in its backward slice."""
    return Program([
        Stmt("leaf", out="x", params={"values": [1.0], "shape": [], "dtype": "float64",
                                      "requires_grad": True}),
        Stmt("call", out="y", args=["x"], params={"fn": "exp"}, clauses=["GRAPH-1"]),
        Stmt("backward", target="y"),
        Stmt("backward", target="y", clauses=["FREE-1"]),
    ], seed=seed)


def test_a_divergence_is_attributed_to_its_statements_own_clauses():
    from conformance.compare import compare
    from conformance.engines import load_engine
    from conformance.executor import execute
    p = sliced()
    oracle, engine = load_engine("torch"), load_engine(NEVER_FREES)
    divs = compare(p, execute(p, oracle), execute(p, engine))
    assert [d.path for d in divs] == ["3"] and set(divs[0].clauses) == {"GRAPH-1", "FREE-1"}
    assert attributed(p, divs) == ["FREE-1"]
    assert match(parse("GRAPH-1  in the slice only\n"), attributed(p, divs), p.seed) is None
    assert match(parse("FREE-1  never frees\n"), attributed(p, divs), p.seed).id == "FREE-1"
    assert match(parse("seed:7  this program\n"), ["LEAF-1"], 7).id == "seed:7"
    bare = Program([Stmt.from_json(s.to_json() | {"clauses": []}) for s in p.statements])
    bare_divs = compare(bare, execute(bare, oracle), execute(bare, engine))
    assert attributed(bare, bare_divs) == ["FREE-1"]     # by its error kind, not by tags


@pytest.mark.parametrize("entry,expected,stale", [
    ("GRAPH-1", False, ["GRAPH-1"]),        # counted against FREE-1, not GRAPH-1
    ("FREE-1", True, []),
    ("GRAPH_FREED", True, []),              # the error kind the oracle raised
    ("VERSION_MISMATCH", False, []),        # VER-7 not exercised: neither stale nor confirmed
    ("sig:backward/outcome/GRAPH_FREED/ok", True, []),
    ("sig:*/outcome/GRAPH_FREED/*", True, []),
    ("sig:grad/*", False, []),
])
def test_gradspec_run_and_pytest_expect_the_same_divergences(tmp_path, entry, expected, stale):
    from conformance.engines import load_engine
    from conformance.pytest_plugin import check_program
    entries = parse(f"{entry}  never frees saved values\n")
    report = run_campaign(NEVER_FREES, "torch", count=1, out_dir=tmp_path, progress=None,
                          source=sliced, xfails=entries, probe=False, shrink=False)
    assert len(report.expected_failures) == int(expected)
    assert len(report.divergences) == int(not expected)
    assert [x["id"] for x in report.stale_xfails] == stale
    oracle, engine = load_engine("torch"), load_engine(NEVER_FREES)
    outcome = pytest.xfail.Exception if expected else pytest.fail.Exception
    with pytest.raises(outcome):
        check_program(sliced(), oracle, engine, entries)


# ---- pytest node-ID entries: marking and staleness ------------------------------------------
def test_node_id_entries_mark_tests_and_go_stale():
    entries = parse("a.py::t  fails\na.py::u  fixed\na.py::gone  renamed\nb.py::t  no file\n"
                    "c.py::t  not collected\na.py::p  one case fails\n")
    collected = ["a.py::t", "a.py::u", "a.py::p[1]", "a.py::p[2]", "a.py::pq"]
    marked = marked_tests(entries, collected)
    assert {k: v.id for k, v in marked.items()} == {
        "a.py::t": "a.py::t", "a.py::u": "a.py::u", "a.py::p[1]": "a.py::p",
        "a.py::p[2]": "a.py::p"}
    outcomes = {"a.py::t": "failed", "a.py::u": "passed", "a.py::p[1]": "passed",
                "a.py::p[2]": "failed", "a.py::pq": "passed"}
    stale = {x["id"]: x["stale"] for x in stale_tests(entries, collected, outcomes,
                                                       lambda f: f in ("a.py", "c.py"))}
    assert stale == {"a.py::u": "now passes: 1 test(s) it names passed",
                     "a.py::gone": "matches nothing: no collected test has that node ID",
                     "b.py::t": "matches nothing: there is no test file b.py"}


SAMPLE = """\
import pytest


def test_passes():
    pass


def test_fails():
    assert False


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n == 1
"""

ENTRIES = """\
test_sample.py::test_fails  fails on purpose
test_sample.py::test_passes  was fixed since
test_sample.py::test_param  one case fails
test_sample.py::test_gone  renamed long ago
test_missing.py::test_x  its file is gone
test_other.py::test_y  a file this run does not collect
test_sample.py::test_passes  @paddle  another engine's entry
"""


@pytest.mark.parametrize("mode", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_pytest_reports_stale_node_id_entries(tmp_path, mode):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "test_other.py").write_text("def test_y():\n    pass\n")
    (tmp_path / "xfail.txt").write_text(ENTRIES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADSPEC_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "conformance.pytest_plugin", *mode, "test_sample.py",
                        "--engine", "torch", "--gradspec-xfail", "xfail.txt"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 passed" not in r.stdout and "2 xfailed" in r.stdout and "2 xpassed" in r.stdout
    section = r.stdout.split("gradspec: stale expected failures", 1)[1]
    stale = [ln for ln in section.splitlines() if ln.startswith("stale expected failure")]
    assert stale == [
        "stale expected failure, line 2: test_sample.py::test_passes: now passes: 1 test(s) "
        "it names passed",
        "stale expected failure, line 4: test_sample.py::test_gone: matches nothing: no "
        "collected test has that node ID",
        "stale expected failure, line 5: test_missing.py::test_x: matches nothing: there is "
        "no test file test_missing.py",
    ]


UNKNOWN_ENGINES = f"""\
GRAPH-2  @padle  a typo of paddle: never applies
LEAF-5  @torch,padle  one name of two misspelt
HOOK-1  @paddle  another engine, a built-in: not this session's, not stale
seed:12345  @never_frees  the adapter's own name for the engine under test
seed:54321  @pkg.module:factory  an import path: cannot be checked unimported
test_sample.py::test_gone  @{NEVER_FREES},padle  stale twice over: told once
"""


@pytest.mark.parametrize("mode", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_pytest_reports_unknown_engines_as_gradspec_run_does(tmp_path, mode):
    """An entry whose @ENGINE names an engine gradspec does not know is stale under pytest as
    under `gradspec run` (the same line), whatever engine the session tests; the engine under
    test is known by the name its adapter gives itself too, though no test of the session
    loaded it (the controller of pytest-xdist never does)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "xfail.txt").write_text(UNKNOWN_ENGINES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADSPEC_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "conformance.pytest_plugin", *mode, "test_sample.py",
                        "--gradspec-engine", NEVER_FREES, "--gradspec-xfail", "xfail.txt"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]     # test_fails fails
    section = r.stdout.split("gradspec: stale expected failures", 1)[1]
    stale = [ln for ln in section.splitlines() if ln.startswith("stale expected failure")]
    unknown = ("padle: gradspec knows no engine of that name (`gradspec engines` lists those "
               "it knows)")
    assert stale == [f"stale expected failure, line 1: GRAPH-2: {unknown}",
                     f"stale expected failure, line 2: LEAF-5: {unknown}",
                     f"stale expected failure, line 6: test_sample.py::test_gone: {unknown}"]


def test_a_file_naming_a_clause_the_spec_lacks_is_refused(tmp_path):
    f = tmp_path / "xfail.txt"
    f.write_text(f"INPLACE-1  fine\n{NOWHERE}  a typo\n")
    with pytest.raises(XfailError, match=rf"xfail.txt:2: {NOWHERE} is not a clause of spec "):
        load(f)
    code = main(["run", "--count", "1", "--quiet", "--xfail", str(f), "--out",
                 str(tmp_path / "out")])
    assert code == 2


def test_clause_items_tell_which_clause_entries_are_stale():
    from conformance.judge.xfail import stale_items
    entries = parse("VER-7  fixed\nLEAF-5  still fails\nINFER-1  not run\n"
                    "FREE-1  xfailed a test of its own\nGRAPH_FREED  its clauses passed\n"
                    "seed:5  a test's own program\nsig:*/outcome/*  never judged by items\n")
    clauses = load_errors()["GRAPH_FREED"].clauses
    outcomes = {"VER-7": "passed", "LEAF-5": "failed", **dict.fromkeys(clauses, "passed")}
    used = {x.line for x in entries if x.id == "FREE-1"}
    found = {x["id"]: x["stale"] for x in stale_items(entries, outcomes, used)}
    # FREE-1's item passed, but the entry made a test xfail: used, not stale; an error kind's
    # entry may have matched programs of other clauses' items, a seed one a test's program
    assert found == {"VER-7": "now passes: its clause item passed"}


def test_tabs_separate_an_entrys_fields_as_spaces_do():
    (x,) = parse("LEAF-5\t@paddle,torch\tno leaf check yet\n")
    assert (x.id, x.engines, x.reason) == ("LEAF-5", ("paddle", "torch"), "no leaf check yet")
