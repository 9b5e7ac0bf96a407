"""Run a program (conformance/lang/program.py) on an Engine, statement by statement, into a
Trace (conformance/lang/trace.py).

The executor is a loop over the statement kinds (conformance/kinds): each statement's kind
checks its fields, then runs it on the engine. The executor never raises for what the engine
does: each statement's Event says ok, error (with the spec error kind, spec/errors.md),
skipped (it names a tensor that an earlier failed or skipped statement would have bound) or
harness (its kind's check, or the kind itself, says gradspec cannot express it to an engine: a
HarnessError, never counted as the engine's error). Events hold the observation, the warning
kinds emitted and the hook calls made while the statement ran, in call order.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..engines.base import Engine, grad_mode
from ..kinds import KINDS
from ..lang.program import HarnessError, Program, Stmt, index_of
from ..lang.trace import HARNESS, OTHER, Event, Trace, plain
from . import segments
from .operand_shapes import overlapping, shapes_fit

VALUED = tuple(name for name, k in KINDS.items() if k.valued)   # kinds whose Event has a value

__all__ = ["HARNESS", "OTHER", "VALUED", "Event", "HarnessError", "Trace", "binds", "execute",
           "index_of", "names", "plain", "refs"]


def refs(s: Stmt) -> list[str]:
    """Names a statement reads (tensors or hook handles), in order."""
    return KINDS[s.op].refs(s)


def binds(s: Stmt) -> list[str]:
    """Names a statement (re)binds."""
    return KINDS[s.op].binds(s)


def _message(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:300]}"


class _Run:
    """A program running on an engine: what the statement kinds' `run` is handed."""

    def __init__(self, engine: Engine, on_statement: Callable[[str], None] | None = None,
                 checked: set[int] | None = None):
        self.e = engine
        self.on_statement = on_statement    # told each statement's path as it begins
        self.env: dict[str, Any] = {}
        self.dead: set[str] = set()
        self.trace = Trace(engine.name, engine.version, engine.device)
        self.current: Event | None = None
        # the warnings recorded while the program runs (execute); each statement takes, and
        # removes, those emitted since it began, so a block's are its own, not its body's
        self.caught: list[warnings.WarningMessage] = []
        self.failed: list[segments.Failed] = []     # units that failed as they ran
        self.labels: dict[str, str] = {}    # hook label -> the path of the statement giving it
        self.per_statement = engine.granularity == "statement"
        self.checked = set() if checked is None else checked    # (execute's `checked`)

    def release(self) -> None:
        """Let go of what the program made, once its trace is taken. The hooks it registered
        hold this run, and torch keeps some of them in cycles through its C++ graph that no
        collector can see (a tensor hook whose graph an in-place op rewrote; a pack hook that
        returns the tensor itself): about one generated program in twenty. Without this, each
        such program kept its whole trace alive for the rest of the worker's life."""
        self.env.clear()
        self.trace = Trace(self.e.name, self.e.version, self.e.device)
        self.caught, self.failed, self.current = [], [], None

    def log(self, label: str, t: Any) -> None:
        """A hook call, logged into the event of the statement running when it is called."""
        if self.current is None:
            return
        if t is None:
            self.current.hooks.append([label, None, None])
        else:
            self.current.hooks.append([label, plain(self.e.to_list(t)), plain(self.e.dtype(t))])

    def val(self, a: Any) -> Any:
        """An operand: a name's tensor, or a number as itself."""
        return self.env[a] if isinstance(a, str) else a

    def block(self, stmts: list[Stmt], prefix: str) -> None:
        for i, s in enumerate(stmts):
            self.stmt(s, f"{prefix}{i}")

    def _label(self, labels: list[str], path: str) -> None:
        """A hook's calls are told apart by its label: two hooks with one label would mix
        theirs. Program files and program sources are validated (lang/validate.py); a program
        built in Python and run directly is checked here (a unit traced twice runs one
        statement twice: the same path is no second hook)."""
        for label in labels:
            first = self.labels.setdefault(label, path)
            if first != path:
                raise HarnessError(f"statement {path}: params.label: {label!r} labels the hook "
                                   f"of statement {first} too")

    def stmt(self, s: Stmt, path: str) -> None:
        if self.on_statement is not None:
            self.on_statement(path)
        ev = Event(path, s.op)
        self.trace.events.append(ev)
        kind = KINDS.get(s.op)
        try:
            if kind is None:
                raise HarnessError(f"statement {path}: unknown op {s.op!r}")
            if id(s) not in self.checked:
                kind.check(s, path)
                self.checked.add(id(s))
            labels = kind.hook_labels(s)
            if labels:
                self._label(labels, path)
            names = kind.refs(s)
        except HarnessError as exc:
            self._harness(s, ev, exc)
            return
        dead, env = self.dead, self.env
        for n in names:
            if n in dead or n not in env:
                ev.status = "skipped"
                dead.update(kind.binds(s))
                self._skip_body(s, path)
                return
        self.current = ev
        caught = self.caught
        start = len(caught)
        operands = [env[n] for n in names]      # (an op may bind its result to one's name)
        self._probe(self._before, s, kind, ev)
        if self.per_statement and not kind.writes:  # (as _before's inference_alias)
            self._probe(self._inference_computed, s, kind, ev)
        try:
            kind.run(self, s, ev, path)
        except HarnessError as exc:
            ev.status, ev.message = HARNESS, _message(exc)
        except Exception as exc:  # the engine's errors are data
            ev.status = "error"
            ev.error = self.e.classify_error(exc) or OTHER
            ev.message = _message(exc)
        self.current = None
        if len(caught) > start:
            ev.warnings = [k for k in (self.e.classify_warning(w.message, w.category)
                                       for w in caught[start:]) if k]
            del caught[start:]
        if ev.error in ("INFERENCE_SAVED", OTHER):
            self._probe(self._inference_operand, s, kind, ev)
        if ev.status == "ok":
            if kind.writes and s.target in env:
                self._probe(self._written, s, kind, ev)
            # (not inside a unit an engine compiles: the probe's questions would break its
            # graph; the comparator reads the oracle's flag, and an unset one leaves it open)
            if self.per_statement and not kind.writes:
                self._probe(lambda s, kind, ev: self._returned(names, operands, s, kind, ev),
                            s, kind, ev)
            if self.per_statement and kind.recorded_results(s):
                self._probe(lambda s, kind, ev: self._recorded(operands, s, kind, ev), s, kind,
                            ev)
            if dead:
                dead.difference_update(kind.binds(s))
        elif not kind.in_place:     # a failed in-place op leaves its target bound
            dead.update(kind.binds(s))

    def _probe(self, probe: Callable[[Stmt, Any, Event], None], s: Stmt, kind: Any,
               ev: Event) -> None:
        """Ask the engine what the comparator needs to know of a statement beyond what it
        records (the Event flags that open what spec/unspecified.md leaves open). These are
        gradspec's questions, not the statement: an engine that cannot answer one (any
        exception) leaves its flag unset, and the statement runs and is judged as it is."""
        try:
            probe(s, kind, ev)
        except Exception:  # noqa: BLE001 - see above: never the engine's error, never a crash
            pass

    def _before(self, s: Stmt, kind: Any, ev: Event) -> None:
        if kind.backward_pass and not s.params.get("create_graph"):
            self._seeded(kind.seeds(s), ev)
        swapped = kind.data_swapped(s)
        if swapped:
            self._swapped(swapped, ev)
        if kind.backward_pass:
            self._integral_seed(kind.seeded_roots(s), ev)
        # (the comparator reads the oracle's flag: not asked inside a unit an engine compiles,
        # where a question would break its graph)
        if kind.plain_alias and self.per_statement and self.e.is_inference(self.env[s.target]):
            ev.inference_alias = True   # outside the mode, much of it is open (UNSPEC-10)

    def _inference_computed(self, s: Stmt, kind: Any, ev: Event) -> None:
        """Record that a statement binds a result computed from an inference tensor: outside
        the mode, where its version counter starts is open (UNSPEC-10)."""
        if not kind.binds_handle and kind.binds(s) and any(
                self.e.is_inference(self.env[n]) for n in kind.refs(s)):
            ev.inference_computed = True

    def _seeded(self, seeds: list[str], ev: Event) -> None:
        """Record that a pass without create_graph is handed a gradient that requires grad:
        what it computes from it may be it, and so require grad, or not (UNSPEC-3)."""
        e, env = self.e, self.env
        if any(e.requires_grad(env[n]) for n in seeds):
            ev.seed_requires_grad = True

    def _swapped(self, pair: tuple[str, str], ev: Event) -> None:
        """Record that `.data =` is about to give an inference tensor the memory of one that
        is not, or the other way round: torch 2.13 makes the target's is_inference() follow
        the memory, and then records nothing on it though it requires grad (UNSPEC-10). An
        engine without inference mode has no inference tensors."""
        try:
            target, source = (self.e.is_inference(self.env[n]) for n in pair)
        except NotImplementedError:
            return
        if target != source:
            ev.inference_swapped = True

    def _inference_operand(self, s: Stmt, kind: Any, ev: Event) -> None:
        """Record that a statement that raised INFERENCE_SAVED or an error of no kind read an
        inference tensor: which of the two a recorded op that would save it raises, where its
        operands do not fit, is open (UNSPEC-10). Asked only of such a failed statement."""
        e, env = self.e, self.env
        names = [n for n in kind.refs(s) if n in env]
        if any(e.is_inference(env[n]) for n in names) and not shapes_fit(
                s, kind, [tuple(e.shape(env[n])) for n in names]):
            ev.inference_operand = True

    def _integral_seed(self, pairs: list[tuple[str, str]], ev: Event) -> None:
        """Record that a pass is handed an integer or bool gradient for a root that is a leaf
        whose grad_dtype is None: what it does then is open (UNSPEC-16; torch 2.13 fails an
        internal assert)."""
        e, env = self.e, self.env
        for root, gradient in pairs:
            g, t = env.get(gradient), env.get(root)
            if g is None or t is None:
                continue
            if tuple(e.shape(g)) != tuple(e.shape(t)):
                return      # GRAD_OUTPUT_SHAPE (API-3) comes first: the pass fails there
            if e.dtype(g) not in ("int64", "bool") or not e.is_leaf(t) or \
                    not e.requires_grad(t):
                continue
            try:
                open_dtype = e.grad_dtype(t) is None
            except NotImplementedError:     # an engine without grad_dtype: never None
                open_dtype = False
            if open_dtype:
                ev.integral_seed = True

    def _written(self, s: Stmt, kind: Any, ev: Event) -> None:
        """Record that a write left its target not requiring grad, so that it recorded
        nothing on it (a view's history is then rebuilt when next read, UNSPEC-17), or left
        it, of an integer or bool dtype, requiring grad (INPLACE-10's fill_ exception: what
        is computed from it is open, UNSPEC-18), or recorded a node on a tensor whose
        elements share memory (INPLACE-18)."""
        e, t = self.e, self.env[s.target]
        if not e.requires_grad(t):
            ev.unrecorded = True
            return
        if e.dtype(t) in ("int64", "bool"):
            ev.integral_requires_grad = True
        # a CopySlices recorded (grad mode on; a write through a view: the target is one, or
        # a setitem makes one) where elements share memory: what a pass through it does is
        # open (INPLACE-18; torch 2.13 raises as it writes the gradient back)
        base = e.base(t)
        if not e.is_grad_enabled() or (base is None and not kind.writes_via_view):
            return
        # (a setitem writes a view of t: its CopySlices is laid out as t's base, or t)
        for u in ((t if base is None else base,) if kind.writes_via_view else (t, base)):
            if u is not None and overlapping(e.shape(u), e.stride(u)):
                ev.overlapping_write = True

    def _recorded(self, operands: list[Any], s: Stmt, kind: Any, ev: Event) -> None:
        """Record that an op recorded a node with its tensor operands as inputs: grad mode is
        on and a result requires grad and is none of them (a cast to a tensor's own dtype
        returns the tensor; a view made with grad mode off requires grad as its base does,
        MODE-9, and records nothing). Recording it read each operand's grad_fn, which rebuilds
        that of a view an alias wrote (UNSPEC-17). Reading requires_grad reads no grad_fn: in
        torch 2.13 it rebuilds nothing, so the probe leaves the view as the op left it."""
        e = self.e
        if not e.is_grad_enabled():
            return
        for t in (self.env[n] for n in kind.recorded_results(s) if n in self.env):
            if e.requires_grad(t) and not any(t is u for u in operands):
                ev.operands_recorded = True
                return

    def _returned(self, refs: list[str], operands: list[Any], s: Stmt, kind: Any,
                  ev: Event) -> None:
        """Record which operand a statement bound as its result itself (torch: a cast to a
        tensor's own dtype returns it), so that the comparator follows it as that operand."""
        for t in (self.env[n] for n in kind.binds(s) if n in self.env):
            for n, u in zip(refs, operands, strict=True):
                if t is u:
                    ev.returned_operand = n

    def _harness(self, s: Stmt, ev: Event, exc: HarnessError) -> None:
        """A statement gradspec cannot express: recorded as such; it binds nothing, and its
        body is not run."""
        ev.status, ev.message = HARNESS, _message(exc)
        kind = KINDS.get(s.op)
        if kind is None or not kind.in_place:
            self.dead.update(names(s)[1])
        self._skip_body(s, ev.path)

    def _skip_body(self, s: Stmt, path: str) -> None:
        for i, b in enumerate(s.body):
            bp = f"{path}.{i}"
            self.trace.events.append(Event(bp, b.op, status="skipped"))
            self.dead.update(names(b)[1])
            self._skip_body(b, bp)


