"""Compare an engine's Trace with the oracle's, statement by statement.

What counts (spec/README.md and spec/unspecified.md):
- outcome: ok or error, errors by kind and by the statement that raised; text after the prefix
  is not compared (UNSPEC-5). Statements skipped on either side are not compared: the cause is
  an earlier statement, reported there.
- warning kinds listed in spec/errors.md, in order.
- observed values and hook gradients, within the per-dtype TOLERANCES (UNSPEC-4).
- hook calls: labels in call order.
Left out on purpose:
- `.grad` observed after a backward or autograd.grad that raised, until the tensor's `.grad` is
  assigned again, and hook calls made by a statement that raised on both sides (UNSPEC-1);
- the value and `_version` of a tensor once it was assigned to a `.grad` or passed as a
  backward `gradient`, and of the views of it, since an engine may store it or a copy, and
  accumulate into it or not; and the `.grad` it was assigned to, once that tensor or a view
  of it is modified in place (UNSPEC-3);
- the `_version` of gradients (results of autograd.grad, and views of them) and of `matmul`
  results with a 1-D operand (VER-1, UNSPEC-3).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .executor import VALUED, Event, Trace, binds, refs
from .program import Program, Stmt

# dtype -> (relative, absolute) tolerance; unknown dtypes get the float32 row. UNSPEC-4 fixes
# one tolerance for every dtype (spec/README.md); the table lets the spec tighten float64.
TOLERANCES = {"float32": (1e-5, 1e-6), "float64": (1e-5, 1e-6)}


@dataclass
class Divergence:
    path: str                   # statement path ('3', '5.0'); '' for the whole program
    op: str
    what: str                   # outcome | warnings | value | hooks | crash | timeout | internal
    oracle: str                 # what the oracle did, in words
    engine: str                 # what the engine did
    clauses: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Divergence:
        return cls(**d)

    def __str__(self) -> str:
        if not self.path:   # crash, timeout, internal: the whole program
            return f"program: {self.what}: {self.engine}"
        where = f"statement {self.path} ({self.op})" if self.path else "program"
        cites = f" [{', '.join(self.clauses)}]" if self.clauses else ""
        return (f"{where}: {self.what} differs{cites}\n  oracle: {self.oracle}\n"
                f"  engine: {self.engine}")


def close(a: Any, b: Any, dtype: str | None) -> bool:
    """Equality with per-dtype tolerance for floats; exact for everything else."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, dtype) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None \
            or isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        rel, abs_ = TOLERANCES.get(dtype or "", TOLERANCES["float32"])
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    return False


def outcome(ev: Event) -> str:
    if ev.status == "error":
        return f"raised {ev.error}" + (f" ({ev.message})" if ev.error == "OTHER" else "")
    return ev.status


def involved_clauses(program: Program, path: str) -> list[str]:
    """The statement's clauses, its enclosing blocks', then those of earlier statements that
    bound or acted on the tensors it uses (a backward slice), in program order."""
    flat = list(program.walk())
    pos = next((i for i, (p, _) in enumerate(flat) if p == path), None)
    if pos is None:
        return []
    stmt = flat[pos][1]
    found: dict[str, None] = dict.fromkeys(stmt.clauses)
    for p, s in flat[:pos]:
        if path.startswith(p + "."):
            found.update(dict.fromkeys(s.clauses))
    names = set(refs(stmt))
    for _, s in reversed(flat[:pos]):
        if s.op == "observe":   # looks, changes nothing
            continue
        touched = set(binds(s)) | ({s.target} if s.target else set())
        if touched & names:
            found.update(dict.fromkeys(s.clauses))
            names |= set(refs(s))
    return list(found)


def _post_hook_targets(program: Program) -> dict[str, str]:
    return {(s.params.get("label") or s.out): s.target
            for _, s in program.walk() if s.op == "post_hook"}


def _hooks_text(calls: list[list[Any]]) -> str:
    return "; ".join(f"{c[0]}({c[1]})" for c in calls) or "no hook calls"


# Statements whose result shares storage (and so may share an aliasing .grad) with the target.
# reshape may copy or not (UNSPEC-3): counted as sharing, the cautious side.
_ALIASING = ("view", "getitem", "detach", "data")
# ... and whose result shares the target's version counter (VER-4, VER-5; not .data, VER-6).
_SHARES_VERSION = ("view", "getitem", "detach")


