"""Custom autograd Functions: `torch.autograd.Function` and `once_differentiable` (FUNC-1..FUNC-15).

`F.apply(*args)` runs `F.forward` (and `F.setup_context`) with grad mode off, then records one
FunctionNode for the call: an edge per tensor argument, one output slot per result (the engine
buffers one gradient per slot, refimpl/engine.py `_deliver`). When the node runs, `run_backward`
wraps the gradients the engine carries (arrays, or tensors under create_graph) as tensors,
materializes the undefined ones as zeros (FUNC-9, FUNC-10), calls `F.backward`, and checks what
it returned against the arguments (FUNC-6, FUNC-7) before the engine checks shapes (FUNC-8).
Saved tensors are SavedValues holding the tensors themselves, so VER-7 applies as to any node;
a pass frees the node whatever it saved, and only reading `saved_tensors` after raises (FUNC-4).
Tensor hooks and retain_grad of each output run on that output's gradient, node hooks on all of
them (refimpl/engine.py).
"""
from __future__ import annotations

import functools
import inspect
import warnings
import weakref

from . import errors, function_errors, grad_mode, saved_hooks
from . import node as node_module
from .node import FREED, NO_VERSION, AccumulateGrad, Node, SavedValue
from .ops.inplace import rebase_history
from .saved_hooks import HookedValue
from .tensor import Tensor, edge, grad_dtype_of, wrap


class FunctionCtx:
    """The `ctx` forward (or setup_context) fills and backward reads."""

    def __init__(self, args):
        self.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        self._to_save, self._dirty, self._non_differentiable = (), (), ()
        self._materialize = True
        self._node = None
        self._setup = False     # filled by setup_context (FUNC-3)

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self._materialize = bool(value)

    @property
    def saved_tensors(self):
        """The saved tensors, checked for writes since (VER-7) and for being freed (FREE-1).
        One a pack hook packed is what unpack returned, given the saved tensor's place in the
        graph (SAVED-12), as torch makes a new variable of it with the saved one's edge."""
        node = self._node
        if node is None:    # in forward, or where apply recorded no node: none, as in torch
            return ()
        return tuple(_on_graph(v, s, node) for v, s in zip(node.unpack(), node.saved,
                                                            strict=True))


class FunctionNode(Node):
    """The node of one `apply` call; `info` is its ctx."""
    materializes = True
    __slots__ = ("n_outputs", "cls", "arg_is_tensor", "out_meta", "be")

    def release_variables(self):
        """Freed once run without retain_graph, whatever forward saved, nothing included: a
        later read of ctx.saved_tensors raises GRAPH_FREED, a pass that reads none does not
        (FUNC-4), as torch marks the node freed."""
        self.saved = FREED

    def __getattr__(self, name):
        """The node reads as its ctx (`y.grad_fn.saved_tensors`), as torch's does (UNSPEC-11)."""
        if name == "info":
            raise AttributeError(name)
        return getattr(self.info, name)


