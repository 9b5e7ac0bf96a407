"""Elementwise ops, each forward beside its backward (GRAPH-3, GRAPH-6, LEAF-8, VER-9..VER-13,
DOUBLE-2: every formula also runs on tensors under create_graph, refimpl/differentiable.py).

A line `saves:` says what the node keeps for backward; torch keeps exactly that, so version
errors (VER-7) and second-backward errors (FREE-1) happen at the same places. Broadcasting is
undone by the engine, which sums each gradient to its input's shape (LEAF-8).
"""
from __future__ import annotations

import operator

from .. import broadcast, dtypes, errors
from ..differentiable import array, astype, diagonal, math, unpack
from ..tensor import Tensor, needs, record, saved, saved_result, wrap


def _operands(a: Tensor, b):
    """Arrays (or a Python scalar) of a binary op, promoted as torch promotes them."""
    if isinstance(b, Tensor):
        if a._data.shape != b._data.shape:
            broadcast.shape_of(a._data.shape, b._data.shape)   # torch's error if they do not
        if b._dtype is a._dtype:
            return a._data, b._data, a._be
        want = dtypes.result_type((a, b))
        return _cast(a, want), _cast(b, want), a._be
    if isinstance(b, bool) or not isinstance(b, (int, float)):
        if isinstance(b, bool):
            b = int(b) if a._dtype is not dtypes.bool_ else b
        else:
            raise TypeError(f"unsupported operand type: {type(b).__name__}")
    if a._dtype.is_floating_point:
        return a._data, b, a._be
    want = dtypes.result_type((a, b))
    return _cast(a, want), (float(b) if want.is_floating_point else b), a._be


def _laid_out(op, x, y, be):
    """op(x, y), with the result laid out in memory as torch's TensorIterator lays it out (which
    decides whether a later view() of it works): dims ordered by the inputs' strides, the first
    input deciding unless it is broadcast along them."""
    out = op(x, y)
    if out.ndim < 2 or not hasattr(y, "shape"):
        return out
    shape, n = out.shape, out.ndim
    strides = [(0,) * (n - a.ndim) + tuple(0 if a.shape[i] == 1 and shape[n - a.ndim + i] != 1
                                            else s for i, s in enumerate(be.strides(a)))
               for a in (x, y)]

    def should_swap(d0, d1):  # torch's reorder_dimensions comparison
        for s in strides:
            if s[d0] == 0 or s[d1] == 0:
                continue
            if s[d0] != s[d1]:
                return 1 if s[d0] > s[d1] else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(n - 1, -1, -1))  # fastest dim first
    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    order = tuple(reversed(perm))
    if order == tuple(range(n)):
        return out
    xp = be.xp
    parts = [xp.permute_dims(xp.broadcast_to(a, shape), order) for a in (x, y)]
    return xp.permute_dims(op(*parts), tuple(order.index(i) for i in range(n)))


def _cast(t: Tensor, want):
    return t._data if t._dtype is want else t._be.xp.astype(t._data, t._be.native[want])


def _no_bool(op: str, *operands) -> None:
    """torch refuses subtraction, negation and relu of a bool tensor (a mask is inverted with
    `~`), a Python bool counting as one (torch wraps it as a bool tensor: `t - True` is
    refused, `b - True` is two bool tensors); refimpl's arrays would compute them."""
    bools = sum(isinstance(o, bool) or (isinstance(o, Tensor) and o._dtype is dtypes.bool_)
                for o in operands)
    if bools:
        raise errors.bool_arithmetic(op, bools)


def _floating(a: Tensor):
    """Unary float functions of integer tensors compute in the default dtype, float32."""
    return a._data if a._dtype.is_floating_point else _cast(a, dtypes.float32)


# ======================= binary arithmetic =======================

def _with_alpha(op: str, a, b, alpha):
    """The operands of add or sub, b scaled by alpha, checked in torch's order: alpha parsed as
    a number, sub's refusal of bool, the shapes, then alpha against the result's dtype
    (alpha_check, once the operands are known). A bool result stays bool: a | (b & alpha)."""
    alpha = dtypes.alpha_number(op, alpha)
    if op == "sub":
        _no_bool("sub", a, b)
    x, y, be = _operands(a, b)
    alpha = dtypes.alpha_value((a, b), alpha)
    if alpha != 1:
        y = y & alpha if isinstance(alpha, bool) else y * alpha
    return x, y, be, alpha


_LOGICAL = {operator.add: operator.or_, operator.mul: operator.and_}


def _on_bool(op, x, be):
    """op, or on bool operands its logical twin: torch's + of bools is or and its * is and
    (numpy's are the same; the Array API defines neither on bool)."""
    return _LOGICAL[op] if be.dtype_of[x.dtype] is dtypes.bool_ else op


