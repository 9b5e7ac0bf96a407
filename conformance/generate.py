"""Generate random autograd programs (conformance/program.py) from labelled draws.

Programs are mostly valid by construction: the generator keeps a small model of every named
tensor (shape, dtype, requires_grad, leaf or not, view base, version counter, backward node,
saved values, hooks) and only draws operands that fit. On purpose, about one statement in
twenty raises, and every error kind of spec/errors.md that a program can express is provoked
(ERROR_MOVES). The model predicts which statements raise (program.meta["expect"], for people
and for the generator's tests), so that nothing later refers to a name a failed statement
would have bound. The model is only a guide: torch, the oracle, decides what happens.

Each statement is tagged with the clause IDs it exercises, and only with clauses whose
`requires` (spec metadata) the capabilities cover. Statements that need a capability the
engine lacks are never drawn, and neither are deliberate errors whose clause needs one.

Some torch 2.13 behaviours outside the spec are steered around, not drawn: registering a hook
on a view whose storage was written since the view was made segfaults; a view whose base was
rebased by an in-place op through another view answers from a stale grad_fn until something
reads it; a no_grad view becomes unusable once its base is written.

Entry points: generate(chooser, capabilities, n_statements), program_for_seed(seed, ...) and
programs(capabilities, size), a Hypothesis strategy.
"""
from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .program import OBSERVABLES, Program, Stmt
from .strategies import Chooser, RandomChooser, boolean, choice

GENERATOR_VERSION = 1
ALL_CAPABILITIES = ("core", "grad_fn", "retain_grad", "hooks", "post_accumulate_hooks",
                    "node_hooks", "version_counter", "views", "inplace", "autograd_grad",
                    "grad_modes", "retain_graph", "warnings", "backward_inputs")

SHAPES = [(), (2,), (3,), (2, 3), (3, 2), (1, 3), (2, 1), (2, 2)]
# Leaf values sit on a grid away from 0 and from the clamp bounds, so that no derivative is
# taken at a kink (relu, abs and clamp at their corners are not what the spec is about).
VALUES = [0.5, 1.0, -0.5, 1.5, -1.0, 2.0, -1.5, 0.25, -2.0, 0.75, -0.25, 1.25]
NUMBERS = [2.0, 0.5, -1.0, 3.0, 1.5]
EXPONENTS = [2, 3, -1, 0.5]
CLAMPS = [(-0.6, 0.8), (None, 0.8), (-0.6, None)]
FACTORS = [2.0, -1.0, 0.5]

# Which tensors an op saves for backward (VER-9..13): the input, the output, or per operand.
SAVES_INPUT = {"sin", "cos", "log", "pow", "abs", "clamp"}
SAVES_OUTPUT = {"exp", "tanh", "sigmoid", "relu"}
SAVES_OTHER = {"mul", "div", "matmul"}
# Nodes that hold anything for backward (a tensor or a Python number): a second backward
# through them after they were freed raises GRAPH_FREED (FREE-3). Measured on torch 2.13.
HOLDS = SAVES_INPUT | SAVES_OUTPUT | SAVES_OTHER
INPLACE_HOLDS = {"mul_", "div_", "imul", "idiv", "pow_", "clamp_", "exp_", "sin_", "cos_",
                 "log_", "tanh_", "sigmoid_", "relu_", "abs_"}
INPLACE_SAVES_OUTPUT = {"exp_", "tanh_", "sigmoid_", "relu_"}
AUGMENTED = {"iadd": "add", "isub": "sub", "imul": "mul", "idiv": "div"}

# Error kinds a deliberate move provokes -> the capabilities it needs. Every kind of
# spec/errors.md is here except those no program can express (INEXPRESSIBLE).
ERROR_MOVES: dict[str, tuple[str, ...]] = {
    "LEAF_INPLACE": ("inplace",),
    "VIEW_OF_LEAF_INPLACE": ("inplace",),
    "VERSION_MISMATCH": ("inplace", "version_counter"),
    "GRAPH_FREED": ("retain_graph",),
    "IMPLICIT_GRAD_NONSCALAR": (),
    "NO_GRAD_FN": (),
    "RETAIN_GRAD_NO_REQUIRES_GRAD": ("retain_grad",),
    "REQUIRES_GRAD_DTYPE": (),
    "REQUIRES_GRAD_DTYPE_FLAG": (),
    "NO_GRAD_VIEW_INPLACE": ("grad_modes", "views", "inplace"),
    "REQUIRES_GRAD_NONLEAF": (),
    "HOOK_NO_REQUIRES_GRAD": ("hooks",),
    "POST_HOOK_NONLEAF": ("post_accumulate_hooks",),
    "GRAD_ASSIGN_SHAPE": (),
    "GRAD_ASSIGN_DTYPE": (),
    "HOOK_CHANGED_SIZE": ("hooks",),
    "UNUSED_INPUT": ("autograd_grad",),
    "NONLEAF_GRAD_ACCESS": ("warnings",),
    "BACKWARD_EMPTY_INPUTS": ("backward_inputs",),
    "GRAD_OUTPUT_SHAPE": (),
    "INPUT_NO_REQUIRES_GRAD": ("autograd_grad",),
    "LEAF_MOVED_INTO_GRAPH": ("inplace",),
    "POST_HOOK_RETURNED_VALUE": ("post_accumulate_hooks", "hooks"),
}
INEXPRESSIBLE: dict[str, str] = {}      # kind -> why no program can provoke it (none left)
# Clauses no generated program exercises, and why; spec examples and tests/differential cover them.
NOT_GENERATED: dict[str, str] = {
    "GRAPH-8": "control flow on values: a program's statements are fixed before it runs",
    "INPLACE-11": "rebinding a Python name: a program binds each name once",
}
# A natural (not deliberate) error of these kinds is only left in a program when the engine
# has the capability; otherwise the generator avoids it.
NATURAL_ERROR_CAPS = {"VERSION_MISMATCH": "version_counter", "GRAPH_FREED": "retain_graph",
                      "HOOK_CHANGED_SIZE": "hooks"}


# ---- the model --------------------------------------------------------------------------------
@dataclass(eq=False)
class Storage:
    version: int = 0


@dataclass(eq=False)
class Node:
    """A backward node: a leaf's AccumulateGrad or an op's grad_fn."""
    parents: list[Node] = field(default_factory=list)
    saved: list[tuple[Storage, int]] = field(default_factory=list)
    leaf: bool = False
    inplace: bool = False
    holds: bool = False              # saved something, tensor or number
    freed: bool = False
    hooks: dict[str, str] = field(default_factory=dict)       # handle -> behaviour
    post_hooks: list[str] = field(default_factory=list)
    returning: list[str] = field(default_factory=list)       # post hooks that return a value
    node_hooks: int = 0              # hooks on the grad_fn itself (HOOK-15)
    frozen: bool = False             # a leaf's accumulator after requires_grad_(False): LEAF-16
    moved: bool = False              # ... and its tensor is a non-leaf now: INPLACE-15


@dataclass(eq=False)
class T:
    """What the generator believes about one named tensor."""
    name: str
    shape: tuple[int, ...]
    dtype: str
    rg: bool
    leaf: bool
    storage: Storage
    node: Node | None = None         # grad node (AccumulateGrad for leaves that require grad)
    base: T | None = None            # view base
    views: list[T] = field(default_factory=list)
    origin: str = "leaf"             # leaf | op | no_grad | detach | data | view | grad
    nograd_view: bool = False        # a view made under no_grad
    expanded: bool = False           # overlapping memory: in-place is an error
    contiguous: bool = True
    retains: bool = False
    has_grad: bool = False
    hidden: bool = False             # aliased as some .grad: never used again
    old_node: Node | None = None     # after requires_grad_(False): the accumulator old graphs hold
    stale: bool = False              # its grad_fn is regenerated lazily by torch
    of_leaf_rg: bool = False         # a view made of a leaf that required grad at the time
    made_at: int = 0                 # storage version when its grad_fn was last set

    def hookable(self) -> bool:
        # torch 2.13 segfaults registering a hook on a view whose storage was written since
        # the view was made (x[0], then x written under no_grad): never draw that.
        return self.rg and self.node is not None and (
            self.base is None or self.storage.version == self.made_at)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def is_float(self) -> bool:
        return self.dtype in ("float32", "float64")


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    if not a or not b or len(a) > 2 or len(b) > 2:
        return None
    if a[-1] != (b[0] if len(b) == 2 else b[-1]):
        return None
    return a[:-1] + b[1:]


def index_shape(shape: tuple[int, ...], index: list[Any]) -> tuple[int, ...]:
    out = []
    for d, item in enumerate(index):
        if isinstance(item, dict):
            start, stop, step = item["slice"]
            out.append(len(range(*slice(start, stop, step).indices(shape[d]))))
    return tuple(out) + shape[len(index):]


