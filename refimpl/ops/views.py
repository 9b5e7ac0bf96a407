"""Views and indexing (GRAPH-10, VER-4, VER-13, INPLACE-2, INPLACE-3, INPLACE-8, INPLACE-9),
and `narrow` and `select` (VIEW-5); the multi-output views are in split.py.

Each view op is a ViewStep: fwd maps the input array to a view of it, bwd maps the view's
gradient back to the input's shape. The same pair serves the op's node and, replayed from the
root base, CopySlices and AsStridedBackward0 after an in-place op through a view.
None of these save a tensor. Under create_graph a view's gradient is recorded as one node that
maps it back with bwd, whose own gradient is fwd again (tensor.linear, DOUBLE-2).
`as_strided` is out of scope.
"""
from __future__ import annotations

from ..broadcast import sum_to
from ..differentiable import math
from ..factories import from_data
from ..tensor import Tensor, ViewStep, make_view, record
from .inplace import clone, copy_, fill_


def _zeros_with(xp, shape, g, key):
    """The gradient of an indexing view: zeros of the input's shape with g at `key`."""
    out = xp.zeros(shape, dtype=g.dtype)
    out[key] = g
    return out


# ======================= movement =======================

def view(a, *shape):                        # ViewBackward0
    shape = _infer_shape(_shape_arg(shape), a._data.shape)
    if _view_strides(a, shape) is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return _reshape_view(a, shape)


def _reshape_view(a, shape, name="ViewBackward0"):
    be, old, src = a._be, a._data.shape, a._data
    strides = _view_strides(a, shape)  # torch's, which numpy's reshape may not give
    exact = len(strides) == len(shape)
    return make_view(a, name, ViewStep(
        lambda x: be.view(x, shape, strides) if exact and x is src else be.xp.reshape(x, shape),
        lambda g: be.xp.reshape(g, old)))


def reshape(a, *shape):
    """ViewBackward0 on a contiguous tensor, ReshapeAliasBackward0 on another that can be viewed
    as `shape`, else a copy: CloneBackward0 then UnsafeViewBackward0 (not a view)."""
    shape = _infer_shape(_shape_arg(shape), a._data.shape)
    if _view_strides(a, shape) is not None:
        return _reshape_view(a, shape, "ViewBackward0" if is_contiguous(a)
                             else "ReshapeAliasBackward0")
    return unsafe_view(clone(a), shape)


def _unsafe_view_bw(node, g):
    xp, old = node.info
    return (math(g, xp).reshape(g, old),)


def unsafe_view(a, shape, name="UnsafeViewBackward0"):
    """matmul's reshape of its result: a new tensor, not a view."""
    xp, old = a._be.xp, a._data.shape
    out, _ = record(xp.reshape(a._data, shape), a._be, name, _unsafe_view_bw, (a,), (xp, old))
    return out


def transpose(a, dim0, dim1, name="TransposeBackward0"):
    xp, n = a._be.xp, a._data.ndim
    perm = list(range(n))
    if n:
        dim0, dim1 = dim0 % n, dim1 % n
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    perm = tuple(perm)
    return make_view(a, name, ViewStep(lambda x: xp.permute_dims(x, perm),
                                       lambda g: xp.permute_dims(g, perm)))


def t(a):                                   # TBackward0; 0-d and 1-d tensors are returned as is
    if a._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{a._data.ndim}D")
    return transpose(a, 0, a._data.ndim - 1 if a._data.ndim else 0, "TBackward0")


def unsqueeze(a, dim):                      # UnsqueezeBackward0
    be, n = a._be, a._data.ndim + 1
    d = dim % n
    return make_view(a, "UnsqueezeBackward0",
                     ViewStep(lambda x: be.unsqueeze(x, d), lambda g: be.xp.squeeze(g, axis=d)))


def squeeze(a, dim=None, name=None):        # SqueezeBackward0 (all dims) / 1 (one dim)
    xp, shape = a._be.xp, a._data.shape
    if dim is None:
        dims, name = tuple(i for i, s in enumerate(shape) if s == 1), name or "SqueezeBackward0"
    else:
        d = dim % len(shape) if shape else 0
        dims = (d,) if shape and shape[d] == 1 else ()
        name = name or "SqueezeBackward1"
    return make_view(a, name, ViewStep(  # torch's backward returns g itself if nothing went
        lambda x: xp.squeeze(x, axis=dims) if dims else x[...],
        lambda g: xp.reshape(g, shape) if dims else g))


def expand(a, *sizes):                      # ExpandBackward0; backward sums over the expansion
    sizes = _shape_arg(sizes)
    xp, shape = a._be.xp, a._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand({a._dtype.legacy}{{{list(shape)}}}, size={list(sizes)}): the "
                           f"number of sizes provided ({len(sizes)}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({len(shape)})")
    full = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    for i, s in enumerate(shape):
        if s != 1 and s != full[i + lead]:
            raise RuntimeError(f"The expanded size of the tensor ({full[i + lead]}) must match the "
                               f"existing size ({s}) at non-singleton dimension {i + lead}.  "
                               f"Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}")
    be = a._be
    return make_view(a, "ExpandBackward0", ViewStep(lambda x: be.expand(x, full),
                                                    lambda g: sum_to(xp, g, shape)))


def expand_as(a, other):
    return expand(a, *other.shape)


def alias(a):                               # AliasBackward0: x[...]
    return make_view(a, "AliasBackward0", ViewStep(lambda x: x[...], lambda g: g))


# ======================= indexing =======================

