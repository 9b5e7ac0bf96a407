"""What `gradspec run` prints at its end: the clause table, the run's counts in one line, the
counts per class and one line per problem, crash, timeout, oracle failure, expected failure
and stale entry. A program gradspec failed on (a harness error, its own exception) is "not
judged", never counted as divergent (judge/compare.py, `not_judged`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .classes import summary as class_summary
from .report import EXIT_UNJUDGED, MAX_UNJUDGED, Report, clause_table  # noqa: F401 (cli)


def coverage_line(coverage: dict[str, Any], count: int) -> str:
    """The per-clause minimum in one line: what it added, and what it could not reach."""
    n, added = coverage["per_clause"], coverage["added"]
    line = (f"per-clause minimum {n}: {count} programs + {added} more of the stream that "
            f"exercise rarer clauses (of {coverage['scanned']} read)")
    short = coverage.get("short") or {}
    if short:
        line += (f"; still under {n}: " + ", ".join(f"{c} ({k})" for c, k in short.items()))
    return line


def print_summary(report: Report, out_dir: str | Path) -> None:
    unjudged = len(report.divergences) - report.divergent
    print(clause_table(report.clauses))
    print()
    print(f"{report.engine} {report.engine_version} ({report.device}) vs {report.oracle} "
          f"{report.oracle_version}, spec {report.spec_version}, seed {report.seed}: "
          f"{report.programs} programs, {report.divergent} divergent, "
          + (f"{unjudged} not judged (gradspec failed on them), " if unjudged else "")
          + f"{len(report.crashes)} crashed, {len(report.timeouts)} timed out, "
          f"{len(report.oracle_failures)} oracle failures, {report.seconds:.1f} s"
          + ("" if report.complete else f" (INCOMPLETE: interrupted, {report.programs} of "
             f"{report.count} programs ran)")
          + (f" (stopped at {report.maxfail} failing program(s), --maxfail: the programs "
             "after the last of them were not run)" if report.stopped else ""))
    if report.coverage:
        print(coverage_line(report.coverage, report.count))
    if report.classes:
        print("\n".join(class_summary(report)))
    states = [r.get("status") for r in report.clauses.values()]
    if any(states):
        print("clauses: " + ", ".join(f"{states.count(k)} {k}" for k in
                                      ("pass", "diverges", "xfail", "n/a")))
    if report.groups:
        print(f"{report.divergent} divergent programs"
              + (f" and {unjudged} not judged" if unjudged else "")
              + f", {report.problems} distinct problem(s)"
              + (f" and {len(report.groups) - report.problems} group(s) not judged"
                 if len(report.groups) > report.problems else "")
              + "; the smallest program of each:")
    for g in report.groups[:20]:
        print(f"  {g['count']} x [{g['primary'] or '-'}] {g['signature']}: #{g['smallest']} "
              f"({g['statements']} statements) {g['first']}\n      repro: {g['repro_engine']}")
    if len(report.groups) > 20:
        print(f"  ... {len(report.groups) - 20} more problems in "
              f"{Path(out_dir) / 'report.json'}")
    for kind, d in [("crash", d) for d in report.crashes[:10]] + [
            ("timeout", d) for d in report.timeouts[:10]]:
        print(f"  {kind} on program #{d['index']} (not counted as a divergence): "
              f"{d['first'].splitlines()[0]}\n      repro: {d['repro_engine']}")
    for f in report.oracle_failures:
        print(f"  oracle failure on program #{f['index']} (not counted as a divergence): "
              f"{f['detail']}\n      repro: {f['repro_torch']}")
    for d in report.expected_failures[:10]:
        print(f"  expected failure #{d['index']} ({d['xfail']['id']}: {d['xfail']['reason']}): "
              f"{d['first'].splitlines()[0]}")
    for d in report.not_applicable[:10]:
        print(f"  not applicable #{d['index']} ({d['not_applicable']}): "
              f"{d['first'].splitlines()[0]}")
    more = max(0, len(report.expected_failures) - 10) + max(0, len(report.not_applicable) - 10)
    if more:
        print(f"  ... {more} more expected or not applicable in {Path(out_dir) / 'report.json'}")
    for x in report.stale_xfails:
        print(f"  stale expected failure, line {x['line']}: {x['id']}: {x['stale']}")
    for c in report.capability_checks:
        if c["verdict"] not in ("ok", "unprobed"):
            print(f"  capability {c['capability']}: {c['verdict']}: {c['detail']}")
    print(f"report: {Path(report.folder or out_dir) / 'report.json'}")
