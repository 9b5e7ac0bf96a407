"""The engine adapter interface: what a third party implements to run gradspec on its engine
(docs/engines.md is the guide: conventions, what each capability needs, a worked example).

An adapter wraps one engine on one device. The executor (conformance/executor.py) drives it
one program statement at a time (conformance/program.py) and never touches engine objects
except through these methods, so an engine that does not look like torch at all can take part
(conformance/engines/torchlike.py implements them for any module that looks like `torch`).

Tensors and hook handles are opaque to gradspec: whatever the adapter returns is passed back
to it. Errors are the engine's own exceptions; `classify_error` maps them to the spec's error
kinds (spec/errors.md). Capabilities (spec/README.md) say which statements the engine can
express: the generator never produces the others, and clauses that need them are reported as
not applicable.

Granularity. By default the executor hands an adapter one statement at a time. An engine that
runs regions as one unit (torch.compile: one compiled function) sets `granularity` to "segment"
(a straight-line run of top-level statements that ends after a backward-like statement, or at
the end of the program), "program" (the whole program) or "step" (a segment with the grad-mode
blocks right after its backward: a training step with its update), and overrides
`run_segment`; see there and conformance/judge/segments.py. `eager` gives the per-statement
twin that localises a divergence found in a unit.

Conformance classes (spec/README.md). `classes` names the classes the engine claims: core (the
autograd semantics every PyTorch-like engine shares), torch-observable (torch's node names, edge
layout, hook order including ties, the exact saved-values table), diagnostics (warnings and
message text). The default claims all three, so an engine is judged on everything unless it
says otherwise. A divergence in a class the engine does not claim is not compared: a campaign
reports the program as not applicable, it never fails the run, and the clauses of that class
are n/a (`gradspec run --classes` overrides the claim for one run).
"""
from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..spec.examples import classify
from ..spec.reader import CLASSES
from .needs import KEYWORDS, NEEDS, accepts

Tensor = Any        # the engine's tensor type
Handle = Any        # the engine's hook handle type
Number = int | float


def unimplemented(engine: object, capabilities: frozenset[str] | set[str]) -> list[str]:
    """The methods `engine` lacks for the `capabilities` it declares, as 'capability: method',
    in NEEDS order: absent, or (an Engine subclass) not overridden from Engine, whose versions
    raise NotImplementedError."""
    missing = []
    for cap, methods in NEEDS.items():
        if cap not in capabilities:
            continue
        for m in methods:
            own = getattr(type(engine), m, None)
            if not callable(getattr(engine, m, None)) or (
                    isinstance(engine, Engine) and own is getattr(Engine, m)):
                missing.append(f"{cap}: {m}")
        for m, keyword in KEYWORDS.get(cap, ()):
            if callable(getattr(engine, m, None)) and not accepts(getattr(engine, m), keyword):
                missing.append(f"{cap}: {m}({keyword}=...)")
    return missing


