"""Generator vocabulary 21 draws the tensor `.grad` holds (kinds/grad_tensor.py,
gen/grad_tensor.py): `h = x.grad`, writes into it, passes that add into it, `x.grad is h`, a
tensor assigned to `.grad` and kept, and the observable grad_layout. Its programs agree on torch
and refimpl, and an engine that gets the `.grad` tensor wrong is told so under GRAD-2, GRAD-3 or
GRAD-4."""
from __future__ import annotations

import importlib

import pytest

from conformance.engines import load_engine
from conformance.engines.torchlike import TorchLike
from conformance.gen.vocabulary import NOT_GENERATED
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate
from tests.conformance.blame import assert_drawn_only_where_declared, blamed, drawn_with

SEEDS = range(400)


@pytest.fixture(scope="module")
def drawn() -> list[tuple[int, Program]]:
    return drawn_with("grad_ref", SEEDS)


@pytest.fixture(scope="module")
def assigned() -> list[Program]:
    """Programs that assign .grad a tensor they keep using (set_grad, GRAD-3)."""
    return [p for _, p in drawn_with("set_grad", SEEDS)
            if any(s.op == "set_grad" and "GRAD-3" in s.clauses for _, s in p.walk())]


@pytest.fixture(scope="module")
def layouts() -> list[Program]:
    """Programs that look at a .grad's layout in an observe statement (not only the sweep)."""
    return [p for _, p in drawn_with("observe", range(600))
            if any(s.op == "observe" and s.params.get("what") == "grad_layout"
                   for _, s in p.walk())]


def test_grad_ref_is_drawn_from_vocabulary_21_where_declared(drawn):
    assert len(drawn) >= 12, len(drawn)         # 16 of seeds 0-399
    assert_drawn_only_where_declared(drawn, "grad_ref", "grad_tensor", since=21)
    for cid in ("GRAD-1", "GRAD-2", "GRAD-3", "GRAD-4"):
        assert cid not in NOT_GENERATED
    ops = {s.op for _, p in drawn for _, s in p.walk()}
    assert {"grad_ref", "grad_is", "set_grad"} <= ops, ops


def test_torch_and_refimpl_agree_on_them(drawn, assigned, layouts):
    torch, ref = load_engine("torch"), load_engine("refimpl")
    assert len(assigned) >= 5 and len(layouts) >= 15, (len(assigned), len(layouts))  # 7, 22
    for p in [p for _, p in drawn] + assigned + layouts:
        assert compare(p, execute(p, torch), execute(p, ref)) == [], p.seed


def test_a_malformed_statement_is_refused_with_its_field():
    leaf = Stmt("leaf", out="t0", params={"values": [1.0], "shape": [1], "dtype": "float32",
                                         "requires_grad": True})
    with pytest.raises(ProgramError, match="out"):
        validate(Program([leaf, Stmt("grad_ref", target="t0")]))
    for args in ([], [1.0], ["t0", "t0"]):
        with pytest.raises(ProgramError, match="args"):
            validate(Program([leaf, Stmt("grad_is", target="t0", args=args)]))


def _unbound() -> Program:
    return Program([Stmt("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2],
                                                 "dtype": "float32", "requires_grad": True}),
                    Stmt("grad_ref", out="h", target="x", clauses=["GRAD-3"]),
                    Stmt("observe", target="h", params={"what": "value"})])


def test_an_unbound_grad_is_recorded_not_raised():
    """`h = x.grad` where x.grad is None records "None" and leaves h unbound: what names h is
    skipped; the run goes on. A non-leaf's records "non-leaf"."""
    events = execute(_unbound(), load_engine("refimpl")).events
    assert [(e.status, e.value) for e in events] == [("ok", None), ("ok", "None"),
                                                     ("skipped", None)]
    p = Program([*_unbound().statements[:1],
                 Stmt("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
                 Stmt("grad_ref", out="h", target="y")])
    assert execute(p, load_engine("refimpl")).events[-1].value == "non-leaf"


class _GradOfNone(TorchLike):
    """Faults: a leaf with no .grad reads as having one (zeros), or reading it raises."""

    def __init__(self, raises: bool):
        import torch
        super().__init__(torch, "grad-of-none")
        self.raises = raises

    def get_grad(self, t):
        g = super().get_grad(t)
        if g is None and self.raises:
            raise RuntimeError("cannot read .grad")
        return g if g is not None or not self.is_leaf(t) else t.detach() * 0


@pytest.mark.parametrize("raises", [False, True])
def test_an_engine_apart_on_whether_there_is_a_grad_diverges_at_the_binding(raises):
    """Both engines without a .grad agree (neither raised anything to compare as OTHER); an
    engine with a .grad where torch has none, or one that raises reading it, diverges at the
    grad_ref statement and cites its clause."""
    p, torch_engine = _unbound(), load_engine("torch")
    o = execute(p, torch_engine)
    assert compare(p, o, execute(p, load_engine("refimpl"))) == []
    found = compare(p, o, execute(p, _GradOfNone(raises)))
    assert [(d.path, d.what) for d in found] == [("1", "outcome" if raises else "value")]
    assert found[0].clauses[0] == "GRAD-3"


# ---- engines that get the .grad tensor wrong ---------------------------------------------
def _replaces(monkeypatch):
    """A fault: a backward without create_graph replaces .grad by a new tensor holding the sum
    instead of adding into it (GRAD-4)."""
    node = importlib.import_module("refimpl.node")
    real = node._accumulate

    def accumulate(n, grad):
        leaf = n.variable
        if (leaf._grad is not None and grad is not None and leaf._requires_grad
                and not isinstance(grad, leaf.__class__)):
            leaf._grad = leaf._new_like(leaf._grad._data + grad)
            return ()
        return real(n, grad)
    monkeypatch.setattr(node, "_accumulate", accumulate)


def _copies(monkeypatch):
    """A fault: assigning .grad stores a copy of the tensor (GRAD-3)."""
    from refimpl import Tensor
    prop = Tensor.grad
    monkeypatch.setattr(Tensor, "grad", property(
        prop.fget, lambda t, v: prop.fset(t, None if v is None else v.detach().clone()),
        prop.fdel))


def _row_major(monkeypatch):
    """A fault: every first .grad is row-major, whatever the leaf's layout (GRAD-2)."""
    node = importlib.import_module("refimpl.node")
    monkeypatch.setattr(node, "_grad_memory",
                        lambda leaf, dtype: leaf._be.xp.zeros(leaf._data.shape, dtype=dtype))


@pytest.mark.parametrize("fault, clauses", [(_replaces, {"GRAD-4", "GRAD-3"}),
                                            (_copies, {"GRAD-3", "GRAD-4"})],
                         ids=["replaces", "copies"])
def test_an_engine_that_gets_the_grad_tensor_wrong_is_blamed(drawn, assigned, monkeypatch,
                                                             fault, clauses):
    primaries = blamed([p for _, p in drawn] + assigned, fault, monkeypatch)
    assert primaries and primaries.most_common(1)[0][0] in clauses, primaries


def test_an_engine_that_ignores_the_leaf_layout_is_blamed_under_grad_2(layouts, monkeypatch):
    primaries = blamed(layouts, _row_major, monkeypatch)
    assert primaries and primaries.most_common(1)[0][0] == "GRAD-2", primaries
