"""Segments: the runs of a program's statements that an engine may run as one unit.

An engine's `granularity` (conformance/engines/base.py) says what it is handed:

    statement   one statement at a time (the default; no segments)
    segment     a straight-line run of top-level statements that ends after a backward-like
                statement (one whose kind has `ends_segment`, or a grad-mode block holding
                one), or at the end of the program
    program     the whole program as one segment
    step        a training step: as "segment", but a segment also takes the top-level
                grad-mode blocks right after its backward-like statement that hold none
                (the parameter updates under no_grad), so that forward, loss, backward and
                update are one unit

A segment's id is "first-last", its first and last top-level statement indices ("0-5"); every
Event of a statement in it carries that id, and so does every Divergence found there
(conformance/judge/compare.py), with `localised_to`: where an eager replay of the program first
differs (conformance/judge/localise.py). `run` is how the executor runs a program on an engine
whose granularity is not "statement": one `Engine.run_segment` call per segment, each given a
body that runs the segment's statements through the executor's ordinary per-statement path.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..kinds import KINDS, of
from ..lang.program import Stmt, walk_statements
from ..lang.trace import OTHER, Event

GRANULARITIES = ("statement", "segment", "program", "step")
UNIT = "unit"   # a Divergence's localised_to when the eager replay does not diverge


@dataclass(frozen=True)
class Segment:
    """Top-level statements first..last (inclusive) of a program, run as one unit."""

    index: int                  # 0 for the program's first segment
    first: int
    last: int
    statements: list[Stmt]      # the program's top-level statements (all of them)

    @property
    def id(self) -> str:
        return f"{self.first}-{self.last}"

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def walk(self) -> Iterator[tuple[str, Stmt]]:
        """(path, stmt) for every statement of the segment, depth first, as Program.walk."""
        for i in range(self.first, self.last + 1):
            s = self.statements[i]
            yield str(i), s
            if s.body:
                yield from walk_statements(s.body, f"{i}.")


def ends_segment(s: Stmt) -> bool:
    """Whether a segment ends after this statement: it is backward-like, or holds one."""
    kind = KINDS.get(s.op)      # an unknown op is the executor's harness error, not ours
    return (kind is not None and kind.ends_segment) or any(ends_segment(b) for b in s.body)


def split(statements: list[Stmt], granularity: str = "segment",
          alone: frozenset[int] = frozenset()) -> list[Segment]:
    """The segments of a program's top-level statements, in order; a statement whose index
    is in `alone` is a segment of its own (see `Failed`)."""
    if granularity not in GRANULARITIES[1:]:
        raise ValueError(f"no segments for granularity {granularity!r}; "
                         f"an engine's granularity is one of {GRANULARITIES}")
    if not statements:
        return []
    if granularity == "program" and not alone:
        return [Segment(0, 0, len(statements) - 1, statements)]
    out: list[Segment] = []
    first, pending = 0, False       # pending: a backward-like statement, then updates only
    for i, s in enumerate(statements):
        nxt = statements[i + 1] if i + 1 < len(statements) else None
        if i in alone or i + 1 in alone:
            if i in alone and first < i:        # the unit before it ends
                out.append(Segment(len(out), first, i - 1, statements))
                first = i
            close, pending = True, False
        elif granularity == "program":
            close = False
        elif granularity == "step":
            pending = ends_segment(s) or (pending and _update(s))
            close = pending and (nxt is None or not _update(nxt))
        else:
            close = ends_segment(s)
        if close or nxt is None:
            out.append(Segment(len(out), first, i, statements))
            first = i + 1
    return out


def _update(s: Stmt) -> bool:
    """A top-level grad-mode block holding no backward-like statement: a step's update."""
    return s.op == "mode" and not ends_segment(s)


@dataclass(frozen=True)
class Failed:
    """A unit of several statements that failed as a whole while it ran, with the error kind
    of its failure. An error raised inside a compiled graph leaves the graph whole, past the
    executor's capture of each statement's errors (a traced try/except does not catch it:
    pytorch/torchdynamo#318), and what the graph's ops before it did cannot be told apart. The
    executor then runs the program again from its start with those statements each a unit of
    their own, and keeps that run where it explains the failure: one of them raises the same
    kind there, as it would in the unit of a user's function without try/except, and agrees
    with the failed run on every statement before the failure (`agrees`: else the unit showed
    something its statements alone do not, and the failed run is the finding). A failure of
    no kind the spec names (OTHER: a compiler's own error) is not rerun: it stays the unit's.
    A limit: a unit that raised kind K spuriously, where a later statement of it also raises K
    of its own, is taken for the later one's error (which op of a graph raised cannot be
    known); the statements before the first marked still have to agree."""

    statements: frozenset[int]      # top-level indices
    kind: str
    at: int = 0                     # the first top-level statement the failure marked


