"""What the generator's programs look like, measured on the programs themselves.

    python -m tests.generator_stats [--profile run|ci] [--count N] [--size S] [--json FILE]

`run` draws the programs `gradspec run` draws (seeds of campaign seed 0); `ci` those the
derandomized pytest profile draws (Hypothesis, conformance/pytest_plugin.py). Reported:

- statements, backward-like statements and observations per program;
- how many leaves each backward-like statement (backward, autograd.backward, autograd.grad)
  reaches: measured by running the program on torch and walking the graph from the roots'
  grad_fn to the AccumulateGrad nodes, so that the figure does not trust the generator's own
  model of its graphs;
- per clause, how many programs exercise it (the clauses the statements are tagged with);
- per error kind and clause, how many programs have a statement with that clause on which
  torch raised that kind.

tests/conformance/test_generator_stats.py asserts the targets on these figures.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from conformance.engines.torchlike import TorchLike
from conformance.generate import ALL_CAPABILITIES, program_for_seed, programs
from conformance.judge.executor import execute
from conformance.lang.program import Program
from conformance.runner import program_seeds

BACKWARD_LIKE = ("backward", "backward_many", "grad")


def leaves_reached(roots: list[Any]) -> int:
    """The leaves requiring grad whose AccumulateGrad the roots' graphs reach."""
    seen: set[int] = set()
    leaves: set[int] = set()
    todo = [r.grad_fn for r in roots if r.grad_fn is not None]
    for r in roots:     # a bare leaf root reaches itself
        if r.grad_fn is None and r.requires_grad:
            leaves.add(id(r))
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            leaves.add(id(var))
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return len(leaves)


class Counting(TorchLike):
    """torch, recording the leaves each backward-like statement's roots reach."""

    def __init__(self) -> None:
        super().__init__(torch, "torch-counting", "cpu")
        self.reached: list[int] = []

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        self.reached.append(leaves_reached([t]))
        return super().backward(t, gradient, retain_graph, inputs, create_graph)

    def autograd_backward(self, tensors, grad_tensors, retain_graph, create_graph=False):
        self.reached.append(leaves_reached(list(tensors)))
        return super().autograd_backward(tensors, grad_tensors, retain_graph, create_graph)

    def autograd_grad(self, outputs, inputs, grad_outputs, retain_graph, allow_unused,
                      create_graph=False):
        self.reached.append(leaves_reached(list(outputs)))
        return super().autograd_grad(outputs, inputs, grad_outputs, retain_graph,
                                     allow_unused, create_graph)


@dataclass
class Stats:
    programs: int = 0
    statements: int = 0
    backward_like: int = 0
    observations: int = 0
    reached: Counter = field(default_factory=Counter)     # leaves reached -> statements
    clause_programs: Counter = field(default_factory=Counter)
    raised: Counter = field(default_factory=Counter)    # (error kind, clause) -> programs

    def add(self, program: Program, engine: Counting) -> None:
        self.programs += 1
        for _, s in program.walk():
            self.statements += 1
            self.backward_like += s.op in BACKWARD_LIKE
            self.observations += s.op in ("observe", "sweep")
        engine.reached.clear()
        trace = execute(program, engine)
        self.reached.update(engine.reached)
        stmts = dict(program.walk())
        self.raised.update({(ev.error, c) for ev in trace.events if ev.status == "error"
                            for c in stmts[ev.path].clauses})
        self.clause_programs.update(program.clauses())

    def share_reaching(self, at_least: int) -> float:
        total = sum(self.reached.values())
        return sum(n for k, n in self.reached.items() if k >= at_least) / max(1, total)

    def to_json(self) -> dict[str, Any]:
        n = max(1, self.programs)
        return {"programs": self.programs,
                "statements_per_program": round(self.statements / n, 2),
                "backward_like_per_program": round(self.backward_like / n, 2),
                "observations_per_program": round(self.observations / n, 2),
                "backward_like_measured": sum(self.reached.values()),
                "reaching_2_or_more": round(self.share_reaching(2), 3),
                "reaching_3_or_more": round(self.share_reaching(3), 3),
                "leaves_reached": dict(sorted(self.reached.items())),
                "clause_programs": dict(sorted(self.clause_programs.items())),
                "raised_programs": {f"{k} {c}": n for (k, c), n in sorted(self.raised.items())}}


