"""Run a program (conformance/program.py) on an Engine, statement by statement, into a Trace.

The executor never raises for what the engine does: each statement's Event says ok, error (with
the spec error kind, spec/errors.md) or skipped (it names a tensor that an earlier failed or
skipped statement would have bound). Events hold the observation, the warning kinds emitted and
the hook calls made while the statement ran, in call order. A Trace is plain JSON.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from .engines.base import Engine
from .program import Program, Stmt

OTHER = "OTHER"     # the error kind of an exception that matches no kind in spec/errors.md
VALUED = ("observe", "grad", "grad_enabled")    # statements whose Event records a value


def refs(s: Stmt) -> list[str]:
    """Names a statement reads (tensors or hook handles), in order."""
    names = [s.target] if s.target is not None else []
    names += [a for a in s.args if isinstance(a, str)]
    p = s.params
    if s.op == "backward":
        names += list(p.get("inputs") or [])
    elif s.op == "backward_many":
        names += list(p.get("tensors") or [])
        names += [g for g in (p.get("grad_tensors") or []) if isinstance(g, str)]
    elif s.op == "grad":
        names += list(p.get("outputs") or []) + list(p.get("inputs") or [])
        names += [g for g in (p.get("grad_outputs") or []) if isinstance(g, str)]
    return names


def binds(s: Stmt) -> list[str]:
    """Names a statement (re)binds."""
    if s.op == "grad":
        return [n for n in s.params.get("outs") or [] if n is not None]
    if s.op == "inplace":
        return [s.target] if s.target is not None else []
    return [s.out] if s.out is not None else []


def plain(v: Any) -> Any:
    """An adapter's answer as JSON data: a wrong type becomes a string that compares unequal,
    never an exception that would end the run."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if hasattr(v, "tolist"):            # numpy / cupy arrays and scalars
        return plain(v.tolist())
    return f"<{type(v).__name__}>"


def index_of(items: list[Any]) -> tuple[Any, ...]:
    """INDEX encoding (program.py) -> a tuple of ints and slices."""
    return tuple(slice(*i["slice"]) if isinstance(i, dict) else i for i in items)


