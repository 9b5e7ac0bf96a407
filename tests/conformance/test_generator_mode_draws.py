"""Generator vocabulary 17 draws grad-mode decorators on generator functions (MODE-12): a
decorated mode block with params.generator runs its body in the generator's second resumption
(kinds/modes.py). Its programs agree on torch and refimpl, and an engine whose decorator wraps
only the call that creates the generator is told so under MODE-12."""
from __future__ import annotations

import collections
import functools

import pytest

from conformance.engines import load_engine
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.judge.verdict import verdict
from conformance.kinds import KINDS
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate

SEEDS = range(900)


def _generator_blocks(p: Program) -> list[Stmt]:
    return [s for _, s in p.walk() if s.op == "mode" and s.params.get("generator")]


@pytest.fixture(scope="module")
def drawn() -> list[Program]:
    return [p for seed in SEEDS
            if _generator_blocks(p := program_for_seed(seed, ALL_CAPABILITIES, 20))]


def test_drawn_from_vocabulary_17_decorated_and_tagged(drawn):
    assert len(drawn) >= 20, len(drawn)         # 35 of seeds 0-899
    modes = collections.Counter()
    for p in drawn:
        validate(p)
        for s in _generator_blocks(p):
            assert s.params["decorator"] is True and "MODE-12" in s.clauses
            modes[s.params["mode"]] += 1
    assert len(modes) >= 3, modes
    for seed in SEEDS[:200]:
        assert not _generator_blocks(program_for_seed(seed, ALL_CAPABILITIES, 20,
                                                      vocabulary=16))


def test_its_programs_agree_on_torch_and_refimpl(drawn):
    torch, ref = load_engine("torch"), load_engine("refimpl")
    for p in drawn:
        assert compare(p, execute(p, torch), execute(p, ref)) == [], p.dumps()[:400]


def _wraps_the_call_only(engine):
    """A fault: the decorator sets the mode around the call, which for a generator function
    only creates the generator (refimpl before MODE-12)."""
    def decorator(mode, *given):
        def wrap(fn):
            @functools.wraps(fn)
            def call(*args, **kwargs):
                with engine.grad_mode(mode, *given):
                    return fn(*args, **kwargs)
            return call
        return wrap
    engine.grad_mode_decorator = decorator
    return engine


def test_a_decorator_that_wraps_the_call_only_is_blamed_under_mode_12(drawn):
    """Where the block is a grad mode, the first difference is inside its body: MODE-12. An
    inference-mode block's body makes no inference tensors then, which shows first where one
    is used outside the mode: that use's INFER clause."""
    torch, broken = load_engine("torch"), _wraps_the_call_only(load_engine("refimpl"))
    primaries = {True: collections.Counter(), False: collections.Counter()}
    for p in drawn:
        found = compare(p, execute(p, torch), execute(p, broken))
        inference = any(s.params["mode"] == "inference_mode" for s in _generator_blocks(p))
        if found:
            primaries[inference][", ".join(verdict(found)[0])] += 1
    # seeds 0-899 at vocabulary 20: 15 programs with a grad-mode generator block, 7 divergent
    # (all MODE-12); 20 with an inference-mode one, all divergent (19 INFER-3..7, 1 MODE-12)
    grad_modes = primaries[False]
    assert grad_modes.most_common(1)[0][0] == "MODE-12" and sum(grad_modes.values()) >= 4, \
        primaries
    assert all(c.startswith("INFER-") or c == "MODE-12" for c in primaries[True]), primaries


def test_the_statement_is_checked_and_rendered():
    body = [Stmt("grad_enabled")]
    ok = Stmt("mode", params={"mode": "no_grad", "decorator": True, "generator": True},
              body=body)
    KINDS["mode"].check(ok, "3")
    lines = KINDS["mode"].render(ok, "3") + KINDS["mode"].render_body(ok, "3", ["x"], [])
    assert lines == ["@torch.no_grad()", "def _block_3():", "    yield", "    x",
                     "for _ in _block_3():", "    pass"]
    with pytest.raises(ProgramError):
        KINDS["mode"].check(Stmt("mode", params={"mode": "no_grad", "generator": True},
                                 body=body), "3")