class Gen:
    """One program being drawn: the model of its tensors and the statements so far. Each
    `move_*` draws one kind of statement (`error_*` one error kind) and returns False when
    nothing fits, in which case the step draws a fresh leaf instead."""

    def __init__(self, ch: Chooser, caps: Iterable[str], size: int):
        self.ch = ch
        self.caps = frozenset(caps)
        self.size = size
        self.tensors: dict[str, T] = {}
        self.handles: dict[str, tuple[Node, bool]] = {}    # name -> (node, is post hook)
        self.counter = 0
        self.grad_enabled = True
        self.depth = 0
        self.out: list[Stmt] = []
        self.dtype = "float64"
        self.expect: dict[int, str] = {}
        self.emitted = 0
        self._moves: dict[bool, list[tuple[str, int]]] = {}

    # ---- helpers ----------------------------------------------------------------------------
    def has(self, *caps: str) -> bool:
        return all(c in self.caps for c in caps)

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, stmt: Stmt, clauses: Iterable[str] = (), expect: str | None = None) -> Stmt:
        """Append stmt; `expect` is the error kind the model predicts it raises."""
        seen: dict[str, None] = {}
        for c in clauses:
            seen.setdefault(c, None)
        stmt.clauses = list(seen)
        self.out.append(stmt)
        self.emitted += 1
        if expect:
            self.expect[id(stmt)] = expect
        return stmt

    def live(self, pred: Callable[[T], bool] = lambda t: True) -> list[T]:
        return [t for t in self.tensors.values() if not t.hidden and pred(t)]

    def pick(self, label: str, pred: Callable[[T], bool] = lambda t: True) -> T | None:
        cands = self.live(pred)
        return choice(self.ch, label, cands) if cands else None

    def gnode(self, t: T) -> Node | None:
        return t.node if t.rg else None

    def ok_kind(self, kind: str | None) -> bool:
        cap = NATURAL_ERROR_CAPS.get(kind or "")
        return kind is None or cap is None or cap in self.caps

    # ---- backward prediction ---------------------------------------------------------------
    @staticmethod
    def reach(roots: Iterable[Node | None]) -> list[Node]:
        seen: dict[int, Node] = {}
        stack = [r for r in roots if r is not None]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen[id(n)] = n
            stack.extend(n.parents)
        return list(seen.values())

    def needed(self, roots: Iterable[Node | None], inputs: list[T] | None) -> list[Node]:
        """The nodes a backward pass runs: all reachable ones, or with `inputs` only those
        on a path to one of them (torch prunes the rest)."""
        nodes = self.reach(roots)
        if not inputs:
            return nodes
        goals = {id(u.node) for u in inputs if u.node is not None}
        memo: dict[int, bool] = {}

        def leads(n: Node) -> bool:
            if id(n) not in memo:
                memo[id(n)] = False
                memo[id(n)] = id(n) in goals or any(leads(p) for p in n.parents)
            return memo[id(n)]
        return [n for n in nodes if leads(n)]

    @staticmethod
    def predict(nodes: list[Node], accumulates: bool = True) -> str | None:
        """The error a pass over `nodes` raises; autograd.grad runs no accumulator
        (accumulates=False), so a moved leaf does not stop it."""
        for n in nodes:
            if n.freed and (n.saved or n.holds):
                return "GRAPH_FREED"
        for n in nodes:
            if any(st.version != v for st, v in n.saved):
                return "VERSION_MISMATCH"
        for n in nodes:
            if "wrong_shape" in n.hooks.values():
                return "HOOK_CHANGED_SIZE"
        if accumulates and any(n.moved for n in nodes):
            return "LEAF_MOVED_INTO_GRAPH"
        if accumulates and any(n.returning for n in nodes):
            return "POST_HOOK_RETURNED_VALUE"
        return None

    def backward_clauses(self, nodes: list[Node], kind: str | None) -> list[str]:
        ids = {id(n) for n in nodes}
        cl = ["LEAF-5", "LEAF-9"]
        if any(n.freed for n in nodes):
            cl.append("FREE-5")
            if kind is None:
                cl.append("FREE-3")
        hooked = [n for n in nodes if n.hooks]
        if hooked:
            cl += ["HOOK-1", "MODE-8"]
            uses = collections.Counter(id(p) for n in nodes for p in n.parents)
            if any(uses[id(n)] > 1 for n in hooked):
                cl.append("HOOK-10")    # a hooked tensor used twice sees the summed gradient
            if len(hooked) > 1:
                cl.append("HOOK-14")
            if any(len(n.hooks) > 1 for n in hooked):
                cl.append("HOOK-2")
        if any(n.hooks and id(n) not in ids for n in self.all_nodes()):
            cl.append("HOOK-9")
        if any(n.post_hooks for n in nodes):
            cl.append("HOOK-13")
        if any(n.frozen and not n.moved for n in nodes):
            cl.append("LEAF-16")
        if any(n.node_hooks for n in nodes):
            cl.append("HOOK-15")
        for t in self.live(lambda t: t.rg and t.node is not None and id(t.node) in ids):
            if t.leaf and t.has_grad:
                cl.append("LEAF-7")
            if t.retains:
                cl += ["RETAIN-1", "RETAIN-4"] if t.has_grad else ["RETAIN-1"]
        if any(t.leaf and t.has_grad and id(t.node) not in ids for t in self.live(
                lambda t: t.rg and t.node is not None)):
            cl.append("LEAF-10")
        if kind == "VERSION_MISMATCH":
            cl += ["VER-7", "VER-14"]
        elif any(n.inplace for n in nodes):
            cl.append("VER-8")
        if kind == "GRAPH_FREED":
            cl.append("FREE-1")
        if kind == "HOOK_CHANGED_SIZE":
            cl.append("HOOK-5")
        if kind == "LEAF_MOVED_INTO_GRAPH":
            cl.append("INPLACE-15")
        return cl

    def all_nodes(self) -> list[Node]:
        return self.reach(t.node for t in self.live(lambda t: t.node is not None))

    def after_backward(self, nodes: list[Node], retain: bool | None, inputs: list[T] | None):
        ids = {id(n) for n in nodes}
        if not retain:
            for n in nodes:
                n.freed = True
        targets = inputs if inputs is not None else self.live(
            lambda t: t.rg and t.node is not None and (t.leaf or t.retains))
        for t in targets:
            if t.node is not None and id(t.node) in ids:
                t.has_grad = True

    # ---- tensors --------------------------------------------------------------------------
    def draw_values(self, n: int, dtype: str) -> list[float | int]:
        if dtype == "int64":
            return [self.ch.integer("int value", -3, 3) for _ in range(n)]
        return [choice(self.ch, "value", VALUES) for _ in range(n)]

    def make_leaf(self, shape: tuple[int, ...] | None = None, dtype: str | None = None,
                  rg: bool | None = None, hidden: bool = False) -> T:
        if shape is None:
            shape = tuple(choice(self.ch, "leaf shape", SHAPES))
        if dtype is None:
            other = "float32" if self.dtype == "float64" else "float64"
            dtype = self.ch.weighted("leaf dtype", ((self.dtype, 9), (other, 1)))
        if rg is None:
            rg = boolean(self.ch, "leaf requires_grad", 65)
        name = self.fresh()
        n = 1
        for s in shape:
            n *= s
        values = self.draw_values(n, dtype)
        self.emit(Stmt("leaf", out=name, params={"values": values, "shape": list(shape),
                                                  "dtype": dtype, "requires_grad": rg}),
                  ["LEAF-1"] + (["LEAF-2"] if not rg else []) +
                  (["MODE-7"] if rg and not self.grad_enabled else []))
        t = T(name, shape, dtype, rg, True, Storage(), hidden=hidden)
        if rg:
            t.node = Node(leaf=True)
        self.tensors[name] = t
        return t

    def const(self, shape: tuple[int, ...], dtype: str) -> str:
        """A fresh gradient or grad_outputs tensor; hidden, for results may alias it."""
        return self.make_leaf(shape=shape, dtype=dtype, rg=False, hidden=True).name

    def rg_tensor(self, label: str, pred: Callable[[T], bool] = lambda t: True) -> T:
        """An existing tensor that requires grad, or a fresh leaf that does."""
        t = self.pick(label, lambda t: t.rg and t.is_float and pred(t))
        return t if t is not None else self.make_leaf(rg=True)

    def result(self, shape, dtype, inputs: list[T], saved=(), origin="op") -> T:
        name = self.fresh()
        rg = self.grad_enabled and any(i.rg for i in inputs)
        t = T(name, tuple(shape), dtype, rg, not rg, Storage(),
              origin=origin if rg or not any(i.rg for i in inputs) else "no_grad")
        if rg:
            t.node = Node(parents=[i.node for i in inputs if i.rg and i.node is not None],
                          saved=[(s, s.version) for s in saved])
        self.tensors[name] = t
        return t

    # ---- moves ----------------------------------------------------------------------------
    def move_leaf(self) -> bool:
        self.make_leaf()
        return True

    def move_call(self) -> bool:
        fn = self.ch.weighted("fn", [
            ("add", 5), ("mul", 5), ("sub", 3), ("div", 2), ("matmul", 3), ("sum", 5),
            ("mean", 2), ("exp", 2), ("sin", 2), ("cos", 1), ("log", 1), ("tanh", 2),
            ("sigmoid", 2), ("relu", 2), ("abs", 1), ("neg", 1), ("clone", 1), ("pow", 3),
            ("clamp", 1)])
        floats = lambda t: t.is_float  # noqa: E731
        a = self.pick("operand", floats)
        if a is None:
            a = self.make_leaf()
        kw: dict[str, Any] = {}
        args: list[Any] = [a.name]
        inputs = [a]
        saved: list[Storage] = []
        shape = a.shape
        dtype = a.dtype
        cl: list[str] = []
        if fn in ("add", "sub", "mul", "div"):
            if boolean(self.ch, "number operand", 30):
                num = choice(self.ch, "number", NUMBERS)
                args = [num, a.name] if fn in ("sub", "div") and boolean(
                    self.ch, "reflected", 30) else [a.name, num]
                cl.append("GRAPH-6")
            else:
                b = self.pick("other operand",
                              lambda t: t.is_float and broadcast(a.shape, t.shape) is not None)
                assert b is not None       # a itself always fits
                args.append(b.name)
                inputs.append(b)
                shape = broadcast(a.shape, b.shape) or ()
                dtype = "float64" if "float64" in (a.dtype, b.dtype) else "float32"
                if b is a:
                    cl.append("GRAPH-9")
                if fn == "mul" or fn == "div":
                    cl.append("VER-11")
                    if a.rg or (fn == "div" and b.rg):
                        saved.append(b.storage)
                    if b.rg:
                        saved.append(a.storage)
                if any(i.rg and i.shape != shape for i in inputs):
                    cl.append("LEAF-8")
        elif fn == "matmul":
            # matmul does not promote dtypes: mixed operands are a (non-spec) error
            b = self.pick("matmul operand", lambda t: t.dtype == a.dtype and
                          matmul_shape(a.shape, t.shape) is not None)
            if b is None:
                if not (1 <= a.ndim <= 2):
                    return False
                k = a.shape[-1]
                b = self.make_leaf(shape=choice(self.ch, "matmul shape", [(k,), (k, 2)]),
                                   dtype=a.dtype)
            args.append(b.name)
            inputs.append(b)
            shape = matmul_shape(a.shape, b.shape) or ()
            dtype = "float64" if "float64" in (a.dtype, b.dtype) else "float32"
            cl.append("VER-12")
            if a.rg:
                saved.append(b.storage)
            if b.rg:
                saved.append(a.storage)
        elif fn in ("sum", "mean"):
            if a.ndim and boolean(self.ch, "reduce dim", 40):
                dim = self.ch.integer("dim", -a.ndim, a.ndim - 1)
                keep = boolean(self.ch, "keepdim", 30)
                kw = {"dim": dim, "keepdim": keep}
                d = dim % a.ndim
                shape = tuple(1 if i == d else s for i, s in enumerate(a.shape) if keep or i != d)
            else:
                shape = ()
            cl.append("VER-13")
        else:
            if fn == "pow":
                kw = {"exponent": choice(self.ch, "exponent", EXPONENTS)}
            elif fn == "clamp":
                lo, hi = choice(self.ch, "clamp bounds", CLAMPS)
                kw = {"min": lo, "max": hi}
            if fn in SAVES_INPUT:
                saved = [a.storage]
                cl.append("VER-9")
            elif fn in SAVES_OUTPUT:
                cl.append("VER-10")
            else:
                cl.append("VER-13")
        t = self.result(shape, dtype, inputs, saved if a.rg or any(i.rg for i in inputs) else [])
        if t.node is not None:
            t.node.holds = fn in HOLDS
            if fn in SAVES_OUTPUT:
                t.node.saved.append((t.storage, 0))
        rg_in = any(i.rg for i in inputs)
        cl.insert(0, "GRAPH-1" if t.rg else ("GRAPH-2" if not rg_in else "MODE-1"))
        if t.rg and any(i.leaf and i.has_grad for i in inputs):
            cl += ["GRAPH-7", "FREE-6"]     # a new forward from leaves a backward reached
        if rg_in and not self.grad_enabled:
            cl.append("LEAF-3")
        self.emit(Stmt("call", out=t.name, args=args, params={"fn": fn, "kw": kw}), cl)
        return True

    def view_options(self, a: T) -> list[tuple[str, dict[str, Any], tuple[int, ...]]]:
        opts: list[tuple[str, dict[str, Any], tuple[int, ...]]] = []
        same = [s for s in SHAPES + [(4,), (6,), (1,), (1, 1)]
                if _numel(s) == a.numel and s != a.shape]
        for s in same:
            opts.append(("reshape", {"shape": list(s)}, s))
            if a.contiguous:
                opts.append(("view", {"shape": list(s)}, s))
        if a.ndim <= 2:
            opts.append(("t", {}, tuple(reversed(a.shape))))
        if a.ndim == 2:
            opts.append(("transpose", {"dims": [0, 1]}, (a.shape[1], a.shape[0])))
        for d in range(-a.ndim - 1, a.ndim + 1):
            dd = d % (a.ndim + 1)
            opts.append(("unsqueeze", {"dim": d}, a.shape[:dd] + (1,) + a.shape[dd:]))
        for d in range(a.ndim):
            opts.append(("squeeze", {"dim": d},
                         a.shape[:d] + a.shape[d + 1:] if a.shape[d] == 1 else a.shape))
        if 1 in a.shape:
            s = tuple(3 if x == 1 else x for x in a.shape)
            opts.append(("expand", {"size": list(s)}, s))
        elif a.ndim < 2:
            opts.append(("expand", {"size": [2, *a.shape]}, (2, *a.shape)))
        return opts

    def add_view(self, a: T, shape: tuple[int, ...], noncontig: bool, expanded: bool) -> T:
        base = a.base or a
        t = self.result(shape, a.dtype, [a], origin="view")
        t.storage = a.storage
        t.made_at = a.storage.version
        t.base = base
        base.views.append(t)
        t.nograd_view = a.nograd_view or not self.grad_enabled
        t.of_leaf_rg = a.of_leaf_rg or (base.leaf and base.rg)
        t.expanded = a.expanded or expanded
        t.contiguous = a.contiguous and not noncontig and not t.expanded
        return t

    def move_view(self) -> bool:
        a = self.pick("view of", lambda t: t.is_float)
        if a is None:
            return False
        fn, kw, shape = choice(self.ch, "view", self.view_options(a))
        copied = fn == "reshape" and not a.contiguous      # reshape copies then
        noncontig = fn in ("t", "transpose") and sum(1 for s in a.shape if s > 1) > 1
        if copied:
            t = self.result(shape, a.dtype, [a])
        else:
            t = self.add_view(a, shape, noncontig, fn == "expand")
        self.emit(Stmt("view", out=t.name, target=a.name, params={"fn": fn, "kw": kw}),
                  ["GRAPH-10", "VER-13"] + (["GRAPH-1"] if t.rg else []))
        return True

    def draw_index(self, a: T) -> list[Any]:
        index: list[Any] = []
        for d in range(self.ch.integer("index dims", 1, min(2, a.ndim))):
            n = a.shape[d]
            if boolean(self.ch, "index is int", 50):
                index.append(self.ch.integer("index", -n, n - 1))
            else:
                start = self.ch.integer("slice start", 0, n - 1)
                step = choice(self.ch, "slice step", [None, 2])
                index.append({"slice": [start, None, step]})
        return index

    def move_getitem(self) -> bool:
        a = self.pick("index into", lambda t: t.is_float and t.ndim >= 1)
        if a is None:
            return False
        index = self.draw_index(a)
        noncontig = any(isinstance(i, dict) and i["slice"][2] for i in index) or len(index) > 1
        t = self.add_view(a, index_shape(a.shape, index), noncontig, False)
        self.emit(Stmt("getitem", out=t.name, target=a.name, params={"index": index}),
                  ["GRAPH-10"] + (["GRAPH-1"] if t.rg else []))
        return True

    def leaf_rg_view(self, t: T) -> bool:
        return t.base is not None and (t.of_leaf_rg or (t.base.leaf and t.base.rg))

    def inplace_ok(self, t: T) -> bool:
        """In-place on t raises nothing the generator does not mean."""
        if not t.is_float or t.expanded or t.hidden or t.stale:
            return False
        if self.grad_enabled and (t.nograd_view or (t.leaf and t.rg) or self.leaf_rg_view(t)):
            return False
        return True

    def apply_inplace(self, t: T, args: list[T], saved_out: bool,
                      setitem: bool = False, holds: bool = False) -> list[str]:
        """Update the model for an in-place op on t; return the clauses it exercises."""
        was_leaf, was_rg, was_view = t.leaf, t.rg, t.base is not None
        cl = ["VER-2"]
        if was_view:
            cl.append("INPLACE-4" if self.leaf_rg_view(t) else
                      "INPLACE-8" if t.base is not None and not t.base.leaf else "INPLACE-14")
        elif was_leaf:
            cl.append("INPLACE-4" if was_rg else "INPLACE-14")
        else:
            cl.append("INPLACE-7")
        if t.node is not None and t.node.inplace:
            cl.append("INPLACE-12")
        if t.node is not None and t.node.hooks:
            cl.append("HOOK-11")
        if t.retains:
            cl.append("RETAIN-6")
        t.storage.version += 1
        for v in self.live(lambda v: v.nograd_view and v.storage is t.storage):
            v.hidden = True     # torch refuses to use a no_grad view once its base is written
        if self.grad_enabled and (t.rg or any(a.rg for a in args)):
            parents = ([t.node] if t.rg and t.node else []) + [a.node for a in args
                                                               if a.rg and a.node]
            n = Node(parents=parents, inplace=True, holds=holds)
            if saved_out:
                n.saved.append((t.storage, t.storage.version))
            if t.old_node is not None:   # old graphs now reach a non-leaf (INPLACE-15)
                t.old_node.moved = True
                t.old_node = None
            t.node, t.rg, t.leaf = n, True, False
            if not setitem:     # an in-place method sets t's grad_fn; setitem does not
                t.made_at = t.storage.version
            elif t.base is not None:
                t.stale = True      # setitem wrote a view of t: t is a sibling view now
            base = t.base
            if base is not None:
                base.node = Node(parents=([base.node] if base.rg and base.node else []) + [n],
                                 inplace=True)
                base.rg, base.leaf = True, False
            for v in (base or t).views:
                if v is not t:
                    v.node, v.rg, v.leaf = Node(parents=[(base or t).node]), True, False
                    # torch 2.13 regenerates v's grad_fn lazily: an in-place op on v before
                    # anything reads v.grad_fn raises LEAF_INPLACE when v's base was a leaf
                    # that did not require grad (see the generator's report). Not drawn.
                    v.stale = True
            if any(a.rg for a in args) and not was_rg:
                cl.append("INPLACE-10")
        if t.origin == "data":
            cl.append("INPLACE-5")
        if t.origin == "detach":
            cl += ["INPLACE-6", "VER-5"]
        return cl

    def inplace_args(self, t: T, fn: str) -> tuple[list[Any], dict[str, Any], list[T]]:
        arity = {"zero_": 0, "fill_": 1, "copy_": 1}.get(fn)
        if fn in ("add_", "sub_", "mul_", "div_") or fn in AUGMENTED:
            arity = 1
        if fn == "pow_":
            return [], {"exponent": choice(self.ch, "exponent", EXPONENTS)}, []
        if fn == "clamp_":
            lo, hi = choice(self.ch, "clamp bounds", CLAMPS)
            return [], {"min": lo, "max": hi}, []
        if not arity:
            return [], {}, []
        if fn != "copy_" and (fn == "fill_" or boolean(self.ch, "number operand", 40)):
            return [choice(self.ch, "number", NUMBERS)], {}, []
        b = self.pick("in-place operand", lambda u: u.is_float and u.storage is not t.storage and
                      broadcast(t.shape, u.shape) == t.shape)
        if b is None:
            b = self.make_leaf(shape=t.shape)
        return [b.name], {}, [b]

    def move_inplace(self, target: T | None = None, fn: str | None = None) -> bool:
        t = target or self.pick("in-place target", self.inplace_ok)
        if t is None:
            return False
        fn = fn or self.ch.weighted("in-place fn", [
            ("add_", 4), ("mul_", 4), ("sub_", 1), ("div_", 1), ("exp_", 2), ("sin_", 1),
            ("cos_", 1), ("tanh_", 1), ("sigmoid_", 1), ("relu_", 1), ("abs_", 1),
            ("neg_", 1), ("log_", 1), ("pow_", 2), ("clamp_", 1), ("zero_", 1), ("fill_", 1),
            ("copy_", 2), ("iadd", 2), ("imul", 2), ("isub", 1), ("idiv", 1)])
        args, kw, tensors = self.inplace_args(t, fn)
        cl = self.apply_inplace(t, tensors, fn in INPLACE_SAVES_OUTPUT,
                                holds=fn in INPLACE_HOLDS)
        if fn in AUGMENTED:
            cl.append("INPLACE-13")
        self.emit(Stmt("inplace", target=t.name, args=args, params={"fn": fn, "kw": kw}), cl)
        return True

    def move_setitem(self) -> bool:
        t = self.pick("setitem target", lambda u: u.ndim >= 1 and self.inplace_ok(u))
        if t is None:
            return False
        index = self.draw_index(t)
        shape = index_shape(t.shape, index)
        tensors: list[T] = []
        if boolean(self.ch, "setitem number", 50):
            value: Any = choice(self.ch, "number", NUMBERS)
        else:
            b = self.pick("setitem value", lambda u: u.is_float and u.storage is not t.storage and
                          broadcast(shape, u.shape) == shape)
            if b is None:
                b = self.make_leaf(shape=shape)
            value, tensors = b.name, [b]
        cl = self.apply_inplace(t, tensors, False, setitem=True)
        cl = ["INPLACE-9" if c == "INPLACE-7" else c for c in cl]
        self.emit(Stmt("setitem", target=t.name, args=[value], params={"index": index}), cl)
        return True

    def move_detach(self, data: bool = False) -> bool:
        a = self.pick("detach", lambda t: t.is_float)
        if a is None:
            return False
        name = self.fresh()
        t = T(name, a.shape, a.dtype, False, True, Storage() if data else a.storage,
              origin="data" if data else "detach", expanded=a.expanded,
              contiguous=a.contiguous)
        self.tensors[name] = t
        self.emit(Stmt("data" if data else "detach", out=name, target=a.name),
                  ["VER-6", "INPLACE-5"] if data else ["LEAF-4", "VER-5"])
        return True

    def move_data(self) -> bool:
        return self.move_detach(data=True)

    def move_requires_grad_(self) -> bool:
        t = self.pick("requires_grad_", lambda u: u.leaf and u.is_float and u.base is None
                      and not u.views)
        if t is None:
            return False
        self.set_requires_grad(t, not t.rg)
        return True

    def set_requires_grad(self, t: T, value: bool) -> None:
        if value:
            # torch keeps the accumulator old graphs hold: they accumulate into t again
            t.rg, t.node = True, t.old_node or Node(leaf=True)
            t.node.frozen, t.old_node = False, None
        else:
            # old graphs keep t's accumulator but write no .grad (LEAF-16); an in-place
            # write of a value that requires grad makes them raise (INPLACE-15)
            if t.node is not None:
                t.node.frozen, t.old_node = True, t.node
            t.rg, t.node = False, None
        self.emit(Stmt("requires_grad_", target=t.name, params={"value": value}),
                  ["LEAF-11", "LEAF-2"] + (["LEAF-16"] if t.old_node is not None else []))

    def move_retain_grad(self) -> bool:
        t = self.pick("retain_grad", lambda u: u.rg)
        if t is None:
            return False
        cl = ["RETAIN-3"] if t.leaf else ["RETAIN-1"]
        if t.node is not None and t.node.hooks:
            cl.append("RETAIN-5")
        if not t.leaf:
            t.retains = True
        self.emit(Stmt("retain_grad", target=t.name), cl)
        return True

    def move_hook(self, behaviour: str | None = None, t: T | None = None) -> bool:
        t = t or self.pick("hook on", T.hookable)
        if t is None or t.node is None:
            return False
        behaviour = behaviour or self.ch.weighted("hook behaviour",
                                                  [("record", 5), ("scale", 3)])
        name = self.fresh("h")
        params: dict[str, Any] = {"behaviour": behaviour, "label": name}
        if behaviour == "scale":
            params["factor"] = choice(self.ch, "factor", FACTORS)
        cl = ["HOOK-1", {"record": "HOOK-3", "scale": "HOOK-4"}.get(behaviour, "HOOK-5")]
        if t.node.hooks:
            cl.append("HOOK-2")
        if t.leaf:
            cl.append("HOOK-8")
        if t.retains:
            cl.append("RETAIN-5")
        t.node.hooks[name] = behaviour
        self.handles[name] = (t.node, False)
        self.emit(Stmt("hook", out=name, target=t.name, params=params), cl)
        if behaviour != "wrong_shape" and boolean(self.ch, "another hook on it", 30):
            self.move_hook(None, t)      # several hooks on one tensor: their order (HOOK-2)
        return True

    def move_post_hook(self) -> bool:
        t = self.pick("post hook on", lambda u: u.leaf and u.rg and u.node is not None)
        if t is None or t.node is None:
            return False
        name = self.fresh("h")
        t.node.post_hooks.append(name)
        self.handles[name] = (t.node, True)
        self.emit(Stmt("post_hook", out=name, target=t.name, params={"label": name}),
                  ["HOOK-13"])
        return True

    def move_remove(self) -> bool:
        names = list(self.handles)
        if not names:
            return False
        name = choice(self.ch, "remove", names)
        node, post = self.handles.pop(name)
        if post:
            node.post_hooks.remove(name)
            if name in node.returning:
                node.returning.remove(name)
        else:
            node.hooks.pop(name, None)
        self.emit(Stmt("remove", target=name), ["HOOK-6"])
        return True

    def move_mode(self) -> bool:
        if self.depth >= 2:
            return False
        mode = self.ch.weighted("grad mode", [("no_grad", 4), ("enable_grad", 1),
                                              ("set_grad_enabled", 2)])
        params: dict[str, Any] = {"mode": mode}
        enabled = mode == "enable_grad"
        if mode == "set_grad_enabled":
            enabled = boolean(self.ch, "enabled", 30)
            params["enabled"] = enabled
        cl = ["MODE-4"]
        if not enabled:
            cl.append("MODE-1")
        if mode == "enable_grad" or (enabled and not self.grad_enabled):
            cl.append("MODE-2")
        if mode == "set_grad_enabled":
            cl.append("MODE-3")
        if boolean(self.ch, "as a decorator", 30):
            params["decorator"] = True
            cl.append("MODE-5")
        stmt = Stmt("mode", params=params)
        saved_out, saved_mode = self.out, self.grad_enabled
        self.out, self.grad_enabled = stmt.body, enabled
        self.depth += 1
        for _ in range(self.ch.integer("block length", 1, 3)):
            self.step(in_block=True)
        self.depth -= 1
        self.out, self.grad_enabled = saved_out, saved_mode
        if stmt.body:
            self.emit(stmt, cl)
        return bool(stmt.body)

    def move_grad_enabled(self) -> bool:
        self.emit(Stmt("grad_enabled"), ["MODE-6"] + ([] if self.grad_enabled else ["MODE-1"]))
        return True

    def move_node_hook(self) -> bool:
        t = self.pick("node hook on", lambda u: u.hookable() and not u.leaf and not u.stale)
        if t is None or t.node is None:
            return False
        name = self.fresh("h")
        params: dict[str, Any] = {"kind": choice(self.ch, "node hook kind", ["pre", "post"]),
                                  "behaviour": self.ch.weighted("node hook behaviour",
                                                                [("record", 2), ("scale", 1)]),
                                  "label": name}
        if params["behaviour"] == "scale":
            params["factor"] = choice(self.ch, "factor", FACTORS)
        t.node.node_hooks += 1
        self.emit(Stmt("node_hook", out=name, target=t.name, params=params),
                  ["HOOK-15", "GRAPH-3"])
        return True

    def move_backward_many(self) -> bool:
        """autograd.backward on two tensors at once (API-12)."""
        cands = self.live(lambda u: u.rg and u.node is not None and u.is_float)
        if len(cands) < 2:
            return False
        a = choice(self.ch, "backward tensor", cands)
        b = choice(self.ch, "backward tensor 2", [u for u in cands if u is not a])
        nodes = self.reach([a.node, b.node])
        predicted = self.predict(nodes)
        if not self.ok_kind(predicted) or (predicted and boolean(self.ch, "valid backward", 85)):
            return False
        gts: list[str | None] = [None if not u.shape else self.const(u.shape, u.dtype)
                                 for u in (a, b)]
        retain = self.draw_retain()
        cl = ["API-12"] + self.backward_clauses(nodes, predicted)
        cl += ["FREE-2"] if retain else ["FREE-1"]
        if any(gts):
            cl.append("API-2")
        self.emit(Stmt("backward_many", params={
            "tensors": [a.name, b.name], "grad_tensors": gts if any(gts) else None,
            "retain_graph": retain}), cl, predicted)
        if predicted is None:
            self.after_backward(nodes, retain, None)
        return True

    def scalar_root(self, t: T) -> tuple[T, list[Any]]:
        """A scalar to call backward on: t, a sum of t, or t with a `gradient`."""
        if not t.shape:
            return t, []
        if not self.grad_enabled or boolean(self.ch, "give gradient", 50):
            # hidden: a leaf's .grad may alias the gradient tensor itself (UNSPEC-3)
            g = self.make_leaf(shape=t.shape, dtype=t.dtype, rg=False, hidden=True)
            return t, [g.name]
        s = self.result((), t.dtype, [t])
        self.emit(Stmt("call", out=s.name, args=[t.name], params={"fn": "sum", "kw": {}}),
                  ["GRAPH-1", "VER-13"])
        return s, []

    def draw_retain(self) -> bool | None:
        if not self.has("retain_graph"):
            return None
        return self.ch.weighted("retain_graph", [(None, 5), (False, 1), (True, 3)])

    def move_backward(self) -> bool:
        cands = self.live(lambda u: u.rg and u.node is not None and u.is_float)
        valid = [u for u in cands if self.predict(self.reach([u.node])) is None]
        ok = [u for u in cands if self.ok_kind(self.predict(self.reach([u.node])))]
        if valid and (len(valid) == len(ok) or boolean(self.ch, "valid backward", 85)):
            ok = valid
        if not ok:
            return False
        t = choice(self.ch, "backward of", ok)
        root, gradient = self.scalar_root(t)
        return self.emit_backward(root, gradient)

    def emit_backward(self, root: T, gradient: list[Any], retain: Any = "draw",
                      inputs: list[T] | None = None, kind: str | None = None) -> bool:
        nodes = self.reach([root.node])
        predicted = self.predict(nodes) if root.rg and root.node is not None else "NO_GRAD_FN"
        retain = self.draw_retain() if retain == "draw" else retain
        if inputs is None and self.has("backward_inputs") and boolean(
                self.ch, "backward inputs", 20):
            leaves = [u for u in self.live(lambda u: u.leaf and u.rg and u.node is not None)
                      if u.node in nodes]
            if leaves:
                inputs = [choice(self.ch, "input", leaves)]
        params: dict[str, Any] = {"retain_graph": retain}
        if inputs:
            params["inputs"] = [u.name for u in inputs]
            nodes = self.needed([root.node], inputs)
            predicted = self.predict(nodes) if predicted != "NO_GRAD_FN" else predicted
        cl = self.backward_clauses(nodes, predicted)
        cl += ["FREE-2"] if retain else ["FREE-1"]
        if retain is None:
            cl.append("FREE-7")
        if gradient:
            cl.append("API-2")
        if root.leaf:
            cl.append("API-5")
        if inputs:
            cl.append("API-11")
        if kind:
            cl.append(ERROR_CLAUSE[kind])
        self.emit(Stmt("backward", target=root.name, args=gradient, params=params), cl,
                  kind or predicted)
        if predicted is None and kind is None:
            self.after_backward(nodes, retain, inputs or None)
        return True

    def move_grad(self, bad: str | None = None) -> bool:
        """autograd.grad; `bad` provokes UNUSED_INPUT, INPUT_NO_REQUIRES_GRAD or
        GRAD_OUTPUT_SHAPE."""
        unused, not_rg = bad == "UNUSED_INPUT", bad == "INPUT_NO_REQUIRES_GRAD"
        cands = self.live(lambda u: u.rg and u.node is not None and u.is_float)
        ok = [u for u in cands if self.ok_kind(self.predict(self.reach([u.node])))]
        if not ok:
            return False
        t = choice(self.ch, "grad of", ok)
        nodes = self.reach([t.node])
        grad_outputs: list[str] | None = None
        if bad == "GRAD_OUTPUT_SHAPE":
            shape = choice(self.ch, "wrong shape", [s for s in SHAPES if _numel(s) != t.numel])
            grad_outputs = [self.const(shape, t.dtype)]
        elif t.shape:
            if not self.grad_enabled or boolean(self.ch, "grad_outputs", 50):
                grad_outputs = [self.const(t.shape, t.dtype)]
            else:
                t = self.sum_of(t)
                nodes = self.reach([t.node])
        ins = [u for u in self.live(lambda u: u.rg and u.node is not None) if u.node in nodes
               and u is not t]
        if unused:
            extra = self.make_leaf(rg=True)
            inputs = ([choice(self.ch, "grad input", ins)] if ins else []) + [extra]
        elif not_rg:
            inputs = [self.make_leaf(rg=False)]
        elif ins:
            inputs = [choice(self.ch, "grad input", ins)]
            if len(ins) > 1 and boolean(self.ch, "second grad input", 30):
                other = choice(self.ch, "grad input 2", ins)
                if other is not inputs[0]:
                    inputs.append(other)
        else:
            return False
        allow_unused = boolean(self.ch, "allow_unused", 15) if not unused else False
        retain = self.draw_retain()
        ran = self.needed([t.node], inputs)
        predicted = self.predict(ran, accumulates=False)
        outs = [self.fresh("g") for _ in inputs]
        params = {"outputs": [t.name], "inputs": [u.name for u in inputs],
                  "grad_outputs": grad_outputs, "retain_graph": retain,
                  "allow_unused": allow_unused, "outs": outs}
        cl = ["API-6", "FREE-4"] + (["API-9"] if grad_outputs else [])
        if any(not u.leaf for u in inputs):
            cl.append("API-10")
        if any(n.hooks for n in ran):
            cl.append("HOOK-16")
        if any(u.retains and u.node in nodes for u in self.live()):
            cl.append("RETAIN-8")
        if predicted == "VERSION_MISMATCH":
            cl.append("VER-15")
        if predicted == "GRAPH_FREED":
            cl.append("FREE-1")
        if unused:
            cl.append("API-7")
        if not_rg:
            cl.append("API-8")
        if bad == "GRAD_OUTPUT_SHAPE":
            cl.append("API-3")
        self.emit(Stmt("grad", params=params), cl, bad or predicted)
        if predicted is None and bad is None:
            if not retain:
                for n in ran:
                    n.freed = True
            for name, u in zip(outs, inputs, strict=True):
                if u.node in nodes:
                    # may be an expanded or no_grad view inside the engine (UNSPEC-3):
                    # read it and compute with it, never write it
                    self.tensors[name] = T(name, u.shape, u.dtype, False, True, Storage(),
                                           origin="grad", expanded=True, contiguous=False)
        return True

    def sum_of(self, t: T) -> T:
        s = self.result((), t.dtype, [t])
        self.emit(Stmt("call", out=s.name, args=[t.name], params={"fn": "sum", "kw": {}}),
                  ["GRAPH-1", "VER-13"])
        return s

    def move_set_grad(self) -> bool:
        t = self.pick("set .grad of", lambda u: u.leaf and u.rg and u.is_float)
        if t is None:
            return False
        if boolean(self.ch, "grad None", 30):
            t.has_grad = False
            self.emit(Stmt("set_grad", target=t.name, args=[None]), ["LEAF-14"])
            return True
        g = self.make_leaf(shape=t.shape, dtype=t.dtype, rg=False, hidden=True)
        t.has_grad = True
        self.emit(Stmt("set_grad", target=t.name, args=[g.name]), ["LEAF-12", "LEAF-13"])
        return True

    def move_observe(self, t: T | None = None, what: str | None = None) -> bool:
        t = t or self.pick("observe")
        if t is None:
            return False
        if what is None:
            opts = [("value", 5), ("grad", 6), ("is_leaf", 2), ("requires_grad", 2),
                    ("shape", 1), ("dtype", 1), ("grad_fn", 3), ("next_functions", 2),
                    ("version", 3), ("retains_grad", 1)]
            opts = [(w, n) for w, n in opts if OBSERVABLES[w] in self.caps]
            if not t.leaf and not t.retains and "warnings" not in self.caps:
                opts = [o for o in opts if o[0] != "grad"]
            if not (t.rg and not t.leaf):
                opts = [o for o in opts if o[0] != "next_functions"]
            if t.origin == "grad":   # torch's engine may write into its results (UNSPEC-3)
                opts = [o for o in opts if o[0] != "version"]
            if t.stale:   # torch answers from the stale grad_fn until it is regenerated
                opts = [o for o in opts if o[0] not in ("grad", "retains_grad")]
            if not t.is_float:
                opts = [o for o in opts if o[0] in ("value", "is_leaf", "requires_grad",
                                                     "dtype", "shape", "version")]
            what = self.ch.weighted("observe what", opts)
        cl = self.observe_clauses(t, what)
        self.emit(Stmt("observe", target=t.name, params={"what": what}), cl)
        return True

    @staticmethod
    def observe_clauses(t: T, what: str) -> list[str]:
        if what == "grad":
            if t.leaf:
                return ["LEAF-5", "LEAF-9"] + ([] if t.has_grad else ["LEAF-6"])
            return ["RETAIN-1"] if t.retains else ["RETAIN-7"]
        if what in ("is_leaf", "requires_grad"):
            return {"leaf": ["LEAF-1"] + ([] if t.rg else ["LEAF-2"]), "no_grad": [
                "LEAF-3", "MODE-1"], "detach": ["LEAF-4"], "data": ["LEAF-4"]}.get(
                t.origin, ["GRAPH-1" if t.rg else "GRAPH-2"])
        if what == "grad_fn":
            cl = ["GRAPH-3"] if t.rg and not t.leaf else ["LEAF-1"]
            if t.node is not None and t.node.inplace:
                cl.append("INPLACE-7")
            if t.origin == "view":
                cl.append("GRAPH-10")
            return cl
        if what == "next_functions":
            return ["GRAPH-4", "GRAPH-5", "GRAPH-6"]
        if what == "version":
            cl = ["VER-1" if t.storage.version == 0 else "VER-2", "VER-3"]
            cl += {"view": ["VER-4"], "detach": ["VER-5"], "data": ["VER-6"]}.get(t.origin, [])
            return cl
        if what == "retains_grad":
            return ["RETAIN-3"] if t.leaf else ["RETAIN-1"]
        return []

    # ---- deliberate errors -------------------------------------------------------------------
    def move_error(self) -> bool:
        kinds = [k for k, caps in ERROR_MOVES.items() if self.has(*caps)]
        if not self.grad_enabled:   # the others build graphs or need grad mode to raise
            kinds = [k for k in kinds if k in NO_GRAD_ERRORS]
        if not kinds:
            return False
        kind = choice(self.ch, "error kind", kinds)
        return getattr(self, "error_" + kind.lower())()

    def error_leaf_inplace(self) -> bool:
        t = self.rg_tensor("leaf to modify", lambda u: u.leaf)
        fn = self.ch.weighted("in-place fn", [("add_", 2), ("mul_", 1), ("iadd", 1),
                                              ("zero_", 1), ("exp_", 1)])
        args = [] if fn in ("zero_", "exp_") else [choice(self.ch, "number", NUMBERS)]
        self.emit(Stmt("inplace", target=t.name, args=args, params={"fn": fn, "kw": {}}),
                  ["INPLACE-1"] + (["INPLACE-13"] if fn in AUGMENTED else []), "LEAF_INPLACE")
        return True

    def error_view_of_leaf_inplace(self) -> bool:
        t = self.rg_tensor("leaf", lambda u: u.leaf and u.ndim >= 1)
        if t.ndim == 0:
            t = self.make_leaf(shape=(2,), rg=True)
        if self.has("views") and boolean(self.ch, "through a view", 50):
            index = self.draw_index(t)
            v = self.add_view(t, index_shape(t.shape, index), True, False)
            self.emit(Stmt("getitem", out=v.name, target=t.name, params={"index": index}),
                      ["GRAPH-10", "GRAPH-1"])
            self.emit(Stmt("inplace", target=v.name, args=[choice(self.ch, "number", NUMBERS)],
                           params={"fn": "mul_", "kw": {}}), ["INPLACE-2"],
                      "VIEW_OF_LEAF_INPLACE")
        else:
            index = self.draw_index(t)
            # x[0:, 0:] = v writes x itself, not a view of it (measured on torch 2.13)
            whole = all(isinstance(i, dict) and i["slice"] == [0, None, None] for i in index)
            self.emit(Stmt("setitem", target=t.name, args=[choice(self.ch, "number", NUMBERS)],
                           params={"index": index}), ["INPLACE-3"],
                      "LEAF_INPLACE" if whole else "VIEW_OF_LEAF_INPLACE")
        return True

    def call1(self, a: T, fn: str, args: list[Any], kw: dict[str, Any],
              cl: list[str]) -> T:
        """Emit out = fn(a, *args) for a unary op or an op with a number; model what it saves."""
        saved = [a.storage] if fn in SAVES_INPUT else []
        y = self.result(a.shape, a.dtype, [a], saved)
        if y.node is not None:
            y.node.holds = fn in HOLDS
            if fn in SAVES_OUTPUT:
                y.node.saved.append((y.storage, 0))
        self.emit(Stmt("call", out=y.name, args=[a.name, *args], params={"fn": fn, "kw": kw}),
                  ["GRAPH-1", *cl])
        return y

    def error_version_mismatch(self) -> bool:
        """An op saves a tensor; the tensor is modified in place; backward raises."""
        recipe = self.ch.weighted("recipe", [("saved output", 1), ("saved input", 1),
                                             ("saved leaf", 1 if self.has("grad_modes") else 0)])
        a = self.rg_tensor("saving op input", (lambda u: u.leaf) if recipe == "saved leaf"
                           else (lambda u: True))
        if recipe == "saved input" and a.leaf:
            a = self.call1(a, "mul", [2.0], {}, ["GRAPH-6"])
        if recipe == "saved output":
            y = self.call1(a, choice(self.ch, "fn", ["exp", "tanh", "sigmoid"]), [], {},
                           ["VER-10"])
            target = y
        else:
            fn = choice(self.ch, "fn", ["sin", "cos", "pow"])
            y = self.call1(a, fn, [], {"exponent": 2} if fn == "pow" else {}, ["VER-9"])
            target = a
        if target.leaf:
            stmt = Stmt("mode", params={"mode": "no_grad"})
            stmt.body.append(Stmt("inplace", target=target.name, args=[1.0],
                                  params={"fn": "add_", "kw": {}},
                                  clauses=["INPLACE-4", "VER-2"]))
            self.emit(stmt, ["MODE-1", "MODE-4"])
            target.storage.version += 1
        else:
            self.move_inplace(target, "mul_" if target.shape else "add_")
        root = y if not y.shape else self.sum_of(y)
        leaves = [u for u in self.live(lambda u: u.leaf and u.rg and u.node is not None)
                  if u.node in self.reach([root.node])]
        if self.has("autograd_grad") and leaves and boolean(self.ch, "via autograd.grad", 30):
            self.emit(Stmt("grad", params={
                "outputs": [root.name], "inputs": [leaves[0].name], "grad_outputs": None,
                "retain_graph": None, "allow_unused": False, "outs": [self.fresh("g")]}),
                ["API-6", "VER-7", "VER-15"], "VERSION_MISMATCH")
            return True
        return self.emit_backward(root, [], retain=None, inputs=[], kind="VERSION_MISMATCH")

    def error_graph_freed(self) -> bool:
        a = self.rg_tensor("graph input")
        y = self.call1(a, "sin", [], {}, ["VER-9"])
        root = self.sum_of(y)
        self.emit_backward(root, [], retain=False, inputs=[])
        return self.emit_backward(root, [], retain=None, inputs=[], kind="GRAPH_FREED")

    def error_implicit_grad_nonscalar(self) -> bool:
        t = self.rg_tensor("non-scalar", lambda u: u.ndim >= 1)
        if not t.shape:
            t = self.make_leaf(shape=(2,), rg=True)
        return self.emit_backward(t, [], retain=None, inputs=[],
                                  kind="IMPLICIT_GRAD_NONSCALAR")

    def error_no_grad_fn(self) -> bool:
        t = self.pick("no grad", lambda u: not u.rg and u.is_float) or self.make_leaf(rg=False)
        root, gradient = (t, []) if not t.shape else (
            t, [self.make_leaf(shape=t.shape, dtype=t.dtype, rg=False, hidden=True).name])
        return self.emit_backward(root, gradient, retain=None, inputs=[], kind="NO_GRAD_FN")

    def error_grad_output_shape(self) -> bool:
        if self.has("autograd_grad") and boolean(self.ch, "via autograd.grad", 40):
            self.rg_tensor("grad of")
            return self.move_grad("GRAD_OUTPUT_SHAPE")
        t = self.rg_tensor("backward of")
        shape = choice(self.ch, "wrong shape", [s for s in SHAPES if s != t.shape
                                                and s != () and _numel(s) != 1])
        g = self.make_leaf(shape=shape, dtype=t.dtype, rg=False, hidden=True)
        return self.emit_backward(t, [g.name], retain=None, inputs=[], kind="GRAD_OUTPUT_SHAPE")

    def error_backward_empty_inputs(self) -> bool:
        t = self.rg_tensor("backward of", lambda u: not u.leaf)
        root = t if not t.shape else self.sum_of(t)
        self.emit(Stmt("backward", target=root.name, params={"retain_graph": None,
                                                             "inputs": []}),
                  ["API-11"], "BACKWARD_EMPTY_INPUTS")
        return True

    def error_retain_grad_no_requires_grad(self) -> bool:
        t = self.pick("no grad", lambda u: not u.rg and u.is_float) or self.make_leaf(rg=False)
        self.emit(Stmt("retain_grad", target=t.name), ["RETAIN-2"],
                  "RETAIN_GRAD_NO_REQUIRES_GRAD")
        return True

    def int_leaf(self, rg: bool) -> str:
        shape = tuple(choice(self.ch, "leaf shape", SHAPES))
        name = self.fresh()
        self.emit(Stmt("leaf", out=name, params={
            "values": self.draw_values(_numel(shape), "int64"), "shape": list(shape),
            "dtype": "int64", "requires_grad": rg}), ["LEAF-1", "LEAF-15"],
            "REQUIRES_GRAD_DTYPE" if rg else None)
        if not rg:
            self.tensors[name] = T(name, shape, "int64", False, True, Storage())
        return name

    def error_requires_grad_dtype(self) -> bool:
        self.int_leaf(rg=True)
        return True

    def error_requires_grad_dtype_flag(self) -> bool:
        t = self.pick("int tensor", lambda u: u.dtype == "int64")
        name = t.name if t is not None else self.int_leaf(rg=False)
        self.emit(Stmt("requires_grad_", target=name, params={"value": True}), ["LEAF-15"],
                  "REQUIRES_GRAD_DTYPE_FLAG")
        return True

    def error_no_grad_view_inplace(self) -> bool:
        t = self.rg_tensor("base", lambda u: u.ndim >= 1 and not u.expanded)
        if not t.shape:
            t = self.make_leaf(shape=(2,), rg=True)
        index = self.draw_index(t)
        stmt = Stmt("mode", params={"mode": "no_grad"})
        saved_out, saved_mode = self.out, self.grad_enabled
        self.out, self.grad_enabled = stmt.body, False
        v = self.add_view(t, index_shape(t.shape, index), True, False)
        self.emit(Stmt("getitem", out=v.name, target=t.name, params={"index": index}),
                  ["GRAPH-10", "MODE-1"])
        self.out, self.grad_enabled = saved_out, saved_mode
        self.emit(stmt, ["MODE-1", "MODE-4"])
        self.emit(Stmt("inplace", target=v.name, args=[choice(self.ch, "number", NUMBERS)],
                       params={"fn": "add_", "kw": {}}), ["MODE-9"], "NO_GRAD_VIEW_INPLACE")
        return True

    def error_requires_grad_nonleaf(self) -> bool:
        t = self.pick("non-leaf", lambda u: u.rg and not u.leaf)
        if t is None:
            a = self.rg_tensor("input")
            t = self.result(a.shape, a.dtype, [a])
            self.emit(Stmt("call", out=t.name, args=[a.name, 2.0],
                           params={"fn": "mul", "kw": {}}), ["GRAPH-1", "GRAPH-6"])
        self.emit(Stmt("requires_grad_", target=t.name, params={"value": False}), ["LEAF-11"],
                  "REQUIRES_GRAD_NONLEAF")
        return True

    def error_hook_no_requires_grad(self) -> bool:
        t = self.pick("no grad", lambda u: not u.rg and u.is_float) or self.make_leaf(rg=False)
        self.emit(Stmt("hook", out=self.fresh("h"), target=t.name,
                       params={"behaviour": "record", "label": f"h{self.counter}"}), ["HOOK-7"],
                  "HOOK_NO_REQUIRES_GRAD")
        return True

    def error_post_hook_nonleaf(self) -> bool:
        t = self.pick("non-leaf", lambda u: u.rg and not u.leaf)
        if t is None:
            return self.post_hook_on_new_nonleaf()
        self.emit(Stmt("post_hook", out=self.fresh("h"), target=t.name,
                       params={"label": f"h{self.counter}"}), ["HOOK-12"],
                  "POST_HOOK_NONLEAF")
        return True

    def post_hook_on_new_nonleaf(self) -> bool:
        a = self.rg_tensor("input")
        t = self.result(a.shape, a.dtype, [a])
        self.emit(Stmt("call", out=t.name, args=[a.name], params={"fn": "exp", "kw": {}}),
                  ["GRAPH-1"])
        if t.node is not None:
            t.node.saved = [(t.storage, 0)]
        self.emit(Stmt("post_hook", out=self.fresh("h"), target=t.name,
                       params={"label": f"h{self.counter}"}), ["HOOK-12"],
                  "POST_HOOK_NONLEAF")
        return True

    def error_grad_assign_shape(self) -> bool:
        t = self.rg_tensor("leaf", lambda u: u.leaf)
        shape = choice(self.ch, "wrong shape", [s for s in SHAPES if s != t.shape])
        g = self.make_leaf(shape=shape, dtype=t.dtype, rg=False, hidden=True)
        self.emit(Stmt("set_grad", target=t.name, args=[g.name]), ["LEAF-12"],
                  "GRAD_ASSIGN_SHAPE")
        return True

    def error_grad_assign_dtype(self) -> bool:
        t = self.rg_tensor("leaf", lambda u: u.leaf)
        other = "float32" if t.dtype == "float64" else "float64"
        g = self.make_leaf(shape=t.shape, dtype=other, rg=False, hidden=True)
        self.emit(Stmt("set_grad", target=t.name, args=[g.name]), ["LEAF-13"],
                  "GRAD_ASSIGN_DTYPE")
        return True

    def error_hook_changed_size(self) -> bool:
        t = self.rg_tensor("hook on", T.hookable)
        self.move_hook("wrong_shape", t)
        root = t if not t.shape else self.sum_of(t)
        return self.emit_backward(root, [], retain=None, inputs=[], kind="HOOK_CHANGED_SIZE")

    def error_unused_input(self) -> bool:
        if not any(self.live(lambda u: u.rg and u.node is not None)):
            self.make_leaf(rg=True)
        return self.move_grad("UNUSED_INPUT")

    def error_input_no_requires_grad(self) -> bool:
        if not any(self.live(lambda u: u.rg and u.node is not None)):
            self.make_leaf(rg=True)
        return self.move_grad("INPUT_NO_REQUIRES_GRAD")

    def error_leaf_moved_into_graph(self) -> bool:
        """A leaf in a graph stops requiring grad, then an in-place write of a value that
        requires grad makes it a non-leaf: backward through the old graph raises."""
        x = self.make_leaf(rg=True)
        y = self.call1(x, "mul", [2.0], {}, ["GRAPH-6"])
        root = y if not y.shape else self.sum_of(y)
        self.set_requires_grad(x, False)
        if x.shape and boolean(self.ch, "by setitem", 50):
            index = self.draw_index(x)
            w = self.make_leaf(shape=index_shape(x.shape, index), dtype=x.dtype, rg=True)
            cl = self.apply_inplace(x, [w], False, setitem=True)
            self.emit(Stmt("setitem", target=x.name, args=[w.name], params={"index": index}),
                      ["INPLACE-9" if c == "INPLACE-7" else c for c in cl])
        else:
            w = self.make_leaf(shape=x.shape, dtype=x.dtype, rg=True)
            cl = self.apply_inplace(x, [w], False)
            self.emit(Stmt("inplace", target=x.name, args=[w.name],
                           params={"fn": "copy_", "kw": {}}), cl)
        return self.emit_backward(root, [], retain=None, inputs=[],
                                  kind="LEAF_MOVED_INTO_GRAPH")

    def error_post_hook_returned_value(self) -> bool:
        """A post-accumulate hook returns a value: the backward that runs it raises. The hook
        is removed afterwards, so that later backward calls work."""
        x = self.rg_tensor("leaf", lambda u: u.leaf and u.node is not None)
        assert x.node is not None
        name = self.fresh("h")
        x.node.post_hooks.append(name)
        x.node.returning.append(name)
        self.handles[name] = (x.node, True)
        self.emit(Stmt("post_hook", out=name, target=x.name,
                       params={"label": name, "behaviour": "return"}), ["HOOK-13"])
        y = self.call1(x, "mul", [2.0], {}, ["GRAPH-6"])
        root = y if not y.shape else self.sum_of(y)
        self.emit_backward(root, [], retain=True if self.has("retain_graph") else None,
                           inputs=[], kind="POST_HOOK_RETURNED_VALUE")
        self.handles.pop(name)
        x.node.post_hooks.remove(name)
        x.node.returning.remove(name)
        self.emit(Stmt("remove", target=name), ["HOOK-6"])
        return True

    def error_nonleaf_grad_access(self) -> bool:
        t = self.pick("non-leaf", lambda u: u.rg and not u.leaf and not u.retains)
        if t is None:
            a = self.rg_tensor("input")
            t = self.result(a.shape, a.dtype, [a])
            self.emit(Stmt("call", out=t.name, args=[a.name], params={"fn": "neg", "kw": {}}),
                      ["GRAPH-1"])
        return self.move_observe(t, "grad")

    # ---- the loop ---------------------------------------------------------------------------
    MOVES: list[tuple[str, int, tuple[str, ...]]] = [
        # (move, weight, capabilities); "skip" is option 0 so that shrinking can drop a step
        ("skip", 0, ()),
        ("leaf", 8, ()), ("call", 24, ()), ("view", 7, ("views",)),
        ("getitem", 5, ("views",)), ("inplace", 9, ("inplace",)),
        ("setitem", 4, ("inplace",)), ("detach", 3, ()), ("data", 2, ()),
        ("requires_grad_", 2, ()), ("retain_grad", 4, ("retain_grad",)),
        ("hook", 6, ("hooks",)), ("post_hook", 3, ("post_accumulate_hooks",)),
        ("remove", 2, ("hooks",)), ("mode", 4, ("grad_modes",)), ("backward", 11, ()),
        ("node_hook", 3, ("node_hooks", "grad_fn")), ("grad_enabled", 2, ("grad_modes",)),
        ("backward_many", 3, ()),
        ("grad", 4, ("autograd_grad",)), ("set_grad", 2, ()), ("observe", 20, ()),
        ("error", 9, ()),
    ]

    def step(self, in_block: bool = False) -> None:
        deep = in_block and self.depth >= 2
        if deep not in self._moves:
            self._moves[deep] = [(m, w) for m, w, caps in self.MOVES if self.has(*caps)
                                 and not (deep and m in ("error", "mode"))]
        move = self.ch.weighted("statement", self._moves[deep])
        if move == "skip":
            return
        if not getattr(self, "move_" + move)():
            self.make_leaf()

    def run(self) -> Program:
        self.dtype = self.ch.weighted("program dtype", [("float64", 3), ("float32", 1)])
        for _ in range(self.ch.integer("initial leaves", 1, 3)):
            self.make_leaf()
        # A step may emit several statements, or none ("skip", reached only by shrinking).
        # RandomChooser fills the program to its size; under Hypothesis the number of steps
        # is a draw, so that shrinking can cut the tail and skip steps in the middle.
        if getattr(self.ch, "fills", False):
            steps = 0
            while self.emitted < self.size and steps < 3 * self.size:
                self.step()
                steps += 1
        else:
            for _ in range(self.ch.integer("steps", 1, self.size)):
                self.step()
        prog = Program(self.out, meta={"generator": GENERATOR_VERSION, "size": self.size,
                                       "capabilities": sorted(self.caps)})
        # A statement exercises a clause only if the engine has all the clause requires:
        # otherwise reports would show it "exercising" clauses it cannot.
        requires = clause_requires()
        for _, st in prog.walk():
            st.clauses = [c for c in st.clauses
                          if all(r in self.caps for r in requires.get(c, ()))]
        # The model's predictions, for people reading a program and for the generator's tests;
        # the comparison never uses them (the oracle decides).
        prog.meta["expect"] = {path: self.expect[id(st)] for path, st in prog.walk()
                               if id(st) in self.expect}
        return prog


