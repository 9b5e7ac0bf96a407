"""Hook statements: tensor hooks, post-accumulate hooks, node hooks, and handle removal."""
from __future__ import annotations

from typing import Any

from ..lang.program import Stmt
from ..model import T, predict, reach
from ..model.tables import FACTORS, HOOK_BEHAVIOURS, NODE_HOOK_BEHAVIOURS
from . import fields
from .registry import KINDS, Kind, kind

# ---- the hooks registered on an engine; they log into the event of the statement that is
# running when they are called (x.log, conformance/judge/executor.py) ------------------------
# the behaviours whose return value the pass refuses (HOOK-5): drawn by error moves only
_REFUSED = ("wrong_shape", "wrong_dtype", "non_tensor")


def tensor_hook(x: Any, p: dict[str, Any], label: str):
    """A tensor hook: logs the gradient, then per params.behaviour returns None, the gradient
    scaled by params.factor, a tensor of another shape, a tensor of the other float dtype or a
    list (the last three refused by the pass: HOOK-5)."""
    e, behaviour = x.e, p.get("behaviour", "record")

    def hook(g):
        x.log(label, g)
        if behaviour == "scale":        # nothing to scale when no gradient came (None)
            return None if g is None else e.scale(g, float(p.get("factor", 2.0)))
        if behaviour == "wrong_shape":
            return e.wrong_shape(g)
        if behaviour == "wrong_dtype":
            return e.wrong_dtype(g)
        if behaviour == "non_tensor":
            return [1.0]
        return None
    return hook


def post_hook(x: Any, label: str, behaviour: str = "record"):
    """A post-accumulate-grad hook: logs the tensor's .grad; 'return' returns it (HOOK-13)."""
    def hook(t):
        g = x.e.get_grad(t)
        x.log(label, g)
        return g if behaviour == "return" else None     # 'return': HOOK-13 raises
    return hook


def node_hook(x: Any, p: dict[str, Any], label: str):
    """A grad_fn pre- or post-hook: logs the first gradient and with 'scale' scales it; 'extra'
    returns the tuple with one more entry and 'list' the gradients as a list, which the
    backward pass must refuse (HOOK-17: HOOK_WRONG_COUNT, HOOK_RETURNED_NON_TUPLE)."""
    e, behaviour = x.e, p.get("behaviour", "record")

    def hook(grads):
        grads = tuple(grads)
        first = grads[0] if grads else None
        x.log(label, first)
        if behaviour == "scale" and first is not None:
            return (e.scale(first, float(p.get("factor", 2.0))),) + grads[1:]
        if behaviour == "extra":
            return grads + (None,)
        if behaviour == "list":
            return list(grads)
        return None
    return hook


def _check_hook(s: Any, path: str, behaviours: tuple[str, ...]) -> None:
    fields.name(s, path, "out")
    fields.name(s, path, "target")
    fields.param(s, path, "behaviour", (str,), required=False, choices=behaviours)
    fields.label(s, path)
    fields.param(s, path, "factor", fields.NUMBER, required=False)


