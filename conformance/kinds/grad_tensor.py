"""Statements about the tensor a leaf's `.grad` holds (spec/grad.md): binding it to a name, and
asking whether `.grad` still is a named tensor. Drawn from generator vocabulary 21 where the
engine declares grad_tensor: GRAD-1 (the first .grad is a new tensor with no history), GRAD-3
(.grad is the tensor stored in it, read or assigned), GRAD-4 (a backward without create_graph
adds into that tensor); the observable grad_layout (kinds/observe.py) shows GRAD-2."""
from __future__ import annotations

from ..lang.program import Stmt
from ..model import Storage, T
from . import fields
from .registry import KINDS, Kind, kind


@kind
class GradRef(Kind):
    name = "grad_ref"
    caps = ("core", "grad_tensor")
    weight = 3
    since = 21
    views_open = True       # a first .grad may be a view of the gradient (UNSPEC-16)
    valued = True           # what target.grad held: "tensor", "None" or "non-leaf"
    doc = ("out = target.grad: the tensor target's .grad holds, itself (GRAD-3); records "
           "\"tensor\", or \"None\" or \"non-leaf\" when there is none to bind (out is then "
           "unbound: statements naming it are skipped)")

    def holds_grad(self, s):
        return [(s.target or "", s.out or "")]

    def unversioned(self, s, shapes):
        return True         # a .grad's version starts and moves by open amounts (UNSPEC-16)

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.name(s, path, "target")

    def observed(self, s):
        return s.target, "grad_ref"

    def run(self, x, s, ev, path):
        """Binds out only to a leaf's .grad that is a tensor (a retained non-leaf's may be
        replaced, UNSPEC-16); otherwise records which, as a value both engines are compared
        on, and leaves out unbound. (An error here would be OTHER on each side, and two OTHERs
        compare equal whatever raised them.)"""
        t = x.env[s.target]
        grad = x.e.get_grad(t) if x.e.is_leaf(t) else None
        if grad is None:
            ev.value = "None" if x.e.is_leaf(t) else "non-leaf"
            x.env.pop(s.out, None)
            return
        ev.value = "tensor"
        x.env[s.out] = grad

    def render(self, s, path):
        t = s.target
        return [f"show({f'[{path}] {t}.grad_ref'!r}, 'non-leaf' if not {t}.is_leaf else "
                f"'None' if {t}.grad is None else 'tensor')",
                f"{s.out} = {t}.grad"]

    def draw(self, g):
        """`h = x.grad` of a leaf whose .grad the spec fixes all of (T.grad_plain); then,
        sometimes, a write into it (which x.grad shows: GRAD-3) and a look at x.grad."""
        x = g.pick("bind .grad of", bindable)
        if x is None:
            return False
        held = self.bind(g, x)
        if g.boolean("write into the .grad", 30) and g.draw_on("inplace", held) is not None:
            KINDS["observe"].draw(g, x, "grad")
        return True

    def bind(self, g, x: T) -> T:
        """Emit `h = x.grad` of a leaf x that is bindable: the model of h."""
        if x.grad_mem is None:
            x.grad_mem = Storage()
        name = g.fresh()
        held = g.tensors[name] = T(name, x.shape, x.grad_dtype or x.dtype, False, True,
                                   x.grad_mem, origin="held_grad", grad_of=x,
                                   contiguous=x.contiguous and not x.expanded)
        g.emit(Stmt("grad_ref", out=name, target=x.name), ["GRAD-1", "GRAD-3"])
        return held


def bindable(u: T) -> bool:
    """A leaf whose .grad is a tensor of a known dtype that the spec fixes all of."""
    return (u.leaf and u.has_grad and u.grad_plain and u.is_float and not u.packed_grad
            and u.grad_dtype is not None and not u.hidden)


@kind
class GradIs(Kind):
    name = "grad_is"
    caps = ("core", "grad_tensor")
    weight = 2
    since = 21
    valued = True
    doc = ("record whether target.grad is args[0], the same tensor object (GRAD-3: on every "
           "read, and after a backward adds into it, GRAD-4)")

    def check(self, s, path):
        fields.name(s, path, "target")
        if len(s.args) != 1 or not (isinstance(s.args[0], str) and fields.is_name(s.args[0])):
            fields.fail(path, "args", f"must hold one tensor's name, got {s.args!r}")

    def observed(self, s):
        return s.target, "grad_is"

    def run(self, x, s, ev, path):
        ev.value = x.e.get_grad(x.env[s.target]) is x.env[s.args[0]]

    def render(self, s, path):
        t, h = s.target, s.args[0]
        return [f"show({f'[{path}] {t}.grad_is:{h}'!r}, {t}.grad is {h})"]

    def draw(self, g, h=None):
        """`x.grad is h` of a tensor h bound to x's .grad (given, or one of the live ones)."""
        h = h or g.pick("is .grad", lambda u: u.grad_of is not None and not u.grad_of.hidden)
        if h is None:
            return False
        x = h.grad_of
        cl = ["GRAD-3", "GRAD-4"] if x.grad_mem is h.storage and x.has_grad else [
            "GRAD-3"] + ([] if x.has_grad else ["LEAF-14"])
        g.emit(Stmt("grad_is", target=x.name, args=[h.name]), cl)
        return True
