"""A program as a standalone Python script (the repro attached to each divergence).

The script binds `torch` through a prelude ("import torch", "import refimpl as torch") and
runs the program as plain torch code, printing each observation and hook call as the trace
records it; statements that raised (or were skipped) on either engine run inside try/except so
the script goes on. Each line of code is what engines/torchlike.py does for the statement.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .engines.torchlike import nest
from .executor import Trace, binds
from .program import Program, Stmt

HELPERS = '''
import json
import warnings

warnings.simplefilter("always")


def show(label, value):
    """Print an observation: tensors as nested lists."""
    if isinstance(value, (list, tuple)):
        value = [v.tolist() if hasattr(v, "tolist") else v for v in value]
    elif hasattr(value, "tolist"):
        value = value.tolist()
    print(label, "=", json.dumps(value))


def record(label):
    def hook(grad):
        show(f"  hook {label} got", grad)
    return hook


def scale(label, factor):
    def hook(grad):
        show(f"  hook {label} got", grad)
        return grad * factor
    return hook


def wrong_shape(label):
    def hook(grad):
        show(f"  hook {label} got", grad)
        n = 1
        for s in grad.shape:
            n *= s
        return torch.zeros(n + 1, dtype=grad.dtype)
    return hook


def post(label, returns=False):
    def hook(tensor):
        show(f"  post hook {label} saw .grad", tensor.grad)
        return tensor.grad if returns else None     # a value is an error (HOOK-13)
    return hook


def node_hook(label, factor=None):
    """For grad_fn.register_prehook (gets grad_outputs) and, through a lambda, register_hook
    (gets grad_inputs): logs the first gradient, and with a factor scales it."""
    def hook(grads):
        show(f"  node hook {label} got", grads[0] if grads else None)
        if factor is not None and grads and grads[0] is not None:
            return (grads[0] * factor,) + tuple(grads[1:])
        return None
    return hook
'''

BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@"}
AUGMENTED = {"iadd": "+=", "isub": "-=", "imul": "*=", "idiv": "/="}
MODES = {"no_grad": "torch.no_grad()", "enable_grad": "torch.enable_grad()"}


def _arg(a: Any) -> str:
    return a if isinstance(a, str) else repr(a)


def _index(items: list[Any]) -> str:
    def one(i: Any) -> str:
        if isinstance(i, dict):
            parts = ["" if v is None else repr(v) for v in i["slice"]]
            return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
        return repr(i)
    return ", ".join(one(i) for i in items) if items else "()"


def _call(p: dict[str, Any], args: list[Any]) -> str:
    fn, kw = p["fn"], p.get("kw", {})
    if fn in BINARY:
        return f"{_arg(args[0])} {BINARY[fn]} {_arg(args[1])}"
    t = _arg(args[0])
    if fn == "pow":
        return f"{t}.pow({kw['exponent']!r})"
    if fn == "clamp":
        return f"{t}.clamp(min={kw.get('min')!r}, max={kw.get('max')!r})"
    if fn in ("sum", "mean"):
        dim = kw.get("dim")
        if dim is None:
            return f"{t}.{fn}()"
        dim = tuple(dim) if isinstance(dim, list) else dim
        return f"{t}.{fn}({dim!r}, keepdim={bool(kw.get('keepdim', False))!r})"
    return f"{t}.{fn}()"


def _view(t: str, p: dict[str, Any]) -> str:
    fn, kw = p["fn"], p.get("kw", {})
    if fn in ("reshape", "view", "expand"):
        dims = kw["shape" if fn != "expand" else "size"]
        return f"{t}.{fn}({', '.join(map(repr, dims)) or '()'})"
    if fn == "transpose":
        return f"{t}.transpose({', '.join(map(repr, kw['dims']))})"
    if fn in ("unsqueeze", "squeeze"):
        return f"{t}.{fn}({'' if kw.get('dim') is None else repr(kw['dim'])})"
    return f"{t}.{fn}()"


def _inplace(t: str, p: dict[str, Any], args: list[Any]) -> str:
    fn, kw = p["fn"], p.get("kw", {})
    if fn in AUGMENTED:
        return f"{t} {AUGMENTED[fn]} {_arg(args[0])}"
    if fn == "pow_":
        return f"{t}.pow_({kw['exponent']!r})"
    if fn == "clamp_":
        return f"{t}.clamp_(min={kw.get('min')!r}, max={kw.get('max')!r})"
    return f"{t}.{fn}({', '.join(_arg(a) for a in args)})"


def _observe(path: str, t: str, what: str) -> str:
    expr = {"value": t, "grad": f"{t}.grad", "is_leaf": f"{t}.is_leaf",
            "requires_grad": f"{t}.requires_grad", "shape": f"list({t}.shape)",
            "dtype": f"str({t}.dtype).rsplit('.', 1)[-1]",
            "grad_fn": f"{t}.grad_fn.name() if {t}.grad_fn is not None else None",
            "next_functions": f"[f.name() if f is not None else None for f, _ in "
                              f"{t}.grad_fn.next_functions] if {t}.grad_fn is not None else []",
            "version": f"{t}._version", "retains_grad": f"{t}.retains_grad"}[what]
    return f"show({f'[{path}] {t}.{what}'!r}, {expr})"


def statement(s: Stmt, path: str) -> list[str]:
    """The source lines of one statement (a `with` block for a mode statement)."""
    p, t = s.params, s.target
    op = s.op
    if op == "leaf":
        rg = ", requires_grad=True" if p.get("requires_grad") else ""
        return [f"{s.out} = torch.tensor({nest(p['values'], p['shape'])!r}, "
                f"dtype=torch.{p['dtype']}{rg})"]
    if op == "call":
        return [f"{s.out} = {_call(p, s.args)}"]
    if op == "view":
        return [f"{s.out} = {_view(t, p)}"]
    if op == "getitem":
        return [f"{s.out} = {t}[{_index(p['index'])}]"]
    if op == "inplace":
        return [_inplace(t, p, s.args)]
    if op == "setitem":
        return [f"{t}[{_index(p['index'])}] = {_arg(s.args[0])}"]
    if op == "detach":
        return [f"{s.out} = {t}.detach()"]
    if op == "data":
        return [f"{s.out} = {t}.data"]
    if op == "requires_grad_":
        return [f"{t}.requires_grad_({bool(p.get('value', True))!r})"]
    if op == "retain_grad":
        return [f"{t}.retain_grad()"]
    if op == "hook":
        label = p.get("label") or s.out
        b = p.get("behaviour", "record")
        fn = (f"scale({label!r}, {float(p.get('factor', 2.0))!r})" if b == "scale"
              else f"{b}({label!r})")
        return [f"{s.out} = {t}.register_hook({fn})"]
    if op == "post_hook":
        returns = ", returns=True" if p.get("behaviour") == "return" else ""
        return [f"{s.out} = {t}.register_post_accumulate_grad_hook("
                f"post({(p.get('label') or s.out)!r}{returns}))"]
    if op == "node_hook":
        factor = (f", {float(p.get('factor', 2.0))!r}" if p.get("behaviour") == "scale" else "")
        fn = f"node_hook({(p.get('label') or s.out)!r}{factor})"
        if p.get("kind", "pre") == "pre":
            return [f"{s.out} = {t}.grad_fn.register_prehook({fn})"]
        return [f"_hook = {fn}",
                f"{s.out} = {t}.grad_fn.register_hook(lambda gi, go, h=_hook: h(gi))"]
    if op == "remove":
        return [f"{t}.remove()"]
    if op == "mode":
        cm = MODES.get(p["mode"]) or f"torch.set_grad_enabled({bool(p.get('enabled', True))!r})"
        if p.get("decorator"):      # the body and the call are added by body()
            return [f"@{cm}", f"def {_block_name(path)}():"]
        return [f"with {cm}:"]      # the body is added by body()
    if op == "grad_enabled":
        return [f"show({f'[{path}] is_grad_enabled'!r}, torch.is_grad_enabled())"]
    if op == "backward_many":
        gts = p.get("grad_tensors")
        kw = ""
        if gts is not None:
            kw += f", grad_tensors=[{', '.join(_arg(g) if g is not None else 'None' for g in gts)}]"
        if p.get("retain_graph") is not None:
            kw += f", retain_graph={p['retain_graph']!r}"
        return [f"torch.autograd.backward([{', '.join(p['tensors'])}]{kw})"]
    if op == "backward":
        kw = []
        if s.args and s.args[0] is not None:
            kw.append(f"gradient={_arg(s.args[0])}")
        if p.get("retain_graph") is not None:
            kw.append(f"retain_graph={p['retain_graph']!r}")
        if p.get("inputs") is not None:
            kw.append(f"inputs=[{', '.join(p['inputs'])}]")
        return [f"{t}.backward({', '.join(kw)})"]
    if op == "grad":
        kw = []
        if p.get("grad_outputs") is not None:
            kw.append(f"grad_outputs=[{', '.join(_arg(g) for g in p['grad_outputs'])}]")
        if p.get("retain_graph") is not None:
            kw.append(f"retain_graph={p['retain_graph']!r}")
        if p.get("allow_unused"):
            kw.append("allow_unused=True")
        call = (f"torch.autograd.grad([{', '.join(p['outputs'])}], "
                f"[{', '.join(p['inputs'])}]{''.join(', ' + k for k in kw)})")
        lines = [f"_results = {call}", f"show({f'[{path}] results'!r}, _results)"]
        lines += [f"{n} = _results[{i}]" for i, n in enumerate(p.get("outs") or [])
                  if n is not None]
        return lines
    if op == "set_grad":
        return [f"{t}.grad = {_arg(s.args[0]) if s.args and s.args[0] is not None else None}"]
    if op == "observe":
        return [_observe(path, t, p["what"])]
    raise ValueError(f"unknown op {op!r}")


def _block_name(path: str) -> str:
    return "_block_" + path.replace(".", "_")


def _bound_in(stmts: list[Stmt]) -> list[str]:
    """Names the statements (and nested blocks) bind, first-seen order."""
    seen: dict[str, None] = {}
    for s in stmts:
        seen.update(dict.fromkeys(binds(s)))
        if s.op == "node_hook":
            seen["_hook"] = None
        seen.update(dict.fromkeys(_bound_in(s.body)))
    return list(seen)


def _not_ok(traces: Iterable[Trace]) -> set[str]:
    return {e.path for tr in traces for e in tr.events if e.status != "ok"}


def body(stmts: list[Stmt], prefix: str, guard: set[str], indent: str = "") -> list[str]:
    out: list[str] = []
    for i, s in enumerate(stmts):
        path = f"{prefix}{i}"
        cites = f"  {', '.join(s.clauses)}" if s.clauses else ""
        out.append(f"{indent}# [{path}]{cites}")
        lines = statement(s, path)
        inner = indent
        if path in guard:
            out.append(f"{indent}try:")
            inner = indent + "    "
        out += [inner + ln for ln in lines]
        if s.op == "mode" and s.params.get("decorator"):
            names = _bound_in(s.body)       # the body binds program names, not locals
            if names:
                out.append(f"{inner}    global {', '.join(names)}")
            out += body(s.body, path + ".", guard, inner + "    ") or [inner + "    pass"]
            out.append(f"{inner}{_block_name(path)}()")
        elif s.op == "mode":
            out += body(s.body, path + ".", guard, inner + "    ") or [inner + "    pass"]
        if path in guard:
            out += [f"{indent}except Exception as exc:",
                    f"{indent}    print({f'[{path}] raised'!r}, type(exc).__name__, "
                    f"str(exc).splitlines()[0] if str(exc) else '')"]
        if s.op in ("backward", "backward_many") and path not in guard:  # ends its hook calls
            out.append(f"{indent}print({f'[{path}] backward done'!r})")
    return out


def render(program: Program, prelude: str = "import torch", traces: Iterable[Trace] = (),
           title: str = "", guard_all: bool = False) -> str:
    """A runnable script; statements that did not run cleanly in `traces` are guarded (all
    statements with `guard_all`, for a program whose traces are unknown)."""
    head = title or "A gradspec program"
    if program.seed is not None:
        head += f" (generator seed {program.seed})"
    lines = [f'"""{head}.', "", "Generated by gradspec (conformance/render.py). Lines marked "
             "[path] are program statements,", 'with the spec clauses they exercise."""',
             prelude, HELPERS.strip("\n"), "", ""]
    guard = {p for p, _ in program.walk()} if guard_all else _not_ok(traces)
    lines += body(program.statements, "", guard)
    return "\n".join(lines) + "\n"


def render_replay(program_file: str, engine_spec: str, oracle_spec: str = "torch",
                  device: str = "cpu") -> str:
    """A script for an engine without a torch-shaped module: it runs `gradspec replay`."""
    return "\n".join([
        '"""Reproduce this divergence: the program runs on the engine through its gradspec',
        'adapter (it has no torch-shaped module), and on the oracle, and the traces are',
        f'compared. Same as: gradspec replay {program_file} --engine {engine_spec}',
        'Run it where the engine imports: an import path resolves from the current folder."""',
        "import sys",
        "from pathlib import Path",
        "",
        "from conformance.cli import main",
        "",
        f"sys.exit(main(['replay', str(Path(__file__).with_name({program_file!r})), "
        f"'--engine', {engine_spec!r}, '--oracle', {oracle_spec!r}, '--device', {device!r}]))",
        ""])
