"""create_graph in the program language (conformance/kinds/backward.py): a program whose
backward, backward_many and grad statements set params.create_graph runs on torch and on refimpl
with the same trace (DOUBLE-1, DOUBLE-2, DOUBLE-3), renders as code that sets it, reaches the
engine only when set, and is rejected when the field is not a bool. The generator never draws
the field (tests/conformance/test_generator_golden.py keeps vocabularies 1-3 unchanged)."""
import pytest

import refimpl
from conformance.engines import load_engine
from conformance.executor import execute
from conformance.judge.compare import compare
from conformance.kinds.registry import KINDS
from conformance.lang.program import Program, ProgramError
from conformance.lang.program import Stmt as S
from conformance.lang.validate import validate
from conformance.reports.render import render


def _leaf(out, values, dtype="float64"):
    return S("leaf", out=out, params={"values": values, "shape": [len(values)], "dtype": dtype,
                                      "requires_grad": True})


def _call(out, fn, *args):
    return S("call", out=out, args=list(args), params={"fn": fn, "kw": {}})


def _obs(target, what):
    return S("observe", target=target, params={"what": what})


def program(dtype="float64") -> Program:
    return Program([
        _leaf("x", [0.5, 1.5], dtype), _leaf("w", [2.0, -1.0], dtype),
        _call("h", "sin", "x"), _call("m", "mul", "h", "w"), _call("s", "sum", "m"),
        S("grad", params={"outputs": ["s"], "inputs": ["x", "w"], "outs": ["gx", "gw"],
                          "create_graph": True}),
        _obs("gx", "requires_grad"), _obs("gx", "value"),
        _call("p", "mul", "gx", "gx"), _call("q", "sum", "p"),
        S("backward", target="q", params={"create_graph": True}),
        _obs("x", "grad"), _obs("w", "grad"), _obs("x", "requires_grad"),
        _call("e", "exp", "x"), _call("t", "sum", "e"), _call("u", "tanh", "w"),
        _call("v", "sum", "u"),
        S("backward_many", params={"tensors": ["t", "v"], "create_graph": True}),
        _obs("x", "grad"), _obs("w", "grad"),
    ])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_programs_with_create_graph_agree_with_torch(dtype):
    p = program(dtype)
    validate(p)
    torch_engine, ref = load_engine("torch"), load_engine("refimpl")
    o, e = execute(p, torch_engine), execute(p, ref)
    assert [ev.status for ev in o.events] == ["ok"] * len(p.statements)
    assert compare(p, o, e) == []
    grads = [ev.value for ev in o.events if ev.value is not None]
    assert any(v is True for v in grads)  # gx is recorded (DOUBLE-1)


def test_create_graph_renders_only_where_set():
    code = render(program())
    assert code.count("create_graph=True") == 3
    assert "create_graph" not in render(Program([_leaf("x", [1.0]), _call("s", "sum", "x"),
                                                 S("backward", target="s")]))


def test_the_engine_is_called_without_create_graph_unless_it_is_set():
    """An adapter whose methods predate the field (conformance/engines/base.py) still runs
    every program that does not set it."""
    calls = []

    class Recording:
        def backward(self, t, gradient, retain_graph, inputs, **kw):
            calls.append(kw)
            t.backward(gradient=gradient, retain_graph=retain_graph, **kw)

    class Executor:  # what a kind's run reads of the executor
        e, env = Recording(), {"s": refimpl.tensor([1.0, 2.0], requires_grad=True).exp().sum()}

    for params in ({"retain_graph": True}, {"create_graph": True}):
        s = S("backward", target="s", params=params)
        KINDS["backward"].check(s, "0")
        KINDS["backward"].run(Executor(), s, None, "0")
    assert calls == [{}, {"create_graph": True}]


def test_create_graph_must_be_a_bool():
    bad = Program([_leaf("x", [1.0]), _call("s", "sum", "x"),
                   S("backward", target="s", params={"create_graph": "yes"})])
    with pytest.raises(ProgramError, match="create_graph"):
        validate(bad)
