"""The verdict on a divergence: its primary clause and its signature.

A program's statements carry every clause they exercise, and one statement exercises many (a
backward pass: a dozen). Citing them all turns one root cause into many red clauses. So each
divergence names one *primary* clause, the clause that defines what the oracle did at the
differing observation, chosen by what differs (conformance/judge/defining.py holds the spec's
word on it):

- an outcome: the oracle raised an error kind: a clause spec/errors.md lists for that kind; the
  oracle did not raise the kind the engine raised: a clause under which the oracle does not
  raise it (ALLOWS), else the kind's own where the program can exercise it (its `requires`
  within the capabilities the program was drawn under), else the statement's own;
- warnings: the first differing warning kind's clause (spec/errors.md);
- hook calls: how they differ (the hooks of one tensor reordered, a removed hook called, ...);
- an observed value or its dtype: the observable and the form of the oracle's value (DEFINES).

Among the clauses that define it, the one that the divergent statement, the grad-mode blocks
around it, or the statement that made what it observes (the tensor's binder or last writer;
for `.grad` the last backward pass or assignment) exercises; then one that its backward slice
exercises; else the general rule. The involved clauses (the slice, `Divergence.clauses`) are
kept beside it.

The signature names the kind of problem, with the values normalised away, so that the same
problem in different programs groups together (judge/problems.py, `group`): the statement's
kind and op, the observable, the oracle's outcome and the engine's, one token
`kind[.op]/observable/oracle/engine`, e.g. `backward/outcome/GRAPH_FREED/ok` or
`observe/grad/None/tensor`.

Each compared divergence also gets its conformance class (spec/README.md): by what differs
where that decides it (defining.py, CLASS_OF_DIFFERENCE: a warning, a node name, the edges,
hook calls reordered), else its primary clause's class. Harness errors, crashes, timeouts and
grad-mode leaks get none: they are no verdict on a class, and always count. A program is
judged by its first divergence in a class the engine claims (`lead`, `judged`).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from itertools import zip_longest
from typing import Any

from ..kinds import KINDS
from ..lang.program import Program, Stmt
from ..lang.trace import HARNESS, Event, Trace
from ..spec.reader import load_errors
from .defining import ALLOWS, DEFINES, HOOK_CALLS, UNNAMED_ERROR, conformance_class, drawable
from .executor import names
from .rule import close

_ODD = re.compile(r"[^A-Za-z0-9_.+-]+")
COMPARED = ("outcome", "warnings", "hooks", "value", "dtype")


def _token(text: Any) -> str:
    """A word of a signature: no separator, no space."""
    return _ODD.sub("-", str(text)).strip("-") or "-"


def _errors() -> dict[str, tuple[str, ...]]:
    return {k: e.clauses for k, e in load_errors().items() if e.clauses}


def form(value: Any) -> str:
    """The form of an observed value, its content normalised away."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "name"
    return "tensor" if isinstance(value, list) else "other"


def _dims(value: Any) -> list[int]:
    out = []
    while isinstance(value, list):
        out.append(len(value))
        value = value[0] if value else None
    return out


def _relative(oracle: Any, engine: Any) -> str:
    """The engine's value in words, beside the oracle's."""
    a, b = form(oracle), form(engine)
    if a != b or a in ("None", "True", "False"):
        return b
    if a == "tensor":
        return "other-values" if _dims(oracle) == _dims(engine) else "other-shape"
    return f"other-{a}"


