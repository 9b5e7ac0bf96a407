"""The statement kinds of the program language, each one unit, and the registry of them.

A statement kind (leaf, call, backward, observe, ...) is one subclass of `Kind`, defined in one
module of this package beside the other kinds of its family. The class holds, side by side,
everything about the kind:

    name, doc      the `op` field of its statements and a one-line description
    caps, weight   the engine capabilities it needs; how often the generator draws it
    check          validation of its fields (ProgramError naming the statement and the field)
    refs, binds    the names it reads and (re)binds; needs: the capabilities one statement needs
    run            how it runs on an engine (the executor hands it the run in progress)
    render         its lines in a standalone script (conformance/reports/render.py)
    draw           how it is drawn (the generator hands it the program being drawn)

The executor, the renderer, the minimizer and the generator are loops over KINDS; none of
them branches on a statement's op. ORDER is the language's canonical order of kinds (docs,
listings); it is an explicit tuple, never import order, and the generator's draw order is its
own explicit tuple (conformance/gen/).
"""
from __future__ import annotations

from typing import Any, ClassVar

ORDER: tuple[str, ...] = (
    "leaf", "call", "view", "getitem", "inplace", "setitem", "detach", "data",
    "requires_grad_", "retain_grad", "hook", "post_hook", "node_hook", "remove", "mode",
    "grad_enabled", "backward", "backward_many", "grad", "set_grad", "observe",
)


class Kind:
    """One statement kind. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str] = "?"
    doc: ClassVar[str] = ""
    caps: ClassVar[tuple[str, ...]] = ("core",)
    weight: ClassVar[int] = 0           # draw weight (conformance/gen/)
    valued: ClassVar[bool] = False      # its Event records a value (observe, grad, ...)
    block: ClassVar[bool] = False       # it has a body of statements (grad-mode blocks)

    # ---- the program language -----------------------------------------------------------
    def refs(self, s: Any) -> list[str]:
        """Names the statement reads (tensors or hook handles), in order."""
        names = [s.target] if s.target is not None else []
        return names + [a for a in s.args if isinstance(a, str)]

    def binds(self, s: Any) -> list[str]:
        """Names the statement (re)binds."""
        return [s.out] if s.out is not None else []

    def needs(self, s: Any) -> list[str]:
        """The capabilities this one statement needs (its kind's, plus any its params add)."""
        return list(self.caps)

    def check(self, s: Any, where: str) -> None:
        """Raise ProgramError (conformance/lang/program.py) for a malformed field."""

    # ---- running, rendering, drawing ----------------------------------------------------
    def run(self, x: Any, s: Any, ev: Any, path: str) -> None:
        raise NotImplementedError(f"statement kind {self.name!r} cannot run")

    def render(self, s: Any, path: str) -> list[str]:
        raise NotImplementedError(f"statement kind {self.name!r} cannot be rendered")

    def draw(self, g: Any) -> bool:
        """Draw one statement of this kind into g; False when nothing fits."""
        return False


KINDS: dict[str, Kind] = {}


def kind(cls: type[Kind]) -> type[Kind]:
    """Class decorator: register one instance of a Kind under its name."""
    if cls.name not in ORDER:
        raise ValueError(f"statement kind {cls.name!r} is not in kinds.registry.ORDER")
    if cls.name in KINDS:
        raise ValueError(f"statement kind {cls.name!r} is registered twice")
    KINDS[cls.name] = cls()
    return cls


def of(op: str) -> Kind:
    """The kind of a statement's op; KeyError for an op that is not in the language."""
    return KINDS[op]
