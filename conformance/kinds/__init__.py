"""The statement kinds (see registry.py). Importing the package registers every kind; the
families are imported in a fixed order and the registry is checked against ORDER."""
from __future__ import annotations

from . import (  # noqa: F401  (each family registers its kinds)
    aliases,
    backward,
    contents,
    flags,
    function,
    grad_tensor,
    hooks,
    inplace,
    modes,
    modules,
    multi,
    observe,
    saved,
    tensors,
)
from .registry import KINDS, ORDER, Kind, kind, of

if tuple(KINDS) != tuple(sorted(KINDS, key=ORDER.index)) or set(KINDS) != set(ORDER):
    # Registration order follows the import order of the families; the registry itself is
    # always read in ORDER.
    ordered = {name: KINDS[name] for name in ORDER if name in KINDS}
    missing = [n for n in ORDER if n not in KINDS]
    if missing:
        raise ImportError(f"statement kinds declared in ORDER but never defined: {missing}")
    KINDS.clear()
    KINDS.update(ordered)

__all__ = ["KINDS", "ORDER", "Kind", "kind", "of"]
