"""matmul, recorded as torch records it for each case of operand ranks (GRAPH-3, VER-12);
the formulas run on tensors under create_graph too (DOUBLE-2).

1-D @ 1-D is DotBackward0, 2-D @ 1-D MvBackward0, 2-D @ 2-D MmBackward0; 1-D @ 2-D goes through
unsqueeze, mm and squeeze. `addmm` (bias + mat1 @ mat2, AddmmBackward0) and `linear` (what
nn.Linear computes, through addmm or matmul as torch chooses) are here too.
Each saves an operand only when the other one needs a gradient. With a batch, torch either folds
it into matrix rows (mm) or expands both operands and calls bmm; refimpl follows the same rule,
since the reshapes on the way decide which operands are saved as copies, which later writes do
not reach (VER-12). Two 3-D operands whose batch sizes differ, one of them a batch of 1 that
needs grad, fold too: torch squeezes that batch first.
"""
from __future__ import annotations

from .. import errors
from ..differentiable import math, unpack
from ..tensor import needs, record, saved
from . import views


def matmul(a, b):
    da, db = a._data.ndim, b._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if a._dtype is not b._dtype:
        raise _dtype_error(a._dtype, b._dtype, da, db)
    if da == 1 and db == 1:
        return _two(a, b, "DotBackward0", _dot_bw)
    if da == 2 and db == 1:
        return _two(a, b, "MvBackward0", _mv_bw)
    if da == 1 and db == 2:  # torch: unsqueeze(0), mm, then squeeze_(0) in place (version 1)
        out = _two(views.unsqueeze(a, 0), b, "MmBackward0", _mm_bw)
        xp = a._be.xp
        res, _ = record(xp.squeeze(out._data, axis=0), a._be, "SqueezeBackward4", _unsqueeze_bw,
                        (out,), xp)
        res._vc[0] = 1
        return res
    if da == 2 and db == 2:
        return _two(a, b, "MmBackward0", _mm_bw)
    if _should_fold(a, b):  # fold the batch of the larger operand into matrix rows
        flip = db > da
        t1 = views.transpose(b, -2, -1) if flip else a
        t2 = (views.t(a) if da == 2 else a) if flip else b
        shape = t1._data.shape[:-1]
        rows = views.reshape(t1, _numel(shape), t1._data.shape[-1])
        if t2._data.ndim == 1:
            return views.unsafe_view(_two(rows, t2, "MvBackward0", _mv_bw), shape)
        out = views.unsafe_view(_two(rows, t2, "MmBackward0", _mm_bw),
                                shape + (t2._data.shape[1],))
        return views.contiguous(views.transpose(out, -2, -1)) if flip else out
    sa, sb = a._data.shape, b._data.shape
    if da == 3 and db == 3 and sa[0] != sb[0]:  # a batch of 1 that needs grad: fold it instead
        if sa[0] == 1 and a.requires_grad:
            return matmul(views.squeeze(a, 0), b)
        if sb[0] == 1 and b.requires_grad:
            return matmul(a, views.squeeze(b, 0))
    # batched: expand both to the broadcast batch, flatten it, bmm, unflatten
    n, m1 = (sa[-2] if da > 1 else 1), sa[-1]
    m2, p = (sb[-2] if db > 1 else sb[0]), (sb[-1] if db > 1 else 1)
    batch = _broadcast(sa[:max(da - 2, 0)], sb[:max(db - 2, 0)])
    nb = _numel(batch)
    if db == 1:
        b = views.unsqueeze(b, -1)
    a3 = views.reshape(views.expand(a, *batch, n, m1), nb, n, m1)
    b3 = views.reshape(views.expand(b, *batch, m2, p), nb, m2, p)
    out = _two(a3, b3, "BmmBackward0", _mm_bw)
    return views.unsafe_view(out, batch + ((n,) if da > 1 else ()) + ((p,) if db > 1 else ()))


