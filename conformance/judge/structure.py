"""Graph structure without torch's node names (capability graph_structure without grad_fn,
conformance/spec/capabilities.py): the observations of a node are compared as what they say
of the graph's shape, not as the names torch gives its nodes.

`grad_fn` and `grad_grad_fn` become "node" or None; `next_functions` a list with "node" or
None per edge, so that its length and where its None entries are is compared. Both traces are
rewritten the same way before the comparator sees them (compare.py)."""
from __future__ import annotations

import dataclasses
from typing import Any

from ..lang.program import Program
from ..lang.trace import Trace

NODE = "node"       # what a node's name becomes
_NAMED = ("grad_fn", "grad_grad_fn")


def structure_only(program: Program) -> bool:
    """Whether the program was drawn for engines with graph structure but not node names."""
    caps = program.meta.get("capabilities") or ()
    return "graph_structure" in caps and "grad_fn" not in caps


def _shape(what: str, value: Any) -> Any:
    if what in _NAMED:
        return None if value is None else NODE
    if what == "next_functions" and isinstance(value, list):
        return [None if v is None else NODE for v in value]
    return value


def structural(program: Program, trace: Trace) -> Trace:
    """The trace with each observation of a node reduced to the graph's shape."""
    stmts = dict(program.walk())
    events = []
    for ev in trace.events:
        s = stmts.get(ev.path)
        if ev.status == "ok" and s is not None and s.op == "observe":
            ev = dataclasses.replace(ev, value=_shape(s.params.get("what"), ev.value))
        elif ev.status == "ok" and s is not None and s.op == "sweep" and \
                isinstance(ev.value, list):
            items = s.params.get("of") or []
            ev = dataclasses.replace(ev, value=[
                [_shape(item[1], got[0]), *got[1:]] if isinstance(got, list) and got else got
                for item, got in zip(items, ev.value, strict=False)])
        events.append(ev)
    return dataclasses.replace(trace, events=events)
