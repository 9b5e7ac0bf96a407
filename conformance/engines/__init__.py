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
group `gradspec.engines` to use a plain name (`gradspec engines` lists what is available):

    # mypkg's pyproject.toml
    [project.entry-points."gradspec.engines"]
    mytorch = "mypkg.gradspec_adapter:engine"

Other engines subclass engines.base.Engine. Built-in names win over entry points of the same
name.
"""
from __future__ import annotations

import importlib
import signal
from collections.abc import Callable
from importlib import metadata

from ..spec.capabilities import closure, normal
from ..spec.reader import CAPABILITIES
from .base import Engine, unimplemented
from .declared import capabilities_of, problem

DEVICES = ("cpu", "cuda")
GRANULARITIES = ("statement", "segment", "program", "step")
REQUIRED = ("leaf", "call", "detach", "requires_grad_", "backward", "set_grad", "to_list",
            "get_grad", "is_leaf", "requires_grad", "shape", "dtype")


class EngineError(Exception):
    """An engine cannot be loaded or is not a valid adapter; the message is one line."""


# built-in name -> import path of its factory (paddle and torch-compile are optional extras)
BUILTINS = {
    "torch": "conformance.engines.torchlike:torch_engine",
    "refimpl": "conformance.engines.torchlike:refimpl_engine",
    "paddle": "conformance.engines.paddle:paddle_engine",
    "torch-compile": "conformance.engines.compiled:compiled_engine",
    # whole segments compiled, one engine per torch.compile backend, so that a divergence is
    # localised to the layer that backend adds (dynamo, AOTAutograd, inductor):
    # conformance/engines/compiled_segments.py
    "torch-compile-eager": "conformance.engines.compiled_segments:eager_engine",
    "torch-compile-aot-eager": "conformance.engines.compiled_segments:aot_eager_engine",
    "torch-compile-inductor": "conformance.engines.compiled_segments:inductor_engine",
    # whole training steps compiled (forward, loss, backward, update), and the same after a
    # run on other shapes (dynamic shapes): conformance/engines/compiled_train.py
    "torch-compile-train-eager": "conformance.engines.compiled_train:train_eager_engine",
    "torch-compile-train-aot-eager": "conformance.engines.compiled_train:train_aot_eager_engine",
    "torch-compile-train-inductor": "conformance.engines.compiled_train:train_inductor_engine",
    "torch-compile-dynamic-eager": "conformance.engines.compiled_train:dynamic_eager_engine",
    "torch-compile-dynamic-aot-eager":
        "conformance.engines.compiled_train:dynamic_aot_eager_engine",
    "torch-compile-dynamic-inductor":
        "conformance.engines.compiled_train:dynamic_inductor_engine",
}


def builtin_names() -> list[str]:
    return list(BUILTINS)


def every_engine_name() -> list[str]:
    """The built-in engines, then the entry-point ones a built-in does not shadow, in the
    order `gradspec engines` lists them (what `gradspec matrix --engines all` runs)."""
    names = builtin_names()
    return names + [n for n in dict.fromkeys(ep.name for ep in entry_points())
                    if n not in names]


def entry_points() -> list[metadata.EntryPoint]:
    """The `gradspec.engines` entry points installed, by name, first of each name only."""
    try:
        eps = metadata.entry_points(group="gradspec.engines")
    except Exception:  # a broken installed distribution must not hide the built-ins
        return []
    seen: dict[str, metadata.EntryPoint] = {}
    for ep in eps:
        seen.setdefault(ep.name, ep)
    return [seen[n] for n in sorted(seen)]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _entry_point(name: str):
    return next((ep for ep in entry_points() if ep.name == name), None)


class _Interrupts:
    """While loading an engine: a real Ctrl-C waits until the load ends, then interrupts
    (`_call`); a second one interrupts at once (an import that hangs can always be stopped).
    A KeyboardInterrupt raised inside an engine's import is not safe: torch's C++ swallows one
    raised in numpy's import (the Ctrl-C is lost, numpy is left half-imported in gradspec and
    in every worker forked from it: bogus divergences, or "cannot load module more than once
    per process") and aborts on one raised in the Python code it calls (SIGABRT). It also
    tells a real Ctrl-C from a KeyboardInterrupt that an adapter's import or factory raised
    itself (a broken adapter: an EngineError). Where SIGINT is not Python's default handler
    (a worker that ignores it), nothing changes."""

    def __enter__(self) -> _Interrupts:
        self.real, self.previous = False, None
        try:
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                self.previous = signal.signal(signal.SIGINT, self._seen)
        except ValueError:      # not the main thread
            pass
        return self

    def _seen(self, signum, frame):
        if self.real:           # the second: at once
            raise KeyboardInterrupt
        self.real = True        # the first: once the load has ended

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _call(spec: str, what: str, fn: Callable[[], object]) -> object:
    """fn(), with anything it raises, SystemExit and KeyboardInterrupt included, as an
    EngineError "engine SPEC: WHAT: Type: first line"; a real Ctrl-C interrupts once fn has
    returned or raised (_Interrupts), whatever it did."""
    with _Interrupts() as interrupts:
        try:
            out = fn()
        except BaseException as exc:    # an adapter's SystemExit is its failure, too
            if interrupts.real:
                raise KeyboardInterrupt from None
            if isinstance(exc, EngineError):
                raise
            raise EngineError(f"engine {spec!r}: {what}: {_one_line(exc)}") from None
    if interrupts.real:
        raise KeyboardInterrupt
    return out


def load_engine(spec: str, device: str | None = None) -> Engine:
    """The engine named by `spec` on `device` (default 'cpu'); raises EngineError."""
    device = device or "cpu"
    if device not in DEVICES:
        raise EngineError(f"unknown device {device!r} (choose from {', '.join(DEVICES)})")
    if not isinstance(spec, str) or not spec.strip():
        raise EngineError("no engine named")
    spec = spec.strip()
    factory = _factory(spec)
    if not callable(factory):
        raise EngineError(f"engine {spec!r}: {_repr(factory)} is not callable")
    engine = _call(spec, f"factory failed on {device}", lambda: factory(device=device))
    return _call(spec, "not a valid adapter", lambda: _checked(spec, engine))


def _factory(spec: str) -> Callable[..., object]:
    """The factory `spec` names: a built-in, an import path, or an entry point."""
    if spec in BUILTINS:
        mod_name, _, attr = BUILTINS[spec].partition(":")
        return getattr(importlib.import_module(mod_name), attr)
    if ":" in spec:
        mod_name, _, attr = spec.partition(":")
        module = _call(spec, f"cannot import {mod_name}",
                       lambda: importlib.import_module(mod_name))
        factory = getattr(module, attr, None)
        if factory is None:
            raise EngineError(f"engine {spec!r}: module {mod_name} has no attribute {attr!r}")
        return factory
    ep = _entry_point(spec)
    if ep is None:
        raise EngineError(f"unknown engine {spec!r} (built-in: "
                          f"{', '.join(builtin_names())}; or an import path "
                          f"'package.module:factory')")
    return _call(spec, f"cannot load entry point {ep.value}", ep.load)


def check_name(spec: str) -> None:
    """Raise EngineError unless `spec` names an engine's factory: a built-in, an entry point
    that loads, or an import path whose module imports and has the factory. The factory is
    not called (an engine whose package is not installed still passes: its built-in factory
    imports it), so that a command of several engines refuses a mistyped one before it runs
    any."""
    if not isinstance(spec, str) or not spec.strip():
        raise EngineError("no engine named")
    _factory(spec.strip())


def _repr(value: object) -> str:
    try:
        return repr(value)[:80]
    except Exception:
        return f"a {type(value).__name__}"


def _checked(spec: str, engine: object) -> Engine:
    """Reject what is not an adapter now, with one line, rather than mid-run."""
    if isinstance(engine, type):
        raise EngineError(f"engine {spec!r}: the factory returned the class "
                          f"{engine.__name__}, not an Engine")
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
    unknown = sorted(c for c in caps if c not in CAPABILITIES)
    if unknown:     # a typo would silently turn clauses "not applicable"
        raise EngineError(f"engine {spec!r}: unknown capabilities {', '.join(unknown)} (the "
                          f"vocabulary is in spec/README.md)")
    wrong = problem(engine, frozenset(caps))
    if wrong:       # a lacked op that is no op, or finer capabilities that contradict
        raise EngineError(f"engine {spec!r}: {wrong}")
    lacking = unimplemented(engine, frozenset(caps) | {"core"})
    if lacking:     # a declared capability without its methods fails mid-run, every program
        raise EngineError(f"engine {spec!r}: declares capabilities whose methods it does not "
                          f"implement: {'; '.join(lacking)} (docs/engines.md lists what each "
                          f"capability needs)")
    for attr in ("name", "version", "device"):
        if not isinstance(getattr(engine, attr, None), str):
            raise EngineError(f"engine {spec!r}: attribute {attr!r} must be a string")
    granularity = getattr(engine, "granularity", "statement")
    if granularity not in GRANULARITIES:
        raise EngineError(f"engine {spec!r}: granularity must be one of "
                          f"{', '.join(GRANULARITIES)}, got {_repr(granularity)}")
    return engine  # type: ignore[return-value]


def _try_load(name: str, device: str) -> tuple[Engine | None, str]:
    try:
        return load_engine(name, device), ""
    except EngineError as exc:
        return None, str(exc)
    except Exception as exc:    # a plugin broken in a way _checked did not foresee
        return None, f"engine {name!r}: {_one_line(exc)}"


def list_engines(probe: Callable[[Engine], list[dict]] | None = None,
                 only: list[str] | None = None) -> list[dict]:
    """What `gradspec engines` shows: every built-in and entry-point engine (or the engines
    `only` names: names or package.module:factory paths), loaded on cpu and cuda; a broken one
    is a row with a one-line `error`, never an exception. With `probe`, each row that loaded
    gets `probes`: probe(engine), the capability probes' results (the command line passes
    conformance/judge/probes.py's check_declarations against an oracle)."""
    names = {n: "built-in" for n in builtin_names()}
    rows: list[dict] = []
    if only is not None:
        names = {n: names.get(n) or ("import path" if ":" in n else "entry point")
                 for n in dict.fromkeys(only)}
    for ep in entry_points() if only is None else ():
        dist = getattr(ep, "dist", None)
        where = f"entry point {ep.value}" + (f" ({dist.name} {dist.version})" if dist else "")
        if ep.name in names:
            rows.append({"name": ep.name, "ok": False, "source": where,
                         "error": f"entry point {ep.value} is shadowed by the built-in "
                                  f"engine {ep.name!r}"})
            continue
        names[ep.name] = where
    for name, where in names.items():
        engine, error = _try_load(name, "cpu")
        devices = ["cpu"] if engine else []
        cuda, _ = _try_load(name, "cuda")
        if cuda is not None:
            devices.append("cuda")
            engine = engine or cuda
        if engine is None:
            rows.append({"name": name, "ok": False, "source": where, "error": error})
            continue
        has = closure(engine.capabilities)
        caps = [c for c in CAPABILITIES if c in normal(has)]
        row = {"name": name, "ok": True, "source": where, "version": engine.version,
               "devices": devices, "capabilities": caps,
               "lacks": [c for c in CAPABILITIES if c not in has]}
        if getattr(engine, "lacks_ops", None):
            row["lacks_ops"] = sorted(engine.lacks_ops)
        if probe is not None:
            row["probes"] = probe(engine)
        rows.append(row)
    order = {n: i for i, n in enumerate(names)}
    return sorted(rows, key=lambda r: (order.get(r["name"], -1), r["name"]))


__all__ = ["BUILTINS", "Engine", "EngineError", "builtin_names", "capabilities_of",
           "entry_points", "every_engine_name", "list_engines", "load_engine"]
