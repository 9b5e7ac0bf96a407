"""The backward graph as the model sees it: which nodes a pass runs and what it raises."""
from __future__ import annotations

import heapq
from collections.abc import Iterable

from .tensors import Node, T


def reach(roots: Iterable[Node | None]) -> list[Node]:
    """Every node reachable from the roots (None roots are skipped): a fresh list, one root
    first."""
    if type(roots) is list and len(roots) == 1:     # (the common call: one root)
        one = roots[0]
        if one is None:
            return []
    else:
        stack = [r for r in roots if r is not None]
        if len(stack) != 1:
            return _reach(stack)
        one = stack[0]
    if one.reached is None:     # (less the node itself: no node holds itself, so the model
        one.reached = _reach([one])[1:]     # dies by reference counts, not in a collection)
    return [one, *one.reached]


def every_node(tensors: Iterable[T]) -> list[Node]:
    """Every node the tensors' graphs hold, the accumulators old graphs keep (T.old_node)
    included."""
    ts = list(tensors)
    return reach([u.node for u in ts if u.node is not None]
                 + [u.old_node for u in ts if u.old_node is not None])


def carried(nodes: list[Node]) -> set[int]:
    """The ids of those of `nodes` (a pass's, from the roots on) that the pass sends a gradient
    to: all, but for a parent a custom Function's backward returns None for (Node.cut) that no
    other path reaches (FUNC-6)."""
    for n in nodes:
        if n.cut:
            break
    else:
        return {id(n) for n in nodes}
    below = {id(p) for n in nodes for p in n.parents}
    ids = {id(n) for n in nodes}
    stack = [n for n in nodes if id(n) not in below]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.extend(p for p in n.parents if id(p) in ids and not any(p is c for c in n.cut))
    return seen


def leaf_ids(node: Node) -> frozenset[int]:
    """The ids of the leaf accumulators reachable from node, kept on it (Node.leaves): its
    parents never change, and the generator asks again for every candidate operand."""
    found = node.leaves
    if found is None:
        found = node.leaves = frozenset([id(n) for n in reach([node]) if n.leaf])
    return found


def leaves_reached(t: T) -> int:
    """How many leaf accumulators a backward pass from t reaches (0 without a grad node)."""
    if not t.rg or t.node is None:
        return 0
    return len(leaf_ids(t.node))


def joins(a: T, b: T) -> bool:
    """Whether a graph over a and b reaches a leaf that a's graph alone does not."""
    if not b.rg or b.node is None:
        return False
    if not a.rg or a.node is None:
        return bool(leaf_ids(b.node))
    return not leaf_ids(b.node) <= leaf_ids(a.node)


def _reach(stack: list[Node]) -> list[Node]:
    # nodes hash by identity (eq=False): a dict of them keeps the order they were met in
    seen: dict[Node, None] = {}
    while stack:
        n = stack.pop()
        if n not in seen:
            seen[n] = None
            stack.extend(n.parents)
    return list(seen)


def needed(roots: Iterable[Node | None], inputs: list[T] | None) -> list[Node]:
    """The nodes a backward pass runs: all reachable ones, or with `inputs` only those on a
    path to one of them (torch prunes the rest)."""
    nodes = reach(roots)
    if not inputs:
        return nodes
    goals = {u.node for u in inputs if u.node is not None}
    memo: dict[Node, bool] = {}     # nodes hash by identity (eq=False)
    return [n for n in nodes if _leads(n, goals, memo)]


def _leads(n: Node, goals: set[Node], memo: dict[Node, bool]) -> bool:
    """Whether n is, or reaches, one of the goals. (Not a closure: a recursive one is a cycle
    the collector must find.)"""
    found = memo.get(n)
    if found is None:
        memo[n] = False
        found = memo[n] = n in goals or any(_leads(p, goals, memo) for p in n.parents)
    return found


def captured(nodes: list[Node], inputs: list[T] | None) -> frozenset[int]:
    """Of the nodes `needed` gives, the ids of those a pass does not run: the node of a
    non-leaf input of autograd.grad that leads to no other input is where the input's gradient
    is taken (API-10), and its backward never runs, so what it saved is neither read nor freed
    (FREE-4: nodes a pass did not run stay usable); its tensor's hooks still run."""
    if not inputs:
        return frozenset()
    kept = {id(n) for n in nodes}
    goals = {id(u.node) for u in inputs if not u.leaf and u.node is not None}
    return frozenset(id(n) for n in nodes
                     if id(n) in goals and not any(id(p) in kept for p in n.parents))


def predict(nodes: list[Node], accumulates: bool = True,
            unrun: frozenset[int] = frozenset()) -> str | None:
    """The error a pass over `nodes` raises; autograd.grad runs no accumulator
    (accumulates=False), so a moved leaf does not stop it, and not the nodes in `unrun`
    (`captured`), whose saved values are not checked. The kinds are checked in this order:
    GRAPH_FREED, UNPACK_NOT_TENSOR, SAVED_DETACHED_INPLACE, VERSION_MISMATCH,
    HOOK_CHANGED_SIZE, LEAF_MOVED_INTO_GRAPH, POST_HOOK_RETURNED_VALUE. A packed value is not
    version-checked (SAVED-6), and an unpack hook that returns no tensor raises (SAVED-3); a
    saved input detached in place raises before its version is checked (VER-16). set_()'s
    node refuses to run (DATA-8) and runs as soon as it is ready (HOOK-14): only what the
    nodes on the way to it raise comes first."""
    for n in nodes:         # (a loop, not any(): every pass's prediction asks)
        if n.refuses or n.detached:
            return _first_failure(nodes, accumulates, unrun)[0]
    return _predict(nodes, accumulates, unrun)


