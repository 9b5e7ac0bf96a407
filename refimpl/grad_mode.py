"""Grad modes (MODE-1..MODE-8): one switch per thread, and managers that save and restore it.

Every manager works as a context manager and as a decorator, as torch.autograd.grad_mode does.
"""
from __future__ import annotations

import functools
import threading


class _ThreadFlag(threading.local):
    """The grad mode of the running thread, read and written as `enabled[0]` (one index, no
    `global`). Each thread starts with grad mode on, whatever the thread that started it had,
    as torch's thread-local grad mode does."""

    def __init__(self):
        self.value = True

    def __getitem__(self, _index):
        return self.value

    def __setitem__(self, _index, value):
        self.value = value


enabled = _ThreadFlag()


def is_grad_enabled() -> bool:
    return enabled[0]


class _Mode:
    """Base of the managers: __enter__ sets the mode, __exit__ restores the previous one."""
    mode = True

    def __enter__(self):
        self.prev = enabled[0]
        enabled[0] = self.mode

    def __exit__(self, *exc):
        enabled[0] = self.prev  # restored on exceptions too (MODE-4)
        return False

    def __call__(self, fn):  # used as a decorator (MODE-5)
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class _NoParam(_Mode):
    """no_grad and enable_grad also decorate without parentheses: @torch.no_grad."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParam):
    mode = False


class enable_grad(_NoParam):
    mode = True


class set_grad_enabled(_Mode):
    """Sets the mode at once when called, so that it also works as a plain function (MODE-3)."""

    def __init__(self, mode: bool):
        self.prev = enabled[0]
        self.mode = bool(mode)
        enabled[0] = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        enabled[0] = self.prev
        return False

    def clone(self):
        return set_grad_enabled(self.mode)

    def __call__(self, fn):
        enabled[0] = self.prev  # as a decorator, the mode applies only inside the call
        return super().__call__(fn)
