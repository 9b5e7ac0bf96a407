"""The deliberate error moves: one `@error_move` declaration each, and the tables read from them.

About one step in twenty (WEIGHT in the statement draw, order.py) is a deliberate error: a
recipe that provokes one error kind of spec/errors.md. Every kind a program can express has a
move here, in errors_backward.py (the errors a backward pass raises), errors_inference.py
(inference mode), errors_overlap.py (memory shared within a write), errors_data.py
(`.data =`), errors_saved.py (saved-tensor hooks), errors_function.py (custom Functions) or
errors_detach.py (`detach_()`); INEXPRESSIBLE says why any other cannot. The draw among the
moves is in ERROR_ORDER, never in declaration order, and ERROR_MOVES, ERROR_CLAUSE,
NO_GRAD_ERRORS and NATURAL_ERROR_CAPS are derived from the declarations.
"""
from __future__ import annotations

import functools
from typing import Any

from .. import model
from ..kinds import of
from ..lang.ops import AUGMENTED, ROWS, weight_in
from ..lang.program import Stmt
from ..model import T
from ..model.tables import NUMBERS, SHAPES
from . import (
    errors_backward,  # noqa: F401  (declares the moves of backward passes)
    errors_data,  # noqa: F401  (declares the moves of `.data =`)
    errors_detach,  # noqa: F401  (declares the moves of detach_())
    errors_function,  # noqa: F401  (declares the moves of custom Functions)
    errors_inference,  # noqa: F401  (declares the moves of inference mode)
    errors_overlap,  # noqa: F401  (declares the moves of overlapping memory)
    errors_saved,  # noqa: F401  (declares the move of saved-tensor hooks)
)
from .error_move import DECLARED, ErrorMove, error_move

WEIGHT = 9              # of "error" in the statement draw (order.DRAW_ORDER) ...
# ... and (vocabulary, weight from it on): each move in 6% or more of programs
# (tests/generator_stats.py); vocabulary 6 adds the five moves of inference mode
REWEIGHTED = ((3, 20), (4, 30), (6, 36), (19, 41))


def weight(vocabulary: int) -> int:
    """The weight of "error" in the statement draw of a generator vocabulary."""
    return weight_in(vocabulary, WEIGHT, REWEIGHTED)