def getitem(a, key, for_setitem=False):
    """Basic indexing, one view node per index element as torch records them: ints select,
    slices slice (a slice written as the whole dim is skipped unless it is the whole key of a
    getitem: _skipped), None
    unsqueezes, and a key that selects nothing gives an alias (a itself for setitem)."""
    if isinstance(key, Tensor):
        raise NotImplementedError("refimpl: indexing with tensors is out of scope")
    whole_slice = isinstance(key, slice) and not for_setitem
    key = key if isinstance(key, tuple) else (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > a._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {a._data.ndim}")
    out, dim, did = a, 0, False
    for i, k in enumerate(key):
        if k is Ellipsis:  # the real indices after it address the last dims
            dim = out._data.ndim - sum(1 for k2 in key[i + 1:]
                                       if k2 is not None and k2 is not Ellipsis)
            continue
        if k is None:
            out, dim, did = unsqueeze(out, dim), dim + 1, True
        elif isinstance(k, bool) or not isinstance(k, (int, slice)):
            raise NotImplementedError(f"refimpl: index {k!r} is out of scope")
        elif isinstance(k, int):
            out, did = _select(out, dim, k), True
        else:
            size = out._data.shape[dim]
            start, stop, step = k.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if whole_slice or not _skipped(k, size):
                out, did = _slice(out, dim, k), True
            dim += 1
    return out if did or for_setitem else alias(a)


def _skipped(k, size):
    """Whether torch records no node for slice k of a dim of `size` in a subscript of several
    items: as written, start None or 0, step None or 1, stop None or at least the size (torch
    2.13 looks at the values as written: `-3:` of a size-3 dim is a SliceBackward0)."""
    return k.start in (None, 0) and k.step in (None, 1) and (k.stop is None or k.stop >= size)


def _select(a, dim, i):                     # SelectBackward0
    return make_view(a, "SelectBackward0", _select_step(a, dim, i))


def _slice(a, dim, s):                      # SliceBackward0
    return make_view(a, "SliceBackward0", _slice_step(a, dim, s))


def _select_step(a, dim, i, method=False):
    xp, shape = a._be.xp, a._data.shape
    size = shape[dim]
    if not -size <= i < size:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(shape)} at "
                         f"dimension {dim}" if method else
                         f"index {i} is out of bounds for dimension {dim} with size {size}")
    key = (slice(None),) * dim + (i % size, Ellipsis)
    return ViewStep(lambda x: x[key], lambda g: _zeros_with(xp, shape, g, key))


def _slice_step(a, dim, s):
    xp, shape = a._be.xp, a._data.shape
    key = (slice(None),) * dim + (slice(*s.indices(shape[dim])), Ellipsis)
    return ViewStep(lambda x: x[key], lambda g: _zeros_with(xp, shape, g, key))


def _dim(a, dim, op=None):
    n = a._data.ndim
    if n == 0:  # torch: "narrow() cannot be applied to a 0-dim tensor." (a RuntimeError)
        raise (RuntimeError if op == "narrow" else IndexError)(
            f"{op}() cannot be applied to a 0-dim tensor." if op else
            f"Dimension specified as {dim} but tensor has no dimensions")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def narrow(a, dim, start, length):          # SliceBackward0: a[start:start + length] on dim
    dim = _dim(a, dim, "narrow")
    size = a._data.shape[dim]
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    start = start % size if start < 0 else start
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return _slice(a, dim, slice(start, start + length))


def select(a, dim, index):                  # SelectBackward0: a[..., index] on dim
    dim = _dim(a, dim, "select")
    return make_view(a, "SelectBackward0", _select_step(a, dim, index, method=True))


def setitem(a, key, value):
    """a[key] = value: a view of a (or a itself), then fill_ with a 0-d value or copy_ of a
    tensor into it, as torch does (INPLACE-3, INPLACE-9)."""
    target = getitem(a, key, for_setitem=True)
    if not isinstance(value, Tensor):
        value = from_data(value, dtype=a._dtype, device=a._be.device)
    shape = target._data.shape
    if value._data.shape == shape:
        return copy_(target, value)
    if value._data.ndim == 0:
        return fill_(target, value)
    lead = 0  # otherwise: view without leading 1s, expand to the target, copy (torch's copy_to)
    while lead < value._data.ndim and value._data.shape[lead] == 1:
        lead += 1  # all of them: a one-element value expands with strides 0 (torch's overlap
        #            check then sees it partly overlap a one-element target over its memory)
    value = view(value, *value._data.shape[lead:])
    if value._data.shape != shape:
        value = expand(value, *shape)
    copy_(target, value)


# ======================= shapes and strides =======================

def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def _infer_shape(shape, old):
    n = 1
    for s in old:
        n *= s
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        shape = tuple(n // known if s == -1 and known else s for s in shape)
    m = 1
    for s in shape:
        m *= s
    if m != n:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {n}")
    return shape


def is_contiguous(a) -> bool:
    expected = 1
    for size, stride in zip(reversed(a._data.shape), reversed(a._be.strides(a._data)), strict=True):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def contiguous(a):
    return a if is_contiguous(a) else clone(a)


def _view_strides(a, shape):
    """torch's computeStride: the strides that view `a` as `shape`, or None if there are none."""
    old, strides = a._data.shape, a._be.strides(a._data)
    if not old or not shape or 0 in old:
        return ()
    new = [0] * len(shape)
    view_d = len(shape) - 1
    chunk_base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                new[view_d] = view_numel * chunk_base
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = view_numel = 1
    return tuple(new) if view_d == -1 else None
