"""Removable hook handles (HOOK-6), shaped like torch.utils.hooks.RemovableHandle."""
from __future__ import annotations

import itertools

_ids = itertools.count()


class RemovableHandle:
    """Owns one entry of one or more hook dicts; remove() deletes it from each that still has it."""

    def __init__(self, *hooks_dicts: dict):
        self.id = next(_ids)
        self.hooks_dicts = hooks_dicts

    def remove(self) -> None:
        for d in self.hooks_dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add(hooks_dict: dict, fn) -> RemovableHandle:
    handle = RemovableHandle(hooks_dict)
    hooks_dict[handle.id] = fn
    return handle
