"""Capability declarations, checked both ways (spec/README.md, "Capability vocabulary").

An engine declares the capabilities it has (Engine.capabilities). The generator never draws a
statement that needs one the engine lacks, and a clause whose `requires` names one is "not
applicable" for it, never "pass" (reports/report.py, clause_rows). A declared capability
that does not work shows up as divergences in the campaign itself. The other direction is
checked here: a capability declared *absent* is probed, and if it works after all, that is
reported (the engine could be tested on more clauses than it claims).

A probe is a small program (conformance/lang/program.py) that uses the capability in the way its
clauses do; it runs on the engine and on the oracle through the adapter, and the capability
"works" when the traces agree (comparator and all). An adapter method that raises
NotImplementedError, or an engine error, makes the probe fail. `node_hooks`, `custom_function`,
`data_assign` and `saved_tensors_hooks` are probed through the engine's
torch-shaped module when the adapter is a plain view of one (it renders repros as
`import X as torch`), and are left unprobed otherwise (the node hooks probe predates the
`node_hook` program statement, the custom Function probe the `function` statement, which applies
a Function of a fixed catalogue where the probe defines its own; no program statement calls
`set_()`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..engines.base import Engine
from ..lang.program import Program, Stmt
from ..spec.reader import CAPABILITIES
from .compare import compare
from .conditioning import Relief
from .executor import execute


def _leaf(out: str, values: list[float], shape: list[int], rg: bool = True) -> Stmt:
    return Stmt("leaf", out=out, params={"values": values, "shape": shape,
                                         "dtype": "float64", "requires_grad": rg})


def _call(out: str, fn: str, *args: Any, **kw: Any) -> Stmt:
    return Stmt("call", out=out, args=list(args), params={"fn": fn, "kw": kw})


def _see(target: str, what: str) -> Stmt:
    return Stmt("observe", target=target, params={"what": what})


def _backward(target: str, retain_graph: bool | None = None) -> Stmt:
    return Stmt("backward", target=target, params={"retain_graph": retain_graph})


X = _leaf("x", [1.0, -2.0, 0.5, 3.0], [4])

# capability -> statements that work on an engine that has it (and raise on one that lacks it)
PROBES: dict[str, list[Stmt]] = {
    "core": [X, _call("y", "mul", "x", 3.0), _call("s", "sum", "y"), _backward("s"),
             _see("x", "grad"), _see("y", "is_leaf"), _see("y", "requires_grad")],
    "grad_fn": [X, _call("y", "mul", "x", 2.0), _see("y", "grad_fn"),
                _see("y", "next_functions"), _see("x", "grad_fn")],
    "retain_grad": [X, _call("y", "mul", "x", 2.0), Stmt("retain_grad", target="y"),
                    _call("s", "sum", "y"), _backward("s"), _see("y", "grad"),
                    _see("y", "retains_grad")],
    "hooks": [X, _call("y", "mul", "x", 2.0),
              Stmt("hook", out="h", target="y", params={"behaviour": "scale", "factor": 2.0,
                                                        "label": "h"}),
              Stmt("hook", out="k", target="x", params={"behaviour": "record", "label": "k"}),
              Stmt("remove", target="k"), _call("s", "sum", "y"), _backward("s"),
              _see("x", "grad")],
    "post_accumulate_hooks": [X, Stmt("post_hook", out="h", target="x", params={"label": "h"}),
                              _call("y", "mul", "x", 2.0), _call("s", "sum", "y"),
                              _backward("s")],
    "version_counter": [X, _leaf("c", [1.0, 2.0, 3.0, 4.0], [4], rg=False), _see("c", "version"),
                        Stmt("inplace", target="c", args=[1.0], params={"fn": "add_"}),
                        _see("c", "version"), _call("y", "exp", "x"), _call("s", "sum", "y"),
                        Stmt("inplace", target="y", args=[2.0], params={"fn": "mul_"}),
                        _backward("s")],        # VERSION_MISMATCH: exp saved its output
    "views": [X, Stmt("view", out="v", target="x", params={"fn": "view", "kw": {"shape": [2, 2]}}),
              Stmt("view", out="w", target="v", params={"fn": "t", "kw": {}}),
              Stmt("getitem", out="g", target="w", params={"index": [1]}),
              _see("w", "value"), _see("g", "value"), _call("s", "sum", "g"), _backward("s"),
              _see("x", "grad")],
    "inplace": [X, _leaf("c", [1.0, 2.0, 3.0, 4.0], [4], rg=False),
                Stmt("inplace", target="c", args=[1.0], params={"fn": "add_"}),
                Stmt("setitem", target="c", args=[5.0], params={"index": [0]}),
                _see("c", "value"), _call("y", "mul", "x", "c"),
                Stmt("inplace", target="y", args=[], params={"fn": "neg_"}),
                _call("s", "sum", "y"), _backward("s"), _see("x", "grad"),
                Stmt("inplace", target="x", args=[1.0], params={"fn": "add_"})],  # LEAF_INPLACE
    "autograd_grad": [X, _call("y", "mul", "x", "x"), _call("s", "sum", "y"),
                      Stmt("grad", params={"outputs": ["s"], "inputs": ["x"],
                                           "grad_outputs": None, "retain_graph": None,
                                           "allow_unused": False, "outs": ["g"]}),
                      _see("x", "grad")],
    "grad_modes": [X, Stmt("mode", params={"mode": "no_grad"},
                           body=[_call("y", "mul", "x", 2.0), _see("y", "requires_grad"),
                                 Stmt("mode", params={"mode": "enable_grad"},
                                      body=[_call("z", "mul", "x", 2.0),
                                            _see("z", "requires_grad")])]),
                   Stmt("mode", params={"mode": "set_grad_enabled", "enabled": False},
                        body=[_call("u", "exp", "x"), _see("u", "requires_grad")])],
    "retain_graph": [X, _call("y", "exp", "x"), _call("s", "sum", "y"),
                     _backward("s", retain_graph=True), _backward("s"), _see("x", "grad"),
                     _backward("s")],           # GRAPH_FREED
    "warnings": [X, _call("y", "mul", "x", 2.0), _see("y", "grad")],    # RETAIN-7 warns
    "backward_inputs": [X, _leaf("w", [2.0], [], rg=True), _call("y", "mul", "x", "w"),
                        _call("s", "sum", "y"),
                        Stmt("backward", target="s", params={"inputs": ["w"]}),
                        _see("x", "grad"), _see("w", "grad"),
                        Stmt("backward", target="s", params={"inputs": []})],  # raises
    "narrow_select": [X, Stmt("view", out="n", target="x",
                              params={"fn": "narrow", "kw": {"dim": 0, "start": 1, "length": 2}}),
                      Stmt("view", out="v", target="x",
                           params={"fn": "select", "kw": {"dim": -1, "index": -1}}),
                      _see("n", "value"), _see("v", "value"), _call("m", "mul", "n", "v"),
                      _call("s", "sum", "m"), _backward("s"), _see("x", "grad")],
    "multi_views": [X, Stmt("multi_view", target="x",
                            params={"fn": "split", "kw": {"size": 3, "dim": 0},
                                    "outs": ["a", "b"]}),
                    Stmt("multi_view", target="x",
                         params={"fn": "unbind", "kw": {"dim": -1}, "outs": list("cdef")}),
                    _see("a", "value"), _see("b", "value"), _call("m", "mul", "c", "b"),
                    _call("s", "sum", "m"), _call("t", "add", "s", "f"), _backward("t"),
                    _see("x", "grad")],
    # HOOK-19, HOOK-20: "all" waits for x and a (o = x * w is off the path: None); "any"
    # runs once
    "multi_grad_hooks": [X, _leaf("w", [2.0], []), _call("a", "mul", "x", 2.0),
                         _call("o", "mul", "x", "w"),
                         Stmt("multi_grad_hook", out="m", args=["x", "a", "o"],
                              params={"mode": "all", "label": "m"}),
                         Stmt("multi_grad_hook", out="n", args=["a", "x"],
                              params={"mode": "any", "label": "n"}),
                         _call("s", "sum", "a"), _backward("s", retain_graph=True),
                         Stmt("remove", target="m"), Stmt("remove", target="n"),
                         _backward("s"), _see("x", "grad")],
    # GRAD-7, LEAF-9: a grad_dtype set before the leaf requires grad casts its gradient (the
    # observed .grad is float32), and may be set to None over a .grad
    "grad_dtype": [_leaf("w", [1.0, 2.0], [2], rg=False), _see("w", "grad_dtype"),
                   Stmt("set_grad_dtype", target="w", params={"dtype": "float32"}),
                   Stmt("requires_grad_", target="w", params={"value": True}),
                   _call("y", "mul", "w", 3.0), _call("s", "sum", "y"), _backward("s"),
                   _see("w", "grad"), _see("w", "grad_dtype"),
                   Stmt("set_grad_dtype", target="w", params={"dtype": None}),
                   _see("w", "grad_dtype"), _see("w", "grad")],
    # LEAF-11, LEAF-15: the setter sets a leaf's flag, and refuses a non-leaf even for True
    "requires_grad_setter": [_leaf("w", [1.0, 2.0], [2], rg=False),
                             Stmt("requires_grad_", target="w",
                                  params={"value": True, "setter": True}),
                             _see("w", "requires_grad"), _call("y", "mul", "w", 2.0),
                             Stmt("requires_grad_", target="w",
                                  params={"value": False, "setter": True}),
                             _see("w", "requires_grad"),
                             Stmt("requires_grad_", target="y",
                                  params={"value": True, "setter": True})],
    # VER-16, VIEW-8, INPLACE-1: a non-leaf detached in place is a leaf that needs no grad, a
    # node that saved it refuses to run, a view refuses detach_(), a leaf stops requiring grad
    "detach_inplace": [X, _call("h", "mul", "x", 2.0), _call("y", "sin", "h"),
                       _call("k", "mul", "x", 3.0), Stmt("detach_", target="h"),
                       _see("h", "is_leaf"), _see("h", "requires_grad"), _see("h", "version"),
                       Stmt("getitem", out="v", target="k",
                            params={"index": [{"slice": [0, 1, None]}]}),
                       Stmt("detach_", target="v"),             # DETACH_VIEW_INPLACE
                       _see("v", "requires_grad"), _call("s", "sum", "y"),
                       _backward("s"),                          # SAVED_DETACHED_INPLACE
                       Stmt("detach_", target="x"), _see("x", "requires_grad")],
    # GRAD-1 to GRAD-4: the .grad a pass stores is a tensor of no history that a name can hold,
    # whose writes .grad shows and which a second pass adds into, the same object throughout
    "grad_tensor": [X, _call("y", "mul", "x", 2.0), _call("s", "sum", "y"), _backward("s"),
                    Stmt("grad_ref", out="h", target="x"), _see("h", "requires_grad"),
                    _see("x", "grad_layout"),
                    Stmt("inplace", target="h", args=[10.0], params={"fn": "mul_"}),
                    _see("x", "grad"), _call("z", "exp", "x"), _call("s2", "sum", "z"),
                    _backward("s2"), _see("h", "value"),
                    Stmt("grad_is", target="x", args=["h"])],
    # VIEW-1: a view of a view has the first view's base; detach() of a view is no view
    "view_base": [X, Stmt("view", out="v", target="x",
                          params={"fn": "view", "kw": {"shape": [2, 2]}}),
                  Stmt("view", out="w", target="v", params={"fn": "t", "kw": {}}),
                  Stmt("base_is", target="w", args=["x"]),
                  Stmt("base_is", target="x", args=[None]), Stmt("detach", out="d", target="w"),
                  Stmt("base_is", target="d", args=[None])],
    "deriv_ops": [X, _call("c", "gt", "x", 0.0), _see("c", "value"),
                  _see("c", "requires_grad"), _call("f", "floor", "x"), _call("m", "max", "x"),
                  _call("w", "where", "x", "c", "f"), _call("l", "long", "x"),
                  _see("l", "value"), _call("i", "argmax", "x"), _call("s", "add", "m", "w"),
                  _call("s2", "sum", "s"), _backward("s2"), _see("x", "grad")],
    "create_graph": [X, _call("y", "exp", "x"), _call("s", "sum", "y"),
                     Stmt("grad", params={"outputs": ["s"], "inputs": ["x"],
                                          "grad_outputs": None, "retain_graph": None,
                                          "allow_unused": False, "outs": ["g"],
                                          "create_graph": True}),
                     _see("g", "requires_grad"), _call("z", "mul", "g", "x"),
                     _call("s2", "sum", "z"), _backward("s2"), _see("x", "grad"),
                     _call("y3", "sin", "x"), _call("s3", "sum", "y3"),
                     Stmt("backward", target="s3", params={"create_graph": True}),
                     _see("x", "grad")],
    "inference_mode": [X, Stmt("mode", params={"mode": "inference_mode"},
                               body=[_call("y", "mul", "x", 2.0), _see("y", "requires_grad"),
                                     Stmt("grad_enabled"), _see("y", "is_inference")]),
                       _see("x", "is_inference"), _see("y", "is_inference"),
                       _see("y", "version")],   # INFERENCE_VERSION
}


def _node_hooks_via_module(engine: Engine) -> tuple[bool | None, str]:
    """grad_fn.register_hook and register_prehook, through the engine's torch-shaped module."""
    torch = getattr(engine, "torch", None)
    if torch is None or engine.render_prelude() is None:
        return None, "no probe: node hooks need a torch-shaped module that is the engine"
    calls: list[str] = []
    try:
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.grad_fn.register_prehook(lambda go: calls.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: calls.append("post"))
        y.sum().backward()
    except Exception as exc:
        return False, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    if calls != ["pre", "post"]:
        return False, f"node hooks called {calls}, expected ['pre', 'post']"
    return True, "grad_fn.register_prehook and register_hook run, in that order"


