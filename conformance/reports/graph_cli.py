"""`gradspec graph PROGRAM --engine NAME [--at PATH] [--out FILE]`: the picture of a program's
backward graph on one engine (conformance/reports/graph.py), after statement PATH.

The program is read and validated as `gradspec replay` reads it (a program.json, or a folder
holding one) before any engine is loaded. Every mistake in the input (no such file, a bad
program, an unknown engine, an engine without grad_fn, no statement PATH, an output format
Graphviz does not know, no graphviz package) is one line on stderr and exit 2. Without --out
the DOT text goes to stdout; with it, FILE in the format its suffix names, or, where
Graphviz's `dot` program is absent, the DOT text beside it (FILE with the suffix .dot) and
one line on stderr saying so.

The program runs in this process, not in a worker as `replay` runs it: drawing needs the
engine's live tensors, and a crash or hang here costs only this command.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "draw the backward graph of a saved program on an engine (DOT, or SVG with Graphviz)"


class _Usage(Exception):
    """A mistake in the input: one line, exit 2."""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="a program.json, or a divergence folder holding one")
    p.add_argument("--engine", required=True, help="the engine to draw it on: a name or "
                   "package.module:factory")
    p.add_argument("--at", metavar="PATH", default=None, help="draw after statement PATH "
                   "(e.g. 3, or 5.0 in a block; default: the whole program)")
    p.add_argument("--out", metavar="FILE", default=None, help="write FILE, in the format its "
                   "suffix names (.svg, .png, .pdf, ...; .dot: the DOT text); default: the DOT "
                   "text on stdout")


def run(args: argparse.Namespace) -> int:
    """The command: 0 drawn, 2 bad input (one line on stderr)."""
    try:
        return _draw(args)
    except _Usage as exc:
        text = "\\n".join(str(exc).splitlines()) or "(no message)"
        print(f"gradspec: error: {text}", file=sys.stderr)
        return 2


def _draw(args: argparse.Namespace) -> int:
    from ..engines import EngineError, load_engine
    from ..lang.validate import ProgramError, load, read_input
    from . import graph  # imports the statement kinds, which `load` needs
    path = Path(args.file)
    if path.is_dir():
        path = path / "program.json"
    try:
        program = load(read_input(path))
    except OSError as exc:
        raise _Usage(f"cannot read {path}: {exc.strerror or exc}") from None
    except ProgramError as exc:
        raise _Usage(f"{path}: {exc}") from None
    out = Path(args.out) if args.out else None
    try:        # a bad PATH, like a bad file, before any engine is loaded
        graph.truncate(program, args.at)
    except graph.GraphError as exc:
        raise _Usage(f"--at {args.at}: {exc}") from None
    try:
        if out is not None and out.suffix.lstrip(".") not in graph.formats():
            raise _Usage(f"--out {out}: give a suffix Graphviz writes (.svg, .png, .pdf, ...) "
                         f"or .dot")
        engine = load_engine(args.engine)
        source = graph.to_dot(graph.capture(program, engine, args.at))
    except (graph.GraphError, EngineError) as exc:
        raise _Usage(str(exc)) from None
    if out is None:
        sys.stdout.write(source)
        return 0
    try:
        written, note = graph.render(source, out)
    except OSError as exc:
        raise _Usage(f"cannot write {out}: {exc.strerror or exc}") from None
    if note:
        print(f"gradspec: {note}", file=sys.stderr)
    print(written)
    return 0