@kind
class Hook(Kind):
    name = "hook"
    param_keys = ("behaviour", "label", "factor")
    binds_handle = True
    weight = 6
    reweighted = ((3, 12),)      # vocabulary 3 (tests/generator_stats.py: programs per clause)
    doc = ("out = target.register_hook(h), h per params.behaviour: 'record' (log, return "
           "None), 'scale' (log, return grad * params.factor), 'wrong_shape' (log, return a "
           "tensor of another shape), 'wrong_dtype' (log, return zeros of grad's shape in the "
           "other float dtype), 'non_tensor' (log, return the list [1.0]); params.label names "
           "the hook in the log")
    caps = ("hooks",)

    def hooked_tensors(self, s):
        return [s.target]

    def hook_rewrites(self, s):
        return s.params.get("behaviour", "record") != "record"

    def check(self, s, path):
        _check_hook(s, path, ("record", "scale", "wrong_shape", "wrong_dtype", "non_tensor"))

    def run(self, x, s, ev, path):
        p = s.params
        x.env[s.out] = x.e.register_hook(x.env[s.target],
                                         tensor_hook(x, p, p.get("label") or s.out))

    def render(self, s, path):
        p = s.params
        label = p.get("label") or s.out
        b = p.get("behaviour", "record")
        fn = (f"scale({label!r}, {float(p.get('factor', 2.0))!r})" if b == "scale"
              else f"{b}({label!r})")
        return [f"{s.out} = {s.target}.register_hook({fn})"]

    def draw(self, g, behaviour=None, t=None):
        """Draw a tensor hook; `behaviour` and `t` fix what it does and where it goes."""
        t = t or g.pick("hook on", T.hookable)
        if t is None or t.node is None:
            return False
        behaviour = behaviour or g.weighted("hook behaviour", HOOK_BEHAVIOURS)
        name = g.fresh("h")
        params: dict[str, Any] = {"behaviour": behaviour, "label": name}
        if behaviour == "scale":
            params["factor"] = g.choice("factor", FACTORS)
        cl = ["HOOK-1", {"record": "HOOK-3", "scale": "HOOK-4"}.get(behaviour, "HOOK-5")]
        if t.node.hooks:
            cl.append("HOOK-2")
        if t.leaf:
            cl.append("HOOK-8")
        if t.retains:
            cl.append("RETAIN-5")
        t.node.hooks[name] = behaviour
        g.handles[name] = (t.node, False)
        g.emit(Stmt("hook", out=name, target=t.name, params=params), cl)
        if behaviour not in _REFUSED and g.boolean("another hook on it", 30):
            self.draw(g, None, t)      # several hooks on one tensor: their order (HOOK-2)
        return True


@kind
class PostHook(Kind):
    name = "post_hook"
    param_keys = ("behaviour", "label", "factor")
    binds_handle = True
    weight = 3
    doc = ("out = target.register_post_accumulate_grad_hook(h); h logs params.label and "
           "target.grad, then per params.behaviour: 'record' (default; returns None) or "
           "'return' (returns target.grad, which backward rejects: HOOK-13)")
    caps = ("post_accumulate_hooks",)

    def reads_history(self, s):      # (before it refuses a view, HOOK-12)
        return [s.target]

    def check(self, s, path):
        _check_hook(s, path, ("record", "return"))

    def grad_hook(self, s):
        return s.params.get("label") or s.out

    def run(self, x, s, ev, path):
        p = s.params
        x.env[s.out] = x.e.register_post_accumulate_grad_hook(
            x.env[s.target], post_hook(x, p.get("label") or s.out, p.get("behaviour", "record")))

    def render(self, s, path):
        returns = ", returns=True" if s.params.get("behaviour") == "return" else ""
        return [f"{s.out} = {s.target}.register_post_accumulate_grad_hook("
                f"post({(s.params.get('label') or s.out)!r}{returns}))"]

    def draw(self, g):
        t = g.pick("post hook on", lambda u: u.leaf and u.rg and u.node is not None
                   and not u.cut)
        if t is None or t.node is None:
            return False
        name = g.fresh("h")
        t.node.post_hooks.append(name)
        g.handles[name] = (t.node, True)
        g.emit(Stmt("post_hook", out=name, target=t.name, params={"label": name}),
               ["HOOK-13"])
        return True


