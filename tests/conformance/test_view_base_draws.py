"""Generator vocabulary 21 ends programs with `t._base is b` (the statement kind base_is,
kinds/aliases.py) where the engine declares view_base (VIEW-1): of views, whose base is the
tensor the first view op of their chain was applied to, and of a detach(), which is no view,
never of what a reshape made or views (a reshape may copy, UNSPEC-3). Its programs agree on
torch and refimpl, and an engine that gives a view of a view the wrong base is told so under
VIEW-1."""
from __future__ import annotations

import copy
import importlib

import pytest

from conformance.engines import load_engine
from conformance.gen.vocabulary import NOT_GENERATED
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate
from tests.conformance.blame import assert_drawn_only_where_declared, blamed, drawn_with


@pytest.fixture(scope="module")
def drawn() -> list[tuple[int, Program]]:
    return drawn_with("base_is", range(600))


def test_base_is_is_drawn_from_vocabulary_21_where_declared(drawn):
    assert len(drawn) >= 200, len(drawn)
    assert_drawn_only_where_declared(drawn, "base_is", "view_base", since=21)
    assert "VIEW-1" not in NOT_GENERATED
    forms = {s.args[0] is None for _, p in drawn for _, s in p.walk() if s.op == "base_is"}
    assert forms == {True, False}               # views and tensors that are none


def test_torch_and_refimpl_agree_on_them(drawn):
    torch, ref = load_engine("torch"), load_engine("refimpl")
    for seed, p in drawn:
        oracle = execute(p, torch)
        assert all(e.value is True for (_, s), e in zip(p.walk(), oracle.events, strict=True)
                   if s.op == "base_is"), seed
        assert compare(p, oracle, execute(p, ref)) == [], seed


def test_a_malformed_statement_is_refused_with_its_field():
    leaf = Stmt("leaf", out="t0", params={"values": [1.0], "shape": [1], "dtype": "float32",
                                         "requires_grad": False})
    for args in ([], [1.0], ["t0", "t0"]):
        with pytest.raises(ProgramError, match="args"):
            validate(Program([leaf, Stmt("base_is", target="t0", args=args)]))


def test_what_a_reshape_made_has_an_open_base():
    """UNSPEC-3: a reshape may copy, so the base of what it made, and of views of that, is
    not compared; a view's base elsewhere is."""
    torch = load_engine("torch")
    p = Program([Stmt("leaf", out="x", params={"values": [1.0, 2.0, 3.0, 4.0], "shape": [4],
                                              "dtype": "float32", "requires_grad": False}),
                 Stmt("view", out="r", target="x", params={"fn": "reshape",
                                                          "kw": {"shape": [2, 2]}}),
                 Stmt("view", out="v", target="r", params={"fn": "t", "kw": {}}),
                 Stmt("base_is", target="v", args=["x"]),
                 Stmt("view", out="w", target="x", params={"fn": "view", "kw": {"shape": [2, 2]}}),
                 Stmt("base_is", target="w", args=["x"])])
    oracle = execute(p, torch)
    engine = copy.deepcopy(oracle)
    engine.events[3].value = False          # an engine whose reshape copied
    assert compare(p, oracle, engine) == []
    engine.events[5].value = False
    assert [d.path for d in compare(p, oracle, engine)] == ["5"]


def test_a_gradient_named_as_a_base_or_viewed_under_its_own_name_is_open():
    """UNSPEC-3: a gradient may be a view, or the very tensor it came from: `v._base is g` and
    a view bound to a gradient's own name (`g = g[0:]`) are not compared."""
    torch = load_engine("torch")
    p = Program([Stmt("leaf", out="x", params={"values": [1.0, 2.0], "shape": [2],
                                              "dtype": "float32", "requires_grad": True}),
                 Stmt("call", out="s", args=["x"], params={"fn": "sum", "kw": {}}),
                 Stmt("grad", params={"outputs": ["s"], "inputs": ["x"], "grad_outputs": None,
                                      "retain_graph": None, "allow_unused": False,
                                      "outs": ["g"]}),
                 Stmt("view", out="v", target="x", params={"fn": "view", "kw": {"shape": [2]}}),
                 Stmt("base_is", target="v", args=["g"]),
                 Stmt("getitem", out="g", target="g", params={"index": [{"slice": [0, None,
                                                                                 None]}]}),
                 Stmt("base_is", target="g", args=[None])])
    oracle = execute(p, torch)
    engine = copy.deepcopy(oracle)
    engine.events[4].value = not oracle.events[4].value
    engine.events[6].value = not oracle.events[6].value
    assert compare(p, oracle, engine) == []


def _operand_as_base(monkeypatch):
    """A fault: a view's base is the tensor the view op was applied to, a view included."""
    for name in ("refimpl.ops.views", "refimpl.ops.split"):
        module = importlib.import_module(name)
        real = module.make_view

        def make_view(a, *args, _real=real):
            out = _real(a, *args)
            if out._base is not None:
                out._base = a
            return out
        monkeypatch.setattr(module, "make_view", make_view)


def test_an_engine_that_gives_a_view_of_a_view_the_wrong_base_is_blamed(drawn, monkeypatch):
    primaries = blamed([p for _, p in drawn], _operand_as_base, monkeypatch)
    assert primaries and primaries.most_common(1)[0][0] == "VIEW-1", primaries
