"""How each argument form of the op table (conformance/lang/ops.py, `Op.form`) turns a row's
operands and settings into a call's positional and keyword arguments: one function per form,
shared by running an op (`ops.apply`) and writing it as source (`ops.source`)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# ---- argument forms: (row, operands after the target, kw) -> (positional, keyword) ---------
Args = tuple[list[Any], dict[str, Any]]


def _plain(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return list(ops), {}                                    # t.exp(), t.add_(b)


def _exponent(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return [*ops, kw["exponent"]], {}                       # t.pow(2)


def _bounds(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return list(ops), {"min": kw.get("min"), "max": kw.get("max")}   # t.clamp(min=, max=)


def _reduce(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    dim = kw.get("dim")                                     # t.sum(), t.sum((0,), keepdim=)
    if dim is None:
        return list(ops), {}
    dim = tuple(dim) if isinstance(dim, list) else dim
    return [*ops, dim], {"keepdim": bool(kw.get("keepdim", False))}


def _sizes(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    sizes = kw[row.kw[0]]                                   # t.reshape(2, 3), t.reshape(())
    return ([*ops, *sizes] if sizes else [*ops, ()]), {}


def _dims(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return [*ops, *kw["dims"]], {}                          # t.transpose(0, 1)


def _dim(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return [*ops, kw["dim"]], {}                            # t.unsqueeze(-1)


def _optional_dim(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    dim = kw.get("dim")                                     # t.squeeze(), t.squeeze(0)
    return (list(ops) if dim is None else [*ops, dim]), {}


def _dim_keepdim(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return [*ops, kw["dim"]], {"keepdim": bool(kw.get("keepdim", False))}  # t.max(0, keepdim=)


def _narrow(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return [*ops, kw["dim"], kw["start"], kw["length"]], {}  # t.narrow(0, 1, 2)


def _dim_index(row: Any, ops: Sequence[Any], kw: dict[str, Any]) -> Args:
    return [*ops, kw["dim"], kw["index"]], {}                # t.select(1, -1)


FORMS: dict[str, Callable[[Any, Sequence[Any], dict[str, Any]], Args]] = {
    "method": _plain, "exponent": _exponent, "bounds": _bounds, "reduce": _reduce,
    "sizes": _sizes, "dims": _dims, "dim": _dim, "optional_dim": _optional_dim,
    "dim_keepdim": _dim_keepdim, "narrow": _narrow, "dim_index": _dim_index,
}
