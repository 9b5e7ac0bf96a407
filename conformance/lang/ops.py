"""The op table: every op of the program language is one row.

A row (`Op`) holds everything gradspec knows about an op, side by side: its name and family,
how many operands it takes, its settings (the keys of a statement's `params.kw`) and the values
the generator draws for them, how torch spells it (the argument form of its call, its method,
its `torch.` function and its Python operator), its in-place variant, what it saves for
backward and whether its node holds anything, what spec/unspecified.md leaves open about its
result, its draw weight, and the generator vocabulary version it arrived in (`since`).

The machinery reads the rows and never branches on an op's name:

    apply(row, args, kw)          runs the op on real tensors (the torch-shaped adapters)
    source(row, sources, kw)      the same call as Python source (repro scripts, torch.compile)
    index_value / index_source    the INDEX encoding as a Python index and as source

`args` / `sources` hold the target first (a view's or in-place op's tensor, a call's first
operand), then the other operands. The derived tables at the bottom (FUNCTIONS, VIEWS,
INPLACE, SAVES_INPUT, EXPONENTS, ...) are the generator's views of the rows; their order is
the order the generator draws in, so it is part of what the golden digests pin.

Adding an op is one row here (and its draw weight in the draw order below); refimpl, the
engine under test, implements its forward and backward itself.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..spec.capabilities import lacked_ops
from .forms import FORMS, Args  # noqa: F401 - Args: part of this module's API
from .index import ELLIPSIS, OpError, index_source, index_value  # noqa: F401

FAMILIES = ("unary", "binary", "reduce", "linalg", "view", "inplace",
            "compare", "cast", "select", "where")   # the last four: vocabulary 4 (DERIV-*)
# "other": each operand saves the other one (VER-11); "both": the input and the result
# (max(), min()); "condition": where's condition, its second operand (DERIV-8)
SAVES = ("input", "output", "other", "both", "condition")

# Python operators by symbol: binary ones for `a + b`, augmented ones for `t += b`.
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "@": operator.matmul, "**": operator.pow,
    ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le, "==": operator.eq,
    "!=": operator.ne,
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
}


@dataclass(frozen=True)
class Op:
    """One op: what it is, how torch spells it, what it saves for backward."""

    name: str                           # the `fn` of call / view / inplace statements
    family: str                         # one of FAMILIES
    arity: int                          # operands: of the function (calls), else besides
    #                                     the target (views, in-place ops)
    form: str = "method"                # how its call is spelt: "operator" or one of FORMS
    kw: tuple[str, ...] = ()            # its settings: the keys of a statement's params.kw
    draws: dict[str, tuple[Any, ...]] = field(default_factory=dict, hash=False)
    #                                     setting -> the values the generator draws for it
    method: str = ""                    # the tensor method (default: the name)
    function: str | None = None         # torch.<function>, where torch has one
    operator: str | None = None         # its Python operator ("+", "**", "+=", ...)
    inplace: str | None = None          # its in-place variant (a row of family "inplace")
    of: str | None = None               # an in-place row: the op it is the variant of
    saves: str | None = None            # one of SAVES, or None: no tensor the program reaches
    holds: bool = False                 # its node keeps something for backward (FREE-3)
    version_open_1d: bool = False       # its result's _version is unspecified when an
    #                                     operand is 1-D (VER-1, UNSPEC-3): the executor
    #                                     records operand shapes, the comparator reads them
    output: str | None = None           # the field of a named-tuple result the statement
    #                                     binds ("values" of max(dim)), else the result itself
    weight: int = 0                     # how often the generator draws it (see DRAW_ORDER)
    since: int = 1                      # the generator vocabulary version it arrived in
    needs: str | None = None            # the engine capability it needs beyond core
    exact: bool = False                 # on operands both engines hold bit for bit, its
    #                                     result is too (IEEE-rounded arithmetic, selection)
    jumps: bool = False                 # its result jumps at some inputs (an integer part,
    #                                     a sign, a truth value, the first of tied maxima):
    #                                     drawn on exact operands only, so that a last-bit
    #                                     difference of two engines never moves it
    dtype: str | None = None            # its result's dtype whatever its operands' (casts,
    #                                     comparisons, argmax)
    clauses: tuple[str, ...] = ()       # the clauses a statement running it exercises
    node_clause: str | None = None      # ... and the one naming its node, when it records one
    kink_clause: str | None = None      # ... and the one of its kinks, on an operand at one

    extra: int = field(init=False)      # operands after the target (or a call's first one)

    def __post_init__(self) -> None:
        if not self.method:
            object.__setattr__(self, "method", self.name)
        object.__setattr__(self, "extra", self.arity - 1 if self.kind == "call" else self.arity)

    @property
    def kind(self) -> str:
        """The statement kind that runs it: "call", "view" or "inplace"."""
        return self.family if self.family in ("view", "inplace") else "call"

    @property
    def augmented(self) -> bool:
        """An augmented assignment (`t += b`): a statement, not an expression."""
        return self.family == "inplace" and self.form == "operator"


# ---- the rows -------------------------------------------------------------------------------
_EXPONENTS = (2, 3, -1, 0.5)
_CLAMP_BOUNDS = ((-0.6, 0.8), (None, 0.8), (-0.6, None))   # (min, max)
_POW = {"exponent": _EXPONENTS}
_CLAMP = {"bounds": _CLAMP_BOUNDS}
_KINK = {"kink_clause": "DERIV-4"}         # relu, abs, sqrt, pow and clamp have kinks


def _unary(name: str, saves: str | None = None, weight: int = 1, inplace: bool = True,
           **more: Any) -> Op:
    return Op(name, "unary", 1, function=name, saves=saves, holds=saves is not None,
              inplace=name + "_" if inplace else None, weight=weight, **more)


def _inplace(name: str, of: str | None, arity: int = 0, saves: str | None = None,
             holds: bool = False, weight: int = 1, **more: Any) -> Op:
    return Op(name, "inplace", arity, of=of, saves=saves, holds=holds, weight=weight, **more)


def _view(name: str, form: str, kw: tuple[str, ...], function: bool = True, **more: Any) -> Op:
    return Op(name, "view", 0, form=form, kw=kw, function=name if function else None, **more)


# Vocabulary 7 (spec/view.md): narrow and select, one view node each (VIEW-5), where the
# engines have them (capability narrow_select)
_V7_VIEW = {"since": 7, "needs": "narrow_select", "clauses": ("VIEW-5",)}


# Vocabulary 4 (spec/deriv.md): comparisons, long(), argmax and argmin never require grad
# (DERIV-1); floor, sign and round record a zero gradient (DERIV-2).
_COMPARISONS = (("gt", ">"), ("lt", "<"), ("ge", ">="), ("le", "<="), ("eq", "=="), ("ne", "!="))
_V4 = {"weight": 1, "since": 4, "needs": "deriv_ops", "exact": True, "node_clause": "DERIV-7"}
_V4_JUMPS = {**_V4, "jumps": True}
_ZERO = {**_V4_JUMPS, "clauses": ("DERIV-2",)}            # floor, sign, round
_NONDIFF = {**_V4_JUMPS, "clauses": ("DERIV-1",)}         # comparisons, long
_SELECT = {**_V4_JUMPS, "clauses": ("DERIV-5", "DERIV-8")}


def _selection(name: str, dim: bool, **more: Any) -> Op:
    """max / min: over everything (saves input and result) or along one dim (keeps indices)."""
    if dim:
        return Op(name + "_dim", "select", 1, form="dim_keepdim", kw=("dim", "keepdim"),
                  method=name, function=name, output="values", holds=True, **_SELECT)
    return Op(name, "select", 1, function=name, saves="both", holds=True, **_SELECT)


OPS: tuple[Op, ...] = (
    # elementwise binary (operands: names or numbers; numbers only on one side)
    Op("add", "binary", 2, form="operator", operator="+", function="add", inplace="add_",
       weight=5, exact=True),
    Op("sub", "binary", 2, form="operator", operator="-", function="sub", inplace="sub_",
       weight=3, exact=True),
    Op("mul", "binary", 2, form="operator", operator="*", function="mul", inplace="mul_",
       saves="other", holds=True, weight=5, exact=True),
    Op("div", "binary", 2, form="operator", operator="/", function="div", inplace="div_",
       saves="other", holds=True, weight=2),
    # unary
    _unary("neg", exact=True), _unary("exp", "output", 2), _unary("log", "input"),
    _unary("sin", "input", 2), _unary("cos", "input"), _unary("tanh", "output", 2),
    _unary("sigmoid", "output", 2), _unary("relu", "output", 2, exact=True, **_KINK),
    _unary("abs", "input", exact=True, **_KINK), _unary("clone", inplace=False, exact=True),
    _unary("sqrt", "output", 1, since=2, **_KINK),
    # unary with settings
    _unary("pow", "input", 3, form="exponent", kw=("exponent",), draws=_POW, operator="**",
           **_KINK),
    _unary("clamp", "input", 1, form="bounds", kw=("min", "max"), draws=_CLAMP, exact=True,
           **_KINK),
    Op("sum", "reduce", 1, form="reduce", kw=("dim", "keepdim"), function="sum", weight=5),
    Op("mean", "reduce", 1, form="reduce", kw=("dim", "keepdim"), function="mean", weight=2),
    # linear algebra
    Op("matmul", "linalg", 2, form="operator", operator="@", function="matmul",
       saves="other", holds=True, version_open_1d=True, weight=3),
    # views (their settings are computed from the target's shape, not drawn from a list)
    _view("reshape", "sizes", ("shape",)), _view("view", "sizes", ("shape",), False),
    _view("t", "method", ()), _view("transpose", "dims", ("dims",)),
    _view("unsqueeze", "dim", ("dim",)), _view("squeeze", "optional_dim", ("dim",)),
    _view("expand", "sizes", ("size",), False),
    _view("narrow", "narrow", ("dim", "start", "length"), **_V7_VIEW),
    _view("select", "dim_index", ("dim", "index"), **_V7_VIEW),
    # in-place ops (in-place rows save what the program still reaches: their output; the
    # overwritten input torch saves as a copy of its own)
    _inplace("add_", "add", 1, weight=4), _inplace("sub_", "sub", 1),
    _inplace("mul_", "mul", 1, holds=True, weight=4), _inplace("div_", "div", 1, holds=True),
    _inplace("pow_", "pow", form="exponent", kw=("exponent",), draws=_POW, holds=True,
             weight=2),
    _inplace("clamp_", "clamp", form="bounds", kw=("min", "max"), draws=_CLAMP, holds=True),
    _inplace("neg_", "neg"), _inplace("exp_", "exp", saves="output", holds=True, weight=2),
    _inplace("log_", "log", holds=True), _inplace("sin_", "sin", holds=True),
    _inplace("cos_", "cos", holds=True), _inplace("tanh_", "tanh", saves="output", holds=True),
    _inplace("sigmoid_", "sigmoid", saves="output", holds=True),
    _inplace("relu_", "relu", saves="output", holds=True), _inplace("abs_", "abs", holds=True),
    _inplace("sqrt_", "sqrt", saves="output", holds=True, since=2),
    _inplace("zero_", None), _inplace("fill_", None, 1), _inplace("copy_", None, 1, weight=2),
    # augmented assignment: target += args[0], etc.
    _inplace("iadd", "add", 1, form="operator", operator="+=", weight=2),
    _inplace("isub", "sub", 1, form="operator", operator="-="),
    _inplace("imul", "mul", 1, form="operator", operator="*=", holds=True, weight=2),
    _inplace("idiv", "div", 1, form="operator", operator="/=", holds=True),
    # vocabulary 4 (DERIV-1..DERIV-8): zero derivatives, comparisons, casts, selections, where
    _unary("floor", **_ZERO), _unary("sign", **_ZERO), _unary("round", **_ZERO),
    _inplace("floor_", "floor", **_ZERO), _inplace("sign_", "sign", **_ZERO),
    _inplace("round_", "round", **_ZERO),
    *(Op(n, "compare", 2, form="operator", operator=o, function=n, dtype="bool", **_NONDIFF)
      for n, o in _COMPARISONS),
    *(Op(n, "cast", 1, dtype=d, clauses=("DERIV-3",), **_V4)
      for n, d in (("double", "float64"), ("float", "float32"))),
    Op("long", "cast", 1, dtype="int64", **_NONDIFF),
    _selection("max", False), _selection("min", False),
    _selection("max", True), _selection("min", True),
    *(Op(n, "select", 1, form="reduce", kw=("dim", "keepdim"), function=n, dtype="int64",
         **{**_V4_JUMPS, "clauses": ("DERIV-1", "DERIV-5")}) for n in ("argmax", "argmin")),
    Op("where", "where", 3, function="where", saves="condition", holds=True,  # a, cond, b
       clauses=("DERIV-6", "DERIV-8"), **_V4),
)

ROWS: dict[str, Op] = {r.name: r for r in OPS}
BY_KIND: dict[str, dict[str, Op]] = {k: {r.name: r for r in OPS if r.kind == k}
                                     for k in ("call", "view", "inplace")}

# The generator's draw order per statement kind: explicit, never the table's order.
DRAW_ORDER: dict[str, tuple[str, ...]] = {
    "call": ("add", "mul", "sub", "div", "matmul", "sum", "mean", "exp", "sin", "cos", "log",
             "tanh", "sigmoid", "relu", "abs", "neg", "clone", "pow", "clamp", "sqrt",
             "floor", "sign", "round", "gt", "lt", "ge", "le", "eq", "ne", "double", "float",
             "long", "max", "min", "max_dim", "min_dim", "argmax", "argmin", "where"),
    "inplace": ("add_", "mul_", "sub_", "div_", "exp_", "sin_", "cos_", "tanh_", "sigmoid_",
                "relu_", "abs_", "neg_", "log_", "pow_", "clamp_", "zero_", "fill_", "copy_",
                "iadd", "imul", "isub", "idiv", "sqrt_", "floor_", "sign_", "round_"),
}


def exercised_by(clause: str) -> tuple[str, ...]:
    """The ops whose rows name the clause (their clauses, node or kink clause)."""
    return tuple(r.name for r in OPS if clause in (*r.clauses, r.node_clause, r.kink_clause))


def lookup(kind: str, name: Any) -> Op:
    """The row of op `name` for a statement of `kind` ("call", "view", "inplace")."""
    try:
        return BY_KIND[kind][name]
    except (KeyError, TypeError):
        raise OpError(f"unknown {kind} op {name!r}: not a row of the op table "
                      f"(conformance/lang/ops.py)") from None


def weight_in(vocabulary: int, weight: int, reweighted: tuple[tuple[int, int], ...]) -> int:
    """A draw weight in a generator vocabulary: `weight`, or the last (vocabulary, weight)
    of `reweighted` whose vocabulary it has reached."""
    for since, w in reweighted:
        if vocabulary >= since:
            weight = w
    return weight


# (vocabulary, factor): from vocabulary 4 the rows before it weigh twice their weight, so that
# its rows of weight 1 take about a fifth of the draws
EARLIER_ROWS = ((4, 2),)


def weights(kind: str, version: int = 1, capabilities: frozenset[str] | None = None
            ) -> list[tuple[str, int]]:
    """(name, weight) in draw order, for the ops of a generator vocabulary version that the
    capabilities (None: all) cover and do not say are lacked (`lacks:<op>`), the rows of
    earlier vocabularies scaled by EARLIER_ROWS."""
    scale = weight_in(version, 1, EARLIER_ROWS)
    lacked = lacked_ops(capabilities or ())     # ops the engine lacks: never drawn
    return [(n, ROWS[n].weight * (scale if ROWS[n].since < version else 1))
            for n in DRAW_ORDER[kind]
            if ROWS[n].since <= version and n not in lacked
            and (capabilities is None or ROWS[n].needs is None
                 or ROWS[n].needs in capabilities)]


# ---- running and writing an op ------------------------------------------------------------
def apply(row: Op, args: Sequence[Any], kw: dict[str, Any], method: str | None = None) -> Any:
    """Run the op on real tensors: args[0] is the target (or first operand). `method`
    overrides the method name, for an engine that spells the op otherwise."""
    if row.form == "operator":
        return OPERATORS[row.operator](args[0], args[1])    # type: ignore[index]
    pos, kws = FORMS[row.form](row, args[1:1 + row.extra], kw)
    out = getattr(args[0], method or row.method)(*pos, **kws)
    return getattr(out, row.output) if row.output else out


class _Source(str):
    """Source text standing in for an operand: written as itself, not as a literal."""


def literal(v: Any) -> str:
    """A setting or number as Python source: None, a bool, a finite int or float, or a tuple
    or list of those; anything else is an OpError (no other text reaches generated source)."""
    if isinstance(v, _Source):
        return str(v)
    if v is None or isinstance(v, (bool, int)):
        return repr(v)
    if isinstance(v, float) and math.isfinite(v):
        return repr(v)
    if isinstance(v, (tuple, list)):
        inner = ", ".join(literal(x) for x in v)
        if isinstance(v, list):
            return f"[{inner}]"
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    raise OpError(f"setting {v!r} cannot be written as a Python literal")


def source(row: Op, sources: Sequence[str], kw: dict[str, Any]) -> str:
    """The op as Python source over operand sources (sources[0]: the target or first
    operand): an expression, or for an augmented row the statement `t += b`."""
    if row.form == "operator":
        return f"{sources[0]} {row.operator} {sources[1]}"
    pos, kws = FORMS[row.form](row, [_Source(s) for s in sources[1:1 + row.extra]], kw)
    parts = [literal(p) for p in pos] + [f"{k}={literal(v)}" for k, v in kws.items()]
    field = f".{row.output}" if row.output else ""
    return f"{sources[0]}.{row.method}({', '.join(parts)}){field}"


# ---- the generator's views of the table (order: the generator's draw order) ----------------
CALLS = tuple(BY_KIND["call"].values())
VIEW_OPS = tuple(BY_KIND["view"].values())
INPLACE_OPS = tuple(BY_KIND["inplace"].values())

FUNCTIONS: dict[str, int] = {r.name: r.arity for r in CALLS}
VIEWS: dict[str, str | None] = {r.name: (r.kw[0] if r.kw else None) for r in VIEW_OPS}
INPLACE: dict[str, int] = {r.name: r.arity for r in INPLACE_OPS}
SAVES_INPUT = frozenset(r.name for r in CALLS if r.saves in ("input", "both"))
SAVES_OUTPUT = frozenset(r.name for r in CALLS if r.saves in ("output", "both"))
SAVES_OTHER = frozenset(r.name for r in CALLS if r.saves == "other")
HOLDS = frozenset(r.name for r in CALLS if r.holds)
INPLACE_HOLDS = frozenset(r.name for r in INPLACE_OPS if r.holds)
INPLACE_SAVES_OUTPUT = frozenset(r.name for r in INPLACE_OPS if r.saves == "output")
AUGMENTED: dict[str, str] = {r.name: r.of for r in INPLACE_OPS if r.augmented}  # type: ignore
EXPONENTS: list[Any] = list(ROWS["pow"].draws["exponent"])
CLAMPS: list[tuple[Any, Any]] = list(ROWS["clamp"].draws["bounds"])
CALL_WEIGHTS = weights("call")
INPLACE_WEIGHTS = weights("inplace")


def _check() -> None:
    """The table is consistent; checked at import, so a bad new row fails every test."""
    def need(ok: bool, row: Any, what: str) -> None:
        if not ok:
            raise ValueError(f"op table: {what}: {row}")
    need(len(ROWS) == len(OPS), "", "op names must be unique")
    for r in OPS:
        need(r.family in FAMILIES, r, "unknown family")
        need(r.saves is None or r.saves in SAVES, r, "unknown saves")
        need(r.form in FORMS or (r.form == "operator" and r.operator in OPERATORS), r,
             "unknown form or operator")
        need(r.inplace is None or ROWS[r.inplace].of == r.name, r, "in-place variant")
        need(r.of is None or r.of in ROWS, r, "the op it is a variant of")
    for kind, order in DRAW_ORDER.items():
        need(sorted(order) == sorted(n for n, r in BY_KIND[kind].items() if r.weight), kind,
             "the draw order must name every drawn op of its kind once")


_check()