@dataclass
class Event:
    path: str
    op: str
    status: str = "ok"                  # ok | error | skipped
    error: str | None = None            # spec error kind, or OTHER
    message: str | None = None          # "Type: first line" of the error, for people only
    warnings: list[str] = field(default_factory=list)
    value: Any = None                   # what an observe (or grad) statement saw
    dtype: str | None = None            # dtype of a tensor-valued observation (tolerances)
    hooks: list[list[Any]] = field(default_factory=list)  # [label, grad, dtype], call order
    shapes: list[Any] | None = None     # operand shapes of a matmul (the comparator: VER-1)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "op": self.op, "status": self.status}
        for k in ("error", "message", "dtype", "shapes"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        for k in ("warnings", "hooks"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        if self.op in VALUED:
            d["value"] = self.value
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Event:
        return cls(**d)


@dataclass
class Trace:
    engine: str
    version: str
    device: str
    events: list[Event] = field(default_factory=list)

    def by_path(self) -> dict[str, Event]:
        return {e.path: e for e in self.events}

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "version": self.version, "device": self.device,
                "events": [e.to_json() for e in self.events]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Trace:
        return cls(d["engine"], d["version"], d["device"],
                   [Event.from_json(e) for e in d["events"]])


class _Run:
    def __init__(self, engine: Engine):
        self.e = engine
        self.env: dict[str, Any] = {}
        self.dead: set[str] = set()
        self.trace = Trace(engine.name, engine.version, engine.device)
        self.current: Event | None = None

    # hooks log into the event of the statement that is running when they are called
    def _log(self, label: str, t: Any) -> None:
        if self.current is None:
            return
        if t is None:
            self.current.hooks.append([label, None, None])
        else:
            self.current.hooks.append([label, plain(self.e.to_list(t)), plain(self.e.dtype(t))])

    def _hook(self, p: dict[str, Any], label: str):
        e, behaviour = self.e, p.get("behaviour", "record")

        def hook(g):
            self._log(label, g)
            if behaviour == "scale":
                return e.scale(g, float(p.get("factor", 2.0)))
            if behaviour == "wrong_shape":
                return e.wrong_shape(g)
            return None
        return hook

    def _post_hook(self, label: str, behaviour: str = "record"):
        def hook(t):
            g = self.e.get_grad(t)
            self._log(label, g)
            return g if behaviour == "return" else None     # 'return': HOOK-13 raises
        return hook

    def _node_hook(self, p: dict[str, Any], label: str):
        e, scale = self.e, p.get("behaviour") == "scale"

        def hook(grads):
            grads = tuple(grads)
            first = grads[0] if grads else None
            self._log(label, first)
            if scale and first is not None:
                return (e.scale(first, float(p.get("factor", 2.0))),) + grads[1:]
            return None
        return hook

    def block(self, stmts: list[Stmt], prefix: str) -> None:
        for i, s in enumerate(stmts):
            self.stmt(s, f"{prefix}{i}")

    def stmt(self, s: Stmt, path: str) -> None:
        ev = Event(path, s.op)
        self.trace.events.append(ev)
        if any(n in self.dead or n not in self.env for n in refs(s)):
            ev.status = "skipped"
            self.dead.update(binds(s))
            self._skip_body(s, path)
            return
        self.current = ev
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self._do(s, ev, path)
            except Exception as exc:  # the engine's errors are data
                ev.status = "error"
                ev.error = self.e.classify_error(exc) or OTHER
                first = (str(exc).strip().splitlines() or [""])[0]
                ev.message = f"{type(exc).__name__}: {first[:300]}"
        self.current = None
        ev.warnings = [k for k in (self.e.classify_warning(w.message, w.category)
                                   for w in caught) if k]
        if ev.status == "ok":
            self.dead.difference_update(binds(s))
        elif s.op != "inplace":  # a failed in-place op leaves its target bound
            self.dead.update(binds(s))

    def _skip_body(self, s: Stmt, path: str) -> None:
        for i, b in enumerate(s.body):
            bp = f"{path}.{i}"
            self.trace.events.append(Event(bp, b.op, status="skipped"))
            self.dead.update(binds(b))
            self._skip_body(b, bp)

    def _val(self, a: Any) -> Any:
        return self.env[a] if isinstance(a, str) else a

    def _do(self, s: Stmt, ev: Event, path: str) -> None:
        e, env, p, op = self.e, self.env, s.params, s.op
        t = env.get(s.target) if s.target is not None else None
        if op == "leaf":
            env[s.out] = e.leaf(p["values"], p["shape"], p["dtype"],
                                bool(p.get("requires_grad", False)))
        elif op == "call":
            args = [self._val(a) for a in s.args]
            if p["fn"] == "matmul":
                try:
                    ev.shapes = [plain(list(e.shape(a))) for a in args]
                except Exception:  # noqa: BLE001 - the call itself reports what is wrong
                    ev.shapes = None
            env[s.out] = e.call(p["fn"], args, p.get("kw", {}))
        elif op == "view":
            env[s.out] = e.view(t, p["fn"], p.get("kw", {}))
        elif op == "getitem":
            env[s.out] = e.getitem(t, index_of(p["index"]))
        elif op == "inplace":
            env[s.target] = e.inplace(t, p["fn"], [self._val(a) for a in s.args],
                                      p.get("kw", {}))
        elif op == "setitem":
            e.setitem(t, index_of(p["index"]), self._val(s.args[0]))
        elif op == "detach":
            env[s.out] = e.detach(t)
        elif op == "data":
            env[s.out] = e.data(t)
        elif op == "requires_grad_":
            e.requires_grad_(t, bool(p.get("value", True)))
        elif op == "retain_grad":
            e.retain_grad(t)
        elif op == "hook":
            env[s.out] = e.register_hook(t, self._hook(p, p.get("label") or s.out))
        elif op == "post_hook":
            env[s.out] = e.register_post_accumulate_grad_hook(
                t, self._post_hook(p.get("label") or s.out, p.get("behaviour", "record")))
        elif op == "node_hook":
            env[s.out] = e.register_node_hook(t, p.get("kind", "pre"),
                                              self._node_hook(p, p.get("label") or s.out))
        elif op == "remove":
            e.remove_hook(t)
        elif op == "mode" and p.get("decorator"):
            @e.grad_mode_decorator(p["mode"], bool(p.get("enabled", True)))
            def block() -> None:
                self.current = None
                self.block(s.body, path + ".")
            block()
        elif op == "mode":
            with e.grad_mode(p["mode"], bool(p.get("enabled", True))):
                self.current = None
                self.block(s.body, path + ".")
        elif op == "grad_enabled":
            ev.value = plain(e.is_grad_enabled())
        elif op == "backward_many":
            gts = p.get("grad_tensors")
            e.autograd_backward([env[n] for n in p["tensors"]],
                                [self._val(g) if g is not None else None for g in gts]
                                if gts is not None else None, p.get("retain_graph"))
        elif op == "backward":
            grad = self._val(s.args[0]) if s.args and s.args[0] is not None else None
            inputs = p.get("inputs")
            e.backward(t, grad, p.get("retain_graph"),       # inputs=[] is an error to keep
                       [env[n] for n in inputs] if inputs is not None else None)
        elif op == "grad":
            gos = p.get("grad_outputs")
            res = e.autograd_grad([env[n] for n in p["outputs"]], [env[n] for n in p["inputs"]],
                                  [self._val(g) for g in gos] if gos is not None else None,
                                  p.get("retain_graph"), bool(p.get("allow_unused", False)))
            res = list(res)
            ev.value = plain([None if r is None else e.to_list(r) for r in res])
            ev.dtype = plain(next((e.dtype(r) for r in res if r is not None), None))
            for name, r in zip(p.get("outs") or [], res, strict=False):
                if name is not None:
                    env[name] = r
        elif op == "set_grad":
            e.set_grad(t, self._val(s.args[0]) if s.args and s.args[0] is not None else None)
        elif op == "observe":
            value, dtype = self._observe(t, p["what"])
            ev.value, ev.dtype = plain(value), plain(dtype)
        else:
            raise ValueError(f"unknown op {op!r}")

    def _observe(self, t: Any, what: str) -> tuple[Any, str | None]:
        e = self.e
        if what == "value":
            return e.to_list(t), e.dtype(t)
        if what == "grad":
            g = e.get_grad(t)
            return (None, None) if g is None else (e.to_list(g), e.dtype(g))
        simple = {"is_leaf": e.is_leaf, "requires_grad": e.requires_grad,
                  "shape": lambda x: list(e.shape(x)), "dtype": e.dtype,
                  "grad_fn": e.grad_fn_name, "next_functions": e.next_functions,
                  "version": e.version_counter, "retains_grad": e.retains_grad}
        if what not in simple:
            raise ValueError(f"unknown observable {what!r}")
        return simple[what](t), None


def execute(program: Program, engine: Engine) -> Trace:
    """Run `program` on `engine`; never raises for what the engine does."""
    run = _Run(engine)
    run.block(program.statements, "")
    return run.trace
