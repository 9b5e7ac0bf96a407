"""Statements that set a tensor's autograd flags: requires_grad_, detach_(), retain_grad,
.grad =."""
from __future__ import annotations

from ..lang.program import Stmt
from ..model import accumulator, detach_in_place, every_node, owns_memory
from . import fields, source
from .registry import KINDS, Kind, kind


def check_optional_operand(s, path):
    """args is empty or holds one name or None (a gradient)."""
    if len(s.args) > 1:
        fields.fail(path, "args", f"must hold at most one operand, got {s.args!r}")
    if s.args and not isinstance(s.args[0], (str, type(None))):
        fields.fail(path, "args[0]", f"must be a name or null, got {s.args[0]!r}")


@kind
class RequiresGrad(Kind):
    name = "requires_grad_"
    param_keys = ("value", "setter")
    optional_caps = ("requires_grad_setter",)
    weight = 2
    doc = ("target.requires_grad_(params.value), or with params.setter the attribute setter "
           "target.requires_grad = params.value")

    def needs(self, s):
        return list(self.caps) + (["requires_grad_setter"] if s.params.get("setter") else [])

    def check(self, s, path):
        fields.name(s, path, "target")
        fields.param(s, path, "value", (bool,), required=False)
        fields.param(s, path, "setter", (bool,), required=False)

    def run(self, x, s, ev, path):
        value = bool(s.params.get("value", True))
        if s.params.get("setter"):
            x.e.set_requires_grad(x.env[s.target], value)
        else:
            x.e.requires_grad_(x.env[s.target], value)

    def render(self, s, path):
        value = bool(s.params.get("value", True))
        if s.params.get("setter"):
            return [f"{s.target}.requires_grad = {value!r}"]
        return [f"{s.target}.requires_grad_({value!r})"]

    def draw(self, g):
        t = g.pick("requires_grad_", lambda u: u.leaf and u.is_float and u.base is None
                   and not u.views)
        if t is None:
            return False
        self.emit(g, t, not t.rg, setter=g.draw_setter())
        return True

    def emit(self, g, t, value: bool, setter: bool = False) -> None:
        """Emit t.requires_grad_(value), or the setter, on a leaf and update the model."""
        if value:
            # torch keeps the accumulator old graphs hold: they accumulate into t again
            t.rg, t.node = True, t.old_node or accumulator()
            t.node.frozen, t.old_node = False, None
        else:
            # old graphs keep t's accumulator but write no .grad (LEAF-16); an in-place
            # write of a value that requires grad makes them raise (INPLACE-15)
            if t.node is not None:
                t.node.frozen, t.old_node = True, t.node
            t.rg, t.node = False, None
        params = {"value": value, **({"setter": True} if setter else {})}
        g.emit(Stmt("requires_grad_", target=t.name, params=params),
               ["LEAF-11", "LEAF-2"] + (["LEAF-16"] if t.old_node is not None else []))


@kind
class DetachInplace(Kind):
    name = "detach_"
    caps = ("core", "detach_inplace")
    weight = 3
    since = 20
    doc = ("target.detach_(): outside inference mode target stops requiring grad and becomes "
           "a leaf, its version unchanged; refused on a view (DETACH_VIEW_INPLACE)")

    def detaches(self, s):
        return [s.target] if s.target else []

    def check(self, s, path):
        fields.name(s, path, "target")

    def run(self, x, s, ev, path):
        x.e.detach_(x.env[s.target])

    def render(self, s, path):
        return [f"{s.target}.detach_()"]

    def draw(self, g):
        """detach_() inside inference mode, where it changes nothing (VER-16, VIEW-8), on any
        tensor made outside it; outside, on a tensor that is no view, owns its memory and was
        never written (model/inplace.py detach_in_place) and retains no grad and has no tensor
        hooks (whose old graph still fills its .grad or calls them, which the model would not
        follow)."""
        if g.inference:
            t = g.pick("detach_ in inference mode", lambda u: not u.inference)
            if t is None:
                return False
            g.emit(Stmt("detach_", target=t.name), ["VIEW-8" if t.base is not None
                                                      else "VER-16"])
            return True
        live = g.tensors.values()
        # no tensor hooks either: torch keeps them, and a leaf it later makes of the tensor with
        # requires_grad_(True) calls them, which the model, keeping them on the old node, misses
        t = g.pick("detach_", lambda u: not u.retains and not u.cut and u.storage.version == 0
                   and not (u.node is not None and u.node.hooks) and owns_memory(u, live))
        if t is None:
            return False
        cl = detach_in_place(t, every_node(live) if not t.leaf else ())
        g.emit(Stmt("detach_", target=t.name), cl)
        return True


