"""Validation of a statement's fields, for the kinds' `check`: a field is present and of the
right JSON type, a name is an identifier, a word is one of a table's, a number is finite and
in range. Each failure is a ProgramError that names the statement's path and the field.

Names are identifiers (ASCII letters, digits and _, starting with a letter; no keyword and no
name a repro script uses itself, RESERVED), so that a name written into a repro script
(conformance/reports/render.py) is that name and nothing else; numbers are finite and within
int64's range, so that they are values every engine holds and a Python literal
(conformance/lang/ops.py, `literal`) writes them exactly.
"""
from __future__ import annotations

import functools
import keyword
import math
import re
from collections.abc import Container
from typing import Any, NoReturn

from ..lang.index import ELLIPSIS
from ..lang.program import ProgramError

NAME = (str,)
# the dtypes a leaf may have: those of spec/ (refimpl's four); the generator draws the floats
# and, for its deliberate errors, int64
DTYPES = ("float32", "float64", "int64", "bool")
# names a repro script binds or calls itself (its helpers, the builtins its lines call)
RESERVED = frozenset({"torch", "json", "warnings", "show", "record", "scale", "wrong_shape",
                      "wrong_dtype", "non_tensor", "post", "node_hook", "saved_hooks", "multi",
                      "print", "list", "str", "type", "Exception", "exc", "F", "define", "Any"})
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_LIMIT = 2 ** 63            # |number| below it: an int64, and a float torch holds as one
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


def is_name(v: Any) -> bool:
    """v is a name a program may bind: an identifier, no keyword, not RESERVED."""
    return isinstance(v, str) and _is_name(v)


@functools.lru_cache(maxsize=4096)
def _is_name(v: str) -> bool:
    # cached: every statement's names are checked on every run of a program, on each engine
    # (a sweep names each tensor once per observable), and a program has few names
    return (_IDENTIFIER.fullmatch(v) is not None and not keyword.iskeyword(v)
            and v not in RESERVED)


def is_number(v: Any) -> bool:
    """v is a number (no bool) that is finite and within int64's range."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and (math.isfinite(v) if isinstance(v, float) else True) and -_LIMIT < v < _LIMIT)


def atom(path: str, field: str, v: Any) -> None:
    """A name is a name (is_name), a number finite and in range; other values pass."""
    if isinstance(v, str) and not is_name(v):
        fail(path, field, f"must be a name (an identifier, no keyword), got {v!r}")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and not is_number(v):
        fail(path, field, f"must be a finite number within int64's range, got {v!r}")


def name(s: Any, path: str, attr: str) -> None:
    """s.<attr> (out or target) is a name."""
    v = getattr(s, attr)
    if not isinstance(v, str):
        fail(path, attr, f"must be a name, got {v!r}")
    atom(path, attr, v)


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
    if not isinstance(v, str):      # free text (a label) is never written as code
        atom(path, f"{field}.{key}", v)
    return v


def label(s: Any, path: str, *, required: bool = False) -> str | None:
    """params.label: text a report prints as one line of its own (a hook's calls are logged
    under it), so printable, one line: a newline would break the replay table."""
    v = param(s, path, "label", (str,) if required else (str, type(None)), required=required)
    if v is not None and not v.isprintable():
        fail(path, "params.label", f"must be printable text on one line, got {v!r}")
    return v


def names(s: Any, path: str, key: str, *, required: bool = True, nullable: bool = False,
          items: tuple[type, ...] = NAME, bound: bool = False) -> list[Any] | None:
    """params[key] is a list of names (null allowed for the whole list when nullable); names
    the statement binds (`bound`) are each given once."""
    v = param(s, path, key, (list, type(None)) if nullable else (list,), required=required)
    for i, item in enumerate(v or []):
        if not _is(item, items):
            fail(path, f"params.{key}[{i}]", f"must be {_words(items)}, got {item!r}")
        atom(path, f"params.{key}[{i}]", item)
        if bound and item is not None and item in v[:i]:
            fail(path, f"params.{key}[{i}]", f"binds {item!r} a second time")
    return v


def args(s: Any, path: str, count: int, items: tuple[type, ...] = (str, int, float)) -> None:
    """s.args holds exactly `count` operands of `items`."""
    if not isinstance(s.args, list) or len(s.args) != count:
        fail(path, "args", f"must hold {count} operand(s), got {s.args!r}")
    for i, a in enumerate(s.args):
        if not _is(a, items):
            fail(path, f"args[{i}]", f"must be {_words(items)}, got {a!r}")
        atom(path, f"args[{i}]", a)


def kw(s: Any, path: str, required: tuple[str, ...] = (),
       allowed: Container[str] | None = None) -> dict[str, Any]:
    """params.kw is an object (absent: empty) holding the keys `required`, only keys of
    `allowed` (when given), each a setting: null, a bool, a number or a list of ints."""
    v = param(s, path, "kw", (dict,), required=False) or {}
    for key in required:
        if key not in v:
            fail(path, f"params.kw.{key}", "missing")
    for key, setting in v.items():
        if allowed is not None and key not in allowed:
            fail(path, "params.kw", f"unknown setting {key!r}")
        ok = setting is None or isinstance(setting, bool) or is_number(setting) or (
            isinstance(setting, list) and all(is_number(i) and isinstance(i, int)
                                              for i in setting))
        if not ok:
            fail(path, f"params.kw.{key}", f"must be null, a bool, a finite number or a list "
                 f"of ints, got {setting!r}")
    return v


# dtype -> what its values are, and the test of one (the floats: any finite number)
_VALUES = {"bool": ("a bool", lambda v: isinstance(v, bool)),
           "int64": ("an int", lambda v: is_number(v) and isinstance(v, int))}


def values(s: Any, path: str, dtype: str) -> None:
    """A leaf's params: shape a list of non-negative ints, values a flat list of as many
    values of the dtype (bools for bool, ints for int64, numbers for the floats) as the shape
    has elements."""
    shape = param(s, path, "shape", (list,))
    for i, n in enumerate(shape):
        if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n < _LIMIT):
            fail(path, f"params.shape[{i}]", f"must be a non-negative int, got {n!r}")
    flat = param(s, path, "values", (list,))
    word, fits = _VALUES.get(dtype, ("a finite number", is_number))
    for i, v in enumerate(flat):
        if not fits(v):
            fail(path, f"params.values[{i}]", f"must be {word} ({dtype}), got {v!r}")
    if len(flat) != math.prod(shape):
        fail(path, "params.values", f"holds {len(flat)} value(s), shape {shape} has "
             f"{math.prod(shape)}")


def check_index(s: Any, path: str) -> None:
    """params.index is an INDEX encoding (conformance/lang/program.py), with one "..." at
    most."""
    items = param(s, path, "index", (list,))
    for i, item in enumerate(items):
        bounds = item.get("slice") if isinstance(item, dict) and len(item) == 1 else None
        ok = item is None or (isinstance(item, str) and item == ELLIPSIS) or (
            is_number(item) and isinstance(item, int)) or (
            isinstance(bounds, list) and len(bounds) == 3 and all(
                b is None or (is_number(b) and isinstance(b, int)) for b in bounds))
        if not ok:
            fail(path, f"params.index[{i}]",
                        f'must be an int, a slice, "..." or null, got {item!r}')
    if sum(1 for item in items if isinstance(item, str)) > 1:
        fail(path, "params.index", 'at most one "..."')
