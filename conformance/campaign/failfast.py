"""`gradspec run --maxfail N`: stop a campaign once N of its programs fail, as pytest's
--maxfail stops a session.

A program counts when it fails the run as the report judges it (campaign/entries.py,
fails_run): a divergence that no expected-failure entry excuses, of a class the engine claims
and on a clause the oracle's release has; a crash, a hang, an oracle failure or gradspec's
own error. So a stopped run never exits 0, and it exits 1 (or 3, could not judge) as the whole
run would have.

So that the report does not depend on --jobs or on timing, the run keeps the shortest prefix
of its programs, in seed order, that holds N failing ones: it stops when every program of that
prefix has finished, and the programs after it are dropped even where a worker had finished
them. The per-clause top-up (campaign/coverage.py) runs only when the campaign's own programs
did not reach N, and counts on from them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Enough(Exception):
    """Raised from a pool's finish callback when the prefix up to `index` holds the N-th
    failing program (campaign/programs.py catches it)."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


class StopAfter:
    """The failing programs counted so far, over the parts of one campaign (its own programs,
    then the top-up); `stopped` once the limit is reached."""

    def __init__(self, limit: int, fails: Callable[[int, dict[str, Any]], bool]):
        if limit < 1:
            raise ValueError(f"maxfail must be 1 or more, not {limit!r}")
        self.limit, self.fails = limit, fails
        self.failing = 0
        self.stopped = False
        self.at: Enough | None = None       # where it stopped, in the part that reached it

    def watch(self, seeds: list[int], results: list[dict[str, Any] | None]
              ) -> Callable[[], None]:
        """A check to call after each result of one part arrives: it walks the finished prefix
        of `results` (in seed order) and raises Enough at the limit."""
        cursor = 0

        def check() -> None:
            nonlocal cursor
            while cursor < len(results) and results[cursor] is not None:
                if self.fails(seeds[cursor], results[cursor]):  # type: ignore[arg-type]
                    self.failing += 1
                    if self.failing >= self.limit:
                        self.stopped, self.at = True, Enough(cursor)
                        raise self.at
                cursor += 1
        return check

    @staticmethod
    def truncate(results: list[dict[str, Any] | None], stop: Enough) -> None:
        """Drop the results after the prefix that reached the limit."""
        for i in range(stop.index + 1, len(results)):
            results[i] = None
