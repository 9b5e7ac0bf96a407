"""Backward-like statements: tensor.backward, autograd.backward and autograd.grad.

Each takes an optional params.create_graph (DOUBLE-1), absent or False for a plain pass, drawn
from vocabulary 5 on autograd.grad (Grad.emit_recorded, gen/higher.py) and tensor.backward."""
from __future__ import annotations

from ..lang.program import Stmt
from ..lang.trace import plain
from ..model import Node, Storage, T, captured, leaves_reached, needed, numel, predict, reach
from ..model.graph import carried
from ..model.tables import SHAPES
from . import fields, source
from .flags import check_optional_operand
from .registry import KINDS, Kind, kind

FLAG, OPERAND, OPTIONAL = (bool, type(None)), (str, int, float, type(None)), fields.OPTIONAL_NAME


def _done(path: str) -> list[str]:
    return [f"print({f'[{path}] backward done'!r})"]


def _create_graph_kw(s) -> dict[str, bool]:
    """create_graph=True only when set: engines predating the field are called as before."""
    return {"create_graph": True} if s.params.get("create_graph") else {}


def _widest(g, cands: list[T]) -> list[T]:
    """Vocabulary 3: mostly the candidates whose graphs join two leaves or more (the
    widest when none does), so that backward passes join several; all of them otherwise."""
    if g.vocabulary < 3 or len(cands) < 2 or not g.boolean("widest root", 75):
        return cands
    counts = [leaves_reached(u) for u in cands]
    least = min(2, max(counts))
    return [u for u, n in zip(cands, counts, strict=True) if n >= least]


def joined(g, t: T) -> T:
    """Vocabulary 3: a root whose graph reaches fewer than two leaves (sometimes three) is
    mostly first joined with other graphs (binary ops with tensors reaching other leaves),
    as long as that raises nothing new."""
    if g.vocabulary < 3:
        return t
    want = 3 if g.boolean("three leaves", 35) else 2
    if leaves_reached(t) >= want or not g.boolean("join before backward", 70):
        return t
    before = predict(reach([t.node]))
    while leaves_reached(t) < want:
        joined = KINDS["call"].join(g, t)
        if joined is None or joined.node is None or predict(reach([joined.node])) != before:
            break
        t = joined
    return t


@kind
class Backward(Kind):
    name = "backward"
    param_keys = ("retain_graph", "inputs", "create_graph")
    ends_segment = backward_pass = fills_grads = True
    weight = 11
    doc = ("target.backward(gradient=args[0] or None, retain_graph=params.retain_graph, "
           "inputs=params.inputs, absent or None for none; [] raises, create_graph="
           "params.create_graph); params.inputs needs the capability backward_inputs")

    def refs(self, s):
        return super().refs(s) + list(s.params.get("inputs") or [])

    def stored_grads(self, s):
        return [(s.target or "", s.args[0])] if s.args and isinstance(s.args[0], str) else []

    def needs(self, s):
        extra = ["backward_inputs"] if s.params.get("inputs") is not None else []
        return list(self.caps) + extra

    def check(self, s, path):
        fields.name(s, path, "target")
        check_optional_operand(s, path)
        fields.param(s, path, "retain_graph", FLAG, required=False)
        fields.names(s, path, "inputs", required=False, nullable=True)
        fields.param(s, path, "create_graph", (bool,), required=False)

    def run(self, x, s, ev, path):
        env, p = x.env, s.params
        grad = x.val(s.args[0]) if s.args and s.args[0] is not None else None
        inputs = p.get("inputs")
        x.e.backward(env[s.target], grad, p.get("retain_graph"),  # inputs=[] is an error to keep
                     [env[n] for n in inputs] if inputs is not None else None,
                     **_create_graph_kw(s))

    def render(self, s, path):
        p, kw = s.params, []
        if s.args and s.args[0] is not None:
            kw.append(f"gradient={source.arg(s.args[0])}")
        if p.get("retain_graph") is not None:
            kw.append(f"retain_graph={p['retain_graph']!r}")
        if p.get("inputs") is not None:
            kw.append(f"inputs=[{', '.join(p['inputs'])}]")
        if p.get("create_graph"):
            kw.append("create_graph=True")
        return [f"{s.target}.backward({', '.join(kw)})"]

    def render_done(self, s, path):
        return _done(path)

    def draw(self, g):
        cands = _roots(g)
        raises = [predict(reach([u.node])) for u in cands]
        valid = [u for u, r in zip(cands, raises, strict=True) if r is None]
        ok = [u for u, r in zip(cands, raises, strict=True) if g.ok_kind(r)]
        if valid and (len(valid) == len(ok) or g.boolean("valid backward", 85)):
            ok = valid
        if not ok:
            return False
        t = joined(g, g.choice("backward of", _widest(g, ok)))
        # vocabulary 5: sometimes create_graph, whose .grad is recorded (DOUBLE-3)
        cg = g.vocabulary >= 5 and g.has("create_graph") and g.boolean("create_graph", 20)
        if not t.shape:
            return g.emit_backward(t, [], create_graph=cg)
        if not g.grad_enabled or g.boolean("give gradient", 50):
            # hidden: a leaf's .grad may alias the gradient tensor itself (UNSPEC-3)
            return g.emit_backward(t, [g.const(t.shape, t.dtype)], create_graph=cg)
        return g.emit_backward(g.sum_of(t), [], create_graph=cg)