@kind
class NodeHook(Kind):
    name = "node_hook"
    param_keys = ("kind", "behaviour", "label", "factor")
    binds_handle = True
    weight = 3
    doc = ("out = target.grad_fn.register_prehook(h) (params.kind 'pre') or "
           "target.grad_fn.register_hook(h) ('post'); h logs params.label and the first "
           "gradient (pre: grad_outputs[0], post: grad_inputs[0]) and per "
           "params.behaviour returns None ('record'), that tuple with its first "
           "gradient times params.factor ('scale'), with one more entry None ('extra') or as "
           "a list ('list')")
    caps = ("node_hooks", "grad_fn")

    def reads_history(self, s):
        return [s.target]

    def check(self, s, path):
        _check_hook(s, path, ("record", "scale", "extra", "list"))
        fields.param(s, path, "kind", (str,), required=False, choices=("pre", "post"))

    def run(self, x, s, ev, path):
        p = s.params
        x.env[s.out] = x.e.register_node_hook(x.env[s.target], p.get("kind", "pre"),
                                              node_hook(x, p, p.get("label") or s.out))

    def render(self, s, path):
        p, t = s.params, s.target
        behaviour = p.get("behaviour")
        extra = (f", {float(p.get('factor', 2.0))!r}" if behaviour == "scale" else
                 f", returns={behaviour!r}" if behaviour in ("extra", "list") else "")
        fn = f"node_hook({(p.get('label') or s.out)!r}{extra})"
        if p.get("kind", "pre") == "pre":
            return [f"{s.out} = {t}.grad_fn.register_prehook({fn})"]
        return [f"_hook = {fn}",
                f"{s.out} = {t}.grad_fn.register_hook(lambda gi, go, h=_hook: h(gi))"]

    def render_binds(self, s):
        return self.binds(s) + ["_hook"]

    def draw(self, g):
        t = g.pick("node hook on", lambda u: u.hookable() and not u.leaf and not u.stale)
        if t is None or t.node is None:
            return False
        kind = g.choice("node hook kind", ["pre", "post"])
        behaviour = g.weighted("node hook behaviour", NODE_HOOK_BEHAVIOURS)
        self.emit(g, t, kind, behaviour,
                  g.choice("factor", FACTORS) if behaviour == "scale" else None)
        return True

    def emit(self, g, t: T, kind: str, behaviour: str, factor: float | None = None) -> None:
        """Emit a node hook of `kind` ("pre" or "post") and `behaviour` on t's grad_fn."""
        name = g.fresh("h")
        params: dict[str, Any] = {"kind": kind, "behaviour": behaviour, "label": name}
        if factor is not None:
            params["factor"] = factor
        t.node.node_hooks += 1
        g.emit(Stmt("node_hook", out=name, target=t.name, params=params),
               ["HOOK-15", "GRAPH-3"])


@kind
class Remove(Kind):
    name = "remove"
    takes_handle = True
    weight = 2
    doc = "target.remove() where target is a hook handle"
    caps = ("hooks",)

    def check(self, s, path):
        fields.name(s, path, "target")

    def run(self, x, s, ev, path):
        x.e.remove_hook(x.env[s.target])

    def render(self, s, path):
        return [f"{s.target}.remove()"]

    def draw(self, g, name=None):
        """Draw a handle's removal; `name` fixes the handle."""
        names = list(g.handles)
        if not names:
            return False
        name = name or g.choice("remove", names)
        node, post = g.handles.pop(name)
        if post:
            node.post_hooks.remove(name)
            if name in node.returning:
                node.returning.remove(name)
        else:
            node.hooks.pop(name, None)
        g.emit(Stmt("remove", target=name), ["HOOK-6"])
        return True


def multi_hook(x: Any, label: str, mode: str):
    """A multi-grad hook's fn: logs each gradient it is given (mode 'all': one entry per
    tensor, None where there is none, HOOK-19; 'any': the one it gets, HOOK-20); returns None
    (what it returns is ignored)."""
    def hook(grads):
        for g in (grads if mode == "all" else [grads]):
            x.log(label, g)
    return hook


