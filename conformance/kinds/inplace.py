"""In-place statements: in-place ops and augmented assignment, and setitem."""
from __future__ import annotations

from typing import Any

from ..lang import ops
from ..lang.program import Stmt, index_of
from ..model import T, broadcast, index_shape
from ..model.shapes import broadcast_values, writes_itself
from ..model.tables import NUMBERS
from . import fields, source
from .registry import Kind, kind
from .tensors import Call, check_index, check_op


@kind
class Inplace(Kind):
    name = "inplace"
    records_node = True
    param_keys = ("fn", "kw")
    weight = 9
    doc = "target.fn(*args, **kw), or an augmented assignment. params: fn (INPLACE), kw"
    caps = ("inplace",)
    in_place = True
    writes = True

    def binds(self, s):
        return [s.target] if s.target is not None else []

    def check(self, s, path):
        fields.name(s, path, "target")
        fields.args(s, path, check_op(s, path, "inplace").arity)

    def run(self, x, s, ev, path):
        x.env[s.target] = x.e.inplace(x.env[s.target], s.params["fn"],
                                      [x.val(a) for a in s.args], s.params.get("kw", {}))

    def render(self, s, path):
        p = s.params
        return [ops.source(ops.lookup("inplace", p["fn"]), [s.target, *source.args(s.args)],
                           p.get("kw", {}))]

    def draw(self, g, target=None, fn=None):
        """Draw an in-place op; `target` and `fn` fix the tensor and the op."""
        t = target or g.pick("in-place target", g.inplace_ok)
        if t is None or g.view_shared(t) or fn in g.lacked:     # views copy; a lacked op
            return False
        if not (fn or g.inplace_fns):       # every in-place op lacked
            return False
        fn = fn or g.weighted("in-place fn", g.inplace_fns)
        if ops.ROWS[fn].jumps and not t.exact_now():    # see ops.Op.jumps
            if target is not None:      # the target is given: an op that does not jump
                if not g.smooth_inplace_fns:
                    return False
                fn = g.weighted("smooth in-place fn", g.smooth_inplace_fns)
            else:
                t = g.pick("exact in-place target", lambda u: u.exact_now() and g.inplace_ok(u))
                if t is None:
                    return False
        args, kw, tensors = self._draw_operands(g, t, fn)
        cl = g.apply_inplace(t, tensors, fn in ops.INPLACE_SAVES_OUTPUT,
                             holds=fn in ops.INPLACE_HOLDS,
                             saved_args=_saved_operands(g, t, fn, tensors)
                             ) + list(ops.ROWS[fn].clauses)
        if fn in ops.AUGMENTED:
            cl.append("INPLACE-13")
        g.emit(Stmt("inplace", target=t.name, args=args, params={"fn": fn, "kw": kw}), cl)
        return True

    def _draw_operands(self, g, t, fn):
        """(args, kw, tensor operands) of the in-place op fn on t."""
        row = ops.ROWS[fn]
        if row.draws:
            return [], Call._draw_settings(g, row), []
        if not row.arity:
            return [], {}, []
        if fn != "copy_" and (fn == "fill_" or g.boolean("number operand", 40)):
            return [g.choice("number", NUMBERS)], {}, []
        apart = g.apart(t)
        b = g.pick("in-place operand", lambda u: u.is_float and apart(u)
                   and broadcast(t.shape, u.shape) == t.shape)
        if b is None:
            b = g.make_leaf(shape=t.shape)
        return [b.name], {}, [b]


@kind
class Setitem(Kind):
    name = "setitem"
    records_node = True
    param_keys = ("index",)
    weight = 4
    doc = "target[index] = args[0] (a name or a number). params: index"
    caps = ("inplace",)
    writes = writes_via_view = True

    def check(self, s, path):
        fields.name(s, path, "target")
        check_index(s, path)
        fields.args(s, path, 1)

    def run(self, x, s, ev, path):
        x.e.setitem(x.env[s.target], index_of(s.params["index"]), x.val(s.args[0]))

    def render(self, s, path):
        return [f"{s.target}[{ops.index_source(s.params['index'])}] = {source.arg(s.args[0])}"]

    def draw(self, g):
        t = g.pick("setitem target", lambda u: u.ndim >= 1 and g.inplace_ok(u))
        if t is None:
            return False
        index = g.draw_index(t)
        shape = index_shape(t.shape, index)
        if g.boolean("setitem number", 50):
            self.emit(g, t, index, g.choice("number", NUMBERS))
            return True
        apart = g.apart(t)
        b = None
        if shape and g.vocabulary >= 11 and g.boolean("value broadcast to the target", 25):
            b = g.make_leaf(shape=g.choice("broadcast value shape", broadcast_values(shape)))
        if b is None:
            b = g.pick("setitem value", lambda u: u.is_float and apart(u)
                       and broadcast(shape, u.shape) == shape)
        if b is None:       # vocabulary 5: sometimes with leading 1s, which setitem drops
            lead = g.vocabulary >= 5 and g.boolean("value with leading 1s", 20)
            b = g.make_leaf(shape=(1,) * g.integer("leading 1s", 1, 2) + shape
                            if lead else shape)
        self.emit(g, t, index, b)
        return True

    def emit(self, g, t: T, index: list[Any], value: T | float) -> None:
        """Emit t[index] = value (a tensor, or a number) and update the model."""
        tensors = [value] if isinstance(value, T) else []
        cl = g.apply_inplace(t, tensors, False, setitem=True)
        setitem_node(g, t, index)
        g.emit(Stmt("setitem", target=t.name, args=[value.name if tensors else value],
                    params={"index": index}),
               ["INPLACE-9" if c == "INPLACE-7" else c for c in cl])


def setitem_node(g, t: T, index: list[Any]) -> None:
    """After the model's write of t[index]: from vocabulary 19, t's node is a CopySlices that
    the next pass frees (FREE-3) unless the setitem writes t itself (`writes_itself`)."""
    if g.vocabulary >= 19 and t.node is not None and t.node.inplace and t.base is None \
            and not writes_itself(t.shape, index):
        t.node.holds = True


def _saved_operands(g, t, fn, tensors):
    """The tensor operands the node of t.fn(b) saves, as `Call._binary` has them for fn(t, b):
    b when t requires grad (mul, div) or b does (div); t's own old value is saved as a copy.
    Modelled from vocabulary 18 on (the draws of older ones stay as they were): before it,
    `.data =` could be drawn on such an operand, whose pass torch then computes with the new
    contents (UNSPEC-12)."""
    of = ops.ROWS[fn].of
    if g.vocabulary < 18 or of is None or ops.ROWS[of].saves != "other":
        return ()
    return [b for b in tensors if t.rg or (of == "div" and b.rg)]
