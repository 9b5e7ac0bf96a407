"""`gradspec run --maxfail N` / `-x` (conformance/campaign/failfast.py): the run stops at the
shortest prefix of its programs, in seed order, holding N programs that fail it as the report
judges them; the same report serially and in parallel; never exit 0."""
from __future__ import annotations

import pytest

from conformance.campaign.entries import column, fails_run, judge
from conformance.campaign.failfast import Enough, StopAfter
from conformance.cli import main
from conformance.judge.compare import Divergence
from conformance.judge.xfail import parse
from conformance.lang.program import Program
from conformance.runner import program_seeds, run_campaign
from tests.conformance.test_executor import MOD, source

COUNT = 12
# the sample programs (seed % 3 == 0) write a leaf in place: no_leaf_check diverges on them
SAMPLE = [i for i, s in enumerate(program_seeds(0, COUNT)) if s % 3 == 0]
STRIP = ("folder", "program", "divergence", "traces", "repro_torch", "repro_engine")


def campaign(tmp_path, engine=f"{MOD}:no_leaf_check", **kw):
    kw.setdefault("count", COUNT)
    return run_campaign(engine, "torch", out_dir=tmp_path, progress=None, source=source,
                        probe=False, timeout=5.0, **kw)


def test_the_run_stops_at_the_nth_failing_program_in_seed_order(tmp_path):
    assert len(SAMPLE) >= 3, SAMPLE
    report = campaign(tmp_path, maxfail=2)
    assert report.stopped and report.maxfail == 2 and report.exit_code == 1
    assert [d["index"] for d in report.divergences] == SAMPLE[:2]
    assert report.programs == SAMPLE[1] + 1      # nothing after the second failing program
    assert sum(r["programs"] for r in report.clauses.values()) > 0


def test_jobs_do_not_change_where_the_run_stops(tmp_path):
    one = campaign(tmp_path / "one", maxfail=2, jobs=1)
    two = campaign(tmp_path / "two", maxfail=2, jobs=2)
    assert (one.programs, one.stopped) == (two.programs, two.stopped)
    assert one.clauses == two.clauses
    assert [{k: v for k, v in d.items() if k not in STRIP} for d in one.divergences] == \
        [{k: v for k, v in d.items() if k not in STRIP} for d in two.divergences]


def test_a_limit_the_run_never_reaches_changes_nothing(tmp_path):
    full = campaign(tmp_path / "full")
    capped = campaign(tmp_path / "capped", maxfail=len(SAMPLE) + 1)
    assert not capped.stopped and capped.programs == full.programs == COUNT
    assert [d["index"] for d in capped.divergences] == [d["index"] for d in full.divergences]
    assert capped.exit_code == full.exit_code == 1


def test_expected_failures_do_not_count(tmp_path):
    """pytest's --maxfail counts failures, not xfails: an entry that expects every divergence
    leaves the run to the end, and it passes."""
    report = campaign(tmp_path, maxfail=1, xfails=parse("INPLACE-1  no leaf check\n"))
    assert not report.stopped and report.programs == COUNT
    assert report.divergences == [] and len(report.expected_failures) == len(SAMPLE)
    assert report.exit_code == 0


def test_a_crash_counts_and_the_run_does_not_exit_0(tmp_path):
    report = campaign(tmp_path, f"{MOD}:crashing", maxfail=1, count=6)
    crashed = [i for i, s in enumerate(program_seeds(0, 6)) if s % 3 != 2]
    assert report.stopped and [d["index"] for d in report.crashes] == crashed[:1]
    assert report.programs == crashed[0] + 1 and report.exit_code != 0


def test_the_prefix_waits_for_earlier_programs():
    """Results arrive in completion order: a failing program counts only once every program
    before it has finished, so a fast failure after a slow pass does not cut the slow one."""
    stop = StopAfter(1, lambda seed, r: r["fails"])
    results = [None, None, None]
    check = stop.watch([10, 11, 12], results)
    results[1] = {"fails": True}
    check()                                     # program 0 still running: no stop
    results[0] = {"fails": False}
    with pytest.raises(Enough) as reached:
        check()
    assert reached.value.index == 1 and stop.stopped and stop.failing == 1
    results[2] = {"fails": True}
    StopAfter.truncate(results, reached.value)
    assert results[2] is None


def test_the_count_goes_on_across_parts():
    """The top-up's programs (campaign/coverage.py) count on from the campaign's own."""
    stop = StopAfter(2, lambda seed, r: r["fails"])
    first = [{"fails": True}, {"fails": False}]
    stop.watch([1, 2], first)()
    assert stop.failing == 1 and not stop.stopped
    second = [{"fails": False}, {"fails": True}]
    with pytest.raises(Enough) as reached:
        stop.watch([3, 4], second)()
    assert reached.value.index == 1 and stop.failing == 2


@pytest.mark.parametrize("argv, message", [
    (["--maxfail", "0"], "--maxfail: 0 is out of range"),
    (["--maxfail", "two"], "--maxfail: 'two' is not a whole number"),
    (["-x", "--scheduler", "tcp://127.0.0.1:1"], "--maxfail/--exitfirst and --scheduler"),
])
def test_a_bad_limit_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    assert main(["run", "--count", "1", "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err


def test_exitfirst_is_maxfail_1(tmp_path, capsys):
    code = main(["run", "--engine", "tests.broken_engines.never_frees:factory", "--count", "40",
                 "--quiet", "--no-shrink", "--no-probe", "-x", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 1 and "(stopped at 1 failing program(s), --maxfail" in out
    assert "1 divergent programs, 1 distinct problem(s)" in out


@pytest.mark.parametrize("entry", ["seed:123  known", "sig:*  every problem",
                                   "sig:program/internal/*  gradspec's own"])
def test_an_internal_error_of_gradspec_is_never_excused(entry):
    """The stop counts gradspec's own errors as failing, so no expected-failure entry may move
    one out of the failing divergences either: a run stopped at one never exits 0."""
    classes, xf = ("core", "torch-observable", "diagnostics"), parse(entry + "\n")
    div = Divergence("", "program", "internal", "completed", "ValueError: boom")
    judged = {"program_seed": 123, **judge(Program([], seed=123), [div], None, None, classes)}
    assert column(judged, set(), xf) == ("divergences", None)
    assert fails_run(classes, set(), xf)(123, {"internal": "Traceback\nValueError: boom"})
