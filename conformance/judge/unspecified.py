"""What spec/unspecified.md says not to compare, tracked statement by statement while two traces
are compared (conformance/judge/compare.py).

The comparator asks each statement's kind what it does to these open points (the "open points"
of conformance/kinds/registry.py); it never branches on a statement's op. Where what is open
depends on the state a statement left (the Event flags the executor records: integral_seed,
inference_swapped, integral_requires_grad, unrecorded, overlapping_write, inference_operand,
operands_recorded, inference_alias, inference_computed and returned_operand:
inference_aliases.py),
the oracle's flags decide: the state behind each is itself specified, so an engine's own flag
is a claim under test, never a reason to compare less.
"""
from __future__ import annotations

import itertools
from typing import Any

from ..lang.program import Stmt
from ..lang.trace import OTHER, Event
from .grad_modes import GradModes
from .inference_aliases import InferenceAliases
from .memory_groups import fresh, merge
from .stale_views import StaleViews


def compared_warnings(ev: Event) -> list[str]:
    """The warning kinds of an event that are compared: not CREATE_GRAPH_CYCLE, which torch
    gives once per process unless torch.set_warn_always(True) (UNSPEC-9), where a program
    cannot know whether it is its process's first (a campaign's worker runs many)."""
    return [w for w in ev.warnings if w != "CREATE_GRAPH_CYCLE"]


def error_kind_open(o: Event, e: Event) -> bool:
    """Whether which error a statement raised is open, though that it raised is compared: a
    statement that read an inference tensor, where one side raised INFERENCE_SAVED and the other
    an error of no kind (UNSPEC-10: a recorded op that would save an inference tensor, with
    operands that do not fit, may raise either). The oracle's flag decides."""
    return bool(o.inference_operand) and o.status == e.status == "error" and \
        {o.error, e.error} == {"INFERENCE_SAVED", OTHER}


