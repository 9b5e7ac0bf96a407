"""The conformance suite under pytest: generated programs on the engine under test and on the
oracle (--engine, --oracle; conformance/pytest_plugin.py) must agree, and torch must agree
with itself. The profile (--gradspec-profile / GRADSPEC_PROFILE) sets how many programs."""
from __future__ import annotations

import pytest
from hypothesis import given

from conformance.engines import load_engine
from conformance.generate import programs
from conformance.pytest_plugin import describe, hypothesis_settings, run_both


class Divergent(AssertionError):
    pass


def search(engine, oracle, profile, **overrides) -> None:
    """Draw programs under the profile; raise Divergent (Hypothesis shrinks it first) with a
    report and a repro for the first program on which engine and oracle disagree."""
    caps = frozenset(engine.capabilities) & frozenset(oracle.capabilities)

    @hypothesis_settings(profile, **overrides)
    @given(programs(caps, profile.size))
    def check(program):
        o, e, divs = run_both(program, oracle, engine)
        if divs:
            raise Divergent(describe(program, divs, engine, (o, e)))
    check()


def test_torch_agrees_with_itself(gradspec_profile):
    search(load_engine("torch"), load_engine("torch"), gradspec_profile)


def test_engine_conforms_to_oracle(conformance_engine, conformance_oracle, gradspec_profile):
    if conformance_engine.name == "torch" and conformance_oracle.name == "torch":
        pytest.skip("torch against torch is test_torch_agrees_with_itself")
    search(conformance_engine, conformance_oracle, gradspec_profile)