def names(s: Stmt) -> tuple[list[str], list[str]]:
    """The names a statement reads and binds, as far as it says: one gradspec cannot express
    (no kind, malformed fields) reads nothing and binds at most its `out`."""
    kind = KINDS.get(s.op)
    try:
        if kind is not None:
            return kind.refs(s), [n for n in kind.binds(s) if isinstance(n, str)]
    except Exception:  # noqa: BLE001 - a malformed statement
        pass
    return [], [s.out] if isinstance(s.out, str) else []


def execute(program: Program, engine: Engine,
            on_statement: Callable[[str], None] | None = None,
            checked: set[int] | None = None) -> Trace:
    """Run `program` on `engine`; never raises for what the engine does. An engine whose
    granularity is not "statement" is handed the program one segment at a time
    (conformance/judge/segments.py). `on_statement(path)` is called as each statement begins
    (a worker's progress: conformance/campaign/pool.py). `engine.begin_program()` is called
    first (per-program setup, e.g. a compiler's cache reset).

    `checked`: a set shared by runs of this one program object (a campaign's run on the
    oracle, then on the engine): the ids of its statements whose fields passed their kind's
    check. Those are not checked again, and those that pass now are added. A check depends on
    the statement alone (Kind.check), so a second run's verdicts are the first's; a statement
    that failed is checked, and reported, again. The caller must not change the program
    between runs that share the set, nor may an engine change what it is handed of it (a
    leaf's values and shape, an op's settings: the program's own lists and dicts). Checking
    a generated program's statements costs about 0.15 ms of a run's 1 ms
    (benchmarks/README.md)."""
    run = settled(program, engine, on_statement, checked=checked)
    trace = run.trace
    run.release()
    return trace


