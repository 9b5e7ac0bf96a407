"""Expected-failure files (`gradspec run --xfail FILE`, `gradspec matrix --xfail FILE`, pytest's
`--gradspec-xfail FILE`) and the one matcher that decides what they expect.

One entry per line:

    ID [@ENGINE[,ENGINE...]] REASON

    # paddle has no warnings at all
    RETAIN-7  @paddle  no NONLEAF_GRAD_ACCESS warning  https://github.com/PaddlePaddle/Paddle/issues/1
    VER-3     @torch-compile  _version counts a compiled in-place op twice
    seed:123456789  this one program hangs the engine
    GRAPH_FREED  @myengine  never frees saved values  https://example.org/issues/2
    sig:inplace.*/outcome/LEAF_INPLACE/ok  @myengine  no leaf check on in-place ops

ID is one of
- a clause ID (`LEAF-5`): programs whose primary clause it is;
- an error or warning kind of spec/errors.md (`GRAPH_FREED`, `NONLEAF_GRAD_ACCESS`): programs
  whose first divergence is an outcome or warnings difference in which the oracle or the
  engine raised (warned) it;
- a signature (`sig:PATTERN`): programs whose signature (`kind[.op]/observable/oracle/engine`)
  the pattern matches, `*` any text (`/` included), `?` one character, `[...]` one of them;
  four fields, or fewer ending with `*` (`sig:observe/grad/*`). report.json lists each
  divergent program's `signature`, and `groups` one per problem;
- a conformance class (`class:diagnostics`, spec/README.md): programs whose first divergence
  is of that class (an engine that claims the class, but is known to fail it for now);
- a generated program's seed (`seed:N`, the `program_seed` of report.json);
- a pytest node ID (anything with `::`; for pytest runs: `gradspec run` reports it stale).
`@ENGINE` limits the entry to engines of those names (as given to --engine, or the adapter's
own name); without it, it holds for every engine. A name gradspec does not know (no built-in,
entry point or engine of the run; an import path is taken as known) makes the entry stale.
REASON is required: say why, with a link to the upstream issue where there is one. Blank
lines and lines starting with `#` are ignored.

One matcher serves `gradspec run` (conformance/campaign/runner.py) and the pytest plugin alike
(`match`, `expects`). A program is judged by its first divergence, the one the rest follow
from: its primary clause (the clause that defines what the oracle did there,
conformance/judge/verdict.py; the one the report's per-clause table counts the program
against) and its signature. The program is an expected failure when an entry names its
primary clause, an error kind in its signature, a pattern its signature matches, its class, or
its seed: it is reported, but does not fail the run or the test. A pytest node-ID entry marks
the tests it names xfail: the test itself, and every parametrization of it
(`Xfail.matches_test`).

An entry is stale when it matches nothing (no such clause in the spec; a seed no program of the
run has; an engine gradspec does not know; a node ID no collected test has, in a test file the
run collected or that does not exist, or any node ID in a campaign: `unusable`), or when what
it names now passes (the clause was exercised without divergence; every clause of the error
kind was, without a divergence it matched; the program ran clean; every test it names that ran
passed). Stale entries are reported (`stale`, `stale_tests`); a clause
the run did not exercise, a signature or class no program had (the run cannot tell whether it
still happens), or a test file it did not collect, is neither confirmed nor stale. A line that
cannot be read is a one-line error (exit code 2), and so is an entry naming a clause, an error
kind or a class the spec does not have.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from ..lang.validate import read_input
from ..spec.reader import CLASSES, load_errors, load_spec
from .verdict import lead, verdict

_CLAUSE = re.compile(r"^[A-Z]+-[0-9]+$")
_SEED = re.compile(r"^seed:([0-9]+)$")
_CLASS = re.compile(r"^class:([a-z]+(-[a-z]+)*)$")
_KIND = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
_FIELD = r"[A-Za-z0-9_.+*?!\[\]-]+"
# four fields, kind[.op]/observable/oracle/engine; fewer when the pattern ends with `*`
_SIGNATURE = re.compile(rf"^sig:({_FIELD}(/{_FIELD}){{3}}|({_FIELD}/){{0,3}}{_FIELD[:-1]}*\*)$")
_ENGINE = re.compile(r"^@([A-Za-z0-9_.:-]+(,[A-Za-z0-9_.:-]+)*)$")


class XfailError(ValueError):
    """A line of an expected-failure file is malformed; the message is one line."""


@dataclass(frozen=True)
class Xfail:
    id: str                 # "LEAF-5", "GRAPH_FREED", "sig:PATTERN", "class:core", "seed:123",
    #                         a node ID
    reason: str
    engines: tuple[str, ...] = ()    # empty: every engine
    line: int = 0

    @property
    def kind(self) -> str:
        """clause | error | signature | class | seed | test."""
        return _kind(self.id) or "test"

    @property
    def pattern(self) -> str:
        """The signature pattern of a signature entry."""
        return self.id[4:] if self.kind == "signature" else ""

    @property
    def seed(self) -> int | None:
        m = _SEED.match(self.id)
        return int(m.group(1)) if m else None

    def applies_to(self, engine: str) -> bool:
        return not self.engines or engine in self.engines

    def matches_test(self, nodeid: str) -> bool:
        """Does this node-ID entry name the test `nodeid` (itself, or a parametrization)?"""
        return self.kind == "test" and (nodeid == self.id or nodeid.startswith(self.id + "["))

    @property
    def test_file(self) -> str:
        """The file part of a node-ID entry (before the first `::`)."""
        return self.id.split("::", 1)[0]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason, "engines": list(self.engines),
                "line": self.line}


def parse(text: str, where: str = "xfail file") -> list[Xfail]:
    entries: list[Xfail] = []
    seen: dict[tuple[str, tuple[str, ...]], int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        ident, rest = parts[0], parts[1].strip() if len(parts) > 1 else ""
        if not (_kind(ident) or "::" in ident):
            raise XfailError(f"{where}:{n}: {ident!r} is not a clause ID (LEAF-5), an error "
                             f"kind (GRAPH_FREED), a signature (sig:kind/observable/oracle/"
                             f"engine), a conformance class (class:diagnostics), a "
                             f"program seed (seed:N) or a pytest node ID (path::test)")
        if _CLASS.match(ident) and ident[6:] not in CLASSES:
            raise XfailError(f"{where}:{n}: {ident[6:]!r} is not a conformance class "
                             f"({', '.join(CLASSES)})")
        engines: tuple[str, ...] = ()
        if rest.startswith("@"):
            tag, _, rest = rest.replace("\t", " ").partition(" ")     # tabs separate too
            if not _ENGINE.match(tag):
                raise XfailError(f"{where}:{n}: bad engine list {tag!r} (write @name,name)")
            engines = tuple(tag[1:].split(","))
            rest = rest.strip()
        if not rest:
            raise XfailError(f"{where}:{n}: {ident} has no reason (say why, with a link to the "
                             f"upstream issue where there is one)")
        key = (ident, engines)
        if key in seen:
            raise XfailError(f"{where}:{n}: {ident} is listed twice (first on line {seen[key]})")
        seen[key] = n
        entries.append(Xfail(ident, rest, engines, n))
    return entries


def _kind(ident: str) -> str | None:
    if _CLAUSE.match(ident):
        return "clause"
    if _SEED.match(ident):
        return "seed"
    if _CLASS.match(ident):
        return "class"
    if _SIGNATURE.match(ident):
        return "signature"
    return "error" if _KIND.match(ident) else None


def load(path: str | Path) -> list[Xfail]:
    """The entries of an expected-failure file. A clause ID or error kind the spec does not
    have is an error here (every clause ID cited anywhere exists), not a stale entry: a
    typo'd ID would otherwise excuse nothing and only be reported after the whole run."""
    p = Path(path)
    try:
        text = read_input(p).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise XfailError(f"cannot read {p}: {getattr(exc, 'strerror', None) or exc}") from None
    entries = parse(text, str(p))
    spec = load_spec()
    kinds = load_errors()
    for x in entries:
        if x.kind == "clause" and x.id not in spec.clauses:
            raise XfailError(f"{p}:{x.line}: {x.id} is not a clause of spec {spec.version}")
        if x.kind == "error" and x.id not in kinds and x.id != "OTHER":
            raise XfailError(f"{p}:{x.line}: {x.id} is not an error or warning kind of "
                             f"spec/errors.md")
    return entries


