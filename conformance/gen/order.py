"""The statement draw: its explicit order, and the tables the drawing loop reads from it.

Each step of the loop (core.py) draws one entry of DRAW_ORDER by weight: "skip" is option 0
(weight 0) so that shrinking can drop a step; "error" is a deliberate error move (errors.py);
"focus" (from generator vocabulary 3) a focus move (focus.py);
every other entry is a statement kind (conformance/kinds/), drawn with its `weight` where the
capabilities cover its `caps`, in the order of the kinds' explicit tuple (kinds/registry.py,
ORDER), never import order.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..kinds import KINDS, ORDER
from ..lang import ops
from ..spec.capabilities import closure, lacked_ops
from ..spec.reader import load_spec
from . import errors, focus
from .vocabulary import CAPABILITY_SINCE

DRAW_ORDER = ("skip", *ORDER, "error", "focus")


@functools.cache
def clause_requires() -> dict[str, tuple[str, ...]]:
    """Clause ID -> the capabilities its `requires` names (spec metadata)."""
    return {cid: tuple(c.requires) for cid, c in load_spec().clauses.items()}


@functools.cache
def blocked_clauses(caps: frozenset[str]) -> frozenset[str]:
    """The clauses whose `requires` the capabilities do not cover: never tagged, so that
    reports do not show a program "exercising" clauses its engine cannot."""
    return frozenset(c for c, req in clause_requires().items() if not caps.issuperset(req))


@functools.cache
def statement_draw(caps: frozenset[str], deep: bool, vocabulary: int = 1
                   ) -> tuple[tuple[str, int], ...]:
    """(entry, weight) of DRAW_ORDER under the capabilities in a generator vocabulary; `deep`
    (a block inside a block) draws neither another block nor an error."""
    table = []
    for name in DRAW_ORDER:
        if name == "skip":
            table.append((name, 0))
        elif name == "error":
            if not deep:
                table.append((name, errors.weight(vocabulary)))
        elif name == "focus":
            if not deep:
                table.append((name, focus.weight(vocabulary)))
        else:
            k = KINDS[name]
            if caps.issuperset(k.caps) and not (deep and k.block):
                table.append((name, k.draw_weight(vocabulary)))
    return tuple(table)


@functools.cache
def draw_functions() -> dict[str, Callable[[Any], bool]]:
    """Entry of DRAW_ORDER -> the function that draws it into the Gen it is handed."""
    fns: dict[str, Callable[[Any], bool]] = {n: KINDS[n].draw for n in DRAW_ORDER
                                            if n in KINDS}
    fns["error"] = errors.draw_error
    fns["focus"] = focus.draw_focus
    return fns


@functools.cache
def draw_tables(declared: frozenset[str], vocabulary: int) -> tuple[Any, ...]:
    """What a Gen draws from, the same for every program of the capabilities and vocabulary
    (worked out once, not per program): the capabilities the vocabulary knows, with the finer
    ones their coarse ones imply (spec/capabilities.py); the ops they lack (gen/lacks.py);
    whether views copy; the call and in-place ops with their weights, in draw order, and the
    in-place ops without jumps; the clauses the capabilities block; the statement tables (a
    step at the top, a step in a block inside a block)."""
    caps = closure(c for c in declared if CAPABILITY_SINCE.get(c, 1) <= vocabulary)
    call_fns = tuple(ops.weights("call", vocabulary, caps))
    inplace_fns = tuple(ops.weights("inplace", vocabulary, caps))
    smooth = tuple((f, w) for f, w in inplace_fns if not ops.ROWS[f].jumps)
    return (caps, lacked_ops(caps), "view_ops" in caps and "views" not in caps, call_fns,
            inplace_fns, smooth, blocked_clauses(caps),
            (statement_draw(caps, False, vocabulary), statement_draw(caps, True, vocabulary)))
