"""Generator vocabulary 18 draws saved-tensor hooks (the block kind saved_hooks, spec/saved.md):
forward statements whose nodes pack what they save, a write to a packed value and the passes
after them (kinds/saved.py), and an unpack hook that returns no tensor (gen/errors_saved.py);
vocabulary 20 nests a block in another (SAVED-4), applies custom Functions inside one
(SAVED-11) and draws disable_saved_tensors_hooks blocks (SAVED-10).
Its programs agree on torch and refimpl, the model predicts every outcome, and an engine that
gets saved-tensor hooks wrong is told so under a SAVED clause."""
from __future__ import annotations

import collections
import contextlib

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
GENERATED = ("SAVED-1", "SAVED-2", "SAVED-3", "SAVED-4", "SAVED-5", "SAVED-6", "SAVED-7",
             "SAVED-9", "SAVED-10", "SAVED-11", "SAVED-12")


def _blocks(p: Program) -> list[Stmt]:
    return [s for _, s in p.walk() if s.op == "saved_hooks"]


@pytest.fixture(scope="module")
def drawn() -> list[tuple[int, Program]]:
    return [(seed, p) for seed in SEEDS
            if _blocks(p := program_for_seed(seed, ALL_CAPABILITIES, 20))]


def test_blocks_are_drawn_from_vocabulary_18_where_declared(drawn):
    assert len(drawn) >= 60, len(drawn)         # 93 of seeds 0-599
    packs = collections.Counter(s.params["pack"] for _, p in drawn for s in _blocks(p))
    assert set(packs) == {"keep", "copy", "key", "save_on_cpu"}, packs
    without = tuple(c for c in ALL_CAPABILITIES if c != "saved_tensors_hooks")
    for seed, p in drawn[:30]:
        validate(p)
        assert not _blocks(program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=17))
        assert not _blocks(program_for_seed(seed, without, 20))
    nested = 0
    for _, p in drawn:      # forward statements only in a block's body, and blocks two deep
        for s in _blocks(p):
            assert {b.op for b in s.body} <= {"leaf", "call", "inplace", "view", "getitem",
                                              "setitem", "observe", "function",
                                              "saved_hooks"}, s.body
            for b in s.body:
                nested += b.op == "saved_hooks"
                assert b.op != "saved_hooks" or "saved_hooks" not in {c.op for c in b.body}
    assert nested >= 5, nested


def test_disable_blocks_are_drawn_outside_hooks_with_forward_statements():
    found = 0
    for seed in SEEDS:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        for path, s in p.walk():
            if s.op == "disable_saved_hooks":
                found += 1
                assert {b.op for b in s.body} <= {"leaf", "call", "inplace", "view", "getitem",
                                                  "setitem", "observe", "function"}, s.body
                assert not any(path.startswith(q + ".") for q, o in p.walk()
                               if o.op == "saved_hooks"), (seed, path)
                assert not any(o.op == "disable_saved_hooks" for o in
                               program_for_seed(seed, ALL_CAPABILITIES, 20,
                                                vocabulary=19).statements)
    assert found >= 20, found


def test_torch_and_refimpl_agree_and_the_model_predicts_each_outcome(drawn):
    torch, ref = load_engine("torch"), load_engine("refimpl")
    packs = unpacks = 0
    errors: collections.Counter[str] = collections.Counter()
    for seed, p in drawn:
        oracle = execute(p, torch)
        for (path, _), ev in zip(p.walk(), oracle.events, strict=True):
            got = ev.error if ev.status == "error" else None
            assert got == p.meta["expect"].get(path), (seed, path, got)
            errors[got or "ok"] += 1
            packs += sum(str(c[0]).endswith(".pack") for c in ev.hooks)
            unpacks += sum(str(c[0]).endswith(".unpack") for c in ev.hooks)
        assert compare(p, oracle, execute(p, ref)) == [], seed
    # seeds 0-599: 104 packs, 61 unpacks, 20 UNPACK_NOT_TENSOR
    assert packs >= 60 and unpacks >= 35 and errors["UNPACK_NOT_TENSOR"] >= 10, (
        packs, unpacks, errors)


def test_the_generated_clauses_are_tagged_and_the_rest_say_why_not(drawn):
    tagged = collections.Counter(c for _, p in drawn for _, s in p.walk() for c in s.clauses
                                 if c.startswith("SAVED-"))
    for clause in GENERATED:
        assert clause not in NOT_GENERATED
        assert tagged[clause] >= 2, (clause, tagged)
    assert "SAVED-8" in NOT_GENERATED


class _Unhooked:
    """A fault: saved-tensor hooks are accepted and never called (SAVED-1)."""

    def __call__(self, engine):
        engine.saved_tensors_hooks = lambda pack, unpack: contextlib.nullcontext()
        return engine


