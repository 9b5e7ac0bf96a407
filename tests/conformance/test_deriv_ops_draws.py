"""Generator vocabulary 4 draws the ops of spec/deriv.md (DERIV-1, DERIV-2, DERIV-3, DERIV-5,
DERIV-6, DERIV-7, DERIV-8): only for engines that declare deriv_ops, never in an older
vocabulary, and the ops whose results jump (ops.Op.jumps) only on operands computed from
leaves by exact ops, so that a last-bit difference between two engines never moves them."""
from __future__ import annotations

import pytest

from conformance.engines import load_engine
from conformance.executor import execute
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.gen.focus import SCENARIOS, focus_table
from conformance.gen.order import clause_requires
from conformance.judge.compare import compare, precision
from conformance.lang import ops
from conformance.lang.functions import ROWS as FUNCTION_ROWS
from conformance.lang.program import Program, Stmt

V4 = {r.name for r in ops.OPS if r.needs == "deriv_ops"}
SEEDS = range(400)


def fns(program: Program) -> list[str]:
    return [s.params["fn"] for _, s in program.walk() if s.op in ("call", "inplace")]


def test_every_op_of_deriv_md_is_drawn_and_tagged_with_its_clauses():
    drawn, tags = set(), {}
    for seed in range(1000):            # each of the 22 is in about 1 program in 80
        for _, s in program_for_seed(seed, None, 20).walk():
            fn = s.params.get("fn") if s.op in ("call", "inplace") else None
            if fn in V4:
                drawn.add(fn)
                tags.setdefault(fn, set()).update(s.clauses)
    assert drawn == V4
    for fn in V4:
        assert set(ops.ROWS[fn].clauses) <= tags[fn], fn


def test_an_engine_without_deriv_ops_is_given_none_of_them():
    caps = tuple(c for c in ALL_CAPABILITIES if c != "deriv_ops")
    for seed in SEEDS:
        p = program_for_seed(seed, caps, 20)
        assert not V4 & set(fns(p)), seed
        assert "deriv_ops" not in p.meta["capabilities"]
        assert not any("deriv_ops" in clause_requires()[c] for _, s in p.walk()
                       for c in s.clauses)


def test_older_vocabularies_neither_draw_nor_record_deriv_ops():
    for seed in range(50):
        p = program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=3)
        assert not V4 & set(fns(p)) and "deriv_ops" not in p.meta["capabilities"]


def _check_exact_operands(program: Program) -> int:
    """An independent reading of the program, not the generator's model: a name is exact
    when computed from leaves by the table's exact ops, and stays so until a write reaches
    its memory (an in-place op or setitem on any tensor it shares memory with, or may: views,
    detach, .data and reshape are counted as sharing, both ways; `.data =` moves a name to its
    value's memory). Asserts that every tensor operand of an op whose result jumps is exact;
    returns how many such ops it checked. A write the program expects to raise
    (meta["expect"]: a deliberate error) writes nothing."""
    raises = program.meta.get("expect", {})
    exact: dict[str, bool] = {}
    group: dict[str, int] = {}          # name -> the memory it shares (an id per leaf/op)
    checked = 0
    for path, s in program.walk():
        if s.op == "leaf":
            exact[s.out], group[s.out] = True, len(group)
        elif s.op == "call":
            row = ops.ROWS[s.params["fn"]]
            tensors = [a for a in s.args if isinstance(a, str)]
            if row.jumps:
                assert all(exact[a] for a in tensors), s
                checked += 1
            exact[s.out] = (row.exact or row.dtype in ("bool", "int64")) and all(
                exact.get(a, False) for a in tensors)
            group[s.out] = len(group)
        elif s.op in ("view", "getitem", "detach", "data") and s.out:
            exact[s.out], group[s.out] = exact.get(s.target, False), group.get(s.target, -1)
        elif s.op == "multi_view":      # split, chunk, unbind: views, one name per output
            for n in s.params["outs"]:
                exact[n], group[n] = exact.get(s.target, False), group.get(s.target, -1)
        elif s.op == "function" and path not in raises:
            # the catalogue's Functions compute with + and * (and floor): exact from exact
            # arguments; Identity returns a view of its argument
            row = FUNCTION_ROWS[s.params["fn"]]
            tensors = [s.target] + [a for a in s.args if isinstance(a, str)]
            if row.nondiff:         # WithFloor's floor jumps
                assert all(exact[a] for a in tensors), s
                checked += 1
            for n in s.params.get("outs") or [s.out]:
                exact[n] = all(exact.get(a, False) for a in tensors)
                group[n] = group.get(s.target, -1) if row.returns_input else len(group)
        elif s.op == "dirty_function" and s.target in group and path not in raises:
            for n, gid in group.items():        # a write, as an in-place op's
                if gid == group[s.target]:
                    exact[n] = False
        elif s.op == "set_data" and path not in raises:
            # `.data =` (DATA-1, DATA-3): the target now holds the value's memory, the tensors
            # that shared its old memory keep that
            exact[s.target], group[s.target] = exact[s.args[0]], group[s.args[0]]
        elif s.op in ("inplace", "setitem") and s.target in group and path not in raises:
            if s.op == "inplace" and ops.ROWS[s.params["fn"]].jumps:
                assert exact[s.target], s
                checked += 1
            for n, gid in group.items():
                if gid == group[s.target]:
                    exact[n] = False
    return checked


def test_ops_whose_results_jump_take_exactly_computed_operands():
    assert sum(_check_exact_operands(program_for_seed(seed, None, 20)) for seed in SEEDS) > 80


def test_a_cast_to_float32_sets_the_tolerance_of_the_program():
    p = Program([Stmt("leaf", out="x", params={"values": [0.5], "shape": [1],
                                               "dtype": "float64"}),
                 Stmt("call", out="y", args=["x"], params={"fn": "float", "kw": {}})])
    assert precision(p) == "float32"
    p.statements.pop()
    assert precision(p) == "float64"


def test_vocabulary_4_has_scenarios_of_its_own_that_vocabulary_3_never_draws():
    v3 = dict(focus_table(frozenset(ALL_CAPABILITIES), 3))
    v4 = dict(focus_table(frozenset(ALL_CAPABILITIES), 4))
    new = {n for n, (needs, _, _) in SCENARIOS.items() if "deriv_ops" in needs}
    assert len(new) == 3 and not new & set(v3) and new <= set(v4)


@pytest.mark.parametrize("engine", ["refimpl", "torch"])
def test_programs_of_vocabulary_4_agree_with_torch(engine):
    oracle, other = load_engine("torch"), load_engine(engine)
    caps = frozenset(oracle.capabilities) & frozenset(other.capabilities)
    assert "deriv_ops" in caps
    for seed in range(100):
        p = program_for_seed(seed, caps, 20)
        assert compare(p, execute(p, oracle), execute(p, other)) == [], seed
