"""Engine factories that are broken in one way each, named on the command line as
`--engine tests.bad_inputs.adapters:<name>`. None of them imports torch at module level, so a
case that is refused while loading the engine costs no torch import."""
from __future__ import annotations

from typing import Any

NOT_CALLABLE = 42


class Interrupt(BaseException):
    """An exception that is not an Exception, like KeyboardInterrupt and SystemExit."""


def raises_value_error(device="cpu"):
    raise ValueError("the engine is broken\nsecond line of the message")


def raises_empty(device="cpu"):
    raise RuntimeError()


def raises_system_exit(device="cpu"):
    raise SystemExit("the factory called sys.exit")


def raises_system_exit_0(device="cpu"):
    raise SystemExit(0)


def raises_keyboard_interrupt(device="cpu"):
    raise KeyboardInterrupt


def raises_base_exception(device="cpu"):
    raise Interrupt("not an Exception")


def raises_recursion(device="cpu"):
    return raises_recursion(device)


def raises_memory_error(device="cpu"):
    raise MemoryError


def no_device_argument():
    return None


def returns_none(device="cpu"):
    return None


def returns_int(device="cpu"):
    return 3


def returns_class(device="cpu"):
    from conformance.engines.base import Engine
    return Engine


def _refimpl(device: str):
    from conformance.engines.torchlike import refimpl_engine
    return refimpl_engine(device)


class Duck:
    """Not an Engine subclass: forwards every attribute to a refimpl engine, so it passes the
    up-front check, with `overrides` in its place."""

    def __init__(self, inner: Any, **overrides: Any):
        self._inner = inner
        self.__dict__.update(overrides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _duck(device: str, **overrides: Any) -> Duck:
    inner = _refimpl(device)
    return Duck(inner, name="duck", **overrides)


def missing_methods(device="cpu"):
    class Half:
        capabilities = frozenset({"core"})
        name = version = device = "half"

        def leaf(self, *args):
            return None
    return Half()


def capabilities_none(device="cpu"):
    return _duck(device, capabilities=None)


def capabilities_ints(device="cpu"):
    return _duck(device, capabilities={1, 2})


def capabilities_unknown(device="cpu"):
    return _duck(device, capabilities={"core", "time_travel"})


def capabilities_string(device="cpu"):
    return _duck(device, capabilities="core")


def name_not_a_string(device="cpu"):
    return _duck(device, name=7)


def version_not_a_string(device="cpu"):
    return _duck(device, version=None)


def granularity_unknown(device="cpu"):
    return _duck(device, granularity="galaxy")


def capabilities_raise(device="cpu"):
    class Raising(Duck):
        @property
        def capabilities(self):
            raise RuntimeError("capabilities are computed lazily and fail")
    return Raising(_refimpl(device), name="raising")


# ---- duck-typed adapters that pass the up-front check and misbehave mid-run ----------------
class _Opaque:
    """A value no report can hold: its repr and str raise."""

    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


def to_list_object(device="cpu"):
    return _duck(device, to_list=lambda t: object())


def to_list_opaque(device="cpu"):
    return _duck(device, to_list=lambda t: _Opaque())


def dtype_int(device="cpu"):
    return _duck(device, dtype=lambda t: 7)


def shape_string(device="cpu"):
    return _duck(device, shape=lambda t: "2x2")


def grad_fn_name_list(device="cpu"):
    return _duck(device, grad_fn_name=lambda t: ["AddBackward0"])


def next_functions_int(device="cpu"):
    return _duck(device, next_functions=lambda t: 3)


def version_string(device="cpu"):
    return _duck(device, version_counter=lambda t: "zero")


def is_leaf_opaque(device="cpu"):
    return _duck(device, is_leaf=lambda t: _Opaque())


def interrupt_swallowed(device="cpu"):
    """A real Ctrl-C that lands in a library which swallows the KeyboardInterrupt, as torch's
    C++ does with one raised while it imports numpy; the engine then loads."""
    import os
    import signal
    import time
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    from conformance.engines.torchlike import refimpl_engine
    return refimpl_engine(device)


def interrupted_by_user(device="cpu"):
    """A real Ctrl-C while the engine loads (SIGINT to this process): that stops gradspec,
    it is not the adapter's failure."""
    import os
    import signal
    import time
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
