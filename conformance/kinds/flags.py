"""Statements that set a tensor's autograd flags: requires_grad_, retain_grad, .grad =."""
from __future__ import annotations

from ..lang.program import Stmt
from . import fields, source
from .registry import Kind, kind


def check_optional_operand(s, path):
    """args is empty or holds one name or None (a gradient)."""
    if len(s.args) > 1:
        fields.fail(path, "args", f"must hold at most one operand, got {s.args!r}")
    if s.args and not isinstance(s.args[0], (str, type(None))):
        fields.fail(path, "args[0]", f"must be a name or null, got {s.args[0]!r}")


@kind
class RequiresGrad(Kind):
    name = "requires_grad_"
    param_keys = ("value",)
    weight = 2
    doc = "target.requires_grad_(params.value)"

    def check(self, s, path):
        fields.name(s, path, "target")
        fields.param(s, path, "value", (bool,), required=False)

    def run(self, x, s, ev, path):
        x.e.requires_grad_(x.env[s.target], bool(s.params.get("value", True)))

    def render(self, s, path):
        return [f"{s.target}.requires_grad_({bool(s.params.get('value', True))!r})"]

    def draw(self, g):
        t = g.pick("requires_grad_", lambda u: u.leaf and u.is_float and u.base is None
                   and not u.views)
        if t is None:
            return False
        g.set_requires_grad(t, not t.rg)
        return True


@kind
class RetainGrad(Kind):
    name = "retain_grad"
    weight = 4
    reweighted = ((3, 8),)      # vocabulary 3 (tests/generator_stats.py: programs per clause)
    doc = "target.retain_grad()"
    caps = ("retain_grad",)

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

    def stored_grads(self, s):
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

    def draw(self, g, none=None):
        """Draw a .grad assignment; `none` fixes whether None is assigned."""
        t = g.pick("set .grad of", lambda u: u.leaf and u.rg and u.is_float)
        if t is None:
            return False
        if none if none is not None else g.boolean("grad None", 30):
            t.has_grad = False
            g.emit(Stmt("set_grad", target=t.name, args=[None]), ["LEAF-14"])
            return True
        grad = g.make_leaf(shape=t.shape, dtype=t.dtype, rg=False, hidden=True)
        t.has_grad = True
        g.emit(Stmt("set_grad", target=t.name, args=[grad.name]), ["LEAF-12", "LEAF-13"])
        return True
