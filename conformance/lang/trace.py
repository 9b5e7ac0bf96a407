"""What running a program on an engine recorded, as plain data: a Trace of Events.

One Event per statement, in execution order, says what happened: ok, error (with the spec
error kind, spec/errors.md, or OTHER), skipped (it names a tensor that an earlier failed or
skipped statement would have bound) or harness (gradspec could not express the statement to
the engine: conformance.lang.program.HarnessError; never the engine's doing). It holds the
observation, the warning kinds emitted and the hook calls made while the statement ran, in
call order. A Trace is plain JSON.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .program import KINDS

OTHER = "OTHER"     # the error kind of an exception that matches no kind in spec/errors.md
HARNESS = "harness"  # the status of a statement gradspec could not express to an engine


def plain(v: Any) -> Any:
    """An adapter's answer as JSON data: a wrong type becomes a string that compares unequal,
    never an exception that would end the run."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "tolist"):            # numpy / cupy arrays and scalars
        return plain(v.tolist())
    return f"<{type(v).__name__}>"


def valued(op: str) -> bool:
    """Whether the Event of a statement of this op records a value (observe, grad, ...)."""
    kind = KINDS.get(op)
    return kind is not None and kind.valued


@dataclass
class Event:
    path: str
    op: str
    status: str = "ok"                  # ok | error | skipped | harness
    error: str | None = None            # spec error kind, or OTHER
    message: str | None = None          # "Type: first line" of the error, for people only
    warnings: list[str] = field(default_factory=list)
    value: Any = None                   # what an observe (or grad) statement saw
    dtype: str | None = None            # dtype of a tensor-valued observation (tolerances)
    hooks: list[list[Any]] = field(default_factory=list)  # [label, grad, dtype], call order
    shapes: list[Any] | None = None     # operand shapes of a matmul (the comparator: VER-1)
    segment: str | None = None          # id of the unit that ran it (judge/segments.py), if any
    seed_requires_grad: bool | None = None  # True: a pass without create_graph was handed a
    #                                     gradient that requires grad (the comparator: UNSPEC-3)
    integral_requires_grad: bool | None = None  # True: a write left its integer or bool
    #                                     target requiring grad (the comparator: UNSPEC-18)
    unrecorded: bool | None = None      # True: a write left its target not requiring grad,
    #                                     so recorded nothing on it (the comparator: UNSPEC-17)
    overlapping_write: bool | None = None  # True: a write into a tensor with a stride-0
    #                                     dimension recorded a node (the comparator: INPLACE-18)
    inference_swapped: bool | None = None  # True: `.data =` between an inference tensor and
    #                                     one that is not (the comparator: UNSPEC-10)
    integral_seed: bool | None = None   # True: a pass handed an integer or bool gradient
    #                                     to a leaf root whose grad_dtype is None (UNSPEC-16)
    inference_operand: bool | None = None  # True: a statement that raised INFERENCE_SAVED or
    #                                     an error of no kind read an inference tensor (UNSPEC-10)
    operands_recorded: bool | None = None  # True: an op recorded a node with its tensor
    #                                     operands as inputs, which reads a stale view (UNSPEC-17)
    inference_alias: bool | None = None  # True: a detach() or .data (Kind.plain_alias) of an
    #                                     inference tensor (the comparator: UNSPEC-10)
    inference_computed: bool | None = None  # True: a statement that is no write bound a result
    #                                     computed from an inference tensor (UNSPEC-10)
    returned_operand: str | None = None  # the operand a statement that is no write bound as
    #                                     its result itself (a cast to its own dtype returns it)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "op": self.op, "status": self.status}
        for k in ("error", "message", "dtype", "shapes", "segment", "seed_requires_grad",
                  "integral_requires_grad", "unrecorded", "integral_seed",
                  "inference_swapped", "overlapping_write", "inference_operand",
                  "operands_recorded", "inference_alias", "inference_computed",
                  "returned_operand"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        for k in ("warnings", "hooks"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        if valued(self.op):
            d["value"] = self.value
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Event:
        return cls(**d)


@dataclass
class Trace:
    engine: str
    version: str
    device: str
    events: list[Event] = field(default_factory=list)

    def by_path(self) -> dict[str, Event]:
        return {e.path: e for e in self.events}

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "device": self.device,
                "events": [e.to_json() for e in self.events]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Trace:
        return cls(d["engine"], d["version"], d["device"],
                   [Event.from_json(e) for e in d["events"]])
