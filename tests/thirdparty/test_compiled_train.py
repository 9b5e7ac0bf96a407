"""torch.compile of training steps and its dynamic-shapes variant
(conformance/engines/compiled_train.py), and the training-step programs
(conformance/gen/training.py).

Compiles are slow: each test runs a few small programs, on the "eager" backend (dynamo alone)
unless it is about another. Skipped where torch._dynamo cannot compile.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("torch._dynamo", reason="this torch has no torch._dynamo")

from conformance.engines import load_engine  # noqa: E402
from conformance.engines.compiled_train import (  # noqa: E402
    DYNAMIC,
    TRAIN,
    DynamicWarmTorch,
    StepCompiledTorch,
)
from conformance.engines.torchlike import TorchLike, torch_engine  # noqa: E402
from conformance.gen.training import program  # noqa: E402
from conformance.judge.compare import compare  # noqa: E402
from conformance.judge.executor import execute  # noqa: E402
from conformance.judge.probes import probe  # noqa: E402
from conformance.judge.segments import split  # noqa: E402
from conformance.lang.program import Program, Stmt  # noqa: E402
from conformance.lang.validate import validate  # noqa: E402


@pytest.fixture(scope="module")
def train():
    try:
        e = load_engine("torch-compile-train-eager")
        execute(program(0, e.capabilities), e)
    except Exception as exc:  # noqa: BLE001 - no working compiler here: skip, say why
        pytest.skip(f"torch.compile does not work here: {type(exc).__name__}: {exc}")
    return e


def test_the_engines_load_with_step_granularity_and_claim_what_steps_need():
    for names, cls in ((TRAIN, StepCompiledTorch), (DYNAMIC, DynamicWarmTorch)):
        for name, backend in names.items():
            e = load_engine(name)
            assert type(e) is cls and e.name == name and e.backend == backend
            assert e.granularity == "step" and backend in e.version
            assert {"grad_tensor", "nn_module", "hooks"} <= e.capabilities
            assert "grad_fn" not in e.capabilities
            twin = e.eager()
            assert type(twin) is TorchLike and twin.granularity == "statement"
            assert twin.capabilities == e.capabilities


def test_training_programs_are_steps_the_engines_run_as_units():
    caps = load_engine("torch-compile-train-eager").capabilities
    for seed in range(6):
        p = program(seed, caps)
        validate(p)
        assert p.to_json() == program(seed, caps).to_json()        # a seed draws one program
        ops = [s.op for s in p.statements]
        steps = ops.count("backward")
        assert steps in (2, 3) and ops.count("mode") == steps
        units = split(p.statements, "step")
        # each step's unit ends with its update block; the last unit is the observations
        assert [p.statements[g.last].op for g in units[:steps]] == ["mode"] * steps
        assert all(s.op == "observe" for i in range(units[-1].first, units[-1].last + 1)
                   for s in [p.statements[i]])
    # without a .grad bound to a name there is no update: each step ends with `.grad = None`
    bare = program(0, {"core", "grad_modes"})
    validate(bare)
    assert "mode" not in {s.op for s in bare.statements}
    assert [s.op for s in bare.statements if s.op in ("backward", "set_grad")][:2] == \
        ["backward", "set_grad"]


def test_claimed_capabilities_pass_their_probes(train):
    oracle = torch_engine()
    for cap in ("grad_tensor", "nn_module", "hooks", "retain_grad"):
        result = probe(train, oracle, cap)
        assert result.verdict == "ok", str(result)


def test_training_steps_compiled_agree_with_eager(train):
    oracle = torch_engine()
    for seed in range(3):
        p = program(seed, train.capabilities)
        a, b = execute(p, train), execute(p, oracle)
        assert [ev.status for ev in a.events] == [ev.status for ev in b.events]
        assert not compare(p, b, a), seed
        assert {ev.segment for ev in a.events} == {g.id for g in split(p.statements, "step")}


def test_aot_eager_runs_a_training_step():
    e = load_engine("torch-compile-train-aot-eager")
    p = program(1, e.capabilities)
    assert not compare(p, execute(p, torch_engine()), execute(p, e))


def _leaf(out, values, shape, rg=True):
    return Stmt("leaf", out=out, params={"values": values, "shape": shape, "dtype": "float32",
                                         "requires_grad": rg})


def _call(out, fn, *args):
    return Stmt("call", out=out, args=list(args), params={"fn": fn, "kw": {}})


def _see(target, what):
    return Stmt("observe", target=target, params={"what": what})


# Two steps of one parameter; the second step's unit reads x and w from the first, so it is
# warmed on other sizes; a hook on w and its version are observed after the warm-up.
TWO_STEPS = [
    _leaf("w", [0.5, -1.0, 2.0], [3]), _leaf("x", [1.0, 2.0, 3.0], [3], rg=False),
    Stmt("hook", out="h", target="w", params={"behaviour": "scale", "factor": 2.0,
                                              "label": "hw"}),
    _call("y", "mul", "x", "w"), _call("t", "tanh", "y"), _call("l", "sum", "t"),
    Stmt("backward", target="l"),
    _call("y2", "mul", "x", "w"), _call("l2", "sum", "y2"),
    Stmt("backward", target="l2"),
    _see("w", "grad"), _see("w", "version"), _see("x", "version"), _see("w", "value"),
]


def test_the_warm_variant_recompiles_units_with_dynamic_sizes():
    """The warm run on other sizes makes the real runs of the units after the first compile
    graphs with a symbolic size (torch's symbolic-shapes log, what TORCH_LOGS=dynamic shows:
    create_symbol s0 ...); torch's own graph counter shows the recompiles the plain training
    engine does not make."""
    from torch._dynamo.utils import counters
    e = load_engine("torch-compile-dynamic-eager")
    plain = load_engine("torch-compile-train-eager")
    prog = Program(TWO_STEPS)
    assert [g.id for g in split(prog.statements, "step")] == ["0-6", "7-9", "10-13"]
    graphs = counters["stats"]["unique_graphs"]
    a = execute(prog, plain)
    static = counters["stats"]["unique_graphs"] - graphs
    b = execute(prog, e)
    warmed = counters["stats"]["unique_graphs"] - graphs - static
    assert warmed > static
    assert e.stats["warmed"] == 2 and e.stats["not_warmed"] == 1     # the first reads none
    assert e.stats["dynamic_compiled"] == 2, dict(e.stats)
    o = execute(prog, torch_engine())
    assert not compare(prog, o, a) and not compare(prog, o, b)
    # the warm-up left the program's tensors alone: hook calls, .grad, versions as eager
    assert [ev.hooks for ev in b.events] == [ev.hooks for ev in o.events]
    assert [ev.value for ev in b.events] == [ev.value for ev in o.events]


def test_warming_is_skipped_where_nothing_would_change_size():
    """A unit that reads only 0-d and size-1 tensors of earlier units is not warmed: no size
    would change, the shadow would compile what the real run compiles."""
    e = load_engine("torch-compile-dynamic-eager")
    prog = Program([_leaf("w", [0.5], [1]), _call("l", "sum", "w"),
                    Stmt("backward", target="l"), _call("l2", "mul", "w", 3.0),
                    _call("s", "sum", "l2"), Stmt("backward", target="s"), _see("w", "grad")])
    b = execute(prog, e)
    assert e.stats["warmed"] == 0 and e.stats["not_warmed"] == 3
    assert not compare(prog, execute(prog, torch_engine()), b)


def _step_with_a_break(x, p, w):
    h = x + p
    torch._dynamo.graph_break()         # as the adapter's bookkeeping, or a user's print, does
    h.sin_()
    (h @ w).mean().backward()


def test_an_in_place_nonlinearity_after_a_graph_break_fails_the_step_under_aot_autograd():
    """docs/findings.md C2, in a training step (the VER-8 group of the aot_eager training
    campaign): an in-place op on the output of an earlier compiled graph, then an op that saves
    it, makes the step's backward raise VERSION_MISMATCH under AOTAutograd; eager torch and
    dynamo alone run it. Fails once torch fixes it: then revisit C2."""
    def grads(backend):
        torch._dynamo.reset()
        p = torch.tensor([-1.75, -1.75, -0.75], dtype=torch.float64, requires_grad=True)
        w = torch.eye(3, dtype=torch.float64, requires_grad=True)
        x = torch.tensor([0.5, 0.25, -0.75], dtype=torch.float64)
        f = torch.compile(_step_with_a_break, backend=backend) if backend else \
            _step_with_a_break
        with torch._dynamo.config.patch(compiled_autograd=True):
            f(x, p, w)
        return p.grad.tolist()
    assert grads("eager") == grads(None)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        grads("aot_eager")


def test_compiled_autograd_frees_nodes_that_saved_nothing():
    """The FREE-1 group of the default-generator campaigns (docs/findings.md, "Training steps
    compiled"): after a pass that did not retain the graph, eager torch runs a second pass
    through nodes that saved nothing (add, mul by a number); with both passes under compiled
    autograd the second raises GRAPH_FREED. C3's class (not promised by torch). Fails once
    torch changes it."""
    from torch._dynamo import compiled_autograd

    def grad(compiled, *args, **kw):
        if not compiled:
            return torch.autograd.grad(*args, **kw)
        with compiled_autograd._enable(torch.compile(backend="eager")):
            return torch.autograd.grad(*args, **kw)

    def second_pass(compiled):
        torch._dynamo.reset()
        x = torch.tensor([[-2.5], [0.625]], dtype=torch.float64, requires_grad=True)
        y = x * 2.0
        z = y + torch.tensor([[1.5], [-1.25]], dtype=torch.float64, requires_grad=True)
        grad(compiled, [z], [y], grad_outputs=[torch.ones(2, 1, dtype=torch.float64)])
        return grad(compiled, [z.sum()], [x])[0].tolist()
    assert second_pass(False) == [[2.0], [2.0]]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        second_pass(True)
