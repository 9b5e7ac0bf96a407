"""Compare an engine's Trace with the oracle's, statement by statement.

A statement gradspec could not express (status harness on either side, see
conformance/judge/executor.py) is never compared: it is reported as a harness error, a
Divergence whose `what` is HARNESS, which says the program could not be judged.

What counts (spec/README.md and spec/unspecified.md):
- outcome: ok or error, errors by kind and by the statement that raised; text after the prefix
  is not compared (UNSPEC-5). Statements skipped on either side are not compared: the cause is
  an earlier statement, reported there.
- warning kinds listed in spec/errors.md, in order.
- observed values and hook gradients, within the tolerance of the program's precision: the
  comparison rule of spec/README.md (UNSPEC-4), widened for a value by its measured
  sensitivity to the program's inputs when the caller hands a Relief (conditioning.py).
- hook calls: labels in call order.
Left out on purpose:
- `.grad` observed after a backward or autograd.grad that raised, until the tensor's `.grad` is
  assigned again, and hook calls made by a statement that raised on both sides (UNSPEC-1);
- the value and `_version` of a tensor once it was assigned to a `.grad` or passed as a
  backward `gradient`, and of the views of it, since an engine may store it or a copy, and
  accumulate into it or not; and the `.grad` it was assigned to, once that tensor or a view
  of it is modified in place (UNSPEC-3);
- the `_version` of gradients (results of autograd.grad, and views of them) and of `matmul`
  results with a 1-D operand (VER-1, UNSPEC-3);
- whether names that may be one tensor object are one (the results of autograd.grad, and its
  grad_outputs tensors: UNSPEC-3): once a statement changes one of them, every statement that
  reads the others (or what was computed from them) is not compared, and after such a
  backward pass nothing is;
- what a pass without create_graph computed from a gradient it was handed that requires grad
  (the results of autograd.grad and what is computed from them; whether a `.grad`, or a name
  bound to one, requires grad and its grad_fn), which may be that tensor itself (UNSPEC-3);
- the calls of a hook registered on a view after a write through an alias, before anything
  read the view's grad_fn, and, for a hook that may change its gradient, what is computed
  from the view from then on (UNSPEC-17, judge/stale_views.py; an op recorded with the view
  as an operand reads its grad_fn too: the oracle's Event says whether its op recorded);
- the node of a non-leaf's recorded `.grad` (retained, or among a pass's inputs) once a pass
  without create_graph followed one with it, which may have replaced it or added into it
  (UNSPEC-16; a leaf's keeps its node, DOUBLE-4);
- the `.grad`s a module's zero_grad held, and what held them, after one that raised partway
  or ran inside a block (GRAD-6);
- the dtype of the `.grad` of a leaf whose grad_dtype is None once it was computed with twice
  (LEAF-9: gradients of two dtypes may meet, and torch keeps the first to arrive);
- of a detach() or .data of an inference tensor taken outside the mode: its `_version`, and
  whether a write into it (as a `.grad` too) or reading its `_version` ran or was refused, and
  what such a write left, and the `_version` of what is computed outside the mode from it or
  from any inference tensor (UNSPEC-10, judge/inference_aliases.py).
What each statement does to these open points, the comparator asks its kind (the "open
points" of conformance/kinds/registry.py) and, for a call, its row of the op table
(`version_open_1d`, conformance/lang/ops.py); it never branches on a statement's op.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from ..kinds import KINDS
from ..lang import ops
from ..lang.program import Program, Stmt, walk_statements
from ..lang.trace import HARNESS, Event, Trace
from .executor import names
from .problems import INTERNAL, not_judged  # noqa: F401 - named from here too
from .rule import EPS, TOLERANCES, ULPS, close  # noqa: F401 - the rule, named where it is used
from .segments import UNIT
from .structure import structural, structure_only
from .unspecified import Unspecified, compared_warnings, error_kind_open
from .verdict import attribute

if TYPE_CHECKING:
    from .conditioning import Relief

@dataclass
class Divergence:
    path: str                   # statement path ('3', '5.0'); '' for the whole program
    op: str
    what: str                   # outcome | warnings | value | hooks | harness | crash | timeout
    #                             | internal
    oracle: str                 # what the oracle did, in words
    engine: str                 # what the engine did
    clauses: list[str] = field(default_factory=list)
    segment: str | None = None      # the id of the engine's unit that ran the statement, if any
    localised_to: str | None = None     # where an eager replay first differs, or UNIT (both:
    #                                     conformance/judge/segments.py); None: not replayed
    primary: str | None = None  # the clause defining what the oracle did here (verdict.py)
    signature: str = ""         # the kind of problem, values normalised away (verdict.py)
    cls: str | None = None      # its conformance class (verdict.py); None: not a verdict on
    #                             the engine's semantics (harness, crash, timeout, leak)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("segment", "localised_to"):
            if d[k] is None:
                del d[k]
        cls = d.pop("cls")
        if cls is not None:
            d["class"] = cls
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Divergence:
        return cls(**{("cls" if k == "class" else k): v for k, v in d.items()})

    def __str__(self) -> str:
        if not self.path:   # crash, timeout, internal: the whole program
            return f"program: {self.what}: {self.engine}"
        where = f"statement {self.path} ({self.op})" if self.path else "program"
        if self.what == HARNESS:    # gradspec's own failure: nothing was compared
            return f"{where}: harness error: {self.engine}"
        cites = (f" [{self.primary}]" if self.primary else "") + (
            f" (involved: {', '.join(self.clauses)})" if self.clauses else "")
        return (f"{where}{self._unit()}: {self.what} differs{cites}\n  oracle: {self.oracle}\n"
                f"  engine: {self.engine}")

    def _unit(self) -> str:
        """Where the statement's unit is, and what replaying it eagerly showed."""
        text = f" in segment {self.segment}" if self.segment else ""
        if self.localised_to == UNIT:
            text += " (the eager replay does not diverge: only the unit does)"
        elif self.localised_to is not None:
            text += f" (the eager replay first differs at statement {self.localised_to})"
        return text


