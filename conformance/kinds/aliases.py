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
    aliases = shares_version = True

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
    aliases = True                      # its own version counter (VER-6)

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.name(s, path, "target")

    def run(self, x, s, ev, path):
        x.env[s.out] = x.e.data(x.env[s.target])

    def render(self, s, path):
        return [f"{s.out} = {s.target}.data"]

    def draw(self, g):
        return Detach.draw(self, g, data=True)
