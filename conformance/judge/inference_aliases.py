"""UNSPEC-10's inference aliases, followed statement by statement for the comparator
(conformance/judge/unspecified.py): each name bound to a `detach()` or `.data` of an inference
tensor taken outside inference mode, and each tensor whose `.grad` is one.

torch 2.13 gives such an alias a version counter of its own, starting at 0, lets in-place ops
write it outside the mode and a backward add into it as a `.grad`; another engine may treat it
as INFER-3 and INFER-4 treat other inference tensors: no counter, and those writes refused. So
which of the two a statement did is open, where one side ran it and the other raised:
INFERENCE_INPLACE for a write into an alias (its target), a backward without create_graph while
some `.grad` is one (which leaves a pass reaches is not followed) or a zero_grad that zeroes one
in place, where torch ran it (where torch refused one, it met a real inference `.grad`:
INFER-4); INFERENCE_VERSION for reading an alias's `_version`. What a refused write left in
memory is open as for any write refused with INFERENCE_INPLACE, and what a write that left an
alias requiring grad did too (torch 2.13 records it: an inference tensor that requires grad,
whose later ops record or not); unspecified.py opens both. The `_version` of an alias, of an
out-of-place result computed outside the mode from one or from any other inference tensor
(torch 2.13 starts a clone() or sum() at 1, a mean() at 2), and of what shares their counters,
is open as well (`versions`). A view of an alias is an inference tensor INFER-3 and INFER-4 cover,
as torch 2.13 treats it: that reading its `_version` and writing into it raise is compared.

The oracle's Event says which statements bind an alias (Event.inference_alias: a statement of a
plain-alias kind, Kind.plain_alias, whose target is an inference tensor) and which bind a
result computed from an inference tensor (Event.inference_computed), and which bind an operand
itself (Event.returned_operand: torch returns a tensor cast to its own dtype), which is then
what that operand was; the grad modes say where one ran (grad_modes.py). The statements' kinds
say what they do (registry.py); nothing here branches on a statement's op.
"""
from __future__ import annotations

from typing import Any

from ..lang.program import Stmt
from ..lang.trace import Event
from .grad_modes import GradModes


class InferenceAliases:
    def __init__(self, modes: GradModes) -> None:
        self.modes = modes
        self.names: set[str] = set()    # names bound to an alias
        self.grads: set[str] = set()    # tensors whose .grad is an alias (GRAD-3)
        self.versions: set[str] = set()     # names whose _version is open

    def outcome_open(self, s: Stmt, kind: Any, o: Event, e: Event) -> bool:
        """Whether which of running and refusing the statement did is open: one side ran it,
        the other refused it as an engine that gives an alias no counter would."""
        if {o.status, e.status} != {"ok", "error"}:
            return False
        error = o.error or e.error
        if error == "INFERENCE_INPLACE":
            return self._writes(s, kind, o)
        return error == "INFERENCE_VERSION" and any(
            aspect == "version" and tensor in self.names
            for tensor, aspect in kind.observed_aspects(s))

    def _writes(self, s: Stmt, kind: Any, o: Event) -> bool:
        """Whether the statement writes into an alias in place: its target, or a .grad that is
        one, which a pass without create_graph adds into (GRAD-4; a pass with it replaces the
        .grad, DOUBLE-3) or a zero_grad zeroes (one that sets .grads to None writes none).
        torch 2.13 always runs those: where the oracle refused one, the .grad it refused is a
        real inference tensor (INFER-4), compared, whatever alias .grads there are besides."""
        if kind.writes and s.target in self.names:
            return True
        if not self.grads or o.status != "ok":
            return False
        zeroed = set(kind.touches_grads(s)).difference(kind.resets_grads(s))
        return (kind.fills_grads and not kind.records_grads(s)) or \
            not self.grads.isdisjoint(zeroed)

    def recorded_write(self, s: Stmt, kind: Any, o: Event) -> bool:
        """Whether the statement wrote into an alias and, on the oracle, left it requiring
        grad (Event.unrecorded unset: an operand required grad and grad mode was on)."""
        return kind.writes and s.target in self.names and o.status == "ok" and \
            not o.unrecorded

    def update(self, s: Stmt, kind: Any, o: Event, e: Event) -> bool:
        """Follow the statement; whether its outcome was open (outcome_open, asked first)."""
        refused = self.outcome_open(s, kind, o, e)
        if not kind.writes:     # (a write binds its target: the tensor it wrote, as before)
            self._bind(s, kind, o)
        return refused

    def _bind(self, s: Stmt, kind: Any, o: Event) -> None:
        bound = kind.binds(s)
        outside = not self.modes.modes(o.path)[1]
        computed = outside and not kind.binds_handle and (
            bool(o.inference_computed) or not self.names.isdisjoint(kind.refs(s)))
        shared = kind.shares_counter(s) and s.target in self.versions
        same = o.returned_operand   # the operand itself (a cast to its own dtype): as it is
        alias, versioned = same in self.names, same in self.versions
        self.names.difference_update(bound)
        self.versions.difference_update(bound)
        if o.inference_alias and o.status == "ok" and outside or alias:
            self.names.update(bound)
        if computed or shared or versioned or o.inference_alias and outside:
            self.versions.update(bound)
        if kind.assigns_grad and s.target:
            self.grads.discard(s.target)
        for tensor, name in kind.holds_grad(s):
            if kind.assigns_grad and name in self.names:
                self.grads.add(tensor)      # tensor.grad = alias
            elif not kind.assigns_grad and tensor in self.grads:
                self.names.add(name)        # name = tensor.grad: the alias itself
                self.versions.add(name)
        self.grads.difference_update(kind.resets_grads(s))
