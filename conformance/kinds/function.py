"""Custom `torch.autograd.Function`s (spec/function.md): `F.<fn>.apply(...)` of a Function of
gradspec's closed catalogue (conformance/lang/functions.py), drawn from generator vocabulary 19
where the engine declares `custom_function`.

Two kinds, because they bind differently: `function` makes new tensors (one, or two for a
Function that returns a tuple), `dirty_function` writes its argument in place, marks it dirty
and rebinds it (FUNC-11). In the model a Function's node is an op's node: it saves what the
row says (FUNC-4: version-checked and freed like an op's, as every row that saves reads what it
saved in backward and none that saves nothing reads it), its results share it (FUNC-9), an
output marked non-differentiable has none (FUNC-12), and an input returned as it is is a view
that is never written and is hidden once its memory is (FUNC-14, as split's outputs are)."""
from __future__ import annotations

from typing import Any

from ..lang import functions
from ..lang.functions import ROWS, Fn
from ..lang.program import Stmt
from ..model import Node, T, broadcast
from . import deriv_ops, fields, source
from .registry import Kind, kind
from .tensors import Call

# the Functions `function` draws, and how often (the failing ones are error moves:
# conformance/gen/errors_function.py; the dirty one is `dirty_function`'s)
DRAWN = (("Square", 3), ("ScaleOut", 2), ("MulCtx", 3), ("Gated", 2), ("FirstOnly", 2),
         ("Pair", 2), ("PairLazy", 2), ("WithFloor", 1), ("OnceSquare", 2), ("Identity", 1))
OUT_OF_PLACE = tuple(f.name for f in ROWS.values() if not f.dirty)
DIRTY = tuple(f.name for f in ROWS.values() if f.dirty)
GATE_NUMBERS = (2.0, -0.5, 3.0)


def check_call(s: Any, path: str, names: tuple[str, ...]) -> Fn:
    """The fields every Function call has: params.fn one of `names`, params.legacy a bool,
    target the first tensor argument, args the other tensors (names) then the numbers."""
    row = ROWS[fields.param(s, path, "fn", (str,), choices=names)]
    fields.param(s, path, "legacy", (bool,), required=False)
    fields.name(s, path, "target")
    fields.args(s, path, row.tensors - 1 + row.numbers)
    for i, a in enumerate(s.args):
        if (i < row.tensors - 1) != isinstance(a, str):
            fields.fail(path, f"args[{i}]", f"{row.name} takes {row.tensors} tensor(s), then "
                        f"{row.numbers} number(s); got {a!r}")
    return row


def call_source(s: Any) -> str:
    fn = s.params["fn"]
    callee = f"F.{fn}()" if s.params.get("legacy") else f"F.{fn}.apply"
    return f"{callee}({', '.join([s.target, *source.args(s.args)])})"


def _run(x: Any, s: Any) -> Any:
    args = [x.env[s.target], *(x.val(a) for a in s.args)]
    return x.e.apply_function(s.params["fn"], args, legacy=bool(s.params.get("legacy")))


@kind
class Function(Kind):
    name = "function"
    records_node = True
    param_keys = ("fn", "legacy", "outs")
    caps = ("custom_function",)
    weight = 8
    since = 19
    aliases = shares_version = True     # Identity's result is a view of its target (FUNC-14)
    guarded_view = True                 # ... which refuses in-place writes
    doc = ("out = F.<params.fn>.apply(target, *args): a Function of the catalogue "
           "(conformance/lang/functions.py); one that returns two outputs binds params.outs "
           "instead of out; params.legacy calls F.<fn>()(target, *args) (FUNC-15)")

    def check(self, s, path):
        row = check_call(s, path, OUT_OF_PLACE)
        if row.outputs == 1:
            fields.name(s, path, "out")
            if "outs" in s.params:
                fields.fail(path, "params.outs", f"{row.name} returns one output: use out")
            return
        outs = fields.names(s, path, "outs") or []
        if len(outs) != row.outputs or len(set(outs)) != len(outs) or s.out is not None:
            fields.fail(path, "params.outs", f"{row.name} returns {row.outputs} outputs: name "
                        f"each once in params.outs, got {outs!r}")

    def makes_view(self, s):
        row = ROWS.get(s.params.get("fn"))
        return row is not None and row.returns_input

    def shares_counter(self, s):
        return self.makes_view(s)

    def binds(self, s):
        return list(s.params.get("outs") or ([s.out] if s.out is not None else []))

    def run(self, x, s, ev, path):
        got = _run(x, s)
        names = s.params.get("outs")
        if not names:
            x.env[s.out] = got
            return
        if not isinstance(got, (tuple, list)):
            raise RuntimeError(f"{s.params['fn']} returned {type(got).__name__}, not a tuple")
        got = tuple(got)
        if len(got) != len(names):
            raise RuntimeError(f"{s.params['fn']} returned {len(got)} outputs, not {len(names)}")
        for n, t in zip(names, got, strict=True):
            x.env[n] = t

    def render_helpers(self):
        return functions.source()

    def render(self, s, path):
        names = s.params.get("outs") or [s.out]
        return [f"{', '.join(names)} = {call_source(s)}"]

    def draw(self, g):
        if g.inference:
            return False
        row = ROWS[g.weighted("function", DRAWN)]
        a = deriv_ops.exact_operand(g, "exact Function input") if row.nondiff else None
        if a is None and g.boolean("Function input requires grad", 70):
            a = g.pick("Function input", lambda t: t.is_float and t.rg)
        a = a or g.pick("Function input", lambda t: t.is_float) or g.make_leaf()
        if row.nondiff and not a.exact_now():
            a = g.make_leaf()
        return emit_apply(g, row, a)