NO_GRAD_ERRORS = ("NO_GRAD_FN", "RETAIN_GRAD_NO_REQUIRES_GRAD", "REQUIRES_GRAD_DTYPE",
                  "HOOK_NO_REQUIRES_GRAD", "GRAD_ASSIGN_SHAPE", "GRAD_ASSIGN_DTYPE")
ERROR_CLAUSE = {
    "VERSION_MISMATCH": "VER-7", "GRAPH_FREED": "FREE-1", "IMPLICIT_GRAD_NONSCALAR": "API-1",
    "NO_GRAD_FN": "API-4", "HOOK_CHANGED_SIZE": "HOOK-5", "GRAD_OUTPUT_SHAPE": "API-3",
    "LEAF_MOVED_INTO_GRAPH": "INPLACE-15", "POST_HOOK_RETURNED_VALUE": "HOOK-13",
}


@functools.cache
def clause_requires() -> dict[str, tuple[str, ...]]:
    """Clause ID -> the capabilities its `requires` names (spec metadata)."""
    from .specdoc import load_spec
    return {cid: tuple(c.requires) for cid, c in load_spec().clauses.items()}


def _numel(shape: Iterable[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def generate(chooser: Chooser, capabilities: Iterable[str] | None = None,
             n_statements: int = 20) -> Program:
    """A program of about n_statements statements, using only the given capabilities."""
    caps = set(capabilities if capabilities is not None else ALL_CAPABILITIES) | {"core"}
    return Gen(chooser, caps, n_statements).run()


def program_for_seed(seed: int, capabilities: Iterable[str] | None = None,
                     size: int = 20) -> Program:
    """The program `gradspec run` draws for a seed: deterministic across runs and machines."""
    prog = generate(RandomChooser(seed), capabilities, size)
    prog.seed = seed
    return prog


def programs(capabilities: Iterable[str] | None = None, size: int = 20):
    """A Hypothesis strategy for programs (the fast, unlabelled way to draw them)."""
    from hypothesis import strategies as st

    from .strategies import HypothesisChooser

    @st.composite
    def draw_program(draw):
        return generate(HypothesisChooser(draw), capabilities, size)
    return draw_program()
