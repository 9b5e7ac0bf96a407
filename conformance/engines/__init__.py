"""Engine adapters and how an engine is chosen by name.

`load_engine("torch")`, `load_engine("refimpl", "cuda")`, `load_engine("pkg.mod:factory")`:
names are the built-in adapters, then the `gradspec.engines` entry-point group; anything with a
colon is an import path to a factory called as `factory(device=...)` that returns an Engine.
Every failure is an EngineError whose message is one line, fit for `gradspec: error: ...`.

A third-party engine with a torch-shaped module needs only a factory:

    # mypkg/gradspec_adapter.py
    from conformance.engines.torchlike import TorchLike
    import mytorch

    def engine(device="cpu"):
        return TorchLike(mytorch, "mytorch", device)

then `gradspec run --engine mypkg.gradspec_adapter:engine`, or register it under the entry-point
group `gradspec.engines` to use a plain name. Other engines subclass engines.base.Engine.
"""
from __future__ import annotations

import importlib
from importlib import metadata

from .base import Engine

DEVICES = ("cpu", "cuda")
REQUIRED = ("leaf", "call", "detach", "requires_grad_", "backward", "set_grad", "to_list",
            "get_grad", "is_leaf", "requires_grad", "shape", "dtype")


class EngineError(Exception):
    """An engine cannot be loaded or is not a valid adapter; the message is one line."""


def builtin_names() -> list[str]:
    return ["torch", "refimpl"]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _entry_point(name: str):
    try:
        eps = metadata.entry_points(group="gradspec.engines")
    except Exception:  # a broken installed distribution must not hide the built-ins
        return None
    return next((ep for ep in eps if ep.name == name), None)


def load_engine(spec: str, device: str | None = None) -> Engine:
    """The engine named by `spec` on `device` (default 'cpu'); raises EngineError."""
    device = device or "cpu"
    if device not in DEVICES:
        raise EngineError(f"unknown device {device!r} (choose from {', '.join(DEVICES)})")
    if not isinstance(spec, str) or not spec.strip():
        raise EngineError("no engine named")
    spec = spec.strip()
    if spec in ("torch", "refimpl"):
        from . import torchlike
        factory = torchlike.torch_engine if spec == "torch" else torchlike.refimpl_engine
        return _checked(spec, factory(device=device))
    if ":" in spec:
        mod_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(mod_name)
        except Exception as exc:
            raise EngineError(f"engine {spec!r}: cannot import {mod_name}: "
                              f"{_one_line(exc)}") from None
        factory = getattr(module, attr, None)
        if factory is None:
            raise EngineError(f"engine {spec!r}: module {mod_name} has no attribute {attr!r}")
    else:
        ep = _entry_point(spec)
        if ep is None:
            raise EngineError(f"unknown engine {spec!r} (built-in: "
                              f"{', '.join(builtin_names())}; or an import path "
                              f"'package.module:factory')")
        try:
            factory = ep.load()
        except Exception as exc:
            raise EngineError(f"engine {spec!r}: cannot load entry point {ep.value}: "
                              f"{_one_line(exc)}") from None
    if not callable(factory):
        raise EngineError(f"engine {spec!r}: {factory!r} is not callable")
    try:
        engine = factory(device=device)
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(f"engine {spec!r}: factory failed on {device}: "
                          f"{_one_line(exc)}") from None
    return _checked(spec, engine)


def _checked(spec: str, engine: object) -> Engine:
    """Reject what is not an adapter now, with one line, rather than mid-run."""
    if not isinstance(engine, Engine):
        missing = [m for m in REQUIRED if not callable(getattr(engine, m, None))]
        if missing:
            raise EngineError(f"engine {spec!r}: the factory returned "
                              f"{type(engine).__name__}, not an Engine (missing "
                              f"{', '.join(missing)})")
    caps = getattr(engine, "capabilities", None)
    if not isinstance(caps, (set, frozenset, list, tuple)) or \
            not all(isinstance(c, str) for c in caps):
        raise EngineError(f"engine {spec!r}: capabilities must be a set of strings, "
                          f"got {caps!r}")
    for attr in ("name", "version", "device"):
        if not isinstance(getattr(engine, attr, None), str):
            raise EngineError(f"engine {spec!r}: attribute {attr!r} must be a string")
    return engine  # type: ignore[return-value]


__all__ = ["Engine", "EngineError", "load_engine", "builtin_names"]