def for_engine(entries: list[Xfail], engine: str) -> list[Xfail]:
    return [x for x in entries if x.applies_to(engine)]


def attributed(program: Any, divergences: Iterable[Any]) -> list[str]:
    """The clauses a program's divergences are attributed to: the primary clause of the first
    (a list of at most one; conformance/judge/verdict.py). `program` is not needed any more
    (the comparator names the primary clause); kept for the callers of the first release."""
    return verdict(list(divergences))[0]


def error_kinds(signature: str) -> list[str]:
    """The error and warning kinds a signature names (the oracle's and the engine's)."""
    parts = signature.split("/")
    if len(parts) != 4 or parts[1] not in ("outcome", "warnings"):
        return []
    known = load_errors()
    return [k for k in dict.fromkeys(parts[2].split("+") + parts[3].split("+"))
            if k in known or k == "OTHER"]


def match(entries: list[Xfail], clauses: list[str], program_seed: int | None,
          signature: str = "", cls: str | None = None) -> Xfail | None:
    """The first entry that expects a program's divergences: a clause entry naming one of the
    clauses they are attributed to (its primary clause, `attributed`), an error-kind entry
    naming a kind in its `signature`, a signature entry whose pattern matches it, a class entry
    naming `cls` (the class of the divergence it is judged by), or a seed entry with this
    program seed."""
    kinds = error_kinds(signature)
    for x in entries:
        if (x.kind == "clause" and x.id in clauses) or (x.kind == "error" and x.id in kinds) \
                or (x.kind == "signature" and signature and fnmatchcase(signature, x.pattern)) \
                or (x.kind == "class" and cls is not None and x.id == f"class:{cls}") \
                or (x.kind == "seed" and x.seed == program_seed):
            return x
    return None