ERROR_ORDER = (
    "LEAF_INPLACE", "VIEW_OF_LEAF_INPLACE", "VERSION_MISMATCH", "GRAPH_FREED",
    "IMPLICIT_GRAD_NONSCALAR", "NO_GRAD_FN", "RETAIN_GRAD_NO_REQUIRES_GRAD",
    "REQUIRES_GRAD_DTYPE", "REQUIRES_GRAD_DTYPE_FLAG", "NO_GRAD_VIEW_INPLACE",
    "REQUIRES_GRAD_NONLEAF", "HOOK_NO_REQUIRES_GRAD", "POST_HOOK_NONLEAF", "GRAD_ASSIGN_SHAPE",
    "GRAD_ASSIGN_DTYPE", "HOOK_CHANGED_SIZE", "UNUSED_INPUT", "NONLEAF_GRAD_ACCESS",
    "BACKWARD_EMPTY_INPUTS", "GRAD_OUTPUT_SHAPE", "INPUT_NO_REQUIRES_GRAD",
    "LEAF_MOVED_INTO_GRAPH", "POST_HOOK_RETURNED_VALUE", "HOOK_WRONG_COUNT",
    "HOOK_RETURNED_NON_TUPLE", "PARTIAL_OVERLAP", "INFERENCE_VERSION", "INFERENCE_INPLACE",
    "INFERENCE_SAVED", "INFERENCE_REQUIRES_GRAD", "INFERENCE_VIEW_INPLACE",
    "NO_GRAD_VIEW_BASE_INPLACE", "SELF_OVERLAPPING_WRITE", "DATA_REQUIRES_GRAD_DTYPE",
    "DATA_NOT_TENSOR", "HOOK_CHANGED_TYPE", "HOOK_RETURNED_NON_TENSOR", "UNPACK_NOT_TENSOR",
    "FUNCTION_GRAD_COUNT", "FUNCTION_INVALID_GRADIENT", "DIRTY_LEAF", "CUSTOM_VIEW_INPLACE",
    "LEGACY_FUNCTION", "DETACH_VIEW_INPLACE", "SAVED_DETACHED_INPLACE", "SET_DTYPE",
    "SET_BACKWARD",
)
# kind -> why no error move provokes it
INEXPRESSIBLE: dict[str, str] = {
    "HOOK_REPLACED_NONE": "node hook behaviours keep every None entry (HOOK-17)",
    "GRAD_ASSIGN_SELF": "a .grad assignment the generator draws assigns a fresh tensor "
                        "(LEAF-12)",
    "CREATE_GRAPH_CYCLE": "a warning, not an error, and not compared in generated programs "
                          "(DOUBLE-8, UNSPEC-9)",
    # spec/function.md: the catalogue of Functions (conformance/lang/functions.py) holds none
    # that makes these
    "FUNCTION_NON_TENSOR_GRAD": "no Function of the catalogue takes a number argument and "
                                "returns a gradient for it",
    "FUNCTION_GRAD_NOT_TENSOR": "the Functions of the catalogue return tensors or None",
    "DIRTY_NOT_RETURNED": "no Function of the catalogue marks dirty what it does not return",
    "RETURNED_INPUT_SAVED": "the Function of the catalogue that returns its input as it is "
                            "(Identity) has no setup_context and saves nothing",
    "SAVE_NOT_TENSOR": "the Functions of the catalogue save tensors or None",
    "DIRTY_NOT_TENSOR": "the Functions of the catalogue mark only tensors dirty",
    "NON_DIFFERENTIABLE_NOT_TENSOR": "the Functions of the catalogue mark only tensors "
                                     "non-differentiable",
    "DIRTY_VIEW_OUTPUTS": "the Function of the catalogue that marks its input dirty returns "
                          "one tensor",
    "ONCE_DIFFERENTIABLE": "no program differentiates twice through a Function: the "
                           "functions of gen/higher.py are drawn from the op table",
    "CUSTOM_VIEW_BASE_INPLACE": "an output of Identity is hidden once its memory is written "
                                "(kinds/function.py)",
    "PACK_HOOK_INPLACE": "a pack hook that writes its input leaves values the spec does not "
                         "fix (UNSPEC-13)",
}

_LEAF_INPLACE_FNS = (("add_", 2), ("mul_", 1), ("iadd", 1), ("zero_", 1), ("exp_", 1))


def _no_grad_tensor(g: Any) -> T:
    return g.pick("no grad", lambda u: not u.rg and u.is_float) or g.make_leaf(rg=False)


@error_move("LEAF_INPLACE", clause="INPLACE-1", needs=("inplace",))
def leaf_inplace(g: Any) -> bool:
    t = g.rg_tensor("leaf to modify", lambda u: u.leaf)
    fn = g.weighted("in-place fn", _LEAF_INPLACE_FNS)
    args = [g.choice("number", NUMBERS)] if ROWS[fn].arity else []
    g.emit(Stmt("inplace", target=t.name, args=args, params={"fn": fn, "kw": {}}),
           ["INPLACE-1"] + (["INPLACE-13"] if fn in AUGMENTED else []), "LEAF_INPLACE")
    return True


@error_move("VIEW_OF_LEAF_INPLACE", clause="INPLACE-2", needs=("inplace",))
def view_of_leaf_inplace(g: Any) -> bool:
    t = g.rg_tensor("leaf", lambda u: u.leaf and u.ndim >= 1)
    if t.ndim == 0:
        t = g.make_leaf(shape=(2,), rg=True)
    if g.has("views") and g.boolean("through a view", 50):
        index = g.draw_index(t)
        v = g.add_view(t, model.index_shape(t.shape, index), True, False)
        g.emit(Stmt("getitem", out=v.name, target=t.name, params={"index": index}),
               ["GRAPH-10", "GRAPH-1"])
        g.emit(Stmt("inplace", target=v.name, args=[g.choice("number", NUMBERS)],
                    params={"fn": "mul_", "kw": {}}), ["INPLACE-2"], "VIEW_OF_LEAF_INPLACE")
    else:
        index = g.draw_index(t)
        # x[0:, 0:] = v writes x itself, not a view of it (measured on torch 2.13)
        whole = all(isinstance(i, dict) and i["slice"] == [0, None, None] for i in index)
        g.emit(Stmt("setitem", target=t.name, args=[g.choice("number", NUMBERS)],
                    params={"index": index}), ["INPLACE-3"],
               "LEAF_INPLACE" if whole else "VIEW_OF_LEAF_INPLACE")
    return True


