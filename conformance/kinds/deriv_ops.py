"""How a call of the ops of spec/deriv.md is drawn: comparisons, casts, selections, where.

These are the op families of generator vocabulary 4 (capability deriv_ops); `floor`, `sign`
and `round` are unary ops and drawn as those are. Each draw returns the op it settled on
(a cast to the operand's own dtype becomes the other float cast: that one returns its
operand itself, which the model does not alias) and the drawn operands in the form of
kinds/tensors.py's families: (args, tensor inputs, saved storages, shape, dtype, kw, clauses).
A result of dtype bool or int64 never requires grad (DERIV-1): the call records it so.

Operands of the ops whose results jump (ops.Op.jumps: comparisons, long, the selections) are
tensors both engines hold bit for bit (T.exact_now); the call draw picks the first one so.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..lang import ops
from ..model import T, broadcast
from ..model.tables import NUMBERS

FAMILIES = ("compare", "cast", "select", "where")
COMPARISONS = tuple(r.name for r in ops.OPS if r.family == "compare")
NONDIFF_DTYPES = ("bool", "int64")      # results that never require grad (DERIV-1)

Drawn = tuple[list[Any], list[T], list[Any], tuple[int, ...], str, dict[str, Any], list[str]]


def exact_operand(g: Any, label: str, fits: Callable[[T], bool] = lambda t: True) -> T | None:
    """A live float tensor that both engines hold bit for bit, and fits."""
    return g.pick(label, lambda t: t.is_float and t.exact_now() and fits(t))


FLOAT_CASTS = {r.dtype: r.name for r in ops.OPS if r.family == "cast" and r.dtype != "int64"}


def _compare(g, fn: str, a: T, emit) -> tuple[str, Drawn]:
    if g.boolean("number operand", 40):
        return fn, ([a.name, g.choice("number", NUMBERS)], [], [], a.shape, "bool", {}, [])
    b = exact_operand(g, "compared with", lambda t: broadcast(a.shape, t.shape) is not None) or a
    return fn, ([a.name, b.name], [], [], broadcast(a.shape, b.shape) or (), "bool", {}, [])


def _cast(g, fn: str, a: T, emit) -> tuple[str, Drawn]:
    dtype = ops.ROWS[fn].dtype
    if dtype == a.dtype:                # the other float cast: this one would return a itself
        dtype = "float32" if dtype == "float64" else "float64"
        fn = FLOAT_CASTS[dtype]
    return fn, ([a.name], [] if dtype == "int64" else [a], [], a.shape, dtype, {}, [])


def _reduced(g, a: T, dim_needed: bool) -> tuple[dict[str, Any], tuple[int, ...]]:
    """(kw, result shape) of a reduction along one drawn dim (always with `dim_needed`), or
    over everything; a 0-d tensor takes dim 0 or -1."""
    if not dim_needed and not g.boolean("reduce dim", 40):
        return {}, ()
    n = max(a.ndim, 1)
    dim, keep = g.integer("dim", -n, n - 1), g.boolean("keepdim", 30)
    d = dim % n
    shape = tuple(1 if i == d else s for i, s in enumerate(a.shape) if keep or i != d)
    return {"dim": dim, "keepdim": keep}, shape


def _select(g, fn: str, a: T, emit) -> tuple[str, Drawn]:
    row = ops.ROWS[fn]
    if row.form == "method":            # max(), min(): the input and the result are saved
        return fn, ([a.name], [a], [a.storage], (), a.dtype, {}, [])
    kw, shape = _reduced(g, a, row.form == "dim_keepdim")
    return fn, ([a.name], [a], [], shape, row.dtype or a.dtype, kw, [])


def _where(g, fn: str, a: T, emit) -> tuple[str, Drawn] | None:
    """a.where(condition, b): the condition a live bool tensor or a comparison drawn now."""
    cond = g.pick("condition", lambda t: t.dtype == "bool" and t.ndim <= a.ndim
                  and broadcast(a.shape, t.shape) == a.shape)
    if cond is None:
        c = exact_operand(g, "condition of", lambda t: t.shape == a.shape)
        if c is None:
            c = g.make_leaf(shape=a.shape, dtype=a.dtype, rg=False)
        if not emit(g, g.choice("comparison", COMPARISONS), c):
            return None
        cond = g.tensors[g.out[-1].out]         # its shape: a's broadcast with another's
    shape = broadcast(a.shape, cond.shape) or a.shape
    b = g.pick("other operand", lambda t: t.dtype == a.dtype
               and broadcast(shape, t.shape) == shape) or a
    return fn, ([a.name, cond.name, b.name], [a, b], [], shape, a.dtype, {}, [])


_DRAWS = {"compare": _compare, "cast": _cast, "select": _select, "where": _where}


def draw(g: Any, fn: str, a: T, emit: Callable[[Any, str, T], bool]
         ) -> tuple[str, Drawn] | None:
    """(the op, its drawn operands) of fn with a as its first operand; `emit` emits a call
    of another op with a given first operand (a comparison for where's condition)."""
    return _DRAWS[ops.ROWS[fn].family](g, fn, a, emit)
