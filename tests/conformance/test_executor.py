"""Hand-written programs and deliberately broken adapters for the core tests (the generator
is tested in test_generator.py), plus tests of the executor on them. Other conformance tests
import this module as tests.conformance.test_executor; the CLI tests name its functions by
import path.
"""
from __future__ import annotations

import json
import os
import time

import pytest

from conformance.compare import compare
from conformance.engines import load_engine
from conformance.engines.torchlike import TorchLike
from conformance.executor import Trace, execute
from conformance.program import Program
from conformance.program import Stmt as S

MOD = "tests.conformance.test_executor"


def leaf(out, values, shape, dtype="float32", rg=True, clauses=()):
    return S("leaf", out=out, params={"values": values, "shape": shape, "dtype": dtype,
                                      "requires_grad": rg}, clauses=list(clauses))


def obs(target, what, clauses=()):
    return S("observe", target=target, params={"what": what}, clauses=list(clauses))


def sample() -> Program:
    """Every statement kind, several error kinds, hooks, a grad-mode block."""
    return Program([
        leaf("x", [1.0, 2.0, 3.0, 4.0], [2, 2], clauses=["LEAF-1"]),
        leaf("c", [0.5], [], "float64", rg=False),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}, clauses=["GRAPH-1"]),
        S("call", out="z", args=[1.0, "y"], params={"fn": "sub"}),
        S("hook", out="h1", target="y", params={"behaviour": "record", "label": "h1"},
          clauses=["HOOK-1"]),
        S("hook", out="h2", target="y", params={"behaviour": "scale", "factor": 3.0,
                                                "label": "h2"}, clauses=["HOOK-4"]),
        S("post_hook", out="p", target="x", params={"label": "p"}, clauses=["HOOK-13"]),
        S("call", out="w", args=["z"], params={"fn": "exp"}),
        S("call", out="l", args=["w"], params={"fn": "sum", "kw": {"dim": None}}),
        S("retain_grad", target="z", clauses=["RETAIN-1"]),
        S("inplace", target="x", args=[1.0], params={"fn": "add_"}, clauses=["INPLACE-1"]),
        S("backward", target="l", params={"retain_graph": True}, clauses=["API-2"]),
        obs("x", "grad", ["LEAF-5"]),
        obs("z", "grad", ["RETAIN-1"]),
        obs("y", "grad", ["RETAIN-7"]),
        obs("w", "grad_fn", ["GRAPH-3"]),
        obs("w", "next_functions", ["GRAPH-4"]),
        obs("x", "version", ["VER-1"]),
        S("mode", params={"mode": "no_grad"}, clauses=["MODE-1"], body=[
            S("call", out="q", args=["x", "x"], params={"fn": "add"}),
            S("inplace", target="x", args=[0.0], params={"fn": "fill_"}, clauses=["INPLACE-4"]),
            obs("q", "requires_grad", ["MODE-1"]),
        ]),
        S("remove", target="h2", clauses=["HOOK-6"]),
        S("view", out="v", target="w", params={"fn": "transpose", "kw": {"dims": [0, 1]}}),
        S("call", out="m", args=["v"], params={"fn": "sum", "kw": {"dim": [0],
                                                                  "keepdim": True}}),
        S("grad", params={"outputs": ["l"], "inputs": ["x", "c"], "outs": ["gx", "gc"]}),
        obs("gx", "value"),
        S("backward", target="w", clauses=["API-1"]),
        S("getitem", out="r", target="w", params={"index": [0, {"slice": [0, 1, None]}]}),
        obs("r", "shape"),
        S("set_grad", target="x", args=[None], clauses=["LEAF-14"]),
        S("backward", target="l"),
        S("backward", target="l", clauses=["FREE-1"]),
        obs("x", "grad", ["LEAF-7"]),
    ], seed=7)


def saved_output() -> Program:
    """VER-7: exp saves its output; modifying it in place breaks backward."""
    return Program([
        leaf("a", [0.1, 0.2, 0.3], [3], "float64"),
        S("call", out="b", args=["a"], params={"fn": "exp"}, clauses=["VER-10"]),
        S("inplace", target="b", args=[2.0], params={"fn": "mul_"}, clauses=["VER-2"]),
        obs("b", "version", ["VER-2"]),
        S("call", out="s", args=["b"], params={"fn": "sum"}),
        S("backward", target="s", clauses=["VER-7"]),
        obs("a", "grad", ["LEAF-5"]),
    ], seed=8)


