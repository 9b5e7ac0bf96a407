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
from .node import AccumulateGrad, Node
from .tensor import grad_dtype_of, wrap


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
                _check_node_result(hook, res, (grad,), be)
                grad = res[0]._data if res[0] is not None else None
    # a node sent only an undefined gradient still runs, its formula yielding None for every
    # input; an AccumulateGrad then leaves .grad alone but still runs its post hooks (LEAF-10)
    runs = grad is not None or fn.name() == "GraphRoot" or isinstance(fn, AccumulateGrad)
    outputs = fn.backward(fn, grad) if runs else (None,) * len(fn.next_functions)
    # torch's validate_outputs, before the post-hooks see them: only wanted gradients, each
    # summed to its input's shape and cast to its dtype
    outs = []
    for i, ((nxt, _), meta, out) in enumerate(zip(fn.next_functions, fn.in_meta, outputs,
                                                  strict=False)):
        if nxt is None or out is None or not wanted(nxt):
            out = None
        elif meta is not None:
            if isinstance(nxt, AccumulateGrad):  # the leaf's grad_dtype, read now (LEAF-9)
                meta = (meta[0], grad_dtype_of(nxt.variable))
            out = be.wrap(_validate(fn, i, be.wrap(out), meta, be.xp, be))
        outs.append(out)
    outputs = tuple(outs)
    if fn._post_hooks:
        ins = tuple(_as_tensor(be, o) for o in outputs)
        for hook in list(fn._post_hooks.values()):
            res = hook(ins, (_as_tensor(be, grad),))
            if res is not None:
                _check_node_result(hook, res, tuple(None if t is None else t._data
                                                    for t in ins), be)
                ins = tuple(res)
        outputs = tuple(None if t is None else t._data for t in ins)
    if not keep_graph:
        fn.release_variables()
    return outputs


def _check_node_result(hook, res, originals, be):
    """torch's check of what a node pre- or post-hook returns (HOOK-17): a tuple (a subclass
    will do), of the length of what it was given, each entry None or a replacement of the
    gradient in its place, checked as a tensor hook's is (HOOK-5); None cannot be replaced."""
    name = getattr(hook, "__name__", repr(hook))
    if not isinstance(res, tuple):
        raise errors.hook_returned_non_tuple(type(res).__name__)
    if len(res) != len(originals):
        raise errors.hook_wrong_count(name, len(res), len(originals))
    for new, old in zip(res, originals, strict=True):
        if new is None:
            continue
        if old is None:
            raise errors.hook_replaced_none()
        hooks.check_replacement(hook, new, old.shape, be.dtype_of[old.dtype])


def _tensor_hooks(fn, grad, be):
    """Tensor hooks in registration order (HOOK-2..HOOK-5), then retain_grad (RETAIN-5). An
    undefined gradient is passed to the hooks as None, and none may replace it (HOOK-17)."""
    for hooks_dict in fn.tensor_hook_dicts():
        for hook in list(hooks_dict.values()):
            res = hook(_as_tensor(be, grad))
            if res is not None:
                if grad is None:
                    raise errors.hook_replaced_none()
                hooks.check_replacement(hook, res, grad.shape, be.dtype_of[grad.dtype])
                grad = res._data
    ref = fn._retains_grad
    t = ref() if ref is not None and grad is not None else None
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
    if dtype is not None and be.dtype_of[g.dtype] is not dtype:  # None: a leaf's grad_dtype
        g = xp.astype(g, be.native[dtype])
    return g


def _as_tensor(be, a):
    if a is None:
        return None
    return wrap(be, a)
