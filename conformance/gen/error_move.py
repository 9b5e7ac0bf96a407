"""The declaration of a deliberate error move: `@error_move(...)` on its recipe.

One declaration says everything about an error move: the error kind it provokes (a kind of
spec/errors.md), the clause its failing statement exercises, the capabilities it needs, whether
it may be drawn under no_grad, and, where the model avoids a natural error of the same kind on
engines that lack a capability, that capability. errors.py reads the declarations in its own
explicit order and derives every table from them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Recipe = Callable[[Any], bool]      # draws the move into the Gen it is handed


@dataclass(frozen=True)
class ErrorMove:
    kind: str                       # the error kind of spec/errors.md it provokes
    clause: str                     # the clause its failing statement exercises
    needs: tuple[str, ...]          # the capabilities it needs
    no_grad_ok: bool                # may be drawn under no_grad (the others build graphs)
    natural: str | None             # a natural error of this kind needs this capability
    recipe: Recipe
    since: int = 1                  # the generator vocabulary that first draws it


DECLARED: dict[str, ErrorMove] = {}


def error_move(kind: str, clause: str, needs: tuple[str, ...] = (), no_grad_ok: bool = False,
               natural: str | None = None, since: int = 1) -> Callable[[Recipe], Recipe]:
    """Declare the decorated function as the recipe of the error move for `kind` (drawn from
    generator vocabulary `since` on, so that older vocabularies draw what they drew)."""
    def declare(recipe: Recipe) -> Recipe:
        if kind in DECLARED:
            raise ValueError(f"error move {kind!r} is declared twice")
        DECLARED[kind] = ErrorMove(kind, clause, tuple(needs), no_grad_ok, natural, recipe,
                                   since)
        return recipe
    return declare