def no_backward() -> Program:
    """Nothing that a backward-breaking engine could get wrong."""
    return Program([
        leaf("a", [1.0, -2.0], [2], rg=False),
        S("call", out="b", args=["a"], params={"fn": "relu"}, clauses=["GRAPH-2"]),
        obs("b", "value"),
        obs("b", "grad_fn", ["GRAPH-2"]),
        leaf("o", [3.0], [1], rg=False),
        S("view", out="s", target="o", params={"fn": "reshape", "kw": {"shape": []}}),
        S("view", out="e", target="s", params={"fn": "expand", "kw": {"size": []}}),
        obs("e", "shape"),
    ], seed=9)


PROGRAMS = [sample, saved_output, no_backward]


def newer_statements() -> Program:
    """The statement kinds added after the first suite: node hooks (HOOK-15), a grad-mode
    decorator and is_grad_enabled (MODE-5, MODE-6), autograd.backward on several tensors
    (API-12) and a post-accumulate hook that returns a value (HOOK-13)."""
    return Program([
        leaf("x", [1.0, 2.0], [2], "float64"),
        S("call", out="y", args=["x"], params={"fn": "neg"}),
        S("node_hook", out="n1", target="y", params={"kind": "pre", "behaviour": "scale",
                                                     "factor": 10.0, "label": "n1"},
          clauses=["HOOK-15"]),
        S("node_hook", out="n2", target="y", params={"kind": "post", "behaviour": "record",
                                                     "label": "n2"}, clauses=["HOOK-15"]),
        S("call", out="s", args=["y"], params={"fn": "sum"}),
        S("backward", target="s", clauses=["HOOK-15"]),
        obs("x", "grad"),                                       # 6: [-10, -10]
        S("grad_enabled", clauses=["MODE-6"]),
        S("mode", params={"mode": "no_grad", "decorator": True}, clauses=["MODE-5"], body=[
            S("grad_enabled", clauses=["MODE-6"]),
            S("call", out="q", args=["x", 2.0], params={"fn": "mul"}),
            obs("q", "requires_grad"),
        ]),
        S("call", out="a", args=["x", 2.0], params={"fn": "mul"}),
        S("call", out="b", args=["a"], params={"fn": "sum"}),
        S("call", out="c", args=["x", "x"], params={"fn": "mul"}),
        leaf("gc", [1.0, 10.0], [2], "float64", rg=False),
        S("backward_many", params={"tensors": ["b", "c"], "grad_tensors": [None, "gc"]},
          clauses=["API-12"]),
        obs("x", "grad"),                                       # 14
        S("post_hook", out="p", target="x", params={"label": "p", "behaviour": "return"}),
        S("call", out="d", args=["x"], params={"fn": "sum"}),
        S("backward", target="d", clauses=["HOOK-13"]),        # 17: POST_HOOK_RETURNED_VALUE
        S("remove", target="p"),
        S("call", out="e", args=["x"], params={"fn": "sum"}),
        S("backward", target="e"),
    ])


def source(seed: int, capabilities=None, size: int = 20) -> Program:
    """A program source for run_campaign / `gradspec run --source`."""
    p = PROGRAMS[seed % len(PROGRAMS)]()
    p.seed = seed
    return p


def broken_source(seed: int, capabilities=None, size: int = 20) -> Program:
    """A generator with a bug on every other seed."""
    if seed % 2:
        raise KeyError("generator bug")
    return source(seed, capabilities, size)


# ---- deliberately broken adapters -----------------------------------------------------------
class NoLeafCheck(TorchLike):
    """Lets in-place ops modify leaves that require grad (breaks INPLACE-1)."""

    def inplace(self, target, fn, args, kw):
        if target.is_leaf and target.requires_grad:
            with self.torch.no_grad():
                return super().inplace(target, fn, args, kw)
        return super().inplace(target, fn, args, kw)


