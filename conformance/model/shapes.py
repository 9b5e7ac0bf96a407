"""Shape rules of the model: broadcasting, matmul, indexing, and the views a tensor admits."""
from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from .tables import SHAPES
from .tensors import T

# Shapes a view may take besides the leaf shapes (reshape to a different rank).
_VIEW_SHAPES = SHAPES + [(4,), (6,), (1,), (1, 1)]


def numel(shape: Iterable[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


@functools.cache
def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The broadcast shape of a and b; None when they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


@functools.cache
def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape of a @ b for 1-d and 2-d operands; None when they do not fit."""
    if not a or not b or len(a) > 2 or len(b) > 2:
        return None
    if a[-1] != (b[0] if len(b) == 2 else b[-1]):
        return None
    return a[:-1] + b[1:]


def index_shape(shape: tuple[int, ...], index: list[Any]) -> tuple[int, ...]:
    """The shape of x[index] (INDEX encoding of conformance/program.py): an int takes its
    dim, a slice keeps it, None adds a dim of 1, "..." stands for the dims no item takes."""
    real = sum(1 for item in index if item is not None and not isinstance(item, str))
    out: list[int] = []
    d = 0
    for item in index:
        if item is None:
            out.append(1)
        elif isinstance(item, str):         # "...": the dims the other items leave
            skip = len(shape) - real
            out.extend(shape[d:d + skip])
            d += skip
        elif isinstance(item, dict):
            start, stop, step = item["slice"]
            out.append(len(range(*slice(start, stop, step).indices(shape[d]))))
            d += 1
        else:
            d += 1
    return tuple(out) + shape[d:]


def writes_itself(shape: tuple[int, ...], index: list[Any]) -> bool:
    """Whether `x[index] = v` writes x itself (a copy_ into x), not a view of it through a
    CopySlices: every item "..." or a slice torch does not apply, from 0 (or None) to the dim's
    end or past it, step 1 (FREE-3: `t[0:n]`, `t[...]` and `t[0:100]` do, `t[-n:]` does not)."""
    d = 0
    for item in index:
        if isinstance(item, str):
            d = len(shape) - sum(1 for i in index if not isinstance(i, str)) + d
            continue
        if not isinstance(item, dict):
            return False
        start, stop, step = item["slice"]
        if start not in (None, 0) or step not in (None, 1) or (
                stop is not None and (d >= len(shape) or stop < shape[d])):
            return False
        d += 1
    return True


ViewOption = tuple[str, dict[str, Any], tuple[int, ...]]


def view_options(a: T, inferred: bool = False, squeezes: bool = False,
                 units: bool = False, parts: bool = False) -> tuple[ViewOption, ...]:
    """(fn, kw, result shape) of every view of a the generator draws from, in draw order;
    `inferred` adds the forms with a size of -1 (reshape and view infer it, expand keeps the
    dim), `squeezes` (vocabulary 4) squeeze without a dim, squeeze of a 0-d tensor and transpose
    by negative dims, `units` (vocabulary 5) `view` with a size-1 dim put in or taken out,
    which works whatever the strides (torch's computeStride gives a size-1 dim any stride), so
    it is drawn on non-contiguous tensors too; `parts` (vocabulary 7) narrow and select. The
    options are shared between calls: copy the kw of the one you use (copy_kw)."""
    opts = _view_options(a.shape, a.contiguous)
    if inferred:
        opts += _inferred(a.shape, a.contiguous)
    if squeezes:
        opts += _squeezes(a.shape)
    if units:
        opts += unit_views(a.shape)
    return opts + _parts(a.shape) if parts else opts


@functools.cache
def _parts(shape: tuple[int, ...]) -> tuple[ViewOption, ...]:
    """narrow(dim, start, length) and select(dim, index) along each dim (VIEW-5): the whole
    dim, its first part, its last element, by a dim counted from either end."""
    opts: list[ViewOption] = []
    for d, n in enumerate(shape):
        dim = d if d % 2 == 0 else d - len(shape)
        rest = shape[:d] + shape[d + 1:]
        spans = [(0, n)] + ([(0, n - 1), (n - 1, 1)] if n > 1 else [])
        for start, length in spans:
            opts.append(("narrow", {"dim": dim, "start": start, "length": length},
                         shape[:d] + (length,) + shape[d + 1:]))
        for index in ([0, -1] if n > 1 else [0]):
            opts.append(("select", {"dim": dim, "index": index}, rest))
    return tuple(opts)


def part_contiguous(fn: str, kw: dict[str, Any], shape: tuple[int, ...]) -> bool:
    """Whether narrow / select of a contiguous tensor of `shape` is contiguous: its strides
    are the input's, so only when every dim before the one cut has size 1, or the cut keeps
    the whole dim (narrow) or a dim of size 1 (select)."""
    d = kw["dim"] % len(shape)
    whole = kw["length"] == shape[d] if fn == "narrow" else shape[d] == 1
    return whole or all(n == 1 for n in shape[:d])


@functools.cache
def unit_views(shape: tuple[int, ...]) -> tuple[ViewOption, ...]:
    """`view` with a size-1 dim put in or taken out: torch allows it whatever the strides."""
    opts: list[ViewOption] = []
    for d in range(len(shape) + 1):
        s = shape[:d] + (1,) + shape[d:]
        opts.append(("view", {"shape": list(s)}, s))
    for d, n in enumerate(shape):
        if n == 1:
            s = shape[:d] + shape[d + 1:]
            opts.append(("view", {"shape": list(s)}, s))
    return tuple(opts)


@functools.cache
def _squeezes(shape: tuple[int, ...]) -> tuple[ViewOption, ...]:
    opts: list[ViewOption] = [("squeeze", {}, tuple(s for s in shape if s != 1))]
    if not shape:
        opts += [("squeeze", {"dim": 0}, ()), ("squeeze", {"dim": -1}, ())]
    if len(shape) == 2:
        opts.append(("transpose", {"dims": [-1, 0]}, (shape[1], shape[0])))
    return tuple(opts)


@functools.cache
def _inferred(shape: tuple[int, ...], contiguous: bool) -> tuple[ViewOption, ...]:
    opts: list[ViewOption] = []
    size = numel(shape)
    for s in _VIEW_SHAPES:
        if s != shape and numel(s) == size and s:
            sizes = [-1, *s[1:]]
            opts.append(("reshape", {"shape": sizes}, s))
            if contiguous:
                opts.append(("view", {"shape": sizes}, s))
    if 1 in shape:
        opts.append(("expand", {"size": [3 if x == 1 else -1 for x in shape]},
                     tuple(3 if x == 1 else x for x in shape)))
    elif shape and len(shape) < 2:
        opts.append(("expand", {"size": [2, -1]}, (2, *shape)))
    return tuple(opts)


def copy_kw(kw: dict[str, Any]) -> dict[str, Any]:
    """A view option's kw, as a statement's own (its lists copied)."""
    return {k: list(v) if isinstance(v, list) else v for k, v in kw.items()}


@functools.cache
def _view_options(shape: tuple[int, ...], contiguous: bool) -> tuple[ViewOption, ...]:
    opts: list[ViewOption] = []
    size, ndim = numel(shape), len(shape)
    for s in _VIEW_SHAPES:
        if s != shape and numel(s) == size:
            opts.append(("reshape", {"shape": list(s)}, s))
            if contiguous:
                opts.append(("view", {"shape": list(s)}, s))
    if ndim <= 2:
        opts.append(("t", {}, tuple(reversed(shape))))
    if ndim == 2:
        opts.append(("transpose", {"dims": [0, 1]}, (shape[1], shape[0])))
    for d in range(-ndim - 1, ndim + 1):
        dd = d % (ndim + 1)
        opts.append(("unsqueeze", {"dim": d}, shape[:dd] + (1,) + shape[dd:]))
    for d in range(ndim):
        opts.append(("squeeze", {"dim": d},
                     shape[:d] + shape[d + 1:] if shape[d] == 1 else shape))
    if 1 in shape:
        s = tuple(3 if x == 1 else x for x in shape)
        opts.append(("expand", {"size": list(s)}, s))
    elif ndim < 2:
        opts.append(("expand", {"size": [2, *shape]}, (2, *shape)))
    return tuple(opts)


# Shapes of three dims a view may take from vocabulary 11 (gen/layouts.py): views and reshapes
# to and from them are the only ones whose strides torch computes over three dims
_SOLID_SHAPES = [(1, 2, 3), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1), (1, 3, 2),
                 (1, 2, 2), (2, 1, 2), (2, 2, 1), (1, 1, 3), (3, 1, 1), (1, 3, 1)]


@functools.cache
def solid_views(shape: tuple[int, ...]) -> tuple[ViewOption, ...]:
    """Views of a contiguous tensor of two dims that make a non-contiguous tensor or one of
    three dims: t and transpose, narrow of the last dim (its first or last part), unsqueeze,
    and view and reshape to each shape of three dims of its size."""
    opts: list[ViewOption] = []
    if len(shape) == 2:
        rev = (shape[1], shape[0])
        opts += [("t", {}, rev), ("transpose", {"dims": [0, 1]}, rev)]
        if shape[1] > 1:
            n = shape[1] - 1
            opts += [("narrow", {"dim": 1, "start": 0, "length": n}, (shape[0], n)),
                     ("narrow", {"dim": -1, "start": 1, "length": n}, (shape[0], n))]
    for d in range(len(shape) + 1):
        opts.append(("unsqueeze", {"dim": d}, shape[:d] + (1,) + shape[d:]))
    for s in _SOLID_SHAPES:
        if numel(s) == numel(shape):
            opts += [("view", {"shape": list(s)}, s), ("reshape", {"shape": list(s)}, s)]
    return tuple(opts)


@functools.cache
def rank_views(shape: tuple[int, ...], contiguous: bool) -> tuple[ViewOption, ...]:
    """reshape to each other shape of the same size, of one to three dims, and view to it
    where the tensor is contiguous (a view of a non-contiguous tensor that merges or splits
    dims is refused by torch unless its strides allow it, which the model does not track)."""
    opts: list[ViewOption] = []
    for s in _VIEW_SHAPES + _SOLID_SHAPES:
        if s and s != shape and numel(s) == numel(shape):
            if contiguous:
                opts.append(("view", {"shape": list(s)}, s))
            opts.append(("reshape", {"shape": list(s)}, s))
    return tuple(opts)


@functools.cache
def merged_views(shape: tuple[int, ...]) -> tuple[ViewOption, ...]:
    """view and reshape of a contiguous tensor that merge two neighbouring dims into one, and
    view to one dim: the strides torch finds for them by merging dims chunk by chunk."""
    opts: list[ViewOption] = []
    for d in range(len(shape) - 1):
        s = shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2:]
        opts += [("view", {"shape": list(s)}, s), ("reshape", {"shape": list(s)}, s)]
    return (*opts, ("view", {"shape": [-1]}, (numel(shape),)))


@functools.cache
def broadcast_values(shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Shapes other than `shape` that broadcast to it: with a leading 1, without the first dim,
    and with one dim of size 1 in place of a larger one (a setitem's value, vocabulary 11)."""
    opts = [(1, *shape), shape[1:]] + [shape[:d] + (1,) + shape[d + 1:]
                                       for d, n in enumerate(shape) if n > 1]
    return tuple(dict.fromkeys(s for s in opts if s != shape))