@kind
class MultiGradHook(Kind):
    name = "multi_grad_hook"
    param_keys = ("mode", "label")
    binds_handle = True
    weight = 6
    since = 14
    reweighted = ((19, 7),)     # vocabulary 19's custom Functions share a program's statements
    doc = ("out = torch.autograd.graph.register_multi_grad_hook(args, fn, mode=params.mode): "
           "args name the tensors; params.mode 'all' (fn logs params.label and each gradient, "
           "None where there is none) or 'any' (fn logs the one gradient it gets)")
    caps = ("multi_grad_hooks", "hooks")

    def hooked_tensors(self, s):     # mode any: Tensor.register_hook on each (UNSPEC-17)
        return [a for a in s.args if isinstance(a, str)] if s.params.get("mode") == "any" \
            else []

    def reads_history(self, s):      # mode all reads each grad_fn first
        return [a for a in s.args if isinstance(a, str)] if s.params.get("mode") != "any" \
            else []

    def check(self, s, path):
        fields.name(s, path, "out")
        if s.target is not None:
            fields.fail(path, "target", "must be absent: args name the tensors")
        if not s.args or not all(isinstance(a, str) and fields.is_name(a) for a in s.args):
            fields.fail(path, "args", f"must name one or more tensors, got {s.args!r}")
        fields.param(s, path, "mode", (str,), choices=("all", "any"))
        fields.label(s, path)

    def hook_variant(self, s):
        return s.params.get("mode", "all")

    def run(self, x, s, ev, path):
        p = s.params
        x.env[s.out] = x.e.register_multi_grad_hook(
            [x.env[a] for a in s.args], multi_hook(x, p.get("label") or s.out, p["mode"]),
            p["mode"])

    def render(self, s, path):
        label, mode = s.params.get("label") or s.out, s.params["mode"]
        tensors = ", ".join(s.args) + ("," if len(s.args) == 1 else "")
        return [f"{s.out} = torch.autograd.graph.register_multi_grad_hook(({tensors}), "
                f"multi({label!r}, {mode!r}), mode={mode!r})"]

    def draw(self, g):
        """One multi-grad hook of each mode or both, on up to three tensors that require grad
        (an 'any' hook sometimes also on one that does not), one backward pass or two from a
        result computed from one of them, then their removal: so that no later pass starts
        from one of its tensors or is an autograd.grad with a leaf of them as an input
        (UNSPEC-14). The passes carry the hooks' clauses too."""
        if g.depth or not g.grad_enabled:     # its passes need a graph: none in a block
            return False
        # from vocabulary 15 never an inference tensor: torch 2.13 fails on one that requires
        # grad (its node is none), and undirected draws leave them alone (gen/inference.py);
        # vocabulary 14 drew them, a false divergence in 2 of seeds 0..20,000
        fixed = g.vocabulary >= 15
        cands = g.live(lambda u: u.hookable() and not u.stale and not (fixed and u.inference))
        if len(cands) < 2:
            return False
        first = g.choice("multi hook on", cands)
        tensors = [first] + [g.choice("multi hook also on", cands)
                             for _ in range(g.integer("more tensors", 1, 2))]
        tensors = list(dict.fromkeys(tensors))
        y = g.call1(first, "mul", [2.0], {}, [])        # a root that is none of the tensors
        y = KINDS["call"].join(g, y) or y
        if predict(reach([y.node])) is not None:       # its pass would raise: no hook
            return True
        # one hook of each mode, half the time on the same tensors, in either order
        modes = g.choice("multi hook modes", [["all"], ["any"], ["all", "any"], ["any", "all"]])
        names = []
        for mode in modes:
            on = list(tensors)
            if mode == "any" and g.boolean("a tensor that does not require grad", 30):
                off = g.pick("ignored by the any hook",
                         lambda u: not u.rg and u.is_float and not (fixed and u.inference))
                if off is not None:
                    on.insert(g.integer("at", 0, len(on)), off)
            names.append(g.fresh("h"))
            g.emit(Stmt("multi_grad_hook", out=names[-1], args=[t.name for t in on],
                        params={"mode": mode, "label": names[-1]}),
                   ["HOOK-19" if mode == "all" else "HOOK-20", "HOOK-1"])
        retain = True if "retain_graph" in g.caps else None   # a second pass needs it kept
        clauses = sorted({"HOOK-19" if m == "all" else "HOOK-20" for m in modes})
        for _ in range(g.integer("passes", 1, 2) if retain else 1):
            g.emit_backward(g.sum_of(y) if y.shape else y, [], retain)
            if fixed:
                g.out[-1].clauses = g.tags([*g.out[-1].clauses, *clauses])
        for name in names:
            g.emit(Stmt("remove", target=name), ["HOOK-6"])
        return True
