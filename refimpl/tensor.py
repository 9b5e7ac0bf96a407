"""Tensor: data, leaf-ness, `.grad`, version counter and view tracking.

Clauses: LEAF-1..LEAF-15 (leaves, `.grad` get/set), RETAIN-1..RETAIN-7, HOOK-6, HOOK-7, HOOK-12,
VER-1..VER-6 (version counter shared by views and detach(), not by .data), GRAPH-10 and
INPLACE-8 (a view's grad_fn regenerated once the shared version has moved), INFER-2, INFER-3,
INFER-5, INFER-6 (inference tensors: the tensors made in inference mode, which have no version
counter: their `_vc` is NO_VERSION), DATA-1..DATA-6 (the `.data` setter), VIEW-1 (`_base` is the
root base), VIEW-8 (`detach_`).

Ops live in refimpl/ops and are attached to Tensor as methods there, and `Tensor.backward` is
attached by refimpl/autograd.py, so that this module imports neither. It holds the machinery
the ops share: `record` (attach a node to a result) and `make_view`; ops/inplace.py holds
`commit_inplace`.
"""
from __future__ import annotations

import warnings
import weakref

from . import dtypes, errors, grad_mode, hooks, saved_hooks
from .formatting import tensor_repr
from .node import NO_VERSION, Node, SavedValue, accumulator
from .surface import ArraySurface

_enabled = grad_mode.enabled
_inference = grad_mode.inference




