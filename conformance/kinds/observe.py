"""Observation: one observable of one tensor."""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..lang.program import Stmt
from ..lang.trace import plain
from ..lang.validate import CLAUSE_ID
from ..model import clauses_of_observing, observe_clauses, observed_state
from ..model.tables import OBSERVE_WHAT
from . import fields
from .registry import Kind, kind


@dataclass(frozen=True)
class Observable:
    """One thing an observe statement can record of a tensor."""

    cap: str                                        # the engine capability it needs
    read: Callable[[Any, Any], tuple[Any, Any]]     # (engine, tensor) -> (value, dtype or None)
    expr: Callable[[str], str]                      # its expression in a script, of a name


def _value(e: Any, t: Any) -> tuple[Any, Any]:
    return e.to_list(t), e.dtype(t)


def _grad(e: Any, t: Any) -> tuple[Any, Any]:
    g = e.get_grad(t)
    return (None, None) if g is None else (e.to_list(g), e.dtype(g))


def _grad_node(e: Any, t: Any) -> tuple[Any, Any]:
    """The name of t.grad's grad_fn: None where t has no .grad or its .grad no history
    (DOUBLE-4 names the nodes of a recorded .grad, DOUBLE-1 says when it has one)."""
    g = e.get_grad(t)
    return (None if g is None else e.grad_fn_name(g)), None


def _grad_layout(e: Any, t: Any) -> tuple[Any, Any]:
    """How a leaf's .grad is laid out, as GRAD-2 puts it: "leaf" (the leaf's own strides in
    every dimension of size above 1), else "row-major", else those strides (None per dimension
    of size 1); None for no .grad, one with no elements, or a non-leaf's (UNSPEC-16). Relative
    to the leaf, whose own strides an engine may choose where it was computed by an op."""
    g = e.get_grad(t)
    shape = () if g is None else tuple(e.shape(g))
    if g is None or 0 in shape or not e.is_leaf(t):
        return None, None
    mine = [s if n > 1 else None for s, n in zip(e.stride(g), shape, strict=True)]
    if mine == [s if n > 1 else None for s, n in zip(e.stride(t), shape, strict=True)]:
        return "leaf", None
    row, step = [], 1
    for n in reversed(shape):
        row.insert(0, step if n > 1 else None)
        step *= n
    return ("row-major" if mine == row else mine), None


# grad_layout in a standalone script (Observe's and Sweep's render helper): _grad_layout's
# reading, written against the torch-shaped module
GRAD_LAYOUT_SOURCE = '''def grad_layout(t):
    """How t.grad is laid out (GRAD-2): "leaf", "row-major" or its strides (None per size-1
    dim); None for no .grad, an empty one or a non-leaf's."""
    g = t.grad
    if g is None or not g.numel() or not t.is_leaf:
        return None
    mine = [s if n > 1 else None for s, n in zip(g.stride(), g.shape)]
    if mine == [s if n > 1 else None for s, n in zip(t.stride(), g.shape)]:
        return "leaf"
    row, step = [], 1
    for n in reversed(g.shape):
        row.insert(0, step if n > 1 else None)
        step *= n
    return "row-major" if mine == row else mine
'''


def _of(method: str) -> Callable[[Any, Any], tuple[Any, Any]]:
    """An observable read by one engine method, with no dtype."""
    return lambda e, t: (getattr(e, method)(t), None)


# what -> the observable; the order is the language's (the generator draws from it)
TABLE: dict[str, Observable] = {
    "value": Observable("core", _value, lambda t: t),
    "grad": Observable("core", _grad, lambda t: f"{t}.grad"),
    "is_leaf": Observable("core", _of("is_leaf"), lambda t: f"{t}.is_leaf"),
    "requires_grad": Observable("core", _of("requires_grad"), lambda t: f"{t}.requires_grad"),
    "shape": Observable("core", lambda e, t: (list(e.shape(t)), None),
                        lambda t: f"list({t}.shape)"),
    "dtype": Observable("core", _of("dtype"), lambda t: f"str({t}.dtype).rsplit('.', 1)[-1]"),
    # graph_structure: implied by grad_fn; alone, compared as None or not (judge/structure.py)
    "grad_fn": Observable("graph_structure", _of("grad_fn_name"),
                          lambda t: f"{t}.grad_fn.name() if {t}.grad_fn is not None else None"),
    "next_functions": Observable(
        "graph_structure", _of("next_functions"),
        lambda t: f"[f.name() if f is not None else None for f, _ in "
                  f"{t}.grad_fn.next_functions] if {t}.grad_fn is not None else []"),
    "version": Observable("version_counter", _of("version_counter"), lambda t: f"{t}._version"),
    "retains_grad": Observable("retain_grad", _of("retains_grad"),
                               lambda t: f"{t}.retains_grad"),
    "is_inference": Observable("inference_mode", _of("is_inference"),
                               lambda t: f"{t}.is_inference()"),
    "grad_dtype": Observable("grad_dtype", _of("grad_dtype"),
                             lambda t: f"None if {t}.grad_dtype is None else "
                                       f"str({t}.grad_dtype).rsplit('.', 1)[-1]"),
    "grad_layout": Observable(
        "grad_tensor", _grad_layout,
        lambda t: f"grad_layout({t})"),
    # drawn by no observe statement: programs end with it where the model knows the .grad's
    # node is one DOUBLE-4 names (gen/higher.py, observe_recorded_grads)
    "grad_grad_fn": Observable(
        "graph_structure", _grad_node,
        lambda t: f"None if {t}.grad is None or {t}.grad.grad_fn is None "
                  f"else {t}.grad.grad_fn.name()"),
}
OBSERVABLES: dict[str, str] = {what: o.cap for what, o in TABLE.items()}   # what -> capability


