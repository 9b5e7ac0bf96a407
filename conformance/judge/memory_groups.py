"""The comparator's memory groups (conformance/judge/unspecified.py: name -> a storage number,
the names that may share memory), where a statement binds a tensor or gives one another's
memory.

A statement that bound one of its operands itself (Event.returned_operand: torch returns a
tensor cast to its own dtype) binds that operand's storage, and its place among VER-1's
versionless names, not a fresh one.

`set_` and `.data =` (Kind.memory_source) make the target's memory its source's: a write
through either shows in the other from then on (torch 2.13 runs a write into an inference
alias `d` after `d.set_(z)` or `d.data = z` into z, and one after `z.set_(d)` into d's
inference tensor), so what UNSPEC-10 leaves open of a write into one is open of the other.
The two groups are merged, not the target moved: one side may have run the statement and the
other refused it, and the views of the target's old memory are then over-open, never
compared where they should not be.
"""
from __future__ import annotations

from collections.abc import Iterator


def merge(group: dict[str, int], stored: dict[int, set[str]], target: str | None,
          source: str | None) -> None:
    """Make the target's and the source's storages one in `group` (and in `stored`: storage
    -> the tensors whose .grad it holds)."""
    old, new = group.get(target or ""), group.get(source or "")
    if old is None or new is None or old == new:
        return
    for name, g in group.items():
        if g == old:
            group[name] = new
    if old in stored:
        stored.setdefault(new, set()).update(stored.pop(old))


def fresh(group: dict[str, int], storages: Iterator[int], versionless: set[str],
          bound: list[str], same: str) -> list[str]:
    """Give the names bound a storage of their own (the next of `storages`) or, where the
    statement bound its operand `same` itself, that one's; `bound`."""
    g, unversioned = group.get(same), same in versionless
    for name in bound:
        group[name] = g or next(storages)
        (versionless.add if unversioned else versionless.discard)(name)
    return bound
