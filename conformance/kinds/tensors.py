"""Statements that make tensors: leaves, op calls, views and indexing (detach and .data:
aliases.py)."""
from __future__ import annotations

from typing import Any

from ..engines.torchlike import nest
from ..lang import ops
from ..lang.program import Stmt, index_of
from ..lang.trace import plain
from ..model import (
    T,
    broadcast,
    copy_kw,
    index_shape,
    joins,
    matmul_shape,
    part_contiguous,
    view_options,
)
from ..model.tables import NUMBERS
from . import deriv_ops, fields, source
from .copying import viewable
from .fields import check_index  # noqa: F401  (its home was here)
from .registry import Kind, kind

JOIN_OPS = ["mul", "add"]    # the binary ops a deliberate join of two graphs draws
# the argument forms (conformance/lang/ops.py, FORMS) that cannot go without an op's settings
STRICT_FORMS = ("exponent", "sizes", "dims", "dim", "narrow", "dim_index")
INT_FORMS = ("narrow", "dim_index")        # every setting an int: t.narrow(0, 1, 2)


def check_op(s: Any, path: str, kind: str) -> ops.Op:
    """params.fn is a row of the op table for statements of `kind`, and params.kw holds the
    settings its argument form needs; the row."""
    fn = fields.param(s, path, "fn", (str,))
    try:
        row = ops.lookup(kind, fn)
    except ops.OpError:
        fields.fail(path, "params.fn", f"unknown {kind} op {fn!r}")
    kw = fields.kw(s, path, row.kw if row.form in STRICT_FORMS else (), allowed=row.kw)
    for key, setting in kw.items() if row.form in INT_FORMS else ():
        if not isinstance(setting, int) or isinstance(setting, bool):
            fields.fail(path, f"params.kw.{key}", f"must be an int, got {setting!r}")
    return row


@kind
class Leaf(Kind):
    name, makes_leaf = "leaf", True
    param_keys = ("values", "shape", "dtype", "requires_grad")
    weight = 8
    doc = ("out = tensor(values, shape, dtype, requires_grad). params: values (flat list), "
           "shape (list), dtype ('float32'|'float64'|'int64'|'bool'), requires_grad (bool)")

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.values(s, path, fields.param(s, path, "dtype", (str,), choices=fields.DTYPES))
        fields.param(s, path, "requires_grad", (bool,), required=False)

    def run(self, x, s, ev, path):
        p = s.params
        x.env[s.out] = x.e.leaf(p["values"], p["shape"], p["dtype"],
                                bool(p.get("requires_grad", False)))

    def render(self, s, path):
        p = s.params
        rg = ", requires_grad=True" if p.get("requires_grad") else ""
        return [f"{s.out} = torch.tensor({nest(p['values'], p['shape'])!r}, "
                f"dtype=torch.{p['dtype']}{rg})"]

    def draw(self, g):
        g.make_leaf()
        return True