class _Unspecified:
    """What spec/unspecified.md says not to compare, tracked statement by statement."""

    def __init__(self) -> None:
        self.after_error = False            # UNSPEC-1: a backward raised; no .grad compared ...
        self.reset: set[str] = set()        # ... but those assigned since
        self.group: dict[str, int] = {}     # name -> storage it may share with other names
        self.stored: dict[int, set[str]] = {}   # UNSPEC-3: storage -> tensors it was .grad of
        self.lost: set[str] = set()         # tensors whose .grad aliased a tensor modified
        self.versionless: set[str] = set()  # VER-1: gradients, matmul with a 1-D operand
        self.storages = itertools.count(1)

    def grad(self, name: str | None) -> bool:
        return (self.after_error and name not in self.reset) or name in self.lost

    def value(self, name: str | None) -> bool:
        return self.group.get(name or "") in self.stored

    def version(self, name: str | None) -> bool:
        return name in self.versionless or self.value(name)

    def _fresh(self, name: str) -> None:
        self.group[name] = next(self.storages)
        self.versionless.discard(name)

    def update(self, s: Stmt, o: Event, e: Event) -> None:
        if s.op in ("backward", "backward_many", "grad") and "error" in (o.status, e.status):
            self.after_error, self.reset = True, set()
        if s.op == "set_grad" and s.target:
            self.reset.add(s.target)
            self.lost.discard(s.target)
        if s.op in ("set_grad", "backward") and s.args and isinstance(s.args[0], str):
            g = self.group.setdefault(s.args[0], next(self.storages))
            self.stored.setdefault(g, set()).add(s.target or "")
        if s.op == "backward_many":         # autograd.backward's grad_tensors likewise
            for root, gt in zip(s.params.get("tensors") or [],
                                s.params.get("grad_tensors") or [], strict=False):
                if isinstance(gt, str):
                    g = self.group.setdefault(gt, next(self.storages))
                    self.stored.setdefault(g, set()).add(root)
        if s.op in ("inplace", "setitem"):
            g = self.group.get(s.target or "")
            if g in self.stored:            # a write to a gradient tensor or a view of it
                self.lost.update(self.stored[g])
            return
        for name in binds(s):               # a fresh tensor under an old name
            self._fresh(name)
        if s.op in _ALIASING and s.out and s.target in self.group:
            self.group[s.out] = self.group[s.target]
            if s.op in _SHARES_VERSION and s.target in self.versionless:
                self.versionless.add(s.out)
        if s.op == "grad":
            self.versionless.update(binds(s))
        if s.op == "call" and s.out and s.params.get("fn") == "matmul" and any(
                len(shape) == 1 for shape in (o.shapes or e.shapes or [[1]])):
            self.versionless.add(s.out)     # no shapes recorded: assume the worst


def compare(program: Program, oracle: Trace, engine: Trace) -> list[Divergence]:
    """Every divergence of `engine` from `oracle`, in program order."""
    stmts: dict[str, Stmt] = dict(program.walk())
    post_targets = _post_hook_targets(program)
    theirs = engine.by_path()
    unspec = _Unspecified()
    out: list[Divergence] = []

    def diverge(ev: Event, what: str, o: str, e: str) -> None:
        out.append(Divergence(ev.path, ev.op, what, o, e, involved_clauses(program, ev.path)))

    def same_call(c: list[Any], d: list[Any]) -> bool:
        if c[0] in post_targets and unspec.grad(post_targets[c[0]]):
            return True                     # a post hook's view of an unspecified .grad
        return close(c[1], d[1], c[2] or d[2])

    for o in oracle.events:
        e = theirs.get(o.path)
        s = stmts.get(o.path)
        if e is None or s is None:
            diverge(o, "outcome", outcome(o), "statement not run")
            continue
        if "skipped" in (o.status, e.status):
            continue
        if (o.status, o.error) != (e.status, e.error):
            diverge(o, "outcome", outcome(o), outcome(e))
        elif o.warnings != e.warnings:
            diverge(o, "warnings", ", ".join(o.warnings) or "none",
                    ", ".join(e.warnings) or "none")
        if not o.status == e.status == "error":     # UNSPEC-1: hooks run before an error
            if [c[0] for c in o.hooks] != [c[0] for c in e.hooks] or not all(
                    same_call(c, d) for c, d in zip(o.hooks, e.hooks, strict=True)):
                diverge(o, "hooks", _hooks_text(o.hooks), _hooks_text(e.hooks))
        if o.status == e.status == "ok" and s.op in VALUED:
            what = s.params.get("what") if s.op == "observe" else s.op
            skip = s.op == "observe" and (
                (what == "grad" and unspec.grad(s.target))
                or (what == "value" and unspec.value(s.target))
                or (what == "version" and unspec.version(s.target)))
            if not skip and not close(o.value, e.value, o.dtype or e.dtype):
                label = {"observe": f"{s.target}.{what}", "grad": "results"}.get(s.op, what)
                diverge(o, "value", f"{label} = {o.value!r}", f"{label} = {e.value!r}")
        unspec.update(s, o, e)
    return out