@error_move("RETAIN_GRAD_NO_REQUIRES_GRAD", clause="RETAIN-2", needs=("retain_grad",),
            no_grad_ok=True)
def retain_grad_no_requires_grad(g: Any) -> bool:
    t = _no_grad_tensor(g)
    g.emit(Stmt("retain_grad", target=t.name), ["RETAIN-2"], "RETAIN_GRAD_NO_REQUIRES_GRAD")
    return True


def _int_leaf(g: Any, rg: bool) -> str:
    shape = g.choice("leaf shape", SHAPES)
    name = g.fresh()
    g.emit(Stmt("leaf", out=name, params={
        "values": g.draw_values(model.numel(shape), "int64"), "shape": list(shape),
        "dtype": "int64", "requires_grad": rg}), ["LEAF-1", "LEAF-15"],
        "REQUIRES_GRAD_DTYPE" if rg else None)
    if not rg:
        g.tensors[name] = T(name, shape, "int64", False, True, model.Storage())
    return name


@error_move("REQUIRES_GRAD_DTYPE", clause="LEAF-15", no_grad_ok=True)
def requires_grad_dtype(g: Any) -> bool:
    _int_leaf(g, rg=True)
    return True


@error_move("REQUIRES_GRAD_DTYPE_FLAG", clause="LEAF-15")
def requires_grad_dtype_flag(g: Any) -> bool:
    t = g.pick("int tensor", lambda u: u.dtype == "int64")
    name = t.name if t is not None else _int_leaf(g, rg=False)
    g.emit(Stmt("requires_grad_", target=name, params={
        "value": True, **({"setter": True} if g.draw_setter() else {})}), ["LEAF-15"],
        "REQUIRES_GRAD_DTYPE_FLAG")
    return True


@error_move("NO_GRAD_VIEW_INPLACE", clause="MODE-9", needs=("grad_modes", "views", "inplace"))
def no_grad_view_inplace(g: Any) -> bool:
    t = g.rg_tensor("base", lambda u: u.ndim >= 1 and not u.expanded)
    if not t.shape:
        t = g.make_leaf(shape=(2,), rg=True)
    index = g.draw_index(t)
    stmt = Stmt("mode", params={"mode": "no_grad"})
    saved_out, saved_mode = g.out, g.grad_enabled
    g.out, g.grad_enabled = stmt.body, False
    v = g.add_view(t, model.index_shape(t.shape, index), True, False)
    g.emit(Stmt("getitem", out=v.name, target=t.name, params={"index": index}),
           ["GRAPH-10", "MODE-1"])
    g.out, g.grad_enabled = saved_out, saved_mode
    g.emit(stmt, ["MODE-1", "MODE-4"])
    g.emit(Stmt("inplace", target=v.name, args=[g.choice("number", NUMBERS)],
                params={"fn": "add_", "kw": {}}), ["MODE-9"], "NO_GRAD_VIEW_INPLACE")
    return True


# vocabulary 8: how MODE-11's refused view is used once its base was written
_REFUSED_USES = (("is_leaf", 2), ("grad_fn", 2), ("op", 3), ("view op", 1))
_ALLOWED_USES = (("none", 2), ("requires_grad", 1), ("value", 1))


@error_move("NO_GRAD_VIEW_BASE_INPLACE", clause="MODE-11", needs=("grad_modes", "views", "inplace"),
            since=8)
