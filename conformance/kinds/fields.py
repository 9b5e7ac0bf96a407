"""Light validation of a statement's fields, for the kinds' `check`: a field is present and of
the right JSON type, a name is one of a table's. Each failure is a ProgramError that names the
statement's path and the field."""
from __future__ import annotations

from collections.abc import Container
from typing import Any, NoReturn

from ..lang.program import ProgramError

NAME = (str,)
NUMBER = (int, float)
OPTIONAL_NAME = (str, type(None))
_TYPE_WORDS = {str: "a name", int: "a number", float: "a number", bool: "a bool",
               list: "a list", dict: "an object", type(None): "null"}


def fail(path: str, field: str, what: str) -> NoReturn:
    raise ProgramError(f"statement {path}: {field}: {what}")


def _words(types: tuple[type, ...]) -> str:
    return " or ".join(dict.fromkeys(_TYPE_WORDS.get(t, t.__name__) for t in types))


def _is(v: Any, types: tuple[type, ...]) -> bool:
    if isinstance(v, bool) and bool not in types:   # JSON true is no number
        return False
    return isinstance(v, types)


def name(s: Any, path: str, attr: str) -> None:
    """s.<attr> (out or target) is a name."""
    v = getattr(s, attr)
    if not isinstance(v, str):
        fail(path, attr, f"must be a name, got {v!r}")


def param(s: Any, path: str, key: str, types: tuple[type, ...], *, required: bool = True,
          choices: Container[Any] | None = None, where: dict[str, Any] | None = None,
          field: str = "params") -> Any:
    """params[key] (or where[key]) is present when required, of `types`, one of `choices`."""
    d = s.params if where is None else where
    if key not in d:
        if required:
            fail(path, f"{field}.{key}", "missing")
        return None
    v = d[key]
    if not _is(v, types):
        fail(path, f"{field}.{key}", f"must be {_words(types)}, got {v!r}")
    if choices is not None and v is not None and v not in choices:
        fail(path, f"{field}.{key}", f"unknown {key} {v!r}")
    return v


def names(s: Any, path: str, key: str, *, required: bool = True, nullable: bool = False,
          items: tuple[type, ...] = NAME) -> list[Any] | None:
    """params[key] is a list of names (null allowed for the whole list when nullable)."""
    v = param(s, path, key, (list, type(None)) if nullable else (list,), required=required)
    for i, item in enumerate(v or []):
        if not _is(item, items):
            fail(path, f"params.{key}[{i}]", f"must be {_words(items)}, got {item!r}")
    return v


def args(s: Any, path: str, count: int, items: tuple[type, ...] = (str, int, float)) -> None:
    """s.args holds exactly `count` operands of `items`."""
    if not isinstance(s.args, list) or len(s.args) != count:
        fail(path, "args", f"must hold {count} operand(s), got {s.args!r}")
    for i, a in enumerate(s.args):
        if not _is(a, items):
            fail(path, f"args[{i}]", f"must be {_words(items)}, got {a!r}")


def kw(s: Any, path: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """params.kw is an object (absent: empty) holding the keys `required`."""
    v = param(s, path, "kw", (dict,), required=False) or {}
    for key in required:
        if key not in v:
            fail(path, f"params.kw.{key}", "missing")
    return v
