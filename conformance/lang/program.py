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

Loading: Program.from_json / loads check the structure (the msgspec schemas StmtSchema and
ProgramSchema: every field's JSON type, no unknown field, ops that are statement kinds);
conformance/lang/validate.py (`load`, `validate`) checks the rest before anything runs.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .ops import FUNCTIONS, INPLACE, VIEWS, index_value

FORMAT_VERSION = 1

# The statement kinds of the language, op -> kind (a conformance.kinds.Kind), in the language's
# order. conformance/kinds fills this table (it is that package's registry): the program format
# reads it to tell an op from a typo and to ask a kind which capabilities a statement needs.
KINDS: dict[str, Any] = {}

# FUNCTIONS, VIEWS and INPLACE (the fn of call / view / inplace statements -> its operands) are
# views of the op table (conformance/lang/ops.py), and so is index_of, the reader of the INDEX
# encoding: a list of items, each an int, {"slice": [start, stop, step]} (None allowed), "..."
# or null (a new dim), e.g. x[0, 1:3] is [0, {"slice": [1, 3, None]}], x[..., None] is
# ["...", null].
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
    """One statement. The generator's hottest places make it positionally (op, out, target,
    args, params): a class's keyword arguments cost a dict on every call."""
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
    def from_json(cls, d: Any, where: str = "statement") -> Stmt:
        """A statement from its JSON object; ProgramError for a field of the wrong type, an
        unknown field or an op that is no statement kind."""
        return _stmt(_convert(d, StmtSchema, where), where)


class StmtSchema(msgspec.Struct, forbid_unknown_fields=True):
    """The JSON types of a statement's fields (the structure; the kinds check the rest)."""

    op: Any = None                  # checked against KINDS, so that the message says "op"
    out: str | None = None
    target: str | None = None
    args: list[str | int | float | None] = []
    params: dict[str, Any] = {}
    body: list[StmtSchema] = []
    clauses: list[str] = []


class ProgramSchema(msgspec.Struct, forbid_unknown_fields=True):
    """The JSON types of a program file's fields."""

    statements: list[StmtSchema]
    gradspec_program: int | None = None
    seed: int | None = None
    meta: dict[str, Any] | None = None


# a msgspec error: `Expected `str`, got `int` - at `$.statements[3].args[0]`` (a key of an
# object: `... - at `key` in `$.statements[3].params``)
_AT = re.compile(r"^(?P<msg>.*?) - at `(?P<loc>[^`]*)`(?: in `(?P<inside>[^`]*)`)?$", re.S)
_STEP = re.compile(r"\.([A-Za-z_]\w*)|\[(\d+)\]")


def structure_message(exc: msgspec.ValidationError, where: str = "program") -> str:
    """A msgspec validation error as `statement 3.1: args[0]: expected str, got int`: the
    statement's path (statements and bodies) and the field. `where` is what the converted
    object is (a program, or a statement's own `statement <path>`)."""
    m = _AT.match(str(exc))
    msg = (m["msg"] if m else str(exc)).replace("`", "")
    msg = ("key: " if m and m["inside"] else "") + msg[:1].lower() + msg[1:]
    steps = [name or int(i) for name, i in _STEP.findall(m["inside"] or m["loc"])] if m else []
    top = where == "program" and steps[:1] == ["statements"] and len(steps) > 1
    path, steps = ([steps[1]], steps[2:]) if top else ([], steps)
    while steps[:1] == ["body"] and len(steps) > 1:
        path, steps = path + [steps[1]], steps[2:]
    place = ("statement " + ".".join(map(str, path)) if top
             else where + "".join(f".{j}" for j in path))
    field = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps).lstrip(".")
    text = f"{place}: {field}: {msg}" if field else f"{place}: {msg}"
    return text if text.isprintable() else repr(text)[1:-1]    # one line, whatever it quotes


def _convert(d: Any, schema: type, where: str) -> Any:
    try:
        return msgspec.convert(d, schema)
    except msgspec.ValidationError as exc:
        raise ProgramError(structure_message(exc, where)) from None


