"""Statements that alias a tensor's memory without making a view: detach() and .data."""
from __future__ import annotations

from ..lang.program import Stmt
from ..model import Storage, T
from . import fields
from .registry import Kind, kind


@kind
class Detach(Kind):
    name = "detach"
    weight = 3
    reweighted = ((3, 5),)      # vocabulary 3 (tests/generator_stats.py: programs per clause)
    doc = "out = target.detach()"
    aliases = shares_version = plain_alias = True

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.name(s, path, "target")

    def run(self, x, s, ev, path):
        x.env[s.out] = x.e.detach(x.env[s.target])

    def render(self, s, path):
        return [f"{s.out} = {s.target}.detach()"]

    def draw(self, g, data=False):
        """Draw out = a.detach(), or with `data` out = a.data (its own storage in the model)."""
        a = g.pick("detach", lambda t: t.is_float)
        if a is None:
            return False
        name = g.fresh()
        g.tensors[name] = T(name, a.shape, a.dtype, False, True,
                            Storage() if data else a.storage,
                            origin="data" if data else "detach", expanded=a.expanded,
                            contiguous=a.contiguous, shares=a.memory(), exact=a.exact_now(),
                            at_kink=a.at_kink)
        g.emit(Stmt("data" if data else "detach", out=name, target=a.name),
               ["VER-6", "INPLACE-5"] if data else ["LEAF-4", "VER-5"])
        return True


@kind
class Data(Kind):
    name = "data"
    weight = 2
    doc = "out = target.data"
    aliases = plain_alias = True        # its own version counter (VER-6)

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.name(s, path, "target")

    def run(self, x, s, ev, path):
        x.env[s.out] = x.e.data(x.env[s.target])

    def render(self, s, path):
        return [f"{s.out} = {s.target}.data"]

    def draw(self, g):
        return Detach.draw(self, g, data=True)


@kind
class BaseIs(Kind):
    name = "base_is"
    caps = ("core", "view_base")
    since = 21          # weight 0: a program ends with them (emit_end), no draw is spent on them
    valued = True
    doc = ("record whether target._base is args[0] (a name), or is None (args[0] null): a view's "
           "base is the tensor the first view op of its chain was applied to (VIEW-1)")

    def check(self, s, path):
        fields.name(s, path, "target")
        if len(s.args) != 1 or not (s.args[0] is None or isinstance(s.args[0], str)
                                    and fields.is_name(s.args[0])):
            fields.fail(path, "args", f"must hold one tensor's name or null, got {s.args!r}")

    def observed(self, s):
        return s.target, "base_is"

    def run(self, x, s, ev, path):
        base = x.e.base(x.env[s.target])
        ev.value = base is None if s.args[0] is None else base is x.env[s.args[0]]

    def render(self, s, path):
        t, b = s.target, s.args[0]
        return [f"show({f'[{path}] {t}.base_is:{b}'!r}, {t}._base is {b})"]

    def emit_end(self, g) -> None:
        """Before the closing sweep (vocabulary 21, where the engine declares view_base):
        `t._base is b` of the first two live views the model knows the base of, and `d._base
        is None` of the first detach(), with no draw (so the program before them is what it
        would be without them). Never of an inference tensor or a view made in
        inference mode, nor of what a reshape made or views (a reshape may copy), nor of views of
        a gradient (which may itself be a view, UNSPEC-3)."""
        if g.vocabulary < self.since or not g.has(*self.caps):
            return
        known = [u for u in g.live() if not u.inference and not u.reshaped]
        views = [u for u in known if u.base is not None and not u.base.hidden
                 and u.base.origin not in ("grad", "held_grad")][:2]  # may be views: UNSPEC-3
        detached = [u for u in known if u.base is None and u.origin == "detach"][:1]
        for t in views + detached:
            g.emit(Stmt("base_is", target=t.name, args=[t.base.name if t.base else None]),
                   ["VIEW-1"])
