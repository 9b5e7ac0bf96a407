"""The statement kind multi_view (split, chunk and unbind binding every output; spec/view.md,
VIEW-6, VIEW-9), drawn from generator vocabulary 12 where the engine declares multi_views:
its validation, its script line, the probe of the capability, and programs that agree on torch
and refimpl with the outputs used, viewed, hooked and their base written."""
from __future__ import annotations

import pytest

from conformance.engines import load_engine
from conformance.executor import execute
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.judge.compare import compare
from conformance.judge.probes import probe
from conformance.kinds import KINDS
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate

SEEDS = range(300)


def _multi(p: Program) -> list[Stmt]:
    return [s for _, s in p.walk() if s.op == "multi_view"]


@pytest.fixture(scope="module")
def drawn() -> list[int]:
    return [s for s in SEEDS if _multi(program_for_seed(s, ALL_CAPABILITIES, 20))]


def test_multi_views_are_drawn_from_vocabulary_12_only_and_only_where_declared(drawn):
    assert len(drawn) >= 15, drawn
    fns = {s.params["fn"] for seed in drawn for s in _multi(
        program_for_seed(seed, ALL_CAPABILITIES, 20))}
    assert fns == {"split", "chunk", "unbind"}
    without = tuple(c for c in ALL_CAPABILITIES if c != "multi_views")
    for seed in drawn[:10]:
        assert not _multi(program_for_seed(seed, without, 20))
        assert not _multi(program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=11))


@pytest.mark.parametrize("engine", ["refimpl", "torch"])
def test_their_programs_agree_with_torch(drawn, engine):
    oracle, other = load_engine("torch"), load_engine(engine)
    for seed in drawn:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        assert compare(p, execute(p, oracle), execute(p, other)) == [], seed


def test_their_outputs_are_used_after_the_statement(drawn):
    """The outputs are operands of later statements in some programs, not only swept."""
    used = 0
    for seed in drawn:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        outs = {n for s in _multi(p) for n in s.params["outs"]}
        used += any(n in outs for _, s in p.walk() if s.op not in ("multi_view", "sweep")
                    for n in KINDS[s.op].refs(s))
    assert used >= 5, used


def _statement(**params) -> Stmt:
    return Stmt("multi_view", target="x", params={"fn": "split", "kw": {"size": 2, "dim": 0},
                                                  "outs": ["a", "b"], **params})


X = Stmt("leaf", out="x", params={"values": [1.0, 2.0, 3.0, 4.0], "shape": [4],
                                  "dtype": "float64", "requires_grad": True})


@pytest.mark.parametrize("params, field", [
    ({"fn": "tensor_split"}, "params.fn"),
    ({"kw": {"size": True, "dim": 0}}, "params.kw.size"),
    ({"kw": {"dim": 0}}, "params.kw.size"),
    ({"kw": {"size": 2, "dim": 0, "chunks": 2}}, "params.kw"),
    ({"outs": ["a", "a"]}, "params.outs"),
    ({"outs": []}, "params.outs"),
    ({"outs": ["a", "for"]}, "params.outs[1]"),
])
def test_malformed_multi_views_are_refused_naming_the_field(params, field):
    with pytest.raises(ProgramError, match=field.replace("[", r"\[").replace("]", r"\]")):
        validate(Program(statements=[X, _statement(**params)]))


@pytest.mark.parametrize("fn, kw, line", [
    ("split", {"size": 2, "dim": 0}, "a, b = x.split(2, dim=0)"),
    ("split", {"size": [1, 3], "dim": -1}, "a, b = x.split([1, 3], dim=-1)"),
    ("chunk", {"chunks": 2, "dim": 0}, "a, b = x.chunk(2, dim=0)"),
])
def test_the_script_line_binds_every_output(fn, kw, line):
    s = _statement(fn=fn, kw=kw)
    assert KINDS["multi_view"].render(s, "1") == [line]
    one = Stmt("multi_view", target="x", params={"fn": "unbind", "kw": {"dim": 0},
                                                 "outs": ["a"]})
    assert KINDS["multi_view"].render(one, "1") == ["a, = x.unbind(dim=0)"]


@pytest.mark.parametrize("engine", ["torch", "refimpl"])
def test_the_capability_probe_passes_where_it_is_declared(engine):
    result = probe(load_engine(engine), load_engine("torch"), "multi_views")
    assert result.declared and result.works, result
