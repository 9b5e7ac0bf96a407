"""Autograd programs as plain data.

A program is a list of statements over named tensors. It is what the generator draws, what the
executor runs on an engine, what a divergence report saves (JSON) and what `gradspec replay`
reads back. Every statement kind is listed in OPS with the fields it uses and the engine
capabilities it needs (spec/README.md, "Capability vocabulary").

Fields of a statement:
    op       one of OPS
    out      the name the statement binds (a tensor or a hook handle), if any
    target   the name the statement acts on, if any
    args     operands: tensor names (str) or Python numbers (int/float); None where allowed
    params   op-specific settings, JSON-able (see OPS)
    body     nested statements (grad-mode blocks only)
    clauses  spec clause IDs the statement exercises (set by the generator)
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

FORMAT_VERSION = 1

# op -> (description of params, capabilities needed)
OPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "leaf": ("out = tensor(values, shape, dtype, requires_grad). params: values (flat list), "
             "shape (list), dtype ('float32'|'float64'), requires_grad (bool)", ("core",)),
    "call": ("out = fn(*args, **kw). params: fn (FUNCTIONS), kw (dict: dim, keepdim, exponent, "
             "min, max)", ("core",)),
    "view": ("out = target.fn(...). params: fn (VIEWS), kw (shape / dims / dim / size)",
             ("views",)),
    "getitem": ("out = target[index]. params: index (INDEX encoding)", ("views",)),
    "inplace": ("target.fn(*args, **kw), or an augmented assignment. params: fn (INPLACE), kw",
                ("inplace",)),
    "setitem": ("target[index] = args[0] (a name or a number). params: index", ("inplace",)),
    "detach": ("out = target.detach()", ("core",)),
    "data": ("out = target.data", ("core",)),
    "requires_grad_": ("target.requires_grad_(params.value)", ("core",)),
    "retain_grad": ("target.retain_grad()", ("retain_grad",)),
    "hook": ("out = target.register_hook(h), h per params.behaviour: 'record' (log, return "
             "None), 'scale' (log, return grad * params.factor), 'wrong_shape' (log, return a "
             "tensor of another shape); params.label names the hook in the log", ("hooks",)),
    "post_hook": ("out = target.register_post_accumulate_grad_hook(h); h logs params.label and "
                  "target.grad, then per params.behaviour: 'record' (default; returns None) or "
                  "'return' (returns target.grad, which backward rejects: HOOK-13)",
                  ("post_accumulate_hooks",)),
    "node_hook": ("out = target.grad_fn.register_prehook(h) (params.kind 'pre') or "
                  "target.grad_fn.register_hook(h) ('post'); h logs params.label and the first "
                  "gradient (pre: grad_outputs[0], post: grad_inputs[0]) and per "
                  "params.behaviour returns None ('record') or that tuple with its first "
                  "gradient times params.factor ('scale')", ("node_hooks", "grad_fn")),
    "remove": ("target.remove() where target is a hook handle", ("hooks",)),
    "mode": ("with <params.mode>: body, or with params.decorator true: body as a function "
             "decorated by <params.mode>, called at once. params: mode ('no_grad'|"
             "'enable_grad'|'set_grad_enabled'), enabled (bool, set_grad_enabled only), "
             "decorator (bool, default false)", ("grad_modes",)),
    "grad_enabled": ("record torch.is_grad_enabled()", ("grad_modes",)),
    "backward": ("target.backward(gradient=args[0] or None, retain_graph=params.retain_graph, "
                 "inputs=params.inputs, absent or None for none; [] raises); params.inputs "
                 "needs the capability backward_inputs", ("core",)),
    "backward_many": ("autograd.backward(params.tensors, grad_tensors=params.grad_tensors (a "
                      "list of names or None, or None), retain_graph=params.retain_graph)",
                      ("core",)),
    "grad": ("params.outs = autograd.grad(params.outputs, params.inputs, grad_outputs="
             "params.grad_outputs, retain_graph=params.retain_graph, allow_unused="
             "params.allow_unused); the results are bound to the names in params.outs",
             ("autograd_grad",)),
    "set_grad": ("target.grad = args[0] (a name, or None)", ("core",)),
    "observe": ("record params.what of target: OBSERVABLES", ("core",)),
}

FUNCTIONS = {
    # elementwise binary (operands: names or numbers; numbers only on one side)
    "add": 2, "sub": 2, "mul": 2, "div": 2,
    # unary
    "neg": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1, "sigmoid": 1, "relu": 1,
    "abs": 1, "clone": 1,
    # unary with params
    "pow": 1,      # kw: exponent (number)
    "clamp": 1,    # kw: min, max (numbers or None)
    "sum": 1,      # kw: dim (None | int | list), keepdim (bool)
    "mean": 1,     # kw: dim, keepdim
    # linear algebra
    "matmul": 2,
}
VIEWS = {"reshape": "shape", "view": "shape", "t": None, "transpose": "dims",
         "unsqueeze": "dim", "squeeze": "dim", "expand": "size"}
INPLACE = {
    "add_": 1, "sub_": 1, "mul_": 1, "div_": 1, "pow_": 0, "clamp_": 0, "neg_": 0, "exp_": 0,
    "log_": 0, "sin_": 0, "cos_": 0, "tanh_": 0, "sigmoid_": 0, "relu_": 0, "abs_": 0,
    "zero_": 0, "fill_": 1, "copy_": 1,
    # augmented assignment: target += args[0], etc.
    "iadd": 1, "isub": 1, "imul": 1, "idiv": 1,
}
OBSERVABLES = {
    # what -> capability needed
    "value": "core", "grad": "core", "is_leaf": "core", "requires_grad": "core",
    "shape": "core", "dtype": "core", "grad_fn": "grad_fn", "next_functions": "grad_fn",
    "version": "version_counter", "retains_grad": "retain_grad",
}
# INDEX encoding: a list of items, each an int or {"slice": [start, stop, step]} (None allowed),
# e.g. x[0, 1:3] is [0, {"slice": [1, 3, None]}].


@dataclass
class Stmt:
    op: str
    out: str | None = None
    target: str | None = None
    args: list[Any] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    body: list[Stmt] = field(default_factory=list)
    clauses: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op}
        for k in ("out", "target"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.args:
            d["args"] = list(self.args)
        if self.params:
            d["params"] = self.params
        if self.body:
            d["body"] = [s.to_json() for s in self.body]
        if self.clauses:
            d["clauses"] = list(self.clauses)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any], where: str = "statement") -> Stmt:
        if not isinstance(d, dict) or d.get("op") not in OPS:
            got = d.get("op") if isinstance(d, dict) else d
            raise ProgramError(f"{where}: unknown or missing op {got!r}")
        unknown = set(d) - {"op", "out", "target", "args", "params", "body", "clauses"}
        if unknown:
            raise ProgramError(f"{where}: unknown fields {sorted(unknown)}")
        return cls(op=d["op"], out=d.get("out"), target=d.get("target"),
                   args=list(d.get("args", [])), params=dict(d.get("params", {})),
                   body=[cls.from_json(b, f"{where}.body[{i}]")
                         for i, b in enumerate(d.get("body", []))],
                   clauses=list(d.get("clauses", [])))


class ProgramError(ValueError):
    """A program file or object is malformed."""


@dataclass
class Program:
    statements: list[Stmt]
    seed: int | None = None         # the generator seed it came from, if any
    meta: dict[str, Any] = field(default_factory=dict)

    def walk(self):
        """(path, stmt) for every statement, depth first; paths are '3' or '5.0'."""
        def rec(stmts, prefix):
            for i, s in enumerate(stmts):
                path = f"{prefix}{i}"
                yield path, s
                yield from rec(s.body, path + ".")
        yield from rec(self.statements, "")

    def clauses(self) -> list[str]:
        """The clause IDs exercised, in first-seen order (no set iteration: order is shown)."""
        seen: dict[str, None] = {}
        for _, s in self.walk():
            for c in s.clauses:
                seen.setdefault(c, None)
        return list(seen)

    def capabilities(self) -> list[str]:
        seen: dict[str, None] = {}
        for _, s in self.walk():
            for cap in OPS[s.op][1]:
                seen.setdefault(cap, None)
            if s.op == "observe":
                seen.setdefault(OBSERVABLES.get(s.params.get("what"), "core"), None)
            if s.op == "backward" and s.params.get("inputs") is not None:
                seen.setdefault("backward_inputs", None)
        return list(seen)

    def to_json(self) -> dict[str, Any]:
        return {"gradspec_program": FORMAT_VERSION, "seed": self.seed, "meta": self.meta,
                "statements": [s.to_json() for s in self.statements]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, d: Any) -> Program:
        if not isinstance(d, dict) or "statements" not in d:
            raise ProgramError("not a gradspec program (no 'statements')")
        if d.get("gradspec_program") != FORMAT_VERSION:
            raise ProgramError(f"unsupported program format {d.get('gradspec_program')!r}, "
                               f"expected {FORMAT_VERSION}")
        return cls([Stmt.from_json(s, f"statement {i}") for i, s in enumerate(d["statements"])],
                   seed=d.get("seed"), meta=dict(d.get("meta") or {}))

    @classmethod
    def loads(cls, text: str) -> Program:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProgramError(f"not valid JSON: {exc}") from None
        return cls.from_json(data)
