"""The training-step family (conformance/gen/training.py) draws only what an engine runs: no
in-place op without `inplace`, no op the engine lacks (`lacks_ops`), and it records the
capabilities in their normal form (conformance/spec/capabilities.py), as the default generator
does."""
from __future__ import annotations

import pytest

from conformance.gen.training import program
from conformance.generate import ALL_CAPABILITIES
from conformance.lang import ops
from conformance.spec.capabilities import closure, lacks, normal

SEEDS = range(200)
LACKED = ("matmul", "sub_", "zero_", "tanh", "tanh_", "mean", "clamp_")


def _ops(p) -> list[tuple[str, str]]:
    return [(s.op, s.params.get("fn")) for _, s in p.walk() if s.op in ("call", "inplace")]


def test_without_inplace_no_in_place_op_is_drawn_and_steps_still_run():
    caps = frozenset(ALL_CAPABILITIES) - {"inplace"}
    drawn = backward = 0
    for seed in SEEDS:
        p = program(seed, caps)
        assert [fn for kind, fn in _ops(p) if kind == "inplace"] == [], seed
        assert all(ops.ROWS[fn].kind != "inplace" for _, fn in _ops(p)), seed
        drawn += len(_ops(p))
        backward += sum(s.op == "backward" for _, s in p.walk())
    assert drawn > 1000 and backward >= 2 * len(SEEDS)


@pytest.mark.parametrize("lacked", [LACKED, ("isub",), ("sub_", "isub")])
def test_ops_the_engine_lacks_are_never_drawn(lacked):
    caps = frozenset(ALL_CAPABILITIES) | lacks(lacked)
    seen: set[str] = set()
    for seed in SEEDS:
        used = {fn for _, fn in _ops(program(seed, caps))}
        assert not used & set(lacked), (seed, used & set(lacked))
        seen |= used
    # what is not lacked is still drawn: the family is not emptied by the filter
    assert {"mul", "sum"} <= seen
    if "sub_" in lacked and "isub" not in lacked:
        assert "isub" in seen
    if lacked == ("isub",):
        assert "sub_" in seen


def test_the_same_programs_where_nothing_is_lacked():
    """Filtering by what the engine runs leaves the draws of an engine that runs everything
    alone: the same programs with and without an empty lacks set and an explicit inplace."""
    for seed in range(50):
        a = program(seed, None)
        b = program(seed, frozenset(ALL_CAPABILITIES) | lacks(()))
        assert [s.to_json() for s in a.statements] == [s.to_json() for s in b.statements]


def test_capabilities_recorded_in_their_normal_form():
    p = program(3, None)
    assert p.meta["capabilities"] == sorted(normal(closure(ALL_CAPABILITIES) | {"core"}))
    assert "view_ops" not in p.meta["capabilities"]