@kind
class Call(Kind):
    name = "call"
    records_node = True
    param_keys = ("fn", "kw")
    weight = 24
    doc = ("out = fn(*args, **kw). params: fn (FUNCTIONS), kw (dict: dim, keepdim, exponent, "
           "min, max)")

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.args(s, path, check_op(s, path, "call").arity)

    def run(self, x, s, ev, path):
        e, p = x.e, s.params
        args = [x.val(a) for a in s.args]
        if ops.ROWS[p["fn"]].version_open_1d:     # the comparator reads the shapes
            try:
                ev.shapes = [plain(list(e.shape(a))) for a in args]
            except Exception:  # noqa: BLE001 - the call itself reports what is wrong
                ev.shapes = None
        x.env[s.out] = e.call(p["fn"], args, p.get("kw", {}))

    def unversioned(self, s, shapes):
        fn = s.params.get("fn")
        row = ops.ROWS.get(fn) if isinstance(fn, str) else None
        return row is not None and row.version_open_1d and any(
            len(shape) == 1 for shape in (shapes or [[1]]))     # none recorded: the worst

    def render(self, s, path):
        p = s.params
        return [f"{s.out} = "
                f"{ops.source(ops.lookup('call', p['fn']), source.args(s.args), p.get('kw', {}))}"]

    def draw(self, g):
        fn = g.weighted("fn", g.call_fns)
        if ops.ROWS[fn].jumps:
            a = deriv_ops.exact_operand(g, "exact operand") or g.make_leaf()
            return self._emit(g, fn, a, ops.ROWS[fn].family)
        a = None
        if g.vocabulary >= 3 and g.boolean("operand requires grad", 60):
            a = g.pick("operand", lambda t: t.is_float and t.rg)
        a = a or g.pick("operand", lambda t: t.is_float) or g.make_leaf()
        return self._emit(g, fn, a, ops.ROWS[fn].family)

    def join(self, g, a: T) -> T | None:
        """Emit a binary op of a and another operand whose graph reaches a leaf a's does not
        (a live tensor, or a fresh leaf): the tensor it makes, None when nothing fits."""
        before = len(g.out)
        fns = [o for o in JOIN_OPS if o not in g.lacked]    # mul: never lacked
        if not self._emit(g, g.choice("join op", fns), a, "join"):
            return None
        return g.tensors[g.out[-1].out] if len(g.out) > before else None

    def emit(self, g, fn: str, a: T) -> bool:
        """Emit fn with a as its first operand (the other operands drawn)."""
        return self._emit(g, fn, a, ops.ROWS[fn].family)

    def twice(self, g, a: T, fn: str = "mul") -> T:
        """Emit fn(a, a): one tensor used twice by one op (GRAPH-9); the tensor it makes."""
        self._emit(g, fn, a, "same")
        return g.tensors[g.out[-1].out]

    def pair(self, g, fn: str, a: T, b: T) -> T:
        """Emit fn(a, b) of a binary op and the two operands given; the tensor it makes."""
        self._emit(g, fn, a, "pair", b)
        return g.tensors[g.out[-1].out]

    def _emit(self, g, fn, a, family, b=None) -> bool:
        if family == "pair":
            drawn = self._binary(fn, a, b, g.vocabulary)
        elif family in deriv_ops.FAMILIES:
            fn, drawn = deriv_ops.draw(g, fn, a, self.emit) or (fn, None)
        elif family in ("binary", "join", "same"):
            drawn = self._draw_binary(g, fn, a, join=family == "join", same=family == "same")
        elif family == "linalg":
            drawn = self._draw_matmul(g, a)
        elif family == "reduce":
            drawn = self._draw_reduce(g, a)
        else:
            drawn = self._draw_unary(g, fn, a)
        if drawn is None:
            return False
        args, inputs, saved, shape, dtype, kw, cl = drawn
        row = ops.ROWS[fn]
        cl += row.clauses
        if dtype in deriv_ops.NONDIFF_DTYPES:       # never requires grad (DERIV-1)
            t = g.result(shape, dtype, [])
            t.exact = all(g.tensors[n].exact_now() for n in args if isinstance(n, str))
            g.emit(Stmt("call", t.name, None, args, {"fn": fn, "kw": kw}), cl)
            return True
        rg_in = at_kink = had_grad = False   # (a loop, not any(): every call passes here)
        exact = row.exact
        for i in inputs:
            rg_in = rg_in or i.rg
            at_kink = at_kink or i.at_kink
            exact = exact and i.exact_now()
            had_grad = had_grad or (i.leaf and i.has_grad)
        if row.kink_clause and at_kink:
            cl.append(row.kink_clause)
        t = g.result(shape, dtype, inputs, saved if rg_in else [])
        t.exact = exact
        if t.node is not None:
            t.node.holds = fn in ops.HOLDS
            if fn in ops.SAVES_OUTPUT:
                t.node.saved.append((t.storage, 0))
            if row.node_clause:
                cl.append(row.node_clause)
        cl.insert(0, "GRAPH-1" if t.rg else ("GRAPH-2" if not rg_in else "MODE-1"))
        if t.rg and had_grad:
            cl += ["GRAPH-7", "FREE-6"]     # a new forward from leaves a backward reached
        if rg_in and not g.grad_enabled:
            cl.append("LEAF-3")
        g.emit(Stmt("call", t.name, None, args, {"fn": fn, "kw": kw}), cl)
        return True

    # The operands of a drawn call, per family: (args, inputs, saved storages, shape, dtype,
    # kw, clauses), or None when nothing fits.
    def _draw_binary(self, g, fn, a, join=False, same=False):
        if same:
            return self._binary(fn, a, a, g.vocabulary)
        if not join and g.boolean("number operand", 30 if g.vocabulary < 3 else 15):
            num = g.choice("number", NUMBERS)
            args = [num, a.name] if fn in ("sub", "div") and g.boolean(
                "reflected", 30) else [a.name, num]
            return args, [a], [], a.shape, a.dtype, {}, ["GRAPH-6"]
        b = self._joining(g, a, lambda shape, dtype: broadcast(a.shape, shape) is not None,
                          join) if g.vocabulary >= 3 or join else None
        if b is None and not join and g.vocabulary >= 3 and fn != "sub" and g.boolean(
                "same operand", 40):
            b = a       # not a - a: an exact 0 is a kink of relu, abs, sqrt and pow
        if join and b is None:
            return None
        b = b or g.pick("other operand",
                        lambda t: t.is_float and broadcast(a.shape, t.shape) is not None)
        assert b is not None       # a itself always fits
        return self._binary(fn, a, b, g.vocabulary)

    @staticmethod
    def _binary(fn, a, b, vocabulary=1):
        """The drawn operands of the binary op fn(a, b) (see the families' note above). From
        vocabulary 20 the result's dtype is torch's: a 0-d operand does not widen a float
        tensor of more dimensions (a 0-d float64 times a float32 vector is float32)."""
        shape = broadcast(a.shape, b.shape) or ()
        cl, saved = [], []
        if b is a:
            cl.append("GRAPH-9")
        if ops.ROWS[fn].saves == "other":
            cl.append("VER-11")
            if a.rg or (fn == "div" and b.rg):
                saved.append(b.storage)
            if b.rg:
                saved.append(a.storage)
        if (a.rg and a.shape != shape) or (b.rg and b.shape != shape):
            cl.append("LEAF-8")
        dtype = "float64" if "float64" in (a.dtype, b.dtype) else "float32"
        if vocabulary >= 20 and (a.ndim == 0) != (b.ndim == 0):
            dtype = (b if a.ndim == 0 else a).dtype
        return [a.name, b.name], [a, b], saved, shape, dtype, {}, cl

    @staticmethod
    def _joining(g, a, fits, forced=False):
        """Vocabulary 3: mostly (`forced`: always) a second operand whose graph reaches a leaf
        a's does not (so that passes join leaves through several branches), often a fresh leaf
        that requires grad when no live tensor does; None to draw it as before."""
        if not forced and not g.boolean("join another leaf", 85):
            return None
        b = g.pick("joining operand",
                   lambda t: t.is_float and fits(t.shape, t.dtype) and joins(a, t))
        if b is None and (forced or g.boolean("fresh joining leaf", 75)):
            shape = a.shape if fits(a.shape, a.dtype) else a.shape[-1:]
            if fits(shape, a.dtype):
                b = g.make_leaf(shape=shape, dtype=a.dtype, rg=True)
        return b

    def _draw_matmul(self, g, a):
        # matmul does not promote dtypes: mixed operands are a (non-spec) error
        b = self._joining(g, a, lambda shape, dtype: dtype == a.dtype and matmul_shape(
            a.shape, shape) is not None) if g.vocabulary >= 3 else None
        b = b or g.pick("matmul operand", lambda t: t.dtype == a.dtype and
                        matmul_shape(a.shape, t.shape) is not None)
        if b is None:
            if not (1 <= a.ndim <= 2):
                return None
            k = a.shape[-1]
            b = g.make_leaf(shape=g.choice("matmul shape", [(k,), (k, 2)]), dtype=a.dtype)
        saved = ([b.storage] if a.rg else []) + ([a.storage] if b.rg else [])
        dtype = "float64" if "float64" in (a.dtype, b.dtype) else "float32"
        return ([a.name, b.name], [a, b], saved, matmul_shape(a.shape, b.shape) or (), dtype,
                {}, ["VER-12"])

    def _draw_reduce(self, g, a):
        kw, shape = {}, ()
        if a.ndim and g.boolean("reduce dim", 40):
            dim = g.integer("dim", -a.ndim, a.ndim - 1)
            keep = g.boolean("keepdim", 30)
            kw = {"dim": dim, "keepdim": keep}
            d = dim % a.ndim
            shape = tuple(1 if i == d else s for i, s in enumerate(a.shape) if keep or i != d)
        return [a.name], [a], [], shape, a.dtype, kw, ["VER-13"]

    def _draw_unary(self, g, fn, a):
        kw = self._draw_settings(g, ops.ROWS[fn])
        if fn in ops.SAVES_INPUT:
            return [a.name], [a], [a.storage], a.shape, a.dtype, kw, ["VER-9"]
        cl = ["VER-10" if fn in ops.SAVES_OUTPUT else "VER-13"]
        return [a.name], [a], [], a.shape, a.dtype, kw, cl

    @staticmethod
    def _draw_settings(g, row):
        """The kw of an op whose settings the op table draws (an exponent, clamp bounds)."""
        if "exponent" in row.draws:
            return {"exponent": g.choice("exponent", row.draws["exponent"])}
        if "bounds" in row.draws:
            lo, hi = g.choice("clamp bounds", row.draws["bounds"])
            return {"min": lo, "max": hi}
        return {}


