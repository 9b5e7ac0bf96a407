"""torch.compile of whole training steps, and the same with shapes made dynamic first.

Engines `torch-compile-train-<backend>` (backend eager, aot-eager, inductor): the whole-segment
engines of compiled_segments.py (one torch.compile'd function per unit, without fullgraph,
backward under compiled autograd through the public `torch._dynamo.config.compiled_autograd`,
observations eager, dynamo reset per program) with granularity "step"
(conformance/judge/segments.py): a unit is forward, loss, backward and the grad-mode blocks
right after the backward (the update under no_grad), the step function a user compiles. They
also claim grad_tensor and nn_module, which training steps need (`p -= lr * p.grad`, a
module's zero_grad): their probes pass. Making a Parameter runs eagerly (graph-breaks), as the
model is built before a user's compiled step: traced, dynamo cannot resume after
`torch.nn.Parameter()` and falls back to eager for the whole unit's frame. The programs that
exercise them are the training-step family (conformance/gen/training.py: `--source
conformance.gen.training:program`); default programs run on them too, as on the segment engines
but for the update blocks.

One frame (docs/findings.md, "Training steps compiled"): the unit's body is straight-line code
(conformance/judge/segments.py), so dynamo resumes after each graph break and the ops of the
statements between two breaks are one graph. Grad-mode blocks (the update) still run their body
through the executor's loop over statements, and there each op is a graph of its own.

Engines `torch-compile-dynamic-<backend>`: the same, and before each unit runs for real, the
same compiled function runs once on a shadow of the program's state in which every tensor the
unit reads from earlier units is a fresh leaf of the same dtype, rank, requires_grad and class
(Parameter stays Parameter) but other sizes (each size n >= 2 becomes n + 1: sizes that were
equal stay equal, 0 and 1 stay, which dynamo specializes anyway). The shadow is a copy of the
executor's run whose env holds those tensors and nothing else (hook handles and other values are
names the shadow treats as dead), with a trace of its own; its results, errors and warnings are
discarded. The shadow body is the executor's own body function rebuilt over the shadow
(same code object, so the same dynamo cache entries and the same automatic-dynamic frame
state), so the real run meets a guard failure on sizes and recompiles with those dims dynamic
(automatic_dynamic_shapes, on by default), as a user's training step recompiles after the
batch size changes. The program's own tensors are never handed to the shadow: their values,
versions, .grads and hooks are untouched by it. A unit that reads no tensor of an earlier unit
(the first) is not warmed.

Evidence that the real run used a dynamic graph: torch's own symbolic-shapes log (the logger
`torch.fx.experimental.symbolic_shapes`, what TORCH_LOGS=dynamic prints) is captured during
the real run: "marking ... as dynamic (from automatic dynamic/PGO)" and "create_symbol" records.
`stats` counts units (DynamicWarmTorch._count): not warmed; warmed and the real run compiled a
graph with a symbolic size (dynamic_compiled); warmed and the real run compiled nothing, running
graphs compiled with symbolic sizes by the warm run or an earlier unit (dynamic_reused: the
real run met only guards that its sizes and others passed); warmed and neither
(static: the warm run failed early, or the shapes it changed were not guarded on).
"""
from __future__ import annotations

import logging
import re
import types
from collections import Counter
from typing import Any

from ..lang.program import Stmt
from ..lang.trace import Trace
from .compiled import CAPABILITIES as REGION_CAPABILITIES
from .compiled_segments import RECOMPILE_LIMIT, SegmentCompiledTorch, built

# the segment engines' capabilities, and what a training step needs of them
CAPABILITIES = REGION_CAPABILITIES | {"grad_tensor", "nn_module"}

# engine name -> torch.compile backend
TRAIN = {"torch-compile-train-eager": "eager", "torch-compile-train-aot-eager": "aot_eager",
         "torch-compile-train-inductor": "inductor"}
DYNAMIC = {"torch-compile-dynamic-eager": "eager",
           "torch-compile-dynamic-aot-eager": "aot_eager",
           "torch-compile-dynamic-inductor": "inductor"}
SHAPES_LOG = "torch.fx.experimental.symbolic_shapes"
# a size made symbolic (sizes are s0, s1, ...; a float made dynamic is zf..., not counted)
SIZE_SYMBOL = re.compile(r"create_symbol s\d+ ")


