"""The `gradspec spec` and `gradspec index` subcommands: their options and what they do.

They live beside the spec reader rather than in conformance/cli.py, which registers them
(`register`), so that the entry point stays a list of commands. Bad input raises SpecError,
which the entry point prints as one line with exit code 2.

`gradspec spec --html DIR` writes the spec as a static site. The writer sits in
conformance/reports/site.py, a higher layer than this one, so the entry point hands it in
(`register(command, write_site)`) instead of this module importing it.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from .reader import Spec, SpecError, load_spec
from .show import clause_text, write_generated

SiteWriter = Callable[[Path], list[Path]]


def _cmd_spec(args: argparse.Namespace, write_site: SiteWriter | None = None) -> int:
    if args.html is not None:
        if args.clause is not None or args.at is not None:
            raise SpecError("gradspec spec --html DIR writes the whole spec: give no clause ID "
                            "and no --at")
        if write_site is None:
            raise SpecError("gradspec spec --html: no site writer is registered")
        pages = write_site(Path(args.html))
        print(f"wrote {len(pages)} pages to {args.html} (open {Path(args.html) / 'index.html'})")
        return 0
    if args.clause is None:
        raise SpecError("gradspec spec needs a clause ID (e.g. LEAF-5), or --html DIR for "
                        "the whole spec as a site")
    print(clause_text(args.clause, args.at))
    return 0


def _cmd_index(args: argparse.Namespace) -> int:
    if args.write:
        for line in write_generated():
            print(line)
        return 0
    print_index(load_spec())
    return 0


def print_index(spec: Spec) -> None:
    rows = [(c.id, c.title.replace("`", ""), spec.areas[c.area], c.verified)
            for c in spec.clauses.values()]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    print(f"{'ID':<{w[0]}}  {'title':<{w[1]}}  {'area':<{w[2]}}  verified")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}")
    print(f"{len(rows)} clauses, spec version {spec.version}")


def _configure_spec(p: argparse.ArgumentParser) -> None:
    p.add_argument("clause", nargs="?", default=None, help="e.g. LEAF-5 (required unless "
                   "--html is given)")
    p.add_argument("--at", metavar="VERSION", default=None,
                   help="the clause as an archived spec release had it (e.g. 1.0.0)")
    p.add_argument("--html", metavar="DIR", default=None,
                   help="write the whole spec as a static site into DIR (index.html, one "
                   "page per area, definitions, errors, changes); needs the extra 'site'")


def _configure_index(p: argparse.ArgumentParser) -> None:
    p.add_argument("--write", action="store_true", help="regenerate spec/index.md, "
                   "spec/ids.json and the digests of spec/clauses.lock")


def register(command: Callable, write_site: SiteWriter | None = None) -> None:
    """Register `spec` and `index` with the entry point's `command(name, help, configure)`
    decorator; `write_site(DIR)` writes the site and returns the pages written."""
    command("spec", "print one clause, or write the spec as a site (--html DIR)",
            _configure_spec)(lambda args: _cmd_spec(args, write_site))
    command("index", "print the clause index", _configure_index)(_cmd_index)