def _run_order(nodes: list[Node]) -> list[Node]:
    """The nodes of a pass in the order torch's ready queue runs them (HOOK-14): a node once
    every node of the pass that sends it gradient ran, the newest ready one first, but leaf
    accumulators and set_()'s node (DATA-8) before all others. Ties among those are the
    queue's (UNSPEC-7): the model takes the newest first."""
    ids = {id(n) for n in nodes}
    waiting: dict[int, int] = {}
    for n in nodes:
        for p in n.parents:
            if id(p) in ids:
                waiting[id(p)] = waiting.get(id(p), 0) + 1
    first = float("inf")
    ready = [(-(first if n.leaf or n.refuses else n.seq), -n.seq, id(n), n) for n in nodes
             if not waiting.get(id(n))]
    heapq.heapify(ready)
    order = []
    while ready:
        n = heapq.heappop(ready)[3]
        order.append(n)
        for p in n.parents:
            if id(p) in ids:
                waiting[id(p)] -= 1
                if not waiting[id(p)]:
                    heapq.heappush(ready, (-(first if p.leaf or p.refuses else p.seq), -p.seq,
                                           id(p), p))
    return order


def _first_failure(nodes: list[Node], accumulates: bool, unrun: frozenset[int]
                   ) -> tuple[str | None, list[Node]]:
    """Where a pass holds a node that raises when it runs (set_()'s, DATA-8; one that saved an
    input detached in place since, VER-16): what the first node in torch's order that fails
    raises, and the nodes that ran before it."""
    ran: list[Node] = []
    for n in _run_order(nodes):
        kind = _predict([n], accumulates, unrun)
        if kind is None and n.refuses and id(n) not in unrun:
            kind = "SET_BACKWARD"
        if kind is not None:
            return kind, ran
        ran.append(n)
    return None, ran


def _predict(nodes: list[Node], accumulates: bool, unrun: frozenset[int]) -> str | None:
    version = shape = moved = returning = unpack = detached = False
    for n in nodes:
        if unrun and id(n) in unrun:
            pass
        elif n.freed and (n.saved or n.holds):
            return "GRAPH_FREED"
        elif n.packed:
            unpack = unpack or (n.packed == "non_tensor" and bool(n.saved))
        elif n.detached:
            detached = True
        elif n.saved and not version:
            for st, v in n.saved:
                if st.version != v:
                    version = True
                    break
        if n.hooks and "wrong_shape" in n.hooks.values():
            shape = True
        if n.moved:
            moved = True
        if n.returning:
            returning = True
    if unpack:
        return "UNPACK_NOT_TENSOR"
    if detached:
        return "SAVED_DETACHED_INPLACE"
    if version:
        return "VERSION_MISMATCH"
    if shape:
        return "HOOK_CHANGED_SIZE"
    if accumulates and moved:
        return "LEAF_MOVED_INTO_GRAPH"
    if accumulates and returning:
        return "POST_HOOK_RETURNED_VALUE"
    return None


def ran_before_failure(nodes: list[Node]) -> list[Node]:
    """Of a pass's nodes, those it runs before the first that raises, in torch's order
    (_run_order), where it holds set_()'s node (DATA-8) or one that saved an input detached in
    place since (VER-16)."""
    return _first_failure(nodes, True, frozenset())[1]


def after_backward(live: list[T], nodes: list[Node], retain: bool | None,
                   inputs: list[T] | None, create_graph: bool = False) -> None:
    """A pass over `nodes` ran: free them unless retained, and mark the tensors whose .grad
    it wrote (the inputs, or the leaves and retaining tensors it reached)."""
    ids = carried(nodes)
    # the pass computed with a packed value written since it was packed (SAVED-6)
    written = False
    for n in nodes:
        if n.packed and any(st.version != v for st, v in n.saved):
            written = True
            break
    through = tuple(dict.fromkeys(c for n in nodes for c in n.fn))    # custom Functions run
    if not retain:
        for n in nodes:
            n.freed = True
    targets = inputs if inputs is not None else [
        t for t in live if t.rg and t.node is not None and (t.leaf or t.retains)]
    firsts = []
    for t in targets:
        if t.node is not None and id(t.node) in ids:
            if t.leaf:
                firsts += _stored_grad(t, create_graph)
            # a plain pass adds into a leaf's recorded .grad in place, keeping its node
            # (DOUBLE-4); a retained one it may replace (UNSPEC-16)
            t.grad_node_known = create_graph or (t.leaf and t.grad_node_known)
            t.has_grad = True
            t.packed_grad = t.packed_grad or written
            if through:
                t.fn_grad = tuple(dict.fromkeys(t.fn_grad + through))
    # the first .grads of two leaves a pass reached through views may share memory: torch
    # keeps the views of one gradient its view nodes pass on (UNSPEC-16)
    viewed = [t for t in firsts if t.views]
    if len(viewed) > 1:
        for t in viewed:
            t.grad_plain = False


def _stored_grad(t: T, create_graph: bool) -> list[T]:
    """A pass stored a gradient in leaf t's .grad: a first one ([t]), a sum a create_graph
    pass recorded in its place (DOUBLE-3), or one added into it in place (GRAD-4), which
    counts as a write of what holds it."""
    if not t.has_grad:
        t.grad_plain, t.grad_mem = not create_graph, None
        return [t]
    if create_graph:
        t.grad_plain, t.grad_mem = False, None
    elif t.grad_mem is not None:
        t.grad_mem.version += 1
        t.grad_mem.overwritten = True
    return []