def addmm(bias, mat1, mat2, *, beta=1, alpha=1):  # saves: each matrix if the other needs grad
    """bias + mat1 @ mat2 as one AddmmBackward0 node, torch's addmm with beta = alpha = 1; bias
    broadcasts to the product's shape, and the engine sums its gradient back (LEAF-8)."""
    if beta != 1 or alpha != 1:
        raise NotImplementedError("refimpl's addmm computes bias + mat1 @ mat2 only (beta = "
                                  "alpha = 1)")
    for name, x in (("self", bias), ("mat1", mat1)):  # torch checks dtypes first, then shapes
        if x._dtype is not mat2._dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got "
                               f"{x._dtype.c_name.capitalize()} and "
                               f"{mat2._dtype.c_name.capitalize()}")
    for name, x in (("mat1", mat1), ("mat2", mat2)):
        if x._data.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {x._data.ndim}-D tensor")
    _check_inner(mat1._data.shape, mat2._data.shape)
    shape = (mat1._data.shape[0], mat2._data.shape[1])
    if tuple(bias._data.shape) != shape:
        views.expand(bias.detach(), *shape)  # raises torch's message where bias cannot broadcast
    xp = mat1._be.xp
    product = xp.matmul(mat1._data, mat2._data)
    out, node = record(bias._data + product, mat1._be, "AddmmBackward0", _addmm_bw,
                       (bias, mat1, mat2), xp)
    if node is not None:
        node.save(saved(node, mat2, 2) if needs(node, 1) else None,
                  saved(node, mat1, 1) if needs(node, 2) else None)
    return out


def _addmm_bw(node, g):
    return (g, *_mm_bw(node, g))  # the bias gets g itself; the engine sums it to bias's shape


def linear(x, weight, bias=None):
    """x @ weight.t() + bias, by torch's paths, which decide the graph (GRAPH-3):

    - a 2-D x with a bias: addmm(bias, x, weight.t()), AddmmBackward0 over TBackward0;
    - a contiguous x of another rank with a bias (a 1-D bias, or any bias for a 3-D x): x
      reshaped to rows (ViewBackward0), addmm, the result viewed back (ViewBackward0);
    - otherwise matmul(x, weight.t()), whose graph depends on x's rank (SqueezeBackward4 over
      MmBackward0 for 1-D, MmBackward0 for 2-D, UnsafeViewBackward0 over MmBackward0 above),
      and a bias added to that result in place (AddBackward0, version + 1).
    """
    dx, dw = x._data.ndim, weight._data.ndim
    if dx == 0 or dw == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{dx}D and {dw}D")
    wt = views.t(weight)
    if bias is not None and dx == 2:
        return addmm(bias, x, wt)
    if bias is not None and views.is_contiguous(x) and (dx == 3 or bias._data.ndim == 1):
        lead = x._data.shape[:-1]
        out = addmm(bias, views.reshape(x, _numel(lead), x._data.shape[-1]), wt)
        return views.view(out, *lead, out._data.shape[1])
    if wt._data.ndim == 2:  # mm checks shapes before dtypes; the rows as matmul folds them
        _check_inner((_numel(x._data.shape[:-1]), x._data.shape[-1]), wt._data.shape)
    out = matmul(x, wt)
    return out if bias is None else out.add_(bias)


def _check_inner(s1, s2):
    if s1[1] != s2[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({s1[0]}x{s1[1]} and "
                           f"{s2[0]}x{s2[1]})")


def _check_sizes(name, s1, s2):
    """torch's RuntimeError for operands whose inner sizes differ, in the words of the kernel
    matmul reached: dot, mv, mm or bmm (not numpy's ValueError)."""
    if name == "DotBackward0" and s1[0] != s2[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{s1[0]}] and src "
                           f"[{s2[0]}] to have the same number of elements, but got {s1[0]} "
                           f"and {s2[0]} elements respectively")
    if name == "MvBackward0" and s1[1] != s2[0]:
        raise RuntimeError(f"size mismatch, got input ({s1[0]}), mat ({s1[0]}x{s1[1]}), "
                           f"vec ({s2[0]})")
    if name == "MmBackward0":
        _check_inner(s1, s2)
    if name == "BmmBackward0" and s1[2] != s2[1]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{s1[0]}, {s1[2]}] but got: [{s2[0]}, {s2[1]}].")


