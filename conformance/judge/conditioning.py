"""How far a program's own float inputs determine each value it shows: the widening of the
comparison rule for ill-conditioned values (spec/README.md, "Comparing traces").

Two correct engines may round one op differently (sum in another order, a different `exp`
kernel). For most values that moves the result by a few ulps, which the plain rule's 512 ulps
cover. Through an ill-conditioned chain (`exp` of `exp`, `cos` of a large float32 sum, a
difference of near-equal sums) the same rounding moves it by as much as changing the
program's inputs in their last bits would, far past 512 ulps, and a fixed tolerance calls
two correct engines different. So the tolerance of each value grows with its measured
sensitivity: the oracle runs the program again with every float leaf value moved by PERTURB
ulps of its dtype (two seeded sign patterns), and a value may differ between the engines by
ULPS / PERTURB times the most it moved, on top of the plain rule: the allowance the plain rule
gives a well-conditioned value, scaled by the value's condition number.

It is measured only once the plain rule found a value or hook call that differs, so agreeing
programs (nearly all) cost nothing. When a perturbed run does not do what the original did
(another statement raises, skips, or shows another shape), the perturbation changed the
program, not only its rounding, and no value is widened. NaN and infinities are never widened.
"""
from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable
from typing import Any

from ..kinds import KINDS
from ..lang.program import Program, Stmt
from ..lang.trace import Trace
from .rule import EPS, ULPS

PERTURB = 8         # how far each float leaf value moves, in ulps of its dtype
PATTERNS = 2        # seeded sign patterns; a value's spread is the most it moved in any
SCALE = ULPS / PERTURB

# where a compared float lives in a trace: (statement path, "value", observation index) or
# (statement path, "hook", call index)
Key = tuple[str, str, int]


def perturbed(program: Program, pattern: int) -> Program:
    """`program` with every float leaf value v moved to v * (1 ± PERTURB * eps), the signs
    drawn from a generator seeded by `pattern` alone (the same program gives the same
    perturbation everywhere). Zeros stay zero: a relative move cannot move them, and an
    absolute one would move values off the exact points (0 of relu or abs) where a derivative
    is chosen, not rounded."""
    rng = random.Random(pattern)

    def move(s: Stmt) -> Stmt:
        body = [move(b) for b in s.body]
        eps = EPS.get(s.params.get("dtype", ""))
        values = s.params.get("values")
        if s.op != "leaf" or eps is None or not isinstance(values, list):
            return dataclasses.replace(s, body=body) if s.body else s
        step = PERTURB * eps
        moved = [v * (1 + step * rng.choice((-1, 1))) if type(v) is float else v
                 for v in values]
        return dataclasses.replace(s, params={**s.params, "values": moved}, body=body)
    return dataclasses.replace(program, statements=[move(s) for s in program.statements])


def _same_run(a: Trace, b: Trace) -> bool:
    """Whether two runs of a program did the same things: the same statements, each with the
    same status and error kind, and the same hook calls."""
    if len(a.events) != len(b.events):
        return False
    for x, y in zip(a.events, b.events, strict=True):
        if (x.path, x.status, x.error) != (y.path, y.status, y.error) or \
                [c[0] for c in x.hooks] != [c[0] for c in y.hooks]:
            return False
    return True


def _spread(original: Any, moved: Any) -> Any:
    """Element by element, how far a float moved (inf where it became NaN or infinite while
    the original was finite); None where the two do not have one structure."""
    if isinstance(original, list):
        if not isinstance(moved, list) or len(moved) != len(original):
            return None
        return [_spread(x, y) for x, y in zip(original, moved, strict=True)]
    if type(original) is float and isinstance(moved, (int, float)) and \
            not isinstance(moved, bool):
        if not math.isfinite(original):
            return 0.0
        return abs(moved - original) if math.isfinite(moved) else math.inf
    return 0.0 if original == moved else None


def _widest(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    if isinstance(a, list):
        return [_widest(x, y) for x, y in zip(a, b, strict=True)]
    return max(a, b)


def _floats(program: Program, trace: Trace) -> dict[Key, Any]:
    """Every compared float of a trace by where it lives: observations and hook calls."""
    stmts = dict(program.walk())
    out: dict[Key, Any] = {}
    for ev in trace.events:
        s = stmts.get(ev.path)
        for i, call in enumerate(ev.hooks):
            out[(ev.path, "hook", i)] = call[1]
        if s is None or ev.status != "ok" or not KINDS[s.op].valued:
            continue
        for i, (*_, (value, _dt), _) in enumerate(KINDS[s.op].observations(s, ev, ev)):
            out[(ev.path, "value", i)] = value
    return out


def measure(program: Program, trace: Trace, rerun: Callable[[Program], Trace]
            ) -> dict[Key, Any] | None:
    """The spread of every compared float of `trace` (the oracle's run of `program`) under
    PATTERNS perturbations run by `rerun`; None if a perturbed run did something else."""
    base = _floats(program, trace)
    spreads: dict[Key, Any] = {}
    for pattern in range(PATTERNS):
        again = rerun(perturbed(program, pattern))
        if not _same_run(trace, again):
            return None
        moved = _floats(program, again)
        for key, value in base.items():
            sp = _spread(value, moved.get(key))
            spreads[key] = sp if pattern == 0 else _widest(spreads.get(key), sp)
    return spreads


def _within(a: Any, b: Any, spread: Any, close: Callable[[Any, Any], bool]) -> bool:
    if isinstance(a, list) and isinstance(b, list) and isinstance(spread, list):
        return len(a) == len(b) == len(spread) and all(
            _within(x, y, s, close) for x, y, s in zip(a, b, spread, strict=True))
    if close(a, b):
        return True
    return type(a) is float and type(b) is float and isinstance(spread, float) and \
        math.isfinite(a) and math.isfinite(b) and abs(a - b) <= SCALE * spread


class Relief:
    """The widened comparison for one program's oracle trace, measured on first use only
    (most programs never need it). `rerun` runs a program on the oracle, hermetically."""

    def __init__(self, program: Program, trace: Trace, rerun: Callable[[Program], Trace]):
        self.program, self.trace, self.rerun = program, trace, rerun
        self._spreads: dict[Key, Any] | None = None
        self._measured = False

    def spreads(self) -> dict[Key, Any] | None:
        if not self._measured:
            self._measured = True
            self._spreads = measure(self.program, self.trace, self.rerun)
        return self._spreads

    def allows(self, key: Key, a: Any, b: Any, close: Callable[[Any, Any], bool]) -> bool:
        """Whether oracle value `a` and engine value `b`, which the plain rule `close` tells
        apart, differ by no more than the value's spread allows, element by element."""
        spreads = self.spreads()
        if spreads is None or spreads.get(key) is None:
            return False
        return _within(a, b, spreads[key], close)


__all__ = ["PATTERNS", "PERTURB", "SCALE", "Relief", "measure", "perturbed"]