class Unspecified:
    """What spec/unspecified.md says not to compare, tracked statement by statement from what
    the statement kinds say about it (conformance/kinds/registry.py, "open points")."""

    def __init__(self) -> None:
        self.after_error = False            # UNSPEC-1: a backward raised; no .grad compared ...
        self.reset: set[str] = set()        # ... but those assigned since
        self.group: dict[str, int] = {}     # name -> storage it may share with other names
        self.stored: dict[int, set[str]] = {}   # UNSPEC-3: storage -> tensors it was .grad of
        self.held: dict[int, set[str]] = {}     # GRAD-3: storage -> tensors whose .grad is it
        self.retaining: set[str] = set()    # tensors retain_grad was called on (UNSPEC-16)
        self.inputs: set[str] = set()       # tensors named in a pass's inputs (non-leaves
        #                                     among them get a .grad as retained ones do)
        self.leaves: set[str] = set()       # names a leaf statement bound, not written since
        self.arriving: set[str] = set()     # grad_dtype None: .grad keeps the arriving dtype
        self.consumed: dict[str, int] = {}  # name -> how often statements computed with it
        self.graphed = False                # a pass with create_graph ran ...
        self.replaced = False               # ... and a plain one after it, which may have
        #                                     replaced a retained .grad or added into it: its
        #                                     node is open (UNSPEC-16; a leaf's stays, DOUBLE-4)
        self.aliased = False                # a tensor that may be some .grad was written
        self.base_open: set[str] = set()    # UNSPEC-3: made by a reshape, or a view of one
        self.layout_open: set[str] = set()  # tensors assigned a .grad (its strides are its own)
        self.layouts_open = False           # a create_graph pass replaced .grads (UNSPEC-16)
        self.lost: set[str] = set()         # tensors whose .grad aliased a tensor modified
        self.versionless: set[str] = set()  # VER-1: gradients, matmul with a 1-D operand
        self.storages = itertools.count(1)
        self.objects: dict[int, set[str]] = {}  # UNSPEC-3: storage -> names that may be one
        #                                         tensor object (autograd.grad's results)
        self.graph_open: dict[str, int] = {}    # UNSPEC-9: 2 a gradient a create_graph pass
        #                                         recorded (grad_fn open), 1 computed from one
        self.open: set[str] = set()         # names whose state depends on whether they are
        self.all_open = False               # a backward pass depended on it: nothing compared
        self.modes = GradModes()            # the modes each statement ran in
        self.stale_views = StaleViews(self.modes)   # UNSPEC-17: hooks on views an alias wrote
        self.inference = InferenceAliases(self.modes)   # UNSPEC-10: detach() of inference
        self.pass_open: set[str] = set()    # ... that may change gradients: a pass through
        #                                     these names is open (their values are not)
        self.seeded: set[str] = set()       # tensors whose .grad may be a gradient that
        #                                     requires grad a pass was handed (UNSPEC-3)
        self.view_root: dict[str, str] = {}     # a differentiable view -> the tensor its chain
        #                                         of view statements starts from
        self.integral: set[str] = set()     # UNSPEC-18: integer or bool tensors that require
        #                                     grad, and the names of their storage

    def depends(self, s: Stmt, kind: Any) -> bool:
        """Whether the statement reads a name whose state is left open (UNSPEC-3), binds a
        .grad that is (UNSPEC-1: one side may have none), runs a pass through what a hook on
        a stale view may have changed (UNSPEC-17) or computes with an integer tensor that
        requires grad (UNSPEC-18): it is not compared at all, and what it makes is open."""
        return self.all_open or not self.open.isdisjoint(kind.refs(s)) or (
            not kind.assigns_grad and any(self.grad(t) for t, _ in kind.holds_grad(s))) or (
            kind.backward_pass and not self.pass_open.isdisjoint(kind.refs(s))) or (  # UNSPEC-17
            bool(self.integral) and self._computes_with_integral(s, kind))

    def opens(self, s: Stmt, kind: Any, o: Event, e: Event) -> bool:
        """depends(), or a pass handed an integer or bool gradient for a leaf root whose
        grad_dtype is None (UNSPEC-16), which the oracle's Event records, or a statement one
        side ran and the other refused as an alias of an inference tensor allows (UNSPEC-10)."""
        return self.depends(s, kind) or bool(o.integral_seed) or \
            self.inference.outcome_open(s, kind, o, e)

    def _computes_with_integral(self, s: Stmt, kind: Any) -> bool:
        """Whether the statement computes with, writes or runs a pass through an integer or
        bool tensor that requires grad (UNSPEC-18); observing one, and taking a detach() or
        .data of one (an alias without a graph), is compared."""
        if kind.aliases and not kind.makes_view(s):
            return False
        return (kind.backward_pass or kind.writes or bool(kind.binds(s))) and \
            not self.integral.isdisjoint(kind.refs(s))

    def grad(self, name: str | None) -> bool:
        return (self.after_error and name not in self.reset) or name in self.lost

    def value(self, name: str | None) -> bool:
        return self.group.get(name or "") in self.stored

    def version(self, name: str | None) -> bool:
        return name in self.versionless or self.value(name) or name in self.inference.versions

    def mixed(self, name: str | None) -> bool:
        """The dtype of name's .grad is open (LEAF-9): its grad_dtype is None and it was
        computed with more than once, so gradients of two dtypes may meet at its accumulator,
        whose sum keeps the dtype of whichever arrives first (UNSPEC-7), in torch 2.13."""
        return name in self.arriving and self.consumed.get(name or "", 0) >= 2

    def layout(self, name: str | None) -> bool:
        """The strides of name's .grad are open: assigned (any layout, GRAD-3), replaced by a
        create_graph pass (UNSPEC-16), or the .grad itself is (UNSPEC-1)."""
        return self.layouts_open or name in self.layout_open or self.grad(name)

    def hides(self, aspect: str, name: str | None, refs: Any = ()) -> bool:
        """Whether an observation of `aspect` of tensor `name` is not to be compared (`refs`:
        every name the statement reads; a base_is is open when either tensor's base is)."""
        if self.all_open or name in self.open:      # UNSPEC-3, for one item of a sweep
            return True
        level = self.graph_open.get(name or "", 0)
        if level and (aspect == "next_functions" or (level == 2 and aspect == "grad_fn")):
            return True
        check = {"grad": self.grad, "value": self.value, "version": self.version,
                 "grad_is": self.grad, "grad_ref": self.grad, "grad_layout": self.layout,
                 "grad.dtype": self.mixed,
                 "results.dtype": lambda n: any(self.mixed(r) for r in refs),
                 "grad_grad_fn": lambda n: self.grad(n) or n in self.seeded or (
                     self.replaced and n not in self.leaves and (
                         n in self.retaining or n in self.inputs)),
                 "base_is": lambda n: not self.base_open.isdisjoint([n, *refs])}.get(aspect)
        return check is not None and check(name)

    def update(self, s: Stmt, kind: Any, o: Event, e: Event) -> None:
        depends = self.depends(s, kind)
        refused = self.inference.update(s, kind, o, e)  # (UNSPEC-10: its outcome was open)
        tainted = depends or bool(o.integral_seed) or refused   # (opens())
        if kind.backward_pass and "error" in (o.status, e.status):
            self._grads_open()              # a partial pass may have added into any
        self._tally(s, kind)
        merge(self.group, self.stored, s.target, kind.memory_source(s))    # set_, .data =
        stale = self.stale_views
        if kind.backward_pass and stale.stale:      # a stale view's retained .grad: what a
            self.lost.update(stale.unread_retained(s, kind, o))     # pass leaves there is open
        self._pass_open(s, kind, stale.update(s, kind, o, e))   # (UNSPEC-17, RETAIN-6)
        if kind.retains_target and s.target:
            self.retaining.add(s.target)
            self._unhold(lambda tensors: s.target in tensors)
        self.all_open |= depends and kind.backward_pass
        self._integral_seeded(s, kind, bool(o.integral_seed) and not depends or refused)
        self._acted_on(s, kind, tainted)
        if o.inference_swapped:  # UNSPEC-10: what the target is
            self.open |= {s.target or ""}               # now, and what it computes, is open
        touched = kind.touches_grads(s)
        if touched and ("error" in (o.status, e.status) or "." in (o.path or "")):
            self._grads_touched(touched)    # partway, or in a block's grad mode (GRAD-6)
        else:
            for name in kind.resets_grads(s):
                self._reset(name)
        if kind.assigns_grad and s.target:
            self.reset.add(s.target)
            self.lost.discard(s.target)
            self.seeded.discard(s.target)
            if kind.holds_grad(s):
                self.layout_open.add(s.target)
            else:
                self.layout_open.discard(s.target)
        for tensor, gradient in kind.stored_grads(s):
            g = self.group.setdefault(gradient, next(self.storages))
            self.stored.setdefault(g, set()).add(tensor)
        if kind.writes:
            self.leaves.discard(s.target or "")     # a leaf written with a graph: INPLACE-15
            g = self.group.get(s.target or "")
            self._written(s, kind, g, o, e)
            if g in self.stored:            # a write to a gradient tensor or a view of it, which
                self.lost.update(self.stored[g])    # a .grad a pass reached through views
                self.aliased = True                 # may share (UNSPEC-16): what holds a
                self._unhold(lambda tensors: True)  # .grad is open from now on
            return
        bound = kind.binds(s)
        self.leaves.difference_update(bound)
        if kind.makes_leaf:
            self.leaves.update(bound)
        into_graph = any(self.graph_open.get(n) == 2 for n in kind.refs(s))
        self.seeded.difference_update(bound)
        for name in fresh(self.group, self.storages, self.versionless, bound,
                          o.returned_operand or ""):
            self.graph_open.pop(name, None)
            if into_graph:                  # its edges may lead into a gradient's graph
                self.graph_open[name] = 1
        for name in kind.recorded_gradients(s):
            self.graph_open[name] = 2
        opened = kind.may_copy(s) or (kind.aliases and s.target in self.base_open)
        self.base_open.difference_update(bound)     # (`r = r[0]`: opened was read first)
        if opened:
            self.base_open.update(bound)
        if kind.aliases and s.target in self.group:
            for name in bound:              # every output of a view (split's several)
                self.group[name] = self.group[s.target]
                if kind.shares_version and s.target in self.versionless:
                    self.versionless.add(name)
        if kind.unversioned(s, o.shapes or e.shapes):
            self.versionless.update(bound)
        self.open.difference_update(bound)
        self._rooted(s, kind, bound, o)
        if tainted:                         # computed from what is open: open too
            self.open.update(bound)
        if o.seed_requires_grad or e.seed_requires_grad:    # a gradient that may be the seed
            self.open.update(bound)         # itself, or not, and so require grad (UNSPEC-3)
            if kind.fills_grads:            # a .grad it stores may be the seed itself
                self.seeded.update(self.group)
        self._holds(kind.holds_grad(s))
        self._may_be_one([n for n in kind.same_object(s) if n in self.group])

    def _written(self, s: Stmt, kind: Any, g: int | None, o: Event, e: Event) -> None:
        """What a write leaves open of its target and the names of its storage `g`."""
        if "INFERENCE_INPLACE" in (o.error, e.error) or (
                kind.wrote_if_refused(s, (o.error, e.error))) or \
                self.inference.recorded_write(s, kind, o):
            # a refused write to an inference tensor (UNSPEC-10), or to a tensor a custom
            # Function marked dirty (UNSPEC-11), may have written it or not; an inference
            # alias a write left requiring grad may be anything (UNSPEC-10)
            self.open |= self._names(g) | {s.target}
        if o.overlapping_write:         # INPLACE-18: a pass through the node it recorded
            self.pass_open |= self._family(s.target or "", g)
        if o.integral_requires_grad:    # UNSPEC-18
            self.integral |= self._family(s.target or "", g)

    def _family(self, target: str, g: int | None) -> set[str]:
        """The target and the tensors of its storage `g` it is a view of or that view it, by
        chains of view statements: not a detach() or .data of one, which starts its own."""
        root = self.view_root.get(target, target)
        return {target} | {n for n in self._names(g) if self.view_root.get(n, n) == root}

    def _rooted(self, s: Stmt, kind: Any, bound: list[str], o: Event) -> None:
        """Names bound afresh, or detached in place outside inference mode (torch 2.13: a leaf
        that does not require grad, and ops on it run as on any integer tensor): no longer
        integral (UNSPEC-18) unless computed from one; a differentiable view's chain starts
        where its target's does (a detach() or .data starts its own). A view of a tensor
        detached in place stays integral: torch 2.13 rebuilds its grad_fn from the detached
        base, or keeps the one read before, requiring grad."""
        self.integral.difference_update(bound)
        if o.status == "ok" and not self.modes.modes(o.path)[1]:
            self.integral.difference_update(kind.detaches(s))
        root = self.view_root.get(s.target or "", s.target) if kind.makes_view(s) else None
        for name in bound:
            if root is None:
                self.view_root.pop(name, None)
            else:
                self.view_root[name] = root

    def _pass_open(self, s: Stmt, kind: Any, hooked: list[str]) -> None:
        """A pass through these names is open (UNSPEC-17): the stale views a hook that may
        change gradients went on, what is computed from them and what they are written into
        (its storage's names); a name bound afresh from elsewhere is not."""
        bound = kind.binds(s)
        if self.pass_open.isdisjoint(kind.refs(s)):
            self.pass_open.difference_update(bound)
        else:
            self.pass_open.update(bound)
            if kind.writes and s.target:
                self.pass_open |= self._names(self.group.get(s.target)) | {s.target}
        self.pass_open.update(hooked)

    def _integral_seeded(self, s: Stmt, kind: Any, flagged: bool) -> None:
        """Where `flagged`: a pass handed an integer or bool gradient for a leaf root whose
        grad_dtype is None (UNSPEC-16; torch 2.13 fails an internal assert before it runs any
        node, and what follows runs as if the pass had not been), or that one side ran and the
        other refused partway (adding into a .grad that is an inference alias, UNSPEC-10).
        What it makes is open (tainted), and so is every .grad (it may have written any it
        reached; UNSPEC-1 as well, where it raised); where it reads a tensor that is no
        leaf, it may have freed or recorded the graph behind it, so a later pass through any
        tensor bound so far (the comparator does not track which graph a name belongs to) is
        open too. Other statements are compared."""
        if not flagged or not kind.backward_pass:
            return
        self._grads_open()
        if not self.leaves.issuperset(kind.refs(s)):
            self.pass_open |= set(self.group)

    def _tally(self, s: Stmt, kind: Any) -> None:
        """What later rules count: passes with and without create_graph and the tensors named
        in their inputs (a non-leaf's recorded .grad, UNSPEC-16), grad_dtypes set to None and
        how often each tensor was computed with (the dtype of its .grad, LEAF-9)."""
        if kind.backward_pass:
            self.layouts_open |= kind.records_grads(s)      # (.grads replaced: UNSPEC-16)
            graphed = bool(s.params.get("create_graph"))
            self.replaced |= self.graphed and not graphed
            self.graphed |= graphed
            inputs = s.params.get("inputs")
            self.inputs.update(n for n in inputs or [] if isinstance(n, str))
        elif kind.writes or (kind.binds(s) and not kind.binds_handle):
            for name in kind.refs(s):
                self.consumed[name] = self.consumed.get(name, 0) + 1
        for name, dtype in kind.grad_dtypes_set(s):
            (self.arriving.add if dtype is None else self.arriving.discard)(name)

    def _reset(self, name: str) -> None:
        """name's .grad was set to None: compared again from now on (UNSPEC-1 no longer
        applies), and what held it holds a tensor that is no .grad (GRAD-5)."""
        self.reset.add(name)
        self.lost.discard(name)
        self.layout_open.discard(name)
        self.seeded.discard(name)
        for g in [g for g, tensors in self.held.items() if name in tensors]:
            self.held[g].discard(name)
            if not self.held[g]:
                del self.held[g]

    def _grads_touched(self, names: list[str]) -> None:
        """A zero_grad that raised partway (it may have reset or zeroed some .grads and not
        others) or ran inside a block (in inference mode torch 2.13 does not cut a recorded
        .grad from its graph, GRAD-6): those .grads are open until assigned again, and so is
        all of what holds one of them."""
        self.lost.update(names)
        self.reset.difference_update(names)
        for g, tensors in list(self.held.items()):
            if not tensors.isdisjoint(names):
                self.open |= self._names(g)
        self._unhold(lambda tensors: not tensors.isdisjoint(names))

    def _grads_open(self) -> None:
        """Every .grad is open until assigned again (UNSPEC-1), and so is what holds one."""
        self.after_error, self.reset = True, set()
        self._unhold(lambda tensors: True)

    def _unhold(self, which) -> None:
        """The storages held as .grad (GRAD-3) of the tensors `which` picks: open from now on."""
        for g in [g for g, tensors in self.held.items() if which(tensors)]:
            self.stored.setdefault(g, set()).update(self.held.pop(g))

    def _holds(self, pairs: list[tuple[str, str]]) -> None:
        """`name` is tensor's .grad itself (GRAD-3): writes into its storage show in that
        .grad and a backward adds into it (GRAD-4), both compared; by how much its version
        moves is open (UNSPEC-3, UNSPEC-16). Where tensor's .grad is open (UNSPEC-1), may
        share memory with a gradient the program supplied, or is a retained one, which a pass
        may replace or write in place (UNSPEC-16), so are its values."""
        for tensor, name in pairs:
            if tensor in self.seeded:       # may be a seed that requires grad (UNSPEC-3)
                self.open.add(name)
            g = self.group.setdefault(name, next(self.storages))
            self.versionless |= self._names(g) | {name}
            if self.grad(tensor) or tensor in self.retaining or self.aliased or any(
                    tensor in ts for ts in self.stored.values()):
                self.stored.setdefault(g, set()).add(tensor)
            else:
                self.held.setdefault(g, set()).add(tensor)

    def _names(self, storage: int | None) -> set[str]:
        return {n for n, g in self.group.items() if g == storage}

    def _acted_on(self, s: Stmt, kind: Any, tainted: bool) -> None:
        """A statement that changes its target's state (writes into it, sets a flag, .grad or
        a hook): if the target may be one object with other names, their state is open from
        now on; if the statement itself read what is open, the target's is too."""
        if s.target is None or kind.valued or kind.aliases or kind.backward_pass or kind.block:
            return                          # reads its target, or derives a new tensor from it
        g = self.group.get(s.target)
        if tainted:
            self.open |= self._names(g) | {s.target}
        elif g in self.objects and (kind.writes or s.target in self.objects[g]):
            self.open |= self._names(g) - {s.target}

    def _may_be_one(self, names: list[str]) -> None:
        """Record that `names` may be one tensor object: one storage, as far as what is
        stored as .grad and what writes reach is concerned."""
        if len(names) < 2:
            return
        old = {self.group[n] for n in names}
        merged = next(self.storages)
        for n, g in self.group.items():
            if g in old:
                self.group[n] = merged
        stored = set().union(*(self.stored.pop(g, set()) for g in old))
        if stored:
            self.stored[merged] = stored
        self.objects[merged] = set(names).union(*(self.objects.pop(g, set()) for g in old))
