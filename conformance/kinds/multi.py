"""The views that come several at once (spec/view.md, VIEW-6, VIEW-9): `split`, `chunk` and
`unbind`, one statement binding every output, drawn from generator vocabulary 12 where the
engine declares `multi_views`. Their outputs share one node, and none may be written in place
while recorded, nor used once their base was written (VIEW-7): the model never writes them and
hides them after a write to their memory (model.hide_refused_views)."""
from __future__ import annotations

import functools
from typing import Any

from ..lang.program import Stmt
from ..model import part_contiguous
from . import fields
from .copying import viewable
from .registry import Kind, kind

# fn -> the settings of params.kw it takes (all required)
SETTINGS = {"split": ("size", "dim"), "chunk": ("chunks", "dim"), "unbind": ("dim",)}
# dims longer than this are not unbound or split by 1 (a tensor of 272 elements has them)
_MOST_OUTPUTS = 4


@kind
class MultiView(Kind):
    name = "multi_view"
    records_node = True
    param_keys = ("fn", "kw", "outs")
    caps = ("view_ops", "multi_views")     # view_ops: implied by views
    weight = 3
    since = 12
    aliases = shares_version = differentiable_view = guarded_view = True
    doc = ("params.outs = target.fn(..., dim=params.kw.dim): fn 'split' (kw size: an int or a "
           "list of ints), 'chunk' (kw chunks) or 'unbind'; one name per output, in order")

    def check(self, s, path):
        fields.name(s, path, "target")
        fn = fields.param(s, path, "fn", (str,), choices=tuple(SETTINGS))
        kw = fields.kw(s, path, required=SETTINGS[fn], allowed=SETTINGS[fn])
        for key, v in kw.items():
            whole = isinstance(v, int) and not isinstance(v, bool)
            if not (whole or (key == "size" and isinstance(v, list) and v)):
                what = "an int or a list of ints" if key == "size" else "an int"
                fields.fail(path, f"params.kw.{key}", f"must be {what}, got {v!r}")
        outs = fields.names(s, path, "outs") or []      # each one a name (fields.atom)
        if not outs or len(set(outs)) != len(outs):
            fields.fail(path, "params.outs", f"must name each output once, got {outs!r}")

    def binds(self, s):
        return list(s.params.get("outs") or [])

    def run(self, x, s, ev, path):
        outs = list(x.e.view_many(x.env[s.target], s.params["fn"], s.params.get("kw", {})))
        names = s.params["outs"]
        if len(outs) != len(names):     # the oracle makes as many as the program names
            raise RuntimeError(f"{s.params['fn']} made {len(outs)} outputs, not {len(names)}")
        for n, t in zip(names, outs, strict=True):
            x.env[n] = t

    def render(self, s, path):
        p = s.params
        kw, names = p.get("kw", {}), p["outs"]
        first = {"split": [kw.get("size")], "chunk": [kw.get("chunks")], "unbind": []}[p["fn"]]
        args = ", ".join([*(repr(a) for a in first), f"dim={kw.get('dim')!r}"])
        lhs = ", ".join(names) + ("," if len(names) == 1 else "")
        return [f"{lhs} = {s.target}.{p['fn']}({args})"]

    def draw(self, g):
        a = g.pick("split of", lambda t: t.is_float and t.ndim >= 1 and viewable(g, t))
        if a is None:
            return False
        fn, kw, pieces = g.choice("multi view", multi_view_options(a.shape))
        d = kw["dim"] % len(a.shape)
        outs = []
        for start, length in pieces:
            part = ("narrow", {"dim": d, "start": start, "length": length}) if fn != "unbind" \
                else ("select", {"dim": d, "index": start})
            shape = (a.shape[:d] + (length,) + a.shape[d + 1:] if fn != "unbind"
                     else a.shape[:d] + a.shape[d + 1:])
            t = g.add_view(a, shape, not part_contiguous(*part, a.shape), False)
            t.multi_view = True
            outs.append(t)
        g.emit(Stmt("multi_view", target=a.name,
                    params={"fn": fn, "kw": dict(kw), "outs": [t.name for t in outs]}),
               ["GRAPH-10", "VIEW-6", "VIEW-9"] + (["GRAPH-1"] if outs[0].rg else []))
        return True


MultiOption = tuple[str, dict[str, Any], tuple[tuple[int, int], ...]]


@functools.cache
def multi_view_options(shape: tuple[int, ...]) -> tuple[MultiOption, ...]:
    """(fn, kw, the (start, length) of each output along the dim) of every split, chunk and
    unbind the generator draws from, by a dim counted from either end."""
    opts: list[MultiOption] = []
    for d, n in enumerate(shape):
        dim = d if d % 2 == 0 else d - len(shape)
        if n <= _MOST_OUTPUTS:
            opts.append(("split", {"size": 1, "dim": dim}, tuple((i, 1) for i in range(n))))
            opts.append(("unbind", {"dim": dim}, tuple((i, 1) for i in range(n))))
        if n >= 2:
            k = (n + 1) // 2      # chunk(2) and split(k): the first part the larger
            halves = ((0, k), (k, n - k))
            opts.append(("split", {"size": k, "dim": dim}, halves))
            opts.append(("chunk", {"chunks": 2, "dim": dim}, halves))
            opts.append(("split", {"size": [1, n - 1], "dim": dim}, ((0, 1), (1, n - 1))))
    return tuple(opts)
