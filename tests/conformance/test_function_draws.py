"""Generator vocabulary 19 draws custom autograd Functions (spec/function.md): the statement
kinds function and dirty_function apply Functions of the catalogue (conformance/lang/
functions.py), and five error moves provoke what a Function's misuse raises
(gen/errors_function.py). Its programs agree on torch and refimpl, the model predicts every
outcome, and an engine that gets a Function's contract wrong is told so under a FUNC clause."""
from __future__ import annotations

import collections

import pytest

from conformance.engines import load_engine
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.gen.vocabulary import NOT_GENERATED
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.lang.functions import FNS, ROWS
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate
from conformance.reports.render import render
from tests.conformance.blame import blamed

SEEDS = range(400)
KINDS_OF_CALL = ("function", "dirty_function")


def _calls(p: Program) -> list[Stmt]:
    return [s for _, s in p.walk() if s.op in KINDS_OF_CALL]


@pytest.fixture(scope="module")
def drawn() -> list[tuple[int, Program]]:
    return [(seed, p) for seed in SEEDS
            if _calls(p := program_for_seed(seed, ALL_CAPABILITIES, 20))]


def test_functions_are_drawn_from_vocabulary_19_where_declared(drawn):
    assert len(drawn) >= 120, len(drawn)
    fns = collections.Counter(s.params["fn"] for _, p in drawn for s in _calls(p))
    assert set(fns) == set(ROWS), fns          # every Function of the catalogue, errors too
    without = tuple(c for c in ALL_CAPABILITIES if c != "custom_function")
    for seed, p in drawn[:30]:
        validate(p)
        assert not _calls(program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=18))
        assert not _calls(program_for_seed(seed, without, 20))


def test_torch_and_refimpl_agree_and_the_model_predicts_each_outcome(drawn):
    """The model may miss where two errors meet in one pass (it checks GRAPH_FREED first,
    torch raises what the first node it runs finds), as test_generator allows."""
    torch, ref = load_engine("torch"), load_engine("refimpl")
    errors: collections.Counter[str] = collections.Counter()
    missed = []
    for seed, p in drawn:
        oracle = execute(p, torch)
        for (path, s), ev in zip(p.walk(), oracle.events, strict=True):
            got = ev.error if ev.status == "error" else None
            if got != p.meta["expect"].get(path):
                missed.append((seed, path, s.op, got, p.meta["expect"].get(path)))
            errors[got or "ok"] += 1
        assert compare(p, oracle, execute(p, ref)) == [], seed
    assert len(missed) <= sum(errors.values()) // 200, missed
    for kind in ("FUNCTION_GRAD_COUNT", "FUNCTION_INVALID_GRADIENT", "DIRTY_LEAF",
                 "CUSTOM_VIEW_INPLACE", "LEGACY_FUNCTION"):
        assert errors[kind] >= 2, (kind, errors)


def test_every_function_clause_is_tagged(drawn):
    tagged = collections.Counter(c for _, p in drawn for _, s in p.walk() for c in s.clauses
                                 if c.startswith("FUNC-"))
    for n in range(1, 16):
        assert f"FUNC-{n}" not in NOT_GENERATED
        assert tagged[f"FUNC-{n}"] >= 3, (n, tagged)


def test_a_repro_script_defines_the_functions_it_applies(drawn, tmp_path):
    """The script carries the catalogue's source and runs on torch as the program did."""
    seed, p = drawn[0]
    script = render(p, guard_all=True)
    assert "def define(torch" in script and "F = define(torch)" in script
    assert any(f"F.{s.params['fn']}" in script for s in _calls(p))
    compile(script, "repro.py", "exec")     # valid Python; running it is test_render's


