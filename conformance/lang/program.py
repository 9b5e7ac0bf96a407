"""Autograd programs as plain data.

A program is a list of statements over named tensors. It is what the generator draws, what the
executor runs on an engine, what a divergence report saves (JSON) and what `gradspec replay`
reads back. Each statement kind (its fields, the capabilities it needs, how it runs and renders)
is one class in conformance/kinds; KINDS below is their table, which that package fills.

Fields of a statement:
    op       the statement kind: a name in KINDS
    out      the name the statement binds (a tensor or a hook handle), if any
    target   the name the statement acts on, if any
    args     operands: tensor names (str) or Python numbers (int/float); None where allowed
    params   kind-specific settings, JSON-able (each kind's `doc`)
    body     nested statements (grad-mode blocks only)
    clauses  spec clause IDs the statement exercises (set by the generator)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .ops import FUNCTIONS, INPLACE, VIEWS, index_value

FORMAT_VERSION = 1

# The statement kinds of the language, op -> kind (a conformance.kinds.Kind), in the language's
# order. conformance/kinds fills this table (it is that package's registry): the program format
# reads it to tell an op from a typo and to ask a kind which capabilities a statement needs.
KINDS: dict[str, Any] = {}

# FUNCTIONS, VIEWS and INPLACE (the fn of call / view / inplace statements -> its operands) are
# views of the op table (conformance/lang/ops.py), and so is index_of, the reader of the INDEX
# encoding: a list of items, each an int or {"slice": [start, stop, step]} (None allowed), e.g.
# x[0, 1:3] is [0, {"slice": [1, 3, None]}].
index_of = index_value
__all__ = ["FORMAT_VERSION", "FUNCTIONS", "INPLACE", "KINDS", "VIEWS", "HarnessError",
           "Program", "ProgramError", "Stmt", "index_of"]


class HarnessError(Exception):
    """A statement gradspec cannot express to an engine (a malformed field, an unknown op, fn
    or observable): gradspec's own mistake or a bad program, never the engine's."""


class ProgramError(HarnessError, ValueError):
    """A program file or object is malformed."""


@dataclass
class Stmt:
    op: str
    out: str | None = None
    target: str | None = None
    args: list[Any] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    body: list[Stmt] = field(default_factory=list)
    clauses: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op}
        for k in ("out", "target"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.args:
            d["args"] = list(self.args)
        if self.params:
            d["params"] = self.params
        if self.body:
            d["body"] = [s.to_json() for s in self.body]
        if self.clauses:
            d["clauses"] = list(self.clauses)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any], where: str = "statement") -> Stmt:
        if not isinstance(d, dict) or d.get("op") not in _kinds():
            got = d.get("op") if isinstance(d, dict) else d
            raise ProgramError(f"{where}: unknown or missing op {got!r}")
        unknown = set(d) - {"op", "out", "target", "args", "params", "body", "clauses"}
        if unknown:
            raise ProgramError(f"{where}: unknown fields {sorted(unknown)}")
        return cls(op=d["op"], out=d.get("out"), target=d.get("target"),
                   args=list(d.get("args", [])), params=dict(d.get("params", {})),
                   body=[cls.from_json(b, f"{where}.body[{i}]")
                         for i, b in enumerate(d.get("body", []))],
                   clauses=list(d.get("clauses", [])))


def _kinds() -> dict[str, Any]:
    if not KINDS:
        raise ProgramError("no statement kinds are loaded (import conformance.kinds)")
    return KINDS


@dataclass
class Program:
    statements: list[Stmt]
    seed: int | None = None         # the generator seed it came from, if any
    meta: dict[str, Any] = field(default_factory=dict)

    def walk(self):
        """(path, stmt) for every statement, depth first; paths are '3' or '5.0'."""
        def rec(stmts, prefix):
            for i, s in enumerate(stmts):
                path = f"{prefix}{i}"
                yield path, s
                yield from rec(s.body, path + ".")
        yield from rec(self.statements, "")

    def clauses(self) -> list[str]:
        """The clause IDs exercised, in first-seen order (no set iteration: order is shown)."""
        seen: dict[str, None] = {}
        for _, s in self.walk():
            for c in s.clauses:
                seen.setdefault(c, None)
        return list(seen)

    def capabilities(self) -> list[str]:
        """The engine capabilities the program needs, in first-seen order (each statement's
        kind says what it needs); ProgramError for an op that is no statement kind."""
        kinds = _kinds()
        seen: dict[str, None] = {}
        for path, s in self.walk():
            if s.op not in kinds:
                raise ProgramError(f"statement {path}: unknown op {s.op!r}")
            seen.update(dict.fromkeys(kinds[s.op].needs(s)))
        return list(seen)

    def to_json(self) -> dict[str, Any]:
        return {"gradspec_program": FORMAT_VERSION, "seed": self.seed, "meta": self.meta,
                "statements": [s.to_json() for s in self.statements]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, d: Any) -> Program:
        if not isinstance(d, dict) or "statements" not in d:
            raise ProgramError("not a gradspec program (no 'statements')")
        if d.get("gradspec_program") != FORMAT_VERSION:
            raise ProgramError(f"unsupported program format {d.get('gradspec_program')!r}, "
                               f"expected {FORMAT_VERSION}")
        return cls([Stmt.from_json(s, f"statement {i}") for i, s in enumerate(d["statements"])],
                   seed=d.get("seed"), meta=dict(d.get("meta") or {}))

    @classmethod
    def loads(cls, text: str) -> Program:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProgramError(f"not valid JSON: {exc}") from None
        return cls.from_json(data)
