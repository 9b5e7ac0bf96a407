"""The per-clause minimum (conformance/campaign/coverage.py): after a campaign's own programs,
the further programs of its stream that exercise a clause still under the minimum are run,
in stream order, deterministically, and what stays short is reported."""
from __future__ import annotations

import json
from collections import Counter

from conformance.campaign.coverage import (
    DEFAULT_COUNT,
    PER_CLAUSE,
    SCAN,
    campaign_top_up,
    default_per_clause,
    eligible,
    stream_top_up,
    top_up,
)
from conformance.campaign.runner import default_source, program_seeds
from conformance.generate import ALL_CAPABILITIES
from conformance.runner import run_campaign
from conformance.suite.clauses import Stream

TAGS = {1: ["A"], 2: ["B"], 3: ["A", "B"], 4: ["C"], 5: ["B"], 6: ["A"]}


def test_a_candidate_is_kept_only_for_a_clause_still_under_the_minimum():
    counts = Counter({"A": 1, "B": 2})
    t = top_up(counts, [1, 2, 3, 4, 5, 6], TAGS.__getitem__, ["A", "B"], 2, 100)
    # 1 brings A to 2; 2 and 3 add nothing wanted (B is at 2, A now too); the rest never read
    assert t.seeds == [1] and t.scanned == 1 and t.short == {}
    assert counts == Counter({"A": 2, "B": 2})


def test_clauses_still_short_after_the_scan_are_reported_with_their_counts():
    t = top_up(Counter(), [1, 2, 3, 4], TAGS.__getitem__, ["A", "B", "D"], 2, 3)
    assert t.seeds == [1, 2, 3] and t.scanned == 3
    assert t.short == {"D": 0}
    assert t.to_json() == {"per_clause": 2, "added": 3, "scanned": 3, "short": {"D": 0},
                           "seeds": [1, 2, 3]}


def test_no_minimum_adds_nothing_and_reads_nothing():
    t = stream_top_up([1, 2, 3], Counter(), default_source, frozenset(ALL_CAPABILITIES), 20, 0)
    assert t.seeds == [] and t.scanned == 0 and t.short == {}


def test_the_default_applies_from_the_default_budget():
    assert DEFAULT_COUNT == 300 and PER_CLAUSE == 20
    assert default_per_clause(300) == default_per_clause(20000) == 20
    assert default_per_clause(299) == default_per_clause(20) == 0
    assert default_per_clause(300, own_source=True) == 0      # gradspec run --source


CAPS = frozenset(ALL_CAPABILITIES)


def _first(seed: int, count: int, size: int):
    seeds = program_seeds(seed, count + SCAN)
    results = [{"clauses": default_source(s, CAPS, size).clauses(), "divergences": []}
               for s in seeds[:count]]
    return seeds[:count], results, seeds[count:]


def _running(log: list):
    def run(seeds, what):
        log.append((list(seeds), what))
        return [{"clauses": [], "divergences": []} for _ in seeds], True
    return run


def test_a_campaign_adds_the_programs_the_clause_items_add():
    """gradspec run (campaign_top_up) and the pytest profile's clause items (Stream) add the
    same seeds, in order, after the same first programs."""
    seeds, results, further = _first(3, 40, 12)
    log: list = []
    all_seeds, all_results, complete, cov = campaign_top_up(
        _running(log), seeds, results, further, default_source, CAPS, 12, 2, 0.01)
    stream = Stream(3, CAPS, 12, 40, 2)
    assert complete and cov["seeds"] and all_seeds == stream.seeds
    assert log == [(cov["seeds"], "to 2 programs a clause")]
    assert len(all_results) == len(all_seeds) and cov["added"] == len(cov["seeds"])


def test_what_happened_to_a_program_does_not_change_what_is_added():
    """A crash or a hang leaves no clauses in its result: the program is drawn again, so the
    same seeds are added as when it ran."""
    seeds, results, further = _first(3, 40, 12)
    _, _, _, ran = campaign_top_up(_running([]), seeds, results, further, default_source,
                                   CAPS, 12, 2, 0.5)
    crashed = [dict(r) for r in results]
    crashed[0] = {"failure": {"what": "crash"}}
    crashed[5] = {"clauses": [], "internal": "Traceback ..."}
    _, _, _, after = campaign_top_up(_running([]), seeds, crashed, further, default_source,
                                     CAPS, 12, 2, 0.5)
    assert ran["seeds"] == after["seeds"]


def test_nothing_is_added_to_programs_that_cannot_be_judged():
    seeds, results, further = _first(3, 10, 12)
    log: list = []
    hung = [{"failure": {"what": "timeout"}}] * 2 + results[2:]
    out_seeds, out_results, complete, cov = campaign_top_up(
        _running(log), seeds, hung, further, default_source, CAPS, 12, 2, 0.1)
    assert out_seeds == seeds and complete and log == [] and cov["added"] == 0
    assert cov["skipped"] == "the programs run so far cannot be judged"
    oracle = [{"oracle_failure": "the oracle crashed"}] + results[1:]
    assert campaign_top_up(_running(log), seeds, oracle, further, default_source, CAPS, 12, 2,
                           0.5)[3]["skipped"] and log == []


def test_ctrl_c_while_reading_the_stream_adds_nothing_and_leaves_the_run_incomplete():
    seeds, results, further = _first(3, 10, 12)

    def source(s, caps, size):
        raise KeyboardInterrupt
    out = campaign_top_up(_running([]), seeds, [None] * 10, further, source, CAPS, 12, 2, 0.5)
    assert out[0] == seeds and out[2] is False and out[3] == {}


def test_a_source_that_fails_on_a_seed_adds_nothing_for_it():
    t = stream_top_up([1, 2, 3], Counter(), lambda s, c, n: 1 / 0, CAPS, 12, 1)
    assert t.seeds == [] and t.scanned == 3 and t.short


def test_a_campaign_with_a_minimum_reports_what_it_added(tmp_path, capsys):
    from conformance.reports.summary import print_summary
    report = run_campaign("torch", "torch", count=30, size=10, seed=5, out_dir=tmp_path,
                          progress=None, probe=False, per_clause=1)
    data = json.loads((tmp_path / "report.json").read_text())
    cov = data["coverage"]
    added = cov["added"]
    assert cov["per_clause"] == 1 and added > 0 and len(cov["seeds"]) == added
    assert report.programs == 30 + added and data["count"] == 30
    assert cov["seeds"] == Stream(5, frozenset(data["capabilities"]), 10, 30, 1).seeds[30:]
    # short is counted from the clause table after the run
    assert cov["short"] == {c: row["programs"] for c, row in data["clauses"].items()
                            if c in eligible(frozenset(data["capabilities"]))
                            and row["programs"] < 1}
    print_summary(report, tmp_path)
    out = capsys.readouterr().out
    assert f"per-clause minimum 1: 30 programs + {added} more of the stream" in out
    plain = run_campaign("torch", "torch", count=30, size=10, seed=5, out_dir=tmp_path / "p",
                         progress=None, probe=False)
    assert plain.programs == 30 and plain.coverage == {}
