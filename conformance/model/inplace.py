"""In-place writes in the model: which targets are safe, and how a write changes the graph."""
from __future__ import annotations

from collections.abc import Iterable

from .tensors import Node, Storage, T


def leaf_rg_view(t: T) -> bool:
    """t is a view of a leaf that requires (or required, when t was made) grad."""
    return t.base is not None and (t.of_leaf_rg or (t.base.leaf and t.base.rg))


def inplace_ok(t: T, grad_enabled: bool) -> bool:
    """In-place on t raises nothing the generator does not mean."""
    if not t.is_float or t.expanded or t.hidden or t.stale or t.multi_view:
        return False
    if t.retains and t.output_nr:   # torch 2.13 fails an internal assert (docs/findings.md,
        return False                # torch-4): never drawn
    if t.base is not None and t.base.retains and t.base.output_nr:
        return False                # through a view of one: torch-4 again, a crash at backward
    if grad_enabled and (t.nograd_view or (t.leaf and t.rg) or leaf_rg_view(t)):
        return False
    return True


def _write_clauses(t: T) -> list[str]:
    cl = [] if t.no_version else ["VER-2"]      # an inference tensor counts nothing (INFER-3)
    if t.base is not None:
        cl.append("INPLACE-4" if leaf_rg_view(t) else
                  "INPLACE-8" if not t.base.leaf else "INPLACE-14")
    elif t.leaf:
        cl.append("INPLACE-4" if t.rg else "INPLACE-14")
    else:
        cl.append("INPLACE-7")
    if t.node is not None and t.node.inplace:
        cl.append("INPLACE-12")
    if t.node is not None and t.node.hooks:
        cl.append("HOOK-11")
    if t.retains:
        cl.append("RETAIN-6")
    return cl


def _rebase(t: T, n: Node, setitem: bool, copy_slices_hold: bool = False) -> None:
    """t's grad_fn is the in-place node n now; so are its base's and its siblings'. The base's
    node is a CopySlices, which a pass frees whatever it saved (copy_slices_hold: torch drops
    its inner node)."""
    if t.old_node is not None:   # old graphs now reach a non-leaf (INPLACE-15)
        t.old_node.moved = True
        t.old_node = None
    t.node, t.rg, t.leaf, t.output_nr = n, True, False, 0
    if not setitem:     # an in-place method sets t's grad_fn; setitem does not
        t.made_at, t.doubt_at = t.storage.version, t.storage.doubt
    elif t.base is not None:
        t.stale = True      # setitem wrote a view of t: t is a sibling view now
    base = t.base
    if base is not None:
        base.node = Node(parents=([base.node] if base.rg and base.node else []) + [n],
                         inplace=True, holds=copy_slices_hold)
        if copy_slices_hold and not setitem:
            # the written view's grad_fn is a view node over its base's CopySlices, as its
            # siblings' are (a pass from it reaches, and finds freed, the CopySlices)
            t.node = Node(parents=[base.node], inplace=True)
        base.rg, base.leaf = True, False
    for v in (base or t).views:
        if v is not t:
            v.node, v.rg, v.leaf = Node(parents=[(base or t).node]), True, False
            # torch 2.13 regenerates v's grad_fn lazily: an in-place op on v before anything
            # reads v.grad_fn raises LEAF_INPLACE when v's base was a leaf that did not
            # require grad (see the generator's report). Not drawn.
            v.stale = True


def hide_refused_views(tensors: Iterable[T], storage: Storage) -> None:
    """After a write to `storage`: torch refuses to use a view taken under no_grad or in
    inference mode of it (MODE-11, INFER-7), or an output of split, chunk or unbind (VIEW-7),
    so none is used again."""
    for v in tensors:
        if (v.nograd_view or v.multi_view) and not v.hidden and v.storage is storage:
            v.hidden = True


def apply_inplace(tensors: Iterable[T], grad_enabled: bool, t: T, args: list[T],
                  saved_out: bool, setitem: bool = False, holds: bool = False,
                  saved_args: Iterable[T] = (), copy_slices_hold: bool = False) -> list[str]:
    """Update the model for an in-place op on t with tensor operands `args` (`tensors` are
    all the program's tensors); `saved_args` are the operands its node saves as they are
    before the write (VER-11); return the clauses it exercises."""
    was_rg = t.rg
    saved = [(a.storage, a.storage.version) for a in saved_args]
    cl = _write_clauses(t)
    t.storage.version += 1
    t.wrote()
    for s in t.storage.may_reach:
        s.doubt += 1
    hide_refused_views(tensors, t.storage)
    args_rg = any(a.rg for a in args)
    if grad_enabled and (t.rg or args_rg):
        parents = ([t.node] if t.rg and t.node else []) + [a.node for a in args
                                                           if a.rg and a.node]
        n = Node(parents=parents, inplace=True, holds=holds, saved=saved)
        if saved_out:
            n.saved.append((t.storage, t.storage.version))
        _rebase(t, n, setitem, copy_slices_hold)
        if args_rg and not was_rg:
            cl.append("INPLACE-10")
    if t.origin == "data":
        cl.append("INPLACE-5")
    if t.origin == "detach":
        cl += ["INPLACE-6", "VER-5"]
    return cl


def owns_memory(t: T, tensors: Iterable[T]) -> bool:
    """t holds memory no other of `tensors` may share (no view, detach() or .data of it, and
    none of it), and nothing the spec leaves open about it is pending."""
    if (t.dtype not in ("float32", "float64", "int64") or t.base is not None or t.views
            or t.shares is not None or t.multi_view or t.expanded
            or t.inference or t.no_version or t.version_open or t.stale or t.graph_open
            or t.old_node is not None or t.origin not in ("leaf", "op", "no_grad", "detached")
            or t.storage.may_reach or t.reach_at is not None):
        return False
    mem = t.storage
    for u in tensors:
        if u is not t and (u.storage is mem or u.shares is t or u.base is t
                           or mem in u.storage.may_reach):
            return False
    return True


def detach_in_place(t: T, nodes: Iterable[Node]) -> list[str]:
    """Model t.detach_() outside inference mode, on a tensor that is not a view, owns its
    memory (owns_memory) and was never written (so that every node but its own that saved its
    storage saved it as an input, as itself); `nodes` are every node the program holds. A leaf
    stops requiring grad as after requires_grad_(False) (INPLACE-1, LEAF-16); a non-leaf
    becomes one that does not, and the nodes that saved it raise when a pass runs them
    (VER-16), but for what saved-tensor hooks packed (SAVED-6) or a custom Function saved
    (FUNC-4). Its version stays (VER-2). The clauses."""
    assert t.base is None and t.storage.version == 0, t.name
    if t.leaf:
        if t.node is None:
            return ["INPLACE-1", "VER-2"]
        t.node.frozen, t.old_node = True, t.node
        t.rg, t.node = False, None
        return ["INPLACE-1", "VER-2", "LEAF-16"]
    own = t.node
    for n in nodes:
        if n is not own and not n.fn and not n.packed and any(
                st is t.storage for st, _ in n.saved):
            n.detached = True
    t.rg, t.leaf, t.node, t.origin, t.output_nr = False, True, None, "detached", 0
    return ["VER-16", "VER-2"]