def expects(entries: list[Xfail], divergences: list[Any], program_seed: int | None = None,
            capabilities: Iterable[str] | None = None) -> tuple[str, Xfail | None]:
    """What becomes of one program's divergences: ("fails", None) or ("expected", the entry
    that expects them). `capabilities` is not used to excuse anything: a clause's `requires`
    names what its examples need (see campaign/runner.py, _sort)."""
    if not divergences:
        return "passes", None
    primary, signature = verdict(divergences)
    first = lead(divergences)
    x = match(entries, primary, program_seed, signature, getattr(first, "cls", None))
    return ("expected", x) if x is not None else ("fails", None)


def stale(entries: list[Xfail], known_clauses: set[str], rows: dict[str, dict[str, Any]],
          seeds: dict[int, bool], used: set[int]) -> list[dict[str, Any]]:
    """Stale entries, each with why. `rows`: the report's per-clause rows; `seeds`: program
    seed -> whether that program diverged; `used`: lines of entries that matched a divergence."""
    out = []
    for x in entries:
        why = None
        if x.kind == "clause":
            row = rows.get(x.id)
            if x.id not in known_clauses:
                why = "matches nothing: no such clause in the spec"
            elif row and row.get("applicable") and row.get("programs") and \
                    x.line not in used and not row.get("divergences"):
                why = f"now passes: {row['programs']} programs exercised it without divergence"
        elif x.kind == "error":
            why = _stale_kind(x, rows, used)
        elif x.kind == "seed":
            if x.seed not in seeds:
                why = "matches nothing: no program of this run has that seed"
            elif not seeds[x.seed]:
                why = "now passes: the program ran without divergence"
        if why:
            out.append({**x.to_json(), "stale": why})
    return out


def unusable(entries: list[Xfail], known_engines: Collection[str]) -> list[dict[str, Any]]:
    """The entries a campaign (`gradspec run`, a matrix column) reports stale whatever it ran,
    each with why, in file order: a pytest node ID, which marks tests under pytest's
    --gradspec-xfail and never a program, and an entry naming an engine gradspec does not know
    (`unknown_engines`)."""
    node_ids = [{**x.to_json(), "stale": "matches nothing in a campaign: a pytest node ID "
                 "marks tests under pytest's --gradspec-xfail only"}
                for x in entries if x.kind == "test"]
    return sorted(node_ids + unknown_engines(
        [x for x in entries if x.kind != "test"], known_engines), key=lambda x: x["line"])


