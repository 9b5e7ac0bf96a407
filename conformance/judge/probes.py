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
from ..spec.capabilities import closure
from ..spec.reader import CAPABILITIES
from .compare import compare
from .conditioning import Relief
from .executor import execute
from .op_probes import OP_KINDS, PREFIX, op_program, probed_ops
from .probe_programs import (  # noqa: F401  (X: conformance.capabilities re-exports it)
    ALIASING,
    NEED_VIEWS,
    PROBES,
    X,
)

# why a probe through the engine's module cannot run: the adapter does not say the module is
# the engine (TorchLike's subclasses do not, unless they override render_prelude)
NO_MODULE = ("a torch-shaped module that is the engine (an adapter says its module is: "
             "Engine.render_prelude, docs/engines.md)")

def _node_hooks_via_module(engine: Engine) -> tuple[bool | None, str]:
    """grad_fn.register_hook and register_prehook, through the engine's torch-shaped module."""
    torch = getattr(engine, "torch", None)
    if torch is None or engine.render_prelude() is None:
        return None, f"no probe: node hooks need {NO_MODULE}"
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
        return None, f"no probe: custom Functions need {NO_MODULE}"
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
        return None, f"no probe: .data = and set_() need {NO_MODULE}"
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
        return None, f"no probe: saved-tensor hooks need {NO_MODULE}"
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


def probe_program(capability: str, inplace: bool = False) -> Program:
    """The probe's program; `inplace` (engine and oracle write in place): the views probe also
    writes a base and looks through its view, which views that copy fail."""
    if capability.startswith(PREFIX):       # one op of the op table (op_probes.py)
        return op_program(capability[len(PREFIX):])
    # graph_structure: compared without node names, as its programs are (structure.py)
    meta = {"capabilities": ["core", capability]} if capability == "graph_structure" else {}
    stmts = PROBES[capability] + (ALIASING if capability == "views" and inplace else [])
    return Program([Stmt.from_json(s.to_json()) for s in stmts],
                   meta={"probe": capability, **meta})


def declared(engine: Engine, name: str) -> bool:
    """Whether the engine declares the capability (or a coarse one that implies it), or for
    an op's probe ("op:<name>"), does not declare it lacks the op."""
    if name.startswith(PREFIX):
        return name[len(PREFIX):] not in (getattr(engine, "lacks_ops", None) or ())
    return name in closure(engine.capabilities)


def probe_names(engine: Engine) -> list[str]:
    """What `gradspec engines --probe` and `gradspec run` probe: every capability, and where
    the engine declares ops it lacks, every op a program for it could name."""
    ops = [PREFIX + op for op in probed_ops(frozenset(engine.capabilities))] \
        if getattr(engine, "lacks_ops", None) else []
    return [*CAPABILITIES, *ops]


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
    is_declared = declared(engine, capability)
    if capability in MODULE_PROBES:
        works, detail = MODULE_PROBES[capability](engine)
        return ProbeResult(capability, is_declared, works, detail)
    if capability not in PROBES and not capability.startswith(PREFIX):
        return ProbeResult(capability, is_declared, None, "no probe for this capability")
    if not declared(oracle, capability):
        return ProbeResult(capability, is_declared, None, f"the oracle {oracle.name} lacks it")
    if capability in NEED_VIEWS and not declared(engine, "views"):
        return ProbeResult(capability, is_declared, None, "the probe takes a view that aliases "
                           "its base, and the engine does not declare views")
    program = probe_program(capability, declared(engine, "inplace") and
                            declared(oracle, "inplace"))
    lacked = sorted({s.params.get("fn") for _, s in program.walk() if s.op in OP_KINDS}
                    & set(getattr(engine, "lacks_ops", None) or ()))
    if lacked and not capability.startswith(PREFIX):    # the op probes check the others
        return ProbeResult(capability, is_declared, None,
                           f"the probe names ops the engine lacks: {', '.join(lacked)}")
    o, e = execute(program, oracle), execute(program, engine)
    if any(ev.status == "error" and ev.error == "OTHER" for ev in o.events):
        bad = next(ev for ev in o.events if ev.error == "OTHER")
        return ProbeResult(capability, is_declared, None,
                           f"the probe fails on the oracle: {bad.message}")
    found = compare(program, o, e, Relief(program, o, lambda p: execute(p, oracle)))
    if not found:
        return ProbeResult(capability, is_declared, True, "the probe program runs as on the oracle")
    d = found[0]
    return ProbeResult(capability, is_declared, False,
                       f"statement {d.path} ({d.op}): {d.what}: oracle {d.oracle}; "
                       f"engine {d.engine}"[:300])


def check_declarations(engine: Engine, oracle: Engine, absent_only: bool = True,
                       progress: Callable[[str], None] | None = None) -> list[ProbeResult]:
    """Probe the capabilities `engine` declares absent (all of them with absent_only=False),
    in vocabulary order."""
    out = []
    for cap in probe_names(engine):
        if absent_only and declared(engine, cap):
            continue
        if progress:
            progress(cap)
        out.append(probe(engine, oracle, cap))
    return out


__all__ = ["MODULE_PROBES", "PROBES", "ProbeResult", "check_declarations", "declared", "probe",
           "probe_names", "probe_program"]
