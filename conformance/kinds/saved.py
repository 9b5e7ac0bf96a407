"""Saved-tensor hooks: a block whose ops pack what they save through a pair of hooks, or through
`save_on_cpu` (spec/saved.md: SAVED-1, -2, -3, -5, -6, -7, -9, -12), and from vocabulary 20 a
block nested in another (SAVED-4), a custom Function applied inside one (SAVED-11), and a block
of `disable_saved_tensors_hooks` (SAVED-10).

A block's body holds forward statements only (ops, views, in-place writes): a backward pass
inside it would record the ops of a create_graph pass, whose saved values are torch's internals
and not the spec's. What the body recorded is packed by the innermost pair; the passes after
the block unpack it, whatever hooks are registered then (SAVED-2). The hooks log a call each,
without its tensor: the order of one op's packs is open (UNSPEC-13). A disable block is drawn
outside every saved_hooks block, and no hooks are registered inside it: what either refuses
raises a RuntimeError with the caller's message, of no error kind (spec/errors.md), which the
spec's examples and tests/differential check."""
from __future__ import annotations

from typing import Any

from ..lang.program import Stmt
from ..model import Node, every_node, predict, reach
from . import fields
from .backward import joined
from .registry import KINDS, Kind, kind

# params.pack -> what the pack hook returns: the tensor itself, a detached copy, the tensor's
# place in a list the unpack hook reads (SAVED-5); "save_on_cpu" is torch's own pair (SAVED-9)
PACKS = ("keep", "copy", "key", "save_on_cpu")
UNPACKS = ("return", "non_tensor")      # non_tensor: a list, which the pass refuses (SAVED-3)
# the kinds a block's body draws from, with their weights there; from vocabulary 20 also a
# custom Function (SAVED-11) and, in a saved_hooks block, a block nested in it (SAVED-4)
_BODY = (("call", 6), ("inplace", 3), ("view", 1), ("getitem", 1), ("setitem", 1))
_BODY_20 = (("function", 2), ("saved_hooks", 1))
NESTED_SINCE = 20


def hook_pair(x: Any, p: dict[str, Any]) -> tuple[Any, Any]:
    """The pack and unpack hooks of a block with params p, logging into x (x.log)."""
    e, label, keeps = x.e, p["label"], p["pack"]
    unpacks = p.get("unpack", "return")
    store: list[Any] = []

    def pack(t):
        x.log(f"{label}.pack", None)
        if keeps == "copy":
            return e.clone(t)
        if keeps == "key":
            store.append(t)
            return len(store) - 1
        return t

    def unpack(packed):
        x.log(f"{label}.unpack", None)
        if unpacks == "non_tensor":
            return [1.0]
        return store[packed] if keeps == "key" else packed
    return pack, unpack