@kind
class View(Kind):
    name = "view"
    records_node = True
    param_keys = ("fn", "kw")
    weight = 7
    reweighted = ((9, 21),)     # vocabulary 9: views were 1% of the statements drawn
    doc = "out = target.fn(...). params: fn (VIEWS), kw (shape / dims / dim / size)"
    caps = ("view_ops",)        # implied by views (spec/capabilities.py)
    aliases = shares_version = differentiable_view = True     # reshape may copy (UNSPEC-3):
    #                                                           counted as sharing
    copies_when = ("reshape",)

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.name(s, path, "target")
        check_op(s, path, "view")

    def needs(self, s):
        row = ops.ROWS.get(s.params.get("fn")) if isinstance(s.params.get("fn"), str) else None
        return list(self.caps) + ([row.needs] if row is not None and row.needs else [])

    def run(self, x, s, ev, path):
        x.env[s.out] = x.e.view(x.env[s.target], s.params["fn"], s.params.get("kw", {}))

    def render(self, s, path):
        p = s.params
        return [f"{s.out} = "
                f"{ops.source(ops.lookup('view', p['fn']), [s.target], p.get('kw', {}))}"]

    def draw(self, g):
        a = g.pick("view of", lambda t: t.is_float and viewable(g, t))
        if a is None:
            return False
        parts = g.vocabulary >= 7 and "narrow_select" in g.caps
        options = [o for o in view_options(a, inferred=g.vocabulary >= 3, parts=parts,
                                           squeezes=g.vocabulary >= 4, units=g.vocabulary >= 5)
                   if o[0] not in g.lacked]     # ops the engine lacks (gen/lacks.py)
        if options:
            self.emit(g, a, *g.choice("view", options))
        return bool(options)

    def emit(self, g, a: T, fn: str, kw: dict[str, Any], shape: tuple[int, ...]) -> T:
        """Emit out = a.fn(**kw) of the view option (fn, kw, shape); the tensor it makes (a copy
        where reshape copies)."""
        kw = copy_kw(kw)
        copied = fn == "reshape" and not a.contiguous      # reshape copies then
        noncontig = fn in ("t", "transpose") and sum(1 for s in a.shape if s > 1) > 1
        if fn in ("narrow", "select"):
            noncontig = not part_contiguous(fn, kw, a.shape)
        if copied:
            t = g.result(shape, a.dtype, [a])
            t.exact = a.exact_now()
            # the model's contiguity is a guess (t[0, 1] of a matrix is contiguous in torch,
            # not here): torch may have made a view, whose writes would reach a's memory
            t.storage.may_reach = (a.storage, *a.storage.may_reach)
            if g.vocabulary >= 16:      # a write to them may reach a view torch made (hookable)
                t.reach_at = tuple(s.version for s in t.storage.may_reach)
        else:
            t = g.add_view(a, shape, noncontig, fn == "expand")
        t.reshaped = t.reshaped or fn == "reshape"
        g.emit(Stmt("view", out=t.name, target=a.name, params={"fn": fn, "kw": kw}),
               ["GRAPH-10", "VER-13", *ops.lookup("view", fn).clauses]
               + (["GRAPH-1"] if t.rg else []))
        return t


