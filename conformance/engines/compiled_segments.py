"""torch.compile as users compile it: each segment of a program is one compiled function.

Engines: `torch-compile-eager`, `torch-compile-aot-eager`, `torch-compile-inductor`. The names
are `torch.compile`'s `backend=` argument ("eager", "aot_eager", "inductor"), one engine per
backend, because each backend adds one layer to the one before it: "eager" is dynamo alone (it
captures an FX graph and runs it as is), "aot_eager" adds AOTAutograd (the joint forward and
backward graph, functionalisation, views replayed and mutations written back) and "inductor"
adds inductor's code generation (C++ on cpu). A divergence that the eager backend shows is
dynamo's; one that only aot_eager and inductor show is AOTAutograd's; one that only inductor
shows is inductor's. The older `torch-compile` engine (compiled.py) compiles each op statement
alone with fullgraph=True, which never shows graphs of several ops.

What is compiled. The executor splits a program into segments (conformance/judge/segments.py):
straight-line runs of top-level statements, each ending after a backward-like statement. This
adapter's `run_segment(body, segment)` is `torch.compile(body, backend=B)()`, without
fullgraph: `body` runs the segment's statements through the executor and this adapter's
ordinary TorchLike methods, so dynamo traces the statements' torch calls as a user's function
of the same statements would be traced (leaf creation, ops, views, in-place writes, hooks and
retain_grad registered inside the region, grad-mode blocks), and graph-breaks where it must
(`.tolist()` of an observation, `.backward()`, a hook's Python). Each statement's events,
errors and warnings still attach to it, as in eager runs. Nothing is generated from program
text: no source is built, only the executor's own functions are traced. The body holds no loop
(dynamo skips a frame with a graph break inside a loop): it is straight-line code, one call per
statement, so dynamo resumes after each graph break and the ops of the statements between two
breaks are one FX graph (docs/findings.md, "Whole segments compiled"). An op that raises while
dynamo traces (TorchRuntimeError, before the frame runs) would fail the unit as a whole; the
executor then reruns its unfinished statements, the first alone (`unit_not_started`), so the
error stays on its statement as in eager torch.

What stays eager: observations. The adapter's reading methods (OBSERVERS: to_list, get_grad,
is_leaf, requires_grad, retains_grad, version_counter, shape, dtype, ...) run under
torch.compiler.disable: dynamo graph-breaks at each and it reads the real tensor, as the
oracle does, not a traced one. They are gradspec's helpers, one function called on every
observed tensor, not the program's computation; traced, they met C8 of docs/findings.md
(`bool(t.is_leaf)` of an input is baked into the compiled helper without a guard and reused
for the next tensor observed), which then showed in 37 of 60 programs and hid everything else.
The first campaign ran with them traced; C8 stands on its standalone repro.

gradspec's other bookkeeping (Event records, the list of warnings, the names bound) is Python
that dynamo traces too; it is plain data manipulation dynamo models as side effects, replayed
in order at each graph break. A divergence this adapter causes by being traced rather than
torch (a wrong value or error of gradspec's own code) would be an adapter artifact: every
divergence classified was rerun as a standalone torch script before it was called torch's
(docs/findings.md, "Whole segments compiled").

Backward. A backward-like statement (backward, autograd.grad) ends its segment and runs inside
the compiled function: dynamo graph-breaks at it and it runs under compiled autograd, enabled by
the public config `torch._dynamo.config.compiled_autograd = True` (patched for the call), which
"enables the Compiled Autograd engine to trace autograd calls made under torch.compile()" with
the same backend, and lets dynamo keep hooks registered on intermediates inside the graph
(without it dynamo graph-breaks: "Compilation of intermediate hooks requires compiled autograd").
That is what a user who compiles a training step with that config gets.

Per program. `begin_program` (called by the executor before every program) runs
`torch._dynamo.reset()`, so a program's result does not depend on what the worker compiled for
earlier programs, and the recompile limit is raised and made an error (hitting it would
otherwise fall back to eager silently, hiding the compiled run).

Capabilities: those of compiled.py, for its reasons (node names are CompiledFunctionBackward;
create_graph is refused through compiled autograd; the others are not probed through compiled
regions). `eager()` is eager torch with the same capabilities: the per-statement twin whose
replay localises a divergence (it never diverges from the oracle, so a divergence is the unit's).
"""
from __future__ import annotations