def no_grad_view_base_inplace(g: Any) -> bool:
    """A view taken under no_grad of a tensor that requires grad (and sometimes a view of that
    view, taken with grad mode on); its base written in place (a leaf under no_grad); sometimes
    what still works read (its requires_grad, still True, or its values); then the view's
    is_leaf or grad_fn read, or the view used in an op that records, which raises. Both views
    are hidden from every later draw by the write (model.hide_refused_views)."""
    # not a tensor torch may have made a view although the model calls it a copy (a reshape:
    # Storage.may_reach), whose write would raise for its base instead
    t = g.rg_tensor("base", lambda u: u.ndim >= 1 and not u.expanded and u.base is None
                    and not u.storage.may_reach and not u.inference
                    and (u.leaf or g.inplace_ok(u)))
    if not t.shape:
        t = g.make_leaf(shape=(2,), rg=True)
    stmt = Stmt("mode", params={"mode": "no_grad"})
    saved_out, saved_mode = g.out, g.grad_enabled
    g.out, g.grad_enabled = stmt.body, False
    index = g.draw_index(t)
    v = g.add_view(t, model.index_shape(t.shape, index), True, False)
    g.emit(Stmt("getitem", out=v.name, target=t.name, params={"index": index}),
           ["GRAPH-10", "MODE-1"])
    g.out, g.grad_enabled = saved_out, saved_mode
    g.emit(stmt, ["MODE-1", "MODE-4"])
    if v.ndim and g.boolean("a view of the view", 25):
        index = g.draw_index(v)
        u = g.add_view(v, model.index_shape(v.shape, index), True, False)
        g.emit(Stmt("getitem", out=u.name, target=v.name, params={"index": index}),
               ["GRAPH-10", "MODE-11"])
        v = u
    errors_backward.write_in_place(g, t)
    allowed = g.weighted("allowed use", _ALLOWED_USES)
    if allowed != "none":
        g.emit(Stmt("observe", target=v.name, params={"what": allowed}), ["MODE-11"])
    use = g.weighted("refused use", [(u, w) for u, w in _REFUSED_USES
                                     if u != "grad_fn" or g.has("grad_fn")])
    if use in ("is_leaf", "grad_fn"):
        g.emit(Stmt("observe", target=v.name, params={"what": use}), ["MODE-11"],
               "NO_GRAD_VIEW_BASE_INPLACE")
    elif use == "op":
        fn = g.choice("refused op", ["mul", "add", "neg", "exp"])
        args = [v.name] + ([g.choice("number", NUMBERS)] if fn in ("mul", "add") else [])
        g.emit(Stmt("call", out=g.fresh(), args=args, params={"fn": fn, "kw": {}}),
               ["MODE-11"], "NO_GRAD_VIEW_BASE_INPLACE")
    else:
        g.emit(Stmt("getitem", out=g.fresh(), target=v.name, params={"index": [
            {"slice": [0, None, None]}] if v.ndim else ["..."]}), ["MODE-11"],
            "NO_GRAD_VIEW_BASE_INPLACE")
    return True


def _new_nonleaf(g: Any, fn: str, numbers: list[float], clauses: list[str]) -> T:
    """Emit t = fn(a, *numbers) for a tensor a that requires grad (nothing saved modelled)."""
    a = g.rg_tensor("input")
    t = g.result(a.shape, a.dtype, [a])
    g.emit(Stmt("call", out=t.name, args=[a.name, *numbers], params={"fn": fn, "kw": {}}),
           clauses)
    return t


@error_move("REQUIRES_GRAD_NONLEAF", clause="LEAF-11")
def requires_grad_nonleaf(g: Any) -> bool:
    t = g.pick("non-leaf", lambda u: u.rg and not u.leaf) or _new_nonleaf(
        g, "mul", [2.0], ["GRAPH-1", "GRAPH-6"])
    # the setter refuses a non-leaf whatever the value (LEAF-11); requires_grad_(True) does not
    params = {"value": g.boolean("setter's value", 50), "setter": True} if g.draw_setter() \
        else {"value": False}
    g.emit(Stmt("requires_grad_", target=t.name, params=params), ["LEAF-11"],
           "REQUIRES_GRAD_NONLEAF")
    return True


@error_move("HOOK_NO_REQUIRES_GRAD", clause="HOOK-7", needs=("hooks",), no_grad_ok=True)
def hook_no_requires_grad(g: Any) -> bool:
    t = _no_grad_tensor(g)
    g.emit(Stmt("hook", out=g.fresh("h"), target=t.name,
                params={"behaviour": "record", "label": f"h{g.counter}"}), ["HOOK-7"],
           "HOOK_NO_REQUIRES_GRAD")
    return True