class StepCompiledTorch(SegmentCompiledTorch):
    """SegmentCompiledTorch whose unit is a training step (granularity "step")."""

    granularity = "step"

    def __init__(self, name: str, device: str = "cpu", backend: str | None = None):
        super().__init__(name, device, backend or TRAIN[name], CAPABILITIES)
        # making a Parameter is building the model, which a user does before compiling the
        # step; traced, `torch.nn.Parameter()` is a graph break dynamo cannot resume from, so
        # it skips the whole unit's frame (every later unit too: one code object) and compiles
        # only the functions the executor calls, one graph each: not the step a user compiles
        self.parameter = self.torch.compiler.disable(super().parameter)
        self.version = f"{self.torch.__version__} ({self.backend}, training steps)"


class DynamicWarmTorch(StepCompiledTorch):
    """StepCompiledTorch that runs each unit once on a shadow of other sizes first."""

    def __init__(self, name: str, device: str = "cpu"):
        super().__init__(name, device, DYNAMIC[name])
        self.version = f"{self.torch.__version__} ({self.backend}, training steps, " \
                       "warmed on other shapes)"
        self.stats: Counter[str] = Counter()     # units, by what warming did: _count
        # every unit is compiled for two sets of sizes: twice the segment engines' limit (at
        # 64 a sweep of many tensors met it, its observation helper recompiled per tensor)
        self.torch._dynamo.config.recompile_limit = 2 * RECOMPILE_LIMIT
        self._sized = False     # a graph with a symbolic size compiled in this program

    def begin_program(self) -> None:
        super().begin_program()
        self._sized = False

    def run_segment(self, body, segment):
        from torch._dynamo.utils import counters
        with self.torch._dynamo.config.patch(compiled_autograd=True):
            with _captured(SHAPES_LOG) as warm:
                warmed = self._warm(body, segment)
                graphs = counters["stats"]["unique_graphs"]
            with _captured(SHAPES_LOG) as real:
                self.torch.compile(body, backend=self.backend)()
            graphs = counters["stats"]["unique_graphs"] - graphs
        self._count(warmed, _sized(warm) or self._sized, _sized(real), graphs)
        self._sized = self._sized or _sized(warm) or _sized(real)

    def _count(self, warmed: bool, warm: bool, real: bool, graphs: int) -> None:
        """Count a unit in `stats`: warmed or not; if warmed, whether the real run compiled a
        graph with a symbolic size (dynamic_compiled), or compiled no graph and so ran those
        the warm run or an earlier unit of the program compiled with one (dynamic_reused), or
        neither (static)."""
        self.stats["units"] += 1
        if not warmed:
            self.stats["not_warmed"] += 1
            return
        self.stats["warmed"] += 1
        if real:
            self.stats["dynamic_compiled"] += 1
        elif warm and not graphs:
            self.stats["dynamic_reused"] += 1
        else:
            self.stats["static"] += 1

    def _warm(self, body: Any, segment: Any) -> bool:
        """Run body's compiled function on a shadow of other sizes (module docstring);
        whether there was one. Whatever it raises is dropped: its results are not the run's."""
        x = _run_of(body)
        if x is None:
            return False
        read = {n for _, s in segment.walk() for n in _names(s)}
        torch = self.torch
        env = {n: _resized(torch, t) for n, t in x.env.items()
               if n in read and isinstance(t, torch.Tensor)}
        if not any(tuple(t.shape) != tuple(x.env[n].shape) for n, t in env.items()):
            return False
        shadow = _shadow(x, env)
        fn = types.FunctionType(body.__code__, body.__globals__, body.__name__,
                                (segment, []), (types.CellType(shadow),))
        mode = torch.is_grad_enabled()
        try:
            torch.compile(fn, backend=self.backend)()
        except Exception:  # noqa: BLE001 - the shadow's fate is not the program's
            pass
        finally:
            torch.set_grad_enabled(mode)
            shadow.env.clear()
        return True


def _sized(records: list[str]) -> bool:
    """Whether torch's symbolic-shapes log records a size made symbolic."""
    return any(SIZE_SYMBOL.match(r) for r in records)


