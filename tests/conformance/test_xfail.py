"""Expected-failure files: the format, bad lines (one
line, exit 2), expected failures that do not fail the run, and stale entries."""
from __future__ import annotations

import json

import pytest

from conformance.cli import main
from conformance.runner import program_seeds, run_campaign
from conformance.xfail import XfailError, parse
from tests.conformance.test_executor import MOD, source

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
])
def test_bad_lines(text, words):
    with pytest.raises(XfailError) as info:
        parse(text)
    assert words in str(info.value) and "\n" not in str(info.value)


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
    assert sorted(stale) == sorted(["GRAPH-2", NOWHERE, "seed:12345"])
    assert stale["GRAPH-2"].startswith("now passes")
    assert stale[NOWHERE] == "matches nothing: no such clause in the spec"
    assert stale["seed:12345"].startswith("matches nothing")
    data = json.loads((tmp_path / "report.json").read_text())
    assert len(data["expected_failures"]) == len(sample) and len(data["stale_xfails"]) == 3


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
    f.write_text(GOOD)
    code = main(["run", "--engine", f"{MOD}:no_leaf_check", "--source",
                 "tests.conformance.test_executor:source", "--count", "3", "--quiet",
                 "--xfail", str(f), "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0
    assert "expected failure #0 (INPLACE-1: leaves may be modified in place" in out
    assert f"stale expected failure, line 5: {NOWHERE}: matches nothing" in out
