"""The `gradspec` command line.

Every user error (bad clause ID, bad engine name, corrupt file) ends in one line on stderr and
exit code 2; a traceback from deep inside is a bug.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .specdoc import SpecError, load_spec, render_index, spec_dir


class UsageError(Exception):
    """A mistake by the user; printed as one line, exit code 2."""


def _cmd_spec(args: argparse.Namespace) -> int:
    spec = load_spec()
    cid = args.clause.upper()
    if cid not in spec.clauses:
        raise UsageError(f"unknown clause ID {args.clause!r}; `gradspec index` lists them")
    c = spec.clauses[cid]
    print(f"{c.id}  {c.title}")
    print(f"  {c.anchor}  (area {spec.areas[c.area]}; status {c.status}; verified on torch "
          f"{c.verified}; since torch {c.since}; requires {', '.join(c.requires)})")
    print()
    print(c.text.rstrip())
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    spec = load_spec()
    if args.write:
        path = spec_dir() / "index.md"
        path.write_text(render_index(spec), encoding="utf-8")
        print(f"wrote {path} ({len(spec.clauses)} clauses)")
        # clauses.lock lists every ID ever issued; new IDs are appended, none removed.
        lock = spec_dir() / "clauses.lock"
        text = lock.read_text(encoding="utf-8") if lock.exists() else (
            "# Every clause ID ever issued. IDs are appended, never removed or reused.\n")
        known = {ln.split()[0] for ln in text.splitlines() if ln.strip() and ln[0] != "#"}
        new = [cid for cid in spec.clauses if cid not in known]
        if new:
            lock.write_text(text + "".join(f"{cid}\n" for cid in new), encoding="utf-8")
            print(f"locked {len(new)} new clause IDs in {lock}")
        return 0
    print_index(spec)
    return 0


def print_index(spec) -> None:
    rows = [(c.id, c.title.replace("`", ""), spec.areas[c.area], c.verified)
            for c in spec.clauses.values()]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    print(f"{'ID':<{w[0]}}  {'title':<{w[1]}}  {'area':<{w[2]}}  verified")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}")
    print(f"{len(rows)} clauses, spec version {spec.version}")


# Subcommands register here with @command.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int]]] = {}


def command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None]):
    def deco(fn: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = (help, configure, fn)
        return fn
    return deco


command("spec", "print one clause", lambda p: p.add_argument("clause", help="e.g. LEAF-5"))(
    _cmd_spec)
command("index", "print the clause index",
        lambda p: p.add_argument("--write", action="store_true",
                                 help="regenerate spec/index.md"))(_cmd_index)


def _cmd_run_placeholder(args: argparse.Namespace) -> int:
    # Until the conformance runner lands, the main job prints the clause index.
    print_index(load_spec())
    return 0


command("run", "run the main job", lambda p: None)(_cmd_run_placeholder)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gradspec", description="A citable spec of PyTorch autograd semantics, "
        "a reference engine, and a conformance suite.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_, configure, fn) in COMMANDS.items():
        p = sub.add_parser(name, help=help_)
        configure(p)
        p.set_defaults(func=fn)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # argparse itself exits 2 with one usage line
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (UsageError, SpecError) as exc:
        print(f"gradspec: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gradspec: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
