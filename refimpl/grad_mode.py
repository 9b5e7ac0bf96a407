"""Grad modes (MODE-1..MODE-8) and inference mode (INFER-1): one switch each per thread, and
managers that save and restore them.

Every manager works as a context manager and as a decorator, as torch.autograd.grad_mode does.
"""
from __future__ import annotations

import functools
import inspect
import threading

from . import errors


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


class _ThreadFlagOff(_ThreadFlag):
    def __init__(self):
        self.value = False


# inference mode of the running thread (INFER-1); tensors read `inference.value` when they are
# made (refimpl/tensor.py: an inference tensor is one made while it is on, INFER-2)
inference = _ThreadFlagOff()


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
        if inspect.isgeneratorfunction(fn):
            return self._generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _generator(self, fn):
        """A decorated generator function runs each resumption in the mode, and its caller's
        code between them in the caller's (MODE-5): the mode is entered around every send,
        throw and close of the generator, never across a yield."""
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:  # noqa: BLE001 - passed into the generator
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
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
    """Sets the mode at once when called, so that it also works as a plain function, and again
    each time its block is entered; the block's exit restores the mode in force at the call
    (MODE-3)."""

    def __init__(self, mode: bool):
        errors.check_bool(mode, "set_grad_enabled", "enabled", position=1)
        self.prev = enabled[0]
        self.mode = mode
        enabled[0] = self.mode

    def __enter__(self):
        enabled[0] = self.mode

    def __exit__(self, *exc):
        enabled[0] = self.prev
        return False

    def clone(self):
        return set_grad_enabled(self.mode)

    def __call__(self, fn):
        enabled[0] = self.prev  # as a decorator, the mode applies only inside the call
        return super().__call__(fn)


def is_inference_mode_enabled() -> bool:
    return inference.value


class inference_mode(_Mode):
    """Inference mode on (or, given False, off) for the block: with it on grad mode is off and
    nothing records, even under a nested enable_grad (INFER-1); inference_mode(False) turns
    grad mode on, as torch's guard sets grad mode to the opposite of the inference flag."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)      # @inference_mode without parentheses (any other value, as torch)

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        self.prev = (enabled[0], inference.value)
        inference.value = self.mode
        enabled[0] = not self.mode

    def __exit__(self, *exc):
        enabled[0], inference.value = self.prev
        return False

    def clone(self):
        return inference_mode(self.mode)
