"""The end-of-program sweep (conformance/kinds/observe.py: Sweep.emit_end) reuses what it
worked out for a tensor in the same state (the capabilities, the properties that decide what is
swept and observed_state): here each program's sweep is recomputed from the generator's final
model with no cache, observable by observable, as an observe statement would tag it, and must
be the same, items and clause tags, under capabilities that block clauses and that do not."""
from __future__ import annotations

import pytest

from conformance.gen.core import ALL_CAPABILITIES, Gen
from conformance.gen.strategies import RandomChooser
from conformance.kinds.observe import SWEPT, Observe
from conformance.model import T, observe_clauses

CAPS = {
    "all": frozenset(ALL_CAPABILITIES),
    # retain_grad and grad_fn missing: some clauses are blocked (tags drops them)
    "blocked": frozenset(c for c in ALL_CAPABILITIES
                         if c not in ("retain_grad", "grad_fn", "node_hooks")),
}


def _expected(g: Gen, t: T) -> list[list]:
    """The sweep's items for t, computed afresh (Observe._observables without its cache)."""
    allowed = {w for w, _ in Observe._observables.__wrapped__(
        g.caps, not t.leaf and not t.retains, t.rg and not t.leaf,
        t.version_unobserved(), t.stale, t.is_float, t.graph_open,
        g.made_inference, t.leaf)}
    return [[t.name, what, g.tags(observe_clauses(t, what))] for what in SWEPT
            if what in allowed]


@pytest.mark.parametrize("caps", list(CAPS))
def test_sweep_is_what_each_observation_would_tag(caps):
    assert CAPS["blocked"] != CAPS["all"]
    swept = 0
    for seed in range(80):
        g = Gen(RandomChooser(seed), CAPS[caps] | {"core"}, 20)
        program = g.run()
        items = [i for t in g.live() for i in _expected(g, t)]
        last = program.statements[-1]
        if not items:
            assert last.op != "sweep"
            continue
        swept += 1
        assert last.op == "sweep"
        assert last.params["of"] == items
        assert last.clauses == g.tags(c for item in items for c in item[2])
        # each item's clause list is its own (never one object shared between items)
        assert len({id(item[2]) for item in last.params["of"]}) == len(items)
    assert swept > 60
    assert (caps == "blocked") == g.blocks_clauses()