class CopyingDetach(TorchLike):
    """Gives a detach() or .data of an inference tensor as an ordinary copy (breaks INFER-2:
    the alias is no inference tensor, and writes into it do not reach the tensor's memory)."""

    def detach(self, t):
        return t.clone() if t.is_inference() else t.detach()

    def data(self, t):
        return t.clone() if t.is_inference() else t.data


class Crashing(TorchLike):
    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        os._exit(3)


class Hanging(TorchLike):
    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        time.sleep(600)


class WrongTypes(TorchLike):
    """Answers with numpy arrays and foreign objects instead of plain data."""

    def to_list(self, t):
        return t.detach().numpy()

    def grad_fn_name(self, t):
        return object()


def _torch():
    import torch
    return torch


def no_leaf_check(device="cpu"):
    return NoLeafCheck(_torch(), "noleafcheck", device)


def copying_detach(device="cpu"):
    return CopyingDetach(_torch(), "copyingdetach", device)


def crashing(device="cpu"):
    return Crashing(_torch(), "crashing", device)


def hanging(device="cpu"):
    return Hanging(_torch(), "hanging", device)


def wrong_types(device="cpu"):
    return WrongTypes(_torch(), "wrongtypes", device)


def not_an_engine(device="cpu"):
    return object()


def failing_factory(device="cpu"):
    raise ImportError("libfoo.so: cannot open shared object file\nsecond line")


# ---- tests of the executor ------------------------------------------------------------------
def test_sample_trace_outcomes():
    t = execute(sample(), load_engine("torch"))
    ev = t.by_path()
    assert ev["10"].error == "LEAF_INPLACE"
    assert [h[0] for h in ev["11"].hooks] == ["h1", "h2", "p"]
    assert ev["14"].warnings == ["NONLEAF_GRAD_ACCESS"] and ev["14"].value is None
    assert ev["15"].value == "ExpBackward0"
    assert ev["18.2"].value is False
    assert ev["22"].status == "error" and ev["23"].status == "skipped"  # gx never bound
    assert ev["24"].error == "IMPLICIT_GRAD_NONSCALAR"
    assert ev["26"].value == [1]
    assert ev["29"].error == "GRAPH_FREED"
    assert [h[0] for h in ev["28"].hooks] == ["h1", "p"]        # h2 was removed


def test_version_error_kind():
    ev = execute(saved_output(), load_engine("torch")).by_path()
    assert ev["3"].value == 1
    assert ev["5"].error == "VERSION_MISMATCH"


def test_trace_round_trips_through_json():
    t = execute(sample(), load_engine("torch"))
    again = Trace.from_json(json.loads(json.dumps(t.to_json())))
    assert again == t


def test_torch_against_itself_has_no_divergence():
    e = load_engine("torch")
    for make in PROGRAMS:
        p = make()
        assert compare(p, execute(p, e), execute(p, e)) == []


def test_unknown_name_is_skipped_not_raised():
    p = Program([obs("nothing", "value"), S("call", out="y", args=["nothing"],
                                            params={"fn": "exp"}), obs("y", "value")])
    t = execute(p, load_engine("torch"))
    assert [e.status for e in t.events] == ["skipped"] * 3


def test_newer_statements_run_on_torch():
    p = Program.loads(newer_statements().dumps())
    t = execute(p, load_engine("torch"))
    ev = t.by_path()
    assert [e.path for e in t.events if e.status != "ok"] == ["17"]
    assert ev["17"].error == "POST_HOOK_RETURNED_VALUE"
    assert ev["6"].value == [-10.0, -10.0]
    assert [h[0] for h in ev["5"].hooks] == ["n1", "n2"]
    assert ev["7"].value is True and ev["8.0"].value is False and ev["8.2"].value is False
    assert ev["14"].value == [-10.0 + 2.0 + 2.0, -10.0 + 2.0 + 40.0]
    assert p.capabilities() == ["core", "node_hooks", "grad_fn", "grad_modes",
                                "post_accumulate_hooks", "hooks"]
    assert compare(p, t, execute(p, load_engine("torch"))) == []


