"""Generator vocabulary 22 sometimes ends a program with a module's zero_grad (gen/modules.py,
kinds/modules.py): fresh parameters and a leaf that is no parameter, a pass, zero_grad of a
module of the first parameters, to None (GRAD-5) or in place (GRAD-6), and a second pass. Its
programs agree on torch and refimpl, and an engine whose zero_grad does otherwise is blamed
under GRAD-5 or GRAD-6."""
from __future__ import annotations

import collections

import pytest

from conformance.engines import load_engine
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.gen.vocabulary import NOT_GENERATED
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate
from tests.conformance.blame import assert_drawn_only_where_declared, blamed, drawn_with, first_of

SEEDS = range(400)


@pytest.fixture(scope="module")
def drawn() -> list[tuple[int, Program]]:
    return drawn_with("zero_grad", SEEDS)


def _zero_grads(p: Program) -> list[Stmt]:
    return [s for _, s in p.walk() if s.op == "zero_grad"]


def test_zero_grad_is_drawn_from_vocabulary_22_where_declared(drawn):
    assert len(drawn) >= 50, len(drawn)          # 85 of seeds 0-399
    assert_drawn_only_where_declared(drawn, "zero_grad", "nn_module", since=22)
    assert not {"GRAD-5", "GRAD-6"} & set(NOT_GENERATED)
    modes = collections.Counter(s.params["set_to_none"] for _, p in drawn
                                for s in _zero_grads(p))
    assert modes[True] >= 25 and modes[False] >= 25, modes     # 44, 41
    # some modules hold only some of the parameters, some .grads are kept under a name, and
    # some of those zeroed in place were recorded by a create_graph pass
    partial = sum(1 for _, p in drawn
                  if len(_zero_grads(p)[0].args) < sum(s.op == "parameter" for _, s in p.walk()))
    kept = sum(1 for _, p in drawn if first_of(p, "grad_ref") is not None)
    graphed = sum(1 for _, p in drawn if any(
        s.op == "observe" and "GRAD-6" in s.clauses and s.params["what"] == "grad_grad_fn"
        for _, s in p.walk()))
    assert partial >= 20 and kept >= 20 and graphed >= 8, (partial, kept, graphed)  # 41, 35, 17


def test_what_comes_before_the_module_is_what_vocabulary_21_draws(drawn):
    for seed, p in drawn[:25]:
        older = [s.to_json() for _, s in
                 program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=21).walk()]
        first = first_of(p, "parameter")
        assert [s.to_json() for _, s in p.walk()][:first] == older[:first], seed


def test_torch_and_refimpl_agree_on_them(drawn):
    torch, ref = load_engine("torch"), load_engine("refimpl")
    for seed, p in drawn:
        assert compare(p, execute(p, torch), execute(p, ref)) == [], seed


def test_a_malformed_module_statement_is_refused_with_its_field():
    param = Stmt("parameter", out="w", params={"values": [1.0], "shape": [1],
                                               "dtype": "float32"})
    with pytest.raises(ProgramError, match="dtype"):
        validate(Program([Stmt("parameter", out="w", params={
            "values": [1], "shape": [1], "dtype": "int64"})]))
    with pytest.raises(ProgramError, match="requires_grad"):
        validate(Program([Stmt("parameter", out="w", params={
            "values": [1.0], "shape": [1], "dtype": "float32", "requires_grad": True})]))
    for args, params, field in (([], {"set_to_none": True}, "args"),
                                (["w"], {}, "set_to_none"),
                                (["w"], {"set_to_none": 1}, "set_to_none"),
                                (["w", "1x"], {"set_to_none": False}, "args")):
        with pytest.raises(ProgramError, match=field):
            validate(Program([param, Stmt("zero_grad", args=args, params=params)]))


def test_a_module_of_a_tensor_that_is_no_parameter_fails_on_the_engine():
    """register_parameter refuses a plain tensor: the statement fails (OTHER) on both sides,
    and the run goes on."""
    p = Program([Stmt("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2],
                                              "dtype": "float32", "requires_grad": True}),
                 Stmt("zero_grad", args=["x"], params={"set_to_none": True}),
                 Stmt("observe", target="x", params={"what": "requires_grad"})])
    for name in ("torch", "refimpl"):
        events = execute(p, load_engine(name)).events
        assert [e.status for e in events] == ["ok", "error", "ok"], name


# ---- engines whose zero_grad does otherwise ----------------------------------------------
def _zeroes_for_none(monkeypatch):
    """A fault: zero_grad(set_to_none=True) zeroes the .grads in place instead (1.x's
    default: GRAD-5)."""
    from refimpl.nn import Module
    real = Module.zero_grad
    monkeypatch.setattr(Module, "zero_grad", lambda self, set_to_none=True: real(self, False))


def _replaces(monkeypatch):
    """A fault: zero_grad(set_to_none=False) stores new zeros as .grad instead of zeroing the
    tensor it holds (GRAD-6)."""
    from refimpl.nn import Module

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else p.grad.detach() * 0
    monkeypatch.setattr(Module, "zero_grad", zero_grad)


def _keeps_history(monkeypatch):
    """A fault: zero_grad(set_to_none=False) zeroes a recorded .grad without cutting it from
    its graph (GRAD-6)."""
    from refimpl import no_grad
    from refimpl.nn import Module

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None and set_to_none:
                p.grad = None
            elif p.grad is not None:
                with no_grad():
                    p.grad.zero_()
    monkeypatch.setattr(Module, "zero_grad", zero_grad)


@pytest.mark.parametrize("fault, clause", [(_zeroes_for_none, "GRAD-5"), (_replaces, "GRAD-6"),
                                           (_keeps_history, "GRAD-6")],
                         ids=["zeroes-for-none", "replaces", "keeps-history"])
def test_an_engine_whose_zero_grad_does_otherwise_is_blamed(drawn, monkeypatch, fault, clause):
    primaries = blamed([p for _, p in drawn], fault, monkeypatch)
    assert primaries and primaries.most_common(1)[0][0] == clause, primaries
