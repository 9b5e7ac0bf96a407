"""The conformance suite, one item per spec clause and one per probed capability:

    python -m pytest --pyargs conformance.suite --gradspec-engine pkg.mod:factory -n auto

`test_clause[VER-7]` runs the generated programs that exercise VER-7 on the engine and on the
oracle, in a worker process, and fails with the divergence, its primary clause and a repro
(conformance/suite/clauses.py says which programs and which item a failure belongs to).
`test_declared_capability[hooks]` runs the probe program of a capability the engine declares
(conformance/judge/probes.py). Options: conformance/pytest_plugin.py (`pytest --help`,
"gradspec").
"""
from __future__ import annotations

import pytest

from conformance.suite.checks import check_isolated


def _clause_ids() -> list[str]:
    from conformance.spec.reader import load_spec
    return [c.id for c in load_spec().active()]


def _probed() -> list[str]:
    from conformance.engines import CAPABILITIES
    from conformance.judge.probes import PROBES
    return [c for c in CAPABILITIES if c in PROBES]


@pytest.mark.parametrize("clause", _clause_ids())
def test_clause(clause, gradspec_clauses):
    gradspec_clauses.check(clause)


@pytest.mark.parametrize("capability", _probed())
def test_declared_capability(capability, conformance_engine, conformance_oracle,
                             gradspec_xfail, gradspec_classes, conformance_isolated):
    """A capability the engine declares runs its probe program as the oracle does; one it
    declares absent is probed by `gradspec run`."""
    from conformance.judge.probes import declared, probe_program
    if not declared(conformance_engine, capability):     # a finer one: implied by a coarse one
        pytest.skip(f"{conformance_engine.name} declares {capability} absent")
    if not declared(conformance_oracle, capability):
        pytest.skip(f"the oracle {conformance_oracle.name} lacks {capability}")
    check_isolated(probe_program(capability), conformance_isolated, conformance_engine,
                   gradspec_xfail, gradspec_classes)