def malformed() -> list[tuple[str, S]]:
    """(what is wrong, statement): statements gradspec cannot express to any engine."""
    return [
        ("unknown observable", obs("x", "valu")),
        ("unknown fn", S("call", out="y", args=["x"], params={"fn": "frobnicate"})),
        ("unknown op", S("frobnicate", out="y", target="x")),
        ("missing param", S("leaf", out="y", params={"values": [1.0], "shape": [1]})),
        ("missing param", S("observe", target="x")),
        ("unknown mode", S("mode", params={"mode": "no_grd"}, body=[obs("x", "value")])),
    ]


def test_malformed_statements_are_harness_errors_on_every_engine():
    for what, bad in malformed():
        p = Program([leaf("x", [1.0, 2.0], [2]), bad, obs("x", "value"), obs("y", "value")])
        for name in ("torch", "refimpl"):
            ev = execute(p, load_engine(name)).by_path()
            assert ev["1"].status == "harness" and ev["1"].error is None, (what, name)
            assert ev["1"].message.startswith("ProgramError: statement 1:") or \
                ev["1"].message.startswith("HarnessError: statement 1:"), ev["1"].message
            assert ev["2"].status == "ok"            # the program goes on
            assert ev["3"].status == "skipped"       # nothing the statement binds is bound
            assert all(e.status == "skipped" for e in ev.values() if e.path.startswith("1."))


def test_runs_sharing_their_checks_report_what_runs_alone_report():
    """Two runs of one program sharing `checked` (a campaign's oracle run, then its engine
    run) give the traces two runs alone give: a malformed statement is a harness error in
    both, checked again in the second."""
    torch_engine, ref = load_engine("torch"), load_engine("refimpl")
    for what, bad in malformed():
        p = Program([leaf("x", [1.0, 2.0], [2]), bad, obs("x", "value"), obs("y", "value")])
        checked: set[int] = set()
        shared = [execute(p, e, checked=checked).to_json() for e in (torch_engine, ref)]
        assert shared == [execute(p, e).to_json() for e in (torch_engine, ref)], what
        assert id(p.statements[1]) not in checked and id(p.statements[0]) in checked, what


def test_runs_sharing_their_checks_check_each_statement_once(monkeypatch):
    from conformance.kinds import KINDS
    calls: list[str] = []
    for kind in KINDS.values():
        monkeypatch.setattr(kind, "check", lambda s, path, f=kind.check: (
            calls.append(path), f(s, path))[1])
    p = sample()
    paths = [path for path, _ in p.walk()]
    execute(p, load_engine("torch"))
    execute(p, load_engine("refimpl"))
    assert sorted(calls) == sorted(paths * 2)        # alone: each run checks every statement
    calls.clear()
    checked: set[int] = set()
    execute(p, load_engine("torch"), checked=checked)
    execute(p, load_engine("refimpl"), checked=checked)
    assert sorted(calls) == sorted(paths)            # shared: once


def test_harness_error_names_the_statement_and_the_field():
    t = execute(Program([leaf("x", [1.0], [1]), obs("x", "valu")]), load_engine("torch"))
    assert t.events[1].message == "ProgramError: statement 1: params.what: unknown what 'valu'"
    t = execute(Program([S("leaf", out="y", params={"values": [1.0], "shape": [1]})]),
                load_engine("torch"))
    assert t.events[0].message == "ProgramError: statement 0: params.dtype: missing"


class _ModeSpy(TorchLike):
    """torch, recording the arguments each grad-mode block is entered with."""

    def __init__(self):
        import torch
        super().__init__(torch, "torch")
        self.calls: list[tuple] = []

    def grad_mode(self, mode, *enabled):
        self.calls.append((mode, *enabled))
        return super().grad_mode(mode, *enabled)

    def grad_mode_decorator(self, mode, *enabled):
        self.calls.append(("@" + mode, *enabled))
        return TorchLike.grad_mode(self, mode, *enabled)    # torch's modes decorate too


