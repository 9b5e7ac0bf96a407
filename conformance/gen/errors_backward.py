"""Deliberate error moves whose error a backward pass or autograd.grad raises.

Each recipe is declared with `@error_move` (error_move.py) and draws into the Gen it is handed
(core.py); errors.py reads the declarations in its explicit order.
"""
from __future__ import annotations

from typing import Any

from .. import model
from ..kinds import of
from ..kinds.inplace import setitem_node
from ..lang.ops import INPLACE_HOLDS, ROWS, SAVES_INPUT, SAVES_OUTPUT
from ..lang.program import Stmt
from ..model import T
from ..model.tables import SHAPES
from .error_move import error_move

_VERSION_RECIPES = {True: (("saved output", 1), ("saved input", 1), ("saved leaf", 1)),
                    False: (("saved output", 1), ("saved input", 1), ("saved leaf", 0))}


def write_in_place(g: Any, target: T) -> None:
    """Write target in place (after an op saved it, or after a view of it was taken under
    no_grad): under no_grad for a leaf (from vocabulary 6 also for what may not be written
    with grad mode on, a view of a leaf that requires grad), else by an in-place op."""
    if target.leaf or (g.vocabulary >= 6 and (target.nograd_view
                                              or model.leaf_rg_view(target))):
        write_under_no_grad(g, target)
    else:
        of("inplace").draw(g, target, "mul_" if target.shape else "add_")


def write_under_no_grad(g: Any, target: T) -> None:
    """Emit `with no_grad: target.add_(1.0)` (a leaf that requires grad may be written so)."""
    stmt = Stmt("mode", params={"mode": "no_grad"})
    stmt.body.append(Stmt("inplace", target=target.name, args=[1.0],
                          params={"fn": "add_", "kw": {}},
                          clauses=g.tags(["INPLACE-4", "VER-2"])))
    g.emit(stmt, ["MODE-1", "MODE-4"])
    target.storage.version += 1
    target.wrote()
    if g.vocabulary >= 6:       # as model.apply_inplace does for every other write
        model.hide_refused_views(g.tensors.values(), target.storage)


# vocabulary 3: how the saved tensor is written (its own name, an alias from detach(), a view)
_WRITE_ROUTES = (("itself", 2), ("through detach()", 1), ("through a view", 1))


def saving_op(g: Any, saves: frozenset[str], fallback: list[str]) -> tuple[str, dict]:
    """A unary op that saves what `saves` names, with its settings: from vocabulary 3 any of
    the table's that does (relu and sqrt too), before it one of `fallback`."""
    if g.vocabulary < 3:
        fn = g.choice("fn", fallback)
        return fn, {"exponent": 2} if "exponent" in ROWS[fn].kw else {}
    fn = g.choice("fn", [f for f, _ in g.call_fns if f in saves and ROWS[f].family == "unary"])
    return fn, of("call")._draw_settings(g, ROWS[fn])


def _write_saved(g: Any, target: T) -> None:
    """Write the saved tensor `target` in place, by a route the vocabulary draws."""
    route = g.weighted("write route", _WRITE_ROUTES) if g.vocabulary >= 3 else "itself"
    if route == "through detach()":
        alias = g.draw_on("detach", target)
        if alias is not None and g.inplace_ok(alias):
            of("inplace").draw(g, alias, "mul_" if alias.shape else "add_")
            return
    if route == "through a view" and g.has("views") and not target.leaf and target.ndim:
        view = g.draw_on("getitem", target)
        if view is not None and g.inplace_ok(view):
            of("inplace").draw(g, view, "mul_")
            return
    write_in_place(g, target)


@error_move("VERSION_MISMATCH", clause="VER-7", needs=("inplace", "version_counter"),
            natural="version_counter")
