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

# `gradspec run`'s default: 20 programs per clause when the campaign has its default budget or
# more (a smaller --count is a quick look and stays the size asked for; --per-clause sets it)
PER_CLAUSE = 20
DEFAULT_COUNT = 300
# programs read past the campaign's own, at most, looking for the rare clauses (reading one
# is generating it, about a millisecond; the default campaign needs 300 to 400)
SCAN = 1500


def default_per_clause(count: int) -> int:
    """The minimum `gradspec run` applies when --per-clause is not given."""
    return PER_CLAUSE if count >= DEFAULT_COUNT else 0


def eligible(caps: frozenset[str]) -> list[str]:
    """The clauses a generated program can exercise under the capabilities, in spec order."""
    from ..generate import NOT_GENERATED
    from ..spec.reader import load_spec
    return [c.id for c in load_spec().active()
            if not c.id.startswith("UNSPEC-") and c.id not in NOT_GENERATED
            and caps.issuperset(c.requires)]


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
                "scanned": self.scanned, "short": dict(self.short)}


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
    return top_up(counts, further[:SCAN], lambda s: source(s, caps, size).clauses(),
                  eligible(caps), per_clause, SCAN)
