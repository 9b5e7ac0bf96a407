"""What the draws tests of one statement family share: the programs of a seed range that hold
a statement kind, and the clauses a verdict blames when refimpl is given a fault."""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import Any

from conformance.engines import load_engine
from conformance.gen.core import ALL_CAPABILITIES, program_for_seed
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.judge.verdict import verdict
from conformance.lang.program import Program
from conformance.lang.validate import validate


def first_of(p: Program, op: str) -> int | None:
    """The place in p's walk of its first statement of kind `op`, or None."""
    return next((i for i, (_, s) in enumerate(p.walk()) if s.op == op), None)


def drawn_with(op: str, seeds: Iterable[int], size: int = 20) -> list[tuple[int, Program]]:
    """(seed, program) for the seeds whose program (all capabilities) holds an `op`."""
    return [(seed, p) for seed in seeds
            if first_of(p := program_for_seed(seed, ALL_CAPABILITIES, size), op) is not None]


def assert_drawn_only_where_declared(drawn: list[tuple[int, Program]], op: str,
                                     capability: str, since: int, checked: int = 25) -> None:
    """The first `checked` programs holding an `op` are valid, and the same seeds draw none in
    the vocabulary before `since` nor without `capability`."""
    without = tuple(c for c in ALL_CAPABILITIES if c != capability)
    for seed, p in drawn[:checked]:
        validate(p)
        older = program_for_seed(seed, ALL_CAPABILITIES, 20, vocabulary=since - 1)
        assert first_of(older, op) is None, (seed, since - 1)
        assert first_of(program_for_seed(seed, without, 20), op) is None, (seed, capability)


def blamed(programs: Iterable[Program], fault: Callable[[Any], Any], monkeypatch: Any
           ) -> collections.Counter[str]:
    """The primary clauses of the divergences refimpl shows from torch on `programs` once
    `fault(monkeypatch)` has broken it (torch runs first, unbroken), one count per program."""
    torch = load_engine("torch")
    oracles = [(p, execute(p, torch)) for p in programs]
    fault(monkeypatch)
    ref = load_engine("refimpl")
    primaries: collections.Counter[str] = collections.Counter()
    for p, oracle in oracles:
        found = compare(p, oracle, execute(p, ref))
        if found:
            primaries[", ".join(verdict(found)[0])] += 1
    return primaries
