"""The backward pass (GRAPH-9, HOOK-1..HOOK-16, RETAIN-1, RETAIN-4, RETAIN-5, FREE-1..FREE-5,
MODE-8, API-6, API-7, API-10, API-11, DOUBLE-1, DOUBLE-3, DOUBLE-4, DOUBLE-7, FUNC-9: a
custom Function's node gets one gradient per output, and runs on undefined ones too).

As torch's engine: count each node's incoming edges, then run a ready queue. A node is ready
when every edge into it has delivered its gradient (GRAPH-9 sums them first). Among ready nodes
an AccumulateGrad runs first, then the most recently created node; equal priorities run in the
order they became ready (torch's heap agrees for two; UNSPEC-7 leaves three or more open).
Running a node means: its tensor hooks (registration order), then the retain_grad hook, then
its pre-hooks, then its formula, then its post-hooks; without retain_graph its saved values are
freed right after (FREE-1). Each node runs with grad mode set to create_graph, whatever a hook
of an earlier node set (MODE-8, DOUBLE-7). Gradients are backend arrays, or, under create_graph,
tensors, which every step records (refimpl/differentiable.py): the formulas, the sums, the
engine's own sum to an input's shape and cast to its dtype.
"""
from __future__ import annotations

import heapq
import itertools

from . import differentiable, errors, grad_mode, hooks
from .broadcast import expandable, sum_to
from .node import AccumulateGrad, Node
from .tensor import Tensor, grad_dtype_of, wrap


class _GraphRoot(Node):
    """The start node when backward begins at several tensors at once."""
    __slots__ = ()

    def __init__(self, edges, grads):
        super().__init__("GraphRoot", lambda node, g: node.info, tuple(edges),
                         (None,) * len(edges), tuple(grads))


def execute(roots, grads, keep_graph, be, targets=(), capture=False, create_graph=False):
    """Run backward from `roots` (edges) seeded with `grads` (arrays; tensors with create_graph).

    targets: edges whose gradient is wanted. With capture=True (autograd.grad) their gradients
    are returned and nothing is accumulated; otherwise (backward(inputs=...)) only they
    accumulate. With no targets every reachable AccumulateGrad runs.
    """
    grads = [_root_grad(fn, g, be) for (fn, _), g in zip(roots, grads, strict=True)]
    if len(roots) == 1:
        (start, nr), first = roots[0], grads[0]
    else:
        (start, nr), first = (_GraphRoot(roots, grads), 0), None
    deps = _dependencies(start)
    run_only = _needed(start, targets, capture) if targets else None
    captures = {}  # node -> index into the result, for autograd.grad
    if capture:
        for i, (fn, _) in enumerate(targets):
            captures.setdefault(fn, []).append(i)
    captured = [None] * len(targets)

    order = itertools.count()
    queue = [(-start.seq, next(order), start)]
    buffers = {}
    _deliver(buffers, start, nr, first)
    flag = grad_mode.enabled
    prev_mode = flag.value

    def will_run(node):  # what a multi-grad hook asks of the pass (refimpl/graph.py, HOOK-19)
        return node in deps and (run_only is None or bool(run_only.get(node)) or node in captures)
    running.append((will_run, {}))

    def wanted(nxt):  # on a path to the wanted inputs (all, without targets)
        return run_only is None or run_only.get(nxt) or nxt in captures
    every = run_only is None    # then every node is wanted: _call is handed True
    try:
        while queue:
            fn = heapq.heappop(queue)[2]
            # each node records exactly when create_graph is set (MODE-8, DOUBLE-7)
            flag.value = create_graph  # the thread flag itself: no method call per node
            grad = buffers.pop(fn)
            if run_only is not None:
                needed = run_only.get(fn, False)
                if not needed:  # visited for a capture, or the root: only its tensor hooks run
                    grad = _tensor_hooks(fn, grad, be, create_graph)
                for i in captures.get(fn, ()):  # before the hooks when the node also runs, as torch
                    captured[i] = grad if fn.n_outputs == 1 else grad[targets[i][1]]
                if not needed:
                    continue
            outputs = _call(fn, grad, be, keep_graph, every or wanted, create_graph)
            for (nxt, nr), out in zip(fn.next_functions, outputs, strict=False):
                if nxt is None:
                    continue
                deps[nxt] -= 1
                if not (every or wanted(nxt)):
                    continue
                if nxt.n_outputs == 1:      # _deliver's common case, inline: the hot loop
                    cur = buffers.get(nxt)
                    buffers[nxt] = out if cur is None else (cur if out is None else cur + out)
                else:
                    _deliver(buffers, nxt, nr, out)
                if deps[nxt] == 0:
                    heapq.heappush(queue, (-nxt.seq, next(order), nxt))
    finally:
        running.pop()
        grad_mode.enabled[0] = prev_mode
    return captured


