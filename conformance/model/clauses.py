"""Which spec clauses a backward pass or an observation exercises, from the model."""
from __future__ import annotations

import collections
import functools
from typing import Any

from .graph import reach
from .tensors import Node, T

# Clauses a backward pass that raises the error kind exercises.
_ERROR_PASS_CLAUSES = {"GRAPH_FREED": ["FREE-1"], "HOOK_CHANGED_SIZE": ["HOOK-5"],
                       "LEAF_MOVED_INTO_GRAPH": ["INPLACE-15"], "UNPACK_NOT_TENSOR": ["SAVED-3"],
                       "SAVED_DETACHED_INPLACE": ["VER-16"], "SET_BACKWARD": ["DATA-8"]}


def _packed_clauses(nodes: list[Node], kind: str | None) -> list[str]:
    """A pass over nodes recorded under saved-tensor hooks (kinds/saved.py): it unpacks what
    they packed (SAVED-2) and checks no version of it (SAVED-6), or finds them freed (SAVED-7)."""
    packed = [n for n in nodes if n.packed]
    if not packed:
        return []
    cl = ["SAVED-2"]
    if any(st.version != v for n in packed for st, v in n.saved):
        cl.append("SAVED-6")
    if any(n.fn for n in packed):
        cl.append("SAVED-11")       # ctx.saved_tensors unpacks them
    if kind == "GRAPH_FREED" and any(n.freed for n in packed):
        cl.append("SAVED-7")
    return cl


def _hook_clauses(nodes: list[Node], live: list[T], ids: set[Node],
                  hooked: list[Node] | None) -> list[str]:
    cl: list[str] = []
    in_pass = [n for n in nodes if n.hooks]
    if in_pass:
        cl += ["HOOK-1", "MODE-8"]
        uses = collections.Counter(id(p) for n in nodes for p in n.parents)
        if any(uses[id(n)] > 1 for n in in_pass):
            cl.append("HOOK-10")    # a hooked tensor used twice sees the summed gradient
        if len(in_pass) > 1:
            cl.append("HOOK-14")
        if any(len(n.hooks) > 1 for n in in_pass):
            cl.append("HOOK-2")
    if hooked is None or not ids.issuperset(hooked):
        for n in reach([t.node for t in live if t.node is not None]):
            if n.hooks and n not in ids:
                cl.append("HOOK-9")
                break
    for n in nodes:
        if n.post_hooks:
            cl.append("HOOK-13")
            break
    return cl


def backward_clauses(live: list[T], nodes: list[Node], kind: str | None,
                     hooked: list[Node] | None = None) -> list[str]:
    """The clauses a backward pass over `nodes` exercises; `kind` is the error it raises.
    `live` are the tensors a program can still name; `hooked`, when given, every node that
    has tensor hooks (a shortcut: without it they are searched for)."""
    ids = set(nodes)        # nodes hash by identity (eq=False)
    freed = frozen = node_hooks = inplace = False
    for n in nodes:
        freed = freed or n.freed
        frozen = frozen or (n.frozen and not n.moved)
        node_hooks = node_hooks or bool(n.node_hooks)
        inplace = inplace or n.inplace
    cl = ["LEAF-5", "LEAF-9"]
    if freed:
        cl.append("FREE-5")
        if kind is None:
            cl.append("FREE-3")
    cl += _hook_clauses(nodes, live, ids, hooked)
    if frozen:
        cl.append("LEAF-16")
    if node_hooks:
        cl.append("HOOK-15")
    outside = False         # a leaf with a .grad that the pass does not reach
    for t in live:
        if t.rg and t.node is not None:
            if t.node in ids:
                if t.leaf and t.has_grad:
                    cl.append("LEAF-7")
                if t.retains:
                    cl += ["RETAIN-1", "RETAIN-4"] if t.has_grad else ["RETAIN-1"]
            elif t.leaf and t.has_grad:
                outside = True
    if outside:
        cl.append("LEAF-10")
    if kind == "VERSION_MISMATCH":
        cl += ["VER-7", "VER-14"]
    elif inplace:
        cl.append("VER-8")
    cl += _ERROR_PASS_CLAUSES.get(kind or "", [])
    cl += [c for n in nodes for c in n.fn]      # the custom Functions it runs
    return cl + _packed_clauses(nodes, kind)


