"""`gradspec replay PATH [PATH ...]`: saved programs rerun on an engine and the oracle, each in a
worker process as a campaign runs each of its programs (`replay`).

A PATH is a program.json, a divergence folder holding one, or a folder of such folders: a
run's `divergences/`, or the run's output folder (the program.json files one or two levels
below it, in path order). Every program is read and validated, and every engine named
loaded, before any runs: a mistake in any of them is one line and exit 2. One program prints
the traces side by side (reports/replay.py); several print one line each, under a progress
line on a terminal, and a count. Each runs on the engine, oracle and device its folder's
divergence.json records unless --engine, --oracle or --device say otherwise.

Exit status: the worst of the programs': 3 could not judge one (a crash, a hang, the oracle's
failure, a harness error), else 1 if one diverges, else 0.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engines import EngineError
from ..spec.reader import load_spec
from .limits import device, seconds

if TYPE_CHECKING:
    from ..lang.program import Program

HELP = "rerun saved programs on an engine and the oracle"


class _Usage(Exception):
    """A mistake in the input: one line, exit 2."""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="+", help="a program.json, a divergence folder holding one, "
                   "or a folder of them (the program.json files one or two levels below it)")
    p.add_argument("--engine", default=None, help="engine to run them on (default: the one "
                   "divergence.json beside each program records, else refimpl)")
    p.add_argument("--oracle", default=None, help="the reference (default: as recorded, else "
                   "torch)")
    p.add_argument("--device", type=device, default=None, help="cpu or cuda (default: as "
                   "recorded, else cpu)")
    p.add_argument("--timeout", type=seconds, default=10.0,
                   help="seconds before a program counts as a hang (default 10)")
    p.add_argument("--quiet", action="store_true", help="no progress line")


def run(args: argparse.Namespace) -> int:
    """The command: 0, 1, 3 as the module says; 2 for bad input (one line on stderr)."""
    try:
        load_spec()     # now, in one line (SpecError), not in a worker's error classification
        return _replay(args)
    except _Usage as exc:
        print(f"gradspec: error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2


def program_files(paths: list[str]) -> list[Path]:
    """The program.json files the PATHs name, in the order given (each folder's in path
    order), each once."""
    found: dict[Path, Path] = {}       # resolved -> as given: each file once, however named
    for text in paths:
        path = Path(text)
        if path.is_dir() and not (path / "program.json").is_file():
            # a run's divergences/ (one level down) or the run's --out folder (two levels)
            below = sorted({*path.glob("*/program.json"), *path.glob("*/*/program.json")})
            if not below:
                raise _Usage(f"cannot read {path / 'program.json'}: no such file, nor in the "
                             f"folders one or two levels below {path}")
            for f in below:
                found.setdefault(f.resolve(), f)
        else:
            f = path / "program.json" if path.is_dir() else path
            found.setdefault(f.resolve(), f)
    return list(found.values())


def _load(path: Path, args: argparse.Namespace
          ) -> tuple[Any, str, str, str, bool, tuple[str, ...] | None]:
    """(program, engine, oracle, device, whether the engines are as recorded, the classes the
    run judged where the engine is the recorded one: its --classes)."""
    from ..lang.validate import ProgramError, load, read_input
    from ..reports.classes import ClassError, parse
    from ..reports.replay import recorded
    try:        # validated before any engine is loaded: a bad file runs nothing
        program = load(read_input(path))
    except OSError as exc:
        raise _Usage(f"cannot read {path}: {exc.strerror or exc}") from None
    except ProgramError as exc:
        raise _Usage(f"{path}: {exc}") from None
    try:
        rec = recorded(path)
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    if "internal" in rec and not program.statements:    # its source failed: nothing to run
        raise _Usage(f"{path.parent}: the run could not judge this program, and it holds none "
                     f"to replay (gradspec failed: {rec['internal']})")
    try:
        dev = args.device or (device(rec["device"]) if "device" in rec else "cpu")
    except argparse.ArgumentTypeError as exc:
        raise _Usage(f"{path.parent / 'divergence.json'}: device {exc}") from None
    for role in ("engine", "oracle"):
        if not getattr(args, role) and role in rec:
            _named(rec[role], role, path.parent / "divergence.json")
    try:
        classes = parse(rec["classes"]) if "classes" in rec and args.engine in (
            None, rec.get("engine")) else None
    except ClassError as exc:
        raise _Usage(f"{path.parent / 'divergence.json'}: classes: {exc}") from None
    return (program, args.engine or rec.get("engine", "refimpl"),
            args.oracle or rec.get("oracle", "torch"), dev,
            bool(rec) and not (args.engine and args.oracle), classes)


def _named(spec: str, role: str, meta: Path) -> None:
    """An engine a divergence.json records is replayed on only where it is one gradspec knows
    by name (a built-in or an installed entry point): an import path there names a module
    that loading would import, whatever the file's author put beside it, so it must come from
    the command line."""
    from ..engines import every_engine_name
    if spec.strip() not in every_engine_name():
        raise _Usage(f"{meta}: records the {role} {spec!r}, which is not an engine gradspec "
                     f"knows by name: give it with --{role} to replay on it (a file's word "
                     f"does not make gradspec import a module)")


def _replay(args: argparse.Namespace) -> int:
    from ..engines import EngineError, load_engine
    from ..reports.replay import print_replay
    from .pool import start_method
    jobs = [(path, *_load(path, args)) for path in program_files(args.file)]
    try:        # each engine loaded here first: a bad name is one line before any worker
        needed = [(spec, dev) for _, _, engine, oracle, dev, *_ in jobs
                  for spec in (engine, oracle)]
        for spec, dev in dict.fromkeys(needed):
            load_engine(spec, dev)
        for _, _, engine, oracle, dev, *_ in jobs:  # and a bad GRADSPEC_START_METHOD
            start_method([engine, oracle], dev)
    except EngineError as exc:
        raise _Usage(str(exc)) from None
    if len(jobs) == 1:
        path, program, engine, oracle, dev, as_recorded, classes = jobs[0]
        if as_recorded:
            print(f"replaying on {engine} against {oracle}, as recorded")
        try:
            return print_replay(program, _judged_as(replay(program, engine, oracle, dev,
                                                           args.timeout), classes), engine)
        except EngineError as exc:
            raise _Usage(str(exc)) from None
    return _replay_many(jobs, args)


def _judged_as(result: dict[str, Any], classes: tuple[str, ...] | None) -> dict[str, Any]:
    """A replay's result judged by the classes its run judged (its --classes), where known."""
    if classes is not None and "classes" in result:
        result["classes"] = list(classes)
    return result