@pytest.mark.parametrize("bad, field", [
    ({"fn": "Nope"}, "params.fn"),
    ({"fn": "ScaleDirty"}, "params.fn"),              # the dirty one is dirty_function's
    ({"fn": "Gated", "_args": ["t0", "t0"]}, "args[1]"),   # Gated's third is a number
    ({"fn": "Pair"}, "params.outs"),                  # two outputs: named in params.outs
    ({"fn": "Square", "legacy": "yes"}, "params.legacy"),
])
def test_a_malformed_function_statement_is_refused_with_its_field(bad, field):
    params = {k: v for k, v in bad.items() if not k.startswith("_")}
    args = bad.get("_args", ["t0", 2.0] if bad["fn"] == "Gated" else [])
    stmt = Stmt("function", out="t1", target="t0", args=args, params=params)
    leaf = Stmt("leaf", out="t0", params={"values": [1.0], "shape": [1], "dtype": "float32",
                                         "requires_grad": True})
    with pytest.raises(ProgramError, match=field.replace("[", r"\[").replace("]", r"\]")):
        validate(Program([leaf, stmt]))


def test_the_catalogue_rows_match_the_functions():
    """Each row names a class of `define`, with the arguments and outputs it says."""
    import torch

    from conformance.lang.functions import define
    F = define(torch)
    for row in FNS:
        cls = getattr(F, row.name)
        args = [torch.ones(2, requires_grad=True) * 1 for _ in range(row.tensors)]
        args += [2.0] * row.numbers
        out = cls.apply(*args)
        assert len(out) == row.outputs if isinstance(out, tuple) else row.outputs == 1, row
        first = out[0] if isinstance(out, tuple) else out
        assert first.grad_fn.name() == row.name + "Backward", row
        assert row.clauses and all(c.startswith("FUNC-") for c in row.clauses), row


# ---- engines that get the contract wrong -------------------------------------------------
def _never_materialize(monkeypatch):
    """A fault: an output's undefined gradient reaches backward as None (FUNC-9)."""
    import refimpl.function as fn
    monkeypatch.setattr(fn.FunctionCtx, "set_materialize_grads", lambda self, v: None)
    real = fn.FunctionCtx.__init__

    def init(self, args):
        real(self, args)
        self._materialize = False
    monkeypatch.setattr(fn.FunctionCtx, "__init__", init)


class _Lying(tuple):
    """needs_input_grad whose items read True for every tensor argument, while iterating it
    (what refimpl itself does to decide whether to record) gives the truth."""
    tensors: tuple[bool, ...] = ()

    def __getitem__(self, i):
        return self.tensors[i]


def _needs_every_grad(monkeypatch):
    """A fault: ctx.needs_input_grad[i] is True for every tensor argument (FUNC-5)."""
    import refimpl.function as fn
    real = fn.FunctionCtx.__init__

    def init(self, args):
        real(self, args)
        lying = _Lying(self.needs_input_grad)
        lying.tensors = tuple(isinstance(a, fn.Tensor) for a in args)
        self.needs_input_grad = lying
    monkeypatch.setattr(fn.FunctionCtx, "__init__", init)


def _marks_ignored(monkeypatch):
    """A fault: mark_non_differentiable does nothing (FUNC-12)."""
    import refimpl.function as fn
    monkeypatch.setattr(fn.FunctionCtx, "mark_non_differentiable", lambda self, *t: None)


def _dirty_keeps_grad(monkeypatch):
    """A fault: a recorded dirty input keeps its .grad (FUNC-11)."""
    import refimpl.function as fn
    real = fn._output

    def output(node, i, o, ctx, args):
        kept = getattr(o, "_grad", None)
        got = real(node, i, o, ctx, args)
        if got is o and any(o is d for d in ctx._dirty):
            o._grad = kept
        return got
    monkeypatch.setattr(fn, "_output", output)


# never materializing also hands WithFloor's backward None for its marked output, where FUNC-12
# promises zeros: either clause is the fault's
@pytest.mark.parametrize("fault, clauses", [(_never_materialize, {"FUNC-9", "FUNC-12"}),
                                            (_needs_every_grad, {"FUNC-5"}),
                                            (_marks_ignored, {"FUNC-12"}),
                                            (_dirty_keeps_grad, {"FUNC-11"})],
                         ids=["never-materialize", "needs-every-grad", "marks-ignored",
                              "dirty-keeps-grad"])
def test_an_engine_that_gets_it_wrong_is_blamed_under_its_clause(drawn, monkeypatch, fault,
                                                                  clauses):
    primaries = blamed([p for _, p in drawn], fault, monkeypatch)
    assert primaries and primaries.most_common(1)[0][0] in clauses, primaries