def _custom_function_via_module(engine: Engine) -> tuple[bool | None, str]:
    """A custom autograd.Function with two outputs, a saved tensor, a non-tensor argument and a
    once_differentiable backward (FUNC-1, FUNC-2, FUNC-4, FUNC-9, FUNC-13), through the engine's
    torch-shaped module; torch 2.13 gives x.grad [5.0, -1.0] and the node ScaleBackward."""
    torch = getattr(engine, "torch", None)
    if torch is None or engine.render_prelude() is None:
        return None, "no probe: custom Functions need a torch-shaped module that is the engine"
    try:
        once = torch.autograd.function.once_differentiable

        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                ctx.save_for_backward(x)
                ctx.k = k
                return x * k, x * x

            @staticmethod
            @once
            def backward(ctx, g1, g2):
                x, = ctx.saved_tensors
                return g1 * ctx.k + 2 * x * g2, None

        x = torch.tensor([1.0, -2.0], requires_grad=True)
        a, b = Scale.apply(x, 3.0)
        (a.sum() + b.sum()).backward()
        got, name = x.grad.tolist(), a.grad_fn.name()
    except Exception as exc:
        return False, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    if (got, name) != ([5.0, -1.0], "ScaleBackward"):
        return False, f"x.grad {got}, node {name!r}; expected [5.0, -1.0], 'ScaleBackward'"
    return True, "a custom Function with two outputs runs forward and backward as torch does"


