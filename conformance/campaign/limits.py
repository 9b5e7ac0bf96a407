"""The limits of a campaign's settings, and the argparse `type=` functions that hold the
command line to them: a bad value is refused while the flags are parsed, with one line,
before anything is deleted, allocated or started."""
from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

from ..engines import DEVICES

MAX_COUNT = 10_000_000      # programs per campaign (per engine for `matrix`)
MAX_SIZE = 10_000           # statements per program
MAX_JOBS = 512              # worker processes
MAX_TIMEOUT = 86_400.0      # seconds per program (a day)


def int_in(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high`."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: give {low} to {high}")
        return value
    return parse


def whole(text: str) -> int:
    """Any whole number (a seed)."""
    try:
        return int(text.strip())
    except ValueError:     # also more digits than int() converts
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None


def jobs(text: str) -> int:
    """A number of worker processes from 1 to MAX_JOBS, or 'auto' (one per CPU)."""
    if text.strip() == "auto":
        return min(os.cpu_count() or 1, MAX_JOBS)
    return int_in(1, MAX_JOBS)(text)


def seconds(text: str) -> float:
    """A finite, positive number of seconds, at most MAX_TIMEOUT."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise argparse.ArgumentTypeError(f"{text!r}: give a finite number of seconds above 0 "
                                         f"and at most {MAX_TIMEOUT:g}")
    return value


def device(text: str) -> str:
    """A device every engine can be asked for (DEVICES)."""
    if text not in DEVICES:
        raise argparse.ArgumentTypeError(f"unknown device {text!r} (choose from "
                                         f"{', '.join(DEVICES)})")
    return text


__all__ = ["MAX_COUNT", "MAX_JOBS", "MAX_SIZE", "MAX_TIMEOUT", "device", "int_in", "jobs",
           "seconds", "whole"]