@kind
class SavedHooks(Kind):
    name = "saved_hooks"
    param_keys = ("pack", "unpack", "label")
    caps = ("saved_tensors_hooks",)
    weight = 8
    since = 18
    block = True
    doc = ("with torch.autograd.graph.saved_tensors_hooks(pack, unpack): body, pack per "
           "params.pack: 'keep' (return the tensor), 'copy' (return t.detach().clone()), 'key' "
           "(keep the tensor in a list, return its index); unpack per params.unpack: 'return' "
           "(what pack kept, the default) or 'non_tensor' (the list [1.0]); both log a call "
           "under params.label + '.pack' / '.unpack', without a tensor. params.pack "
           "'save_on_cpu': with torch.autograd.graph.save_on_cpu(): body, no unpack, no label")

    def check(self, s, path):
        fields.param(s, path, "pack", (str,), choices=PACKS)
        on_cpu = s.params.get("pack") == "save_on_cpu"
        fields.param(s, path, "unpack", (str,), required=False, choices=UNPACKS)
        fields.label(s, path, required=not on_cpu)
        if on_cpu and ("unpack" in s.params or "label" in s.params):
            fields.fail(path, "params", "save_on_cpu takes neither unpack nor label")

    def hook_labels(self, s):
        label = s.params.get("label")
        return [f"{label}.pack", f"{label}.unpack"] if label else []

    def run(self, x, s, ev, path):
        p = s.params
        hooks = x.e.save_on_cpu() if p["pack"] == "save_on_cpu" else \
            x.e.saved_tensors_hooks(*hook_pair(x, p))
        with hooks:
            x.current = None
            x.block(s.body, path + ".")

    def render(self, s, path):
        p = s.params
        if p["pack"] == "save_on_cpu":
            return ["with torch.autograd.graph.save_on_cpu():"]
        pair = f"saved_hooks({p['label']!r}, {p['pack']!r}, {p.get('unpack', 'return')!r})"
        return [f"with torch.autograd.graph.saved_tensors_hooks(*{pair}):"]

    def render_body(self, s, path, body, bound):
        return ["    " + ln for ln in body] or ["    pass"]

    def draw(self, g, pack=None, unpack="return", body=None):
        """Draw a block of two to four forward statements (the first on a tensor that requires
    grad where it can); `pack` and `unpack` fix the hooks,
        `body(g)` draws the body instead. The nodes it records are packed (Node.packed)."""
        if g.depth >= 2 or g.inference:
            return False
        pack = pack or g.weighted("pack", (("keep", 3), ("copy", 3), ("key", 2),
                                           ("save_on_cpu", 2)))
        params: dict[str, Any] = {"pack": pack}
        if pack != "save_on_cpu":
            params["label"] = g.fresh("s")
            if unpack != "return":
                params["unpack"] = unpack
        own = ["SAVED-1"] + {"key": ["SAVED-5"], "save_on_cpu": ["SAVED-9"]}.get(pack, [])
        if g.saved_blocks:
            own.append("SAVED-4")       # nested: its pair alone packs what its body saves
        stmt = Stmt("saved_hooks", params=params)
        # the nodes themselves are held, not only their ids: a node the body drops would free
        # its id for a node the body makes, which would then count as made before (and what is
        # drawn would depend on the process's allocation history)
        before = {id(n): n for n in every_node(g.tensors.values())}
        saved_out = g.out
        g.out = stmt.body
        g.depth += 1
        g.saved_blocks += 1
        if body is not None:
            body(g)
        else:
            # the first statement acts on a tensor that requires grad, if one fits it
            with g.on(g.rg_tensor("packed input")):
                _body_step(g)
            for _ in range(g.integer("block length", 1, 3)):
                _body_step(g)
        g.depth -= 1
        g.saved_blocks -= 1
        g.out = saved_out
        if not stmt.body:
            return False
        packed = [n for n in every_node(g.tensors.values()) if id(n) not in before]
        for n in packed:
            if not n.packed:            # a nested block's pair packed what it recorded
                n.packed = unpack
        for st in stmt.body:        # a custom Function's saved tensors go through them too
            st.clauses = g.tags(list(st.clauses) + own + (
                ["SAVED-11"] if st.op == "function" else []))
        g.emit(stmt, own + (["SAVED-3"] if unpack != "return" else []))
        if body is None and not g.saved_blocks and g.boolean("write what it saved, then a pass",
                                                             75):
            _write_then_pass(g, packed)
        return True