def version_mismatch(g: Any) -> bool:
    """An op saves a tensor; the tensor is modified in place; backward raises. From vocabulary
    10 also an in-place op that is its own operand (y.mul_(y)): it saves its operand, the
    target, which its own write then bumps."""
    recipes = _VERSION_RECIPES[g.has("grad_modes")] + (
        (("operand of itself", 1),) if g.vocabulary >= 10 else ())
    recipe = g.weighted("recipe", recipes)
    if recipe == "operand of itself":
        y = _own_operand(g)
    else:
        y = _saved_and_written(g, recipe)
    root = y if not y.shape else g.sum_of(y)
    leaves = [u for u in g.live(lambda u: u.leaf and u.rg and u.node is not None)
              if u.node in model.reach([root.node])]
    if g.has("autograd_grad") and leaves and g.boolean(
            "via autograd.grad", 30 if g.vocabulary < 3 else 55):
        g.emit(Stmt("grad", params={
            "outputs": [root.name], "inputs": [leaves[0].name], "grad_outputs": None,
            "retain_graph": None, "allow_unused": False, "outs": [g.fresh("g")]}),
            ["API-6", "VER-7", "VER-15"], "VERSION_MISMATCH")
        return True
    inputs = [leaves[0]] if g.vocabulary >= 3 and leaves and g.has("backward_inputs") \
        and g.boolean("through inputs=", 25) else []
    return g.emit_backward(root, [], retain=None, inputs=inputs, kind="VERSION_MISMATCH")


def _saved_and_written(g: Any, recipe: str) -> T:
    """An op's result whose graph saved a tensor written in place since (the recipes of
    vocabularies before 10): the result."""
    # where views copy, not what a view op reached (Gen.view_shared): the write would show it
    a = g.rg_tensor("saving op input", (lambda u: u.leaf and not g.view_shared(u))
                    if recipe == "saved leaf" else (lambda u: not g.view_shared(u)))
    if recipe == "saved input" and (a.leaf or (g.vocabulary >= 19 and not g.has("grad_modes")
                                               and model.leaf_rg_view(a))):
        # from vocabulary 19 also for a view of a leaf, which only a no_grad block may write
        a = g.call1(a, "mul", [2.0], {}, ["GRAPH-6"])
    if recipe == "saved output":
        fn, kw = saving_op(g, SAVES_OUTPUT, ["exp", "tanh", "sigmoid"])
        y = g.call1(a, fn, [], kw, ["VER-10"])
        target = y
    else:
        fn, kw = saving_op(g, SAVES_INPUT, ["sin", "cos", "pow"])
        y = g.call1(a, fn, [], kw, ["VER-9"])
        target = a
    _write_saved(g, target)
    return y


def _own_operand(g: Any) -> T:
    """y.mul_(y) or y.div_(y) on a non-leaf: mul_ and div_ save their operand, y itself, whose
    version their own write moves on (VER-7, VER-9); y."""
    y = g.call1(g.rg_tensor("own operand input"), "mul", [2.0], {}, ["GRAPH-6"])
    fn = g.choice("own operand fn", ["mul_", "div_"])
    version = y.storage.version
    cl = g.apply_inplace(y, [y], False, holds=fn in INPLACE_HOLDS) + list(ROWS[fn].clauses)
    y.node.saved.append((y.storage, version))
    g.emit(Stmt("inplace", target=y.name, args=[y.name], params={"fn": fn, "kw": {}}),
           cl + ["VER-9"])
    return y


@error_move("GRAPH_FREED", clause="FREE-1", needs=("retain_graph",), natural="retain_graph")
def graph_freed(g: Any) -> bool:
    a = g.rg_tensor("graph input")
    y = g.call1(a, "sin", [], {}, ["VER-9"])
    root = g.sum_of(y)
    g.emit_backward(root, [], retain=False, inputs=[])
    return g.emit_backward(root, [], retain=None, inputs=[], kind="GRAPH_FREED")


@error_move("IMPLICIT_GRAD_NONSCALAR", clause="API-1")
def implicit_grad_nonscalar(g: Any) -> bool:
    # torch takes a tensor of one element as a scalar: from vocabulary 20 none is picked
    t = g.rg_tensor("non-scalar", lambda u: u.ndim >= 1 and (g.vocabulary < 20 or u.numel > 1))
    if not t.shape or (g.vocabulary >= 20 and t.numel == 1):
        t = g.make_leaf(shape=(2,), rg=True)
    return g.emit_backward(t, [], retain=None, inputs=[], kind="IMPLICIT_GRAD_NONSCALAR")