class _Program:
    """The program as the verdict reads it: statements by path, the blocks around one, the
    statement that made what an observation shows, and the hooks."""

    def __init__(self, program: Program):
        self.flat: list[tuple[str, Stmt]] = list(program.walk())
        self.at = {p: i for i, (p, _) in enumerate(self.flat)}
        self.stmts = dict(self.flat)
        drawn = program.meta.get("capabilities")      # the generator's, where it drew it
        self.caps = frozenset(drawn) if isinstance(drawn, list) else None
        self.hooks: dict[str, tuple[str, tuple[str | None, int], str | None, int]] = {}
        self.removed: dict[str, int] = {}       # handle -> position of its removal
        generation: dict[str, int] = {}         # name -> how often it was bound
        for i, (_, s) in enumerate(self.flat):
            kind = KINDS.get(s.op)
            if kind is None:
                pass
            elif kind.hook_labels(s):
                key = (s.target, generation.get(s.target or "", 0))
                for label in kind.hook_labels(s):
                    self.hooks.setdefault(label, (s.op, key, s.out, i))
            elif kind.takes_handle and s.target:
                self.removed.setdefault(s.target, i)
            for n in names(s)[1]:
                generation[n] = generation.get(n, 0) + 1

    def enclosing(self, path: str) -> list[Stmt]:
        """The blocks around the statement at `path`, innermost first."""
        parts = path.split(".")
        return [self.stmts[p] for p in (".".join(parts[:k]) for k in
                                        range(len(parts) - 1, 0, -1)) if p in self.stmts]

    def maker(self, path: str, tensor: str | None, aspect: str) -> Stmt | None:
        """The statement that made what an observation of `aspect` of `tensor` shows: the
        last before it that bound the tensor or changed it (wrote into it, set a flag, its
        .grad or a hook on it; not one that derived another tensor from it), for .grad also
        the last backward pass; for grad mode, the last grad-mode block before it. A version
        is made by its binder or a write."""
        pos = self.at.get(path)
        if pos is None or (tensor is None and aspect != "grad_enabled"):
            return None
        for p, s in reversed(self.flat[:pos]):
            kind = KINDS.get(s.op)
            if kind is None or path.startswith(p + "."):
                continue
            if tensor is None:
                if kind.block:
                    return s
                continue
            if kind.block:
                continue
            bound = names(s)[1]
            changes = s.target == tensor and not kind.valued and not kind.aliases and (
                kind.binds_handle or all(n == tensor for n in bound)) and (
                kind.writes or aspect != "version")     # only a write changes a version
            if tensor in bound or changes or (aspect == "grad" and kind.backward_pass):
                return s
        return None

    def near(self, s: Stmt, path: str, own: list[str], made: Stmt | None) -> list[str]:
        """The clauses nearest an observation: its own, its blocks', its maker's and the
        maker's blocks'."""
        found = list(own)
        for b in self.enclosing(path):
            found += b.clauses
        if made is not None:
            found += made.clauses
            where = next((p for p, t in self.flat if t is made), None)
            for b in self.enclosing(where) if where else []:
                found += b.clauses
        return found


def _pick(candidates: Iterable[str | None], near: list[str], involved: list[str],
          default: str | None) -> str | None:
    cands = [c for c in candidates if c is not None]
    return next((c for c in cands if c in near), None) or \
        next((c for c in cands if c in involved), None) or default


def _outcome(o: Event, e: Event | None, caps: frozenset[str] | None = None
             ) -> tuple[str, str, tuple[str, ...], str | None]:
    """(oracle, engine, candidate clauses, default) of an outcome divergence; a kind only the
    engine raised names its own clauses where the program can exercise them (`caps`, drawable:
    FUNC-8, a custom Function's, is n/a to an engine with no custom_function)."""
    errors = _errors()

    def word(ev: Event | None) -> str:
        if ev is None:
            return "not-run"
        return (ev.error or "OTHER") if ev.status == "error" else ev.status
    if o.status == "error" and o.error in errors:
        return word(o), word(e), errors[o.error], errors[o.error][0]
    if e is not None and e.status == "error" and e.error in errors:
        own = drawable(errors[e.error], caps)
        return word(o), word(e), ALLOWS.get(e.error, ()) + own, own[0] if own else None
    if e is not None and e.status == "error" and o.status == "ok":
        return word(o), word(e), UNNAMED_ERROR, None
    return word(o), word(e), (), None


def _warnings(o: Event, e: Event) -> tuple[str, str, tuple[str, ...], str | None]:
    """The kinds warned (each once: how often is a value), and the first differing one's
    clauses."""
    first = next((a or b for a, b in zip_longest(o.warnings, e.warnings) if a != b), None)
    cands = _errors().get(first or "", ())
    ow, ew = ("+".join(dict.fromkeys(w)) or "none" for w in (o.warnings, e.warnings))
    return ow, ew if ew != ow else "other-count", cands, cands[0] if cands else None