def _replay_many(jobs: list[tuple[Any, ...]], args: argparse.Namespace) -> int:
    from ..engines import EngineError
    from ..reports.progress import Bar
    from ..reports.replay import judged_line
    counts = {"agree": 0, "diverge": 0, "could not judge": 0}
    worst = 0
    with Bar(len(jobs), "programs", "replay", False if args.quiet else None) as bar:
        for path, program, engine, oracle, dev, _, classes in jobs:
            try:
                code, line = judged_line(_judged_as(replay(program, engine, oracle, dev,
                                                           args.timeout), classes))
            except EngineError as exc:      # its workers could not start the engines
                code, line = 3, f"could not judge: {exc}"
            counts[("agree", "diverge", "", "could not judge")[code]] += 1
            worst = max(worst, code)
            bar.advance(note=f"{counts['diverge']} diverge")
            bar.write(f"{path}: {engine} vs {oracle}: {line}")
    print(f"replayed {len(jobs)} programs: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return worst


def replay(program: Program, engine_spec: str, oracle_spec: str, device: str = "cpu",
           timeout: float = 10.0) -> dict[str, Any]:
    """Run one program on the oracle and the engine in a worker process, as a campaign does:
    {"oracle", "engine" (traces), "divergences", "names"}, or for a crash or hang
    {"failure": a Divergence at the statement that was running} or {"oracle_failure": why},
    or {"internal": a gradspec traceback}. An engine that cannot load is an EngineError."""
    from . import worker  # on use: `gradspec --help` and the other commands need neither
    from .pool import Pool, PoolError, Task, context
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"timeout must be finite and positive, not {timeout!r}")
    out: dict[str, Any] = {}
    stmts = dict(program.walk())

    def failure(task: Task, what: str, detail: str, who: str, path: str) -> dict[str, Any]:
        r = worker.failure(None, what, detail, who, path)
        if "failure" in r and path in stmts:
            r["failure"].update(op=stmts[path].op, clauses=list(stmts[path].clauses))
        return r

    pool = Pool(context([engine_spec, oracle_spec], device), 1, worker.setup,
                (engine_spec, oracle_spec, device, {}), worker.work, failure)
    try:
        pool.run([Task(0, ("program", program.to_json()), timeout)],
                 lambda task, result: out.update(result))
    except PoolError as exc:
        raise EngineError(str(exc)) from None
    return out
