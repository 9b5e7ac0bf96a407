"""Progress of long commands on stderr: count, rate and time left, drawn by tqdm (a library,
rather than our own line: it measures the rate with smoothing, sizes the line to the terminal
and redraws it in place).

Every long command uses it: `gradspec run` and `matrix` (programs), `replay` of several
programs, `spec --html` (pages). It shows only when stderr is a terminal, unless told: a CI log
or a pipe gets the command's own output alone.
"""
from __future__ import annotations

import os
import sys
from typing import Any


def shown(asked: bool | None = None) -> bool:
    """Whether to draw progress: as `asked`, or (None) when stderr is a terminal."""
    return sys.stderr.isatty() if asked is None else asked


def _size() -> tuple[int, int]:
    """stderr's terminal size (columns, lines); 0 where unknown (tqdm then draws nothing)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return 0, 0
    return size.columns, size.lines


class Bar:
    """One progress line: `advance` it, `close` it (also a context manager)."""

    def __init__(self, total: int, unit: str, what: str | None = None,
                 show: bool | None = None):
        from tqdm import tqdm
        width, height = _size()     # a terminal that says it has no size gets 100 x 24
        self._bar: Any = tqdm(total=total, unit=f" {unit}", desc=what, file=sys.stderr,
                              disable=not shown(show), dynamic_ncols=width > 0,
                              ncols=None if width > 0 else 100,
                              nrows=None if height > 0 else 24, leave=True, smoothing=0.05,
                              mininterval=0.2)

    def to(self, done: int, note: str | None = None) -> None:
        """Show `done` of the total, with a `note` after the figures (divergent: 3)."""
        self._bar.update(done - self._bar.n)
        if note is not None:
            self._bar.set_postfix_str(note, refresh=False)

    def write(self, line: str) -> None:
        """Print `line` on stdout without breaking the progress line (it is redrawn below)."""
        if self._bar.disable:
            print(line, flush=True)
        else:
            self._bar.write(line, file=sys.stdout)

    def advance(self, n: int = 1, note: str | None = None) -> None:
        self.to(self._bar.n + n, note)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CampaignProgress:
    """The progress callback of a campaign (campaign/runner.py, Progress: done, total, failing,
    seconds): a Bar of programs named `what`, started at the first call and closed when all
    are done (or by `close`); a call that starts again from fewer starts a new line."""

    def __init__(self, show: bool | None = None, what: str | None = None):
        self.show, self.what = show, what
        self._bar: Bar | None = None
        self._done = 0

    def __call__(self, done: int, total: int, failing: int, seconds: float) -> None:
        if self._bar is None or done < self._done:
            self.close()
            self._bar = Bar(total, "programs", self.what, self.show)
        self._done = done
        self._bar.to(done, f"{failing} failing")
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