def predicted_to_raise(meta: dict[str, Any]) -> frozenset[int]:
    """The top-level statements the program's generator predicts raise, or that hold one that
    does (meta "expect": path -> error kind): each runs as a unit of its own, so that a unit
    never fails at run time for an error the program draws on purpose (a rerun, `Failed`, would
    find them too, at the cost of running the program twice). A hint only: a path that names
    no statement (a hand-edited program) isolates nothing, or the wrong one; the minimizer
    moves the paths with their statements (judge/minimize.py)."""
    expect = meta.get("expect") if isinstance(meta, dict) else None
    if not isinstance(expect, dict):
        return frozenset()
    tops = (p.split(".", 1)[0] for p in expect if isinstance(p, str))
    # ASCII digits only: str.isdigit() is also true of '²', which int() refuses
    return frozenset(int(t) for t in tops if t.isascii() and t.isdigit() and len(t) < 7)


def run(x: Any, statements: list[Stmt], granularity: str,
        alone: frozenset[int] = frozenset()) -> None:
    """Run a program's statements as units on x.e (the executor's run in progress, with
    `e`, `env`, `trace`, `dead`, `current` and `stmt(s, path)`); the statements in `alone`
    each a unit of their own. A unit of several that fails as it runs is recorded as failed
    (`_fail`) and appended to x.failed (`Failed`)."""
    for g in split(statements, granularity, alone):
        start = len(x.trace.events)
        _unit(x, g)
        for ev in x.trace.events[start:]:
            ev.segment = g.id


def _unit(x: Any, g: Segment) -> None:
    """Run g as one unit. If it fails as a whole before its unfinished statements ran (the
    engine's `unit_not_started(exc)`: a compiler that could not compile the code holding them,
    say because one of them raises), they run again: the first alone, then the rest as a unit,
    so that an error stays on its statement and the statements after it still run, as they do
    statement by statement."""
    start = len(x.trace.events)
    done: list[str] = []        # the paths of the top-level statements that finished

    def body(g: Segment = g, done: list[str] = done) -> None:
        env, steps = x.env, _steps(g)
        _step(x, steps[0], done)
        if len(steps) > 1:
            _straight(x, env, steps[1:], done)
    try:
        x.e.run_segment(body, g)
    except Exception as exc:  # the unit failed as a whole: the engine's error is data
        x.current = None
        unrun = getattr(x.e, "unit_not_started", None)
        first = g.first + len(done)
        if g.size > 1 and first <= g.last and callable(unrun) and unrun(exc) \
                and len(x.trace.events) == start + _events(g, done):
            _unit(x, Segment(g.index, first, first, g.statements))
            if first < g.last:
                _unit(x, Segment(g.index, first + 1, g.last, g.statements))
        else:
            kind = _fail(x, g, start, done, exc)
            if g.size > 1 and kind != OTHER:    # a kind no statement raises explains nothing
                x.failed.append(Failed(frozenset(range(g.first, g.last + 1)), kind,
                                       min(first, g.last)))


def explained(failed: list[Failed], trace: Any) -> bool:
    """Whether a rerun's trace explains each failure of the run before it: a statement of the
    failed unit (each now a unit of its own), or one nested in it, raises the same kind."""
    errors = {(int(ev.path.split(".")[0]), ev.error) for ev in trace.events
              if ev.status == "error"}
    return all(any((i, f.kind) in errors for i in f.statements) for f in failed)


def agrees(failed: list[Failed], before: Any, after: Any) -> bool:
    """Whether a rerun's trace `after` records what the failed run's trace `before` did for
    every statement before the first failure: a statement that finished in a unit of several
    and differs when alone shows a difference only the unit makes, which a rerun must not
    hide. Messages and segment ids are not compared."""
    first = min(f.at for f in failed)
    theirs = {ev.path: _said(ev) for ev in after.events}
    return all(theirs.get(ev.path) == _said(ev) for ev in before.events
               if int(ev.path.split(".")[0]) < first)


def _said(ev: Event) -> str:
    return repr((ev.op, ev.status, ev.error, ev.warnings, ev.value, ev.dtype, ev.hooks,
                 ev.shapes))


def _events(g: Segment, done: list[str]) -> int:
    """How many events the finished top-level statements `done` of g record."""
    return sum(1 for path, _ in g.walk() if path.split(".")[0] in done)