def _stmt(s: StmtSchema, where: str) -> Stmt:
    if not isinstance(s.op, str) or s.op not in _kinds():
        raise ProgramError(f"{where}: unknown or missing op {s.op!r}")
    return Stmt(op=s.op, out=s.out, target=s.target, args=list(s.args), params=dict(s.params),
                body=[_stmt(b, f"{where}.{i}") for i, b in enumerate(s.body)],
                clauses=list(s.clauses))


def _kinds() -> dict[str, Any]:
    if not KINDS:
        raise ProgramError("no statement kinds are loaded (import conformance.kinds)")
    return KINDS


def _clauses_into(stmts: list[Stmt], seen: dict[str, None]) -> None:
    """Program.clauses: each statement's clauses, then its body's, depth first (no paths: a
    campaign asks this of every program it draws)."""
    for s in stmts:
        for c in s.clauses:     # (a key met before keeps its place)
            seen[c] = None
        if s.body:
            _clauses_into(s.body, seen)


# the paths of the first statements of a program ("0", "1", ...), made once: every
# comparison and campaign walks its program
_PATHS = tuple(str(i) for i in range(1024))


def walk_statements(statements: list[Stmt], prefix: str = "") -> list[tuple[str, Stmt]]:
    """(path, stmt) for every statement, depth first, as a list; paths are '3' or '5.0'
    (Program.walk; statement lists that are no program's, e.g. a segment's)."""
    if not prefix and len(statements) <= len(_PATHS):
        out = list(zip(_PATHS, statements, strict=False))     # (the paths outnumber them)
    else:
        out = [(f"{prefix}{i}", s) for i, s in enumerate(statements)]
    nested = [i for i, s in enumerate(statements) if s.body]
    if not nested:
        return out
    full: list[tuple[str, Stmt]] = []
    start = 0
    for i in nested:        # each body right after its statement
        full += out[start:i + 1]
        full += walk_statements(statements[i].body, out[i][0] + ".")
        start = i + 1
    return full + out[start:]


@dataclass
class Program:
    statements: list[Stmt]
    seed: int | None = None         # the generator seed it came from, if any
    meta: dict[str, Any] = field(default_factory=dict)

    def walk(self) -> Iterator[tuple[str, Stmt]]:
        """(path, stmt) for every statement, depth first; paths are '3' or '5.0'."""
        return iter(walk_statements(self.statements))

    def clauses(self) -> list[str]:
        """The clause IDs exercised, in first-seen order (no set iteration: order is shown)."""
        seen: dict[str, None] = {}
        _clauses_into(self.statements, seen)
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
        """A program from its JSON object. Checks the structure: the format, every field's
        JSON type, unknown fields and ops (ProgramError naming the statement and the field);
        conformance/lang/validate.py checks the rest (names, vocabulary, values)."""
        if not isinstance(d, dict) or "statements" not in d:
            raise ProgramError("not a gradspec program (no 'statements')")
        if d.get("gradspec_program") != FORMAT_VERSION:
            raise ProgramError(f"unsupported program format {d.get('gradspec_program')!r}, "
                               f"expected {FORMAT_VERSION}")
        p = _convert(d, ProgramSchema, "program")
        return cls([_stmt(s, f"statement {i}") for i, s in enumerate(p.statements)],
                   seed=p.seed, meta=dict(p.meta or {}))

    @classmethod
    def loads(cls, text: str | bytes) -> Program:
        """A program from JSON text (bytes: UTF-8); ProgramError for text that is no JSON or
        no program (from_json). A file from elsewhere is read with validate.load, which also
        validates it."""
        try:
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            data = msgspec.json.decode(text)
        except UnicodeDecodeError as exc:
            raise ProgramError(f"not UTF-8 text: {exc}") from None
        except msgspec.DecodeError as exc:
            raise ProgramError(f"not valid JSON: {exc}") from None
        except RecursionError:
            raise ProgramError("not valid JSON: nested too deeply") from None
        return cls.from_json(data)
