"""In-place ops (INPLACE-1..INPLACE-14, INPLACE-17, INPLACE-18, VER-2, VER-14, HOOK-11, RETAIN-6,
INFER-4, DATA-7, DATA-8: `set_`) and clone; their formulas, CopySlices' included, run on tensors
under create_graph too (DOUBLE-2).
`rebase_history` also makes a custom Function the history of an input it marked dirty (FUNC-11).

An in-place op is its out-of-place twin followed by commit_inplace: check that the target may be
modified, compute, write the result into the target's storage, bump the shared version counter
once, and make the new node the target's history (through CopySlices for a view). The checks
run in torch's order, which decides the error of a write wrong in two ways (INPLACE-1,
INPLACE-18, INFER-4): leaves and views (check_inplace), the memory written (check_expanded,
check_overlap), the result's shape and dtype (check_result), an inference tensor last
(refuse_inference). zero_, fill_ and copy_ exist only in place.
"""
from __future__ import annotations

from .. import broadcast, dtypes, errors, grad_mode, saved_hooks
from ..differentiable import math
from ..differentiable import zeros_like as _zeros
from ..layout import contiguous_format, preserve_format
from ..node import Node
from ..tensor import (
    NO_VERSION,
    Tensor,
    edge,
    make_view,
    moved_history,
    record,
    replay,
    view_grad_fn,
    wrap,
)

_enabled = grad_mode.enabled
_inference = grad_mode.inference


# ======================= the machinery =======================

def check_inplace(t: Tensor, others=()) -> None:
    """torch's check_inplace: only when grad mode is on, outside inference mode, and something
    involved requires grad. It runs before every other check of a write (INPLACE-1); an
    inference tensor is refused after all of them (refuse_inference)."""
    if _inference.value or not _enabled[0]:
        return
    rg = t.requires_grad
    if not rg and not any(isinstance(o, Tensor) and o.requires_grad for o in others):
        return
    if t._base is not None and t._view_no_grad:
        # MODE-9, INFER-7, FUNC-14, VIEW-7
        raise errors.no_grad_view_inplace(t._grad_fn, False, t._view_no_grad, t._output_nr)
    if t._base is not None and rg and t._base.is_leaf:
        raise errors.view_of_leaf_inplace()  # INPLACE-2
    if rg and t._grad_fn is None:  # the stored field, as torch reads it here (not regenerated)
        raise errors.leaf_inplace()  # INPLACE-1


def refuse_inference(t: Tensor) -> None:
    """INFER-4: outside inference mode an inference tensor is not written, whatever the grad
    mode; refused last, once the write's other checks passed (torch refuses it as it bumps the
    version, after its kernel checked the operands: a write that is wrong in another way
    raises that error)."""
    if t._vc is NO_VERSION and not _inference.value:
        raise errors.inference_inplace()


def check_expanded(t: Tensor) -> None:
    """INPLACE-18: a target with elements that are one memory location (a dimension of size
    greater than 1 and stride 0) is refused, before the operands' shapes and dtypes are
    checked (as torch's TensorIterator checks memory first); fill_ with a number and zero_
    may write it."""
    if _overlapping(t):
        raise errors.overlapping_write()


def _overlapping(t: Tensor) -> bool:
    """Elements that are one memory location: a dimension of size > 1 and stride 0."""
    return bool(t._data.size) and any(s == 0 and n > 1 for n, s in
                                      zip(t._data.shape, t._be.strides(t._data), strict=True))


def check_overlap(t: Tensor, other) -> None:
    """INPLACE-17: torch refuses an in-place op whose input overlaps the target only partly (the
    same memory seen with other strides, or shifted), when both are dense; full overlap, as in
    x.mul_(x), is fine, and tensors that are not dense are not checked (UNSPEC-3)."""
    if not isinstance(other, Tensor) or other._data is t._data:
        return
    a, b, be = t._data, other._data, t._be
    if a.size == 0 or b.size == 0 or not (_dense(a, be) and _dense(b, be)):
        return
    item = t._dtype.itemsize
    a0, b0 = be.address(a), be.address(b)
    a1, b1 = a0 + a.size * item, b0 + b.size * other._dtype.itemsize
    if (a0, a1) == (b0, b1):
        if be.strides(a) != be.strides(b):
            raise errors.partial_overlap()
    elif a0 < b1 and b0 < a1:
        raise errors.partial_overlap()