def precision(program: Program) -> str:
    """The dtype whose tolerance a program's floats are compared with: the least precise
    floating dtype its statements create, as leaves or casts (a float64 value may come
    through float32 ops: a float32 tensor times a 0-d float64 one is float32); float32 when
    it names none."""
    dtypes = {s.params.get("dtype") for _, s in walk_statements(program.statements)}
    dtypes |= {ops.ROWS[fn].dtype for _, s in walk_statements(program.statements)   # casts
               if s.op == "call" and isinstance(fn := s.params.get("fn"), str) and fn in ops.ROWS}
    known = [d for d in EPS if d in dtypes]
    return max(known, key=EPS.__getitem__) if known else "float32"


def outcome(ev: Event) -> str:
    if ev.status == HARNESS:
        return f"harness error ({ev.message})"
    if ev.status == "error":
        return f"raised {ev.error}" + (f" ({ev.message})" if ev.error == "OTHER" else "")
    return ev.status


def involved_clauses(program: Program, path: str) -> list[str]:
    """The statement's clauses, its enclosing blocks', then those of earlier statements that
    bound or acted on the tensors it uses (a backward slice), in program order."""
    return _involved(walk_statements(program.statements), path)


def _involved(flat: list[tuple[str, Stmt]], path: str, own: list[str] | None = None,
              reads: list[str] | None = None) -> list[str]:
    """`own` and `reads`: the clauses and the names of one observation of the statement at
    `path`, in place of the whole statement's."""
    pos = next((i for i, (p, _) in enumerate(flat) if p == path), None)
    if pos is None:
        return []
    stmt = flat[pos][1]
    found: dict[str, None] = dict.fromkeys(stmt.clauses if own is None else own)
    for p, s in flat[:pos]:
        if path.startswith(p + "."):
            found.update(dict.fromkeys(s.clauses))
    seen = set(names(stmt)[0] if reads is None else reads)
    for _, s in reversed(flat[:pos]):
        read, bound = names(s)
        kind = KINDS.get(s.op)
        if kind is None or (kind.valued and not bound):     # looks, changes nothing
            continue
        touched = set(bound) | ({s.target} if s.target else set())
        if touched & seen:
            found.update(dict.fromkeys(s.clauses))
            seen |= set(read)
    return list(found)


