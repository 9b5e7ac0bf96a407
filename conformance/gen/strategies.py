"""Labelled-draw sources for the generator (conformance/gen/core.py).

The generator asks a Chooser for every decision, with a label that names the decision. Two
implementations: RandomChooser over random.Random(seed) (fast and deterministic, used by
`gradspec run` and the benchmark) and HypothesisChooser over Hypothesis's `data.draw` (used by
pytest, so that Hypothesis prints labelled draws and shrinks failing programs).

Options are listed simplest first: Hypothesis shrinks every draw towards option 0, so option 0
of a statement-kind draw is "skip" (weight 0: never drawn at random, only reached by shrinking).

`draws(chooser)` gives the four draw functions the generator calls (choice, boolean, weighted,
integer). For any chooser they are the module's functions below; a RandomChooser gives its own
faster ones, which consume the same random numbers and so draw the same values.
"""
from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class NoOptions(ValueError):
    """A draw from an empty table: where an engine lacks ops (gen/lacks.py), every op a draw
    could name may be lacked; the program is drawn again (`redrawn`)."""


class Chooser(Protocol):
    def integer(self, label: str, lo: int, hi: int) -> int:
        """An int in [lo, hi]; shrinks towards lo."""

    def weighted(self, label: str, options: Sequence[tuple[T, int]]) -> T:
        """One of the options, with integer weights; shrinks towards options[0]. A weight of 0
        is never drawn at random; options[0] may still be reached by shrinking."""


def choice(ch: Chooser, label: str, options: Sequence[T]) -> T:
    """A uniform choice; shrinks towards options[0]."""
    return ch.weighted(label, [(o, 1) for o in options])


def boolean(ch: Chooser, label: str, percent: int = 50) -> bool:
    """True with the given probability in percent; shrinks towards False."""
    return ch.weighted(label, ((False, 100 - percent), (True, percent)))


Draws = tuple[Callable[..., Any], Callable[..., bool], Callable[..., Any], Callable[..., int]]


def draws(ch: Chooser) -> Draws:
    """(choice, boolean, weighted, integer) drawing from ch, each without the chooser
    argument: the chooser's own fast ones when it has them."""
    own = getattr(ch, "draws", None)
    return own() if own is not None else _generic(ch)


class RandomChooser:
    fills = True        # the generator fills programs to their size (see gen/core.Gen.run)

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, label: str, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def weighted(self, label: str, options: Sequence[tuple[T, int]]) -> T:
        total = sum(w for _, w in options)
        r = self.rng.randrange(total)
        for value, w in options:
            if r < w:
                return value
            r -= w
        raise AssertionError("unreachable")

    def draws(self) -> Draws:
        """Fast draws that consume the same random numbers as the methods above: randrange(n)
        is `_randbelow(n)` (getrandbits of n's bit length until below n) after argument
        checks, randint(lo, hi) is lo + randrange(hi - lo + 1), a uniform choice is
        options[randrange(len)], and a weighted one bisects the cumulative weights (kept
        for constant tables)."""
        if random.Random._randbelow is not random.Random._randbelow_with_getrandbits:
            return _generic(self)       # another Python's random: no shortcut
        bits = self.rng.getrandbits
        tables = _TABLES

        def integer(label: str, lo: int, hi: int) -> int:
            n = hi - lo + 1
            if n <= 0:
                raise ValueError(f"empty range for {label!r}: [{lo}, {hi}]")
            k = n.bit_length()
            r = bits(k)
            while r >= n:
                r = bits(k)
            return lo + r

        def choice(label: str, options: Sequence[T]) -> T:
            n = len(options)
            if not n:
                raise NoOptions(f"no options for {label!r}")
            k = n.bit_length()
            r = bits(k)
            while r >= n:
                r = bits(k)
            return options[r]

        def boolean(label: str, percent: int = 50) -> bool:
            r = bits(7)
            while r >= 100:
                r = bits(7)
            return r >= 100 - percent

        def weighted(label: str, options: Sequence[tuple[T, int]]) -> T:
            entry = tables.get(id(options))
            if entry is None or entry[0] is not options:
                entry = _table(label, options)
            n, k = entry[3], entry[4]
            r = bits(k)
            while r >= n:
                r = bits(k)
            return entry[1][bisect.bisect_right(entry[2], r)]
        return choice, boolean, weighted, integer


def _generic(ch: Chooser) -> Draws:
    return ((lambda label, options: choice(ch, label, options)),
            (lambda label, percent=50: boolean(ch, label, percent)),
            ch.weighted, ch.integer)


# id(table) -> (table, values, cumulative weights, total, its bit length), for constant tables
_Table = tuple[Any, list[Any], list[int], int, int]
_TABLES: dict[int, _Table] = {}


def _table(label: str, options: Sequence[tuple[T, int]]) -> _Table:
    """(options, values, cumulative weights, total, the total's bit length) of a weighted
    table; remembered for tuples, which the generator keeps as constants (the entry holds the
    tuple, so its id stays its own while it is remembered)."""
    values = [v for v, _ in options]
    cum = list(itertools.accumulate(w for _, w in options))
    total = cum[-1] if cum else 0
    if total <= 0:
        raise NoOptions(f"no weight on any option of {label!r}")
    entry = (options, values, cum, total, total.bit_length())
    if type(options) is tuple:
        if len(_TABLES) > 1024:
            _TABLES.clear()
        _TABLES[id(options)] = entry
    return entry


class HypothesisChooser:
    """Draws through Hypothesis: either `data.draw` (the object `st.data()` gives a test;
    every draw is printed with its label) or the `draw` function of an `st.composite`
    strategy (about five times faster; Hypothesis then prints the finished program)."""

    def __init__(self, data_or_draw: Any):
        from hypothesis import strategies as st
        self._st = st
        self._labelled = hasattr(data_or_draw, "draw")
        self._draw = data_or_draw.draw if self._labelled else data_or_draw
        self._ints: dict[tuple[int, int], Any] = {}

    def _integers(self, lo: int, hi: int) -> Any:
        key = (lo, hi)
        if key not in self._ints:
            self._ints[key] = self._st.integers(lo, hi)
        return self._ints[key]

    def _take(self, strategy: Any, label: str) -> Any:
        return self._draw(strategy, label=label) if self._labelled else self._draw(strategy)

    def integer(self, label: str, lo: int, hi: int) -> int:
        if lo == hi:
            return lo
        return self._take(self._integers(lo, hi), label)

    def weighted(self, label: str, options: Sequence[tuple[T, int]]) -> T:
        # 0 maps to options[0] whatever its weight, so shrinking can always reach it.
        if not options:
            raise NoOptions(f"no options for {label!r}")
        total = sum(w for _, w in options)

        def pick(r: int) -> T:
            if r == 0:
                return options[0][0]
            r -= 1
            for value, w in options:
                if r < w:
                    return value
                r -= w
            raise AssertionError("unreachable")
        if self._labelled:   # mapped, so that Hypothesis prints the option, not an index
            return self._take(self._integers(0, total).map(pick), label)
        return pick(self._take(self._integers(0, total), label))
