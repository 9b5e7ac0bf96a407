"""The statement kinds of the program language, each one unit, and the registry of them.

A statement kind (leaf, call, backward, observe, ...) is one subclass of `Kind`, defined in one
module of this package beside the other kinds of its family. The class holds, side by side,
everything about the kind:

    name, doc      the `op` field of its statements and a one-line description
    caps, weight   the engine capabilities it needs; how often the generator draws it
    ends_segment   backward-like: a segment (conformance/judge/segments.py) ends after it
    binds_handle,  its out is a hook handle; its target is one (every other name a program
    takes_handle   reads or binds is a tensor: conformance/lang/validate.py checks that)
    check          validation of its fields (ProgramError naming the statement and the field)
    param_keys     the keys of its params (the validator rejects any other)
    refs, binds    the names it reads and (re)binds; needs: the capabilities one statement needs
    run            how it runs on an engine (the executor hands it the run in progress)
    render         its lines in a standalone script (conformance/reports/render.py)
    draw           how it is drawn (the generator hands it the program being drawn)
    open points    what spec/unspecified.md leaves open about its statements, for the
                   comparator (conformance/judge/compare.py): backward_pass,
                   assigns_grad, writes, aliases, shares_version, stored_grads,
                   retains_target, holds_grad, resets_grads, touches_grads, makes_leaf,
                   grad_dtypes_set,
                   records_grads, may_copy,
                   same_object, unversioned, observed, grad_hook, hook_labels,
                   recorded_results, roots_and_inputs,
                   hook_order_open, recorded_gradients, data_swapped, body_mode, detaches,
                   plain_alias, observed_aspects

The executor, the renderer, the minimizer and the generator are loops over KINDS; none of
them branches on a statement's op. ORDER is the one order of kinds (listings and the
generator's draw); it is an explicit tuple, never import order.
"""
from __future__ import annotations

from typing import Any, ClassVar

from ..lang.ops import weight_in
from ..lang.program import KINDS as LANGUAGE_KINDS

# The kinds in the language's one order: listings, and the generator's statement draw, which
# draws by weight in this order ("skip" before and "error" after, conformance/gen/order.py), so
# a kind's place here is part of what the golden digests pin. A new kind goes at the end.
ORDER: tuple[str, ...] = (
    "leaf", "call", "view", "getitem", "inplace", "setitem", "detach", "data",
    "requires_grad_", "retain_grad", "hook", "post_hook", "remove", "mode", "backward",
    "node_hook", "grad_enabled", "backward_many", "grad", "set_grad", "observe", "sweep",
    "multi_view", "multi_grad_hook", "set_grad_dtype", "set_data", "saved_hooks",
    "function", "dirty_function", "detach_", "set_", "disable_saved_hooks",
    "grad_ref", "grad_is", "base_is", "parameter", "zero_grad",
)


