"""The backward pass (GRAPH-9, HOOK-1..HOOK-16, RETAIN-1, RETAIN-4, RETAIN-5, FREE-1..FREE-5,
MODE-8, API-6, API-7, API-10, API-11).

As torch's engine: count each node's incoming edges, then run a ready queue. A node is ready
when every edge into it has delivered its gradient (GRAPH-9 sums them first). Among ready nodes
an AccumulateGrad runs first, then the most recently created node; equal priorities run in the
order they became ready (torch's heap agrees for two; UNSPEC-7 leaves three or more open).
Running a node means: its tensor hooks (registration order), then the retain_grad hook, then
its pre-hooks, then its formula, then its post-hooks; without retain_graph its saved values are
freed right after (FREE-1).
"""
from __future__ import annotations

import heapq
import itertools

from . import errors, grad_mode, hooks
from .broadcast import expandable, sum_to
from .node import Node
from .tensor import wrap


class _GraphRoot(Node):
    """The start node when backward begins at several tensors at once."""
    __slots__ = ()

    def __init__(self, edges, grads):
        super().__init__("GraphRoot", lambda node, g: node.info, tuple(edges),
                         (None,) * len(edges), tuple(grads))


def execute(roots, grads, keep_graph, be, targets=(), capture=False):
    """Run backward from `roots` (edges) seeded with `grads` (arrays).

    targets: edges whose gradient is wanted. With capture=True (autograd.grad) their gradients
    are returned and nothing is accumulated; otherwise (backward(inputs=...)) only they
    accumulate. With no targets every reachable AccumulateGrad runs.
    """
    if len(roots) == 1:
        start, first = roots[0][0], grads[0]
    else:
        start, first = _GraphRoot(roots, grads), None
    deps = _dependencies(start)
    run_only = _needed(start, targets, capture) if targets else None
    captures = {}  # node -> index into the result, for autograd.grad
    if capture:
        for i, (fn, _) in enumerate(targets):
            captures.setdefault(fn, []).append(i)
    captured = [None] * len(targets)

    order = itertools.count()
    queue = [(-start.seq, next(order), start)]
    buffers = {start: first}
    prev_mode = grad_mode.enabled[0]
    grad_mode.enabled[0] = False  # backward itself records nothing (MODE-8)
    try:
        while queue:
            fn = heapq.heappop(queue)[2]
            grad = buffers.pop(fn)
            if run_only is not None:
                needed = run_only.get(fn, False)
                if not needed:  # visited for a capture, or the root: only its tensor hooks run
                    grad = _tensor_hooks(fn, grad, be)
                for i in captures.get(fn, ()):
                    captured[i] = grad  # before the hooks when the node also runs, as torch
                if not needed:
                    continue
            def wanted(nxt):  # on a path to the wanted inputs (all, without targets)
                return run_only is None or run_only.get(nxt) or nxt in captures

            outputs = _call(fn, grad, be, keep_graph, wanted)
            for (nxt, _), out in zip(fn.next_functions, outputs, strict=False):
                if nxt is None:
                    continue
                deps[nxt] -= 1
                if not wanted(nxt):
                    continue
                if nxt in buffers:
                    cur = buffers[nxt]
                    buffers[nxt] = out if cur is None else (cur if out is None else cur + out)
                else:
                    buffers[nxt] = out
                if deps[nxt] == 0:
                    heapq.heappush(queue, (-nxt.seq, next(order), nxt))
    finally:
        grad_mode.enabled[0] = prev_mode
    return captured


def _dependencies(start):
    deps, seen, stack = {}, {start}, [start]
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    return deps


def _needed(start, targets, capture):
    """For each node, whether it must run: it leads to a target, or (for backward(inputs=)) is
    one. A captured target is visited for its gradient but runs only if it leads further."""
    goal = {fn for fn, _ in targets}
    needed = {}
    stack = [(start, False)]
    while stack:  # iterative post-order: a node is needed if any child is needed or is a goal
        fn, done = stack.pop()
        if done:
            needed[fn] = (not capture and fn in goal) or any(
                nxt is not None and (needed.get(nxt) or (capture and nxt in goal))
                for nxt, _ in fn.next_functions)
            continue
        if fn in needed:
            continue
        needed[fn] = False
        stack.append((fn, True))
        stack.extend((nxt, False) for nxt, _ in fn.next_functions
                     if nxt is not None and nxt not in needed)
    return needed


def _call(fn, grad, be, keep_graph, wanted):
    grad = _tensor_hooks(fn, grad, be)
    if fn._pre_hooks:
        for hook in list(fn._pre_hooks.values()):
            res = hook((_as_tensor(be, grad),))
            if res is not None:
                _check_count(hook, res, 1)
                grad = res[0]._data if res[0] is not None else None
    outputs = fn.backward(fn, grad) if grad is not None or fn.name() == "GraphRoot" else \
        (None,) * len(fn.next_functions)
    # torch's validate_outputs, before the post-hooks see them: only wanted gradients, each
    # summed to its input's shape and cast to its dtype
    outs = []
    for i, ((nxt, _), meta, out) in enumerate(zip(fn.next_functions, fn.in_meta, outputs,
                                                  strict=False)):
        if nxt is None or out is None or not wanted(nxt):
            out = None
        elif meta is not None:
            out = be.wrap(_validate(fn, i, be.wrap(out), meta, be.xp, be))
        outs.append(out)
    outputs = tuple(outs)
    if fn._post_hooks:
        ins = tuple(_as_tensor(be, o) for o in outputs)
        for hook in list(fn._post_hooks.values()):
            res = hook(ins, (_as_tensor(be, grad),))
            if res is not None:
                _check_count(hook, res, len(ins))
                ins = tuple(res)
        outputs = tuple(None if t is None else t._data for t in ins)
    if not keep_graph:
        fn.release_variables()
    return outputs


def _check_count(hook, res, want):
    if len(res) != want:
        raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an incorrect "
                           f"number of values (got {len(res)}, but expected {want})")


def _tensor_hooks(fn, grad, be):
    """Tensor hooks in registration order (HOOK-2..HOOK-5), then retain_grad (RETAIN-5)."""
    if grad is None:
        return grad
    for hooks_dict in fn.tensor_hook_dicts():
        for hook in list(hooks_dict.values()):
            res = hook(_as_tensor(be, grad))
            if res is not None:
                hooks.check_replacement(hook, res, grad.shape, be.dtype_of[grad.dtype])
                grad = res._data
    ref = fn._retains_grad
    t = ref() if ref is not None else None
    if t is not None:
        if t._grad is None:
            t._grad = t._new_like(be.copy(grad))
        else:
            t._grad = t._new_like(t._grad._data + grad)
    return grad


def _validate(fn, i, g, meta, xp, be):
    """Sum a gradient to its input's shape and cast it to its dtype (torch's validate_outputs)."""
    shape, dtype = meta
    if g.shape != shape:
        if not expandable(shape, g.shape):
            raise errors.invalid_gradient(fn.name(), i, g.shape, shape)
        g = sum_to(xp, g, shape)
    if be.dtype_of[g.dtype] is not dtype:
        g = xp.astype(g, be.native[dtype])
    return g


def _as_tensor(be, a):
    if a is None:
        return None
    return wrap(be, a)
