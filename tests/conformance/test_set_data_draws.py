"""Generator vocabulary 17 draws `.data =` (the statement kind set_data, spec/data.md): on a
tensor that owns its memory alone and that no graph saved, with another shape or dtype only
where nothing holds the old ones (kinds/contents.py), and its two errors (gen/errors_data.py).
Its programs agree on torch and refimpl, the model predicts each set_data's outcome, and an
engine that gets `.data =` wrong is told so under a DATA clause."""
from __future__ import annotations

import collections

import pytest

from conformance.engines import load_engine
from conformance.engines.base import unimplemented
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.gen.vocabulary import NOT_GENERATED
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.judge.verdict import verdict
from conformance.kinds import KINDS
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate

SEEDS = range(600)


def _set_data(p: Program) -> list[tuple[str, Stmt]]:
    return [(path, s) for path, s in p.walk() if s.op == "set_data"]


@pytest.fixture(scope="module")
def drawn() -> list[tuple[int, Program]]:
    return [(seed, p) for seed in SEEDS
            if _set_data(p := program_for_seed(seed, ALL_CAPABILITIES, 20))]


def test_set_data_is_drawn_from_vocabulary_17_where_declared(drawn):
    assert len(drawn) >= 60, len(drawn)         # 94 of seeds 0-599
    for _, p in drawn:
        validate(p)     # a bool tensor's contents once drew bool "values" of floats
    without = tuple(c for c in ALL_CAPABILITIES if c != "data_assign")
    for seed, _ in drawn[:40]:
        assert not _set_data(program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=16))
        assert not _set_data(program_for_seed(seed, without, 20))


def test_each_outcome_is_the_models_and_torch_and_refimpl_agree(drawn):
    torch, ref = load_engine("torch"), load_engine("refimpl")
    outcomes: collections.Counter[str | None] = collections.Counter()
    for seed, p in drawn:
        oracle = execute(p, torch)
        events = dict(zip((path for path, _ in p.walk()), oracle.events, strict=True))
        for path, _ in _set_data(p):
            ev = events[path]
            got = ev.error if ev.status == "error" else None
            assert got == p.meta["expect"].get(path), (seed, path, got)
            outcomes[got] += 1
        assert compare(p, oracle, execute(p, ref)) == [], seed
    # {None: 60, 'DATA_REQUIRES_GRAD_DTYPE': 27, 'DATA_NOT_TENSOR': 18} in seeds 0-599
    assert outcomes[None] >= 30 and outcomes["DATA_REQUIRES_GRAD_DTYPE"] >= 10 and \
        outcomes["DATA_NOT_TENSOR"] >= 8, outcomes


def test_new_shapes_and_dtypes_only_where_nothing_holds_the_old_ones(drawn):
    """A set_data that changes shape or dtype targets a leaf made as one; integer contents go
    only to a tensor that does not require grad, outside the error move."""
    torch = load_engine("torch")
    changed = int_data = 0
    for seed, p in drawn:
        made = {name: s for _, s in p.walk() for name in ([s.out] if s.out else
                                                          s.params.get("outs") or [])}
        now = {s.out: (s.params["shape"], s.params["dtype"]) for s in made.values()
               if s.op == "leaf"}
        for (path, s), ev in zip(p.walk(), execute(p, torch).events, strict=True):
            if s.op != "set_data" or s.args[0] is None or ev.status == "error":
                continue
            value = now[s.args[0]]
            if s.target in now and now[s.target] != value:
                changed += 1
            else:
                # a result of an op keeps its shape and dtype
                assert s.target in now or made[s.target].op != "leaf", (seed, path)
            if value[1] == "int64":
                int_data += 1
                assert not (made[s.target].op == "leaf" and made[s.target].params[
                    "requires_grad"]), (seed, path)
            if s.target in now:
                now[s.target] = value
    # vocabulary 19: 13 and 0 in seeds 0-599 (integer contents need a free target that does not
    # require grad: about one candidate in five); the stream further on holds some
    assert changed >= 10, changed
    for seed in range(600, 3000) if not int_data else ():
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        made = {s.out: s for _, s in p.walk() if s.out}
        for path, s in p.walk():
            value = made.get(s.args[0]) if s.op == "set_data" and s.args[0] else None
            if value is not None and value.op == "leaf" and value.params["dtype"] == "int64" \
                    and path not in p.meta["expect"]:
                int_data += 1
                assert not (made[s.target].op == "leaf" and made[s.target].params[
                    "requires_grad"]), (seed, path)
        if int_data:
            break
    assert int_data >= 1


def test_observations_after_it_carry_the_data_clauses(drawn):
    tagged = collections.Counter()
    for _, p in drawn:
        for s in (s for _, s in p.walk()):
            if s.op == "set_data":
                tagged["stmt"] += "DATA-1" in s.clauses or "DATA-6" in s.clauses
            elif s.op == "sweep":
                tagged["sweep"] += any(c.startswith("DATA-") for _, _, cl in s.params["of"]
                                       for c in cl)
    assert tagged["stmt"] >= 90 and tagged["sweep"] >= 40, tagged
    for clause in ("DATA-1", "DATA-2", "DATA-4", "DATA-5", "DATA-6"):
        assert clause not in NOT_GENERATED
        assert any(clause in s.clauses for _, p in drawn for _, s in p.walk()), clause
    assert "DATA-3" in NOT_GENERATED and not {"DATA-7", "DATA-8"} & set(NOT_GENERATED)


def _keeps_values_dtype(engine):
    """A fault: `.data =` casts the new contents to the tensor's old dtype (DATA-1)."""
    def set_data(t, value):
        both = value is not None and value.is_floating_point() and t.is_floating_point()
        t.data = value.to(t.dtype) if both else value
    engine.set_data = set_data
    return engine


def _bumps_version(engine):
    """A fault: `.data =` counts as an in-place write (DATA-2)."""
    def set_data(t, value):
        t.data = value
        with engine.torch.no_grad():
            t.mul_(1)
    engine.set_data = set_data
    return engine


@pytest.mark.parametrize("fault, clause", [(_keeps_values_dtype, "DATA-1"),
                                           (_bumps_version, "DATA-2")])
def test_an_engine_that_gets_it_wrong_is_blamed_under_its_clause(drawn, fault, clause):
    torch = load_engine("torch")
    broken = fault(load_engine("refimpl"))
    primaries = collections.Counter()
    for _, p in drawn[:60]:
        found = compare(p, execute(p, torch), execute(p, broken))
        if found:
            primaries[", ".join(verdict(found)[0])] += 1
    assert primaries and primaries.most_common(1)[0][0] == clause, primaries


def test_the_statement_is_checked_rendered_and_needs_its_method():
    ok = Stmt("set_data", target="x", args=["v"])
    KINDS["set_data"].check(ok, "0")
    assert KINDS["set_data"].render(ok, "0") == ["x.data = v"]
    assert KINDS["set_data"].render(Stmt("set_data", target="x", args=[None]), "0") == [
        "x.data = None"]
    for bad in (Stmt("set_data", target="x", args=[]), Stmt("set_data", target="x", args=[1.0]),
                Stmt("set_data", target="x", args=["v", "w"])):
        with pytest.raises(ProgramError):
            KINDS["set_data"].check(bad, "0")

    class NoSetData:
        pass
    assert "data_assign: set_data" in unimplemented(NoSetData(), {"data_assign"})
