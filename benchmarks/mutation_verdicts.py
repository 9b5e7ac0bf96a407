"""How one mutant's `gradspec run` is judged, which mutants a seed draws, and how survivors
take the explanations written for them: the parts of benchmarks/bench_mutation.py that run no
mutation tool and no engine, kept apart so that tests can check them without either.

A mutant is *killed* when the run reports a divergence, an engine crash or an engine timeout
(exit 1, or exit 3 for too many crashes or timeouts); *survived* when the run is clean (exit
0); *unjudged* otherwise (an oracle failure, a harness error, no verdict in time): only what
the engine did may kill it. A survivor named in the annotations file (per mutant ID: its line,
verdict "equivalent" or "gap", a one-line reason) carries its reason; one judged equivalent by
inspection leaves the kill rate's denominator.
"""
from __future__ import annotations

import difflib
import json
import random
from dataclasses import dataclass
from pathlib import Path

from conformance.judge.compare import not_judged

VERDICTS = ("equivalent", "gap")


class UsageError(Exception):
    """Bad input: one line on stderr, exit 2."""


@dataclass
class Mutant:
    key: str                    # module:operator#occurrence, stable while the source is
    job_id: str                 # cosmic-ray's work-item ID in the session database
    module: str
    operator: str
    occurrence: int
    line: int
    definition: str | None


@dataclass
class Outcome:
    key: str
    module: str
    operator: str
    line: int
    definition: str | None
    status: str                 # killed, survived, equivalent, unjudged
    exit_code: int | None
    first_catch: int | None = None
    detail: str = ""
    divergent: int = 0
    crashed: int = 0
    timed_out: int = 0
    seconds: float = 0.0
    why: str = ""               # a survivor's one-line explanation (annotations file)
    diff: str = ""


def mutant_key(module: str, operator: str, occurrence: int) -> str:
    return f"{module}:{operator}#{occurrence}"


def sample_mutants(mutants: list[Mutant], n: int | None, seed: int) -> list[Mutant]:
    """`n` mutants drawn by `seed` from the ones given in any order (all when n is None or
    larger), returned in key order: the same mutants for the same source, seed and n."""
    ordered = sorted(mutants, key=lambda m: m.key)
    if n is None or n >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, n), key=lambda m: m.key)


def line_map(old: str, new: str) -> dict[int, int]:
    """Line numbers (from 1) of `old` -> those of the same line in `new`, for the lines
    difflib finds unchanged; a changed or removed line has none."""
    a, b = old.split("\n"), new.split("\n")
    out: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for i in range(block.size):
            out[block.a + i + 1] = block.b + i + 1
    return out


def carry(keys: list[str], old: list[Mutant], new: list[Mutant],
          maps: dict[str, dict[int, int]]) -> tuple[list[tuple[Mutant, Mutant]], list[str]]:
    """(old, new) pairs: the mutants of `new` that are the mutants `keys` of `old` (the same
    operator at the same place of a line that did not change: `maps`, per module, from
    line_map), in the new keys' order; and the keys whose line changed, which have none."""
    def place(ms: list[Mutant], m: Mutant) -> int:     # its rank among its line's same kind
        return sorted(o.occurrence for o in ms if (o.module, o.operator, o.line) ==
                      (m.module, m.operator, m.line)).index(m.occurrence)
    by_key = {m.key: m for m in old}
    carried, lost = [], []
    for key in keys:
        m = by_key[key]
        line = maps.get(m.module, {}).get(m.line)
        same = sorted((n for n in new if (n.module, n.operator, n.line) ==
                       (m.module, m.operator, line)), key=lambda n: n.occurrence)
        rank = place(old, m)
        if line is None or rank >= len(same):
            lost.append(key)
        else:
            carried.append((m, same[rank]))
    return sorted(carried, key=lambda pair: pair[1].key), lost


def carry_annotations(annotations: dict, pairs: list[tuple[Mutant, Mutant]]) -> dict:
    """The annotations of the old mutants of `pairs` (at their old lines), under the keys and
    lines of the new ones: an explanation follows its mutant to where the line moved."""
    out = {}
    for m, n in pairs:
        note = annotations.get(m.key)
        if note is not None and note["line"] == m.line:
            out[n.key] = {**note, "line": n.line}
    return out


def first_catch(report: dict) -> int | None:
    """Programs run until the first one that caught the engine (indices count from 0)."""
    found = [e["index"] for k in ("divergences", "crashes", "timeouts")
             for e in report.get(k, []) if not not_judged(e)]
    return min(found) + 1 if found else None