@kind
class Getitem(Kind):
    name = "getitem"
    records_node = True
    param_keys = ("index",)
    weight = 5
    reweighted = ((9, 10),)     # vocabulary 9, with the views
    doc = "out = target[index]. params: index (INDEX encoding)"
    caps = ("view_ops",)
    aliases = shares_version = differentiable_view = True

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.name(s, path, "target")
        check_index(s, path)

    def run(self, x, s, ev, path):
        x.env[s.out] = x.e.getitem(x.env[s.target], index_of(s.params["index"]))

    def render(self, s, path):
        return [f"{s.out} = {s.target}[{ops.index_source(s.params['index'])}]"]

    def draw(self, g):
        a = g.pick("index into", lambda t: t.is_float and t.ndim >= 1 and viewable(g, t))
        if a is None:
            return False
        self.emit(g, a, g.draw_index(a, wide=g.vocabulary >= 3))
        return True

    def emit(self, g, a: T, index: list[Any]) -> T:
        """Emit out = a[index]; the view it makes."""
        noncontig = any(isinstance(i, dict) and i["slice"][2] for i in index) or len(index) > 1
        t = g.add_view(a, index_shape(a.shape, index), noncontig, False)
        g.emit(Stmt("getitem", out=t.name, target=a.name, params={"index": index}),
               ["GRAPH-10"] + (["GRAPH-1"] if t.rg else []))
        return t