@kind
class BackwardMany(Kind):
    name = "backward_many"
    param_keys = ("tensors", "grad_tensors", "retain_graph", "create_graph")
    ends_segment = backward_pass = fills_grads = True
    weight = 3
    doc = ("autograd.backward(params.tensors, grad_tensors=params.grad_tensors (a "
           "list of names or None, or None), retain_graph=params.retain_graph, "
           "create_graph=params.create_graph)")

    def refs(self, s):
        p = s.params
        return (super().refs(s) + list(p.get("tensors") or [])
                + [g for g in (p.get("grad_tensors") or []) if isinstance(g, str)])

    def hook_order_open(self, s):
        return len(s.params.get("tensors") or []) >= 3      # UNSPEC-7: leaves among them

    def stored_grads(self, s):
        p = s.params
        return [(root, gt) for root, gt in zip(p.get("tensors") or [],
                                               p.get("grad_tensors") or [], strict=False)
                if isinstance(gt, str)]

    def check(self, s, path):
        fields.names(s, path, "tensors")
        fields.names(s, path, "grad_tensors", required=False, nullable=True, items=OPERAND)
        fields.param(s, path, "retain_graph", FLAG, required=False)
        fields.param(s, path, "create_graph", (bool,), required=False)

    def run(self, x, s, ev, path):
        env, p = x.env, s.params
        gts = p.get("grad_tensors")
        x.e.autograd_backward([env[n] for n in p["tensors"]],
                              [x.val(g) if g is not None else None for g in gts]
                              if gts is not None else None, p.get("retain_graph"),
                              **_create_graph_kw(s))

    def render(self, s, path):
        p, kw = s.params, ""
        gts = p.get("grad_tensors")
        if gts is not None:
            kw += f", grad_tensors={source.names(gts)}"
        if p.get("retain_graph") is not None:
            kw += f", retain_graph={p['retain_graph']!r}"
        if p.get("create_graph"):
            kw += ", create_graph=True"
        return [f"torch.autograd.backward([{', '.join(p['tensors'])}]{kw})"]

    def render_done(self, s, path):
        return _done(path)

    def draw(self, g):
        """autograd.backward on two tensors at once (API-12)."""
        cands = _roots(g)
        if len(cands) < 2:
            return False
        a = g.choice("backward tensor", cands)
        b = g.choice("backward tensor 2", [u for u in cands if u is not a])
        nodes = reach([a.node, b.node])
        predicted = predict(nodes)
        if not g.ok_kind(predicted) or (predicted and g.boolean("valid backward", 85)):
            return False
        gts = [None if not u.shape else g.const(u.shape, u.dtype) for u in (a, b)]
        retain = g.draw_retain()
        cl = ["API-12"] + g.backward_clauses(nodes, predicted)
        cl += ["FREE-2"] if retain else ["FREE-1"]
        if any(gts):
            cl.append("API-2")
        g.emit(Stmt("backward_many", params={
            "tensors": [a.name, b.name], "grad_tensors": gts if any(gts) else None,
            "retain_graph": retain}), cl, predicted)
        g.after_backward(nodes, retain, None) if predicted is None else g.grads_open()
        return True


