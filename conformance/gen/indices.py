"""The index a getitem or setitem draws (the INDEX encoding of conformance/lang/index.py)."""
from __future__ import annotations

from typing import Any

from ..model import T


def draw_index(g: Any, a: T, wide: bool = False) -> list[Any]:
    """An index into a (INDEX encoding): one or two ints or slices. `wide` slices may
    also start from the end, stop past it or before it, and step by 3 (never empty), and
    a `...` or a None may stand among them."""
    index: list[Any] = []
    k = g.integer("index dims", 1, min(2, a.ndim))
    # vocabulary 5: sometimes `...` first, the items then taking the last dims
    first = wide and g.vocabulary >= 5 and g.boolean("ellipsis first", 15)
    for d in range(a.ndim - k if first else 0, a.ndim if first else k):
        n = a.shape[d]
        if g.boolean("index is int", 50):
            index.append(g.integer("index", -n, n - 1))
        elif wide:
            index.append({"slice": _wide_slice(g, n)})
        else:
            start = g.integer("slice start", 0, n - 1)
            step = g.choice("slice step", [None, 2])
            index.append({"slice": [start, None, step]})
    if wide and g.boolean("ellipsis or None", 25):
        # None takes no dim, so it may go anywhere; "..." goes last, where the items
        # before it keep the dims they were drawn for
        if first or g.boolean("None", 50):
            index.insert(g.integer("at", 0, len(index)), None)
        else:
            index.append("...")
    return ["...", *index] if first else index

def _wide_slice(g: Any, n: int) -> list[Any]:
    start = g.choice("slice start", [None, *range(-n, n)])
    stop = g.choice("slice stop", [None, n + 2, -1, *range(1, n + 1)])
    step = g.choice("slice step", [None, 2, 3])
    if not range(n)[slice(start, stop, step)]:     # empty: from the start to the end
        start, stop = None, None
    return [start, stop, step]