def _dense(a, be) -> bool:
    """Non-overlapping and dense: the elements fill their memory span exactly."""
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(a.shape, be.strides(a), strict=True))
    return span == a.size


def commit_inplace(t: Tensor, res: Tensor, fill=False) -> Tensor:
    """Finish an in-place op computed out of place as `res`: write res into t's storage, bump the
    version, and make res's node t's history (or its base's, through CopySlices). The target
    keeps its shape: operands that broadcast it larger are refused, as torch's TensorIterator
    refuses an output of another shape, before anything is written."""
    check_result(t, res, fill)
    refuse_inference(t)
    node = res._grad_fn
    if node is not None:
        for s in node.saved:
            if s is None:
                continue
            if s.idx == 0 and s.vc is t._vc:   # torch keeps a copy of self's old value,
                s.array, s.vc = t._be.copy(s.array), None   # which no detach_() reaches
                s.nonleaf = False               # (VER-16)
            elif s.idx == -1:                   # a saved result is t itself, after the bump
                s.vc = t._vc
    write(t, res._data, res._dtype, fill)
    t._vc[0] += 1
    if node is None:
        return t
    for s in node.saved:
        if s is not None and s.idx == -1:  # t's own memory: later writes through aliases show
            s.array, s.version = t._data, t._vc[0]
    rebase_history(t, node)
    if any(isinstance(s, saved_hooks.PackLater) for s in node.saved):
        node.saved = tuple(s.packed_as(t) if isinstance(s, saved_hooks.PackLater) else s
                           for s in node.saved)     # pack gets t itself, as written (SAVED-1)
    return t


def check_result(t: Tensor, res: Tensor, fill=False) -> None:
    """The target keeps its shape and dtype: a result broadcast larger, or of a dtype category
    the target cannot hold, is refused before anything is written."""
    if not fill and res._data.shape != t._data.shape:
        raise errors.broadcast_output(t._data.shape, res._data.shape)
    if res._dtype.category > t._dtype.category:
        raise errors.cast_inplace(res._dtype, t._dtype)


def rebase_history(t: Tensor, node: Node) -> Tensor:
    """Make node, which wrote t in place, t's history: directly, or through a view the base's
    CopySlices (INPLACE-8). Also for an input a custom Function marked dirty (FUNC-11)."""
    if t._base is None:
        moved_history(t, t._grad_fn, node)
        t._grad_fn = node
        return t
    base = t._base  # through a view: the base's history becomes CopySlices (INPLACE-8)
    cs = Node("torch::autograd::CopySlices", _copy_slices_backward,
              (edge(base),) + node.next_functions[1:],
              ((base._data.shape, base._dtype),) + node.in_meta[1:], (node, t._view_chain, t._be))
    moved_history(base, base._grad_fn, cs)
    base._grad_fn = cs
    if t._retains_grad and t._grad_fn is not None:  # torch moves it from the view's own old
        t._grad_fn.retain(t._output_nr, None)       # node; it never stores `node` on the view
    t._grad_fn = node
    # regenerated as AsStridedBackward0 at once, as torch's rebase_history does, so its node is
    # created with the write (HOOK-14); a sibling view's waits for its next read
    view_grad_fn(t)
    for s in node.saved:    # torch saves the view's new grad_fn with it (DOUBLE-2)
        if s is not None and s.idx == -1:
            s.edge = t._grad_fn
    return t


def write(t: Tensor, array, dtype, fill=False) -> None:
    if array is t._data:  # copy_ from the very same memory: nothing to write (as torch)
        return
    be = t._be
    if dtype is not t._dtype:
        array = be.xp.astype(array, be.native[t._dtype])
    try:
        t._data[...] = array
    except ValueError as exc:  # a read-only array (a strict namespace's broadcast)
        raise errors.overlapping_write() from exc