@kind
class SetGradDtype(Kind):
    name = "set_grad_dtype"
    param_keys = ("dtype",)
    caps = ("core", "grad_dtype")
    weight = 4
    since = 16
    doc = "target.grad_dtype = params.dtype ('float32', 'float64' or null)"

    def grad_dtypes_set(self, s):
        return [(s.target, s.params.get("dtype"))] if s.target else []

    def check(self, s, path):
        fields.name(s, path, "target")
        fields.param(s, path, "dtype", (str, type(None)), choices=("float32", "float64"))

    def run(self, x, s, ev, path):
        x.e.set_grad_dtype(x.env[s.target], s.params["dtype"])

    def render(self, s, path):
        dtype = s.params["dtype"]
        return [f"{s.target}.grad_dtype = {'None' if dtype is None else 'torch.' + dtype}"]

    def draw(self, g):
        """Set a float leaf's grad_dtype (GRAD-7): a dtype only while it has no .grad, which
        torch 2.13 otherwise refuses with an error of no spec kind; None at any time."""
        # a leaf made as one: the model may call a result of a no_grad view a leaf, which
        # torch refuses (and warns as if .grad were read, NONLEAF_GRAD_ACCESS)
        t = g.pick("set grad_dtype of", lambda u: u.leaf and u.is_float and not u.inference
                   and u.origin == "leaf" and u.base is None)
        if t is None:
            return False
        other = "float32" if t.dtype == "float64" else "float64"   # the one that casts
        t.grad_dtype = None if t.has_grad else g.weighted(
            "grad_dtype", ((None, 2), (other, 3), (t.dtype, 1)))
        g.emit(Stmt("set_grad_dtype", target=t.name, params={"dtype": t.grad_dtype}),
               ["GRAD-7"] + (["LEAF-9"] if t.rg else []))
        return KINDS["observe"].draw(g, t, "grad_dtype")


@kind
class RetainGrad(Kind):
    name = "retain_grad"
    weight = 4
    reweighted = ((3, 8),)      # vocabulary 3 (tests/generator_stats.py: programs per clause)
    doc = "target.retain_grad()"
    caps = ("retain_grad",)
    retains_target = True

    def reads_history(self, s):
        return [s.target]

    def check(self, s, path):
        fields.name(s, path, "target")

    def run(self, x, s, ev, path):
        x.e.retain_grad(x.env[s.target])

    def render(self, s, path):
        return [f"{s.target}.retain_grad()"]

    def draw(self, g):
        t = g.pick("retain_grad", lambda u: u.rg)
        if t is None:
            return False
        cl = ["RETAIN-3"] if t.leaf else ["RETAIN-1"]
        if t.node is not None and t.node.hooks:
            cl.append("RETAIN-5")
        if not t.leaf:
            t.retains = True
        g.emit(Stmt("retain_grad", target=t.name), cl)
        return True


@kind
class SetGrad(Kind):
    name = "set_grad"
    weight = 2
    doc = "target.grad = args[0] (a name, or None)"
    assigns_grad = True

    def holds_grad(self, s):
        return [(s.target or "", s.args[0])] if s.args and isinstance(s.args[0], str) else []

    def check(self, s, path):
        fields.name(s, path, "target")
        check_optional_operand(s, path)

    def run(self, x, s, ev, path):
        x.e.set_grad(x.env[s.target], x.val(s.args[0]) if s.args and s.args[0] is not None
                     else None)

    def render(self, s, path):
        value = source.arg(s.args[0]) if s.args and s.args[0] is not None else None
        return [f"{s.target}.grad = {value}"]

    def draw(self, g, none=None, keep=None):
        """Draw a .grad assignment; `none` fixes whether None is assigned, `keep` whether the
        program keeps using the tensor it assigns."""
        t = g.pick("set .grad of", lambda u: u.leaf and u.rg and u.is_float)
        if t is None:
            return False
        if none if none is not None else g.boolean("grad None", 30):
            t.has_grad = t.grad_plain = t.grad_node_known = False
            t.grad_mem = None
            g.emit(Stmt("set_grad", target=t.name, args=[None]), ["LEAF-14"])
            return True
        # vocabulary 21: sometimes the program keeps the tensor it assigns, which is the .grad
        # from then on (GRAD-3) and which a backward adds into (GRAD-4)
        kept = keep if keep is not None else g.vocabulary >= 21 and g.has("grad_tensor") and \
            g.boolean("keep the .grad", 50)
        # a set grad_dtype is the dtype an assigned .grad must have (LEAF-13)
        dtype = t.grad_dtype if t.grad_dtype else t.dtype
        grad = g.make_leaf(shape=t.shape, dtype=dtype, rg=False, hidden=not kept)
        t.has_grad = t.grad_plain = True
        t.grad_node_known = False
        t.grad_mem, grad.grad_of = grad.storage, t
        if kept:                        # a backward moves its version by an open amount
            grad.origin = "assigned_grad"
        g.emit(Stmt("set_grad", target=t.name, args=[grad.name]),
               ["LEAF-12", "LEAF-13"] + (["GRAD-3"] if kept else []))
        return True