def _data_assign_via_module(engine: Engine) -> tuple[bool | None, str]:
    """`.data =` with another shape and dtype on a leaf that requires grad, then a backward, and
    `set_` sharing storage (DATA-1, DATA-2, DATA-4, DATA-7), through the engine's torch-shaped
    module; torch 2.13 gives x.grad [6.0, 8.0, 10.0] in float64 and t [2.0, 4.0, 6.0] at
    version 1."""
    torch = getattr(engine, "torch", None)
    if torch is None or engine.render_prelude() is None:
        return None, "no probe: .data = and set_() need a torch-shaped module that is the engine"
    try:
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.data = torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64)
        (x * x).sum().backward()
        t, src = torch.zeros(2), torch.tensor([1.0, 2.0, 3.0])
        t.set_(src)
        src.mul_(2.0)
        got = (x.grad.tolist(), x.grad.dtype == torch.float64, x.is_leaf, t.tolist(),
               t._version, src._version)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    want = ([6.0, 8.0, 10.0], True, True, [2.0, 4.0, 6.0], 1, 1)
    if got != want:
        return False, f"got (x.grad, float64, is_leaf, t, t._version, src._version) {got}, " \
                      f"expected {want}"
    return True, ".data = and set_() change what a tensor holds as torch does"


def _saved_tensors_hooks_via_module(engine: Engine) -> tuple[bool | None, str]:
    """Saved-tensor hooks whose unpack scales the saved value, a write after the pack, and
    `disable_saved_tensors_hooks` (SAVED-1, SAVED-2, SAVED-3, SAVED-6, SAVED-10), through the
    engine's torch-shaped module; torch 2.13 packs twice, unpacks twice, gives x.grad
    [4.0, 8.0] (from the unpacked 2 * h, not the written 10 * h) and raises RuntimeError "off"
    inside the disabled block."""
    torch = getattr(engine, "torch", None)
    if torch is None or engine.render_prelude() is None:
        return None, "no probe: saved-tensor hooks need a torch-shaped module that is the engine"
    calls: list[str] = []

    def pack(t):
        calls.append("pack")
        return t.detach().clone()

    def unpack(p):
        calls.append("unpack")
        return p * 2
    try:
        graph = torch.autograd.graph
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        with graph.saved_tensors_hooks(pack, unpack):
            h = x * 1
            y = h * h
        h.mul_(10.0)
        y.sum().backward()
        message = None
        try:
            with graph.disable_saved_tensors_hooks("off"):
                with graph.saved_tensors_hooks(pack, unpack):
                    pass
        except RuntimeError as exc:
            message = str(exc)
        got = (sorted(calls), x.grad.tolist(), message)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    want = (["pack", "pack", "unpack", "unpack"], [4.0, 8.0], "off")
    if got != want:
        return False, f"got (hook calls, x.grad, message) {got}, expected {want}"
    return True, "saved-tensor hooks pack, unpack and compute the gradient as torch does"