# How a unit's body runs its statements. An engine may trace `body` as one function (the
# torch.compile engines: dynamo without fullgraph), and a tracer may treat a loop and
# straight-line code differently: dynamo breaks the graph at a call it cannot trace and resumes
# after it in straight-line code, but a graph break inside a for/while loop makes it skip the
# whole frame and compile each function called below it alone (one graph per op). So the body
# holds no loop: `_straight` is written out, one call per statement, and hands the statements
# after its STRAIGHT to a fresh call of itself. It is fixed source, not generated: no text is
# built or run. Dynamo also skips a frame that holds no tensor (the frame it resumes in after a
# graph break included), so the frames that run statements hold `env`, the run's tensors; the
# body runs a unit's first statement itself, as `env` may be empty before it (a program's first
# unit). `_steps` pads a unit's statements with no-op steps to fill the last `_straight`.
STRAIGHT = 32
_PAD = ("", None)       # a no-op step


def _steps(g: Segment) -> list[tuple[str, Stmt | None]]:
    """(path, statement) for each top-level statement of g, padded with no-op steps so that
    those after the first fill whole `_straight` calls."""
    steps: list[tuple[str, Stmt | None]] = [(str(i), g.statements[i])
                                            for i in range(g.first, g.last + 1)]
    return steps + [_PAD] * (-(len(steps) - 1) % STRAIGHT)


def _step(x: Any, step: tuple[str, Stmt | None], done: list[str]) -> None:
    path, s = step
    if s is not None:
        x.stmt(s, path)
        done.append(path)


def _straight(x: Any, env: dict[str, Any], steps: list[tuple[str, Stmt | None]],
              done: list[str]) -> None:
    """Run steps[0..STRAIGHT-1], then the rest: straight-line code (see above)."""
    _step(x, steps[0], done)
    _step(x, steps[1], done)
    _step(x, steps[2], done)
    _step(x, steps[3], done)
    _step(x, steps[4], done)
    _step(x, steps[5], done)
    _step(x, steps[6], done)
    _step(x, steps[7], done)
    _step(x, steps[8], done)
    _step(x, steps[9], done)
    _step(x, steps[10], done)
    _step(x, steps[11], done)
    _step(x, steps[12], done)
    _step(x, steps[13], done)
    _step(x, steps[14], done)
    _step(x, steps[15], done)
    _step(x, steps[16], done)
    _step(x, steps[17], done)
    _step(x, steps[18], done)
    _step(x, steps[19], done)
    _step(x, steps[20], done)
    _step(x, steps[21], done)
    _step(x, steps[22], done)
    _step(x, steps[23], done)
    _step(x, steps[24], done)
    _step(x, steps[25], done)
    _step(x, steps[26], done)
    _step(x, steps[27], done)
    _step(x, steps[28], done)
    _step(x, steps[29], done)
    _step(x, steps[30], done)
    _step(x, steps[31], done)
    if len(steps) > STRAIGHT:
        _straight(x, env, steps[STRAIGHT:], done)


def _fail(x: Any, g: Segment, start: int, done: list[str], exc: Exception) -> str:
    """Record the failure of unit g on every statement of it that had not finished (on its
    last statement if all had): status error, the kind of exc, a message naming the segment.
    Nested statements that had finished keep their events; the segment's events are put back
    in program order. Returns the kind."""
    unfinished = {i for i in range(g.first, g.last + 1) if str(i) not in done} or {g.last}
    kind = x.e.classify_error(exc) or OTHER
    first = (str(exc).strip().splitlines() or [""])[0]
    message = f"segment {g.id} failed as a unit: {type(exc).__name__}: {first[:300]}"
    had = {ev.path: ev for ev in x.trace.events[start:]}
    events: list[Event] = []
    for path, s in g.walk():
        ev = had.get(path)
        if int(path.split(".")[0]) in unfinished and (ev is None or "." not in path):
            ev = ev or Event(path, s.op)
            ev.status, ev.error, ev.message = "error", kind, message
            if not _in_place(s):    # a failed in-place op leaves its target bound
                x.dead.update(_binds(s))
        if ev is not None:
            events.append(ev)
    x.trace.events[start:] = events
    return kind


def _in_place(s: Stmt) -> bool:
    kind = KINDS.get(s.op)
    return kind is not None and kind.in_place


def _binds(s: Stmt) -> list[str]:
    """The names s binds; a statement gradspec cannot express binds at most its `out`."""
    try:
        return [n for n in of(s.op).binds(s) if isinstance(n, str)]
    except Exception:  # noqa: BLE001 - a malformed statement, a harness error of its own
        return [s.out] if isinstance(s.out, str) else []