def _grad_hooks(flat: list[tuple[str, Stmt]]) -> dict[str, str]:
    """Hook label -> the tensor whose .grad its calls show (the kinds' grad_hook)."""
    out: dict[str, str] = {}
    for _, s in flat:
        kind = KINDS.get(s.op)
        label = kind.grad_hook(s) if kind is not None else None
        if label is not None:
            out[label] = s.target
    return out


def _hooked(flat: list[tuple[str, Stmt]]) -> dict[str, list[str]]:
    """Hook label -> the tensors the statement that registered it names (the tensor a tensor
    hook sees the gradient of, among them)."""
    out: dict[str, list[str]] = {}
    for _, s in flat:
        kind = KINDS.get(s.op)
        for label in kind.hook_labels(s) if kind is not None else []:
            out[label] = [n for n in kind.refs(s) if isinstance(n, str)]
    return out


def _hooks_text(calls: list[list[Any]]) -> str:
    return "; ".join(f"{c[0]}({c[1]})" for c in calls) or "no hook calls"


def compare(program: Program, oracle: Trace, engine: Trace, relief: Relief | None = None
            ) -> list[Divergence]:
    """Every divergence of `engine` from `oracle`, in program order; harness errors (the
    statements gradspec could not express) first, since they leave the program unjudged.
    `relief`: the oracle's measured sensitivity of each float (conditioning.py), which widens
    the tolerance of ill-conditioned values; without it, the plain rule alone."""
    if structure_only(program):     # node names not compared (structure.py)
        oracle, engine = structural(program, oracle), structural(program, engine)
    flat = walk_statements(program.statements)
    stmts: dict[str, Stmt] = dict(flat)
    if _identical(oracle, engine, stmts) or _same_outline(oracle, engine, stmts) and \
            _close_throughout(oracle, engine, precision(program)):
        return []
    dtype = precision(program)
    grad_hooks, hooked = _grad_hooks(flat), _hooked(flat)
    theirs = engine.by_path()
    unspec = Unspecified()
    out: list[Divergence] = []

    def diverge(ev: Event, what: str, o: str, e: str, clauses: list[str] | None = None,
                tensor: str | None = None) -> None:
        """`clauses` and `tensor`: one observation of a statement that makes several (a
        sweep): its own clauses and the slice of what acted on that tensor."""
        unit = (theirs.get(ev.path) or ev).segment
        cites = _involved(flat, ev.path) if clauses is None else \
            _involved(flat, ev.path, clauses, [tensor] if tensor else [])
        out.append(Divergence(ev.path, ev.op, what, o, e, cites, unit))

    def same_call(path: str, i: int | None, c: list[Any], d: list[Any]) -> bool:
        """`i`: the call's place in the trace, which keys its measured spread; None when the
        calls are compared out of order (no spread applies)."""
        if c[0] in grad_hooks and unspec.grad(grad_hooks[c[0]]):
            return True                     # a post hook's view of an unspecified .grad
        mixed = any(unspec.mixed(n) for n in hooked.get(c[0], ()))     # LEAF-9
        return (c[2] == d[2] or None in (c[2], d[2]) or mixed) and (
            close(c[1], d[1], dtype) or i is not None
            and _relieved(relief, (path, "hook", i), c[1], d[1], dtype))

    for o in oracle.events:
        e = theirs.get(o.path)
        s = stmts.get(o.path)
        if e is None or s is None:
            diverge(o, "outcome", outcome(o), "statement not run")
            continue
        ost, est = o.status, e.status
        if ost == HARNESS or est == HARNESS:    # gradspec's failure, never the engine's
            diverge(o, HARNESS, outcome(o), o.message if ost == HARNESS else e.message)
            continue
        if ost == "skipped" or est == "skipped":
            continue
        kind = KINDS[s.op]
        open_items = unspec.opens(s, kind, o, e)    # UNSPEC-3: depends on whether two are one
        if open_items and not kind.sweeps or unspec.stale_views.registers_on_stale(s, kind):
            unspec.update(s, kind, o, e)
            continue
        if not open_items and (ost != est or o.error != e.error) and \
                not error_kind_open(o, e):                          # a sweep with open
            diverge(o, "outcome", outcome(o), outcome(e))   # items: item by item (hides)
        elif not open_items and compared_warnings(o) != compared_warnings(e):
            diverge(o, "warnings", ", ".join(compared_warnings(o)) or "none",
                    ", ".join(compared_warnings(e)) or "none")
        if (o.hooks or e.hooks) and not ost == est == "error":  # UNSPEC-1: hooks before an
            open_order = kind.hook_order_open(s)                      # error
            oh, eh = _hook_calls(o, e, open_order, unspec.stale_views.hooks)
            if [c[0] for _, c in oh] != [c[0] for _, c in eh] or not all(
                    same_call(o.path, None if open_order else i, c, d)  # i keys its spread
                    for (i, c), (_, d) in zip(oh, eh, strict=True)):
                diverge(o, "hooks", _hooks_text(o.hooks), _hooks_text(e.hooks))
        if ost == est == "ok" and kind.valued and not _same_data((o.value, o.dtype),
                                                                 (e.value, e.dtype)):
            _compare_value(s, kind, o, e, unspec, diverge, dtype, relief)
        unspec.update(s, kind, o, e)
    return attribute(program, oracle, engine, sorted(out, key=lambda d: d.what != HARNESS))


