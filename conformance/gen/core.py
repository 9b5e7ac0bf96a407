"""The drawing loop, and the helpers that statement kinds and error moves draw with.

A `Gen` is one program being drawn: the model of its tensors (conformance/model/) and the
statements so far. Each step draws an entry of DRAW_ORDER (order.py) by weight, among those the
engine's capabilities allow, and hands the Gen to the kind's `draw` (conformance/kinds/) or,
for "error", to the deliberate error moves (errors.py). A draw that finds nothing to act on
returns False, and the step draws a fresh leaf instead.

Programs are mostly valid by construction: only operands that fit are drawn. The model
predicts which statements raise (program.meta["expect"], for people and for the generator's
tests), so that nothing later refers to a name a failed statement would have bound. Each
statement is tagged with the clause IDs it exercises, and only with clauses whose `requires`
(spec metadata) the capabilities cover.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from .. import model
from ..kinds import KINDS
from ..lang.ops import HOLDS, SAVES_INPUT, SAVES_OUTPUT
from ..lang.program import Program, Stmt
from ..model import Node, Storage, T, accumulator
from ..model.tables import KINKS, LEAF_DTYPES, PROGRAM_DTYPES, SHAPES, VALUES, VALUES_3
from ..spec.capabilities import recorded
from . import errors, indices
from .higher import observe_recorded_grads
from .lacks import honoured, redrawn, view_shared
from .modules import module_zero_grad
from .order import draw_functions, draw_tables
from .passes import BackwardPasses
from .strategies import Chooser, HypothesisChooser, NoOptions, RandomChooser, draws
from .vocabulary import (  # noqa: F401  (their home; imported from here too)
    ALL_CAPABILITIES,
    CAPABILITY_SINCE,
    GENERATOR_VERSION,
    NOT_GENERATED,
    STEPS_PER_STATEMENT,
    VOCABULARIES,
)

_KINKS = frozenset(KINKS)
_NUMEL = {shape: model.numel(shape) for shape in SHAPES}     # (most leaves draw one of them)
_LEAF, _RG_LEAF, _RG_LEAF_NO_GRAD = ("LEAF-1", "LEAF-2"), ("LEAF-1",), ("LEAF-1", "MODE-7")


class Gen(BackwardPasses):
    """One program being drawn: the model of its tensors and the statements so far.

    `choice`, `boolean`, `weighted` and `integer` draw from the chooser (strategies.py); the
    other methods are what statement kinds and error moves share."""

    def __init__(self, ch: Chooser, caps: Iterable[str], size: int,
                 vocabulary: int = GENERATOR_VERSION):
        if vocabulary not in VOCABULARIES:
            raise ValueError(f"unknown generator vocabulary {vocabulary!r} (known: "
                             f"{', '.join(map(str, VOCABULARIES))})")
        self.ch = ch
        self.vocabulary = vocabulary
        (self.caps, self.lacked, self.copy_views, self.call_fns, self.inplace_fns,
         self.smooth_inplace_fns, self._blocked, self._statements) = draw_tables(frozenset(caps),
                                                                                  vocabulary)
        self.size = size
        self.tensors: dict[str, T] = {}
        self.handles: dict[str, tuple[Node, bool]] = {}    # name -> (node, is post hook)
        self.counter = 0
        self.grad_enabled = True
        self.inference = False          # inside an inference-mode block (gen/inference.py)
        self.made_inference = False     # ... and a tensor was made there: picks skip those
        self.depth = 0
        self.saved_blocks = 0           # saved_hooks blocks the draw is inside (kinds/saved.py)
        self.out: list[Stmt] = []
        self.dtype = "float64"
        self.expect: dict[int, str] = {}
        self.emitted = 0
        self.choice, self.boolean, self.weighted, self.integer = draws(ch)
        self._draws = draw_functions()
        self.aimed: T | None = None         # the tensor `pick` returns (on)

    def draw_on(self, kind: str, t: T, **kw: Any) -> T | None:
        """The statement kind's draw aimed at t (see `on`); the tensor it binds, if any (none
        when the capabilities lack the kind's)."""
        if not self.caps.issuperset(KINDS[kind].caps):
            return None
        before = len(self.out)
        with self.on(t):
            if not KINDS[kind].draw(self, **kw):
                return None
        out = self.out[-1].out if len(self.out) > before else None
        return self.tensors.get(out) if out else None

    @contextlib.contextmanager
    def on(self, t: T):
        """Within it, `pick` returns t wherever t fits: a statement kind's draw aimed at t."""
        before, self.aimed = self.aimed, t
        try:
            yield
        finally:
            self.aimed = before

    # ---- names, statements, tensors ----------------------------------------------------------
    def has(self, *caps: str) -> bool:
        return self.caps.issuperset(caps)

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def tags(self, clauses: Iterable[str]) -> list[str]:
        """The clauses, first occurrence each, less those the capabilities cannot exercise."""
        blocked = self._blocked
        if blocked:
            return [c for c in dict.fromkeys(clauses) if c not in blocked]
        return list(dict.fromkeys(clauses))

    def blocks_clauses(self) -> bool:
        """Whether the capabilities leave some clause untagged (tags then filters)."""
        return bool(self._blocked)

    def emit(self, stmt: Stmt, clauses: Iterable[str] = (), expect: str | None = None) -> Stmt:
        """Append stmt; `expect` is the error kind the model predicts it raises."""
        stmt.clauses = self.tags(clauses)
        self.out.append(stmt)
        self.emitted += 1
        if expect:
            self.expect[id(stmt)] = expect
        return stmt

    def live(self, pred: Callable[[T], bool] | None = None) -> list[T]:
        """The tensors a statement may still name, those that satisfy pred."""
        if pred is None:
            return [t for t in self.tensors.values() if not t.hidden]
        found = []      # (a loop: a comprehension makes a function object on every call)
        for t in self.tensors.values():
            if not t.hidden and pred(t):
                found.append(t)
        return found

    def pick(self, label: str, pred: Callable[[T], bool] | None = None) -> T | None:
        """One of the live tensors that satisfy pred, or None when none does; within
        `on(t)`, t itself when it does (nothing is drawn then)."""
        t = self.aimed
        if t is not None and not t.hidden and (pred is None or pred(t)):
            return t
        cands = self.live(pred)
        if self.made_inference:     # used only where a draw aims at them (gen/inference.py)
            cands = [c for c in cands if not c.inference]
        return self.choice(label, cands) if cands else None

    def ok_kind(self, kind: str | None) -> bool:
        """A natural error of this kind may be left in the program (errors.NATURAL_ERROR_CAPS)."""
        cap = errors.NATURAL_ERROR_CAPS.get(kind or "")
        return kind is None or cap is None or cap in self.caps

    def draw_values(self, n: int, dtype: str) -> list[float | int]:
        """n leaf values: small ints for int64, else from the VALUES grid."""
        if dtype == "int64":
            return [self.integer("int value", -3, 3) for _ in range(n)]
        choice, grid = self.choice, VALUES if self.vocabulary < 3 else VALUES_3
        return [choice("value", grid) for _ in range(n)]

    def make_leaf(self, shape: tuple[int, ...] | None = None, dtype: str | None = None,
                  rg: bool | None = None, hidden: bool = False,
                  values: list[float] | None = None) -> T:
        """Emit a fresh leaf; what is not given is drawn. A hidden leaf is never used again
        (a gradient a result may alias)."""
        if shape is None:
            shape = self.choice("leaf shape", SHAPES)
        if dtype is None:
            dtype = self.weighted("leaf dtype", LEAF_DTYPES[self.dtype])
        if rg is None:
            rg = self.boolean("leaf requires_grad", 65)
        self.counter += 1
        name = f"t{self.counter}"
        if values is None:
            n = _NUMEL.get(shape) if type(shape) is tuple else None
            values = self.draw_values(model.numel(shape) if n is None else n, dtype)
        self.emit(Stmt("leaf", name, None, [], {"values": values, "shape": list(shape),
                                                "dtype": dtype, "requires_grad": rg}),
                  (_RG_LEAF if self.grad_enabled else _RG_LEAF_NO_GRAD) if rg else _LEAF)
        # (fields set after the call: a keyword argument of T's ~40 costs more than a store)
        t = T(name, shape, dtype, rg, True, Storage(), accumulator() if rg else None)
        t.hidden, t.exact, t.at_kink = hidden, True, not _KINKS.isdisjoint(values)
        if self.inference:      # an inference tensor (INFER-2)
            t.inference = t.no_version = self.made_inference = True
        self.tensors[name] = t
        return t

    def const(self, shape: tuple[int, ...], dtype: str) -> str:
        """A fresh gradient or grad_outputs tensor; hidden, for results may alias it."""
        return self.make_leaf(shape=shape, dtype=dtype, rg=False, hidden=True).name

    def rg_tensor(self, label: str, pred: Callable[[T], bool] | None = None) -> T:
        """An existing tensor that requires grad, or a fresh leaf that does."""
        t = self.pick(label, lambda t: t.rg and t.is_float and (pred is None or pred(t)))
        return t if t is not None else self.make_leaf(rg=True)

    def result(self, shape, dtype, inputs: list[T], saved=(), origin="op") -> T:
        """The model of an op's result: it requires grad if an input does, under grad mode."""
        self.counter += 1
        name = f"t{self.counter}"
        any_rg = False
        for i in inputs:
            if i.rg:
                any_rg = True
                break
        rg = self.grad_enabled and any_rg
        t = T(name, tuple(shape), dtype, rg, not rg, Storage())
        t.origin = origin if rg or not any_rg else "no_grad"
        if rg:
            for i in inputs:
                if i.graph_open == 2:
                    t.graph_open = 1    # its edges lead into a gradient's graph (UNSPEC-9)
                    break
            parents = []
            for i in inputs:
                if i.rg and i.node is not None:
                    parents.append(i.node)
            t.node = Node(parents, [(s, s.version) for s in saved] if saved else [])
        if self.inference:      # an inference tensor (INFER-2); add_view corrects a view's
            t.inference = t.no_version = self.made_inference = True
        self.tensors[name] = t
        return t

    def add_view(self, a: T, shape: tuple[int, ...], noncontig: bool, expanded: bool) -> T:
        """The model of a view of a (sharing its storage) with the given shape."""
        base = a.base or a
        t = self.result(shape, a.dtype, [a], origin="view")
        t.storage = a.storage
        t.shares = a.memory()
        t.exact, t.at_kink = a.exact_now(), a.at_kink
        t.made_at, t.doubt_at = a.storage.version, a.storage.doubt
        t.base, t.reshaped = base, a.reshaped
        base.views.append(t)
        t.nograd_view = a.nograd_view or not self.grad_enabled
        t.multi_view = a.multi_view
        # a view of an ordinary tensor made in inference mode is ordinary, one of an inference
        # tensor is one wherever it is made (INFER-2); neither is picked by undirected draws
        t.no_version = a.no_version
        t.inference = self.inference or a.inference
        t.of_leaf_rg = a.of_leaf_rg or (base.leaf and base.rg)
        t.expanded = a.expanded or expanded
        t.contiguous = a.contiguous and not noncontig and not t.expanded
        return t

    def draw_index(self, a: T, wide: bool = False) -> list[Any]:
        """An index into a (INDEX encoding): gen/indices.py."""
        return indices.draw_index(self, a, wide)

    def inplace_ok(self, t: T) -> bool:
        return model.inplace_ok(t, self.grad_enabled) and not (
            self.copy_views and view_shared(self.tensors.values(), t))

    def view_shared(self, t: T) -> bool:
        """Views copy (view_ops alone) and a view op reached t's memory (gen/lacks.py)."""
        return self.copy_views and view_shared(self.tensors.values(), t)

    def apart(self, t: T) -> Callable[[T], bool]:
        """Whether a tensor is an operand an in-place write of t may read: not one with t's
        version counter, nor (vocabulary 3) one sharing its memory through .data, whose
        overlap makes the result depend on the order torch writes the elements in."""
        if self.vocabulary < 3:
            return lambda u: u.storage is not t.storage
        return lambda u: u.storage is not t.storage and u.memory() is not t.memory()

    def apply_inplace(self, t: T, args: list[T], saved_out: bool,
                      setitem: bool = False, holds: bool = False,
                      saved_args: list[T] | tuple[()] = ()) -> list[str]:
        """Update the model for an in-place op on t; return the clauses it exercises. From
        vocabulary 19 the model knows that a write through a view frees its base's CopySlices
        in the next pass whatever it saved (older ones draw what they drew)."""
        return model.apply_inplace(self.tensors.values(), self.grad_enabled, t, args,
                                   saved_out, setitem, holds, saved_args,
                                   self.vocabulary >= 19)

    def draw_setter(self) -> bool:
        """Whether a requires_grad statement uses the attribute setter `t.requires_grad = v`
        (vocabulary 16, capability requires_grad_setter) rather than requires_grad_(v)."""
        return "requires_grad_setter" in self.caps and self.boolean("requires_grad setter", 35)

    def call1(self, a: T, fn: str, args: list[Any], kw: dict[str, Any],
              cl: list[str]) -> T:
        """Emit out = fn(a, *args) for a unary op or an op with a number; model what it saves."""
        saved = [a.storage] if fn in SAVES_INPUT else []
        y = self.result(a.shape, a.dtype, [a], saved)
        if y.node is not None:
            y.node.holds = fn in HOLDS
            if fn in SAVES_OUTPUT:
                y.node.saved.append((y.storage, 0))
        self.emit(Stmt("call", y.name, None, [a.name, *args], {"fn": fn, "kw": kw}),
                  ["GRAPH-1", *cl])
        return y

    def sum_of(self, t: T) -> T:
        """Emit s = t.sum()."""
        s = self.result((), t.dtype, [t])
        self.emit(Stmt("call", s.name, None, [t.name], {"fn": "sum", "kw": {}}),
                  ["GRAPH-1", "VER-13"])
        return s

    # ---- the loop ----------------------------------------------------------------------------
    def step(self, in_block: bool = False) -> None:
        """Draw one statement kind and let it draw (a leaf when it finds nothing to act on)."""
        move = self.weighted("statement", self._statements[in_block and self.depth >= 2])
        if move != "skip" and not self._draws[move](self):
            self.make_leaf()

    def run(self) -> Program:
        """The program; the Gen is spent then (its views are let go: see the end)."""
        self.dtype = self.weighted("program dtype", PROGRAM_DTYPES)
        for _ in range(self.integer("initial leaves", 1, 3)):
            self.make_leaf()
        # A step may emit several statements, or none ("skip", reached only by shrinking).
        # RandomChooser fills the program to its size; under Hypothesis the number of steps
        # is a draw, so that shrinking can cut the tail and skip steps in the middle. From
        # vocabulary 3 Hypothesis takes a fixed number of steps instead, as many as fill a
        # program of the size on average (a bounded integer draw leans small: its programs
        # were half as long), and shrinking turns steps into skips. (Stopping at the size
        # would make a skip a step longer, past what Hypothesis drew: shrinking stalls.)
        if getattr(self.ch, "fills", False):
            steps = 0
            while self.emitted < self.size and steps < 3 * self.size:
                self.step()
                steps += 1
        elif self.vocabulary >= 3:
            for _ in range(max(1, round(self.size * STEPS_PER_STATEMENT))):
                self.step()
        else:
            for _ in range(self.integer("steps", 1, self.size)):
                self.step()
        if self.vocabulary >= 3:
            module_zero_grad(self)
            observe_recorded_grads(self)
            KINDS["base_is"].emit_end(self)
            KINDS["sweep"].emit_end(self)
        # Clauses were tagged as statements were emitted (tags: only those the capabilities
        # cover). The model's predictions, for people reading a program and for the
        # generator's tests; the comparison never uses them (the oracle decides).
        program = Program(self.out, meta={"generator": self.vocabulary, "size": self.size,
                                          "capabilities": list(recorded(self.caps)),
                                          "expect": self._expected(self.out, "")})
        for t in self.tensors.values():     # a base and its views hold each other: a cycle
            # the collector would have to find (it traverses every young object each time)
            t.views = []
        return program

    def _expected(self, stmts: list[Stmt], prefix: str) -> dict[str, str]:
        """path -> predicted error kind, depth first (the order of Program.walk)."""
        found: dict[str, str] = {}
        if not self.expect:
            return found
        for i, st in enumerate(stmts):
            if id(st) in self.expect:
                found[f"{prefix}{i}"] = self.expect[id(st)]
            if st.body:
                found.update(self._expected(st.body, f"{prefix}{i}."))
        return found


