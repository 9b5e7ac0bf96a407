"""`grad_dtype` (spec/grad.md, GRAD-7; LEAF-9, LEAF-13) and the setter `t.requires_grad = flag`
(spec/leaf.md, LEAF-11, LEAF-15), from generator vocabulary 16 where the engine declares the
capabilities grad_dtype and requires_grad_setter: the statement kind set_grad_dtype and the
observable grad_dtype (never swept), the setter form of requires_grad_, their validation and
script lines, the probes, programs that agree on torch and refimpl, and engines that break
either caught under the clause they break."""
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

SEEDS = range(200)


def _drawn(p: Program) -> dict[str, list[Stmt]]:
    """The vocabulary-16 statements of p: set_grad_dtype, the setter, grad_dtype looks."""
    out: dict[str, list[Stmt]] = {"set": [], "setter": [], "look": []}
    for _, s in p.walk():
        if s.op == "set_grad_dtype":
            out["set"].append(s)
        elif s.op == "requires_grad_" and s.params.get("setter"):
            out["setter"].append(s)
        elif s.op == "observe" and s.params["what"] == "grad_dtype":
            out["look"].append(s)
        elif s.op == "sweep":       # never swept: it raises on a non-leaf (kinds/observe.py)
            assert all(i[1] != "grad_dtype" for i in s.params["of"])
    return out


@pytest.fixture(scope="module")
def drawn() -> dict[int, dict[str, list[Stmt]]]:
    return {s: _drawn(program_for_seed(s, ALL_CAPABILITIES, 20)) for s in SEEDS}


def test_drawn_from_vocabulary_16_only_and_only_where_declared(drawn):
    setters = [seed for seed, d in drawn.items() if d["setter"]]
    looks = [seed for seed, d in drawn.items() if d["look"]]
    assert len(setters) >= 8, setters
    assert len(looks) >= 4, looks
    sets = [s for d in drawn.values() for s in d["set"]]
    assert len({seed for seed, d in drawn.items() if d["set"]}) >= 8, sets
    # leaves are mostly float64: the dtype that casts their gradient is mostly float32
    assert {None, "float32"} <= {s.params["dtype"] for s in sets}
    for cap, key, seeds in (("grad_dtype", "set", [s for s, d in drawn.items() if d["set"]]),
                            ("grad_dtype", "look", looks),
                            ("requires_grad_setter", "setter", setters)):
        without = tuple(c for c in ALL_CAPABILITIES if c != cap)
        for seed in seeds[:8]:
            assert not _drawn(program_for_seed(seed, without, 20))[key], seed
            old = _drawn(program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=15))
            assert old == {"set": [], "setter": [], "look": []}, seed


def test_grad_dtype_is_looked_at_on_leaves_only(drawn):
    """A non-leaf has no grad_dtype (torch raises): the model's leaves only, and the program
    runs on torch without an error of no spec kind there."""
    oracle = load_engine("torch")
    for seed in [s for s, d in drawn.items() if d["look"]]:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        looks = {id(s) for s in _drawn(p)["look"]}
        trace = execute(p, oracle).by_path()
        for path, s in p.walk():
            if id(s) in looks and path in trace:
                assert trace[path].error != "OTHER", (seed, path)


@pytest.mark.parametrize("engine", ["refimpl", "torch"])
def test_their_programs_agree_with_torch(drawn, engine):
    oracle, other = load_engine("torch"), load_engine(engine)
    seeds = [s for s, d in drawn.items() if d["look"] or d["setter"]]
    for seed in seeds:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        assert compare(p, execute(p, oracle), execute(p, other)) == [], seed


def _set(**kw) -> Stmt:
    return Stmt("set_grad_dtype", **{"target": "x", "params": {"dtype": "float32"}, **kw})


_LEAF = Stmt("leaf", out="x", params={"values": [1.0], "shape": [1], "dtype": "float64",
                                      "requires_grad": True})


@pytest.mark.parametrize("bad, field", [
    (dict(params={"dtype": "int64"}), "params.dtype"), (dict(params={}), "params.dtype"),
    (dict(params={"dtype": 3}), "params.dtype"), (dict(target=None), "target")])
def test_malformed_set_grad_dtype_names_the_field(bad, field):
    with pytest.raises(ProgramError, match=field.replace(".", r"\.")):
        validate(Program([_LEAF, _set(**bad)]))


def test_a_setter_flag_that_is_not_a_bool_is_refused():
    with pytest.raises(ProgramError, match=r"params\.setter"):
        validate(Program([_LEAF, Stmt("requires_grad_", target="x",
                                      params={"value": True, "setter": "yes"})]))


def test_script_lines_are_torch_code():
    lines = render(probe_program("grad_dtype")).splitlines()
    assert "w.grad_dtype = torch.float32" in lines and "w.grad_dtype = None" in lines
    lines = render(probe_program("requires_grad_setter")).splitlines()
    assert "w.requires_grad = True" in lines and "y.requires_grad = True" in lines


def test_a_statement_needs_the_capability_of_its_form():
    p = Program([_LEAF, Stmt("requires_grad_", target="x", params={"value": False,
                                                                   "setter": True}),
                 _set(), Stmt("observe", target="x", params={"what": "grad_dtype"})])
    assert {"requires_grad_setter", "grad_dtype"} <= set(p.capabilities())


@pytest.mark.parametrize("capability", ["grad_dtype", "requires_grad_setter"])
def test_the_capabilities_are_probed_by_a_program(capability):
    assert probe(load_engine("refimpl"), load_engine("torch"), capability).works is True
    broken = probe(_NoGradDtype(__import__("torch"), "broken") if capability == "grad_dtype"
                   else _SetterIsRequiresGrad(__import__("torch"), "broken"),
                   load_engine("torch"), capability)
    assert broken.works is False, broken


# ---- engines that break GRAD-7 or LEAF-11 are caught, under that clause ------------------
class _NoGradDtype(TorchLike):
    """grad_dtype reads None where nothing was set, not the tensor's dtype (GRAD-7 broken)."""

    def grad_dtype(self, t):
        d = t.grad_dtype
        return None if d is None or d == t.dtype else str(d).rsplit(".", 1)[-1]


class _SetterIsRequiresGrad(TorchLike):
    """The setter behaves as requires_grad_(): a non-leaf accepts True (LEAF-11 broken)."""

    def set_requires_grad(self, t, value):
        t.requires_grad_(value)


@pytest.mark.parametrize("broken, key, clause", [(_NoGradDtype, "look", "GRAD-7"),
                                                 (_SetterIsRequiresGrad, "setter", "LEAF-11")])
def test_a_broken_engine_is_caught_under_its_clause(drawn, broken, key, clause):
    import torch
    oracle, engine = load_engine("torch"), broken(torch, "broken")
    primaries = []
    # the setter on a non-leaf is an error move's, in about 1 program of 100
    seeds = [s for s, d in drawn.items() if d[key]] if key == "look" else [
        s for s in range(1000) if _drawn(program_for_seed(s, ALL_CAPABILITIES, 20))[key]]
    for seed in seeds:
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        o, e = execute(p, oracle), execute(p, engine)
        found = compare(p, o, e)
        if found:
            primaries.append(attribute(p, o, e, found)[0].primary)
    assert len(primaries) >= 2, primaries
    assert clause in primaries, primaries