# Plain data (lang/trace.py) encoded as MessagePack is equal byte for byte only when the data
# are identical in type and bits: unlike ==, it tells True from 1 and 1 from 1.0, keeps NaN
# equal to itself (same bits) and -0.0 apart from 0.0. Identical data agree under every rule
# of this module, so what is identical needs no comparing; what is not is compared in full.
_encode = msgspec.msgpack.Encoder().encode


def _same_data(a: Any, b: Any) -> bool:
    return _encode(a) == _encode(b)


def _same_outline(oracle: Trace, engine: Trace, stmts: dict[str, Stmt]) -> bool:
    """Whether the engine ran what the oracle did, statement by statement and in the same
    order, with the same statuses, error kinds and warnings and no harness error. Error
    messages are not compared (UNSPEC-5), nor the unit that ran a statement."""
    if len(oracle.events) != len(engine.events):
        return False
    for o, e in zip(oracle.events, engine.events, strict=True):
        if o.path != e.path or o.status != e.status or o.status == HARNESS \
                or o.error != e.error or o.warnings != e.warnings or o.path not in stmts:
            return False
    return True


def _identical(oracle: Trace, engine: Trace, stmts: dict[str, Stmt]) -> bool:
    """Whether the engine's trace is the oracle's: the same outline (_same_outline) and every
    value, dtype and hook call identical too; then nothing can diverge (most programs on a
    conforming engine), and the open points need no tracking. (The outline's fields are
    compared with the rest, as bytes: in C, where a loop over the events costs as much.)"""
    oe, ee = oracle.events, engine.events
    if len(oe) != len(ee):
        return False
    try:
        same = _same_data(
            [(o.path, o.status, o.error, o.warnings, o.value, o.dtype, o.hooks) for o in oe],
            [(e.path, e.status, e.error, e.warnings, e.value, e.dtype, e.hooks) for e in ee])
    except (TypeError, msgspec.EncodeError):   # no plain data (a crafted trace): compared
        return False                            # as before, outline first
    return same and HARNESS not in {o.status for o in oe} and \
        stmts.keys() >= {o.path for o in oe}


