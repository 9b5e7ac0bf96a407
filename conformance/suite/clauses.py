"""One pytest item per spec clause (conformance/suite/test_clauses.py): the programs the items
judge, how one program is judged, and which item a failing program fails.

The programs are those `gradspec run --seed SEED --count N --size SIZE` draws (the stream; N,
SIZE and SEED are the profile's, conformance/suite/checks.py), so that program i of an item's
report is program i of that campaign too. The first clause item a process runs runs the whole
stream, once, in the isolated worker (conformance/campaign/resident.py): a crash or a hang
costs that program, reported by an item, and the session goes on; after MAX_FAULTS of them
the rest of the stream is not run and the items without a failure of their own fail as not
judged. Under pytest-xdist every worker runs the stream (the items need all of it).

A program is judged as `gradspec run` judges it: by its first divergence in a conformance
class the engine claims (conformance/judge/verdict.py, `judged` and `lead`); one whose
divergences are all of unclaimed classes, or whose primary clause is newer than the oracle, is
not compared. A clause's item fails with the programs whose primary clause it is: the clause
table of `gradspec run`, one item per row, so that each failing program fails exactly one item
and a program that exercises VER-7 but diverges on FREE-1 fails FREE-1's item. A crash or a
hang counts against the first clause of the statement it happened at; a divergence without a
primary clause (a harness error: gradspec's mistake) against the first clause it involves.
An item passes when programs exercise its clause and none fails it; it is skipped, with the
reason, when none does or the clause cannot apply (an unclaimed class, a capability the engine
lacks, newer than the oracle, left open by the spec).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ..spec.capabilities import closure
from .checks import EngineFault, Profile, describe, expected_reason, split_expected

REPORTED_IN_FULL = 1     # failing programs of one item shown with their repro; the rest a line
LISTED = 10             # failing programs of one item listed, one line each
MAX_FAULTS = 10         # crashes and hangs after which the rest of the stream is not run


@dataclass
class Judged:
    """One program's verdict. `fails`: a divergence in a claimed class (or a crash, a hang, a
    harness error) that no expected-failure entry covers; `expected`: the entries covering
    it; `candidates`: the clauses it counts against, in order (its primary clause)."""
    index: int
    seed: int
    clauses: list[str] = field(default_factory=list)     # those its statements exercise
    fails: bool = False
    expected: list = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)
    line: str = ""          # the divergence in one line
    message: str = ""       # the full report: divergences, repro, program


class Stream:
    """The programs of campaign seed `seed` (conformance/campaign/runner.py, program_seeds and
    default_source), each drawn when first needed; with `per_clause`, followed by the further
    programs of the stream that bring every clause to that many (campaign/coverage.py), as
    `gradspec run --per-clause` runs them."""

    def __init__(self, seed: int, caps: frozenset[str], size: int, count: int,
                 per_clause: int = 0):
        from collections import Counter

        from conformance.campaign.coverage import SCAN, stream_top_up
        from conformance.campaign.runner import default_source, program_seeds
        self.seed, self.caps, self.size, self.count = seed, caps, size, count
        self.per_clause = per_clause
        self.seeds = program_seeds(seed, count + (SCAN if per_clause else 0))
        further, self.seeds = self.seeds[count:], self.seeds[:count]
        self.short: dict[str, int] = {}
        if per_clause:
            counts = Counter(c for i in range(count) for c in self.program(i).clauses())
            more = stream_top_up(further, counts, default_source, caps, size, per_clause)
            self.seeds += more.seeds
            self.short = more.short

    def program(self, i: int):
        from conformance.campaign.runner import default_source
        return default_source(self.seeds[i], self.caps, self.size)

    def command(self) -> str:
        """The `gradspec run` options that draw the same programs."""
        return (f"gradspec run --seed {self.seed} --count {self.count} --size {self.size}"
                f" --per-clause {self.per_clause}")


class ClauseSuite:
    """The session's clause items in one process: the stream, the verdict of each program run
    so far, and the engine's claim."""

    def __init__(self, engine, oracle, isolated, profile: Profile, seed: int,
                 classes: tuple[str, ...], xfails: list):
        from conformance.spec.reader import load_spec
        self.engine, self.oracle, self.isolated = engine, oracle, isolated
        self.profile, self.classes, self.xfails = profile, frozenset(classes), list(xfails)
        self.spec = load_spec()
        self.order = [c.id for c in self.spec.active()]
        from conformance.engines import capabilities_of
        from conformance.spec.capabilities import combine
        caps = combine(capabilities_of(engine), capabilities_of(oracle))
        self.stream = Stream(seed, caps, profile.size, profile.programs, profile.per_clause)
        self._judged: list[Judged] | None = None
        self.faults = 0
        self.load_error = ""

    def not_applicable(self, cid: str) -> str | None:
        """Why the clause's item is skipped before any program runs; None if it is not."""
        from conformance.reports.classes import not_claimed
        from conformance.reports.report import newer_than
        c = self.spec.clauses[cid]
        lacking = [r for r in c.requires if r not in closure(self.stream.caps)]
        if cid.startswith("UNSPEC-"):
            return "left open by the spec (spec/unspecified.md): never compared"
        if (why := not_claimed(c.cls, self.classes)) is not None:
            return why
        if lacking:
            return f"the engine lacks {', '.join(lacking)}"
        if newer_than(c.since, self.oracle.version):
            return f"since torch {c.since}, newer than the oracle ({self.oracle.version})"
        return None

    def unexercised(self, cid: str) -> str:
        from conformance.generate import NOT_GENERATED
        if cid in NOT_GENERATED:
            return f"not generated ({NOT_GENERATED[cid]}); spec examples and differential " \
                   f"tests check it"
        return f"no program of {len(self.stream.seeds)} ({self.stream.command()}) exercised it"

    def judged(self) -> list[Judged]:
        """Every program of the stream judged (run on the first call), up to MAX_FAULTS."""
        from conformance.engines import EngineError
        if self.load_error:
            pytest.fail(self.load_error, pytrace=False)
        if self._judged is None:
            judged: list[Judged] = []
            try:
                for i in range(len(self.stream.seeds)):
                    if self.faults >= MAX_FAULTS:
                        break
                    judged.append(self._run(i))
            except EngineError as exc:      # the worker could not load an engine
                self.load_error = f"cannot load engine: {exc}"
                pytest.fail(self.load_error, pytrace=False)
            self._judged = judged
        return self._judged

    def _run(self, i: int) -> Judged:
        from conformance.judge.compare import Divergence
        program = self.stream.program(i)
        j = Judged(i, self.stream.seeds[i], program.clauses())
        r = self.isolated.run(program)
        if "oracle" not in r or "engine" not in r:     # a crash, a hang, a gradspec bug
            div = Divergence.from_json(r["failure"]) if r.get("failure") else None
            j.candidates = list(div.clauses) if div else []
            j.message = str(EngineFault(self.isolated.explain(program, r, self.engine)))
            j.line = j.message.splitlines()[0]
            self.faults += 1
            self._settle(j, [div] if div else [], program)
            return j
        divs = [Divergence.from_json(d) for d in r["divergences"]]
        return self._compared(j, program, divs, r)

    def _compared(self, j: Judged, program, divs: list, r: dict[str, Any]) -> Judged:
        from conformance.judge.verdict import claimed, judged, lead
        from conformance.lang.trace import Trace
        from conformance.reports.report import newer_than
        mine = [d for d in divs if claimed(d, self.classes)]
        if not mine:            # no divergence, or all of classes the engine does not claim
            return j
        first = lead(divs, self.classes)
        c = self.spec.clauses.get(first.primary or "")
        harness = any(d.what == "harness" for d in mine)
        if c is not None and newer_than(c.since, self.oracle.version) and not harness:
            return j            # not applicable: newer than the oracle
        j.candidates = [first.primary] if first.primary else list(first.clauses)
        j.line = (f"statement {first.path} ({first.op}), {first.what}: oracle {first.oracle}; "
                  f"{self.engine.name} {first.engine}  [primary {first.primary}"
                  f"{f', class {first.cls}' if first.cls else ''}]")
        if harness:
            j.line = "a harness error (gradspec's mistake, not the engine's): " + j.line
        traces = (Trace.from_json(r["oracle"]), Trace.from_json(r["engine"]))
        j.message = describe(program, judged(divs, self.classes), self.engine, traces)
        self._settle(j, [] if harness else judged(divs, self.classes), program, harness)
        return j

    def _settle(self, j: Judged, divs: list, program, harness: bool = False) -> None:
        """Failing, or expected by an entry of the expected-failure file."""
        unexpected, expected = split_expected(divs, self.xfails, j.seed, program) if divs \
            else ([], [])
        j.expected = expected
        j.fails = harness or bool(unexpected) or not divs

    def responsible(self, j: Judged) -> str:
        """The one clause whose item reports the program (see the module's docstring)."""
        items = set(self.order)
        return next((c for c in [*j.candidates, *j.clauses] if c in items), self.order[0])

    def check(self, cid: str) -> None:
        """The clause's item: fail, xfail, skip or pass (pytest's outcomes)."""
        judged = self.judged()
        mine = [j for j in judged if (j.fails or j.expected) and self.responsible(j) == cid]
        failing = [j for j in mine if j.fails]
        if failing:     # even where the clause cannot apply: nothing excuses a divergence
            pytest.fail(self.report(cid, failing), pytrace=False)
        why = self.not_applicable(cid)
        if why is not None:
            pytest.skip(f"{cid}: {why}")
        if mine:
            pytest.xfail(expected_reason([pair for j in mine for pair in j.expected]))
        if len(judged) < len(self.stream.seeds):
            pytest.fail(f"{cid}: not judged: the engine crashed or hung on {self.faults} "
                        f"programs, after which the rest of the stream was not run ("
                        f"{len(judged)} of {len(self.stream.seeds)} programs run)",
                        pytrace=False)
        if not any(cid in j.clauses for j in judged):
            pytest.skip(f"{cid}: {self.unexercised(cid)}")

    def report(self, cid: str, failing: list[Judged]) -> str:
        s = self.stream
        exercising = sum(cid in j.clauses for j in self.judged())
        lines = [f"{cid}: {len(failing)} program(s) fail with {cid} as their primary clause "
                 f"({exercising} of the {len(s.seeds)} exercise it; {s.command()}; "
                 f"engine {self.engine.name}, oracle {self.oracle.name}, classes "
                 f"{', '.join(c for c in self.spec_classes() if c in self.classes)})"]
        for j in failing[:LISTED]:
            lines.append(f"  program {j.index} (seed {j.seed}): {j.line}")
        if len(failing) > LISTED:
            lines.append(f"  ... and {len(failing) - LISTED} more")
        for j in failing[:REPORTED_IN_FULL]:
            lines += ["", f"program {j.index} (seed {j.seed}):", j.message]
        return "\n".join(lines)

    @staticmethod
    def spec_classes() -> tuple[str, ...]:
        from conformance.spec.reader import CLASSES
        return CLASSES