@error_move("NO_GRAD_FN", clause="API-4", no_grad_ok=True)
def no_grad_fn(g: Any) -> bool:
    t = g.pick("no grad", lambda u: not u.rg and u.is_float) or g.make_leaf(rg=False)
    root, gradient = (t, []) if not t.shape else (
        t, [g.make_leaf(shape=t.shape, dtype=t.dtype, rg=False, hidden=True).name])
    return g.emit_backward(root, gradient, retain=None, inputs=[], kind="NO_GRAD_FN")


@error_move("HOOK_CHANGED_SIZE", clause="HOOK-5", needs=("hooks",), natural="hooks")
def hook_changed_size(g: Any) -> bool:
    t = g.rg_tensor("hook on", T.hookable)
    of("hook").draw(g, "wrong_shape", t)
    root = t if not t.shape else g.sum_of(t)
    return g.emit_backward(root, [], retain=None, inputs=[], kind="HOOK_CHANGED_SIZE")


def _hook_refused(g: Any, behaviour: str, kind: str) -> bool:
    """A tensor hook on a fresh non-leaf returns what HOOK-5 refuses: the pass from it raises
    `kind`. The sum below it has run and freed what it held, so it is never used again; the
    hook is removed afterwards, so that later passes through the non-leaf work."""
    y = g.call1(g.rg_tensor("hook on"), "mul", [2.0], {}, ["GRAPH-6"])
    of("hook").draw(g, behaviour, y)
    name = g.out[-1].out
    root = y if not y.shape else g.sum_of(y)
    g.emit_backward(root, [], retain=None, inputs=[], kind=kind)
    root.hidden = root is not y
    assert y.node is not None
    y.node.hooks.pop(name)
    g.handles.pop(name)
    g.emit(Stmt("remove", target=name), ["HOOK-6"])
    return True


@error_move("HOOK_CHANGED_TYPE", clause="HOOK-5", needs=("hooks",), since=17)
def hook_changed_type(g: Any) -> bool:
    return _hook_refused(g, "wrong_dtype", "HOOK_CHANGED_TYPE")


@error_move("HOOK_RETURNED_NON_TENSOR", clause="HOOK-5", needs=("hooks",), since=17)
def hook_returned_non_tensor(g: Any) -> bool:
    return _hook_refused(g, "non_tensor", "HOOK_RETURNED_NON_TENSOR")


def _some_graph(g: Any) -> None:
    if not any(g.live(lambda u: u.rg and u.node is not None)):
        g.make_leaf(rg=True)


@error_move("UNUSED_INPUT", clause="API-7", needs=("autograd_grad",))
def unused_input(g: Any) -> bool:
    _some_graph(g)
    return of("grad").draw(g, "UNUSED_INPUT")


@error_move("BACKWARD_EMPTY_INPUTS", clause="API-11", needs=("backward_inputs",))
def backward_empty_inputs(g: Any) -> bool:
    t = g.rg_tensor("backward of", lambda u: not u.leaf)
    root = t if not t.shape else g.sum_of(t)
    g.emit(Stmt("backward", target=root.name, params={"retain_graph": None, "inputs": []}),
           ["API-11"], "BACKWARD_EMPTY_INPUTS")
    return True


@error_move("GRAD_OUTPUT_SHAPE", clause="API-3")
def grad_output_shape(g: Any) -> bool:
    if g.has("autograd_grad") and g.boolean("via autograd.grad", 40):
        g.rg_tensor("grad of")
        return of("grad").draw(g, "GRAD_OUTPUT_SHAPE")
    t = g.rg_tensor("backward of")
    shape = g.choice("wrong shape", [s for s in SHAPES if s != t.shape
                                     and s != () and model.numel(s) != 1])
    grad = g.make_leaf(shape=shape, dtype=t.dtype, rg=False, hidden=True)
    return g.emit_backward(t, [grad.name], retain=None, inputs=[], kind="GRAD_OUTPUT_SHAPE")


@error_move("INPUT_NO_REQUIRES_GRAD", clause="API-8", needs=("autograd_grad",))
def input_no_requires_grad(g: Any) -> bool:
    _some_graph(g)
    return of("grad").draw(g, "INPUT_NO_REQUIRES_GRAD")


