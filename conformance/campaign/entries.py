"""A program's result as an entry of the report (report.json) and a folder of its own: the
verdict on a divergent program (its primary clause, signature and class: judge/verdict.py),
and which column of the report it goes to (failing, expected, not applicable), decided in one
place for the report (campaign/runner.py) and for --maxfail (campaign/failfast.py)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engines.base import Engine
from ..judge.compare import INTERNAL, Divergence, not_judged
from ..judge.verdict import attribute, lead, verdict
from ..judge.xfail import Xfail
from ..judge.xfail import match as xfail_match
from ..lang.program import Program
from ..lang.trace import Trace
from ..reports.classes import not_claimed
from ..reports.report import write_divergence
from .worker import ProgramSource


class Context:
    """What recording a program's folder needs to know about the run."""

    def __init__(self, engine: Engine, engine_spec: str, oracle_spec: str,
                 caps: frozenset[str], size: int, source: ProgramSource, out: Path,
                 classes: tuple[str, ...]):
        self.engine, self.engine_spec, self.oracle_spec = engine, engine_spec, oracle_spec
        self.caps, self.size, self.source, self.out = caps, size, source, out
        self.classes = classes      # the conformance classes judged


def regenerate(source: ProgramSource, pseed: int, caps: frozenset[str], size: int) -> Program:
    try:
        return source(pseed, caps, size)
    except Exception:
        return Program([], seed=pseed)


def record_oracle_failure(index: int, pseed: int, r: dict[str, Any], ctx: Context
                           ) -> dict[str, Any]:
    detail = r["oracle_failure"]
    program = regenerate(ctx.source, pseed, ctx.caps, ctx.size)
    folder = ctx.out / "oracle-failures" / f"{index:04d}-seed{pseed}"
    div = Divergence("", "program", "oracle failure", detail, "not judged")
    paths = write_divergence(folder, program, None, None, [div], ctx.engine, ctx.engine_spec,
                             ctx.oracle_spec)
    return {"index": index, "program_seed": pseed, "detail": detail, "folder": str(folder),
            "repro_torch": paths["repro_torch"]}


def _failed_program(r: dict[str, Any], pseed: int, ctx: Context
                    ) -> tuple[Program, list[Divergence]]:
    """A crashed or hung program: shrunk (campaign/failures.py), or regenerated (it is
    deterministic) and cut after the statement that was running when the engine runs one
    statement at a time; or a gradspec bug's."""
    if r.get("program"):
        program = Program.from_json(r["program"])
        div = Divergence.from_json(r["failure"])
        stmts = dict(program.walk())
        if div.path in stmts:
            div.op, div.clauses = stmts[div.path].op, list(stmts[div.path].clauses)
        return program, [div]
    program = regenerate(ctx.source, pseed, ctx.caps, ctx.size)
    if r.get("internal"):
        return program, [Divergence("", "program", INTERNAL, "not judged (gradspec failed: "
                                    "see the traceback in report.json)",
                                    (r["internal"].strip().splitlines() or [""])[-1])]
    div = Divergence.from_json(r["failure"])
    stmts = dict(program.walk())
    if div.path in stmts:
        div.op, div.clauses = stmts[div.path].op, list(stmts[div.path].clauses)
        top = int(div.path.split(".")[0])
        if ctx.engine.granularity == "statement" and top + 1 < len(program.statements):
            program = Program(program.statements[:top + 1], seed=program.seed,
                              meta={**program.meta, "minimized_from": len(stmts)})
    return program, [div]