def _hooks(view: _Program, path: str, o: Event, e: Event
           ) -> tuple[str, str, tuple[str, ...], str | None]:
    """How the hook calls differ, and the clauses that define the oracle's: by the kind of
    hook the first differing call is of, and how it differs."""
    ol, el = [str(c[0]) for c in o.hooks], [str(c[0]) for c in e.hooks]
    missing, extra = Counter(ol) - Counter(el), Counter(el) - Counter(ol)
    if ol == el:
        how = key = "other-gradients"
        label = next((str(a[0]) for a, b in zip(o.hooks, e.hooks, strict=True) if a != b),
                     ol[0] if ol else "")
    elif not missing and not extra:
        i = next(i for i, (a, b) in enumerate(zip(ol, el, strict=True)) if a != b)
        label, mine, theirs = ol[i], view.hooks.get(ol[i]), view.hooks.get(el[i])
        key = "same tensor" if mine and theirs and mine[1] == theirs[1] else "reordered"
        # the same calls (within tolerance) in another order: torch-observable; with other
        # gradients: the primary clause's class (HOOK-2 is core)
        mine_, theirs_ = (sorted(h, key=lambda c: str(c[0])) for h in (o.hooks, e.hooks))
        how = "reordered" if all(a[2] == b[2] and close(a[1], b[1], a[2]) for a, b in zip(
            mine_, theirs_, strict=True)) else "reordered-other-gradients"
    else:
        how = "missing" if not extra else "extra" if not missing else "other-calls"
        label = next(c for c in ol if c in missing) if how == "missing" else \
            next(c for c in el if c in extra)
        key = how
    hook = view.hooks.get(label)
    if how == "extra" and hook and view.removed.get(hook[2] or "", len(view.flat)) < \
            view.at.get(path, 0):
        key = "removed"         # a hook called after its handle was removed
    op = hook[0] if hook else "hook"
    if key == "removed":        # whatever registered it: its handle's removal (HOOK-6)
        op = "hook"
    variant = key if op == "hook" else KINDS[op].hook_variant(view.flat[hook[3]][1]) \
        if hook else ""
    cands = HOOK_CALLS.get((op, variant), HOOK_CALLS[("hook", "missing")])
    return "calls" if ol else "none", how, cands, cands[-1]


def _observation(s: Stmt, kind: Any, d: Any, o: Event, e: Event
                 ) -> tuple[str | None, str, list[str] | None, Any, Any]:
    """(tensor, aspect, its own clauses or None, oracle's value, engine's) of the one
    observation of the statement that the divergence reports (a sweep makes many)."""
    try:
        items = kind.observations(s, o, e) if hasattr(kind, "observations") else \
            [(*kind.observed(s), None, (o.value, o.dtype), (e.value, e.dtype))]
    except Exception:  # noqa: BLE001 - a malformed value: judged as the statement's
        items = [(*kind.observed(s), None, (o.value, o.dtype), (e.value, e.dtype))]
    for tensor, aspect, clauses, (ov, _), (ev, _) in items:
        label = aspect if tensor is None else f"{tensor}.{aspect}"
        if d.oracle.startswith((f"{label} = ", f"{label} has dtype ")):
            return tensor, aspect, clauses, ov, ev
    tensor, aspect = kind.observed(s)
    return tensor, aspect, None, o.value, e.value


def _valued(view: _Program, s: Stmt, kind: Any, d: Any, o: Event, e: Event
            ) -> tuple[str, str, str, tuple[str | None, ...], str | None, list[str]]:
    """(observable, oracle, engine, candidates, default, nearest clauses) of a divergent
    observation (its value, or its dtype)."""
    tensor, aspect, own, ov, ev = _observation(s, kind, d, o, e)
    made = view.maker(d.path, tensor, aspect)
    observable = f"{aspect}.dtype" if d.what == "dtype" else aspect
    key: Any = (observable, form(ov))
    if aspect == "version" and made is not None and made.target == tensor and \
            KINDS[made.op].writes:
        key = ("version", "written")
    elif aspect == "grad_enabled" and view.enclosing(d.path):
        key = ("grad_enabled", f"inside, {form(ov)}")
    # only a clause the program can exercise (its `requires` the capabilities cover) defines it
    cands = drawable(DEFINES.get(key) or DEFINES.get(observable, ()), view.caps)
    near = view.near(s, d.path, list(s.clauses) if own is None else own, made)
    default = cands[-1] if cands and cands[-1] else (near[0] if near else None)
    if d.what == "dtype":
        return observable, "dtype", "other-dtype", cands, default, near
    return observable, form(ov), _relative(ov, ev), cands, default, near


