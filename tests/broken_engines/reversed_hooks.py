"""Calls the hooks of one tensor in reverse registration order (breaks HOOK-2)."""
from __future__ import annotations

from ._base import Broken


class _Handle:
    def __init__(self, hooks: list, fn):
        self.hooks, self.fn = hooks, fn

    def remove(self) -> None:
        if self.fn in self.hooks:
            self.hooks.remove(self.fn)


class ReversedHooks(Broken):
    label = "reversed_hooks"

    def register_hook(self, t, fn):
        hooks = getattr(t, "_gradspec_hooks", None)
        if hooks is None:
            hooks = []

            def dispatch(g):
                for h in reversed(list(hooks)):   # the bug: newest first
                    r = h(g)
                    g = g if r is None else r
                return g
            t.register_hook(dispatch)   # raises where torch raises (HOOK-7), every time
            t._gradspec_hooks = hooks
        hooks.append(fn)
        return _Handle(hooks, fn)


def factory(device: str = "cpu") -> ReversedHooks:
    return ReversedHooks(device)