def record(index: int, pseed: int, r: dict[str, Any], ctx: Context
            ) -> dict[str, Any] | None:
    """Write the folder of a divergent, crashed or timed-out program; its entry for
    report.json (None if the program passed)."""
    if not (r.get("divergences") or r.get("failure") or r.get("internal")):
        return None
    oracle_trace = engine_trace = None
    if r.get("divergences"):
        program = Program.from_json(r["program"])
        divs = [Divergence.from_json(d) for d in r["divergences"]]
        oracle_trace, engine_trace = Trace.from_json(r["oracle"]), Trace.from_json(r["engine"])
    else:
        program, divs = _failed_program(r, pseed, ctx)
    judged = judge(program, divs, oracle_trace, engine_trace, ctx.classes)
    part = {"crash": "crashes", "timeout": "timeouts"}.get(divs[0].what, "divergences")
    folder = ctx.out / part / f"{index:04d}-seed{pseed}"
    paths = write_divergence(folder, program, oracle_trace, engine_trace, divs, ctx.engine,
                             ctx.engine_spec, ctx.oracle_spec, r.get("graphs"), ctx.classes)
    return {"index": index, "program_seed": pseed, **judged,
            "statements": sum(1 for _ in program.walk()),
            "minimized_from": program.meta.get("minimized_from"),
            "folder": str(folder), **{k: v for k, v in paths.items()},
            **({"traceback": r["internal"]} if r.get("internal") else {}),
            **{k: getattr(divs[0], k) for k in ("segment", "localised_to")
               if getattr(divs[0], k) is not None}}


def judge(program: Program, divs: list[Divergence], oracle_trace: Trace | None,
          engine_trace: Trace | None, classes: tuple[str, ...] | frozenset[str]
          ) -> dict[str, Any]:
    """The verdict fields of a failing program's entry. `clauses`: every clause involved (the
    backward slices); `primary`: the clause defining what the oracle did at the first
    divergence, which the per-clause table counts and expected failures match, and
    `signature` its kind of problem (judge/verdict.py); `not_applicable` when the first
    divergence in a claimed class is of a class the engine does not claim."""
    attribute(program, oracle_trace, engine_trace, [d for d in divs if not d.signature])
    cites: dict[str, None] = {}
    for d in divs:
        cites.update(dict.fromkeys(d.clauses))
    primary, signature = verdict(divs, classes)
    # the divergence the program is judged by (its first in a claimed class, a sweep's
    # differing value before the warnings it also differs in), whose every field the entry
    # gives: its primary clause and signature with another divergence's line misled
    first = lead(divs, classes)
    unclaimed = not_claimed(first.cls, classes)
    return {"what": first.what, "path": first.path, "clauses": list(cites), "primary": primary,
            "signature": signature, "class": first.cls, "first": str(first),
            **({"not_applicable": unclaimed} if unclaimed else {})}


def column(entry: dict[str, Any], too_new: set[str] | frozenset[str],
           xfails: list[Xfail]) -> tuple[str, Xfail | None]:
    """Where a divergent program's entry goes: "divergences" (it fails the run: a harness
    error or an internal error of gradspec always does), "not_applicable" (its primary
    clauses are all newer than the oracle), or "expected_failures" with the expected-failure
    entry that matches it."""
    primary = entry["primary"]
    if not_judged(entry):               # gradspec's own failure: nothing excuses it
        return "divergences", None
    if primary and all(c in too_new for c in primary):
        return "not_applicable", None
    x = xfail_match(xfails, primary, entry["program_seed"], entry.get("signature", ""),
                    entry.get("class"))
    return ("expected_failures", x) if x is not None else ("divergences", None)


def fails_run(classes: tuple[str, ...], too_new: set[str] | frozenset[str],
              xfails: list[Xfail]) -> Callable[[int, dict[str, Any]], bool]:
    """Whether the result of the program of a seed fails the run, as the report will judge it:
    an oracle failure, a crash, a hang or gradspec's own error always does (the run cannot
    exit 0); a divergent program unless it is of a class not claimed, not applicable or
    expected."""
    def fails(pseed: int, r: dict[str, Any]) -> bool:
        if r.get("oracle_failure") or r.get("failure") or r.get("internal"):
            return True
        if not r.get("divergences"):
            return False
        divs = [Divergence.from_json(d) for d in r["divergences"]]
        entry = {"program_seed": pseed, **judge(
            Program.from_json(r["program"]), divs, Trace.from_json(r["oracle"]),
            Trace.from_json(r["engine"]), classes)}
        return not entry.get("not_applicable") and column(entry, too_new, xfails)[0] == \
            "divergences"
    return fails
