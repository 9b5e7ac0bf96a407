"""Run the spec's example programs on an engine module and check their marked outcomes.

An example is plain Python with `torch` bound to the engine (spec/README.md, "Examples are
executable"). It runs one top-level statement at a time so that a marker can say which statement
raises, and so that execution can go on after an expected error.
"""
from __future__ import annotations

import ast
import functools
import io
import math
import re
import tokenize
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .reader import ErrorKind, Example, load_errors

# One comment may hold several markers: `l1.grad  # => None  # warns: NONLEAF_GRAD_ACCESS`.
_MARK = re.compile(r"#\s*(=>|raises:|warns:)\s*(.*?)\s*(?=#\s*(?:=>|raises:|warns:)|$)")
REL_TOL = 1e-5
ABS_TOL = 1e-6


@dataclass
class Marker:
    kind: str       # "=>", "raises:", "warns:"
    arg: str
    line: int       # line within the example


@dataclass
class Failure:
    example: str
    line: int       # line within the spec file
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.example} line {self.line}: {self.source.strip()}\n    {self.message}"


def classify(exc_or_warning: BaseException | Warning | None, category: type | None = None,
             kinds: dict[str, ErrorKind] | None = None) -> str | None:
    """The spec error kind of an exception or warning, or None if it matches no kind.

    Types match by class name along the MRO, so engines need not subclass torch's classes.
    """
    if exc_or_warning is None:
        return None
    cls = category or type(exc_or_warning)
    if kinds is None:
        return _classify(cls, str(exc_or_warning))
    return _match(kinds, cls, str(exc_or_warning))


@functools.lru_cache(maxsize=4096)
def _classify(cls: type, msg: str) -> str | None:
    # cached: engines raise the same few errors and warnings over and over (each program's
    # run classifies every one), and matching walks every kind's patterns
    return _match(load_errors(), cls, msg)


def _match(kinds: dict[str, ErrorKind], cls: type, msg: str) -> str | None:
    names = {c.__name__ for c in cls.__mro__}
    for k in kinds.values():
        if k.type in names and k.matches(msg):
            return k.kind
    return None


def _markers(code: str) -> dict[int, list[Marker]]:
    found: dict[int, list[Marker]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            for m in _MARK.finditer(tok.string):
                found.setdefault(tok.start[0], []).append(
                    Marker(m.group(1), m.group(2), tok.start[0]))
    return found


def to_plain(value: Any) -> Any:
    """Turn engine tensors (anything with tolist) into nested Python lists/scalars."""
    if isinstance(value, (tuple, list)):
        return type(value)(to_plain(v) for v in value)
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def values_equal(got: Any, want: Any, rel_tol: float = REL_TOL) -> bool:
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)) and not isinstance(got, bool) \
            and isinstance(got, (int, float)):
        if math.isnan(want):
            return math.isnan(got)
        return math.isclose(got, want, rel_tol=rel_tol, abs_tol=ABS_TOL)
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(got) != len(want):
            return False
        return all(values_equal(g, w, rel_tol) for g, w in zip(got, want, strict=True))
    return bool(got == want)


def run_example(example: Example, engine: ModuleType) -> list[Failure]:
    """Run one example on `engine`; return the failures (empty when every marker holds)."""
    kinds = load_errors()
    code = example.code
    tree = ast.parse(code, filename=example.id)
    marks = _markers(code)
    lines = code.splitlines()
    failures: list[Failure] = []
    env: dict[str, Any] = {"torch": engine, "__name__": "gradspec_example"}
    nested = set(marks)

    for stmt in tree.body:
        span = range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)
        mine = [m for n in span for m in marks.get(n, [])]
        nested -= set(span)
        src = "\n".join(lines[stmt.lineno - 1:stmt.end_lineno])
        where = example.line + stmt.lineno - 1

        def fail(msg: str, src: str = src, where: int = where) -> None:
            failures.append(Failure(example.id, where, src, msg))

        want_raise = next((m.arg for m in mine if m.kind == "raises:"), None)
        want_warn = next((m.arg for m in mine if m.kind == "warns:"), None)
        want_value = next((m.arg for m in mine if m.kind == "=>"), None)
        for k in (want_raise, want_warn):
            if k is not None and k not in kinds:
                fail(f"marker names unknown error kind {k!r} (see spec/errors.md)")
        got: Any = None
        error: BaseException | None = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if want_value is not None:
                    if not isinstance(stmt, ast.Expr):
                        fail("'# =>' marks a statement that is not an expression")
                        continue
                    got = eval(compile(ast.Expression(stmt.value), example.id, "eval"), env)
                else:
                    exec(compile(ast.Module([stmt], type_ignores=[]), example.id, "exec"), env)
            except Exception as exc:  # the engine's errors are data here
                error = exc
        warned = [classify(w.message, w.category, kinds) for w in caught]
        warned = [w for w in warned if w is not None]

        if want_raise is not None:
            if error is None:
                fail(f"expected {want_raise}, but nothing was raised")
            elif classify(error, kinds=kinds) != want_raise:
                fail(f"expected {want_raise}, got {type(error).__name__}: {error}")
        elif error is not None:
            fail(f"unexpected {type(error).__name__}: {error}")
        if want_warn is not None and want_warn not in warned:
            fail(f"expected warning {want_warn}, got {warned or 'none'}")
        for w in warned:
            if w != want_warn:
                fail(f"unexpected warning {w}")
        if want_value is not None and error is None:
            try:
                want = eval(want_value, {"torch": engine})
            except Exception as exc:
                fail(f"cannot evaluate expected value {want_value!r}: {exc}")
                continue
            plain = to_plain(got)
            if not values_equal(plain, to_plain(want)):
                fail(f"expected {want_value}, got {plain!r}")
    for n in sorted(nested):
        failures.append(Failure(example.id, example.line + n - 1, lines[n - 1],
                                "marker on a nested statement; markers belong on top-level "
                                "statements"))
    return failures