def _dtype_error(x, y, da, db):
    """torch's messages for operands of different dtypes, which matmul does not promote."""
    X, Y = x.c_name.capitalize(), y.c_name.capitalize()
    if da == 1 and db == 1:
        return RuntimeError(f"dot : expected both vectors to have same dtype, but found {X} "
                            f"and {Y}")
    if da == 2 and db == 1:
        return RuntimeError(f"addmv input tensors must have the same dtype, but got {Y}, {X}, "
                            f"and {Y}")
    if min(da, db) >= 3:
        return RuntimeError(f"expected scalar type {X} but found {Y}")
    return RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {x.c_name} != "
                        f"{y.c_name}")


def _should_fold(a, b):
    """torch's should_fold: fold when the smaller operand needs grad, or when the larger one's
    batch dims can be flattened without a copy."""
    larger, smaller = (a, b) if a._data.ndim >= b._data.ndim else (b, a)
    if not (larger._data.ndim >= 3 and smaller._data.ndim <= 2):
        return False
    if smaller.requires_grad:
        return True
    if a._data.ndim == 2:
        return False
    shape, strides = larger._data.shape, larger._be.strides(larger._data)
    if _numel(shape) == 0:
        return True
    if larger is b:  # torch checks b.mT: the last two dims swapped
        shape, strides = _swap_last(shape), _swap_last(strides)
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _swap_last(t):
    t = tuple(t)
    return t[:-2] + (t[-1], t[-2])


def _broadcast(s1, s2):
    """The broadcast batch shape, or torch's error for the last dimension that cannot be."""
    n = max(len(s1), len(s2))
    s1, s2 = (1,) * (n - len(s1)) + tuple(s1), (1,) * (n - len(s2)) + tuple(s2)
    for i in reversed(range(n)):
        if s1[i] != s2[i] and 1 not in (s1[i], s2[i]):
            raise RuntimeError(f"The size of tensor a ({s1[i]}) must match the size of tensor b "
                               f"({s2[i]}) at non-singleton dimension {i}")
    return tuple(max(x, y) if 1 in (x, y) else x for x, y in zip(s1, s2, strict=True))


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


_BOOL_KERNELS = {"DotBackward0": "dot", "MvBackward0": "addmv_impl_cpu",
                 "MmBackward0": "addmm_impl_cpu_", "BmmBackward0": "bmm"}


def _two(a, b, name, backward):             # saves: b if a needs grad, a if b needs grad
    _check_sizes(name, a._data.shape, b._data.shape)
    if a._dtype.name == "bool":     # torch's kernels have no bool version
        raise errors.bool_kernel(_BOOL_KERNELS[name])
    xp = a._be.xp
    out, node = record(xp.matmul(a._data, b._data), a._be, name, backward, (a, b), xp)
    if node is not None:
        node.save(saved(node, b, 1) if needs(node, 0) else None,
                  saved(node, a, 0) if needs(node, 1) else None)
    return out


def _unsqueeze_bw(node, g):
    return (math(g, node.info).expand_dims(g, axis=0),)


def _dot_bw(node, g):
    b, a = unpack(node, g)
    return (g * b if b is not None else None, g * a if a is not None else None)


def _mv_bw(node, g):
    v, m = unpack(node, g)
    xp = math(g, node.info)
    return (xp.reshape(g, (-1, 1)) * xp.reshape(v, (1, -1)) if v is not None else None,
            xp.matmul(xp.matrix_transpose(m), g) if m is not None else None)


def _mm_bw(node, g):
    b, a = unpack(node, g)
    xp = math(g, node.info)
    return (xp.matmul(g, xp.matrix_transpose(b)) if b is not None else None,
            xp.matmul(xp.matrix_transpose(a), g) if a is not None else None)