class Engine(ABC):
    name: str = "?"                     # as chosen on the command line, e.g. "refimpl"
    version: str = "?"                  # the engine's version string
    device: str = "cpu"
    capabilities: frozenset[str] = frozenset({"core"})
    granularity: str = "statement"      # "statement" | "segment" | "program" | "step"
    classes: frozenset[str] = frozenset(CLASSES)    # the conformance classes it claims
    lacks_ops: frozenset[str] = frozenset()     # ops of the op table it cannot run (never
    #                                             drawn; docs/engines.md, "Finer capabilities")

    # ---- construction and ops -------------------------------------------------------------
    @abstractmethod
    def leaf(self, values: Sequence[float], shape: Sequence[int], dtype: str,
             requires_grad: bool) -> Tensor:
        """A new tensor; `values` is flat, row-major; dtype 'float32', 'float64', 'int64'
        (small integers) or 'bool' (docs/engines.md, the program language)."""

    @abstractmethod
    def call(self, fn: str, args: Sequence[Tensor | Number], kw: dict[str, Any]) -> Tensor:
        """An out-of-place op from program.FUNCTIONS, e.g. call('add', [x, 2.0], {})."""

    def view(self, target: Tensor, fn: str, kw: dict[str, Any]) -> Tensor:
        """A view op from program.VIEWS."""
        raise NotImplementedError

    def view_many(self, target: Tensor, fn: str, kw: dict[str, Any]) -> Sequence[Tensor]:
        """(capability multi_views) The outputs of target.split(kw['size'], dim=kw['dim']),
        target.chunk(kw['chunks'], dim=kw['dim']) or target.unbind(dim=kw['dim']), in order:
        views sharing one node (spec/view.md, VIEW-6, VIEW-9)."""
        raise NotImplementedError

    def getitem(self, target: Tensor, index: tuple[Any, ...]) -> Tensor:
        """target[index]; index holds ints and slice objects."""
        raise NotImplementedError

    def inplace(self, target: Tensor, fn: str, args: Sequence[Tensor | Number],
                kw: dict[str, Any]) -> Tensor:
        """An in-place op from program.INPLACE; returns the tensor now bound to the name
        (the same object for torch-like engines)."""
        raise NotImplementedError

    def setitem(self, target: Tensor, index: tuple[Any, ...], value: Tensor | Number) -> None:
        raise NotImplementedError

    @abstractmethod
    def detach(self, t: Tensor) -> Tensor: ...

    def data(self, t: Tensor) -> Tensor:
        """The `.data` of t: shares storage, not the version counter or the graph."""
        raise NotImplementedError

    @abstractmethod
    def requires_grad_(self, t: Tensor, value: bool) -> None: ...

    def set_requires_grad(self, t: Tensor, value: bool) -> None:
        """(capability requires_grad_setter) The attribute setter `t.requires_grad = value`,
        which unlike requires_grad_() refuses a non-leaf whatever the value (LEAF-11)."""
        raise NotImplementedError

    def set_grad_dtype(self, t: Tensor, dtype: str | None) -> None:
        """(capability grad_dtype) `t.grad_dtype = dtype`: 'float32', 'float64' or None
        (GRAD-7, LEAF-9, LEAF-13)."""
        raise NotImplementedError

    def set_data(self, t: Tensor, value: Tensor | None) -> None:
        """(capability data_assign) `t.data = value`: t keeps its identity, flags, node,
        hooks, .grad and version counter and takes value's memory, shape and dtype (DATA-1,
        DATA-2); `value` None must raise DATA_NOT_TENSOR (DATA-6)."""
        raise NotImplementedError

    def set_(self, t: Tensor, src: Tensor) -> None:
        """(capability data_assign) `t.set_(src)`: t shares src's storage and shape, as an
        in-place write of t (DATA-7, DATA-8)."""
        raise NotImplementedError

    def detach_(self, t: Tensor) -> None:
        """(capability detach_inplace) `t.detach_()`: t stops requiring grad and becomes a
        leaf, in place; refused on a view (VIEW-8, VER-16, INPLACE-1)."""
        raise NotImplementedError

    def retain_grad(self, t: Tensor) -> None:
        raise NotImplementedError

    # ---- hooks ----------------------------------------------------------------------------
    def register_hook(self, t: Tensor, fn: Callable[[Tensor], Tensor | None]) -> Handle:
        raise NotImplementedError

    def register_post_accumulate_grad_hook(self, t: Tensor,
                                           fn: Callable[[Tensor], None]) -> Handle:
        raise NotImplementedError

    def remove_hook(self, handle: Handle) -> None:
        raise NotImplementedError

    def register_node_hook(self, t: Tensor, kind: str,
                           fn: Callable[[tuple[Tensor | None, ...]], tuple | None]) -> Handle:
        """A hook on t.grad_fn (capability node_hooks, HOOK-15): kind 'pre' (register_prehook;
        fn gets the node's grad_outputs) or 'post' (register_hook; fn gets its grad_inputs).
        fn returns None or a replacement tuple."""
        raise NotImplementedError

    def register_multi_grad_hook(self, tensors: list[Tensor], fn: Callable[[Any], None],
                                 mode: str) -> Handle:
        """torch.autograd.graph.register_multi_grad_hook(tensors, fn, mode=mode) (capability
        multi_grad_hooks, HOOK-19, HOOK-20): mode 'all' calls fn(grads), a sequence with one
        gradient or None per tensor, once per pass when every counted tensor's hook ran;
        'any' calls fn(grad) once per pass with the first gradient. The handle removes all
        its hooks (remove_hook)."""
        raise NotImplementedError

    # ---- grad modes -----------------------------------------------------------------------
    def grad_mode(self, mode: str, enabled: bool = True) -> AbstractContextManager[Any]:
        """A context manager for 'no_grad', 'enable_grad', 'set_grad_enabled' or (capability
        inference_mode) 'inference_mode'; `enabled` is the argument of the last two. The
        executor leaves `enabled` out where the program does (an `inference_mode()` with no
        argument), so that an adapter may call the library's own default: give it a default
        of True."""
        raise NotImplementedError

    def grad_mode_decorator(self, mode: str, enabled: bool = True) -> Callable[[Any], Any]:
        """The same mode as a function decorator (MODE-5), e.g. torch.no_grad(). From generator
        vocabulary 17 it also decorates generator functions (a mode statement with
        params.generator): each resumption of the generator must run in the mode (MODE-12)."""
        raise NotImplementedError

    def is_grad_enabled(self) -> bool:
        """torch.is_grad_enabled() (MODE-6)."""
        raise NotImplementedError

    # ---- saved-tensor hooks (capability saved_tensors_hooks; spec/saved.md) ----------------
    def saved_tensors_hooks(self, pack: Callable[[Tensor], Any],
                            unpack: Callable[[Any], Any]) -> AbstractContextManager[Any]:
        """torch.autograd.graph.saved_tensors_hooks(pack, unpack): a context manager."""
        raise NotImplementedError

    def clone(self, t: Tensor) -> Tensor:
        """`t.detach().clone()`: what a pack hook that copies returns."""
        raise NotImplementedError

    def disable_saved_tensors_hooks(self, message: str) -> AbstractContextManager[Any]:
        """torch.autograd.graph.disable_saved_tensors_hooks(message) (SAVED-10)."""
        raise NotImplementedError

    def save_on_cpu(self) -> AbstractContextManager[Any]:
        """torch.autograd.graph.save_on_cpu() with its defaults (SAVED-9)."""
        raise NotImplementedError

    def apply_function(self, name: str, args: Sequence[Tensor | Number],
                       legacy: bool = False) -> Tensor | tuple[Tensor, ...]:
        """(capability custom_function) `F.apply(*args)` of the catalogue's Function `name`
        (docs/engines.md); with `legacy`, `F()(*args)`, which must raise LEGACY_FUNCTION."""
        raise NotImplementedError

    # ---- backward -------------------------------------------------------------------------
    # With the capability create_graph each of the three also takes the keyword create_graph=True
    # (passed only when a statement sets it: DOUBLE-1); an engine without it may leave it out.
    @abstractmethod
    def backward(self, t: Tensor, gradient: Tensor | None, retain_graph: bool | None,
                 inputs: Sequence[Tensor] | None) -> None: ...

    def autograd_backward(self, tensors: Sequence[Tensor],
                          grad_tensors: Sequence[Tensor | None] | None,
                          retain_graph: bool | None) -> None:
        """torch.autograd.backward on several tensors at once (API-12)."""
        raise NotImplementedError

    def autograd_grad(self, outputs: Sequence[Tensor], inputs: Sequence[Tensor],
                      grad_outputs: Sequence[Tensor] | None, retain_graph: bool | None,
                      allow_unused: bool) -> Sequence[Tensor | None]:
        raise NotImplementedError

    @abstractmethod
    def set_grad(self, t: Tensor, value: Tensor | None) -> None: ...

    # ---- observation ----------------------------------------------------------------------
    @abstractmethod
    def to_list(self, t: Tensor) -> Any:
        """Nested Python lists of floats (a float for 0-d)."""

    @abstractmethod
    def get_grad(self, t: Tensor) -> Tensor | None: ...

    @abstractmethod
    def is_leaf(self, t: Tensor) -> bool: ...

    @abstractmethod
    def requires_grad(self, t: Tensor) -> bool: ...

    @abstractmethod
    def shape(self, t: Tensor) -> tuple[int, ...]: ...

    @abstractmethod
    def dtype(self, t: Tensor) -> str:
        """'float32', 'float64', 'int64' or 'bool'."""

    def grad_fn_name(self, t: Tensor) -> str | None:
        raise NotImplementedError

    def grad_dtype(self, t: Tensor) -> str | None:
        """(capability grad_dtype) A leaf's `grad_dtype`, as dtype() names dtypes, or None."""
        raise NotImplementedError

    def next_functions(self, t: Tensor) -> list[str | None]:
        """Names of t.grad_fn's next functions, None for inputs that need no grad."""
        raise NotImplementedError

    def graph_of(self, tensors: dict[str, Tensor]) -> dict[str, Any]:
        """The backward graph of `tensors` (program name -> tensor), as plain data (drawing then
        needs no engine objects) for conformance/reports/graph.py (optional; capability
        grad_fn): `tensors`: one entry per distinct tensor that requires grad, {"names" (its program
        names; [] for a leaf reached only through its AccumulateGrad), "leaf", "node" (index of
        its grad_fn in `nodes`, None for a leaf), "shape", "dtype"}; `nodes`: in the order
        first reached, from the tensors in the order given, through next_functions, {"name"
        (Node.name()), "saved" ([label, text] per saved value, None when the engine cannot
        say), "freed" (its saved values were freed; None: cannot say), "variable" (index in
        `tensors` of the leaf an AccumulateGrad node accumulates into, else None)}; `edges`:
        [node, next node, input index] per non-None entry of next_functions."""
        raise NotImplementedError

    def parameter(self, t: Tensor) -> Tensor:
        """(capability nn_module) torch.nn.Parameter(t): a parameter holding t's values, a leaf
        that requires grad, which a module can register (GRAD-5)."""
        raise NotImplementedError

    def module_zero_grad(self, params: list[Tensor], set_to_none: bool) -> None:
        """(capability nn_module) zero_grad(set_to_none=set_to_none) of a torch.nn.Module whose
        parameters are `params`, registered in that order (GRAD-5, GRAD-6)."""
        raise NotImplementedError

    def base(self, t: Tensor) -> Tensor | None:
        """(capability view_base) t._base: the tensor a view's chain of view ops started from,
        None for a tensor that is no view (VIEW-1)."""
        raise NotImplementedError

    def stride(self, t: Tensor) -> tuple[int, ...]:
        """(capability grad_tensor) t.stride(): elements, not bytes, between neighbours along
        each dim (GRAD-2 reads it of a .grad)."""
        raise NotImplementedError

    def version_counter(self, t: Tensor) -> int:
        """t._version (`version` is the engine's version string)."""
        raise NotImplementedError

    def retains_grad(self, t: Tensor) -> bool:
        raise NotImplementedError

    def is_inference(self, t: Tensor) -> bool:
        """t.is_inference(): made in inference mode (INFER-2)."""
        raise NotImplementedError

    def scale(self, g: Tensor, factor: float) -> Tensor:
        """g * factor, used by 'scale' hooks; must not record a graph inside backward."""
        return self.call("mul", [g, factor], {})

    def wrong_shape(self, g: Tensor) -> Tensor:
        """A tensor whose shape differs from g's, used by 'wrong_shape' hooks."""
        n = _numel(self.shape(g)) + 1
        return self.leaf([0.0] * n, [n], self.dtype(g), False)

    def wrong_dtype(self, g: Tensor) -> Tensor:
        """Zeros of g's shape in the other float dtype, used by 'wrong_dtype' hooks."""
        other = "float64" if self.dtype(g) == "float32" else "float32"
        shape = self.shape(g)
        return self.leaf([0.0] * _numel(shape), list(shape), other, False)

    # ---- running several statements as one unit --------------------------------------------
    def begin_program(self) -> None:
        """Called by the executor before each program it runs on this engine (optional): where
        an engine drops what earlier programs left, so that a result does not depend on what
        else the process ran (a compiler's caches: compiled_segments.py resets dynamo)."""
        return None

    def run_segment(self, body: Callable[[], None], segment: Any) -> None:
        """Run one segment of a program as one unit (granularity "segment", "program", "step").
        `body()` runs the segment's statements through this adapter's ordinary methods, with the
        executor's per-statement bookkeeping inside it (an engine error in one statement is
        recorded on that statement); the engine runs it as its unit, e.g.
        `torch.compile(body)()`, or under a context the whole unit shares. `segment` says where
        the unit lies: `.id` ("3-7", its first and last top-level statement), `.index` (0 for
        the first), `.size` (its top-level statements), `.statements` (the program's, to read).

        An exception that escapes run_segment means the unit failed as a whole (a compile
        error): every statement of the segment that had not finished is recorded as an error
        of that kind, marked as the segment's failure, and the names they bind are dead; if
        all had finished, the segment's last statement takes the error. Unless the engine's
        optional `unit_not_started(exc)` says none of those had begun: then they run again, the
        first alone, then the rest as a unit (judge/segments.py). A unit of several that fails
        with an error kind the spec names makes the executor run the program again from its
        start, that unit's statements each a unit of its own; that run stands where one of them
        raises the same kind and the statements before the failure record the same there.
        Statements the program predicts raise (its meta "expect") are units of their own from
        the start."""
        body()

    def eager(self) -> Engine:
        """The per-statement twin of this engine: the same semantics driven one statement at a
        time. The executor replays a divergent program on it to find the first statement that
        differs (conformance/judge/localise.py). The default is this engine itself with
        granularity "statement"; an engine whose units change how statements run (a compiler)
        returns the engine it compiles for, e.g. eager torch."""
        if self.granularity == "statement":
            return self
        twin = copy.copy(self)
        twin.granularity = "statement"
        return twin

    # ---- errors and repros ----------------------------------------------------------------
    def classify_error(self, exc: BaseException) -> str | None:
        """The spec error kind of an exception the engine raised (None: not a spec error)."""
        return classify(exc)

    def classify_warning(self, message: Warning, category: type) -> str | None:
        return classify(message, category)

    def render_prelude(self) -> str | None:
        """Lines binding `torch` to this engine in a repro script; None: `gradspec replay`."""
        return None


def grad_mode(engine: Engine) -> bool | None:
    """The engine's grad mode, None when it has no grad modes or cannot say (what the
    campaign's hermetic runs check, and what drawing a graph puts back)."""
    if "grad_modes" not in engine.capabilities:
        return None
    try:
        return bool(engine.is_grad_enabled())
    except Exception:  # noqa: BLE001 - an engine that cannot say has nothing to check
        return None


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)