@kind
class Grad(Kind):
    name = "grad"
    param_keys = ("outputs", "inputs", "grad_outputs", "retain_graph", "allow_unused", "outs",
                  "create_graph")
    ends_segment = backward_pass = views_open = True
    weight = 4
    doc = ("params.outs = autograd.grad(params.outputs, params.inputs, grad_outputs="
           "params.grad_outputs, retain_graph=params.retain_graph, allow_unused="
           "params.allow_unused, create_graph=params.create_graph); the results are bound "
           "to the names in params.outs")
    caps = ("autograd_grad",)
    valued = True

    def refs(self, s):
        p = s.params
        return (super().refs(s) + list(p.get("outputs") or []) + list(p.get("inputs") or [])
                + [g for g in (p.get("grad_outputs") or []) if isinstance(g, str)])

    def binds(self, s):
        return [n for n in s.params.get("outs") or [] if n is not None]

    def hook_order_open(self, s):
        return len(s.params.get("outputs") or []) >= 3      # UNSPEC-7: leaves among them

    def unversioned(self, s, shapes):
        return True                     # the _version of gradients (VER-1, UNSPEC-3)

    def seeded_roots(self, s):
        pairs = zip(s.params.get("outputs") or [], s.params.get("grad_outputs") or [], strict=False)
        return [(o, g) for o, g in pairs if isinstance(g, str)]

    def same_object(self, s):
        """Its results: torch returns one tensor for inputs a gradient reaches unchanged
        (`x` and `x.squeeze(0)` of a size-3 dim), and a grad_outputs tensor itself."""
        return self.binds(s) + self.seeds(s)

    def observed(self, s):
        return None, "results"

    def recorded_gradients(self, s):
        return self.binds(s) if s.params.get("create_graph") else []

    def check(self, s, path):
        fields.names(s, path, "outputs")
        fields.names(s, path, "inputs")
        fields.names(s, path, "grad_outputs", required=False, nullable=True, items=OPERAND)
        fields.names(s, path, "outs", required=False, nullable=True, items=OPTIONAL, bound=True)
        fields.param(s, path, "retain_graph", FLAG, required=False)
        fields.param(s, path, "allow_unused", FLAG, required=False)
        fields.param(s, path, "create_graph", (bool,), required=False)

    def run(self, x, s, ev, path):
        e, env, p = x.e, x.env, s.params
        gos = p.get("grad_outputs")
        res = list(e.autograd_grad([env[n] for n in p["outputs"]], [env[n] for n in p["inputs"]],
                                   [x.val(g) for g in gos] if gos is not None else None,
                                   p.get("retain_graph"), bool(p.get("allow_unused", False)),
                                   **_create_graph_kw(s)))
        ev.value = plain([None if r is None else e.to_list(r) for r in res])
        ev.dtype = plain(next((e.dtype(r) for r in res if r is not None), None))
        for name, r in zip(p.get("outs") or [], res, strict=False):
            if name is not None:
                env[name] = r

    def render(self, s, path):
        p, kw = s.params, []
        if p.get("grad_outputs") is not None:
            kw.append(f"grad_outputs=[{', '.join(source.arg(g) for g in p['grad_outputs'])}]")
        if p.get("retain_graph") is not None:
            kw.append(f"retain_graph={p['retain_graph']!r}")
        if p.get("allow_unused"):
            kw.append("allow_unused=True")
        if p.get("create_graph"):
            kw.append("create_graph=True")
        call = (f"torch.autograd.grad([{', '.join(p['outputs'])}], "
                f"[{', '.join(p['inputs'])}]{''.join(', ' + k for k in kw)})")
        lines = [f"_results = {call}", f"show({f'[{path}] results'!r}, _results)"]
        lines += [f"{n} = _results[{i}]" for i, n in enumerate(p.get("outs") or [])
                  if n is not None]
        return lines

    def draw(self, g, bad=None):
        """Draw autograd.grad; `bad` provokes UNUSED_INPUT, INPUT_NO_REQUIRES_GRAD or
        GRAD_OUTPUT_SHAPE."""
        cands = _roots(g)
        ok = [u for u in cands if g.ok_kind(predict(reach([u.node])))]
        if not ok:
            return False
        t = joined(g, g.choice("grad of", _widest(g, ok)))
        nodes = reach([t.node])
        grad_outputs = None
        if bad == "GRAD_OUTPUT_SHAPE":
            shape = g.choice("wrong shape", [s for s in SHAPES if numel(s) != t.numel])
            grad_outputs = [g.const(shape, t.dtype)]
        elif t.shape:
            if not g.grad_enabled or g.boolean("grad_outputs", 50):
                grad_outputs = [g.const(t.shape, t.dtype)]
            else:
                t = g.sum_of(t)
                nodes = reach([t.node])
        inputs = self._draw_inputs(g, t, nodes, bad)
        if inputs is None:
            return False
        allow_unused = g.boolean("allow_unused", 15) if bad != "UNUSED_INPUT" else False
        retain = g.draw_retain()
        ran = needed([t.node], inputs)
        unrun = captured(ran, inputs) if g.vocabulary >= 11 else frozenset()
        predicted = predict(ran, accumulates=False, unrun=unrun)
        if g.vocabulary >= 6 and not g.ok_kind(predicted):
            # what the part the inputs need raises (a VERSION_MISMATCH behind a freed node)
            return False
        outs = [g.fresh("g") for _ in inputs]
        params = {"outputs": [t.name], "inputs": [u.name for u in inputs],
                  "grad_outputs": grad_outputs, "retain_graph": retain,
                  "allow_unused": allow_unused, "outs": outs}
        cl = ["API-6", "FREE-4"] + (["API-9"] if grad_outputs else [])
        if any(not u.leaf for u in inputs):
            cl.append("API-10")
        if any(n.hooks for n in ran):
            cl.append("HOOK-16")
        if any(u.retains and u.node in nodes for u in g.live()):
            cl.append("RETAIN-8")
        cl += {"VERSION_MISMATCH": ["VER-15"], "GRAPH_FREED": ["FREE-1"], "SET_BACKWARD": [
            "DATA-8"], "SAVED_DETACHED_INPLACE": ["VER-16"]}.get(predicted, [])
        # an unused input is refused after the pass, which raises first (vocabulary 11)
        after = bad == "UNUSED_INPUT" and predicted is not None and g.vocabulary >= 11
        cl += {"UNUSED_INPUT": [] if after else ["API-7"], "INPUT_NO_REQUIRES_GRAD": ["API-8"],
               "GRAD_OUTPUT_SHAPE": ["API-3"]}.get(bad, [])
        g.emit(Stmt("grad", params=params), cl, predicted if after else bad or predicted)
        g.after_failed_pass(ran, predicted if bad is None else None, retain, unrun)
        if bad == "UNUSED_INPUT" and predicted is None and not retain and g.vocabulary >= 4:
            for n in ran:           # torch raises after the pass: its graph is freed
                n.freed = n.freed or id(n) not in unrun
        if predicted is None and bad is None:
            if not retain:
                for n in ran:
                    n.freed = n.freed or id(n) not in unrun
            for name, u in zip(outs, inputs, strict=True):
                if u.node in nodes:
                    # may be an expanded or no_grad view inside the engine (UNSPEC-3):
                    # read it and compute with it, never write it
                    g.tensors[name] = T(name, u.shape, u.dtype, False, True, Storage(),
                                        origin="grad", expanded=True, contiguous=False)
        return True

    def emit_recorded(self, g, root: T, inputs: list[T], recorded: bool,
                      cl: list[str]) -> list[T] | None:
        """Emit autograd.grad([root], inputs, create_graph=True) (DOUBLE-1); the gradients it
        binds, or None (nothing emitted) when the pass would raise. The first graph is kept
        (retain_graph defaults to create_graph: FREE-7, DOUBLE-5); each gradient requires grad
        when `recorded` (the caller's prediction from what the function's steps read), and
        its graph is modelled as reaching all of root's, where it may lead through saved
        values (a pass through it frees at least what it runs)."""
        ran = needed([root.node], inputs)
        if predict(ran, accumulates=False, unrun=captured(ran, inputs) if g.vocabulary >= 11
                   else frozenset()) is not None:
            return None
        outs = [g.fresh("g") for _ in inputs]
        params = {"outputs": [root.name], "inputs": [u.name for u in inputs],
                  "grad_outputs": None, "retain_graph": None, "allow_unused": False,
                  "outs": outs, "create_graph": True}
        cl = ["API-6", "DOUBLE-1", "FREE-7", *cl] + (["HOOK-16"] if any(
            n.hooks for n in ran) else [])
        g.emit(Stmt("grad", params=params), cl)
        made = []
        for name, u in zip(outs, inputs, strict=True):
            t = T(name, u.shape, u.dtype, recorded, not recorded, Storage(), origin="grad",
                  expanded=True, contiguous=False)     # read and computed with, never written
            if recorded:
                t.node, t.graph_open = Node(parents=[root.node]), 2
            g.tensors[name] = t
            made.append(t)
        return made

    def _draw_inputs(self, g, t, nodes, bad):
        """The inputs of a drawn autograd.grad of t, or None when none fits."""
        sent = carried(nodes)       # less what a custom Function sends None to (FUNC-6)
        ins = g.live(lambda u: u.rg and u.node is not None and id(u.node) in sent and u is not t)
        if bad == "UNUSED_INPUT":
            extra = g.make_leaf(rg=True)
            return ([g.choice("grad input", ins)] if ins else []) + [extra]
        if bad == "INPUT_NO_REQUIRES_GRAD":
            return [g.make_leaf(rg=False)]
        if not ins:
            return None
        inputs = [g.choice("grad input", ins)]
        if len(ins) > 1 and g.boolean("second grad input", 30 if g.vocabulary < 3 else 60):
            other = g.choice("grad input 2", ins)
            if other is not inputs[0]:
                inputs.append(other)
        return inputs


def _roots(g) -> list:
    """Tensors a pass may start from: they require grad and have a node; from vocabulary 16
    not an inference tensor (one used outside the mode is left open: INFER-6, UNSPEC-10)."""
    old = g.vocabulary < 16
    return g.live(lambda u: u.rg and u.node is not None and u.is_float and (old or not u.inference))