def unknown_engines(entries: list[Xfail], known_engines: Collection[str]) -> list[dict[str, Any]]:
    """The entries whose @ENGINE names an engine gradspec does not know, each with why: a typo,
    `@padle`, would otherwise excuse nothing and never be told. Stale in every run, whatever
    engine it runs: `gradspec run`, a matrix column and a pytest session alike.
    `known_engines`: the built-in and entry-point names and the run's engine, as given and as
    its adapter names itself; an import path (`pkg.module:factory`) is taken as known, it
    cannot be checked unimported."""
    out = []
    for x in entries:
        unknown = [e for e in x.engines if e not in known_engines and ":" not in e]
        if unknown:
            out.append({**x.to_json(), "stale": f"{', '.join(unknown)}: gradspec knows no "
                        f"engine of that name (`gradspec engines` lists those it knows)"})
    return out


def _stale_kind(x: Xfail, rows: dict[str, dict[str, Any]], used: set[int]) -> str | None:
    """An error-kind entry now passes when every clause of its kind was exercised, none
    diverged, and it matched nothing."""
    clauses = load_errors()[x.id].clauses if x.id in load_errors() else ()
    got = [rows.get(c) or {} for c in clauses]
    if x.line in used or not got or not all(r.get("applicable") and r.get("programs")
                                            for r in got):
        return None
    if any(r.get("divergences") for r in got):
        return None
    return (f"now passes: {', '.join(clauses)} exercised by at least "
            f"{min(r['programs'] for r in got)} programs each, without a divergence")


def marked_tests(entries: list[Xfail], nodeids: Iterable[str]) -> dict[str, Xfail]:
    """Node ID -> the first node-ID entry that names that test."""
    tests = [x for x in entries if x.kind == "test"]
    out: dict[str, Xfail] = {}
    for nodeid in nodeids:
        x = next((x for x in tests if x.matches_test(nodeid)), None)
        if x is not None:
            out[nodeid] = x
    return out


def stale_tests(entries: list[Xfail], collected: Iterable[str], outcomes: Mapping[str, str],
                file_exists: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Stale node-ID entries, each with why. `collected`: the node IDs of the run;
    `outcomes`: node ID -> passed | failed | skipped for the tests that ran (an xfailed test
    is failed: the failure it expects happened); `file_exists(path)`: is there such a test
    file. An entry whose file exists but was not collected is not judged."""
    collected = list(collected)
    files = {n.split("::", 1)[0] for n in collected}
    out = []
    for x in entries:
        if x.kind != "test":
            continue
        named = [n for n in collected if x.matches_test(n)]
        ran = [outcomes[n] for n in named if outcomes.get(n) in ("passed", "failed")]
        why = None
        if not named and x.test_file in files:
            why = "matches nothing: no collected test has that node ID"
        elif not named and not file_exists(x.test_file):
            why = f"matches nothing: there is no test file {x.test_file}"
        elif ran and all(r == "passed" for r in ran):
            why = f"now passes: {len(ran)} test(s) it names passed"
        if why:
            out.append({**x.to_json(), "stale": why})
    return out


def stale_items(entries: list[Xfail], outcomes: Mapping[str, str],
                used: set[int]) -> list[dict[str, Any]]:
    """Stale clause entries of a pytest session's clause items (conformance/suite: one item per
    clause, judged by the programs whose primary clause it is), by the items' outcomes, as
    `stale` judges a campaign's by its rows: a clause entry that made no test xfail (`used`:
    the lines of those that did) now passes when its item passed. `outcomes`: clause ID ->
    passed | failed | skipped of its item. Error-kind, signature, class and seed entries are
    not judged here: an error kind's entry may have matched programs other clauses' items ran,
    and a seed one a test's own program, which the items do not say."""
    return [{**x.to_json(), "stale": "now passes: its clause item passed"} for x in entries
            if x.kind == "clause" and x.line not in used and outcomes.get(x.id) == "passed"]


__all__ = ["Xfail", "XfailError", "attributed", "expects", "for_engine", "load", "marked_tests",
           "match", "parse", "stale", "stale_items", "stale_tests", "unknown_engines",
           "unusable"]