def settled(program: Program, engine: Engine,
            on_statement: Callable[[str], None] | None = None, keep: bool = False,
            checked: set[int] | None = None) -> _Run:
    """The run whose trace `execute` returns; with `keep`, its names are still bound (the
    caller clears `env`: a graph drawn of them, conformance/reports/graph.py)."""
    checked = set() if checked is None else checked     # (shared by the reruns below too)
    if engine.granularity == "statement":
        return _run_once(program, engine, on_statement, frozenset(), keep, checked)
    alone = segments.predicted_to_raise(program.meta)
    mode = grad_mode(engine)
    run = _run_once(program, engine, on_statement, alone, keep, checked)
    # A unit that failed as it ran: the program again, each of its statements a unit of its
    # own (segments.Failed); that run stands where it explains every such failure and agrees
    # with the failed run before it. Each rerun isolates statements not yet alone, so this ends.
    while run.failed:
        alone = alone.union(*(f.statements for f in run.failed))
        if mode is not None and grad_mode(engine) != mode:
            engine.grad_mode("set_grad_enabled", mode)  # sets the mode when made (MODE-3)
        again = _run_once(program, engine, on_statement, alone, keep, checked)
        if not (segments.explained(run.failed, again.trace)
                and segments.agrees(run.failed, run.trace, again.trace)):
            again.release()
            break
        run.release()
        run = again
    return run


def _run_once(program: Program, engine: Engine, on_statement: Callable[[str], None] | None,
              alone: frozenset[int], keep: bool = False, checked: set[int] | None = None
              ) -> _Run:
    run = _Run(engine, on_statement, checked)
    begin = getattr(engine, "begin_program", None)
    if callable(begin):     # an adapter that does not subclass Engine may lack it
        begin()
    with warnings.catch_warnings(record=True) as run.caught:
        warnings.simplefilter("always")
        if engine.granularity == "statement":
            run.block(program.statements, "")
        else:
            segments.run(run, program.statements, engine.granularity, alone)
        # The hooks a program registers hold the run, which holds its tensors: a cycle only
        # the garbage collector would free, at some later statement. Dropping the names frees
        # them now, while warnings are still recorded (and, belonging to no statement, dropped).
        if not keep:
            run.env.clear()
    return run