class Function:
    """Subclass with static `forward(ctx, *args)` (or `forward(*args)` and `setup_context`) and
    `backward(ctx, *grads)`; call `apply`."""

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd "
                      "functions are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise function_errors.legacy_function()  # FUNC-15

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        setup = cls.setup_context is not Function.setup_context
        if setup:       # FUNC-3: bound to forward's parameters, defaults filled in
            args, kwargs = _bind(cls.forward, args, kwargs)
        if kwargs:
            args = _placed(cls.forward, args, kwargs, setup)
        ctx = FunctionCtx(args)
        record = grad_mode.enabled[0] and any(ctx.needs_input_grad)
        # the inputs' edges are taken before forward runs, as torch does: a view forward
        # writes (FUNC-11) would otherwise have its history read after the write
        edges = tuple(edge(a) for a in args if isinstance(a, Tensor)) if record else ()
        # and the node is numbered now, before what forward records under enable_grad (HOOK-14)
        seq = next(node_module.sequence) if record else None
        with grad_mode.no_grad():  # FUNC-1, FUNC-3
            if setup:
                result = cls.forward(*args)
                ctx._setup = True
                cls.setup_context(ctx, args, result)
            else:
                result = cls.forward(ctx, *args)
        outs = result if isinstance(result, tuple) else (result,)
        # torch's order: what is saved (where recorded, FUNC-4) and marked non-differentiable
        # (FUNC-12) is checked first, then the dirty tensors are bumped, once per tensor given
        # (UNSPEC-11: one given twice, one not returned), and checked (FUNC-11)
        for i, t in enumerate(ctx._to_save if record else ()):
            if t is not None and not isinstance(t, Tensor):
                raise function_errors.save_not_tensor(i, t)
        for d in ctx._non_differentiable:
            if not isinstance(d, Tensor):
                raise function_errors.non_differentiable_not_tensor(d)
        for i, d in enumerate(ctx._dirty):
            if not isinstance(d, Tensor):
                raise function_errors.dirty_not_tensor(i, d)
            d._vc[0] += 1   # FUNC-11: however many times forward returns it
        node = _node(cls, ctx, args, outs, edges) if record else None
        if node is not None:
            node.seq = seq
        returned = outs
        outs = tuple(_output(node, i, o, ctx, args) for i, o in enumerate(outs))
        for d in ctx._dirty:    # after the outputs' own checks and histories, as torch does
            if not any(d is o for o in returned):
                raise function_errors.dirty_not_returned()  # FUNC-11
        if node is not None:  # after the dirty bumps, as torch saves; an output's error message
            node.save(*(None if t is None else _hooked(t, node, outs)  # names the node
                        for t in ctx._to_save))                         # (VER-7)
        return outs if isinstance(result, tuple) else outs[0]