def add(a, b, alpha=1):                     # saves: nothing
    x, y, be, alpha = _with_alpha("add", a, b, alpha)
    out, _ = record(_laid_out(_on_bool(operator.add, x, be), x, y, be), be, "AddBackward0",
                    _add_bw, (a, b), alpha)
    return out


def _add_bw(node, g):
    return g, (g * node.info if node.info != 1 else g)


def sub(a, b, alpha=1):                     # saves: nothing
    x, y, be, alpha = _with_alpha("sub", a, b, alpha)
    out, _ = record(_laid_out(operator.sub, x, y, be), be, "SubBackward0", _sub_bw, (a, b),
                    alpha)
    return out


def _sub_bw(node, g):
    return g, -g * node.info


def rsub(a, b):                             # b - a for a Python scalar b; saves: nothing
    _no_bool("sub", a, b)
    x, y, be = _operands(a, b)
    out, _ = record(y - x, be, "RsubBackward1", _rsub_bw, (a,))
    return out


def _rsub_bw(node, g):
    return (-g,)


def mul(a, b):                              # saves: b if a needs grad, a if b needs grad
    x, y, be = _operands(a, b)
    out, node = record(_laid_out(_on_bool(operator.mul, x, be), x, y, be), be, "MulBackward0",
                       _mul_bw, (a, b), be)
    if node is not None:
        node.save(saved(node, b, 1) if needs(node, 0) else None,
                  saved(node, a, 0) if needs(node, 1) else None)
    return out


def _mul_bw(node, g):
    b, a = unpack(node, g)
    return (_like(g, g * b, node.info) if b is not None else None,
            _like(g, g * a, node.info) if a is not None else None)


def _like(g, r, be):
    """A product's gradient in the incoming gradient's dtype, the op's result dtype, as
    torch's formulas give it: an operand of a wider float dtype that did not widen the result
    (a 0-d float64 times a float32 tensor) does not widen its gradient either, which numpy's
    promotion would; it shows where a leaf's grad_dtype None keeps what arrives (LEAF-9)."""
    if g.__class__ is Tensor:
        return r if r._dtype is g._dtype else astype(r, g._dtype)
    return r if r.dtype == g.dtype else be.xp.astype(r, g.dtype)


def div(a, b):                              # saves: b if a needs grad; a and b if b needs grad
    x, y, be = _operands(a, b)
    if not _is_float(x, be):  # true division of integers computes in float32
        f32 = be.native[dtypes.float32]
        x = be.xp.astype(x, f32)
        y = be.xp.astype(y, f32) if isinstance(y, type(x)) else float(y)
    out, node = record(_laid_out(operator.truediv, x, y, be), be, "DivBackward0", _div_bw,
                       (a, b), be)
    if node is not None:
        nb = needs(node, 1)
        node.save(saved(node, b, 1) if needs(node, 0) or nb else None,
                  saved(node, a, 0) if nb else None)
    return out


def _is_float(x, be):
    return be.dtype_of[x.dtype].is_floating_point


def _div_bw(node, g):
    b, a = unpack(node, g)
    ga = _like(g, g / b, node.info) if needs(node, 0) else None
    gb = _like(g, -g * a / (b * b), node.info) if a is not None else None
    return ga, gb


def reciprocal(a):                          # saves: result
    out, node = record(1.0 / _floating(a), a._be, "ReciprocalBackward0", _reciprocal_bw, (a,))
    if node is not None:
        node.save(saved_result(node, out))
    return out


def _reciprocal_bw(node, g):
    (r,) = unpack(node, g)
    return (-g * r * r,)


def rdiv(a, b):                             # b / a for a Python scalar b, as torch: b * (1/a)
    return mul(reciprocal(a), b)


def neg(a):                                 # saves: nothing
    _no_bool("neg", a)
    out, _ = record(-a._data, a._be, "NegBackward0", _neg_bw, (a,))
    return out


def _neg_bw(node, g):
    return (-g,)


# ======================= unary functions =======================

def _unary(a, fn, name, backward, save):
    """save: 'self' keeps the input, 'result' the output (VER-9, VER-10)."""
    xp = a._be.xp
    out, node = record(fn(xp, _floating(a)), a._be, name, backward, (a,), xp)
    if node is not None:
        node.save(saved_result(node, out) if save == "result" else saved(node, a, 0))
    return out


def exp(a):                                 # saves: result
    return _unary(a, lambda xp, x: xp.exp(x), "ExpBackward0", _exp_bw, "result")


def _exp_bw(node, g):
    (r,) = unpack(node, g)
    return (g * r,)