running = []  # the passes running, innermost last: (will_run(node), state kept for the pass)


def _deliver(buffers, fn, nr, g):
    """Add g, the gradient of output nr of fn, to what fn will run with (GRAPH-9). A node with
    several outputs (a custom Function's, FUNC-9, or a split's, VIEW-9) gets a list, one
    gradient per output."""
    if fn.n_outputs > 1:
        slots = buffers.setdefault(fn, [None] * fn.n_outputs)
        slots[nr] = _sum(slots[nr], g)
    else:
        buffers[fn] = _sum(buffers.get(fn), g)


def _sum(cur, g):
    return g if cur is None else (cur if g is None else cur + g)


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


def _call(fn, grad, be, keep_graph, wanted, graphed):
    """Run fn on its summed gradient: tensor hooks, pre-hooks, the formula, torch's
    validate_outputs, post-hooks, then free what it saved unless the graph is kept. `wanted`
    says which next nodes are on a path the pass needs (True: all of them)."""
    if fn._tensor_hooks or fn._retains_grad or isinstance(fn, AccumulateGrad):  # else none run
        grad = _tensor_hooks(fn, grad, be, graphed)
    multi = fn.n_outputs > 1        # grad is then a list, one per output (_deliver)
    if fn._pre_hooks:
        for hook in list(fn._pre_hooks.values()):
            given = tuple(grad) if multi else (grad,)
            res = hook(tuple(_as_tensor(be, g) for g in given))
            if res is not None:
                _check_node_result(hook, res, given, be)
                res = [_carried(g, graphed) for g in res]
                grad = res if multi else res[0]
    # a node sent only an undefined gradient still runs, its formula yielding None for every
    # input; an AccumulateGrad then leaves .grad alone but still runs its post hooks (LEAF-10)
    runs = grad is not None or fn.name() == "GraphRoot" or isinstance(fn, AccumulateGrad) \
        or fn.materializes  # a custom Function's backward gets zeros or None (FUNC-9, FUNC-10)
    if runs:
        outputs = fn.backward(fn, grad)
    else:       # torch's formulas unpack what they saved before they look at the gradient
        if fn.saved and fn.name() != "torch::autograd::CopySlices":
            fn.unpack()     # VER-7, FREE-1 (FUNC-6: behind a None a Function returned)
        outputs = (None,) * len(fn.next_functions)
    # torch's validate_outputs, before the post-hooks see them: only wanted gradients (a custom
    # Function's node keeps what its backward returned for the others too: HOOK-15), each
    # summed to its input's shape and cast to its dtype
    outs = []
    keep_all = wanted is True or fn.materializes
    for i, ((nxt, nr), meta, out) in enumerate(zip(fn.next_functions, fn.in_meta, outputs,
                                                   strict=False)):
        if out is None or not (keep_all or (nxt is not None and wanted(nxt))):
            out = None      # (a custom Function's node keeps even one for an argument that
        elif nxt is None:   # requires no grad, for its post-hooks: HOOK-15)
            out = out if fn.materializes else None
        elif meta is not None:
            if isinstance(nxt, AccumulateGrad):  # the leaf's grad_dtype, read now (LEAF-9)
                meta = (meta[0], grad_dtype_of(nxt.variable))
            elif nxt.out_meta is not None and nxt.out_meta[nr] is not None:
                meta = (meta[0], nxt.out_meta[nr][1])   # a custom Function's output: an
                #                                         input it returned keeps its own
            out = _validate(fn, i, out, meta, be)
        outs.append(out)
    outputs = tuple(outs)
    if fn._post_hooks:
        ins = tuple(_as_tensor(be, o) for o in outputs)
        gouts = tuple(_as_tensor(be, g) for g in (grad if multi else (grad,)))
        for hook in list(fn._post_hooks.values()):
            res = hook(ins, gouts)
            if res is not None:
                _check_node_result(hook, res, ins, be)
                ins = tuple(res)
        outputs = tuple(_carried(t, graphed) for t in ins)
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
        hooks.check_replacement(hook, new, old.shape, _dtype(old, be))


