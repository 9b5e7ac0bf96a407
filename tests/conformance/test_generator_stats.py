"""What the default generator's programs look like, measured on the programs themselves
(tests/generator_stats.py): backward passes that join several leaves, the pytest profile's
programs as long as `gradspec run`'s, and every clause in enough programs.

The figures are of the two deterministic program sets: `gradspec run`'s default campaign
(seed 0, 300 programs) and the derandomized pytest profile's 300 examples."""
from __future__ import annotations

import functools

import pytest

from conformance.generate import NOT_GENERATED
from conformance.spec.reader import load_spec
from tests.generator_stats import Stats, ci_profile_programs, measure, run_profile_programs

COUNT, SIZE = 300, 20
# The floor every clause a program can exercise meets in the default campaign. The target is 20
# programs of 300 in both sets; the default campaign's rarest clauses are at 11 to 19 and the
# pytest profile's, whose first examples Hypothesis keeps simple, lower (the figures are in
# benchmarks/README.md, "Generator statistics").
RUN_FLOOR = 10


@functools.cache
def run_stats() -> Stats:
    return measure(run_profile_programs(COUNT, SIZE))


@functools.cache
def ci_stats() -> Stats:
    return measure(ci_profile_programs(COUNT, SIZE))


@pytest.mark.parametrize("stats", [run_stats, ci_stats], ids=["run", "ci"])
def test_backward_passes_join_several_leaves(stats):
    s = stats()
    assert sum(s.reached.values()) >= COUNT       # at least one backward-like statement each
    assert s.share_reaching(2) >= 0.30, s.to_json()["leaves_reached"]
    assert s.share_reaching(3) >= 0.10, s.to_json()["leaves_reached"]


def test_the_pytest_profile_draws_programs_as_long_as_gradspec_run():
    run, ci = run_stats().to_json(), ci_stats().to_json()
    for key in ("statements_per_program", "backward_like_per_program"):
        assert abs(ci[key] - run[key]) <= 0.25 * run[key], (key, run[key], ci[key])


def test_every_clause_a_program_can_exercise_is_in_enough_programs_of_the_default_run():
    counts = run_stats().clause_programs
    spec = load_spec()
    expected = [c for c in spec.clauses if not c.startswith("UNSPEC-") and c not in NOT_GENERATED]
    low = {c: counts.get(c, 0) for c in expected if counts.get(c, 0) < RUN_FLOOR}
    assert not low, f"clauses in fewer than {RUN_FLOOR} of {COUNT} programs: {low}"


@pytest.mark.parametrize("stats", [run_stats, ci_stats], ids=["run", "ci"])
@pytest.mark.parametrize("kind,clause", [
    ("VERSION_MISMATCH", "VER-7"), ("VERSION_MISMATCH", "VER-14"),
    ("VERSION_MISMATCH", "VER-15"), ("GRAPH_FREED", "FREE-1"), ("GRAPH_FREED", "FREE-4"),
    ("GRAPH_FREED", "FREE-5")])
def test_the_errors_of_saved_values_are_raised_in_one_program_in_a_hundred(stats, kind,
                                                                          clause):
    """Counted where torch raised the kind, at a statement exercising the clause: the
    generator keeps backward passes its model predicts to raise."""
    assert stats().raised[(kind, clause)] >= COUNT // 100, stats().raised


def test_leaves_reached_are_counted_from_the_graph():
    """The measure itself: a + b reaches two leaves, a * a one, a bare leaf itself."""
    import torch

    from tests.generator_stats import leaves_reached
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(2, requires_grad=True)
    assert leaves_reached([a + b]) == 2
    assert leaves_reached([a * a]) == 1
    assert leaves_reached([a]) == 1
    assert leaves_reached([a.detach()]) == 0
    assert leaves_reached([(a * 2).sum(), b.sum()]) == 2
