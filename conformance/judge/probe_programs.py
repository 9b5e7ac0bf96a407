"""The probe programs, one per capability: a small program that uses the capability in the
way its clauses do (conformance/judge/probes.py runs them on an engine and on the oracle)."""
from __future__ import annotations

from typing import Any

from ..lang.program import Stmt


def _leaf(out: str, values: list[float], shape: list[int], rg: bool = True) -> Stmt:
    return Stmt("leaf", out=out, params={"values": values, "shape": shape,
                                         "dtype": "float64", "requires_grad": rg})


def _call(out: str, fn: str, *args: Any, **kw: Any) -> Stmt:
    return Stmt("call", out=out, args=list(args), params={"fn": fn, "kw": kw})


def _see(target: str, what: str) -> Stmt:
    return Stmt("observe", target=target, params={"what": what})


def _backward(target: str, retain_graph: bool | None = None) -> Stmt:
    return Stmt("backward", target=target, params={"retain_graph": retain_graph})


X = _leaf("x", [1.0, -2.0, 0.5, 3.0], [4])

# capability -> statements that work on an engine that has it (and raise on one that lacks it)
PROBES: dict[str, list[Stmt]] = {
    "core": [X, _call("y", "mul", "x", 3.0), _call("s", "sum", "y"), _backward("s"),
             _see("x", "grad"), _see("y", "is_leaf"), _see("y", "requires_grad")],
    "grad_fn": [X, _call("y", "mul", "x", 2.0), _see("y", "grad_fn"),
                _see("y", "next_functions"), _see("x", "grad_fn")],
    "retain_grad": [X, _call("y", "mul", "x", 2.0), Stmt("retain_grad", target="y"),
                    _call("s", "sum", "y"), _backward("s"), _see("y", "grad"),
                    _see("y", "retains_grad")],
    "hooks": [X, _call("y", "mul", "x", 2.0),
              Stmt("hook", out="h", target="y", params={"behaviour": "scale", "factor": 2.0,
                                                        "label": "h"}),
              Stmt("hook", out="k", target="x", params={"behaviour": "record", "label": "k"}),
              Stmt("remove", target="k"), _call("s", "sum", "y"), _backward("s"),
              _see("x", "grad")],
    "post_accumulate_hooks": [X, Stmt("post_hook", out="h", target="x", params={"label": "h"}),
                              _call("y", "mul", "x", 2.0), _call("s", "sum", "y"),
                              _backward("s")],
    "version_counter": [X, _leaf("c", [1.0, 2.0, 3.0, 4.0], [4], rg=False), _see("c", "version"),
                        Stmt("inplace", target="c", args=[1.0], params={"fn": "add_"}),
                        _see("c", "version"), _call("y", "exp", "x"), _call("s", "sum", "y"),
                        Stmt("inplace", target="y", args=[2.0], params={"fn": "mul_"}),
                        _backward("s")],        # VERSION_MISMATCH: exp saved its output
    "views": [X, Stmt("view", out="v", target="x", params={"fn": "view", "kw": {"shape": [2, 2]}}),
              Stmt("view", out="w", target="v", params={"fn": "t", "kw": {}}),
              Stmt("getitem", out="g", target="w", params={"index": [1]}),
              _see("w", "value"), _see("g", "value"), _call("s", "sum", "g"), _backward("s"),
              _see("x", "grad")],
    "inplace": [X, _leaf("c", [1.0, 2.0, 3.0, 4.0], [4], rg=False),
                Stmt("inplace", target="c", args=[1.0], params={"fn": "add_"}),
                Stmt("setitem", target="c", args=[5.0], params={"index": [0]}),
                _see("c", "value"), _call("y", "mul", "x", "c"),
                Stmt("inplace", target="y", args=[], params={"fn": "neg_"}),
                _call("s", "sum", "y"), _backward("s"), _see("x", "grad"),
                Stmt("inplace", target="x", args=[1.0], params={"fn": "add_"})],  # LEAF_INPLACE
    "autograd_grad": [X, _call("y", "mul", "x", "x"), _call("s", "sum", "y"),
                      Stmt("grad", params={"outputs": ["s"], "inputs": ["x"],
                                           "grad_outputs": None, "retain_graph": None,
                                           "allow_unused": False, "outs": ["g"]}),
                      _see("x", "grad")],
    "grad_modes": [X, Stmt("mode", params={"mode": "no_grad"},
                           body=[_call("y", "mul", "x", 2.0), _see("y", "requires_grad"),
                                 Stmt("mode", params={"mode": "enable_grad"},
                                      body=[_call("z", "mul", "x", 2.0),
                                            _see("z", "requires_grad")])]),
                   Stmt("mode", params={"mode": "set_grad_enabled", "enabled": False},
                        body=[_call("u", "exp", "x"), _see("u", "requires_grad")])],
    "retain_graph": [X, _call("y", "exp", "x"), _call("s", "sum", "y"),
                     _backward("s", retain_graph=True), _backward("s"), _see("x", "grad"),
                     _backward("s")],           # GRAPH_FREED
    "warnings": [X, _call("y", "mul", "x", 2.0), _see("y", "grad")],    # RETAIN-7 warns
    "backward_inputs": [X, _leaf("w", [2.0], [], rg=True), _call("y", "mul", "x", "w"),
                        _call("s", "sum", "y"),
                        Stmt("backward", target="s", params={"inputs": ["w"]}),
                        _see("x", "grad"), _see("w", "grad"),
                        Stmt("backward", target="s", params={"inputs": []})],  # raises
    "narrow_select": [X, Stmt("view", out="n", target="x",
                              params={"fn": "narrow", "kw": {"dim": 0, "start": 1, "length": 2}}),
                      Stmt("view", out="v", target="x",
                           params={"fn": "select", "kw": {"dim": -1, "index": -1}}),
                      _see("n", "value"), _see("v", "value"), _call("m", "mul", "n", "v"),
                      _call("s", "sum", "m"), _backward("s"), _see("x", "grad")],
    "multi_views": [X, Stmt("multi_view", target="x",
                            params={"fn": "split", "kw": {"size": 3, "dim": 0},
                                    "outs": ["a", "b"]}),
                    Stmt("multi_view", target="x",
                         params={"fn": "unbind", "kw": {"dim": -1}, "outs": list("cdef")}),
                    _see("a", "value"), _see("b", "value"), _call("m", "mul", "c", "b"),
                    _call("s", "sum", "m"), _call("t", "add", "s", "f"), _backward("t"),
                    _see("x", "grad")],
    # HOOK-19, HOOK-20: "all" waits for x and a (o = x * w is off the path: None); "any"
    # runs once
    "multi_grad_hooks": [X, _leaf("w", [2.0], []), _call("a", "mul", "x", 2.0),
                         _call("o", "mul", "x", "w"),
                         Stmt("multi_grad_hook", out="m", args=["x", "a", "o"],
                              params={"mode": "all", "label": "m"}),
                         Stmt("multi_grad_hook", out="n", args=["a", "x"],
                              params={"mode": "any", "label": "n"}),
                         _call("s", "sum", "a"), _backward("s", retain_graph=True),
                         Stmt("remove", target="m"), Stmt("remove", target="n"),
                         _backward("s"), _see("x", "grad")],
    # GRAD-7, LEAF-9: a grad_dtype set before the leaf requires grad casts its gradient (the
    # observed .grad is float32), and may be set to None over a .grad
    "grad_dtype": [_leaf("w", [1.0, 2.0], [2], rg=False), _see("w", "grad_dtype"),
                   Stmt("set_grad_dtype", target="w", params={"dtype": "float32"}),
                   Stmt("requires_grad_", target="w", params={"value": True}),
                   _call("y", "mul", "w", 3.0), _call("s", "sum", "y"), _backward("s"),
                   _see("w", "grad"), _see("w", "grad_dtype"),
                   Stmt("set_grad_dtype", target="w", params={"dtype": None}),
                   _see("w", "grad_dtype"), _see("w", "grad")],
    # LEAF-11, LEAF-15: the setter sets a leaf's flag, and refuses a non-leaf even for True
    "requires_grad_setter": [_leaf("w", [1.0, 2.0], [2], rg=False),
                             Stmt("requires_grad_", target="w",
                                  params={"value": True, "setter": True}),
                             _see("w", "requires_grad"), _call("y", "mul", "w", 2.0),
                             Stmt("requires_grad_", target="w",
                                  params={"value": False, "setter": True}),
                             _see("w", "requires_grad"),
                             Stmt("requires_grad_", target="y",
                                  params={"value": True, "setter": True})],
    # VER-16, VIEW-8, INPLACE-1: a non-leaf detached in place is a leaf that needs no grad, a
    # node that saved it refuses to run, a view refuses detach_(), a leaf stops requiring grad
    "detach_inplace": [X, _call("h", "mul", "x", 2.0), _call("y", "sin", "h"),
                       _call("k", "mul", "x", 3.0), Stmt("detach_", target="h"),
                       _see("h", "is_leaf"), _see("h", "requires_grad"), _see("h", "version"),
                       Stmt("getitem", out="v", target="k",
                            params={"index": [{"slice": [0, 1, None]}]}),
                       Stmt("detach_", target="v"),             # DETACH_VIEW_INPLACE
                       _see("v", "requires_grad"), _call("s", "sum", "y"),
                       _backward("s"),                          # SAVED_DETACHED_INPLACE
                       Stmt("detach_", target="x"), _see("x", "requires_grad")],
    # GRAD-1 to GRAD-4: the .grad a pass stores is a tensor of no history that a name can hold,
    # whose writes .grad shows and which a second pass adds into, the same object throughout
    "grad_tensor": [X, _call("y", "mul", "x", 2.0), _call("s", "sum", "y"), _backward("s"),
                    Stmt("grad_ref", out="h", target="x"), _see("h", "requires_grad"),
                    _see("x", "grad_layout"),
                    Stmt("inplace", target="h", args=[10.0], params={"fn": "mul_"}),
                    _see("x", "grad"), _call("z", "exp", "x"), _call("s2", "sum", "z"),
                    _backward("s2"), _see("h", "value"),
                    Stmt("grad_is", target="x", args=["h"])],
    # VIEW-1: a view of a view has the first view's base; detach() of a view is no view
    "view_base": [X, Stmt("view", out="v", target="x",
                          params={"fn": "view", "kw": {"shape": [2, 2]}}),
                  Stmt("view", out="w", target="v", params={"fn": "t", "kw": {}}),
                  Stmt("base_is", target="w", args=["x"]),
                  Stmt("base_is", target="x", args=[None]), Stmt("detach", out="d", target="w"),
                  Stmt("base_is", target="d", args=[None])],
    # GRAD-5, GRAD-6: a module's zero_grad zeroes its parameters' .grads in place, or sets
    # them to None, and leaves a tensor it does not hold alone
    "nn_module": [X, Stmt("parameter", out="w", params={"values": [0.5, 1.0, -1.0, 2.0],
                                                        "shape": [4], "dtype": "float64"}),
                  Stmt("parameter", out="b", params={"values": [1.0, 1.0, 1.0, 1.0],
                                                     "shape": [4], "dtype": "float64"}),
                  _call("y", "mul", "w", "x"), _call("z", "add", "y", "b"),
                  _call("s", "sum", "z"), _backward("s"),
                  Stmt("zero_grad", args=["w"], params={"set_to_none": False}),
                  _see("w", "grad"), _see("x", "grad"),
                  Stmt("zero_grad", args=["w", "b"], params={"set_to_none": True}),
                  _see("w", "grad"), _see("b", "grad"), _call("y2", "mul", "w", "x"),
                  _call("s2", "sum", "y2"), _backward("s2"), _see("w", "grad")],
    "deriv_ops": [X, _call("c", "gt", "x", 0.0), _see("c", "value"),
                  _see("c", "requires_grad"), _call("f", "floor", "x"), _call("m", "max", "x"),
                  _call("w", "where", "x", "c", "f"), _call("l", "long", "x"),
                  _see("l", "value"), _call("i", "argmax", "x"), _call("s", "add", "m", "w"),
                  _call("s2", "sum", "s"), _backward("s2"), _see("x", "grad")],
    "create_graph": [X, _call("y", "exp", "x"), _call("s", "sum", "y"),
                     Stmt("grad", params={"outputs": ["s"], "inputs": ["x"],
                                          "grad_outputs": None, "retain_graph": None,
                                          "allow_unused": False, "outs": ["g"],
                                          "create_graph": True}),
                     _see("g", "requires_grad"), _call("z", "mul", "g", "x"),
                     _call("s2", "sum", "z"), _backward("s2"), _see("x", "grad"),
                     _call("y3", "sin", "x"), _call("s3", "sum", "y3"),
                     Stmt("backward", target="s3", params={"create_graph": True}),
                     _see("x", "grad")],
    "inference_mode": [X, Stmt("mode", params={"mode": "inference_mode"},
                               body=[_call("y", "mul", "x", 2.0), _see("y", "requires_grad"),
                                     Stmt("grad_enabled"), _see("y", "is_inference")]),
                       _see("x", "is_inference"), _see("y", "is_inference"),
                       _see("y", "version")],   # INFERENCE_VERSION
    # finer capabilities (conformance/spec/capabilities.py): views' values and gradients, with
    # no write that would show whether they alias; no_grad alone; a graph's shape, its node
    # names left out (the probe's program is compared as graph_structure's are)
    "no_grad": [X, Stmt("mode", params={"mode": "no_grad"},
                        body=[_call("y", "mul", "x", 2.0), _see("y", "requires_grad")]),
                _call("z", "mul", "x", 2.0), _see("z", "requires_grad")],
    "graph_structure": [X, _leaf("c", [1.0, 2.0, 3.0, 4.0], [4], rg=False),
                        _call("y", "mul", "x", "c"), _see("y", "grad_fn"),
                        _see("y", "next_functions"), _see("x", "grad_fn"),
                        _call("s", "sum", "y"), _see("s", "next_functions")],
}
PROBES["view_ops"] = list(PROBES["views"])     # values and gradients: copies pass too
# views that alias (VIEW-2): a write to the base seen through a view taken before it; appended
# to the views probe where engine and oracle write in place (probes.py, probe_program)
ALIASING: list[Stmt] = [
    _leaf("c", [1.0, 2.0, 3.0, 4.0], [4], rg=False),
    Stmt("view", out="cv", target="c", params={"fn": "view", "kw": {"shape": [2, 2]}}),
    Stmt("inplace", target="c", args=[1.0], params={"fn": "add_"}), _see("cv", "value")]
# probes that take a view that aliases (detach_() of a view, VIEW-8): unprobed without views
NEED_VIEWS = ("detach_inplace",)
