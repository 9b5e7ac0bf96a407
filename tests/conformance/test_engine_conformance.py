"""The conformance suite under pytest: generated programs on the engine under test and on the
oracle (--engine, --oracle; conformance/pytest_plugin.py) must agree, the capabilities the
engine declares must work, and torch must agree with itself. The profile
(--gradspec-profile / GRADSPEC_PROFILE) sets how many programs.

The engine's programs run in a worker process (the conformance_isolated fixture), so that an
engine that crashes or hangs fails its test with the program and the session goes on.
torch against itself is a check of gradspec's harness, not of an engine: it runs in process."""
from __future__ import annotations

import pytest
from hypothesis import given

from conformance.engines import CAPABILITIES, load_engine
from conformance.generate import programs
from conformance.judge.probes import PROBES, probe_program
from conformance.pytest_plugin import (
    EngineFault,
    check_isolated,
    describe,
    expected_reason,
    hypothesis_settings,
    run_both,
    run_isolated,
    split_expected,
)


class Divergent(AssertionError):
    """A program on which engine and oracle disagree: the report, and the divergences."""

    def __init__(self, report: str, divergences: list = ()):
        super().__init__(report)
        self.divergences = list(divergences)


def search(engine, oracle, profile, xfails=(), isolated=None, **overrides) -> list:
    """Draw programs under the profile; raise Divergent (Hypothesis shrinks it first) with a
    report and a repro for the first program on which engine and oracle disagree beyond the
    expected failures `xfails`. Returns the expected divergences met, with their entries.

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
                                   gradspec_xfail, conformance_isolated):
    if conformance_engine.name == "torch" and conformance_oracle.name == "torch":
        pytest.skip("torch against torch is test_torch_agrees_with_itself")
    try:
        expected = search(conformance_engine, conformance_oracle, gradspec_profile,
                          gradspec_xfail, conformance_isolated)
    except EngineFault as fault:
        pytest.fail(str(fault), pytrace=False)
    if expected:    # only divergences the expected-failure file names: reported, not failed
        pytest.xfail(expected_reason(expected))


@pytest.mark.parametrize("capability", [c for c in CAPABILITIES if c in PROBES])
def test_declared_capability_works(capability, conformance_engine, conformance_oracle,
                                   gradspec_xfail, conformance_isolated):
    """A capability the engine declares runs its probe program (conformance/judge/probes.py)
    as the oracle does; one it declares absent is probed by `gradspec run`."""
    if capability not in conformance_engine.capabilities:
        pytest.skip(f"{conformance_engine.name} declares {capability} absent")
    if capability not in conformance_oracle.capabilities:
        pytest.skip(f"the oracle {conformance_oracle.name} lacks {capability}")
    check_isolated(probe_program(capability), conformance_isolated, conformance_engine,
                   gradspec_xfail)