from .compiled import CAPABILITIES, classify_wrapped
from .torchlike import TorchLike

# the reading methods that run eagerly (torch.compiler.disable): see "What stays eager"
OBSERVERS = ("to_list", "get_grad", "is_leaf", "requires_grad", "retains_grad",
             "version_counter", "shape", "dtype", "base", "stride", "grad_dtype",
             "grad_fn_name", "next_functions", "is_inference", "is_grad_enabled")

RECOMPILE_LIMIT = 64    # recompiles of one frame before dynamo fails (fail_on_recompile_limit_hit)

# engine name -> torch.compile backend
BACKENDS = {"torch-compile-eager": "eager", "torch-compile-aot-eager": "aot_eager",
            "torch-compile-inductor": "inductor"}


class SegmentCompiledTorch(TorchLike):
    """TorchLike whose every segment runs as one torch.compile'd function."""

    granularity = "segment"

    def __init__(self, name: str, device: str = "cpu", backend: str | None = None,
                 capabilities: frozenset[str] = CAPABILITIES):
        import torch
        import torch._dynamo
        super().__init__(torch, name, device, capabilities)
        self.backend = backend or BACKENDS[name]
        self.version = f"{torch.__version__} ({self.backend}, segments)"
        cfg = torch._dynamo.config
        cfg.recompile_limit = RECOMPILE_LIMIT
        cfg.accumulated_recompile_limit = 4096
        cfg.fail_on_recompile_limit_hit = True
        self.programs = 0       # programs begun (begin_program), for tests
        for name in OBSERVERS:  # instance attributes: the class keeps TorchLike's methods
            setattr(self, name, torch.compiler.disable(getattr(super(), name)))

    def begin_program(self) -> None:
        self.torch._dynamo.reset()
        self.programs += 1

    def run_segment(self, body, segment):
        with self.torch._dynamo.config.patch(compiled_autograd=True):
            self.torch.compile(body, backend=self.backend)()

    def unit_not_started(self, exc: Exception) -> bool:
        """Whether exc left the unit's unfinished statements unrun: dynamo raises
        TorchRuntimeError (an op raises on fake tensors) and InternalTorchDynamoError (another
        exception, e.g. of a tensor factory) while it traces a frame, before the frame runs.
        The executor then reruns them (conformance/judge/segments.py). An error raised while a
        compiled graph runs is not one: ops before it in the graph may have written."""
        exc_types = self.torch._dynamo.exc
        return isinstance(exc, (exc_types.TorchRuntimeError, exc_types.InternalTorchDynamoError))

    def eager(self) -> TorchLike:
        return TorchLike(self.torch, "torch", self.device, self.capabilities)

    def classify_error(self, exc):
        return classify_wrapped(super().classify_error, exc)

    def render_prelude(self):
        return None     # repros are `gradspec replay ... --engine <this engine's name>`


def built(cls: type, name: str, device: str) -> SegmentCompiledTorch:
    """An engine of class cls (SegmentCompiledTorch or a subclass, compiled_train.py) named
    name on device, or EngineError in one line where torch._dynamo or the device is missing."""
    from . import EngineError
    try:
        import torch
        import torch._dynamo  # noqa: F401
    except Exception as exc:
        raise EngineError(f"engine {name!r}: cannot import torch._dynamo: {exc}") from None
    if device == "cuda" and not torch.cuda.is_available():
        raise EngineError(f"engine {name!r} on cuda: CUDA is not available")
    return cls(name, device)


def _factory(name: str, device: str) -> SegmentCompiledTorch:
    return built(SegmentCompiledTorch, name, device)


def eager_engine(device: str = "cpu") -> SegmentCompiledTorch:
    return _factory("torch-compile-eager", device)


def aot_eager_engine(device: str = "cpu") -> SegmentCompiledTorch:
    return _factory("torch-compile-aot-eager", device)


def inductor_engine(device: str = "cpu") -> SegmentCompiledTorch:
    return _factory("torch-compile-inductor", device)


__all__ = ["BACKENDS", "OBSERVERS", "SegmentCompiledTorch", "aot_eager_engine", "eager_engine",
                      "inductor_engine"]
