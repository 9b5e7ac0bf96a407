"""The `gradspec` command line.

Every user error (bad clause ID, bad engine name, corrupt file) ends in one line on stderr and
exit code 2; a traceback from deep inside is a bug. `run` and `replay` exit 0 (no divergence),
1 (divergences) or 3: could not judge, or could not express a statement of a program (a
harness error: gradspec's own mistake, never the engine's)."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .campaign import limits, signals
from .campaign import replay as replay_cli
from .campaign.limits import device, seconds
from .importpath import current_folder_last
from .reports import graph_cli
from .spec import commands as spec_commands
from .spec.reader import SpecError

EXIT_HARNESS = 3    # could not judge: gradspec could not express a statement (a harness error)


class UsageError(Exception):
    """A mistake by the user; printed as one line, exit code 2."""


# Subcommands register here with @command.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int]]] = {}


def command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None]):
    def deco(fn: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (help, configure, fn)
        return fn
    return deco


def _write_site(out: Path) -> list[Path]:
    from .reports.site import write_site  # on use: only `spec --html` needs it
    return write_site(out)


spec_commands.register(command, _write_site)


def _campaign_options(p: argparse.ArgumentParser, count: int, what: str, out: str) -> None:
    """Options shared by `run` and `matrix`: who is compared, and how much is generated."""
    p.add_argument("--oracle", default="torch", help="the reference (default torch)")
    p.add_argument("--device", type=device, default="cpu", help="cpu or cuda (default cpu)")
    p.add_argument("--seed", type=limits.whole, default=0, help="campaign seed (default 0)")
    p.add_argument("--count", type=limits.int_in(1, limits.MAX_COUNT), default=count,
                   help=f"{what} (default {count}, at most {limits.MAX_COUNT:,})")
    p.add_argument("--size", type=limits.int_in(1, limits.MAX_SIZE), default=20,
                   help=f"statements per program (default 20, at most {limits.MAX_SIZE:,})")
    p.add_argument("-n", "--jobs", type=limits.jobs, default=1,
                   help=f"worker processes, or 'auto' (default 1, at most {limits.MAX_JOBS})")
    p.add_argument("--timeout", type=seconds, default=10.0,
                   help="seconds per program before it counts as a hang (default 10; finite, "
                   f"above 0, at most {limits.MAX_TIMEOUT:g})")
    p.add_argument("--out", default=out, help=f"output folder (default {out})")


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default="refimpl", help="engine under test: a name or "
                   "package.module:factory (default refimpl)")
    _campaign_options(p, 300, "programs", "gradspec-out")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", type=_address,
                   help="run the programs on the Dask cluster whose scheduler is at ADDRESS "
                   "(tcp://host:8786) instead of local worker processes; needs "
                   "gradspec[cluster] (README.md, 'Campaigns on a cluster')")
    p.add_argument("--no-shrink", action="store_true", help="report programs unminimized")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.add_argument("--source", default=None, help="programs from package.module:function "
                   "(seed, capabilities, size) -> Program instead of the generator")
    p.add_argument("--xfail", default=None, metavar="FILE",
                   help="expected failures: lines 'ID [@ENGINE,...] REASON', ID a clause, "
                   "seed:N, an error kind, sig:SIGNATURE, class:CLASS or a pytest node ID "
                   "(format: conformance/judge/xfail.py)")
    p.add_argument("--no-probe", action="store_true",
                   help="do not probe the capabilities the engine declares absent")
    p.add_argument("--max-unjudged", type=_fraction, default=None, metavar="FRACTION",
                   help="the fraction of programs that may crash or time out before the run "
                   "cannot be judged, exit 3 (default 0.01)")
    p.add_argument("--classes", type=_classes, default=None, metavar="CLASS,...",
                   help="judge these conformance classes (core, torch-observable, diagnostics) "
                   "instead of those the engine claims; divergences of the others are not "
                   "applicable")
    p.add_argument("--per-clause", type=limits.int_in(0, 10_000), default=None, metavar="N",
                   help="after the --count programs, run further programs of the same stream "
                   "until every clause a program can exercise is in N of them, reading at "
                   "most 1,500 more (default 20 when --count is 300 or more and no --source "
                   "is given, else 0: off)")
    p.add_argument("--maxfail", type=limits.int_in(1, limits.MAX_COUNT), default=0,
                   metavar="N", help="stop after N failing programs (the first N in seed "
                   "order, whatever -n: the same report serially and in parallel); the run "
                   "then exits 1, or 3 if it could not judge")
    p.add_argument("-x", "--exitfirst", dest="maxfail", action="store_const", const=1,
                   help="stop after the first failing program (--maxfail 1)")


def _address(text: str) -> str:
    """An argparse `type=`: a scheduler address, not empty (an unset $VAR must not mean a
    local run); its form is checked on use (campaign/cluster.py, check_address)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give host:port or tcp://host:port")
    return text.strip()


