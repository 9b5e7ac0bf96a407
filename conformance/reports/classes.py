"""Conformance classes in a campaign (spec/README.md, "Conformance classes"): what an engine
claims, and what a report counts per class.

An engine claims classes (conformance/engines/base.py, `Engine.classes`; `gradspec run
--classes` overrides the claim for one run). Each compared divergence has a class
(conformance/judge/verdict.py); a program is judged by its first divergence in a claimed class,
and one whose divergences are all in classes the engine does not claim is not applicable: set
apart with the reason, never failing the run. A clause of an unclaimed class is n/a in the
clause table. report.json's `by_class` counts, per class, whether it is claimed, the divergent
programs and distinct problems, the expected failures and the programs not compared; each
program counts once, in the class of the divergence it is judged by (harness errors, crashes,
timeouts and grad-mode leaks are in no class: they count in the totals only).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..engines import EngineError
from ..engines.base import Engine
from ..judge.problems import not_judged
from ..spec.reader import CLASSES


class ClassError(ValueError):
    """Classes that are not the spec's, or none; the message is one line."""


def claim(classes: Iterable[str] | str, who: str = "") -> tuple[str, ...]:
    """The classes claimed (a string: comma-separated), validated, in the spec's order
    (CLASSES); `who` starts the message of the error."""
    given = [c.strip() for c in classes.split(",") if c.strip()] if isinstance(classes, str) \
        else list(classes)
    unknown = [c for c in given if c not in CLASSES]
    where = f"{who}: " if who else ""
    if unknown:
        raise ClassError(f"{where}{', '.join(repr(c) for c in unknown)} is not a conformance "
                         f"class (classes: {', '.join(CLASSES)})")
    if not given:
        raise ClassError(f"{where}name at least one conformance class ({', '.join(CLASSES)})")
    return tuple(c for c in CLASSES if c in given)


def engine_claim(engine: Engine, override: Iterable[str] | None = None) -> tuple[str, ...]:
    """The classes a run judges an engine on: `override` (`--classes`), else its claim; an
    EngineError (an adapter's mistake, or a bad override) if they are not the spec's."""
    try:
        if override is not None:
            return claim(override)
        return claim(engine.classes, f"engine {engine.name} claims classes")
    except ClassError as exc:
        raise EngineError(str(exc)) from None


def parse(text: str) -> tuple[str, ...]:
    """`core,diagnostics` -> the classes it names (ClassError if any is not a class)."""
    return claim(text)


def not_claimed(cls: str | None, classes: Iterable[str]) -> str | None:
    """Why a program judged by a divergence of `cls` is not compared; None if it is."""
    if cls is None or cls in classes:
        return None
    return f"class {cls}, which the engine does not claim"


def apply_classes(spec, rows: dict[str, dict[str, Any]], classes: Iterable[str]) -> set[str]:
    """Clauses of a class the engine does not claim become not applicable, with the reason;
    returns their IDs."""
    classes = frozenset(classes)
    out = set()
    for cid, row in rows.items():
        c = spec.clauses.get(cid)
        if c is not None and c.cls not in classes:
            out.add(cid)
            if row["applicable"]:
                row["applicable"] = False
                row["reason"] = f"class {c.cls}, which the engine does not claim"
    return out


def class_counts(report: Any) -> dict[str, dict[str, Any]]:
    """Per class (CLASSES order): claimed, divergent programs and distinct problems (none
    that gradspec failed on: judge/problems.py, `not_judged`), expected failures and programs
    not compared (the class is not claimed, or the primary clause is
    newer than the oracle)."""
    out: dict[str, dict[str, Any]] = {}
    for cls in CLASSES:
        out[cls] = {
            "claimed": cls in report.classes,
            "divergent_programs": sum(e.get("class") == cls and not not_judged(e)
                                      for e in report.divergences),
            "distinct_problems": sum(g.get("class") == cls and not g.get("not_judged")
                                     for g in report.groups),
            "expected_failures": sum(e.get("class") == cls for e in report.expected_failures),
            "not_applicable": sum(e.get("class") == cls for e in report.not_applicable)}
    return out


def summary(report: Any) -> list[str]:
    """The console lines of the per-class counts."""
    counts = class_counts(report)
    w = max(len(c) for c in CLASSES)
    out = [f"classes claimed: {', '.join(report.classes)}"]
    for cls, n in counts.items():
        text = (f"{n['divergent_programs']} divergent programs, {n['distinct_problems']} "
                f"distinct problem(s)") if n["claimed"] else "not claimed"
        if n["expected_failures"]:
            text += f", {n['expected_failures']} expected failure(s)"
        if n["not_applicable"]:
            text += f", {n['not_applicable']} program(s) not compared"
        out.append(f"  {cls:<{w}}  {text}")
    return out
