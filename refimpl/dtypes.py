"""dtypes and torch's type promotion for the four dtypes in scope (float32, float64, int64, bool).

Promotion follows torch: dimensioned tensors outrank 0-d tensors, which outrank Python scalars,
unless the lower tier has a higher category (bool < integer < floating). A Python float meeting
an integer tensor gives the default dtype, float32.
"""
from __future__ import annotations

from . import errors


class dtype:
    def __init__(self, name, rank, category, c_name, legacy):
        self.name, self.rank, self.category = name, rank, category
        self.c_name, self.legacy = c_name, legacy  # torch's C++ and legacy type names
        self.is_floating_point = category == 2
        self.itemsize = {"bool": 1, "int64": 8, "float32": 4, "float64": 8}[name]

    def __repr__(self):
        return f"torch.{self.name}"


bool_ = dtype("bool", 0, 0, "bool", "torch.BoolTensor")
int64 = dtype("int64", 1, 1, "long", "torch.LongTensor")
float32 = dtype("float32", 2, 2, "float", "torch.FloatTensor")
float64 = dtype("float64", 3, 2, "double", "torch.DoubleTensor")
ALL = (bool_, int64, float32, float64)
BY_NAME = {d.name: d for d in ALL}


def of_scalar(v) -> dtype:
    if isinstance(v, bool):
        return bool_
    return int64 if isinstance(v, int) else float32


def result_type(tensors_and_scalars) -> dtype:
    """torch.result_type over tensors (objects with _dtype and ndim) and Python scalars."""
    tiers = [None, None, None]  # dimensioned tensors, 0-d tensors, Python scalars
    for v in tensors_and_scalars:
        if hasattr(v, "_dtype"):
            d, tier = v._dtype, (0 if v._data.ndim else 1)
        else:
            d, tier = of_scalar(v), 2
        cur = tiers[tier]
        tiers[tier] = d if cur is None or d.rank > cur.rank else cur
    out = None
    for d in tiers:
        if d is None:
            continue
        if out is None:
            out = d
        elif d.category > out.category:
            out = d  # a higher category from a lower tier wins (a Python float is float32)
    return out


def grad_dtype_set(t, value) -> dtype | None:
    """The grad_dtype `t.grad_dtype = value` sets (LEAF-9, LEAF-13), checked as torch 2.13
    checks it: a dtype or None; a leaf (the setter reads `.grad` first, so a non-leaf that
    does not retain its gradient warns NONLEAF_GRAD_ACCESS before it refuses, RETAIN-7); a
    `.grad` already there of another dtype refused."""
    if value is not None and not isinstance(value, dtype):
        raise RuntimeError("grad_dtype must be a torch.dtype or None, but got "
                           f"{type(value).__name__}")
    held = t.grad
    if t.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and held is not None and held._dtype is not value:
        raise errors.grad_dtype_conflict(value, held._dtype)
    return value


def alpha_value(operands, alpha):
    """The `alpha` of `add`/`sub`, a number (alpha_number), as torch's alpha_check checks it
    against the result's dtype: a bool only for a bool result, a float not for an integer one,
    never a complex number. A bool result takes it as a bool, so `a + alpha * b` stays a bool."""
    out = result_type(operands)
    if isinstance(alpha, bool) and out is not bool_:
        raise errors.alpha_bool()
    if isinstance(alpha, (float, complex)) and not out.is_floating_point:
        raise errors.alpha_float_integral()
    if isinstance(alpha, complex):
        raise errors.alpha_complex()
    return bool(alpha) if out is bool_ else alpha


def alpha_number(op: str, alpha):
    """`alpha` as torch's argument parser takes it, before any other check: a Python number,
    or a 0-d tensor read as its number."""
    if hasattr(alpha, "_dtype") and alpha._data.ndim == 0:
        alpha = alpha.item()
    if not isinstance(alpha, (int, float, complex)):
        raise errors.alpha_not_number(op, alpha)
    return alpha