def sqrt(a):                                # saves: result
    return _unary(a, lambda xp, x: xp.sqrt(x), "SqrtBackward0", _sqrt_bw, "result")


def _sqrt_bw(node, g):
    (r,) = unpack(node, g)
    return (g / (2 * r),)


def log(a):                                 # saves: self
    return _unary(a, lambda xp, x: xp.log(x), "LogBackward0", _log_bw, "self")


def _log_bw(node, g):
    (x,) = unpack(node, g)
    return (g / x,)


def sin(a):                                 # saves: self
    return _unary(a, lambda xp, x: xp.sin(x), "SinBackward0", _sin_bw, "self")


def _sin_bw(node, g):
    (x,) = unpack(node, g)
    return (g * math(g, node.info).cos(x),)


def cos(a):                                 # saves: self
    return _unary(a, lambda xp, x: xp.cos(x), "CosBackward0", _cos_bw, "self")


def _cos_bw(node, g):
    (x,) = unpack(node, g)
    return (g * -math(g, node.info).sin(x),)


def tanh(a):                                # saves: result
    return _unary(a, lambda xp, x: xp.tanh(x), "TanhBackward0", _tanh_bw, "result")


def _tanh_bw(node, g):
    (r,) = unpack(node, g)
    return (g * (1 - r * r),)


def sigmoid(a):                             # saves: result
    return _unary(a, lambda xp, x: 1 / (1 + xp.exp(-x)), "SigmoidBackward0", _sigmoid_bw,
                  "result")


def _sigmoid_bw(node, g):
    (r,) = unpack(node, g)
    return (g * (r * (1 - r)),)


def relu(a):                                # saves: result
    _no_bool("relu", a)
    xp = a._be.xp
    x = a._data  # negatives become +0; -0.0 and nan pass through, as torch's clamp_min(0)
    out, node = record(xp.where(x < 0, xp.zeros_like(x), x), a._be, "ReluBackward0",
                       _relu_bw, (a,), xp)
    if node is not None:
        node.save(saved_result(node, out))
    return out


def _relu_bw(node, g):  # torch's threshold_backward(grad, result, 0), which takes the result
    (r,) = unpack(node, g)
    xp, stop = node.info, array(r) <= 0  # NaN lets the gradient through, as torch
    return (diagonal(g, lambda a: xp.where(stop, xp.zeros_like(a), a),
                     "ThresholdBackwardBackward0", r),)


def abs(a):                                 # saves: self
    if a._dtype.name == "bool":
        raise errors.bool_kernel("abs_cpu")
    out, node = record(a._be.xp.abs(a._data), a._be, "AbsBackward0", _abs_bw, (a,), a._be.xp)
    if node is not None:
        node.save(saved(node, a, 0))
    return out


def _abs_bw(node, g):  # torch's grad * self.sgn(): sgn takes self, with a zero derivative
    (saved_x,) = unpack(node, g)
    xp, x, dt = node.info, array(saved_x), array(g).dtype
    sgn = xp.astype(x > 0, dt) - xp.astype(x < 0, dt)  # 0 for nan, where numpy's sign gives nan
    return (diagonal(g, lambda a: a * sgn, "MulBackward0", saved_x),)


def clamp(a, min=None, max=None):           # saves: self
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    xp = a._be.xp       # the result's dtype is promoted with the bounds, as torch's
    want = dtypes.result_type([a] + [v for v in (min, max) if v is not None])
    x = a._data if want is a._dtype else _cast(a, want)
    out_arr = x
    if min is not None:
        out_arr = xp.maximum(out_arr, xp.asarray(min, dtype=x.dtype))
    if max is not None:
        out_arr = xp.minimum(out_arr, xp.asarray(max, dtype=x.dtype))
    out, node = record(out_arr, a._be, "ClampBackward1", _clamp_bw, (a,), (min, max, xp))
    if node is not None:
        node.save(saved(node, a, 0))
    return out


def _clamp_bw(node, g):  # torch's where(mask, grad, 0): a mask of self, not a function of it
    x = array(node.unpack()[0])
    lo, hi, xp = node.info
    keep = xp.ones(x.shape, dtype=xp.bool)
    if lo is not None:
        keep = keep & (x >= lo)
    if hi is not None:
        keep = keep & (x <= hi)
    return (diagonal(g, lambda a: xp.where(keep, a, xp.zeros_like(a)), "WhereBackward0"),)


# ======================= comparisons (no graph; for control flow, GRAPH-8) =======================

def compare(op):
    def fn(a, b):
        x, y, be = _operands(a, b)
        return wrap(be, op(x, y))
    return fn