class _VersionChecked:
    """A fault: a packed value is version-checked as an unpacked one is (SAVED-6)."""

    def __call__(self, engine):
        real = engine.saved_tensors_hooks

        def hooks(pack, unpack):
            def checked_pack(t):
                return pack(t), t, t._version

            def checked_unpack(p):
                if p[1]._version != p[2]:
                    raise RuntimeError("one of the variables needed for gradient computation "
                                       "has been modified by an inplace operation")
                return unpack(p[0])
            return real(checked_pack, checked_unpack)
        engine.saved_tensors_hooks = hooks
        return engine


class _UnpackIgnored:
    """A fault: backward computes with the tensor pack was given, not what unpack returns
    (SAVED-3)."""

    def __call__(self, engine):
        real = engine.saved_tensors_hooks

        def hooks(pack, unpack):
            return real(lambda t: (pack(t), t), lambda p: (unpack(p[0]), p[1])[1])
        engine.saved_tensors_hooks = hooks
        return engine


class _PackedCopy:
    """A fault: pack gets a copy of the saved tensor, so that a write after the pack does not
    reach what a hook that keeps its argument kept (SAVED-1; seen in gradients: SAVED-6)."""

    def __call__(self, engine):
        real = engine.saved_tensors_hooks

        def hooks(pack, unpack):
            return real(lambda t: pack(engine.clone(t)), unpack)
        engine.saved_tensors_hooks = hooks
        return engine


class _OuterWins:
    """A fault: a pair registered inside another is ignored, the outer one packs (SAVED-4)."""

    def __call__(self, engine):
        real, depth = engine.saved_tensors_hooks, []

        @contextlib.contextmanager
        def hooks(pack, unpack):
            if depth:
                yield
                return
            depth.append(1)
            try:
                with real(pack, unpack):
                    yield
            finally:
                depth.pop()
        engine.saved_tensors_hooks = hooks
        return engine


class _FunctionsUnhooked:
    """A fault: what a custom Function saves with ctx.save_for_backward skips the hooks
    (SAVED-11)."""

    def __init__(self):
        self.patch = None

    def __call__(self, engine):
        import types

        import refimpl.function as fn
        self.patch = (fn, "saved_hooks", types.SimpleNamespace(hook=lambda v, t, **k: v))
        return engine


@pytest.mark.parametrize("fault, clauses", [(_Unhooked(), {"SAVED-1"}),
                                            (_OuterWins(), {"SAVED-4"}),
                                            (_FunctionsUnhooked(), {"SAVED-11"}),
                                            (_VersionChecked(), {"SAVED-6"}),
                                            (_UnpackIgnored(), {"SAVED-3"}),
                                            (_PackedCopy(), {"SAVED-6"})],
                         ids=["unhooked", "outer-wins", "functions-unhooked", "version-checked",
                              "unpack-ignored", "packed-copy"])
def test_an_engine_that_gets_it_wrong_is_blamed_under_its_clause(drawn, fault, clauses,
                                                                  monkeypatch):
    torch = load_engine("torch")
    broken = fault(load_engine("refimpl"))
    if getattr(fault, "patch", None):
        monkeypatch.setattr(*fault.patch)
    primaries: collections.Counter[str] = collections.Counter()
    for _, p in drawn:
        found = compare(p, execute(p, torch), execute(p, broken))
        if found:
            primaries[", ".join(verdict(found)[0])] += 1
    assert primaries and primaries.most_common(1)[0][0] in clauses, primaries


def test_the_statement_is_checked_rendered_and_needs_its_methods():
    kind = KINDS["saved_hooks"]
    ok = Stmt("saved_hooks", params={"pack": "key", "label": "s1"})
    kind.check(ok, "0")
    assert kind.render(ok, "0") == [
        "with torch.autograd.graph.saved_tensors_hooks(*saved_hooks('s1', 'key', 'return')):"]
    assert kind.hook_labels(ok) == ["s1.pack", "s1.unpack"]
    cpu = Stmt("saved_hooks", params={"pack": "save_on_cpu"})
    kind.check(cpu, "0")
    assert kind.render(cpu, "0") == ["with torch.autograd.graph.save_on_cpu():"]
    assert kind.hook_labels(cpu) == []
    for bad in ({"pack": "steal", "label": "s1"}, {"pack": "keep"},
                {"pack": "keep", "label": "s1", "unpack": "drop"},
                {"pack": "save_on_cpu", "label": "s1"}):
        with pytest.raises(ProgramError):
            kind.check(Stmt("saved_hooks", params=bad), "0")

    class NoHooks:
        pass
    assert unimplemented(NoHooks(), {"saved_tensors_hooks"}) == [
        "saved_tensors_hooks: saved_tensors_hooks", "saved_tensors_hooks: save_on_cpu",
        "saved_tensors_hooks: clone", "saved_tensors_hooks: disable_saved_tensors_hooks"]