def _write_then_pass(g: Any, packed: list[Node]) -> None:
    """After a block: an in-place write to a tensor a packed node saved (a value packed is not
    version-checked: SAVED-6), then a pass through that node, with create_graph at times
    (SAVED-12), and at times a second one, which finds it freed unless the first retained it
    (SAVED-7, SAVED-2)."""
    ids = {id(n) for n in packed}
    outs = g.live(lambda u: u.rg and u.node is not None and id(u.node) in ids and u.is_float
                  and not u.graph_open)
    if not outs:
        return
    y = g.choice("packed result", outs)
    saved = {id(st) for n in reach([y.node]) if n.packed for st, _ in n.saved}
    if g.has(*KINDS["inplace"].caps):
        target = g.pick("packed value to write", lambda u: id(u.storage) in saved
                        and g.inplace_ok(u))
        if target is not None:
            KINDS["inplace"].draw(g, target=target)
    if y.hidden or y.node is None:      # the write hid it (a view of what it wrote)
        return
    y = joined(g, y)                    # with other leaves' graphs, mostly
    root = y if not y.shape else g.sum_of(y)
    if predict(reach([root.node])) is not None:
        return      # another node fails: the ones that ran before it are freed (not modelled)
    cg = g.has("create_graph") and g.boolean("create_graph", 35)
    twice = g.boolean("a second pass", 75)
    retain: Any = "draw"
    if twice:       # the second finds the node freed (SAVED-7) or unpacks again (SAVED-2)
        retain = True if g.has("retain_graph") and g.boolean("retained for it", 40) else None
    g.emit_backward(root, [], retain=retain, create_graph=cg)
    if twice and not root.hidden and g.ok_kind(predict(reach([root.node]))):
        g.emit_backward(root, [])


def _body_step(g: Any) -> None:
    """One forward statement of a block's body, by the kinds the engine has."""
    body = _BODY + (_BODY_20 if g.vocabulary >= NESTED_SINCE else ())
    kinds = tuple((k, w) for k, w in body if g.has(*KINDS[k].caps))
    if not KINDS[g.weighted("saved block statement", kinds)].draw(g):
        g.make_leaf()


@kind
class NoSavedHooks(Kind):
    name = "disable_saved_hooks"
    param_keys = ("message",)
    caps = ("saved_tensors_hooks",)
    weight = 2
    since = NESTED_SINCE
    block = True
    doc = ("with torch.autograd.graph.disable_saved_tensors_hooks(params.message): body, "
           "whose ops save and record as anywhere (SAVED-10)")

    def check(self, s, path):
        fields.param(s, path, "message", (str,))

    def run(self, x, s, ev, path):
        with x.e.disable_saved_tensors_hooks(s.params["message"]):
            x.current = None
            x.block(s.body, path + ".")

    def render(self, s, path):
        return [f"with torch.autograd.graph.disable_saved_tensors_hooks("
                f"{s.params['message']!r}):"]

    def render_body(self, s, path, body, bound):
        return ["    " + ln for ln in body] or ["    pass"]

    def draw(self, g):
        """A block of one to three forward statements, outside every saved_hooks block (the
        hooks registered there would make entering it raise); at times a saved_hooks block
        after it, which may register hooks again."""
        if g.depth >= 2 or g.inference or g.saved_blocks:
            return False
        stmt = Stmt("disable_saved_hooks", params={"message": "no saved-tensor hooks here"})
        saved_out = g.out
        g.out = stmt.body
        g.depth += 1
        for _ in range(g.integer("disabled block length", 1, 3)):
            _body_step_unhooked(g)
        g.depth -= 1
        g.out = saved_out
        if not stmt.body:
            return False
        for st in stmt.body:
            st.clauses = g.tags(list(st.clauses) + ["SAVED-10"])
        g.emit(stmt, ["SAVED-10"])
        at = len(g.out)
        if g.boolean("hooks again after it", 40) and KINDS["saved_hooks"].draw(g):
            block = g.out[at]           # the block itself: statements may follow it
            block.clauses = g.tags([*block.clauses, "SAVED-10"])
        return True


def _body_step_unhooked(g: Any) -> None:
    """A forward statement of a disable block: no saved_hooks block inside it."""
    body = _BODY + (("function", 2),)
    kinds = tuple((k, w) for k, w in body if g.has(*KINDS[k].caps))
    if not KINDS[g.weighted("disabled block statement", kinds)].draw(g):
        g.make_leaf()