def _run_of(body: Any) -> Any:
    """The executor's run a segment body closes over (conformance/judge/segments.py: `x`),
    or None where the body is not that function."""
    names = body.__code__.co_freevars
    if names != ("x",) or not body.__closure__ or len(body.__defaults__ or ()) != 2:
        return None
    x = body.__closure__[0].cell_contents
    return x if hasattr(x, "env") and hasattr(x, "stmt") else None


def _names(s: Stmt) -> set[str]:
    """Every string a statement or its body holds in its target, args or params: a superset of
    the names it reads (the statement kinds, which know exactly, are a layer above engines)."""
    found: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            found.add(v)
        elif isinstance(v, (list, tuple)):
            for u in v:
                walk(u)
        elif isinstance(v, dict):
            for u in v.values():
                walk(u)
    walk([s.target, s.args, s.params])
    for b in s.body:
        found |= _names(b)
    return found


def _resized(torch: Any, t: Any) -> Any:
    """A fresh leaf like t (dtype, rank, requires_grad, Parameter or not) with each size
    n >= 2 made n + 1."""
    shape = [n + 1 if n >= 2 else n for n in t.shape]
    if t.dtype.is_floating_point or t.dtype.is_complex:
        new = torch.full(shape, 0.5, dtype=t.dtype, device=t.device)
    else:
        new = torch.zeros(shape, dtype=t.dtype, device=t.device)
    if isinstance(t, torch.nn.Parameter):
        return torch.nn.Parameter(new, requires_grad=t.requires_grad)
    return new.requires_grad_(bool(t.requires_grad))


def _shadow(x: Any, env: dict[str, Any]) -> Any:
    """A copy of the executor's run x over env: every other name dead, a trace of its own,
    no progress callback. The list of warnings is shared: each statement takes its own."""
    shadow = object.__new__(type(x))
    shadow.__dict__.update(x.__dict__)
    shadow.env = env
    shadow.dead = set(x.dead) | (set(x.env) - set(env))
    shadow.trace = Trace(x.trace.engine, x.trace.version, x.trace.device)
    shadow.current = None
    shadow.on_statement = None
    return shadow


class _captured:
    """Within it, the INFO records of a logger, as formatted messages (then as it was)."""

    def __init__(self, name: str):
        self.logger = logging.getLogger(name)
        self.records: list[str] = []

    def __enter__(self) -> list[str]:
        records = self.records

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                records.append(record.getMessage())
        self.handler = Keep(logging.INFO)
        log = self.logger
        self.was = log.level, log.propagate, log.handlers
        log.handlers = [self.handler]       # not printed: torch's own handlers are set aside
        log.setLevel(logging.INFO)
        log.propagate = False
        return records

    def __exit__(self, *exc: Any) -> None:
        log = self.logger
        log.setLevel(self.was[0])
        log.propagate, log.handlers = self.was[1], self.was[2]


def train_eager_engine(device: str = "cpu") -> StepCompiledTorch:
    return built(StepCompiledTorch, "torch-compile-train-eager", device)


def train_aot_eager_engine(device: str = "cpu") -> StepCompiledTorch:
    return built(StepCompiledTorch, "torch-compile-train-aot-eager", device)


def train_inductor_engine(device: str = "cpu") -> StepCompiledTorch:
    return built(StepCompiledTorch, "torch-compile-train-inductor", device)


def dynamic_eager_engine(device: str = "cpu") -> DynamicWarmTorch:
    return built(DynamicWarmTorch, "torch-compile-dynamic-eager", device)


def dynamic_aot_eager_engine(device: str = "cpu") -> DynamicWarmTorch:
    return built(DynamicWarmTorch, "torch-compile-dynamic-aot-eager", device)


def dynamic_inductor_engine(device: str = "cpu") -> DynamicWarmTorch:
    return built(DynamicWarmTorch, "torch-compile-dynamic-inductor", device)


__all__ = ["CAPABILITIES", "DYNAMIC", "TRAIN", "DynamicWarmTorch", "StepCompiledTorch",
           "dynamic_aot_eager_engine", "dynamic_eager_engine", "dynamic_inductor_engine",
           "train_aot_eager_engine", "train_eager_engine", "train_inductor_engine"]
