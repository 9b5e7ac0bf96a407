"""The conformance suite under pytest: generated programs on the engine under test and on the
oracle (--gradspec-engine, --gradspec-oracle; conformance/pytest_plugin.py) must agree, the
capabilities the engine declares must work, and torch must agree with itself. The profile
(--gradspec-profile / GRADSPEC_PROFILE) sets how many programs.

The clause items and the capability probes are the shipped suite's
(conformance/suite/test_clauses.py), imported here so that this repository's run has them
too; the Hypothesis search below (shrinking, and the search tests/conformance/
test_broken_engines_caught.py drives) and torch against itself are this repository's own.

The engine's programs run in a worker process (the conformance_isolated fixture), so that an
engine that crashes or hangs fails its test with the program and the session goes on.
torch against itself is a check of gradspec's harness, not of an engine: it runs in process."""
from __future__ import annotations

import pytest
from hypothesis import Phase, given

from conformance.engines import load_engine
from conformance.generate import programs
from conformance.judge.verdict import claimed, judged
from conformance.suite.checks import (
    EngineFault,
    describe,
    expected_reason,
    hypothesis_settings,
    run_both,
    run_isolated,
    split_expected,
)
from conformance.suite.test_clauses import (  # noqa: F401 - collected here as well
    test_clause,
    test_declared_capability,
)


class Divergent(AssertionError):
    """A program on which engine and oracle disagree: the report, and the divergences."""

    def __init__(self, report: str, divergences: list = ()):
        super().__init__(report)
        self.divergences = list(divergences)


def search(engine, oracle, profile, xfails=(), isolated=None, classes=None,
           **overrides) -> list:
    """Draw programs under the profile; raise Divergent (Hypothesis shrinks it first) with a
    report and a repro for the first program on which engine and oracle disagree beyond the
    expected failures `xfails`, counting only divergences of the conformance `classes` (None:
    all). Returns the expected divergences met, with their entries.

    With `isolated` (the conformance_isolated worker) the programs run there; a program the
    engine crashes or hangs on ends the search at once, unshrunk (shrinking through hangs
    would take a timeout per step), by raising its EngineFault after Hypothesis returns."""
    caps = frozenset(engine.capabilities) & frozenset(oracle.capabilities)
    expected: list = []
    diverged: list = []
    faults: list[EngineFault] = []

    @hypothesis_settings(profile, **overrides)
    @given(programs(caps, profile.size))
    def check(program):
        if faults:
            return
        try:
            o, e, divs = run_both(program, oracle, engine) if isolated is None else \
                run_isolated(program, isolated, engine)
        except EngineFault as fault:
            if not diverged:     # while shrinking a divergence: not the divergence, go on
                faults.append(fault)
            return
        if not any(claimed(d, classes) for d in divs):
            return
        divs = judged(divs, classes)
        unexpected, met = split_expected(divs, list(xfails), program.seed, program)
        if unexpected:
            diverged.append(program)
            raise Divergent(describe(program, divs, engine, (o, e)), divs)
        expected.extend(met)
    check()
    if faults:
        raise faults[0]
    return expected


def test_torch_agrees_with_itself(gradspec_profile):
    search(load_engine("torch"), load_engine("torch"), gradspec_profile)


def test_engine_conforms_to_oracle(conformance_engine, conformance_oracle, gradspec_profile,
                                   gradspec_xfail, gradspec_classes, conformance_isolated,
                                   pytestconfig):
    if conformance_engine.name == "torch" and conformance_oracle.name == "torch":
        pytest.skip("torch against torch is test_torch_agrees_with_itself")
    unshrunk = {"phases": [Phase.explicit, Phase.reuse, Phase.generate]} \
        if pytestconfig.getoption("--search-unshrunk", False) else {}
    try:
        expected = search(conformance_engine, conformance_oracle, gradspec_profile,
                          gradspec_xfail, conformance_isolated, gradspec_classes, **unshrunk)
    except EngineFault as fault:
        pytest.fail(str(fault), pytrace=False)
    if expected:    # only divergences the expected-failure file names: reported, not failed
        pytest.xfail(expected_reason(expected))
