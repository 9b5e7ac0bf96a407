"""Shrink a divergent program to a small one that still diverges the same way.

Delta debugging (Zeller's ddmin) over statements: try dropping chunks, halving the chunk size
when nothing can go. Dropping a statement also drops every later statement that uses a name
only it bound (`prune`), and a candidate of a valid program is tried only if it validates too
(conformance/lang/validate.py). Grad-mode bodies are shrunk the same way after the top level.
Used by `gradspec run` before a divergence is written out.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ..engines.base import Engine
from ..kinds import KINDS
from ..lang.program import Program, Stmt
from ..lang.validate import is_valid
from .compare import Divergence, compare
from .conditioning import Relief
from .executor import execute, names
from .verdict import lead


def prune(stmts: list[Stmt], bound: set[str] | None = None) -> list[Stmt]:
    """Drop statements that use names nothing earlier binds, and grad-mode blocks left empty;
    a sweep keeps the items whose tensor is still bound (dropping one tensor's binder must
    not drop the observations of the others)."""
    bound = set() if bound is None else bound
    out: list[Stmt] = []
    for s in stmts:
        if s.op in KINDS and KINDS[s.op].sweeps:
            items = [it for it in s.params.get("of") or [] if it and it[0] in bound]
            if not items:
                continue
            s = replace(s, params={**s.params, "of": items})
        read, binds = names(s)
        if not all(n in bound for n in read):
            continue
        if s.op in KINDS and KINDS[s.op].block:
            body = prune(s.body, bound)
            if not body:
                continue
            s = replace(s, body=body)
        bound.update(binds)
        out.append(s)
    return out


def signature(d: Divergence) -> tuple[str, str, str | None, str]:
    """What must stay the same while shrinking: the kind of difference, the statement kind,
    and the problem (primary clause and signature, conformance/judge/verdict.py)."""
    return (d.what, d.op, d.primary, d.signature)


def same_problem(found: list[Divergence], target: Divergence) -> bool:
    """Whether the divergences of a candidate lead with the problem of `target` (the one a
    report groups its program by), so that the smallest program is one of its group."""
    first = lead(found)
    return first is not None and signature(first) == signature(target)


def diverges_like(oracle: Engine, engine: Engine, target: Divergence
                  ) -> Callable[[Program], bool]:
    def test(p: Program) -> bool:
        o = execute(p, oracle)
        relief = Relief(p, o, lambda q: execute(q, oracle))
        return same_problem(compare(p, o, execute(p, engine), relief), target)
    return test


def _ddmin(items: list[Stmt], build: Callable[[list[Stmt]], Program],
           test: Callable[[Program], bool]) -> list[Stmt]:
    n = 2
    while len(items) >= 2:
        chunk = -(-len(items) // n)
        reduced = False
        for start in range(0, len(items), chunk):
            candidate = prune(items[:start] + items[start + chunk:])
            if len(candidate) < len(items) and test(build(candidate)):
                items, n, reduced = candidate, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(items):
                break
            n = min(2 * n, len(items))
    return items


class _Budget(Exception):
    pass


def _meta_for(program: Program, stmts: list[Stmt]) -> dict:
    """program's meta for a candidate made of some of its statements: the generator's
    predictions ("expect": path -> error kind, which segment engines read to run a statement
    that raises as a unit of its own: judge/segments.py) follow each top-level statement still
    there, unchanged, to its new index; those of statements dropped or rewritten (a block whose
    body was shrunk) are dropped, as their paths would name other statements."""
    meta = dict(program.meta)
    expect = meta.get("expect")
    if not isinstance(expect, dict):
        return meta
    was = {id(s): i for i, s in enumerate(program.statements)}
    now = {was[id(s)]: j for j, s in enumerate(stmts) if id(s) in was}
    moved = {}
    for path, kind in expect.items():
        top, dot, rest = str(path).partition(".")
        if top.isascii() and top.isdigit() and len(top) < 7 and int(top) in now:
            moved[f"{now[int(top)]}{dot}{rest}"] = kind
    meta["expect"] = moved
    return meta


def minimize(program: Program, test: Callable[[Program], bool], max_tests: int = 400,
             max_seconds: float = 10.0) -> Program:
    """The smallest program found that still passes `test` (the input if none is smaller)."""
    deadline = time.monotonic() + max_seconds
    count = 0
    last_good: list[Stmt] = list(program.statements)   # kept if the budget runs out
    valid = is_valid(program)       # then every candidate must be too (a cheap check)

    def limited(p: Program) -> bool:
        nonlocal count, last_good
        if valid and not is_valid(p):
            return False
        count += 1
        if count > max_tests or time.monotonic() > deadline:
            raise _Budget
        ok = test(p)
        if ok:
            last_good = p.statements
        return ok

    def build_top(stmts: list[Stmt]) -> Program:
        return Program(stmts, seed=program.seed, meta=_meta_for(program, stmts))

    best = list(program.statements)
    try:
        best = _ddmin(best, build_top, limited)
        k = 0
        while k < len(best):
            if best[k].op in KINDS and KINDS[best[k].op].block and len(best[k].body) >= 2:
                def with_body(body: list[Stmt], k: int = k, top: list[Stmt] = best
                              ) -> list[Stmt]:
                    return prune(top[:k] + [replace(top[k], body=body)] + top[k + 1:])
                body = _ddmin(best[k].body, lambda b: build_top(with_body(b)), limited)
                best = with_body(body)
            k += 1
    except _Budget:
        best = last_good
    result = build_top(best)
    result.meta["minimized_from"] = sum(1 for _ in program.walk())
    return result