def _copy_slices_backward(node, g):
    """The base's grad is g, except that the view's region carries what the in-place op's own
    backward returns for its input; the op's other inputs get their grads unchanged."""
    node.unpack()  # raises once freed, whatever the inner node saved (FREE-1)
    fn, chain, be = node.info
    if g.__class__ is Tensor:
        return _copy_slices_recorded(fn, chain, g)
    result = be.copy(g)
    region = replay(chain, result)
    grads = fn.backward(fn, be.copy(region))
    if grads[0] is None:    # a custom Function's backward gave none: the base gets none
        return (None,) + tuple(grads[1:])  # (torch 2.13, also outside the view's part)
    region[...] = grads[0]
    return (result,) + tuple(grads[1:])


def _copy_slices_recorded(fn, chain, g):
    """The same under create_graph (DOUBLE-2), in refimpl's own ops: a copy of g, the view's
    region of it overwritten in place with what the inner node returns."""
    result = g.clone()
    region = result
    for step in chain:
        region = make_view(region, "AsStridedBackward0", step)
    grads = fn.backward(fn, region.clone())
    if grads[0] is None:
        return (None,) + tuple(grads[1:])
    copy_(region, grads[0])
    return (result,) + tuple(grads[1:])


# ======================= the ops =======================

def inplace(op):
    """The `_` variant of an out-of-place op: torch.Tensor.add_ from add, and so on."""
    def method(self, *args, **kwargs):
        alpha = {}
        if "alpha" in kwargs:  # parsed first, under the method's own name (add_, sub_)
            alpha = {"alpha": dtypes.alpha_number(op.__name__ + "_", kwargs.pop("alpha"))}
        check_inplace(self, args + tuple(kwargs.values()) + tuple(alpha.values()))
        if _overlapping(self) or _clamp_to_number(op, args, kwargs):
            _own_refusal(op, self, args, kwargs)
        check_expanded(self)
        for other in args:
            check_overlap(self, other)
        if alpha:
            _check_alpha_last(op, self, args, alpha["alpha"])
            kwargs.update(alpha)
        if self._vc is NO_VERSION and not _inference.value:   # refused once the op's own
            with grad_mode.no_grad():                           # checks passed (INFER-4),
                check_result(self, op(self, *args, **kwargs))   # recording nothing
            refuse_inference(self)
        if saved_hooks.in_force():      # pack hooks get a copy of self's old value (SAVED-1)
            with saved_hooks.packing_original(self, clone):
                return commit_inplace(self, op(self, *args, **kwargs))
        return commit_inplace(self, op(self, *args, **kwargs))
    method.__name__ = op.__name__ + "_"
    return method


def _check_alpha_last(op, t: Tensor, args, alpha) -> None:
    """torch checks the alpha of add_ and sub_ once its TensorIterator is built (alpha_check):
    an alpha it refuses is raised only after the op's own refusals and the result's shape and
    dtype against the target."""
    try:
        dtypes.alpha_value((t, *args), alpha)
    except RuntimeError:
        with grad_mode.no_grad():
            check_result(t, op(t, *args))
        raise


def _own_refusal(op, t: Tensor, args, kwargs) -> None:
    """Raise what the op refuses of its arguments themselves, which torch 2.13 checks before
    the memory written (INPLACE-18): bool subtraction or negation, integers to a negative
    power (the out-of-place op raises them), and a `clamp_` number bound whose result the
    target's dtype cannot hold (clamp's own check; other ops' casts are checked after the
    memory written). Shapes that do not broadcast are left for after it: the op's error then is
    theirs."""
    for a in args:
        if isinstance(a, Tensor) and not broadcast.expandable(a._data.shape, t._data.shape):
            return
    with grad_mode.no_grad():
        res = op(t, *args, **kwargs)
    if _clamp_to_number(op, args, kwargs) and res._dtype.category > t._dtype.category:
        raise errors.cast_clamp(res._dtype, t._dtype)


def _clamp_to_number(op, args, kwargs) -> bool:
    """A clamp_ whose bounds are numbers: torch checks its result's dtype in clamp's own
    checks (a tensor bound goes the way of the other ops: after the memory written)."""
    return op.__name__ == "clamp" and not any(
        isinstance(a, Tensor) for a in (*args, *kwargs.values()))


