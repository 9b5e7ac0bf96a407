"""The deliberate error moves of custom Functions (spec/function.md), from generator vocabulary
19 where the engines declare `custom_function`: a backward that returns too few gradients
(FUNC-7) or one of the wrong shape (FUNC-8), a dirty leaf that requires grad (FUNC-11), and the
legacy call of a Function instance (FUNC-15). The Functions are rows of the catalogue
(conformance/lang/functions.py)."""
from __future__ import annotations

from typing import Any

from ..kinds import of
from ..kinds.function import DIRTY, OUT_OF_PLACE, emit_apply
from ..lang.functions import ROWS
from ..lang.program import Stmt
from .error_move import error_move

SINCE = 19


def _failing_pass(g: Any, fn: str, kind: str) -> bool:
    """y = F.<fn>.apply(...) on a tensor that requires grad, then a pass from y, which raises
    `kind` when it reaches y's node. y and its sum are never used again, so that no later pass
    reaches that node."""
    # a gradient of shape (n + 1,) is summed to a 0-d argument, or to (1,) (FUNC-8)
    y = emit_apply(g, ROWS[fn], g.rg_tensor("Function input", lambda u: u.shape not in (
        (), (1,))) if fn == "BadShape" else g.rg_tensor("Function input"))
    root = y if not y.shape else g.sum_of(y)
    g.emit_backward(root, [], retain=None, inputs=[], kind=kind)
    y.hidden = root.hidden = True
    return True


@error_move("FUNCTION_GRAD_COUNT", clause="FUNC-7", needs=("custom_function",), since=SINCE)
def function_grad_count(g: Any) -> bool:
    """TooFew: two tensor arguments, one gradient back."""
    return _failing_pass(g, "TooFew", "FUNCTION_GRAD_COUNT")


@error_move("FUNCTION_INVALID_GRADIENT", clause="FUNC-8", needs=("custom_function",),
            since=SINCE)
def function_invalid_gradient(g: Any) -> bool:
    """BadShape: a gradient of one element more than its argument has."""
    return _failing_pass(g, "BadShape", "FUNCTION_INVALID_GRADIENT")


@error_move("DIRTY_LEAF", clause="FUNC-11", needs=("custom_function", "inplace"), since=SINCE)
def dirty_leaf(g: Any) -> bool:
    """ScaleDirty on a fresh leaf that requires grad, with grad mode on. What the leaf holds
    after is open (UNSPEC-11): it is never used again."""
    t = g.make_leaf(rg=True, hidden=True)
    return of("dirty_function").draw(g, target=t, expect="DIRTY_LEAF")


@error_move("CUSTOM_VIEW_INPLACE", clause="FUNC-14", needs=("custom_function", "inplace"),
            since=SINCE)
def custom_view_inplace(g: Any) -> bool:
    """v = F.Identity.apply(a) for an a that requires grad and is no leaf (v is a view of a),
    then v.mul_(2) with grad mode on. It leaves both as they were; v is never used again."""
    a = g.pick("Function input", lambda u: u.is_float and u.rg and not u.leaf and
               u.base is None) or g.call1(g.make_leaf(rg=True), "mul", [2.0], {}, [])
    v = emit_apply(g, ROWS["Identity"], a)
    g.emit(Stmt("inplace", target=v.name, args=[2.0], params={"fn": "mul_", "kw": {}}),
           ["FUNC-14"], "CUSTOM_VIEW_INPLACE")
    v.hidden = True
    return True


@error_move("LEGACY_FUNCTION", clause="FUNC-15", needs=("custom_function",), no_grad_ok=True,
            since=SINCE)
def legacy_function(g: Any) -> bool:
    """F.<fn>()(x) for a Function of the catalogue: it records nothing and binds nothing."""
    # from vocabulary 21 the dirty Function only where the engine declares inplace, which its
    # statement kind needs (vocabularies 19 and 20 drew it regardless; kept as they were)
    dirty = (DIRTY[0],) if g.vocabulary < 21 or g.has("inplace") else ()
    fn = g.choice("legacy Function", (*OUT_OF_PLACE[:2], *dirty))
    row = ROWS[fn]
    t = g.pick("legacy Function input", lambda u: u.is_float and not u.inference) \
        or g.make_leaf()
    params = {"fn": fn, "legacy": True}
    if row.dirty:
        g.emit(Stmt("dirty_function", target=t.name, params=params), ["FUNC-15"],
               "LEGACY_FUNCTION")
    else:
        g.emit(Stmt("function", out=g.fresh(), target=t.name, params=params), ["FUNC-15"],
               "LEGACY_FUNCTION")
    return True