def _close_throughout(oracle: Trace, engine: Trace, dtype: str) -> bool:
    """Given the same outline: whether the traces differ in nothing but floats within the plain
    rule's tolerance: for each statement that ran, the same dtype, a close value and the same
    hook calls with close gradients (`close` over the nested lists: a sweep's items are
    [value, dtype] and a hook call [label, gradient, dtype], so strings and None must be equal
    and floats close). Nothing of that can diverge, whatever is left open (what is open only
    excuses differences), so the open points need no tracking; the rest (floats apart, hooks
    reordered, an observation's dtype, ...) is compared in full. Most programs that are not
    identical on a conforming engine differ only in a float's last bits."""
    for o, e in zip(oracle.events, engine.events, strict=True):
        if o.status != "ok" or _same_data((o.value, o.dtype, o.hooks),    # (in C: the
                                          (e.value, e.dtype, e.hooks)):   # common case)
            continue            # a statement that failed on both: nothing more to compare
        if not (o.dtype == e.dtype and _close_parts(o.value, e.value, dtype)
                and _close_parts(o.hooks, e.hooks, dtype)):
            return False
    return True


def _close_parts(a: Any, b: Any, dtype: str) -> bool:
    """close(a, b), a list's identical items (most of a sweep's) told by their bytes."""
    if type(a) is list and type(b) is list and len(a) == len(b):
        return all(_encode(x) == _encode(y) or close(x, y, dtype)
                   for x, y in zip(a, b, strict=True))
    return close(a, b, dtype)


def _hook_calls(o: Event, e: Event, order_open: bool,
                open_labels: set[str]) -> tuple[list[Any], list[Any]]:
    """Both sides' hook calls as compared, each with its place in its trace: in call order,
    or by label where the order is left open (UNSPEC-7; a label's own calls keep their order);
    none of the hooks whose calls are left open (`open_labels`, UNSPEC-17)."""
    oh, eh = ([(i, c) for i, c in enumerate(ev.hooks) if c[0] not in open_labels]
              for ev in (o, e))
    if not order_open:
        return oh, eh
    return sorted(oh, key=lambda ic: ic[1][0]), sorted(eh, key=lambda ic: ic[1][0])


def _relieved(relief: Relief | None, key: tuple[str, str, int], a: Any, b: Any,
              dtype: str) -> bool:
    """Whether floats that the plain rule tells apart are within their measured spread."""
    return relief is not None and relief.allows(key, a, b, lambda x, y: close(x, y, dtype))


def _compare_value(s: Stmt, kind: Any, o: Event, e: Event, unspec: Unspecified,
                   diverge: Any, dtype: str, relief: Relief | None = None) -> None:
    """A valued statement's observations (an end-of-program sweep has many), unless what one
    shows is left open; floats within the tolerance of `dtype`, the program's precision; the
    dtype of what was observed, where it has one, exactly."""
    refs = kind.refs(s)     # once: a sweep's refs walk all its items
    for i, (tensor, aspect, clauses, (ov, od), (ev, ed)) in enumerate(
            kind.observations(s, o, e)):
        if unspec.hides(aspect, tensor, refs):
            continue
        label = aspect if tensor is None else f"{tensor}.{aspect}"
        if not close(ov, ev, dtype) and not _relieved(relief, (o.path, "value", i), ov, ev,
                                                      dtype):
            diverge(o, "value", f"{label} = {ov!r}", f"{label} = {ev!r}", clauses, tensor)
        elif od != ed and od is not None and ed is not None and not unspec.hides(
                f"{aspect}.dtype", tensor, refs):
            diverge(o, "dtype", f"{label} has dtype {od}", f"{label} has dtype {ed}", clauses,
                    tensor)


def harness_errors(found: list[Divergence]) -> list[Divergence]:
    """The harness errors among divergences: gradspec's own failures, not the engine's."""
    return [d for d in found if d.what == HARNESS]


def is_harness(entry: dict[str, Any]) -> bool:
    """Whether a campaign's entry for a divergent program (report.json) is a harness error,
    which nothing (an expected-failure entry, the oracle's age) may excuse."""
    return entry.get("what") == HARNESS
