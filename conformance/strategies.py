"""Labelled-draw sources for the generator (conformance/generate.py).

The generator asks a Chooser for every decision, with a label that names the decision. Two
implementations: RandomChooser over random.Random(seed) (fast and deterministic, used by
`gradspec run` and the benchmark) and HypothesisChooser over Hypothesis's `data.draw` (used by
pytest, so that Hypothesis prints labelled draws and shrinks failing programs).

Options are listed simplest first: Hypothesis shrinks every draw towards option 0, so option 0
of a statement-kind draw is "skip" (weight 0: never drawn at random, only reached by shrinking).
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


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


class RandomChooser:
    fills = True        # the generator fills programs to their size (see generate.Gen.run)

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