def _classes(text: str) -> tuple[str, ...]:
    """An argparse `type=`: comma-separated conformance classes (spec/README.md)."""
    from .reports.classes import ClassError, parse
    try:
        return parse(text)
    except ClassError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _fraction(text: str) -> float:
    """An argparse `type=`: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a fraction from 0 to 1")
    return value


def _load_xfails(path: str | None):
    from .judge.xfail import XfailError, load
    if path is None:
        return None
    try:
        return load(path)
    except XfailError as exc:
        raise UsageError(str(exc)) from None


def _import_source(path: str):
    import importlib
    mod, _, attr = path.partition(":")
    try:
        fn = getattr(importlib.import_module(mod), attr)
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0]
        raise UsageError(f"--source {path}: {type(exc).__name__}: {first}") from None
    if not callable(fn):
        raise UsageError(f"--source {path}: not callable")
    return fn


def _cmd_run(args: argparse.Namespace) -> int:
    from .campaign.cluster import ClusterFailed, ClusterUnusable
    from .campaign.coverage import default_per_clause
    from .campaign.runner import CampaignInterrupted, default_source, run_campaign
    from .engines import EngineError
    from .reports.summary import EXIT_UNJUDGED, MAX_UNJUDGED, print_summary
    if args.scheduler and args.jobs != 1:
        raise UsageError("-n/--jobs and --scheduler exclude each other: the cluster's workers "
                         "set how many programs run at once")
    if args.scheduler and args.maxfail:
        raise UsageError("--maxfail/--exitfirst and --scheduler exclude each other: a cluster "
                         "runs its programs in slices that cannot stop at the N-th failure")
    source = _import_source(args.source) if args.source else default_source
    xfails = _load_xfails(args.xfail)
    unjudged = MAX_UNJUDGED if args.max_unjudged is None else args.max_unjudged
    per_clause = (default_per_clause(args.count, bool(args.source))
                  if args.per_clause is None else args.per_clause)
    try:
        report = run_campaign(args.engine, args.oracle, seed=args.seed, count=args.count,
                              size=args.size, jobs=args.jobs, timeout=args.timeout,
                              out_dir=args.out, progress=not args.quiet, device=args.device,
                              shrink=not args.no_shrink, source=source, xfails=xfails,
                              probe=not args.no_probe, max_unjudged=unjudged,
                              classes=args.classes, scheduler=args.scheduler,
                              per_clause=per_clause, maxfail=args.maxfail)
    except (EngineError, ClusterUnusable) as exc:
        raise UsageError(str(exc)) from None
    except ClusterFailed as exc:        # mid-run: nothing wrong with the input, no verdict
        _error(exc)
        return EXIT_UNJUDGED
    except OSError as exc:
        raise UsageError(f"cannot write to {args.out}: {exc.strerror or exc}") from None
    except CampaignInterrupted as stop:
        part = stop.report
        print(f"{chr(10) if sys.stderr.isatty() else ''}gradspec: interrupted after "
              f"{part.programs} of {part.count} programs; incomplete report in "
              f"{Path(part.folder) / 'report.json'} ({args.out} is unchanged)", file=sys.stderr)
        return part.exit_code
    print_summary(report, args.out)
    why = report.unjudged()
    if why:
        print(f"gradspec: {why}", file=sys.stderr)
    return report.exit_code


command("run", "run the conformance suite: generated programs on an engine vs the oracle",
        _configure_run)(_cmd_run)
command("replay", replay_cli.HELP, replay_cli.configure)(replay_cli.run)
command("graph", graph_cli.HELP, graph_cli.configure)(graph_cli.run)


def _configure_engines(p: argparse.ArgumentParser) -> None:
    p.add_argument("--probe", action="store_true", help="also probe every capability against "
                   "the oracle: declared ones that fail, absent ones that work")
    p.add_argument("--oracle", default="torch", help="the oracle for --probe (default torch)")
    p.add_argument("--engine", action="append", default=None, metavar="ENGINE",
                   help="list (and probe) only this engine: a name or package.module:factory; "
                   "repeatable")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _cmd_engines(args: argparse.Namespace) -> int:
    import json

    from .engines import EngineError, list_engines, load_engine
    from .judge.probes import check_declarations
    probe = None
    if args.probe:
        try:
            oracle = load_engine(args.oracle)
        except EngineError as exc:
            raise UsageError(str(exc)) from None

        def probe(engine):
            return [r.to_json() for r in check_declarations(engine, oracle, absent_only=False)]
    if args.engine:     # named engines must load: one line, exit 2, as for `run`
        for name in args.engine:
            try:
                load_engine(name)
            except EngineError as exc:
                raise UsageError(str(exc)) from None
    rows = list_engines(probe, args.engine)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        if not r["ok"]:
            print(f"{r['name']:<14} unavailable: {r['error']}")
            continue
        print(f"{r['name']:<14} {r['version']}  devices {','.join(r['devices'])}  "
              f"({r['source']})")
        print(f"{'':<14} capabilities: {', '.join(r['capabilities'])}")
        if r.get("lacks"):
            print(f"{'':<14} lacks: {', '.join(r['lacks'])}")
        if r.get("lacks_ops"):
            print(f"{'':<14} lacks ops: {', '.join(r['lacks_ops'])}")
        for c in r.get("probes", []):
            if c["verdict"] != "ok":
                print(f"{'':<14} probe {c['capability']}: {c['verdict']}: {c['detail']}")
    return 0


command("engines", "list the engines available, with versions, devices and capabilities",
        _configure_engines)(_cmd_engines)


def _configure_matrix(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engines", default="refimpl,torch,torch-compile,paddle",
                   help="comma-separated engines, or `all`: every built-in and entry-point "
                        "engine, one not installed a column of n/a saying why (default "
                        "refimpl,torch,torch-compile,paddle)")
    _campaign_options(p, 100, "programs per engine", "gradspec-matrix")
    p.add_argument("--xfail", default=None, metavar="FILE", help="expected failures")
    p.add_argument("--spec-url", default=None, metavar="URL", help="link clauses to URL/<file>"
                   "#<id> (default: a relative path to the spec folder)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def _cmd_matrix(args: argparse.Namespace) -> int:
    from .campaign.matrix import EnginesError, named_engines, run_matrix
    from .engines import EngineError, builtin_names
    try:
        names, every = named_engines(args.engines)     # each checked: nothing runs before
    except EnginesError as exc:
        raise UsageError(str(exc)) from None
    xfails = _load_xfails(args.xfail)
    try:
        columns = run_matrix(names, args.oracle, args.out, count=args.count, seed=args.seed,
                             size=args.size, jobs=args.jobs, timeout=args.timeout,
                             device=args.device, xfails=xfails, spec_url=args.spec_url,
                             progress=not args.quiet)
    except EngineError as exc:
        raise UsageError(f"oracle: {exc}") from None
    except OSError as exc:
        raise UsageError(f"cannot write to {args.out}: {exc.strerror or exc}") from None
    for col in columns:
        if col.ok:
            counts = {s: sum(1 for c in col.cells.values() if c["status"] == s)
                      for s in ("pass", "diverges", "xfail", "n/a")}
            print(f"{col.engine:<14} " + ", ".join(f"{v} {k}" for k, v in counts.items())
                  + f"; claims {', '.join(col.classes)}"
                  + (f"\n{'':<14} {col.unjudged}" if col.unjudged else ""))
        else:
            print(f"{col.engine:<14} unavailable: {col.reason}")
    out = Path(args.out)
    print(f"matrix: {out / 'matrix.html'}, {out / 'matrix.md'}")
    # not judged: a column that could not (exit 3), or an engine named that did not load (with
    # `all`, a built-in whose package is not installed is expected; an entry point is not)
    unjudged = [c.engine for c in columns if c.unjudged or not (
        c.ok or every and c.engine in builtin_names())]
    if unjudged:
        print(f"gradspec: could not judge {', '.join(unjudged)} (see above): the matrix is "
              f"incomplete", file=sys.stderr)
        return 3
    return 0


command("matrix", "run several engines and write a clauses x engines matrix (HTML, Markdown)",
        _configure_matrix)(_cmd_matrix)


def one_line(text: object) -> str:
    """`text` as one line: line breaks (any Python splits on) written as escapes."""
    lines = str(text).splitlines() or [""]
    return "\\n".join(ln.rstrip() for ln in lines).strip() or "(no message)"


def _error(message: object) -> None:
    print(f"gradspec: error: {one_line(message)}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not the usage block
        _error(f"{message} (see {self.prog} --help)")
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gradspec", description="A citable spec of PyTorch autograd semantics, "
        "a reference engine, and a conformance suite.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (help_, configure, fn) in COMMANDS.items():
        p = sub.add_parser(name, help=help_)
        configure(p)
        p.set_defaults(func=fn)
    return parser


# The flags of any subcommand that name a file or folder gradspec writes (run's and matrix's
# --out folder, which replaces its files; graph's --out; spec's --html): an empty value, an
# unset $VAR, would otherwise mean the current folder.
WRITTEN_PATHS = ("out", "html")


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse itself exits 2 with one usage line
    if not getattr(args, "func", None):
        parser.print_help()
        _error("no command given (see gradspec --help)")
        return 2
    for flag in WRITTEN_PATHS:      # every subcommand's, checked in one place
        value = getattr(args, flag, None)
        if value is not None and not str(value).strip():
            _error(f"--{flag} is empty: give a path (an unset variable?); the current "
                   "folder is never taken for it")
            return 2
    try:
        return args.func(args)
    except (UsageError, SpecError) as exc:
        _error(exc)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    """The `gradspec` command: exit 0, 1, 2 (bad usage or input: one line on stderr) or 3;
    130 when interrupted (Ctrl-C or SIGTERM); 141 when the reader of its output went away."""
    current_folder_last()
    signals.sigterm_interrupts()
    try:
        try:
            code = _run(argv)
        except SystemExit as exc:   # argparse: --help, or one line for bad usage
            code = exc.code if isinstance(exc.code, int) else 2
        sys.stdout.flush()      # a closed pipe shows here, not at interpreter exit
        return code
    except KeyboardInterrupt:
        print("gradspec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away: point stdout at devnull so that the final flush is quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    finally:        # an interrupt caught anywhere: the status returned is the exit status
        signals.interrupt_handled()


if __name__ == "__main__":
    sys.exit(main())
