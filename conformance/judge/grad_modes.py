"""The grad mode and inference mode each statement of a program ran in, followed statement by
statement for the comparator (conformance/judge/unspecified.py, stale_views.py).

A program sets the modes only by its blocks (the `mode` statements): each kind says how its
body's modes follow from the enclosing ones (`Kind.body_mode`); a program starts with grad
mode on and inference mode off, as the executor runs it (MODE-1..MODE-5, INFER-1).
"""
from __future__ import annotations

from typing import Any

from ..lang.program import Stmt


class GradModes:
    def __init__(self) -> None:
        self.blocks: dict[str, tuple[bool | None, bool | None]] = {}   # block path -> what
        #                                   its body sets: grad mode, inference mode (None: kept)

    def update(self, s: Stmt, kind: Any, path: str) -> None:
        if kind.block:
            self.blocks[path] = kind.body_mode(s)

    def modes(self, path: str) -> tuple[bool, bool]:
        """(grad mode enabled, inference mode enabled) where the statement at `path` ran."""
        grad, inference = True, False
        parts = path.split(".")
        for i in range(1, len(parts)):
            g, inf = self.blocks.get(".".join(parts[:i]), (None, None))
            grad = grad if g is None else g
            inference = inference if inf is None else inf
        return grad, inference

    def recording(self, path: str) -> bool:
        """Whether ops run at `path` may record (grad mode on, inference mode off: MODE-1,
        INFER-1)."""
        grad, inference = self.modes(path)
        return grad and not inference