def classify(exit_code: int | None, report: dict | None) -> tuple[str, str]:
    """(status, detail) of one `gradspec run` on a mutant, from its exit status and report.
    Only what the engine did kills: an oracle failure, a harness error or a program gradspec
    itself failed on never does. Exit 3
    kills when the engine crashed or hung too often to judge the rest; exit 130 (the run was
    interrupted, its report partial) when what ran already shows the engine failing."""
    if report is None:
        return "unjudged", "no report.json" if exit_code is not None else "no verdict in time"
    engine_failed = bool(report.get("crashes") or report.get("timeouts"))
    harness = any(not_judged(d) for d in report.get("divergences", []))
    diverged = bool(report.get("divergences")) and not harness
    if exit_code == 0 and not report.get("divergences") and not engine_failed:
        return "survived", "no divergence"
    if harness or report.get("oracle_failures"):
        return "unjudged", f"exit {exit_code}: {report.get('unjudged') or _counts(report)}"
    if exit_code == 1 or (exit_code == 3 and engine_failed):
        return "killed", f"{_counts(report)}; {report.get('unjudged') or ''}".rstrip("; ")
    if exit_code == 130 and (engine_failed or diverged):
        return "killed", (f"{_counts(report)} in the {report.get('programs')} programs run "
                          "before the run was stopped")
    return "unjudged", f"exit {exit_code}: {report.get('unjudged') or _counts(report)}"


def divergent(report: dict) -> int:
    """The programs the engine diverged on: not those gradspec failed on (not judged)."""
    return sum(not not_judged(d) for d in report.get("divergences", []))


def _counts(report: dict) -> str:
    return (f"{divergent(report)} divergent, {len(report.get('crashes', []))} "
            f"crashed, {len(report.get('timeouts', []))} timed out")


def annotate(outcome: Outcome, annotations: dict) -> Outcome:
    """A survivor takes its explanation from the annotations; an equivalent one changes status.
    An entry whose line no longer matches the mutant is stale (the source moved) and ignored."""
    note = annotations.get(outcome.key)
    if outcome.status != "survived" or note is None:
        return outcome
    if note["line"] != outcome.line:
        outcome.why = f"(stale annotation for line {note['line']}) {note['why']}"
        return outcome
    outcome.why = note["why"]
    if note["verdict"] == "equivalent":
        outcome.status = "equivalent"
    return outcome


def load_annotations(path: Path) -> dict:
    """The annotations file: {"source": the commit whose mutants it explains, "mutants":
    {mutant ID: {"line": int, "verdict": "equivalent" or "gap", "why": str}}}; the mutants."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--annotations {path}: {exc}") from None
    if not (isinstance(data, dict) and isinstance(data.get("source"), str)
            and isinstance(data.get("mutants"), dict)):
        raise UsageError(f"--annotations {path}: expected an object with a source commit and "
                         "its mutants")
    for key, note in data["mutants"].items():
        if not (isinstance(note, dict) and isinstance(note.get("line"), int)
                and note.get("verdict") in VERDICTS and isinstance(note.get("why"), str)):
            raise UsageError(f"--annotations {path}: entry {key!r} needs an integer line, "
                             f"verdict one of {', '.join(VERDICTS)} and a why")
    return data["mutants"]


def summarize(outcomes: list[Outcome]) -> dict:
    """Counts, the kill rate over the non-equivalent judged mutants, programs-to-first-catch."""
    counts = {s: sum(o.status == s for o in outcomes)
              for s in ("killed", "survived", "equivalent", "unjudged")}
    judged = counts["killed"] + counts["survived"]
    catches = sorted(o.first_catch for o in outcomes if o.first_catch is not None)
    summary: dict = {"mutants": len(outcomes), **counts,
                     "kill_rate": round(counts["killed"] / judged, 4) if judged else None}
    by_module: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = by_module.setdefault(o.module, dict.fromkeys(counts, 0))
        row[o.status] += 1
    summary["by_module"] = dict(sorted(by_module.items()))
    if catches:
        summary["first_catch"] = {
            "min": catches[0], "median": catches[len(catches) // 2], "max": catches[-1],
            "at_1": sum(c == 1 for c in catches), "within_10": sum(c <= 10 for c in catches),
            "within_100": sum(c <= 100 for c in catches)}
    return summary


def resumable(data: dict, meta: dict) -> dict[str, Outcome]:
    """The outcomes of an earlier result file, by mutant ID, when it measured the same thing
    (tool, source and gradspec flags); survivors lose their annotation, to take today's, and
    unjudged mutants are left out, to be judged again."""
    for key in ("tool", "source", "gradspec_run"):
        if data.get(key) != meta[key]:
            raise UsageError(f"--resume: the file's {key} is {data.get(key)!r}, this run's "
                             f"{meta[key]!r}")
    out = {}
    for entry in data.get("results", []):
        try:
            outcome = Outcome(**entry)
        except TypeError as exc:
            raise UsageError(f"--resume: not a result of this script ({exc})") from None
        if outcome.status == "unjudged":
            continue
        if outcome.status == "equivalent":
            outcome.status = "survived"
        if outcome.status == "survived":
            outcome.why = ""
        out[outcome.key] = outcome
    return out