@kind
class Observe(Kind):
    name = "observe"
    param_keys = ("what",)
    weight = 20
    reweighted = ((3, 8),)      # the end-of-program sweep observes the final state
    doc = "record params.what of target: OBSERVABLES"
    valued = True

    def needs(self, s):
        return list(self.caps) + [OBSERVABLES.get(s.params.get("what"), "core")]

    def check(self, s, path):
        fields.name(s, path, "target")
        fields.param(s, path, "what", (str,), choices=TABLE)

    def observed(self, s):
        return s.target, s.params.get("what")

    def reads_history(self, s):
        return [s.target] if s.params.get("what") in HISTORY else []

    def run(self, x, s, ev, path):
        value, dtype = TABLE[s.params["what"]].read(x.e, x.env[s.target])
        ev.value, ev.dtype = plain(value), plain(dtype)

    def render_helpers(self):
        return GRAD_LAYOUT_SOURCE

    def render(self, s, path):
        t, what = s.target, s.params["what"]
        return [f"show({f'[{path}] {t}.{what}'!r}, {TABLE[what].expr(t)})"]

    def draw(self, g, t=None, what=None):
        """Draw an observation; `t` and `what` fix the tensor and the observable."""
        t = t or g.pick("observe")
        if t is None:
            return False
        if what is None:
            what = g.weighted("observe what", self._observables(
                g.caps, not t.leaf and not t.retains, t.rg and not t.leaf,
                t.version_unobserved() or g.view_shared(t), t.stale, t.is_float,
                t.graph_open, True, t.leaf))
        g.emit(Stmt("observe", None, t.name, [], {"what": what}), observe_clauses(t, what))
        return True

    @staticmethod
    @functools.cache
    def _observables(caps, unretained, has_next, unversioned, stale, is_float,
                     graph_open=0, inference_seen=True, leaf=True):
        """The weighted observables worth drawing of a tensor with these properties
        (`unversioned`: a result torch's engine may write into, UNSPEC-3, or an inference
        tensor, INFER-3; `inference_seen`: the program entered inference mode, without which
        a sweep leaves is_inference out; `leaf`: only a leaf has a grad_dtype, GRAD-7)."""
        opts = [(w, n) for w, n in OBSERVE_WHAT if OBSERVABLES[w] in caps]
        if not leaf:
            opts = [o for o in opts if o[0] not in ("grad_dtype", "grad_layout")]
        if not inference_seen:
            opts = [o for o in opts if o[0] != "is_inference"]
        if graph_open:      # UNSPEC-9: a gradient's graph, or edges into one
            opts = [o for o in opts if o[0] != "next_functions" and (
                graph_open < 2 or o[0] != "grad_fn")]
        if unretained and "warnings" not in caps:
            opts = [o for o in opts if o[0] != "grad"]
        if not has_next:
            opts = [o for o in opts if o[0] != "next_functions"]
        if unversioned:
            opts = [o for o in opts if o[0] != "version"]
        if stale:   # torch answers from the stale grad_fn until it is regenerated
            opts = [o for o in opts if o[0] not in ("grad", "retains_grad")]
        if not is_float:
            opts = [o for o in opts if o[0] in ("value", "is_leaf", "requires_grad",
                                                 "dtype", "shape", "version", "is_inference")]
        return tuple(opts)


# what a sweep looks at: every observable, in the language's order, but grad_dtype: reading it
# raises on a non-leaf, so an engine that makes one tensor a non-leaf wrongly would fail the
# whole sweep and hide every other observation of it (observe statements look at it, one each);
# nor grad_grad_fn, which only a .grad a create_graph pass recorded has worth looking at
HISTORY = ("grad_fn", "next_functions", "is_leaf")    # what reads a tensor's grad_fn
SWEPT = tuple(w for w in TABLE if w not in ("grad_dtype", "grad_grad_fn"))


def _clause_ids(clauses: list[Any]) -> bool:
    """Every item is a clause ID (a sweep's items repeat a few lists: told once each)."""
    try:
        return _clause_id_tuple(tuple(clauses))
    except TypeError:       # an unhashable item: no clause ID
        return False


@functools.lru_cache(maxsize=4096)
def _clause_id_tuple(clauses: tuple[Any, ...]) -> bool:
    return all(type(c) is str and CLAUSE_ID.fullmatch(c) for c in clauses)


