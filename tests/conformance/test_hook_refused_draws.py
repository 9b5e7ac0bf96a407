"""Generator vocabulary 17 draws the two hook returns HOOK-5 refuses that no program had: a
tensor of the other float dtype (HOOK_CHANGED_TYPE) and a value that is no tensor
(HOOK_RETURNED_NON_TENSOR), each from a tensor hook on a fresh non-leaf, removed after the pass
(gen/errors_backward.py). torch raises what the model predicts, refimpl agrees, and an engine
that casts a hook's result instead of refusing it is told so under HOOK-5."""
from __future__ import annotations

import collections

import pytest

from conformance.engines import load_engine
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.gen.errors import INEXPRESSIBLE
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.judge.verdict import verdict
from conformance.kinds import KINDS
from conformance.lang.program import ProgramError, Stmt

KINDS_DRAWN = ("HOOK_CHANGED_TYPE", "HOOK_RETURNED_NON_TENSOR")


@pytest.fixture(scope="module")
def drawn():
    found = []
    for seed in range(400):
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        if any(k in KINDS_DRAWN for k in p.meta["expect"].values()):
            found.append(p)
    return found


def test_both_are_drawn_from_vocabulary_17_and_torch_raises_them(drawn):
    assert not set(KINDS_DRAWN) & set(INEXPRESSIBLE)
    torch, ref = load_engine("torch"), load_engine("refimpl")
    raised = collections.Counter()
    for p in drawn:
        trace = execute(p, torch)
        for (path, _), ev in zip(p.walk(), trace.events, strict=True):
            expected = p.meta["expect"].get(path)
            got = ev.error if ev.status == "error" else None
            assert got == expected, (path, expected, got)
            raised[got] += got in KINDS_DRAWN
        assert compare(p, trace, execute(p, ref)) == []
    # 10 and 19 in seeds 0-399 (55 and 60 in 0-1499)
    assert raised["HOOK_CHANGED_TYPE"] >= 6 and raised["HOOK_RETURNED_NON_TENSOR"] >= 10, raised
    for seed in range(100):
        old = program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=16)
        assert not set(KINDS_DRAWN) & set(old.meta["expect"].values())


def _casts_hook_results(engine):
    """A fault: a tensor hook's result is cast to the gradient's dtype instead of refused."""
    register = engine.register_hook

    def register_hook(t, fn):
        def cast(g):
            out = fn(g)
            return out.to(g.dtype) if hasattr(out, "to") else out
        return register(t, cast)
    engine.register_hook = register_hook
    return engine


def test_an_engine_that_casts_instead_is_blamed_under_hook_5(drawn):
    torch, broken = load_engine("torch"), _casts_hook_results(load_engine("refimpl"))
    primaries = collections.Counter()
    for p in drawn:
        if "HOOK_CHANGED_TYPE" in p.meta["expect"].values():
            found = compare(p, execute(p, torch), execute(p, broken))
            assert found, p.dumps()[:300]
            primaries[", ".join(verdict(found)[0])] += 1
    assert set(primaries) == {"HOOK-5"}, primaries


def test_the_behaviours_are_checked():
    for b in ("wrong_dtype", "non_tensor"):
        KINDS["hook"].check(Stmt("hook", out="h", target="y", params={"behaviour": b}), "0")
        assert KINDS["hook"].render(Stmt("hook", out="h", target="y",
                                         params={"behaviour": b}), "0") == [
            f"h = y.register_hook({b}('h'))"]
    with pytest.raises(ProgramError):
        KINDS["hook"].check(Stmt("hook", out="h", target="y", params={"behaviour": "cast"}),
                            "0")