def clone(a, *, memory_format=preserve_format):   # CloneBackward0; saves: nothing
    """A copy in a's layout, or in new row-major memory with memory_format=contiguous_format
    (a non-dense leaf's first recorded .grad: DOUBLE-4, GRAD-2)."""
    if memory_format is contiguous_format:
        data = a._be.xp.zeros(a._data.shape, dtype=a._data.dtype)
        data[...] = a._data
    elif memory_format is preserve_format:
        data = a._be.copy(a._data)
    else:
        raise TypeError(f"clone(): memory_format must be torch.preserve_format or "
                        f"torch.contiguous_format, got {memory_format!r}")
    out, _ = record(data, a._be, "CloneBackward0", _identity_bw, (a,))
    return out


def _identity_bw(node, g):
    return (g,)


def zero_(a):                               # ZeroBackward0; saves: nothing
    check_inplace(a)
    out, _ = record(a._be.xp.zeros_like(a._data), a._be, "ZeroBackward0", _zeros_bw, (a,))
    return commit_inplace(a, out, fill=True)


def _zeros_bw(node, g):
    return (_zeros(g),) + (None,) * (len(node.next_functions) - 1)


def fill_(a, value):                        # FillBackward2 (scalar) / FillBackward3 (tensor)
    xp = a._be.xp
    if isinstance(value, Tensor):
        check_inplace(a, (value,))
        if value._data.ndim:
            raise errors.fill_value_not_0d(value._data.ndim)
        check_expanded(a)   # a number may fill an expanded tensor; a tensor value may not
        arr = xp.broadcast_to(xp.astype(value._data, a._be.native[a._dtype]), a._data.shape)
        out, _ = record(arr, a._be, "FillBackward3", _fill_tensor_bw, (a, value), xp)
    else:
        check_inplace(a)
        arr = xp.full(a._data.shape, value, dtype=a._be.native[a._dtype])
        out, _ = record(arr, a._be, "FillBackward2", _zeros_bw, (a,))
    return commit_inplace(a, out, fill=not isinstance(value, Tensor))


def _fill_tensor_bw(node, g):
    return _zeros(g), math(g, node.info).sum(g)


def copy_(a, src):                          # CopyBackwards; saves: nothing
    # torch checks only a target of a differentiable dtype: an integer one takes cast values
    check_inplace(a, (src,) if a._dtype.is_floating_point else ())  # (INPLACE-10)
    xp, be, arr = a._be.xp, a._be, src._data
    if src._dtype is not a._dtype:
        arr = xp.astype(arr, a._be.native[a._dtype])
    if arr.shape == a._data.shape and be.address(arr) == be.address(a._data) \
            and be.strides(arr) == be.strides(a._data):
        arr = a._data  # the same data: torch's copy_ returns early
    else:
        check_expanded(a)
    check_overlap(a, src)
    if arr.shape != a._data.shape and (full := broadcast.shape_of(a._data.shape, arr.shape)) \
            != a._data.shape:
        raise errors.broadcast_output(a._data.shape, full)
    arr = xp.broadcast_to(arr, a._data.shape) if arr is not a._data else arr
    if a._dtype.is_floating_point:
        out, _ = record(arr, a._be, "torch::autograd::CopyBackwards", _copy_bw, (a, src))
    else:   # an integer or bool target holds cast values: nothing recorded (INPLACE-10)
        out = wrap(a._be, arr)
    return commit_inplace(a, out)


def _copy_bw(node, g):
    return _zeros(g), g  # the engine casts and sums g to src's dtype and shape


def set_(a, src):                           # torch::autograd::NotImplemented; saves: nothing
    """`a` takes src's storage (DATA-7): an in-place write, refused on a leaf that requires grad
    while recording; recorded, it has no derivative (DATA-8)."""
    if src._dtype is not a._dtype:
        raise errors.set_dtype(src._dtype, a._dtype)
    check_inplace(a, (src,))
    refuse_inference(a)
    _, node = record(src._data, a._be, "torch::autograd::NotImplemented", _set_bw, (a, src))
    if node is not None:
        node.seq = float("inf")     # runs as soon as it is ready, as an accumulator (HOOK-14)
    a._data = src._data
    a._vc[0] += 1
    return a if node is None else rebase_history(a, node)


def _set_bw(node, g):
    raise errors.set_backward()