@kind
class Sweep(Kind):
    name = "sweep"
    param_keys = ("of",)
    since = 3           # drawn by no vocabulary: generator vocabulary 3 ends programs with one
    doc = ("record each [tensor, what, clauses] of params.of, in order: the end-of-program "
           "observation of every observable of every live tensor (clauses: those the one "
           "observation exercises)")
    valued = sweeps = True

    def refs(self, s):
        return list(dict.fromkeys(item[0] for item in s.params.get("of") or []))

    def reads_history(self, s):
        return [item[0] for item in s.params.get("of") or [] if item[1] in HISTORY]

    def observed_aspects(self, s):
        return [(item[0], item[1]) for item in s.params.get("of") or []]

    def needs(self, s):
        return list(dict.fromkeys(["core", *(OBSERVABLES.get(item[1], "core")
                                             for item in s.params.get("of") or [])]))

    def check(self, s, path):
        is_name = fields.is_name
        for i, item in enumerate(fields.param(s, path, "of", (list,))):
            if not (isinstance(item, list) and len(item) == 3 and is_name(item[0])
                    and isinstance(item[1], str) and item[1] in TABLE
                    and isinstance(item[2], list) and _clause_ids(item[2])):
                self._refuse(path, i, item)     # (the common case, at no cost: run twice
                                                # a program, on each of its ~100 items)

    @staticmethod
    def _refuse(path: str, i: int, item: Any) -> None:
        where = f"params.of[{i}]"
        if not (isinstance(item, list) and len(item) == 3):
            fields.fail(path, where, f"must be [tensor, what, clauses], got {item!r}")
        name, what, clauses = item
        if not (isinstance(name, str) and fields.is_name(name)):
            fields.fail(path, where, f"{name!r} is not a name")
        if not isinstance(what, str) or what not in TABLE:
            fields.fail(path, where, f"unknown observable {what!r}")
        fields.fail(path, where, f"clauses must be a list of clause IDs, got {clauses!r}")

    def observations(self, s, o, e):
        """(tensor, aspect, clauses, oracle's (value, dtype), engine's) per item."""
        return [(name, what, clauses, tuple(ov), tuple(ev))
                for (name, what, clauses), ov, ev in zip(s.params["of"], o.value, e.value,
                                                         strict=True)]

    def run(self, x, s, ev, path):
        out = []
        for name, what, _ in s.params["of"]:
            value, dtype = TABLE[what].read(x.e, x.env[name])
            out.append([plain(value), plain(dtype)])
        ev.value = out

    def render_helpers(self):
        return GRAD_LAYOUT_SOURCE

    def render(self, s, path):
        # every name first, as the executor checks them: an unbound one skips the whole sweep
        names = list(dict.fromkeys(t for t, _, _ in s.params["of"]))
        return [f"_swept = [{', '.join(names)}]"] + [
            f"show({f'[{path}] {t}.{what}'!r}, {TABLE[what].expr(t)})"
            for t, what, _ in s.params["of"]]

    def emit_end(self, g) -> None:
        """Emit the sweep that ends a program: every observable of every live tensor that
        observing would not leave unspecified (the filters of an observe statement's draw)."""
        items, clauses, used = [], [], set()
        blocks, caps = self._blocks, g.caps
        seen, copy_views = g.made_inference, g.copy_views
        for t in g.live():
            key = (caps, not t.leaf and not t.retains, t.rg and not t.leaf,
                   t.version_unobserved() or (copy_views and g.view_shared(t)), t.stale,
                   t.is_float, t.graph_open, seen, t.leaf, observed_state(t))
            block = blocks.get(key)
            if block is None:
                block = blocks[key] = self._block(g, key)
            name = t.name
            items += [[name, what, [*cl]] for what, cl in block[0]]
            if id(block) not in used:   # a block met before adds no clause not already met
                used.add(id(block))
                clauses += block[1]
        if items:
            g.emit(Stmt("sweep", params={"of": items}), clauses)

    # (caps, the properties _swept and observe_clauses read of a tensor) -> _block: a
    # program's tensors are in few such states, and the capabilities decide what tags drops
    _blocks: dict[tuple[Any, ...], tuple[tuple[tuple[str, tuple[str, ...]], ...],
                                         tuple[str, ...]]] = {}

    def _block(self, g, key):
        """What the sweep holds of a tensor in the state `key`: ((what, its clauses), ...) in
        SWEPT's order, each tagged (g.tags) as an observe statement's would be when the
        capabilities block some clause, and all their clauses, first occurrence each (the
        sweep's own tags keep the first occurrence of each, in order: the same)."""
        caps, *properties, state = key
        blocked = g.blocks_clauses()
        of = tuple((what, tuple(g.tags(clauses_of_observing(state, what)) if blocked
                                else clauses_of_observing(state, what)))
                   for what in self._swept(caps, *properties))
        return of, tuple(dict.fromkeys(c for _, cl in of for c in cl))

    @staticmethod
    @functools.cache
    def _swept(caps, *properties) -> tuple[str, ...]:
        """The observables of SWEPT an observe statement could draw of a tensor with these
        properties (Observe._observables), in SWEPT's order."""
        allowed = {w for w, _ in Observe._observables(caps, *properties)}
        return tuple(w for w in SWEPT if w in allowed)
