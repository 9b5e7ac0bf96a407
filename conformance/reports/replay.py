"""What `gradspec replay` reads beside a program and prints about it.

A divergence folder (conformance/reports/report.py, write_divergence) records in divergence.json
the engine, oracle and device its program ran on; `recorded` reads them, so that a replay of a
folder runs where the divergence was found. `print_replay` prints the result of one isolated
replay (conformance/campaign/runner.py, replay): both traces side by side, or the crash or hang
with the statement that was running, and returns the exit status (`judged_line`, which a
replay of several programs prints one line of each): 0 no divergence (or none in a class the
engine claims), 1 divergences, 3 could not judge (a crash or hang of either engine, a harness
error, a gradspec error).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..judge.compare import INTERNAL, Divergence, harness_errors
from ..judge.verdict import claimed, lead
from ..lang.program import Program
from ..lang.trace import Trace
from .report import EXIT_UNJUDGED, side_by_side


def recorded(program_path: Path) -> dict[str, str]:
    """The engine, oracle, device and conformance classes judged (comma-separated) that
    divergence.json beside `program_path` records, as far as it records them as text, and
    `internal`, why, where the run could not run the program; {} when there is no such file.
    ValueError when it cannot be read."""
    meta = program_path.parent / "divergence.json"
    if not meta.is_file():
        return {}
    try:
        data = json.loads(meta.read_bytes())
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {meta}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{meta}: not a JSON object")
    found = {}
    for k in ("engine", "oracle", "device", "classes"):
        if k in data and not isinstance(data[k], str):  # a field it has, unreadable: not
            raise ValueError(f"{meta}: {k} must be a string, got {data[k]!r}")  # guessed
        if k in data:
            found[k] = data[k]
    first = (data.get("divergences") or [None])[0]
    if isinstance(first, dict) and first.get("what") == INTERNAL:   # no program was judged
        found["internal"] = str(first.get("engine", ""))
    return found


def print_replay(program: Program, result: dict[str, Any], engine_spec: str) -> int:
    """Print what a replay found (one line on stderr when it could not judge); its exit
    status."""
    if "internal" in result:        # a gradspec bug: its traceback
        print(result["internal"].rstrip(), file=sys.stderr)
        return EXIT_UNJUDGED
    if "oracle_failure" in result:
        print(f"gradspec: could not judge: {result['oracle_failure']}", file=sys.stderr)
        return EXIT_UNJUDGED
    if "failure" in result:
        div = Divergence.from_json(result["failure"])
        print(side_by_side(program, None, None, [div]), end="")
        print(f"gradspec: could not judge: {engine_spec}: {div.what}: {div.engine}",
              file=sys.stderr)
        return EXIT_UNJUDGED
    o, e = Trace.from_json(result["oracle"]), Trace.from_json(result["engine"])
    found = [Divergence.from_json(d) for d in result["divergences"]]
    print(side_by_side(program, o, e, found), end="")
    harness = harness_errors(found)
    if harness:
        print(f"gradspec: could not judge: {len(harness)} statement(s) gradspec cannot "
              f"express; {harness[0]}", file=sys.stderr)
        return EXIT_UNJUDGED
    print(f"{len(found)} divergence(s) between {result['names'][1]} and {result['names'][0]}")
    code, line = judged_line(result)
    if found:
        print(line)
    return code


def judged_line(result: dict[str, Any]) -> tuple[int, str]:
    """The exit status (0, 1 or 3) of one replay's result and its line. A divergent program
    is judged as `gradspec run` judges it: by its lead divergence among the classes the
    engine claims (judge/verdict.py, `lead`); with none there it is not applicable (0)."""
    if "internal" in result:
        return EXIT_UNJUDGED, "could not judge: a gradspec error: " + \
            (result["internal"].strip().splitlines() or [""])[-1]
    if "oracle_failure" in result:
        return EXIT_UNJUDGED, f"could not judge: {result['oracle_failure']}"
    if "failure" in result:
        div = Divergence.from_json(result["failure"])
        return EXIT_UNJUDGED, f"could not judge: {div.what} at statement {div.path}: " \
                              f"{div.engine}"
    found = [Divergence.from_json(d) for d in result["divergences"]]
    harness = harness_errors(found)
    if harness:
        return EXIT_UNJUDGED, f"could not judge: {harness[0]}"
    if not found:
        return 0, "no divergence"
    classes = result.get("classes")
    first = lead(found, classes)
    where = f"statement {first.path} ({first.op}) {first.what}" + \
        (f" [{first.primary}]" if first.primary else "")
    if not any(claimed(d, classes) for d in found):
        return 0, (f"{len(found)} divergence(s), not applicable: of classes the engine does "
                   f"not claim; first: {where} (class {first.cls})")
    return 1, f"{len(found)} divergence(s); first: {where}"