def _where(s: Stmt | None, d: Any, o: Event | None, e: Event | None) -> str:
    """The statement's kind (every observation, observe or sweep, is `observe`), and its op
    (`call.mul`, `mode.no_grad`) where an outcome differs by an error no spec kind names (an
    op the engine cannot run is a problem of that op; LEAF_INPLACE is the same problem
    whatever the in-place op)."""
    if s is None:
        return _token(d.op or "program")
    kind = KINDS.get(s.op)
    if kind is not None and getattr(kind, "sweeps", False):
        return "observe"
    op = s.params.get("fn") or s.params.get("mode")
    other = any(ev is not None and ev.status == "error" and ev.error not in _errors()
                for ev in (o, e))
    return _token(s.op + (f".{op}" if isinstance(op, str) and other else ""))


def judge_one(view: _Program, d: Any, o: Event | None, e: Event | None
              ) -> tuple[str | None, str, str | None]:
    """(primary clause, signature, conformance class) of one divergence."""
    s = view.stmts.get(d.path)
    where = _where(s, d, o, e)
    if d.what == HARNESS:       # gradspec's own failure: no clause, nothing compared
        return None, f"{where}/harness/-/-", None
    kind = KINDS.get(s.op) if s is not None else None
    if s is None or kind is None or o is None or d.what not in COMPARED or (
            d.what != "outcome" and e is None):
        # a crash, a hang, gradspec's bug, a grad-mode leak: nothing the oracle did differs;
        # the statement's own first clause, as tagged
        detail = d.engine.split(":", 1)[0] if d.what == "internal" else "-"
        return (d.clauses[0] if d.clauses else None), \
            f"{where}/{_token(d.what)}/-/{_token(detail)}", None
    near = view.near(s, d.path, list(s.clauses), None)
    observable = d.what
    if d.what == "outcome":
        ow, ew, cands, default = _outcome(o, e, view.caps)
    elif d.what == "warnings":
        ow, ew, cands, default = _warnings(o, e)
    elif d.what == "hooks":
        ow, ew, cands, default = _hooks(view, d.path, o, e)
    else:
        observable, ow, ew, cands, default, near = _valued(view, s, kind, d, o, e)
    if default is None:
        default = near[0] if near else (d.clauses[0] if d.clauses else None)
    primary = _pick(cands, near, list(d.clauses), default)
    return primary, "/".join([where, _token(observable), _token(ow), _token(ew)]), \
        conformance_class(d.what, observable, ow, ew, primary)


def attribute(program: Program, oracle: Trace | None, engine: Trace | None,
              divergences: list[Any]) -> list[Any]:
    """Set `primary`, `signature` and `cls` of each divergence of `program` (whose traces are
    `oracle` and `engine`; None for a program that was not judged); returns them."""
    if not divergences:         # most programs: nothing to read the program for
        return divergences
    view = _Program(program)
    ob = oracle.by_path() if oracle is not None else {}
    eb = engine.by_path() if engine is not None else {}
    for d in divergences:
        d.primary, d.signature, d.cls = judge_one(view, d, ob.get(d.path), eb.get(d.path))
    return divergences


def claimed(d: Any, classes: Iterable[str] | None) -> bool:
    """Whether a divergence counts for an engine claiming `classes` (None: every class): one of
    a claimed class, or one of no class (harness, crash, timeout, leak: always counted)."""
    return classes is None or getattr(d, "cls", None) is None or d.cls in classes


def judged(divergences: list[Any], classes: Iterable[str] | None) -> list[Any]:
    """The divergences a program is judged on: those of the classes claimed; all of them when
    none is (the program is then not applicable, reported by its first)."""
    classes = None if classes is None else frozenset(classes)
    mine = [d for d in divergences if claimed(d, classes)]
    return mine or list(divergences)


def lead(divergences: list[Any], classes: Iterable[str] | None = None) -> Any | None:
    """The divergence a program is judged by: its first (in a class the engine claims:
    `judged`), the one the rest follow from. The warnings of a sweep are those of all its
    observations: when they differ, the first of its observations that differs is the first
    differing observation."""
    divergences = judged(divergences, classes)
    if not divergences:
        return None
    first = divergences[0]
    kind = KINDS.get(first.op)
    if first.what == "warnings" and kind is not None and getattr(kind, "sweeps", False):
        first = next((d for d in divergences if d.path == first.path and
                      d.what in ("value", "dtype")), first)
    return first


def verdict(divergences: list[Any], classes: Iterable[str] | None = None
            ) -> tuple[list[str], str]:
    """A program's primary clause (a list of at most one) and signature: those of the
    divergence it is judged by (`lead`)."""
    first = lead(divergences, classes)
    if first is None:
        return [], ""
    return ([first.primary] if first.primary else []), first.signature
