"""Statements that give a tensor other contents: `.data =`, which leaves its autograd identity
(spec/data.md, DATA-1 to DATA-6), and `set_()`, an in-place write that records a node without
a derivative (DATA-7, DATA-8)."""
from __future__ import annotations

from typing import Any

from ..lang.program import Stmt
from ..model import Node, T, every_node, owns_memory
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

    def data_swapped(self, s):
        return None if s.args[0] is None else (s.target, s.args[0])

    def memory_source(self, s):
        return s.args[0]

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
        t = g.pick("set .data of", lambda u: owns_memory(u, g.tensors.values())
                   and id(u.storage) not in held[0])
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
        if g.has("grad_dtype") and t.origin == "leaf" and (g.vocabulary < 20 or t.leaf) and \
                t.is_float and g.boolean(
                "observe grad_dtype", 30):
            return KINDS["observe"].draw(g, t, "grad_dtype")
        return KINDS["observe"].draw(g, t) if g.boolean("observe it", 50) else True


def _held(g) -> tuple[set[int], set[int]]:
    """(storages some node saved, nodes some node has as a parent) over every graph the
    program's tensors hold, ids of both."""
    saved: set[int] = set()
    parents: set[int] = set()
    for n in every_node(g.tensors.values()):
        saved.update(id(s) for s, _ in n.saved)
        parents.update(id(p) for p in n.parents)
    return saved, parents


@kind
class SetStorage(Kind):
    name = "set_"
    caps = ("core", "data_assign")
    weight = 3
    since = 20
    in_place = writes = records_node = True     # (a node with target and args[0] as inputs)
    doc = ("target.set_(args[0]): target shares args[0]'s storage and shape, an in-place write "
           "of target (its version counts one) that records a node without a derivative")

    def check(self, s, path):
        fields.name(s, path, "target")
        if len(s.args) != 1 or not isinstance(s.args[0], str):
            fields.fail(path, "args", f"must hold the source tensor's name, got {s.args!r}")

    def run(self, x, s, ev, path):
        x.e.set_(x.env[s.target], x.val(s.args[0]))

    def memory_source(self, s):
        return s.args[0]

    def render(self, s, path):
        return [f"{s.target}.set_({s.args[0]})"]

    def draw(self, g, target: T | None = None, src: T | None = None,
             expect: str | None = None) -> bool:
        """`t.set_(src)` for a fresh src never used again (its memory is t's then): on a
        tensor that owns its memory, that no saved-tensor hook packed (the packed tensor would
        be t, holding src's memory) and that retains no grad and has no hooks on its node;
        another shape only where nothing holds the old one (as for set_data). With grad mode
        enabled a leaf that requires grad refuses it (LEAF_INPLACE), and where t or src
        requires grad t gets a node that refuses backward (DATA-8)."""
        if g.inference:
            return False
        refused = g.grad_enabled and g.boolean("on a leaf that requires grad", 15)
        t = target or g.pick("set_ of", lambda u: _settable(g, u) and (
            refused or not g.grad_enabled or not (u.leaf and u.rg)))
        if t is None:
            return False
        if expect is None and g.grad_enabled and t.leaf and t.rg:
            expect = "LEAF_INPLACE"
        shape = t.shape
        if expect is None and src is None and _free(g, t) and g.boolean("other shape", 50):
            shape = g.choice("set_ shape", SHAPES)
        src = src or g.make_leaf(shape=shape, dtype=t.dtype, hidden=True, rg=t.is_float and
                                 g.boolean("set_ source requires grad", 30))
        cl = ["DATA-7", "VER-2"] + (["DATA-8"] if t.rg or src.rg or not g.grad_enabled else [])
        if expect is not None:
            g.emit(Stmt("set_", target=t.name, args=[src.name]),
                   cl + (["INPLACE-1"] if expect == "LEAF_INPLACE" else []), expect)
            return True
        if g.grad_enabled and (t.rg or src.rg):
            parents = [u.node for u in (t, src) if u.rg and u.node is not None]
            t.node = Node(parents=parents, refuses=True)
            t.rg, t.leaf, t.output_nr = True, False, 0
            if t.origin != "op":
                t.origin = "op"
        t.storage.version += 1
        t.shape, t.contiguous, t.exact, t.at_kink = shape, True, src.exact_now(), src.at_kink
        t.storage.overwritten = False       # its memory is src's, which nothing wrote
        g.emit(Stmt("set_", target=t.name, args=[src.name]), cl)
        return KINDS["observe"].draw(g, t) if g.boolean("observe it", 40) else True


def _settable(g: Any, t: T) -> bool:
    if not owns_memory(t, g.tensors.values()) or t.retains or t.dtype == "int64":
        return False
    if t.node is not None and (t.node.hooks or t.node.post_hooks or t.node.node_hooks):
        return False
    return not any(n.packed and any(st is t.storage for st, _ in n.saved)
                   for n in every_node(g.tensors.values()))


def _free(g: Any, t: T) -> bool:
    """Nothing holds t's shape: no graph, hook or .grad (as set_data's other shapes)."""
    if not t.leaf or t.has_grad or t.grad_dtype != "" or t.rg:
        return False
    held = _held(g)
    return id(t.storage) not in held[0]
