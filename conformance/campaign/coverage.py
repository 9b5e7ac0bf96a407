"""The per-clause minimum of a campaign: every clause a generated program can exercise is
exercised by at least `per_clause` programs.

A stream of generated programs exercises common clauses in most programs and rare ones (a
hook on a tensor written in place, a second backward through a freed shared subgraph) in a
few: in the 300 programs of `gradspec run`'s default campaign the rarest were in 10 of them,
and a bug that only those programs can show is found by luck. So after the campaign's own
`count` programs, the stream is read on (the next seeds of the same campaign seed, so that a
larger `--count` draws the same programs) and each further program that exercises a clause
still under the minimum is run too, until every clause has its `per_clause` programs or
SCAN further programs have been read. The choice is deterministic: the same seed, count,
size, capabilities and minimum give the same programs, serially or in parallel. Clauses still
short after the scan are reported with their counts, never hidden.

Which clauses count: the active clauses whose `requires` the engine and oracle cover, neither
left open (UNSPEC-*) nor outside what the generator draws (conformance/gen/vocabulary.py,
NOT_GENERATED). The tags are the generator's (`Program.clauses`), the ones the report's
clause table counts.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# `gradspec run`'s default: 20 programs per clause when the campaign has its default budget or
# more (a smaller --count is a quick look and stays the size asked for; --per-clause sets it)
PER_CLAUSE = 20
DEFAULT_COUNT = 300
# programs read past the campaign's own, at most, looking for the rare clauses (reading one
# is generating it, about a millisecond; the default campaign of vocabulary 18 adds 252)
SCAN = 1500


def default_per_clause(count: int, own_source: bool = False) -> int:
    """The minimum `gradspec run` applies when --per-clause is not given: none for a program
    source of the user's own (--source), whose programs have clauses of their own."""
    return PER_CLAUSE if count >= DEFAULT_COUNT and not own_source else 0


def eligible(caps: frozenset[str]) -> list[str]:
    """The clauses a generated program can exercise under the capabilities, in spec order:
    not one that only ops the engine lacks exercise (`lacks:<op>`)."""
    from ..generate import NOT_GENERATED
    from ..lang.ops import exercised_by
    from ..spec.capabilities import closure, lacked_ops
    from ..spec.reader import load_spec
    lacked, caps = lacked_ops(caps), closure(caps)
    return [c.id for c in load_spec().active()
            if not c.id.startswith("UNSPEC-") and c.id not in NOT_GENERATED
            and caps.issuperset(c.requires)
            and not (lacked and (by := exercised_by(c.id)) and set(by) <= lacked)]


@dataclass
class TopUp:
    """The programs added to reach the minimum: their seeds in stream order, how many programs
    were read to find them, and the clauses still under the minimum with their counts."""
    per_clause: int
    seeds: list[int] = field(default_factory=list)
    scanned: int = 0
    short: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"per_clause": self.per_clause, "added": len(self.seeds),
                "scanned": self.scanned, "short": dict(self.short), "seeds": list(self.seeds)}


def top_up(counts: Counter, candidates: Iterable[int], clauses_of: Callable[[int], list[str]],
           clauses: list[str], per_clause: int, scan: int) -> TopUp:
    """Read up to `scan` of the candidate seeds in order and keep each whose program
    (`clauses_of(seed)`: the clauses it exercises) exercises a clause of `clauses` that
    `counts` (programs per clause so far; updated) has under `per_clause`."""
    result = TopUp(per_clause)
    wanted = {c for c in clauses if counts[c] < per_clause}
    it = iter(candidates)
    while wanted and result.scanned < scan:
        seed = next(it, None)
        if seed is None:
            break
        result.scanned += 1
        tags = clauses_of(seed)
        if wanted.isdisjoint(tags):
            continue
        result.seeds.append(seed)
        counts.update(tags)
        wanted = {c for c in wanted if counts[c] < per_clause}
    result.short = {c: counts[c] for c in clauses if counts[c] < per_clause}
    return result


def stream_top_up(further: list[int], counts: Counter, source, caps: frozenset[str],
                  size: int, per_clause: int) -> TopUp:
    """top_up over `further`, the campaign's stream after its own programs (runner.py,
    program_seeds(seed, count + SCAN)[count:]), each candidate drawn by `source` (`counts`:
    programs per clause among the campaign's own)."""
    if per_clause <= 0:
        return TopUp(0)

    def clauses_of(s: int) -> list[str]:
        try:
            return source(s, caps, size).clauses()
        except Exception:  # noqa: BLE001 - a program source that fails on a seed: not added
            return []
    return top_up(counts, further[:SCAN], clauses_of, eligible(caps), per_clause, SCAN)


def campaign_top_up(run: Callable, seeds: list[int], results: list[dict[str, Any] | None],
                    further: list[int], source: Callable, caps: frozenset[str], size: int,
                    per_clause: int, max_unjudged: float
                    ) -> tuple[list[int], list[dict[str, Any] | None], bool, dict[str, Any]]:
    """The per-clause minimum (campaign/coverage.py) after a campaign's own programs: the
    programs added, run. Programs are counted by the clauses their statements exercise as
    drawn (regenerated where a crash, a hang or an oracle failure left no result to read),
    so that the same seeds are added whatever happened to the programs, as the pytest
    profile's clause items add them. Not when the programs already cannot be judged (a crash
    or hang on more than `max_unjudged` of them, an oracle failure): more programs would
    only take longer to say so. Ctrl-C while reading the stream: no program added, the
    report incomplete. `run(seeds, what)` runs programs: (results, complete); `further`: the
    stream after the campaign's own (runner.py, program_seeds(seed, count + SCAN)[count:]).
    Returns (seeds, results, complete, the report's `coverage`)."""
    failed = [r for r in results if r and ("failure" in r or "oracle_failure" in r)]
    if any("oracle_failure" in r for r in failed) or len(failed) > max_unjudged * len(seeds):
        return seeds, results, True, {"per_clause": per_clause, "added": 0, "scanned": 0,
                                      "short": {}, "seeds": [],
                                      "skipped": "the programs run so far cannot be judged"}
    try:
        counts = Counter(c for s, r in zip(seeds, results, strict=True)
                         for c in _drawn_clauses(s, r, source, caps, size))
        more = stream_top_up(further, counts, source, caps, size, per_clause)
    except KeyboardInterrupt:
        return seeds, results, False, {}
    if not more.seeds:
        return seeds, results, True, more.to_json()
    added, complete = run(more.seeds, f"to {per_clause} programs a clause")
    return seeds + more.seeds, results + added, complete, more.to_json()


def _drawn_clauses(pseed: int, r: dict[str, Any] | None, source: Callable,
                   caps: frozenset[str], size: int) -> list[str]:
    """The clauses the program of `pseed` exercises: its result's, or drawn again."""
    if r and r.get("clauses") and "failure" not in r and "internal" not in r:
        return list(r["clauses"])
    try:
        return source(pseed, caps, size).clauses()
    except Exception:  # noqa: BLE001 - a source that fails here failed in the worker too
        return []