@error_move("LEAF_MOVED_INTO_GRAPH", clause="INPLACE-15", needs=("inplace",))
def leaf_moved_into_graph(g: Any) -> bool:
    """A leaf in a graph stops requiring grad, then an in-place write of a value that
    requires grad makes it a non-leaf: backward through the old graph raises."""
    x = g.make_leaf(rg=True)
    y = g.call1(x, "mul", [2.0], {}, ["GRAPH-6"])
    root = y if not y.shape else g.sum_of(y)
    of("requires_grad_").emit(g, x, False)
    if x.shape and g.boolean("by setitem", 50):
        index = g.draw_index(x)
        w = g.make_leaf(shape=model.index_shape(x.shape, index), dtype=x.dtype, rg=True)
        cl = g.apply_inplace(x, [w], False, setitem=True)
        setitem_node(g, x, index)
        g.emit(Stmt("setitem", target=x.name, args=[w.name], params={"index": index}),
               ["INPLACE-9" if c == "INPLACE-7" else c for c in cl])
    else:
        w = g.make_leaf(shape=x.shape, dtype=x.dtype, rg=True)
        cl = g.apply_inplace(x, [w], False)
        g.emit(Stmt("inplace", target=x.name, args=[w.name], params={"fn": "copy_", "kw": {}}),
               cl)
    done = g.emit_backward(root, [], retain=None, inputs=[], kind="LEAF_MOVED_INTO_GRAPH")
    if g.vocabulary >= 17:
        # the nodes before x's old accumulator ran and freed what they saved: a later pass
        # through them raises GRAPH_FREED, which the model would not predict
        y.hidden = root.hidden = True
    return done


@error_move("POST_HOOK_RETURNED_VALUE", clause="HOOK-13",
            needs=("post_accumulate_hooks", "hooks"))
def post_hook_returned_value(g: Any) -> bool:
    """A post-accumulate hook returns a value: the backward that runs it raises. The hook is
    removed afterwards, so that later backward calls work."""
    x = g.rg_tensor("leaf", lambda u: u.leaf and u.node is not None)
    assert x.node is not None
    name = g.fresh("h")
    x.node.post_hooks.append(name)
    x.node.returning.append(name)
    g.handles[name] = (x.node, True)
    g.emit(Stmt("post_hook", out=name, target=x.name,
                params={"label": name, "behaviour": "return"}), ["HOOK-13"])
    y = g.call1(x, "mul", [2.0], {}, ["GRAPH-6"])
    root = y if not y.shape else g.sum_of(y)
    g.emit_backward(root, [], retain=True if g.has("retain_graph") else None,
                    inputs=[], kind="POST_HOOK_RETURNED_VALUE")
    g.handles.pop(name)
    x.node.post_hooks.remove(name)
    x.node.returning.remove(name)
    g.emit(Stmt("remove", target=name), ["HOOK-6"])
    return True


def _node_hook_refused(g: Any, behaviour: str, kind: str) -> bool:
    """A node hook returns what HOOK-17 refuses: the backward that runs it raises `kind`. The
    hook is removed afterwards, so that later backward calls work."""
    y = g.call1(g.rg_tensor("node hook input"), "mul", [2.0], {}, ["GRAPH-6"])
    assert y.node is not None
    name = g.fresh("h")
    y.node.node_hooks += 1
    g.emit(Stmt("node_hook", out=name, target=y.name, params={
        "kind": g.choice("node hook kind", ["pre", "post"]), "behaviour": behaviour,
        "label": name}), ["HOOK-15", "GRAPH-3", "HOOK-17"])
    root = y if not y.shape else g.sum_of(y)
    g.emit_backward(root, [], retain=True if g.has("retain_graph") else None, inputs=[],
                    kind=kind)
    y.node.node_hooks -= 1
    g.emit(Stmt("remove", target=name), ["HOOK-6"])
    return True


@error_move("HOOK_WRONG_COUNT", clause="HOOK-17", needs=("node_hooks", "grad_fn", "hooks"),
            since=5)
def hook_wrong_count(g: Any) -> bool:
    return _node_hook_refused(g, "extra", "HOOK_WRONG_COUNT")


@error_move("HOOK_RETURNED_NON_TUPLE", clause="HOOK-17",
            needs=("node_hooks", "grad_fn", "hooks"), since=5)
def hook_returned_non_tuple(g: Any) -> bool:
    return _node_hook_refused(g, "list", "HOOK_RETURNED_NON_TUPLE")
