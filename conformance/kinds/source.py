"""Statements' operands spelt as Python source, for the kinds' `render` (ops and indices are
spelt by the op table, conformance/lang/ops.py: `source`, `index_source`)."""
from __future__ import annotations

from typing import Any


def arg(a: Any) -> str:
    """An operand: a tensor name as itself, a number as its repr."""
    return a if isinstance(a, str) else repr(a)


def args(items: list[Any]) -> list[str]:
    """Operands as source."""
    return [arg(a) for a in items]


def maybe(a: Any) -> str:
    """An optional operand (None: the word None)."""
    return "None" if a is None else arg(a)


def names(items: list[Any]) -> str:
    """A list display of optional operands, e.g. '[x, None, 2.0]'."""
    return f"[{', '.join(maybe(a) for a in items)}]"
