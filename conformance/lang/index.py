"""The INDEX encoding of getitem and setitem statements: a list of items, each an int,
{"slice": [start, stop, step]} (null for absent), "..." or null (a new dim of size 1); as a
Python index and as the source between the brackets of `t[...]`."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class OpError(ValueError):
    """A statement names an op that is not a row of the op table (for its statement kind),
    gives it a setting that cannot be written as a Python literal, or indexes with an item
    that is not one of the INDEX encoding's."""


ELLIPSIS = "..."        # the item for `...`; null is `None` (a new dim of size 1)


def index_value(items: Sequence[Any]) -> tuple[Any, ...]:
    """INDEX encoding -> a Python index: a tuple of ints, slices, Ellipsis and None."""
    return tuple(slice(*i["slice"]) if isinstance(i, dict) else
                 Ellipsis if i == ELLIPSIS else i for i in items)


def _int(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        raise OpError(f"index item {v!r} is not an int")
    return repr(v)


def _bound(v: Any) -> str:
    return "" if v is None else _int(v)


def index_source(items: Sequence[Any], as_tuple: bool = False) -> str:
    """The text between the brackets of `t[...]` for INDEX items (or a Python index), e.g.
    `0, 1:3` or `..., None`. With as_tuple, a tuple display: `0,` and every slice with both
    colons."""
    out = []
    for i in items:
        if isinstance(i, (dict, slice)):
            start, stop, step = i["slice"] if isinstance(i, dict) else (i.start, i.stop, i.step)
            text = f"{_bound(start)}:{_bound(stop)}"
            out.append(text + (f":{_bound(step)}" if as_tuple or step is not None else ""))
        elif i is Ellipsis or (isinstance(i, str) and i == ELLIPSIS):
            out.append("...")
        elif i is None:
            out.append("None")
        else:
            out.append(_int(i))
    if not out:
        return "()"
    return ", ".join(out) + ("," if as_tuple and len(out) == 1 else "")