def run_profile_programs(count: int, size: int, seed: int = 0, per_clause: int | None = None
                         ) -> list[Program]:
    """The programs `gradspec run --seed SEED --count COUNT --size SIZE --per-clause N` runs
    (N None: its default for COUNT): the stream's first COUNT, then those the per-clause
    minimum adds (conformance/campaign/coverage.py)."""
    from collections import Counter

    from conformance.campaign.coverage import SCAN, default_per_clause, stream_top_up
    caps = frozenset(ALL_CAPABILITIES)
    seeds = program_seeds(seed, count + SCAN)
    progs = [program_for_seed(s, caps, size) for s in seeds[:count]]
    n = default_per_clause(count) if per_clause is None else per_clause
    counts = Counter(c for p in progs for c in p.clauses())
    more = stream_top_up(seeds[count:], counts, program_for_seed, caps, size, n)
    return progs + [program_for_seed(s, caps, size) for s in more.seeds]


def clause_items_programs(profile: str = "ci") -> list[Program]:
    """The programs the pytest profile's clause items run (conformance/suite/clauses.py),
    for an engine with every capability."""
    from conformance.pytest_plugin import PROFILE_TABLE
    from conformance.suite.clauses import Stream
    p = PROFILE_TABLE[profile]
    stream = Stream(p.seed or 0, frozenset(ALL_CAPABILITIES), p.size, p.programs, p.per_clause)
    return [stream.program(i) for i in range(len(stream.seeds))]


def ci_profile_programs(count: int, size: int) -> list[Program]:
    """The programs the derandomized pytest profile draws (count examples)."""
    from hypothesis import given

    from conformance.pytest_plugin import PROFILE_TABLE, hypothesis_settings
    drawn: list[Program] = []

    @hypothesis_settings(PROFILE_TABLE["ci"], max_examples=count)
    @given(programs(frozenset(ALL_CAPABILITIES), size))
    def collect(program):
        drawn.append(program)
    collect()
    return drawn


def measure(progs: list[Program]) -> Stats:
    engine, stats = Counting(), Stats()
    for p in progs:
        stats.add(p, engine)
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.generator_stats",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=("run", "ci", "ci-clauses"), default="run",
                    help="run: gradspec run's programs; ci: the pytest ci profile's Hypothesis "
                    "examples; ci-clauses: its clause items' programs")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--size", type=int, default=20)
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    if a.count < 1 or a.size < 1:
        ap.error("--count and --size must be positive")
    progs = (run_profile_programs(a.count, a.size) if a.profile == "run" else
             ci_profile_programs(a.count, a.size) if a.profile == "ci" else
             clause_items_programs())
    figures = measure(progs).to_json()
    out = json.dumps(figures, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(out + "\n")
    summary = {k: v for k, v in figures.items() if k not in ("clause_programs",
                                                              "raised_programs")}
    print(json.dumps(summary, indent=1))
    low = {c: n for c, n in figures["clause_programs"].items() if n < 20}
    print(f"clauses exercised by fewer than 20 programs: {len(low)} {low}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def vocabulary_2(seed: int, capabilities, size: int) -> Program:
    """A program source for `gradspec run --source tests.generator_stats:vocabulary_2`: the
    programs of generator vocabulary 2 (before graphs were joined on purpose, focus moves and
    the closing sweep), to measure what vocabulary 3 catches that it did not."""
    return program_for_seed(seed, capabilities, size, vocabulary=2)