def _tensor_hooks(fn, grad, be, graphed):
    """Tensor hooks in registration order (HOOK-2..HOOK-5), each on its tensor's output of fn,
    then retain_grad (RETAIN-5). An undefined gradient is passed to the hooks as None, and none
    may replace it (HOOK-17). A node of several outputs carries a list, one gradient each."""
    grads = grad if fn.n_outputs > 1 else [grad]
    for nr, hooks_dict in fn.tensor_hook_dicts():
        for hook in list(hooks_dict.values()):
            g = grads[nr]
            res = hook(_as_tensor(be, g))
            if res is not None:
                if g is None:
                    raise errors.hook_replaced_none()
                hooks.check_replacement(hook, res, g.shape, _dtype(g, be))
                grads[nr] = _carried(res, graphed)
    for nr, ref in (fn._retains_grad or {}).items():
        t, g = ref(), grads[nr]
        if t is None or g is None:
            continue
        if g.__class__ is Tensor:  # create_graph: a copy and a sum, recorded (DOUBLE-3)
            t._grad = g.clone() if t._grad is None else t._grad + g
        elif t._grad is None:
            t._grad = t._new_like(be.copy(g))
        else:
            t._grad = t._new_like(t._grad._data + g)
    return grads if fn.n_outputs > 1 else grads[0]


def _root_grad(fn, g, be):
    """A root's gradient as torch's GraphRoot hands it on: cast to a leaf root's grad_dtype
    before its hooks see it (LEAF-9)."""
    if g is None or not isinstance(fn, AccumulateGrad):
        return g
    dtype = grad_dtype_of(fn.variable)
    if dtype is None or _dtype(g, be) is dtype:
        return g
    if g.__class__ is Tensor:
        return differentiable.astype(g, dtype)
    return be.xp.astype(g, be.native[dtype])


def _validate(fn, i, g, meta, be):
    """Sum a gradient to its input's shape and cast it to its dtype (torch's validate_outputs);
    under create_graph both are recorded."""
    shape, dtype = meta
    if g.__class__ is Tensor:
        if tuple(g.shape) != shape:
            _check_expandable(fn, i, tuple(g.shape), shape)
            g = differentiable.sum_to(g, shape)
        if dtype is not None and g._dtype is not dtype:  # None: a leaf's grad_dtype (LEAF-9)
            g = differentiable.astype(g, dtype)
        return g
    g = be.wrap(g)
    if g.shape != shape:
        _check_expandable(fn, i, g.shape, shape)
        g = be.wrap(sum_to(be.xp, g, shape))
    if dtype is not None and be.dtype_of[g.dtype] is not dtype:
        g = be.xp.astype(g, be.native[dtype])
    return g


def _check_expandable(fn, i, got, shape):
    if not expandable(shape, got):
        raise errors.invalid_gradient(fn.name(), i, got, shape)


def _as_tensor(be, a):
    """What hooks get: a tensor around an array; a tensor gradient (create_graph) itself."""
    if a is None or a.__class__ is Tensor:
        return a
    return wrap(be, a)


def _carried(t, graphed):
    """What the pass carries on for a tensor a hook returned: the tensor itself under
    create_graph (its graph included), else its array."""
    return t if t is None or graphed else t._data


def _dtype(g, be):
    return g._dtype if g.__class__ is Tensor else be.dtype_of[g.dtype]