class Tensor(ArraySurface):
    __slots__ = ("_data", "_be", "_dtype", "_requires_grad", "_grad_fn", "_grad", "_vc",
                 "_base", "_view_chain", "_view_version", "_view_no_grad", "_backward_hooks",
                 "_post_hooks", "_retains_grad", "_accumulator", "_grad_dtype", "_output_nr",
                 "__weakref__")
    __hash__ = object.__hash__

    # ---- construction -------------------------------------------------------------------
    def _new_like(self, array, vc=None) -> Tensor:
        """A plain leaf on this tensor's backend; shares `vc` when given (views, detach)."""
        return wrap(self._be, array, vc)

    # ---- autograd attributes --------------------------------------------------------------
    @property
    def grad_fn(self):
        if self._base is not None:
            return view_grad_fn(self)
        return self._grad_fn

    @property
    def requires_grad(self) -> bool:
        # the stored grad_fn, not a regenerated one: torch's requires_grad() reads the field
        return self._requires_grad or self._grad_fn is not None or (
            self._base is not None and self._base.requires_grad)

    @requires_grad.setter
    def requires_grad(self, flag):
        errors.check_bool(flag, "setter")  # a bool, checked first; then, unlike requires_grad_
        if self._grad_fn is not None:  # (True), it refuses a non-leaf whatever the flag (LEAF-11)
            raise errors.requires_grad_nonleaf(setter=bool(flag))
        if flag and not self._dtype.is_floating_point:
            raise errors.requires_grad_dtype("setter")  # LEAF-15
        if flag and self._vc is NO_VERSION and not _inference.value:
            raise errors.inference_requires_grad()  # INFER-6
        self._requires_grad = flag

    def requires_grad_(self, requires_grad=True):
        errors.check_bool(requires_grad, "requires_grad_", position=1)
        if self._grad_fn is not None:  # torch reads the stored field here, not a regenerated one
            if not requires_grad:
                raise errors.requires_grad_nonleaf()  # LEAF-11
            return self
        if requires_grad and not self._dtype.is_floating_point:
            raise errors.requires_grad_dtype("method")  # LEAF-15
        if requires_grad and self._vc is NO_VERSION and not _inference.value:
            raise errors.inference_requires_grad()  # INFER-6
        self._requires_grad = requires_grad  # a view's own: True while its base's is (MODE-9)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad(self):
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            warnings.warn(errors.NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)  # RETAIN-7
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if value is self or not isinstance(value, Tensor):  # LEAF-12
                raise errors.grad_assign_self() if value is self else errors.grad_not_tensor(value)
            want = grad_dtype_of(self)
            if want is not None and value._dtype is not want:
                raise errors.grad_assign_dtype(value._dtype, want)  # LEAF-13
            if tuple(value.shape) != tuple(self.shape):
                raise errors.grad_assign_shape(value.shape, self.shape)  # LEAF-12
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def grad_dtype(self):
        """The dtype backward casts this leaf's gradient to and `.grad` must have (LEAF-9,
        LEAF-13): the tensor's own unless set; None casts nothing and accepts any dtype."""
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return grad_dtype_of(self)

    @grad_dtype.setter
    def grad_dtype(self, dtype):
        self._grad_dtype = dtypes.grad_dtype_set(self, dtype)

    @property
    def _version(self) -> int:
        if self._vc is NO_VERSION:
            raise errors.inference_version()  # INFER-3
        return self._vc[0]

    def is_inference(self) -> bool:
        """Made in inference mode, or a view, detach() or .data of such a tensor (INFER-2)."""
        return self._vc is NO_VERSION

    @property
    def data(self):
        """Same storage, its own version counter, no history (VER-6, INPLACE-5); an inference
        tensor's is one too (INFER-2)."""
        return self._new_like(self._data, NO_VERSION if self._vc is NO_VERSION else [0])

    @data.setter
    def data(self, value):
        """Takes value's storage, shape and dtype, and nothing autograd keeps: not its version
        counter, not `.grad` (DATA-1..DATA-6)."""
        if not isinstance(value, Tensor):
            raise errors.data_not_tensor(value)
        if self.requires_grad and not value._dtype.is_floating_point:
            raise errors.data_requires_grad_dtype()
        self._data, self._dtype = value._data, value._dtype

    def detach(self):
        """Same storage and version counter, no history (LEAF-4, VER-5, INPLACE-6); not a view
        (VIEW-1)."""
        return self._new_like(self._data, self._vc)

    def detach_(self):
        """A leaf that does not require grad, its version unchanged (INPLACE-1, VER-2); refused
        on a view outside inference mode; a view of an inference tensor is none (VIEW-8).
        Inside inference mode it leaves the tensor as it was (VER-16)."""
        if _inference.value:
            return self
        if self._base is not None:
            raise errors.detach_view_inplace()
        self._grad_fn, self._requires_grad, self._output_nr = None, False, 0
        return self

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self):
        if not self.requires_grad:
            raise errors.retain_grad_no_requires_grad()  # RETAIN-2
        if self._grad_fn is None:
            return  # a leaf keeps its grad anyway (RETAIN-3)
        fn = self.grad_fn
        if not self._retains_grad:
            fn.retain(self._output_nr, weakref.ref(self))
            self._retains_grad = True

    def register_hook(self, hook):
        if not self.requires_grad:
            raise errors.hook_no_requires_grad()  # HOOK-7
        fn = self.grad_fn  # first: regenerating a view's grad_fn resets its hooks
        if self._backward_hooks is None:
            self._backward_hooks = {}
            if fn is not None:  # a leaf's AccumulateGrad reads the dict from the leaf itself
                fn._add_tensor_hooks(self._backward_hooks, self._output_nr)
        return hooks.add(self._backward_hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        if self.grad_fn is not None:
            raise errors.post_hook_nonleaf()  # HOOK-12
        if not self.requires_grad:  # a no_grad view reads its base's flag: accepted (MODE-9)
            raise errors.hook_no_requires_grad()
        if self._post_hooks is None:
            self._post_hooks = {}
        return hooks.add(self._post_hooks, hook)

    # backward(gradient, retain_graph, create_graph, inputs) is attached by refimpl/autograd.py

    __repr__ = __str__ = tensor_repr


# ---- making tensors -----------------------------------------------------------------------
_new = object.__new__


def wrap(be, array, vc=None) -> Tensor:
    """A leaf tensor around a backend array (no copy)."""
    t = _new(Tensor)
    t._data = array = be.wrap(array)
    t._be, t._dtype, t._grad_dtype = be, be.dtype_of[array.dtype], OWN_DTYPE
    t._grad_fn = t._grad = t._base = t._view_chain = t._backward_hooks = None
    t._post_hooks = t._accumulator = None
    t._requires_grad = t._retains_grad = False
    t._output_nr = 0  # which output of its grad_fn it is: 0 but for a custom Function's (FUNC-2)
    # made in inference mode: an inference tensor, with no version counter (INFER-2)
    t._vc = vc if vc is not None else NO_VERSION if _inference.value else [0]
    return t


OWN_DTYPE = "own"  # a grad_dtype never set: the tensor's dtype, whatever `.data =` makes it


def grad_dtype_of(t: Tensor):
    """The dtype backward gives `t`'s gradient (None: whatever arrives, LEAF-9)."""
    return t._dtype if t._grad_dtype is OWN_DTYPE else t._grad_dtype


def edge(t: Tensor):
    """Where a gradient for `t` goes: (its grad_fn, its output number), its AccumulateGrad, or
    (None, 0)."""
    fn = t.grad_fn if t._base is not None else t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:  # the tensor's own flag: a no_grad view's inherited one gives no edge
        return (accumulator(t), 0)
    return _NO_EDGE


_NO_EDGE = (None, 0)


def record(out, be, name, backward, inputs, info=None):
    """Wrap an op's result array. When grad mode is on and a tensor input requires grad, give the
    result a Node with one edge per input (Python scalars get an empty edge, GRAPH-6).

    Returns (tensor, node or None); the op then saves what its formula needs with node.save().
    """
    t = wrap(be, out)
    if not _enabled[0] or _inference.value:   # inference mode records nothing (INFER-1)
        return t, None
    edges, meta, any_rg = [], [], False
    for x in inputs:
        if isinstance(x, Tensor):
            e = edge(x)
            if e[0] is not None:
                any_rg = True
                meta.append((x._data.shape, x._dtype))
            else:  # a view taken under no_grad requires grad but has no edge (MODE-9)
                any_rg = any_rg or (x._base is not None and x._base.requires_grad)
                meta.append(None)
            edges.append(e)
        else:
            edges.append(_NO_EDGE)
            meta.append(None)
    if not any_rg:
        return t, None
    node = Node(name, backward, tuple(edges), tuple(meta), info)
    t._grad_fn = node
    return t, node


def saved(node: Node, t, idx: int):
    """A SavedValue for input `idx` of node (a tensor or a Python scalar)."""
    if not isinstance(t, Tensor):
        return SavedValue(t, None, None, idx, None)
    if t._vc is NO_VERSION:
        raise errors.inference_saved()  # INFER-5: no version to check it by (VER-7)
    return saved_hooks.hook(SavedValue(t._data, t._vc, t, idx, t._dtype), t)  # SAVED-1


def saved_result(node: Node, t: Tensor):
    return saved_hooks.hook(SavedValue(t._data, t._vc, node._name, -1, t._dtype), t)


def needs(node: Node, i: int) -> bool:
    """Whether input i of node needs a gradient (torch's should_compute_output)."""
    return node.next_functions[i][0] is not None


def linear(t: Tensor, fwd, bwd, name: str, adjoint: str | None = None, depends=()) -> Tensor:
    """fwd(t's array) recorded as one node: a linear map (a view's gradient, a cast, a sum over
    broadcast dims, a mask) whose gradient is its adjoint bwd, recorded alike under create_graph
    (DOUBLE-2). `depends`, tensors the map was read off (relu's result for its mask), are inputs
    of the node that get zero gradients, as in torch's formulas."""
    out, _ = record(fwd(t._data), t._be, name, _linear_backward, (t, *depends),
                    (bwd, fwd, adjoint or name, name, t._be))
    return out


def _linear_backward(node, g):
    bwd, fwd, name, adjoint, be = node.info
    graphed = g.__class__ is Tensor
    zeros = (be.xp.zeros(m[0], dtype=be.native[m[1]]) if needs(node, i) else None
             for i, m in enumerate(node.in_meta[1:], 1))
    return (linear(g, bwd, fwd, name, adjoint) if graphed else bwd(g),
            *(wrap(be, z) if graphed and z is not None else z for z in zeros))


def adjoint_name(name: str) -> str:
    """SelectBackward0 <-> SelectBackwardBackward0, as torch names the backward of a backward."""
    return name[:-9] + "0" if name.endswith("BackwardBackward0") else name[:-1] + "Backward0"


# ---- views (VER-4, GRAPH-10, INPLACE-8) ------------------------------------------------------
class ViewStep:
    """One view op as a pair of functions: fwd(base array) -> view, bwd(view grad) -> base grad."""
    __slots__ = ("fwd", "bwd")

    def __init__(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd


def make_view(a: Tensor, name: str, step: ViewStep) -> Tensor:
    """A view of `a`: shares its storage and version counter, remembers the root base and the
    chain of steps from it, and records `name` as its grad_fn when a requires grad."""
    out, node = record(step.fwd(a._data), a._be, name, _view_backward, (a,), step)
    out._vc = a._vc
    if a._vc is NO_VERSION:  # of an inference tensor: an inference tensor, no view (VIEW-1)
        out._view_no_grad = False
        return out
    out._base = a._base if a._base is not None else a
    out._view_chain = (a._view_chain or ()) + (step,)
    out._view_version = a._vc[0]
    # taken under no_grad or in inference mode (or from such a view): no gradient flows through
    # it and it may not be modified in place with grad mode on (MODE-9) or outside inference
    # mode (INFER-7); the value says which, for the error's text
    # (a view of such a view keeps its base's reason with grad mode on; under no_grad it is a
    # no_grad view, but of a view made in inference mode: torch's propagate_creation_meta)
    if _inference.value:        # inference mode first, as torch's as_view does
        out._view_no_grad = errors.INFERENCE_VIEW
    elif a._base is not None and a._view_no_grad and (
            _enabled[0] or a._view_no_grad == errors.INFERENCE_VIEW):
        out._view_no_grad = a._view_no_grad
    else:
        out._view_no_grad = not _enabled[0]
    return out


def _view_backward(node, g):
    step = node.info
    if g.__class__ is Tensor:  # create_graph: the gradient, recorded (DOUBLE-2)
        return (linear(g, step.bwd, step.fwd, adjoint_name(node._name), node._name),)
    return (step.bwd(g),)


def replay(chain, array):
    for step in chain:
        array = step.fwd(array)
    return array


def view_grad_fn(v: Tensor):
    """A view's grad_fn. Once the shared version has moved on (an in-place op on the view, the base
    or a sibling view), torch regenerates it as AsStridedBackward0 on the base's current history."""
    fn, base = v._grad_fn, v._base
    if (fn is None and not base.requires_grad) or v._view_version == v._vc[0]:
        return fn
    if v._view_no_grad:
        raise errors.no_grad_view_inplace(fn, True, v._view_no_grad, v._output_nr)
    new = Node("AsStridedBackward0", _as_strided_backward, (edge(base),),
               ((base._data.shape, base._dtype),), v._view_chain)
    v._view_version = v._vc[0]
    moved_history(v, fn, new)
    v._grad_fn = new
    return new


def _as_strided_backward(node, g):
    graphed = g.__class__ is Tensor  # create_graph: each step's gradient recorded (DOUBLE-2)
    for step in reversed(node.info):
        g = linear(g, step.bwd, step.fwd, "AsStridedBackwardBackward0",
                   "AsStridedBackward0") if graphed else step.bwd(g)
    return (g if graphed else g[...],)  # a view, as torch's as_strided_backward returns one


def moved_history(t: Tensor, old, new):
    """Hooks registered before the change stay with the old node (HOOK-11); retain_grad moves to
    the new one (RETAIN-6).

    A former leaf's hooks stay with nothing: its AccumulateGrad reads the hooks the tensor holds
    when it runs (node.py) and the change resets them, as torch does. So a backward through a
    graph that used it as a leaf runs only the hooks registered since, then raises
    LEAF_MOVED_INTO_GRAPH (INPLACE-15): a wrong-shaped hook of the leaf never gets to raise
    HOOK_CHANGED_SIZE.
    """
    t._backward_hooks = None
    nr, t._output_nr = t._output_nr, 0
    if t._retains_grad and old is not None:
        old.retain(nr, None)
        new.retain(0, weakref.ref(t))
