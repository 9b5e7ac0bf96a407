"""Statements about torch.nn: a parameter, and the zero_grad of a module whose parameters are
named tensors (spec/grad.md: GRAD-5 sets their .grads to None, GRAD-6 zeroes them in place).
Drawn from generator vocabulary 22 where the engine declares nn_module (gen/modules.py)."""
from __future__ import annotations

from ..engines.torchlike import nest
from ..lang.program import Stmt
from ..model import Storage, T, accumulator
from ..model.tables import KINKS
from . import fields
from .registry import Kind, kind

FLOATS = ("float32", "float64")

# module_of in a standalone script (ZeroGrad's render helper): a module that registers the
# parameters it is given, in order, as torch.nn.Module.register_parameter does
MODULE_SOURCE = '''def module_of(*params):
    """A torch.nn.Module whose parameters are `params`, registered in order."""
    module = torch.nn.Module()
    for i, p in enumerate(params):
        module.register_parameter(f"p{i}", p)
    return module
'''


@kind
class Parameter(Kind):
    name = "parameter"
    caps = ("core", "nn_module")
    param_keys = ("values", "shape", "dtype")
    makes_leaf = True
    since = 22          # weight 0: only gen/modules.py makes them
    doc = ("out = torch.nn.Parameter(tensor(values, shape, dtype)): a leaf that requires grad, "
           "which a module registers (GRAD-5). params: values (flat list), shape (list), "
           "dtype ('float32'|'float64')")

    def check(self, s, path):
        fields.name(s, path, "out")
        fields.values(s, path, fields.param(s, path, "dtype", (str,), choices=FLOATS))

    def run(self, x, s, ev, path):
        p = s.params
        x.env[s.out] = x.e.parameter(x.e.leaf(p["values"], p["shape"], p["dtype"], False))

    def render(self, s, path):
        p = s.params
        return [f"{s.out} = torch.nn.Parameter(torch.tensor("
                f"{nest(p['values'], p['shape'])!r}, dtype=torch.{p['dtype']}))"]

    def emit(self, g, shape: tuple[int, ...], dtype: str, values: list[float]) -> T:
        """Emit a parameter, modelled as a fresh leaf that requires grad."""
        name = g.fresh()
        g.emit(Stmt(self.name, out=name, params={"values": values, "shape": list(shape),
                                                 "dtype": dtype}), ["LEAF-1"])
        t = g.tensors[name] = T(name, shape, dtype, True, True, Storage(), accumulator(),
                                exact=True, at_kink=any(v in KINKS for v in values))
        return t


@kind
class ZeroGrad(Kind):
    name = "zero_grad"
    caps = ("core", "nn_module")
    param_keys = ("set_to_none",)
    since = 22          # weight 0: only gen/modules.py draws it
    doc = ("module_of(*args).zero_grad(set_to_none=params.set_to_none): the zero_grad of a "
           "torch.nn.Module whose parameters are args (names of parameters), in order: each "
           ".grad set to None (GRAD-5), or zeroed in place, cut from its graph first (GRAD-6)")

    def resets_grads(self, s):
        return self.touches_grads(s) if s.params.get("set_to_none") else []

    def touches_grads(self, s):
        return [a for a in s.args if isinstance(a, str)]

    def check(self, s, path):
        fields.param(s, path, "set_to_none", (bool,))
        if not s.args or not isinstance(s.args, list):
            fields.fail(path, "args", f"must name one parameter or more, got {s.args!r}")
        for i, a in enumerate(s.args):
            if not fields.is_name(a):
                fields.fail(path, f"args[{i}]", f"must be a name, got {a!r}")

    def run(self, x, s, ev, path):
        x.e.module_zero_grad([x.env[a] for a in s.args], bool(s.params["set_to_none"]))

    def render_helpers(self):
        return MODULE_SOURCE

    def render(self, s, path):
        return [f"module_of({', '.join(s.args)}).zero_grad("
                f"set_to_none={bool(s.params['set_to_none'])})"]

    def emit(self, g, params: list, set_to_none: bool) -> None:
        """Emit zero_grad over the modelled parameters `params` and update the model: a .grad
        set to None is gone (its tensor kept by any name bound to it, GRAD-5); one zeroed in
        place is written (GRAD-6), its node none from then on."""
        for t in params:
            if set_to_none:
                t.has_grad = t.grad_plain = t.grad_node_known = False
                t.grad_mem = None
            elif t.has_grad and t.grad_mem is not None:
                t.grad_mem.version += 1
                t.grad_mem.overwritten = True
        g.emit(Stmt(self.name, args=[t.name for t in params],
                    params={"set_to_none": set_to_none}),
               ["GRAD-5"] if set_to_none else ["GRAD-6"])