class Kind:
    """One statement kind. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str] = "?"
    doc: ClassVar[str] = ""
    caps: ClassVar[tuple[str, ...]] = ("core",)
    optional_caps: ClassVar[tuple[str, ...]] = ()  # capabilities a statement's params may add
    weight: ClassVar[int] = 0           # draw weight (conformance/gen/) ...
    since: ClassVar[int] = 1            # ... from this generator vocabulary on (0 before)
    reweighted: ClassVar[tuple[tuple[int, int], ...]] = ()  # (vocabulary, weight from it on)
    valued: ClassVar[bool] = False      # its Event records a value (observe, grad, ...)
    sweeps: ClassVar[bool] = False      # ... one per tensor it observes, judged one by one
    block: ClassVar[bool] = False       # it has a body of statements (grad-mode blocks)
    in_place: ClassVar[bool] = False    # it rebinds its target: a failure leaves it bound
    ends_segment: ClassVar[bool] = False    # backward-like: a segment ends after it
    binds_handle: ClassVar[bool] = False    # its out is a hook handle, not a tensor
    takes_handle: ClassVar[bool] = False    # its target is a hook handle, not a tensor
    param_keys: ClassVar[tuple[str, ...]] = ()     # the keys of params it reads
    # what spec/unspecified.md leaves open (read by conformance/judge/compare.py only)
    backward_pass: ClassVar[bool] = False   # it runs a backward pass: if it raises, no .grad
    #                                         is compared until assigned again (UNSPEC-1)
    assigns_grad: ClassVar[bool] = False    # it assigns its target's .grad (UNSPEC-1, -3)
    fills_grads: ClassVar[bool] = False     # its pass stores into .grad (not autograd.grad)
    retains_target: ClassVar[bool] = False  # its target retains its .grad, which a pass may
    #                                         replace or write in place (UNSPEC-16)
    writes: ClassVar[bool] = False          # it writes into its target's storage in place
    aliases: ClassVar[bool] = False         # its result may share its target's storage
    shares_version: ClassVar[bool] = False  # ... and shares its version counter (VER-4, -5)
    copies_when: ClassVar[tuple[str, ...]] = ()  # ... but a copy may come of these params.fn
    views_open: ClassVar[bool] = False      # what it binds may be a view (a gradient) or not
    makes_leaf: ClassVar[bool] = False      # what it binds is a leaf (until written in place)
    differentiable_view: ClassVar[bool] = False  # what it binds is a view whose grad_fn torch
    #                                         rebuilds lazily after a write through an alias
    guarded_view: ClassVar[bool] = False    # ... one that refuses in-place writes (VIEW-7,
    #                                         FUNC-14): register_hook may refuse it then
    writes_via_view: ClassVar[bool] = False  # it writes through a view of its target it makes
    #                                         (t[i] = v): not recorded on a view target
    plain_alias: ClassVar[bool] = False     # what it binds is a detach() or .data of its
    #                                         target: of an inference tensor outside the mode,
    #                                         its version and writes are open (UNSPEC-10)
    records_node: ClassVar[bool] = False    # an op that records a node with its tensor
    #                                         operands as inputs where what it binds (a write:
    #                                         its target) requires grad (recorded_results)

    # ---- the program language -----------------------------------------------------------
    def refs(self, s: Any) -> list[str]:
        """Names the statement reads (tensors or hook handles), in order."""
        names = [s.target] if s.target is not None else []
        return names + [a for a in s.args if isinstance(a, str)]

    def binds(self, s: Any) -> list[str]:
        """Names the statement (re)binds."""
        return [s.out] if s.out is not None else []

    def wrote_if_refused(self, s: Any, errors: tuple[str | None, ...]) -> bool:
        """Whether a statement that writes may have written though it raised the error kinds
        `errors` (the oracle's, the engine's): a dirty Function's forward runs before apply
        refuses its target (FUNC-11); others raise first."""
        return False

    def needs(self, s: Any) -> list[str]:
        """The capabilities this one statement needs (its kind's, plus any its params add)."""
        return list(self.caps)

    def check(self, s: Any, where: str) -> None:
        """Raise ProgramError (conformance/lang/program.py) for a malformed field. It depends
        on the statement alone (`where` only names it), never on a run: the runs of one
        program may share their checks (judge/executor.py, execute's `checked`)."""

    # ---- what spec/unspecified.md leaves open (the comparator) ----------------------------
    def stored_grads(self, s: Any) -> list[tuple[str, str]]:
        """(tensor, gradient) pairs: the tensor named `gradient` an engine may store as that
        tensor's .grad, itself or a copy (UNSPEC-3)."""
        return []

    def holds_grad(self, s: Any) -> list[tuple[str, str]]:
        """(tensor, name) pairs: once the statement ran, `name` is the very tensor that
        tensor's .grad holds (GRAD-3), so that writes into either show in the other and a
        backward adds into both (GRAD-4)."""
        return []

    def resets_grads(self, s: Any) -> list[str]:
        """Names whose .grad the statement sets to None (a module's zero_grad, GRAD-5): what
        each held is no longer their .grad, and their next .grad is compared afresh."""
        return []

    def grad_dtypes_set(self, s: Any) -> list[tuple[str, str | None]]:
        """(tensor, dtype) pairs: the statement sets tensor's grad_dtype (None: its .grad keeps
        the dtype gradients arrive in, whose sum's dtype is open where they differ, LEAF-9)."""
        return []

    def touches_grads(self, s: Any) -> list[str]:
        """Names whose .grad the statement sets to None or writes in place (zero_grad): where
        it raised partway or ran inside a block (GRAD-6), their .grads, and what holds them,
        are open from then on."""
        return []

    def may_copy(self, s: Any) -> bool:
        """Whether what it binds may be a view or not, as the engine chooses (UNSPEC-3): a
        reshape (params.fn in copies_when), a gradient (views_open). Its `_base`, and that
        of its views, is open."""
        return self.views_open or s.params.get("fn") in self.copies_when

    def records_grads(self, s: Any) -> bool:
        """A backward with create_graph: each .grad it reaches is replaced by a recorded
        sum, whose strides are left open (UNSPEC-16)."""
        return self.fills_grads and bool(s.params.get("create_graph"))

    def reads_history(self, s: Any) -> list[str]:
        """Names whose grad_fn the statement reads in any grad mode (observing grad_fn,
        next_functions or is_leaf, retain_grad, a node hook, a multi-grad hook of mode all):
        a view an alias wrote gets its new grad_fn then, and a hook registered on it from then
        on is compared (UNSPEC-17)."""
        return []

    def recorded_results(self, s: Any) -> list[str]:
        """Names it binds to the results of an op that records a node with its tensor
        operands (refs) as inputs where grad mode is on and one of them requires grad: the
        executor records whether it did (Event.operands_recorded: a result requires grad and
        is none of the operands, as a cast to a tensor's own dtype returns the tensor). Such an
        op reads the grad_fn of each operand, a view an alias wrote too (UNSPEC-17). A write
        is not asked: whether it recorded is Event.unrecorded and the grad mode."""
        return self.binds(s) if self.records_node and not self.writes else []

    def body_mode(self, s: Any) -> tuple[bool | None, bool | None]:
        """A block's: the grad mode and the inference mode its body runs in (None: as outside
        it; conformance/judge/grad_modes.py)."""
        return None, None

    def detaches(self, s: Any) -> list[str]:
        """Names it detaches in place where it runs outside inference mode (VIEW-8, VER-16):
        they require grad no longer, and an integer one is no longer UNSPEC-18's."""
        return []

    def makes_view(self, s: Any) -> bool:
        """Whether what it binds is a differentiable view of its target (UNSPEC-17)."""
        return self.differentiable_view

    def shares_counter(self, s: Any) -> bool:
        """Whether what it binds shares its target's version counter (VER-4, VER-5)."""
        return self.shares_version

    def hooked_tensors(self, s: Any) -> list[str]:
        """Names it registers a hook on through Tensor.register_hook, which does not read
        their grad_fn first: on a view an alias wrote since its grad_fn was last read, whether
        the hook is called is open (UNSPEC-17)."""
        return []

    def hook_rewrites(self, s: Any) -> bool:
        """Whether a hook it registers may change the gradient it gets (not only log it):
        where its calls are open, so is what passes through its tensor compute."""
        return False

    def seeds(self, s: Any) -> list[str]:
        """Names of the gradient tensors a backward-like statement hands its pass (gradient,
        grad_tensors, grad_outputs): without create_graph, whether a gradient computed from
        one that requires grad requires grad is open (UNSPEC-3); the executor records whether
        one does (Event.seed_requires_grad)."""
        return [gradient for _, gradient in self.seeded_roots(s)]

    def roots_and_inputs(self, s: Any) -> list[str]:
        """A backward-like statement's roots and inputs: the names it reads less the gradients
        it hands its pass (seeds). torch reads the grad_fn of each once it has checked its
        arguments, before it runs a node, in any grad mode: a view an alias wrote gets its new
        grad_fn there (UNSPEC-17). A gradient is read only where an op records with it
        (create_graph), and a name that is both is taken as a gradient."""
        if not self.backward_pass:
            return []
        seeds = self.seeds(s)
        return [n for n in self.refs(s) if n not in seeds]

    def seeded_roots(self, s: Any) -> list[tuple[str, str]]:
        """(root, gradient) pairs: the tensor named `gradient` is the one a backward-like
        statement hands its pass for the root named `root`. An integer or bool one handed to a
        leaf whose grad_dtype is None makes the pass open (UNSPEC-16); the executor records
        whether one is (Event.integral_seed)."""
        return self.stored_grads(s)

    def same_object(self, s: Any) -> list[str]:
        """Names an engine may bind to one tensor object once the statement ran, so that a
        change to one shows in the others or not (UNSPEC-3)."""
        return []

    def unversioned(self, s: Any, shapes: list[Any] | None) -> bool:
        """Whether the `_version` of what it binds is unspecified (VER-1, UNSPEC-3), given the
        operand shapes its Event recorded (None: none recorded)."""
        return False

    def observed(self, s: Any) -> tuple[str | None, str]:
        """A valued kind: the tensor its value shows an aspect of (None: no one tensor) and
        the aspect (an observable, or a label for reports)."""
        return None, self.name

    def observations(self, s: Any, o: Any, e: Any) -> list[tuple[Any, ...]]:
        """A valued kind's observations in the oracle's Event `o` and the engine's `e`:
        (tensor or None, aspect, the clauses of this one observation or None for the
        statement's, (value, dtype) of the oracle, of the engine)."""
        tensor, aspect = self.observed(s)
        return [(tensor, aspect, None, (o.value, o.dtype), (e.value, e.dtype))]

    def observed_aspects(self, s: Any) -> list[tuple[str | None, str]]:
        """A valued kind: (tensor, aspect) of each of its observations, as `observed` (a
        sweep's many); whether reading an alias's `_version` raises is open (UNSPEC-10)."""
        return [self.observed(s)] if self.valued else []

    def data_swapped(self, s: Any) -> tuple[str, str] | None:
        """(target, source) of a `target.data = source` statement: where one of them is an
        inference tensor and the other is not (the executor records it, Event.
        inference_swapped), what the target is afterwards is open (UNSPEC-10)."""
        return None

    def memory_source(self, s: Any) -> str | None:
        """The tensor whose memory it gives its target (`set_`, `.data =`): the comparator's
        memory groups join the two (judge/memory_groups.py)."""
        return None

    def recorded_gradients(self, s: Any) -> list[str]:
        """Names it binds to gradients a create_graph pass recorded: what their grad_fn is,
        and the edges of what is computed from them, are left open (UNSPEC-9)."""
        return []

    def grad_hook(self, s: Any) -> str | None:
        """The label of the hook calls it registers that show its target's .grad, if any."""
        return None

    def hook_labels(self, s: Any) -> list[str]:
        """The labels the hooks it registers log their calls under (the verdict finds the
        statement that registered a hook by them): a handle's label, or its name."""
        if not self.binds_handle:
            return []
        return [str(s.params.get("label") or s.out)]

    def hook_variant(self, s: Any) -> str:
        """Which of its kind's rows of judge/defining.py HOOK_CALLS defines the calls of the
        hook it registers ("" for the kind's one row)."""
        return ""

    def hook_order_open(self, s: Any) -> bool:
        """Whether the order of the hook calls it makes is left open (UNSPEC-7: three or
        more gradient accumulators ready at once, as the roots of one pass can be): they are
        then compared as calls, not in order."""
        return False

    # ---- running, rendering, drawing ----------------------------------------------------
    def run(self, x: Any, s: Any, ev: Any, path: str) -> None:
        raise NotImplementedError(f"statement kind {self.name!r} cannot run")

    def render(self, s: Any, path: str) -> list[str]:
        raise NotImplementedError(f"statement kind {self.name!r} cannot be rendered")

    def render_helpers(self) -> str:
        """Source a script that has statements of this kind needs before them, beside the
        renderer's own helpers (the custom Functions' classes)."""
        return ""

    def render_body(self, s: Any, path: str, body: list[str], bound: list[str]) -> list[str]:
        """A block kind's lines after its header, given its body's lines (unindented) and the
        names the body binds."""
        return []

    def render_done(self, s: Any, path: str) -> list[str]:
        """Lines after the statement when it runs unguarded (a backward's end marker, which
        ends the hook calls it made)."""
        return []

    def render_binds(self, s: Any) -> list[str]:
        """The script names its lines bind: its binds, and any helper names."""
        return self.binds(s)

    def draw(self, g: Any) -> bool:
        """Draw one statement of this kind into g; False when nothing fits."""
        return False

    def draw_weight(self, vocabulary: int) -> int:
        """How often generator vocabulary `vocabulary` draws this kind (a new kind is 0 in
        older vocabularies, so that their programs stay as they were)."""
        return 0 if vocabulary < self.since else weight_in(vocabulary, self.weight,
                                                            self.reweighted)


# The registry is the program language's table of kinds (conformance/lang/program.py reads
# it to load programs and to ask what a statement needs); this package fills it.
KINDS: dict[str, Kind] = LANGUAGE_KINDS


def kind(cls: type[Kind]) -> type[Kind]:
    """Class decorator: register one instance of a Kind under its name."""
    if cls.name not in ORDER:
        raise ValueError(f"statement kind {cls.name!r} is not in kinds.registry.ORDER")
    if cls.name in KINDS:
        raise ValueError(f"statement kind {cls.name!r} is registered twice")
    KINDS[cls.name] = cls()
    return cls


def of(op: str) -> Kind:
    """The kind of a statement's op; KeyError for an op that is not in the language."""
    return KINDS[op]