# capabilities no program statement uses, probed through the engine's module instead
MODULE_PROBES = {"node_hooks": _node_hooks_via_module,
                 "custom_function": _custom_function_via_module,
                 "data_assign": _data_assign_via_module,
                 "saved_tensors_hooks": _saved_tensors_hooks_via_module}


def probe_program(capability: str) -> Program:
    return Program([Stmt.from_json(s.to_json()) for s in PROBES[capability]],
                   meta={"probe": capability})


@dataclass
class ProbeResult:
    capability: str
    declared: bool
    works: bool | None       # None: no probe, or the oracle cannot run it
    detail: str

    @property
    def verdict(self) -> str:
        if self.works is None:
            return "unprobed"
        if self.works == self.declared:
            return "ok"
        return "declared but fails" if self.declared else "declared absent but works"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}

    def __str__(self) -> str:
        state = "declared" if self.declared else "declared absent"
        return f"{self.capability} ({state}): {self.verdict}: {self.detail}"


def probe(engine: Engine, oracle: Engine, capability: str) -> ProbeResult:
    """Does `capability` work on `engine`, judged against `oracle`?"""
    declared = capability in engine.capabilities
    if capability in MODULE_PROBES:
        works, detail = MODULE_PROBES[capability](engine)
        return ProbeResult(capability, declared, works, detail)
    if capability not in PROBES:
        return ProbeResult(capability, declared, None, "no probe for this capability")
    if capability not in oracle.capabilities:
        return ProbeResult(capability, declared, None, f"the oracle {oracle.name} lacks it")
    program = probe_program(capability)
    o, e = execute(program, oracle), execute(program, engine)
    if any(ev.status == "error" and ev.error == "OTHER" for ev in o.events):
        bad = next(ev for ev in o.events if ev.error == "OTHER")
        return ProbeResult(capability, declared, None,
                           f"the probe fails on the oracle: {bad.message}")
    found = compare(program, o, e, Relief(program, o, lambda p: execute(p, oracle)))
    if not found:
        return ProbeResult(capability, declared, True, "the probe program runs as on the oracle")
    d = found[0]
    return ProbeResult(capability, declared, False,
                       f"statement {d.path} ({d.op}): {d.what}: oracle {d.oracle}; "
                       f"engine {d.engine}"[:300])


def check_declarations(engine: Engine, oracle: Engine, absent_only: bool = True,
                       progress: Callable[[str], None] | None = None) -> list[ProbeResult]:
    """Probe the capabilities `engine` declares absent (all of them with absent_only=False),
    in vocabulary order."""
    out = []
    for cap in CAPABILITIES:
        if absent_only and cap in engine.capabilities:
            continue
        if progress:
            progress(cap)
        out.append(probe(engine, oracle, cap))
    return out


__all__ = ["MODULE_PROBES", "PROBES", "ProbeResult", "check_declarations", "probe", "probe_program"]