def _bind(forward, args, kwargs):
    """The arguments of apply as torch binds them where setup_context is defined (FUNC-3):
    to forward's parameters, defaults filled in; the positional ones are the call's arguments
    (a TypeError where they do not bind), the keyword-only ones are left as keywords."""
    bound = inspect.signature(forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _placed(forward, args, kwargs, setup):
    """Keyword arguments as torch 2.13's apply places them (UNSPEC-11): each at the place of
    the parameter of forward of that name after ctx, defaults not filled in, so that a place
    left empty before it raises; keyword-only parameters are none (with setup_context, the
    only keywords left after binding)."""
    params = list(inspect.signature(forward).parameters.values())[0 if setup else 1:]
    names = [p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    slots, empty = list(args), object()
    for name, value in kwargs.items():
        if setup or name not in names:
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
        i = names.index(name)
        if i < len(args):
            raise TypeError(f"forward() got multiple values for argument '{name}'")
        slots += [empty] * (i + 1 - len(slots))
        slots[i] = value
    for i, value in enumerate(slots):
        if value is empty:
            raise TypeError(f"forward() missing required argument: '{names[i]}' (position {i})")
    return tuple(slots)


def _hooked(t, node, outs):
    """t saved by node, packed by the hooks in force (SAVED-1); a packed one keeps the edge
    its unpacked value gets (SAVED-12): the node itself (as its output number) for one of its
    own outputs, which would otherwise hold the node from its own saved values."""
    value = saved_hooks.hook(_saved(t, node), t, tensors=True)
    if isinstance(value, HookedValue):
        places = [i for i, o in enumerate(outs) if o is t]  # (a dirty view's grad_fn is
        value.edge = ("node", places[-1]) if places else edge(t)    # rebuilt; the last
        #                                                             place, as _output's)
    return value


def _on_graph(value, s, node):
    """What ctx.saved_tensors gives for saved value s, unpacked as `value`: a tensor a pack
    hook packed as a new tensor of the unpacked data on the saved tensor's edge (SAVED-12);
    any other as it is."""
    if s is None or s.edge is None or not isinstance(s, HookedValue):
        return value
    fn, nr = s.edge
    t = wrap(value._be, value._data, value._vc)
    if isinstance(fn, str):                 # ("node", its output number)
        t._grad_fn, t._output_nr = node, nr
    elif isinstance(fn, AccumulateGrad):    # a leaf's: as it was when saved (DOUBLE-1)
        t._requires_grad, t._accumulator = True, weakref.ref(fn)
    elif fn is not None:
        t._grad_fn, t._output_nr = fn, nr
    return t


def _saved(t, node):
    """A tensor ctx.save_for_backward kept: read as saved even after a detach_() of it, which
    a built-in op's node refuses (VER-16)."""
    if t._vc is NO_VERSION:     # INFER-5: a recorded call saves it, with no version to check
        raise errors.inference_saved()
    value = SavedValue(t, t._vc, node._name if t._grad_fn is node else t, None, t._dtype)
    value.nonleaf = False
    return value


def _node(cls, ctx, args, outs, edges):
    tensors = [a for a in args if isinstance(a, Tensor)]
    node = FunctionNode(cls.__name__ + "Backward", run_backward, edges,
                        tuple((t._data.shape, t._dtype) if e[0] is not None else None
                              for t, e in zip(tensors, edges, strict=True)), ctx)
    node.n_outputs, node.cls, node.be = len(outs), cls, tensors[0]._be
    node.arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
    # an input returned as it is keeps its grad_dtype here (LEAF-9): the gradients this node
    # gets for it are cast to it, as torch 2.13 takes the input's metadata for the output
    node.out_meta = tuple(None if not isinstance(o, Tensor) else (o._data.shape, grad_dtype_of(
        o) if any(o is a for a in args) else o._dtype) for o in outs)
    ctx._node = node
    return node


def _output(node, i, o, ctx, args):
    """Output i as apply returns it: marked dirty (FUNC-11), non-differentiable (FUNC-12) or
    of an integer or bool dtype (FUNC-1), an input returned as it is (FUNC-14), or a new result
    of forward, with the node as grad_fn."""
    if not isinstance(o, Tensor):
        return o
    is_input = any(o is a for a in args)
    if any(o is d for d in ctx._dirty):    # bumped already (apply)
        if node is None and o.requires_grad:    # not recorded: a detached alias (FUNC-11)
            return o.detach()
        if node is not None:
            # torch checks after forward wrote it and the bump above (UNSPEC-11: what it
            # holds then): a leaf by the stored field, as a view made under no_grad of a
            # tensor that requires grad is (MODE-9), then a view as an in-place op's target
            if o._grad_fn is None and o.requires_grad:
                raise function_errors.dirty_leaf()
            if o._base is not None and node.n_outputs > 1:
                raise function_errors.dirty_view_outputs()   # FUNC-11, before the view's own checks
            if o._base is not None and o._view_no_grad:
                # FUNC-14, VIEW-7: an output of a multi-output view or of a custom Function
                raise errors.no_grad_view_inplace(o._grad_fn, False, o._view_no_grad,
                                                  o._output_nr)
            if o._base is not None and o._base.is_leaf and o._base.requires_grad:
                raise errors.view_of_leaf_inplace()  # INPLACE-2
            if o._base is not None and args[0] is not o:    # (UNSPEC-11: torch routes the
                raise NotImplementedError("refimpl: mark_dirty on a view that is not the "
                                          "first argument")   # gradients oddly there)
            rebase_history(o, node)
            o._output_nr = i
            o._grad = None      # its .grad is dropped; its hooks and retains_grad stay
        return o
    # marked non-differentiable (FUNC-12), or of a dtype that cannot require grad (FUNC-1):
    # not recorded; its backward still gets zeros of its dtype (FUNC-9)
    explicit = any(o is d for d in ctx._non_differentiable)
    marked = explicit or not o._dtype.is_floating_point
    if is_input and ctx._setup and any(o is s for s in ctx._to_save) and not (
            o.requires_grad and (marked or node is None)):  # FUNC-3: one not detached
        raise function_errors.returned_input_saved()
    if marked and not (is_input and not explicit):  # (an integer input: a view, FUNC-14)
        return o.detach() if is_input else _unrecorded(o)
    if is_input:  # a view of it, made in the Function (FUNC-14)
        if node is None and o.requires_grad:    # not recorded: a detached alias
            return o.detach()
        view = wrap(o._be, o._data, o._vc)
        view._base = o._base if o._base is not None else o
        view._view_chain, view._view_version = o._view_chain or (), o._vc[0]
        view._view_no_grad = errors.CUSTOM_FUNCTION_VIEW if node is not None else False
        if marked:      # an integer input: a view that records nothing (FUNC-1)
            return view
        o = view
    elif o._base is not None and node is not None:  # a view of an input made in forward
        o._view_no_grad = errors.CUSTOM_FUNCTION_VIEW
        o._view_version = o._vc[0]  # the node is its history as of now: after the bump of
        #                             a dirty input it views (FUNC-1, FUNC-11)
    elif o._base is not None and o.requires_grad and not grad_mode.enabled[0]:
        # not recorded, grad mode off (UNSPEC-11): torch 2.13 then refuses writes into it as
        # into a Function's view where forward recorded the view op, else as a no_grad view
        o._view_no_grad = errors.CUSTOM_FUNCTION_VIEW if o._grad_fn is not None else True
    if node is None:
        return o if is_input else _unrecorded(o)
    o._grad_fn, o._output_nr = node, i
    return o


def _unrecorded(o):
    """A result forward made that gets no node (FUNC-1, FUNC-12): one that requires grad (made
    under enable_grad, or outside forward) is detached in place, as torch does, unless it is a
    view (UNSPEC-11: torch returns a view as forward made it, one of a tensor that requires
    grad requiring grad)."""
    if o.requires_grad and o._base is None:
        o.detach_()
    return o


def run_backward(node, grad):
    """The node's formula: F.backward on tensors, its results checked and mapped to the tensor
    arguments' edges (arrays, or tensors under create_graph)."""
    ctx, be = node.info, node.be
    grads = list(grad) if node.n_outputs > 1 else [grad]
    graphed = grad_mode.enabled[0]  # the engine runs each node with grad mode = create_graph
    args = []
    for g, meta in zip(grads, node.out_meta, strict=True):
        if meta is None:            # an output that is not a tensor
            args.append(None)
            continue
        if g is None:
            if not ctx._materialize:  # FUNC-10
                args.append(None)
                continue
            g = be.xp.zeros(meta[0], dtype=be.native[meta[1]])  # FUNC-9
        args.append(g if g.__class__ is Tensor else wrap(be, g))
    res = node.cls.backward(ctx, *args)
    res = res if isinstance(res, tuple) else (res,)
    n = len(node.arg_is_tensor)
    if len(res) > n and all(r is None for r in res[n:]):
        res = res[:n]                                  # extra Nones are dropped (FUNC-6)
    if len(res) != n:
        raise function_errors.function_grad_count(node.name(), n, len(res))  # FUNC-7
    out = []
    for i, (r, is_tensor) in enumerate(zip(res, node.arg_is_tensor, strict=True)):
        if not is_tensor:
            if r is not None:
                raise function_errors.function_non_tensor_grad(node.name(), i + 1)  # FUNC-6
            continue
        if r is not None and not isinstance(r, Tensor):
            raise function_errors.function_grad_not_tensor(type(r).__name__)  # FUNC-6
        out.append(r if r is None or graphed else r._data)
    return tuple(out)


def once_differentiable(fn):
    """FUNC-13: run backward with grad mode off; under create_graph, where a gradient it got
    requires grad, its results get a node that raises when differentiated."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.enabled[0] or not any(
                isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        err = Node("torch::autograd::Error", _raise_once, ((None, 0),), (None,))
        tup = outputs if isinstance(outputs, tuple) else (outputs,)
        marked = []
        for o in tup:
            if isinstance(o, Tensor):
                o = wrap(o._be, o._data)
                o._grad_fn = err
            marked.append(o)
        return tuple(marked) if isinstance(outputs, tuple) else marked[0]
    return wrapper


def _raise_once(node, grad):
    raise RuntimeError(function_errors.ONCE_DIFFERENTIABLE)