def observed_state(t: T) -> tuple[Any, ...]:
    """What of t the clauses of observing it depend on (observe_clauses), as a hashable key:
    a program's closing sweep observes every tensor, mostly in a few states."""
    return (t.leaf, t.has_grad, t.retains, t.rg, t.origin,
            t.node is not None and t.node.inplace, t.storage.version == 0, t.data_set,
            t.packed_grad, t.fn_grad)


def observe_clauses(t: T, what: str) -> list[str]:
    """The clauses observing `what` of t exercises."""
    return list(clauses_of_observing(observed_state(t), what))


@functools.cache
def clauses_of_observing(state: tuple[Any, ...], what: str) -> tuple[str, ...]:
    """observe_clauses of a tensor in `state` (observed_state): after `.data =` gave it new
    contents, the DATA clause that says what the observable shows first (spec/data.md); a
    .grad a pass computed from a packed value written since, SAVED-6 first; a .grad passes
    through custom Functions computed, their clauses next."""
    *state7, data_set, packed_grad, fn_grad = state
    cl = _clauses_of_observing(tuple(state7), what)
    if data_set:
        cl = _AFTER_SET_DATA.get(what, ()) + cl
    if fn_grad and what == "grad":
        cl = fn_grad + cl
    if packed_grad and what == "grad":
        cl = ("SAVED-6",) + cl
    return cl


# observable -> the clause of spec/data.md saying what it shows after `.data =`
_AFTER_SET_DATA = {
    "value": ("DATA-1",), "shape": ("DATA-1",), "dtype": ("DATA-1",), "is_leaf": ("DATA-1",),
    "requires_grad": ("DATA-1",), "grad_fn": ("DATA-1",), "retains_grad": ("DATA-1",),
    "version": ("DATA-2",), "grad": ("DATA-5",), "grad_dtype": ("DATA-5",),
}


# what a tensor bound to a leaf's .grad (kinds/grad_tensor.py) shows, while it is a leaf that
# does not require grad: a tensor with no history (GRAD-1) that is the .grad (GRAD-3), which
# backward adds into (GRAD-4); of a tensor the program assigned to .grad, its value
_HELD_GRAD = {"is_leaf": ("GRAD-1",), "requires_grad": ("GRAD-1",), "grad_fn": ("GRAD-1",),
              "value": ("GRAD-3", "GRAD-4")}


def _clauses_of_observing(state: tuple[bool, bool, bool, bool, str, bool, bool],
                          what: str) -> tuple[str, ...]:
    leaf, has_grad, retains, rg, origin, inplace_node, first_version = state
    if origin == "held_grad" and leaf and not rg and what in _HELD_GRAD:
        return _HELD_GRAD[what]
    if origin == "assigned_grad" and what == "value":
        return _HELD_GRAD[what]
    if what == "grad_layout":
        return ("GRAD-2",) if has_grad else ()
    if what == "grad":
        if leaf:
            return ("LEAF-5", "LEAF-9") + (() if has_grad else ("LEAF-6",))
        return ("RETAIN-1",) if retains else ("RETAIN-7",)
    if what in ("is_leaf", "requires_grad"):
        return {"leaf": ("LEAF-1",) + (() if rg else ("LEAF-2",)), "no_grad": (
            "LEAF-3", "MODE-1"), "detach": ("LEAF-4",), "data": ("LEAF-4",)}.get(
            origin, ("GRAPH-1" if rg else "GRAPH-2",))
    if what == "grad_fn":
        cl = ("GRAPH-3",) if rg and not leaf else ("LEAF-1",)
        if inplace_node:
            cl += ("INPLACE-7",)
        if origin == "view":
            cl += ("GRAPH-10",)
        return cl
    if what == "next_functions":
        return ("GRAPH-4", "GRAPH-5", "GRAPH-6")
    if what == "version":
        cl = ("VER-1" if first_version else "VER-2", "VER-3")
        cl += {"view": ("VER-4",), "detach": ("VER-5",), "data": ("VER-6",)}.get(origin, ())
        return cl
    if what == "retains_grad":
        return ("RETAIN-3",) if leaf else ("RETAIN-1",)
    if what == "is_inference":
        return ("INFER-2",)
    if what == "grad_dtype":
        return ("GRAD-7", "LEAF-9")
    return ()
