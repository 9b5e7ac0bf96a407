"""The statement kind multi_grad_hook (torch.autograd.graph.register_multi_grad_hook; spec/hook.md,
HOOK-19, HOOK-20), drawn from generator vocabulary 14 where the engine declares
multi_grad_hooks: its validation and script line, the probe of the capability, programs that
agree on torch and refimpl and never draw a pass UNSPEC-14 leaves open, and engines whose
multi-grad hooks break either clause caught with that clause as the primary one."""
from __future__ import annotations

import pytest

from conformance.engines import load_engine
from conformance.engines.torchlike import TorchLike
from conformance.executor import execute
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.judge.compare import compare
from conformance.judge.probes import probe, probe_program
from conformance.judge.verdict import attribute
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate
from conformance.reports.render import render

SEEDS = range(300)


def _hooks(p: Program) -> list[Stmt]:
    return [s for _, s in p.walk() if s.op == "multi_grad_hook"]


@pytest.fixture(scope="module")
def drawn() -> list[int]:
    return [s for s in SEEDS if _hooks(program_for_seed(s, ALL_CAPABILITIES, 20))]


def test_drawn_from_vocabulary_14_only_and_only_where_declared(drawn):
    assert len(drawn) >= 20, drawn
    modes = {s.params["mode"] for seed in drawn
             for s in _hooks(program_for_seed(seed, ALL_CAPABILITIES, 20))}
    assert modes == {"all", "any"}
    without = tuple(c for c in ALL_CAPABILITIES if c != "multi_grad_hooks")
    for seed in drawn[:10]:
        assert not _hooks(program_for_seed(seed, without, 20))
        assert not _hooks(program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=13))


def test_no_pass_between_registration_and_removal_is_one_unspec_14_leaves_open(drawn):
    """Between a hook's registration and its removal: backward passes only, none started
    from one of its tensors, and no autograd.grad (a leaf input of it is UNSPEC-14's)."""
    for seed in drawn:
        flat = [s for _, s in program_for_seed(seed, ALL_CAPABILITIES, 20).walk()]
        for i, s in enumerate(flat):
            if s.op != "multi_grad_hook":
                continue
            end = next(j for j in range(i + 1, len(flat))
                       if flat[j].op == "remove" and flat[j].target == s.out)
            between = flat[i + 1:end]
            assert not [b for b in between if b.op in ("grad", "backward_many")], seed
            assert all(b.target not in s.args for b in between if b.op == "backward"), seed
            assert any(b.op == "backward" for b in between), seed


@pytest.mark.parametrize("engine", ["refimpl", "torch"])
def test_their_programs_agree_with_torch(drawn, engine):
    oracle, other = load_engine("torch"), load_engine(engine)
    called = 0
    for seed in drawn:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        o = execute(p, oracle)
        assert compare(p, o, execute(p, other)) == [], seed
        labels = {s.out for s in _hooks(p)}
        called += sum(1 for ev in o.events for h in ev.hooks if h[0] in labels)
    assert called >= 20, called        # the hooks are called, not only registered


def _statement(**kw) -> Stmt:
    return Stmt("multi_grad_hook", **{"out": "m", "args": ["x", "a"],
                                      "params": {"mode": "all", "label": "m"}, **kw})


@pytest.mark.parametrize("bad, field", [
    (dict(args=[]), "args"), (dict(args=["x", 3]), "args"),
    (dict(params={"mode": "some"}), "params.mode"), (dict(target="x"), "target"),
    (dict(out=None), "out")])
def test_malformed_statements_name_the_field(bad, field):
    leaf = Stmt("leaf", out="x", params={"values": [1.0], "shape": [1], "dtype": "float64",
                                         "requires_grad": True})
    a = Stmt("call", out="a", args=["x", 2.0], params={"fn": "mul", "kw": {}})
    with pytest.raises(ProgramError, match=field.replace(".", r"\.")):
        validate(Program([leaf, a, _statement(**bad)]))


def test_its_script_line_registers_the_hook_with_its_mode():
    lines = render(probe_program("multi_grad_hooks")).splitlines()
    assert ("m = torch.autograd.graph.register_multi_grad_hook((x, a, o), multi('m', 'all'), "
            "mode='all')") in lines
    assert any(ln.endswith("mode='any')") for ln in lines), lines


def test_the_capability_is_probed_by_a_program():
    result = probe(load_engine("refimpl"), load_engine("torch"), "multi_grad_hooks")
    assert result.works is True, result
    broken = probe(_EveryHookCalls(__import__("torch"), "broken"), load_engine("torch"),
                   "multi_grad_hooks")
    assert broken.works is False, broken


# ---- engines that break HOOK-19 or HOOK-20 are caught, under that clause ------------------
class _EveryHookCalls(TorchLike):
    """Mode "all" calls fn from every tensor's hook, with what it has so far (HOOK-19
    broken: fn must wait for every counted tensor)."""

    def register_multi_grad_hook(self, tensors, fn, mode):
        if mode != "all":
            return super().register_multi_grad_hook(tensors, fn, mode)
        n = len(tensors)
        handles = [t.register_hook(lambda g, i=i: fn([g if j == i else None for j in range(n)]))
                   for i, t in enumerate(tensors)]
        return _Handles(handles)


class _AnyEveryTime(TorchLike):
    """Mode "any" calls fn from each hook, not once a pass (HOOK-20 broken)."""

    def register_multi_grad_hook(self, tensors, fn, mode):
        if mode != "any":
            return super().register_multi_grad_hook(tensors, fn, mode)
        return _Handles([t.register_hook(lambda g: fn(g)) for t in tensors if t.requires_grad])


class _Handles:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()


@pytest.mark.parametrize("broken, clause", [(_EveryHookCalls, "HOOK-19"),
                                            (_AnyEveryTime, "HOOK-20")])
def test_a_broken_multi_grad_hook_is_caught_under_its_clause(drawn, broken, clause):
    import torch
    oracle, engine = load_engine("torch"), broken(torch, "broken")
    primaries = []
    for seed in drawn:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        o, e = execute(p, oracle), execute(p, engine)
        found = compare(p, o, e)
        if found:
            primaries.append(attribute(p, o, e, found)[0].primary)
    assert len(primaries) >= 3, primaries
    assert set(primaries) == {clause}, primaries


class _NeverRemoved(TorchLike):
    """Removing a multi-grad hook's handle does nothing (HOOK-6 broken)."""

    def register_multi_grad_hook(self, tensors, fn, mode):
        super().register_multi_grad_hook(tensors, fn, mode)    # registered for good
        return _Handles([])


def test_a_hook_called_after_its_removal_is_cited_under_hook_6():
    import torch

    from conformance.judge.probes import probe_program
    p = probe_program("multi_grad_hooks")
    o, e = execute(p, load_engine("torch")), execute(p, _NeverRemoved(torch, "broken"))
    found = attribute(p, o, e, compare(p, o, e))
    assert found and {d.primary for d in found} == {"HOOK-6"}, found
