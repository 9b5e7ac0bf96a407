"""Statements that give a tensor other contents and leave its autograd identity: `.data =`
(spec/data.md, DATA-1 to DATA-6).

`set_()` (DATA-7, DATA-8) has no statement yet: its node, which refuses backward, and the
shapes it may give a tensor recorded in a graph need a model of their own."""
from __future__ import annotations

from ..lang.program import Stmt
from ..model import reach
from ..model.tables import SHAPES
from . import fields, source
from .flags import check_optional_operand
from .registry import KINDS, Kind, kind


@kind
class SetData(Kind):
    name = "set_data"
    caps = ("core", "data_assign")
    weight = 3
    since = 17
    reweighted = ((19, 4),)     # vocabulary 19's custom Functions share a program's statements
    doc = ("target.data = args[0] (a name, or None, which raises DATA_NOT_TENSOR): target "
           "takes its memory, shape and dtype and keeps everything autograd keeps")

    def check(self, s, path):
        fields.name(s, path, "target")
        check_optional_operand(s, path)
        if not s.args:
            fields.fail(path, "args", "must hold the assigned tensor's name, or null")

    def run(self, x, s, ev, path):
        x.e.set_data(x.env[s.target], None if s.args[0] is None else x.val(s.args[0]))

    def render(self, s, path):
        return [f"{s.target}.data = {source.maybe(s.args[0])}"]

    def draw(self, g):
        """`t.data = v` where what the spec says covers everything that follows: t owns its
        memory alone (no view, detach() or .data of it is live: DATA-3 is not drawn), no
        graph saved it (what a pass computes with then is UNSPEC-12), and its shape or dtype
        change only on a tensor no graph, hook or .grad holds (UNSPEC-12 again); v is fresh
        and never used again, so that its memory is t's alone."""
        if g.inference:         # inside inference mode: INFER-2 makes v an inference tensor
            return False
        held = _held(g)
        t = g.pick("set .data of", lambda u: _owns_memory(g, u) and id(u.storage) not in
                   held[0])
        if t is None:
            return False
        free = t.leaf and not t.has_grad and t.grad_dtype == "" and (
            t.node is None or id(t.node) not in held[1] and not t.node.hooks
            and not t.node.post_hooks and not t.node.node_hooks)
        shape, dtype = t.shape, t.dtype
        if free and g.boolean("other shape or dtype", 60):
            shape = g.choice("data shape", SHAPES)
            dtype = g.weighted("data dtype", (("float32", 2), ("float64", 2)) + (
                () if t.rg else (("int64", 3),)))
        v = g.make_leaf(shape=shape, dtype=dtype, hidden=True, rg=dtype != "int64" and
                        g.boolean("data requires grad", 25))
        cl = ["DATA-1", "DATA-2"] + (["DATA-4"] if t.rg else []) + (
            ["DATA-5"] if t.leaf and t.is_float else []) + (
            ["DATA-6"] if t.rg or dtype == "int64" else [])
        g.emit(Stmt("set_data", target=t.name, args=[v.name]), cl)
        t.shape, t.dtype, t.is_float = shape, dtype, dtype in ("float32", "float64")
        t.contiguous, t.exact, t.at_kink, t.data_set = True, True, v.at_kink, True
        t.storage.overwritten = False       # its memory is v's, which nothing wrote
        if g.has("grad_dtype") and t.origin == "leaf" and t.is_float and g.boolean(
                "observe grad_dtype", 30):
            return KINDS["observe"].draw(g, t, "grad_dtype")
        return KINDS["observe"].draw(g, t) if g.boolean("observe it", 50) else True


def _owns_memory(g, t) -> bool:
    """t holds memory no other tensor the model knows of may share, and nothing the spec
    leaves open about it is pending."""
    if (t.dtype not in ("float32", "float64", "int64") or t.base is not None or t.views
            or t.shares is not None or t.multi_view or t.expanded
            or t.inference or t.no_version or t.version_open or t.stale or t.graph_open
            or t.old_node is not None or t.origin not in ("leaf", "op", "no_grad")
            or t.storage.may_reach or t.reach_at is not None):
        return False
    mem = t.storage
    return not any(u is not t and (u.storage is mem or u.shares is t or u.base is t
                                   or mem in u.storage.may_reach) for u in g.tensors.values())


def _held(g) -> tuple[set[int], set[int]]:
    """(storages some node saved, nodes some node has as a parent) over every graph the
    program's tensors hold, ids of both."""
    saved: set[int] = set()
    parents: set[int] = set()
    roots = [u.node for u in g.tensors.values() if u.node is not None]
    roots += [u.old_node for u in g.tensors.values() if u.old_node is not None]
    for n in reach(roots):
        saved.update(id(s) for s, _ in n.saved)
        parents.update(id(p) for p in n.parents)
    return saved, parents