def generate(chooser: Chooser, capabilities: Iterable[str] | None = None,
             n_statements: int = 20, vocabulary: int = GENERATOR_VERSION) -> Program:
    """A program of about n_statements statements, using only the given capabilities and
    the ops of the given generator vocabulary version."""
    caps = set(capabilities if capabilities is not None else ALL_CAPABILITIES) | {"core"}
    return Gen(chooser, caps, n_statements, vocabulary).run()


def program_for_seed(seed: int, capabilities: Iterable[str] | None = None,
                     size: int = 20, vocabulary: int = GENERATOR_VERSION) -> Program:
    """The program `gradspec run` draws for a seed: deterministic across runs and machines."""
    prog = redrawn(lambda s: generate(RandomChooser(s), capabilities, size, vocabulary),
                   seed, capabilities or ())
    prog.seed = seed
    return prog


def programs(capabilities: Iterable[str] | None = None, size: int = 20,
             vocabulary: int = GENERATOR_VERSION):
    """A Hypothesis strategy for programs (the fast, unlabelled way to draw them)."""
    from hypothesis import reject
    from hypothesis import strategies as st

    @st.composite
    def draw_program(draw):
        try:
            return generate(HypothesisChooser(draw), capabilities, size, vocabulary)
        except NoOptions:   # every op a draw could name is lacked (gen/lacks.py): another
            reject()
    return honoured(draw_program(), capabilities or ())     # gen/lacks.py