@error_move("POST_HOOK_NONLEAF", clause="HOOK-12", needs=("post_accumulate_hooks",))
def post_hook_nonleaf(g: Any) -> bool:
    t = g.pick("non-leaf", lambda u: u.rg and not u.leaf)
    if t is None:
        t = _new_nonleaf(g, "exp", [], ["GRAPH-1"])
        if t.node is not None:
            t.node.saved = [(t.storage, 0)]
    g.emit(Stmt("post_hook", out=g.fresh("h"), target=t.name,
                params={"label": f"h{g.counter}"}), ["HOOK-12"], "POST_HOOK_NONLEAF")
    return True


@error_move("GRAD_ASSIGN_SHAPE", clause="LEAF-12", no_grad_ok=True)
def grad_assign_shape(g: Any) -> bool:
    t = g.rg_tensor("leaf", lambda u: u.leaf)
    shape = g.choice("wrong shape", [s for s in SHAPES if s != t.shape])
    grad = g.make_leaf(shape=shape, dtype=t.dtype, rg=False, hidden=True)
    g.emit(Stmt("set_grad", target=t.name, args=[grad.name]), ["LEAF-12"], "GRAD_ASSIGN_SHAPE")
    return True


@error_move("GRAD_ASSIGN_DTYPE", clause="LEAF-13", no_grad_ok=True)
def grad_assign_dtype(g: Any) -> bool:
    # from vocabulary 17 not a leaf whose grad_dtype was set: the dtype it takes is that one,
    # or any (None), not its own (GRAD-7; vocabulary 16 predicted an error torch did not raise)
    t = g.rg_tensor("leaf", lambda u: u.leaf and (g.vocabulary < 17 or u.grad_dtype == ""))
    other = "float32" if t.dtype == "float64" else "float64"
    grad = g.make_leaf(shape=t.shape, dtype=other, rg=False, hidden=True)
    g.emit(Stmt("set_grad", target=t.name, args=[grad.name]), ["LEAF-13"], "GRAD_ASSIGN_DTYPE")
    return True


@error_move("NONLEAF_GRAD_ACCESS", clause="RETAIN-7", needs=("warnings",))
def nonleaf_grad_access(g: Any) -> bool:
    t = g.pick("non-leaf", lambda u: u.rg and not u.leaf and not u.retains) or _new_nonleaf(
        g, "neg", [], ["GRAPH-1"])
    return of("observe").draw(g, t, "grad")


# ---- the tables, read from the declarations ---------------------------------------------------
if set(DECLARED) != set(ERROR_ORDER) or len(DECLARED) != len(ERROR_ORDER):
    raise ImportError("error moves declared and ERROR_ORDER differ: "
                      f"{sorted(set(DECLARED) ^ set(ERROR_ORDER))}")
MOVES: dict[str, ErrorMove] = {k: DECLARED[k] for k in ERROR_ORDER}
# Error kind -> the capabilities its move needs.
ERROR_MOVES: dict[str, tuple[str, ...]] = {k: m.needs for k, m in MOVES.items()}
# Error kind -> the clause its failing statement exercises.
ERROR_CLAUSE: dict[str, str] = {k: m.clause for k, m in MOVES.items()}
# The moves drawn under no_grad; the others build graphs or need grad mode to raise.
NO_GRAD_ERRORS: tuple[str, ...] = tuple(k for k, m in MOVES.items() if m.no_grad_ok)
# A natural (not deliberate) error of these kinds is only left in a program when the engine
# has the capability; otherwise the generator avoids it.
NATURAL_ERROR_CAPS: dict[str, str] = {k: m.natural for k, m in MOVES.items() if m.natural}


@functools.cache
def _available(caps: frozenset[str], grad_enabled: bool, vocabulary: int) -> tuple[str, ...]:
    return tuple(k for k, m in MOVES.items() if caps.issuperset(m.needs)
                 and (grad_enabled or m.no_grad_ok) and m.since <= vocabulary)


def draw_error(g: Any) -> bool:
    """The "error" entry of the statement draw: one deliberate error move the capabilities
    and the grad mode allow."""
    kinds = _available(g.caps, g.grad_enabled, g.vocabulary)
    if not kinds:
        return False
    return MOVES[g.choice("error kind", kinds)].recipe(g)