def test_a_mode_without_its_argument_is_entered_with_the_library_default():
    """inference_mode() with no argument is on (INFER-1): the executor passes no `enabled`
    where the program gives none, so that an adapter calls the library's default as the
    rendered script does; where the program gives one, it is passed."""
    leaf = S("leaf", out="x", params={"values": [1.0], "shape": [1], "dtype": "float32",
                                      "requires_grad": True})
    body = [S("call", out="y", args=["x", 2.0], params={"fn": "mul", "kw": {}}),
            S("observe", target="y", params={"what": "requires_grad"})]
    spy = _ModeSpy()
    for params in ({"mode": "inference_mode"}, {"mode": "inference_mode", "decorator": True},
                   {"mode": "inference_mode", "enabled": False}):
        trace = execute(Program([leaf, S("mode", params=params, body=body)]), spy)
        assert trace.events[-1].value is (params.get("enabled") is False), (params, trace)
    assert spy.calls == [("inference_mode",), ("@inference_mode",), ("inference_mode", False)]


def _cycles_torch_cannot_free() -> list[Program]:
    """Programs whose hooks torch keeps in a cycle through its C++ graph, which Python's
    collector cannot see: a tensor hook on a graph an in-place op rewrote afterwards, and a
    pack hook that returns the tensor itself."""
    hook_then_inplace = Program([
        leaf("a", [-2.5, -0.75, 0.5], [3], "float64"),
        S("call", out="b", args=["a", 2.0], params={"fn": "mul"}),
        S("hook", out="h", target="b", params={"behaviour": "scale", "label": "h",
                                               "factor": -1.0}),
        S("call", out="c", args=["b"], params={"fn": "sum"}),
        S("call", out="d", args=["c"], params={"fn": "abs"}),
        S("inplace", target="c", args=["d"], params={"fn": "add_"}),
    ])
    pack_keeps_the_tensor = Program([
        leaf("a", [-1.75, 0.625, 0.25], [3]),
        S("saved_hooks", params={"pack": "keep", "label": "s", "unpack": "non_tensor"},
          body=[S("call", out="b", args=["a"], params={"fn": "exp"})]),
    ])
    return [hook_then_inplace, pack_keeps_the_tensor]


def test_a_program_torch_cannot_free_does_not_keep_its_trace():
    import gc
    import weakref

    from conformance.judge.executor import settled
    torch = load_engine("torch")
    held = []
    for program in _cycles_torch_cannot_free():
        trace = execute(program, torch)
        assert all(ev.status == "ok" for ev in trace.events)
        kept = weakref.ref(trace)
        del trace                           # freed at once: the run the hooks hold let go
        assert kept() is None, program
        run = settled(program, torch)
        run.release()
        held.append(weakref.ref(run))
        del run
    gc.collect()        # (one collection: in a long test process each can take seconds)
    for ref in held:    # the cycle itself, which no collection frees: the hooks keep the run
        assert ref() is not None and ref().env == {} and ref().trace.events == []


def _unanswering(method: str, when_int64: bool = False):
    """A torch engine whose `method` raises (not NotImplementedError): what gradspec asks of
    an engine beyond a statement itself must never crash the run or become the engine's
    error."""
    base = load_engine("torch")

    def answer(self, t):
        if when_int64 and str(t.dtype) != "torch.int64":
            return getattr(type(base), method)(self, t)
        raise AttributeError(f"this engine cannot answer {method}")
    cls = type("Unanswering", (type(base),), {method: answer})
    return cls(base.torch, "unanswering", "cpu", base.capabilities)


@pytest.mark.parametrize("method, program", [
    ("requires_grad", Program([leaf("x", [1, 2], [2], "int64", rg=False),
                               S("inplace", target="x", args=[1], params={"fn": "add_"}),
                               obs("x", "value")])),
    ("grad_dtype", Program([leaf("x", [1.0, 2.0], [2], rg=True),
                            leaf("g", [1, 2], [2], "int64", rg=False),
                            S("backward", target="x", args=["g"], params={}),
                            obs("x", "grad")])),
    ("is_inference", Program([leaf("r", [1.0, 2.0], [2]), leaf("n", [3.0, 4.0], [2], rg=False),
                              S("set_data", target="r", args=["n"]), obs("r", "value")])),
])
def test_an_engine_that_cannot_answer_gradspecs_own_questions_still_runs(method, program):
    """The executor asks an engine about the state around a statement (Event flags: whether a
    write left its target requiring grad, a seed's dtype and grad_dtype, whether .data = swaps
    an inference tensor). An engine that raises there leaves the flag unset: the statement
    runs and is recorded as it is, never as an error of the engine, and the run goes on."""
    engine = _unanswering(method, when_int64=method == "requires_grad")
    t = execute(program, engine)
    reference = execute(program, load_engine("torch"))
    assert [(ev.status, ev.error) for ev in t.events] == \
        [(ev.status, ev.error) for ev in reference.events]
    assert t.events[-1].value == reference.events[-1].value


