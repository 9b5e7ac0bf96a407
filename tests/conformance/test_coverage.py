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
    default_per_clause,
    stream_top_up,
    top_up,
)
from conformance.campaign.runner import default_source, program_seeds
from conformance.generate import ALL_CAPABILITIES
from conformance.runner import run_campaign

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
    assert t.to_json() == {"per_clause": 2, "added": 3, "scanned": 3, "short": {"D": 0}}


def test_no_minimum_adds_nothing_and_reads_nothing():
    t = stream_top_up([1, 2, 3], Counter(), default_source, frozenset(ALL_CAPABILITIES), 20, 0)
    assert t.seeds == [] and t.scanned == 0 and t.short == {}


def test_the_default_applies_from_the_default_budget():
    assert DEFAULT_COUNT == 300 and PER_CLAUSE == 20
    assert default_per_clause(300) == default_per_clause(20000) == 20
    assert default_per_clause(299) == default_per_clause(20) == 0


def test_the_programs_added_continue_the_stream_a_larger_count_draws():
    """A top-up's programs are those of `--count` larger: the same seeds, the same order."""
    caps = frozenset(ALL_CAPABILITIES)
    seeds = program_seeds(3, 40 + SCAN)
    counts = Counter(c for s in seeds[:40] for c in default_source(s, caps, 12).clauses())
    first = stream_top_up(seeds[40:], Counter(counts), default_source, caps, 12, 2)
    again = stream_top_up(seeds[40:], Counter(counts), default_source, caps, 12, 2)
    assert first.seeds == again.seeds and first.short == again.short
    assert first.seeds and set(first.seeds) <= set(seeds[40:])
    assert first.seeds == sorted(first.seeds, key=seeds.index)


def test_a_campaign_with_a_minimum_reports_what_it_added(tmp_path, capsys):
    from conformance.reports.report import print_summary
    report = run_campaign("torch", "torch", count=30, size=10, seed=5, out_dir=tmp_path,
                          progress=None, probe=False, per_clause=1)
    data = json.loads((tmp_path / "report.json").read_text())
    added = data["coverage"]["added"]
    assert data["coverage"]["per_clause"] == 1 and added > 0
    assert report.programs == 30 + added and data["count"] == 30
    exercised = {c for c, row in data["clauses"].items() if row["programs"]}
    assert set(data["coverage"]["short"]).isdisjoint(exercised)
    print_summary(report, tmp_path)
    out = capsys.readouterr().out
    assert f"per-clause minimum 1: 30 programs + {added} more of the stream" in out
    plain = run_campaign("torch", "torch", count=30, size=10, seed=5, out_dir=tmp_path / "p",
                         progress=None, probe=False)
    assert plain.programs == 30 and plain.coverage == {}
