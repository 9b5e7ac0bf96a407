"""A campaign's failing programs as problems: its report entries grouped by the kind of
problem (signature) under the clause that defines it (primary: judge/verdict.py), and which of
them gradspec could not judge (a harness error, or a program gradspec failed on), never a
problem of the engine's."""
from __future__ import annotations

from typing import Any

from ..lang.trace import HARNESS

INTERNAL = "internal"   # the `what` of the entry of a program gradspec itself failed on


def not_judged(entry: dict[str, Any]) -> bool:
    """Whether a campaign's entry for a divergent program is gradspec's failure, not the
    engine's: a harness error, or a program gradspec (or its program source) failed on. Such
    a program was not judged; nothing excuses it, and it is never counted as divergent."""
    return entry.get("what") in (HARNESS, INTERNAL)


def group(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Divergent programs (report entries) grouped by problem: the same signature under the
    same primary clause; per group its count, the programs and the smallest of them, and
    `not_judged` for programs gradspec failed on (`not_judged`: never one of the
    engine's problems, and never grouped with one). Most frequent first, then by signature:
    the order never depends on timing."""
    by: dict[tuple[str, str, bool], list[dict[str, Any]]] = {}
    for entry in entries:
        primary = (entry.get("primary") or [""])[0]
        by.setdefault((entry.get("signature", ""), primary, not_judged(entry)), []
                      ).append(entry)
    out = []
    for (signature, primary, unjudged), members in by.items():
        small = min(members, key=lambda m: (m.get("statements") or 0, m["index"]))
        out.append({"signature": signature, "primary": primary or None,
                    "class": small.get("class"), "count": len(members),
                    "programs": [m["index"] for m in members], "smallest": small["index"],
                    "program_seed": small.get("program_seed"),
                    "statements": small.get("statements"), "folder": small.get("folder"),
                    "repro_engine": small.get("repro_engine"),
                    "first": small.get("first", "").splitlines()[0] if small.get("first")
                    else "", **({"not_judged": True} if unjudged else {})})
    out.sort(key=lambda g: (-g["count"], g["signature"], g["primary"] or ""))
    return out