def _ops_on_a_view() -> tuple[Program, dict[str, bool]]:
    """Ops with a view v of b = x * 1 (x requires grad) or a leaf n that does not as an
    operand; the paths whose op records a node with its operands as inputs."""
    def call(out, fn, *args):
        return S("call", out=out, args=list(args), params={"fn": fn})

    def unsqueeze(out, target):
        return S("view", out=out, target=target, params={"fn": "unsqueeze", "kw": {"dim": 0}})
    p = Program([
        leaf("x", [1.0, 2.0, 3.0, 4.0], [2, 2]), leaf("n", [1.0, 2.0], [2], rg=False),
        call("b", "mul", "x", 1.0), S("getitem", out="v", target="b", params={"index": [0]}),
        call("r1", "mul", "v", 2.0), call("r2", "double", "v"),
        call("r3", "float", "v"),                   # (5) v's own dtype: v itself, no node
        call("r4", "gt", "v", 1.0), call("r5", "mul", "n", 2.0),    # no node; none requires grad
        call("r6", "add", "n", "v"), unsqueeze("r7", "v"), unsqueeze("r8", "n"),
        S("multi_view", target="v", params={"fn": "split", "kw": {"size": 1, "dim": 0},
                                            "outs": ["r9", "r10"]}),
        S("function", out="r11", target="v", params={"fn": "Square"}),
        S("function", out="r12", target="n", params={"fn": "Square"}),
        S("mode", params={"mode": "no_grad"}, body=[         # (15) a view of v requires grad
            call("q1", "mul", "v", 2.0), unsqueeze("q2", "v"),  # there, and records nothing
            S("getitem", out="q3", target="v", params={"index": [0]})]),
        S("mode", params={"mode": "inference_mode"}, body=[call("q4", "mul", "v", 2.0)]),
        call("v", "mul", "v", 2.0),                 # (17) rebinds its operand's name
        call("z", "mul", "x", 2.0),
        S("inplace", target="z", args=["v"], params={"fn": "add_"}),   # writes: not asked
        S("setitem", target="z", args=["v"], params={"index": [0]})])
    return p, {path: True for path in ("2", "3", "4", "5", "9", "10", "12", "13", "17", "18")}


@pytest.mark.parametrize("engine", ["torch", "refimpl"])
def test_the_executor_flags_an_op_that_recorded_its_operands(engine):
    """Event.operands_recorded (UNSPEC-17: an op recorded with a stale view as an operand
    reads it): grad mode on, and a result that requires grad and is none of the operands.
    Not a cast to the tensor's own dtype, a comparison, an op of tensors none of which
    requires grad, an op or a view with grad mode off or in inference mode, nor a write (whose
    Event.unrecorded says it). The same on torch and refimpl; it survives JSON."""
    p, recorded = _ops_on_a_view()
    t = execute(p, load_engine(engine))
    assert all(ev.status == "ok" for ev in t.events)
    assert {ev.path: ev.operands_recorded for ev in t.events} == {
        ev.path: recorded.get(ev.path) for ev in t.events}
    assert Trace.from_json(json.loads(json.dumps(t.to_json()))) == t


def test_an_engine_that_cannot_answer_whether_an_op_recorded_leaves_it_unflagged():
    """The probe reads requires_grad of the op's results: an engine that cannot answer leaves
    the flag unset (the view stays stale for the comparator), and the program runs on."""
    p, _ = _ops_on_a_view()
    t = execute(p, _unanswering("requires_grad"))
    assert all(ev.status == "ok" for ev in t.events)
    assert [ev.operands_recorded for ev in t.events] == [None] * len(t.events)