def emit_apply(g: Any, row: Fn, a: T, b: T | None = None, expect: str | None = None) -> T:
    """Emit F.<row>.apply(a, ...) (b the second tensor argument, drawn when None) and model it:
    the first result (the one a pass starts from). A row with a non-differentiable output
    computes a floor, whose result jumps: a must be exact (T.exact_now)."""
    assert not row.nondiff or a.exact_now(), (row.name, a.name)
    inputs = [a]
    if row.tensors == 2 and 1 in row.cuts and b is None:
        # a fresh leaf: nothing behind it, and no hook is ever drawn on it (T.cut)
        b = g.make_leaf(shape=g.choice("cut input shape", (a.shape, a.shape[-1:])), rg=True)
        b.cut = True
    if row.tensors == 2 and row.mixed and b is None and g.boolean("an input needing no grad", 50):
        b = g.pick("input needing no grad", lambda t: t.is_float and not t.rg and broadcast(
            a.shape, t.shape) is not None) or g.make_leaf(shape=a.shape, rg=False)
    if row.tensors == 2:
        b = b or Call._joining(g, a, lambda shape, dtype: broadcast(a.shape, shape)
                               is not None) or g.pick(
            "second Function input", lambda t: t.is_float and broadcast(a.shape, t.shape)
            is not None) or a
        inputs.append(b)
    args = [i.name for i in inputs[1:]] + [g.choice("gate", GATE_NUMBERS)
                                           for _ in range(row.numbers)]
    shape = broadcast(a.shape, b.shape) if b is not None else a.shape
    dtype = "float64" if any(i.dtype == "float64" for i in inputs) else "float32"
    rg_in = any(i.rg for i in inputs)
    if row.returns_input:
        t = g.add_view(a, a.shape, False, False)
        t.multi_view = True         # never written, hidden once its memory is (FUNC-14)
    else:
        saved = [inputs[int(k[-1])].storage for k in row.saves if k.startswith("input")]
        t = g.result(shape, dtype, inputs, saved if rg_in else [])
        if t.node is not None:
            t.node.holds = bool(row.saves)
            if "output0" in row.saves:
                t.node.saved.append((t.storage, 0))
    t.exact = all(i.exact_now() for i in inputs)
    if t.node is not None:
        t.node.fn = row.clauses
        t.node.cut = [inputs[i].node for i in row.cuts if inputs[i].node is not None]
    outs = [t]
    for i in range(1, row.outputs):
        other = g.result(shape, dtype, [] if i in row.nondiff else inputs)
        other.exact, other.output_nr = t.exact, i
        outs.append(other)
    if row.outputs > 1 and t.node is not None:
        # torch tells the outputs apart by (node, slot): each gets a node of its own over the
        # Function's, so that a pass from one neither reaches nor credits the other
        fnode = t.node
        for o in outs:
            if o.node is not None:
                o.node = Node(parents=[fnode])
    params: dict[str, Any] = {"fn": row.name}
    if row.outputs > 1:
        params["outs"] = [o.name for o in outs]
    g.emit(Stmt("function", out=t.name if row.outputs == 1 else None, target=a.name,
                args=args, params=params), list(row.clauses), expect)
    return t


# the errors apply raises for a dirty target after forward wrote it (FUNC-11: those of an
# in-place op on the same target, and DIRTY_LEAF for a leaf)
APPLY_REFUSALS = frozenset({"DIRTY_LEAF", "VIEW_OF_LEAF_INPLACE", "CUSTOM_VIEW_INPLACE",
                            "NO_GRAD_VIEW_INPLACE", "INFERENCE_VIEW_INPLACE"})


@kind
class DirtyFunction(Kind):
    name = "dirty_function"
    records_node = True
    param_keys = ("fn", "legacy")
    caps = ("custom_function", "inplace")
    weight = 3
    since = 19
    in_place = writes = True
    doc = ("target = F.<params.fn>.apply(target): a Function of the catalogue that writes its "
           "argument in place, marks it dirty and returns it (FUNC-11)")

    def check(self, s, path):
        check_call(s, path, DIRTY)

    def binds(self, s):
        return [s.target] if s.target is not None else []

    def wrote_if_refused(self, s, errors):
        # apply's own refusals come after forward wrote (FUNC-11); a legacy call raises
        # before forward runs (FUNC-15), and forward's own write may fail (an expanded or bool
        # target): then nothing was written
        return not s.params.get("legacy") and not APPLY_REFUSALS.isdisjoint(errors)

    def run(self, x, s, ev, path):
        x.env[s.target] = _run(x, s)

    def render_helpers(self):
        return functions.source()

    def render(self, s, path):
        return [f"{s.target} = {call_source(s)}"]

    def draw(self, g, target: T | None = None, expect: str | None = None) -> bool:
        if target is None and g.grad_enabled and g.boolean("dirty input with a .grad", 50):
            # a recorded call drops a retained .grad (FUNC-11): one that has one, if any
            target = g.pick("dirty input with a .grad", lambda u: u.retains and u.has_grad
                            and u.rg and g.inplace_ok(u))
        # with grad mode off, torch returns a detached alias of an input that requires grad
        # (FUNC-11): the name would be rebound to another tensor, which is not modelled
        fits = (lambda u: g.inplace_ok(u) and (g.grad_enabled or not u.rg))
        t = target or g.pick("dirty Function input", fits)
        if t is None or g.inference:
            return False
        row = ROWS[DIRTY[0]]
        cl = list(row.clauses) + (g.apply_inplace(t, [], False) if expect is None else [])
        if expect is None and t.node is not None and g.grad_enabled:
            t.node.fn = row.clauses
            t.has_grad = False      # a recorded call drops its .grad (FUNC-11)
        g.emit(Stmt("dirty_function", target=t.name, params={"fn": row.name}), cl, expect)
        return True
