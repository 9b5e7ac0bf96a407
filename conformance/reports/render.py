"""A program as a standalone Python script (the repro attached to each divergence).

The script binds `torch` through a prelude ("import torch", "import refimpl as torch") and
runs the program as plain torch code, printing each observation and hook call as the trace
records it; statements that raised (or were skipped) on either engine run inside try/except so
the script goes on. Each line of code is what engines/torchlike.py does for the statement;
each statement kind (conformance/kinds) says how it renders.
"""
from __future__ import annotations

from collections.abc import Iterable

from ..kinds import KINDS, Kind
from ..lang.program import HarnessError, Program, Stmt
from ..lang.trace import Trace

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
        return None if grad is None else grad * factor
    return hook


def wrong_shape(label):
    def hook(grad):
        show(f"  hook {label} got", grad)
        n = 1
        for s in grad.shape:
            n *= s
        return torch.zeros(n + 1, dtype=grad.dtype)
    return hook


def wrong_dtype(label):
    def hook(grad):
        show(f"  hook {label} got", grad)
        other = torch.float64 if grad.dtype == torch.float32 else torch.float32
        return torch.zeros(grad.shape, dtype=other)
    return hook


def non_tensor(label):
    def hook(grad):
        show(f"  hook {label} got", grad)
        return [1.0]
    return hook


def post(label, returns=False):
    def hook(tensor):
        show(f"  post hook {label} saw .grad", tensor.grad)
        return tensor.grad if returns else None     # a value is an error (HOOK-13)
    return hook


def node_hook(label, factor=None, returns=None):
    """For grad_fn.register_prehook (gets grad_outputs) and, through a lambda, register_hook
    (gets grad_inputs): logs the first gradient, and with a factor scales it; returns="extra"
    gives back one entry too many and returns="list" a list (errors, HOOK-17)."""
    def hook(grads):
        show(f"  node hook {label} got", grads[0] if grads else None)
        if factor is not None and grads and grads[0] is not None:
            return (grads[0] * factor,) + tuple(grads[1:])
        if returns == "extra":
            return tuple(grads) + (None,)
        if returns == "list":
            return list(grads)
        return None
    return hook


def saved_hooks(label, keeps, unpacks="return"):
    """For torch.autograd.graph.saved_tensors_hooks: a pack hook that logs each call and returns
    the tensor (keeps="keep"), a detached copy ("copy") or its index in a list ("key"), and an
    unpack hook that logs each call and returns what pack kept, or with unpacks="non_tensor" a
    list (an error, SAVED-3)."""
    store = []

    def pack(t):
        show(f"  hook {label}.pack got", None)
        if keeps == "copy":
            return t.detach().clone()
        if keeps == "key":
            store.append(t)
            return len(store) - 1
        return t

    def unpack(packed):
        show(f"  hook {label}.unpack got", None)
        if unpacks == "non_tensor":
            return [1.0]
        return store[packed] if keeps == "key" else packed
    return pack, unpack


def multi(label, mode):
    """For torch.autograd.graph.register_multi_grad_hook: logs each gradient it gets (mode
    "all": one per tensor, None where there is none; "any": the one it gets); returns None."""
    def hook(grads):
        for grad in (grads if mode == "all" else [grads]):
            show(f"  hook {label} got", grad)
    return hook
'''

def _kind(s: Stmt, path: str) -> Kind:
    """The statement's kind, once its fields check; HarnessError otherwise."""
    kind = KINDS.get(s.op)
    if kind is None:
        raise HarnessError(f"statement {path}: unknown op {s.op!r}")
    kind.check(s, path)
    return kind


def statement(s: Stmt, path: str) -> list[str]:
    """The source lines of one statement (a block kind's: its header, `with ...:`). One
    gradspec cannot express (a harness error) is a line that prints so."""
    try:
        return _kind(s, path).render(s, path)
    except HarnessError as exc:
        return [f"print({f'[{path}] harness error: {exc}'!r})"]


def _lines(s: Stmt, path: str, guard: set[str]) -> tuple[list[str], list[str]]:
    """The statement's lines, with a block's body, and those after it when it is unguarded."""
    try:
        kind = _kind(s, path)
    except HarnessError:
        return statement(s, path), []
    lines = kind.render(s, path)
    if kind.block:
        lines += kind.render_body(s, path, body(s.body, path + ".", guard), _bound_in(s.body))
    return lines, kind.render_done(s, path)


def _bound_in(stmts: list[Stmt]) -> list[str]:
    """Names the statements (and nested blocks) bind in the script, first-seen order."""
    seen: dict[str, None] = {}
    for path, s in enumerate(stmts):
        try:
            seen.update(dict.fromkeys(_kind(s, str(path)).render_binds(s)))
        except HarnessError:        # rendered as a print: binds nothing
            continue
        seen.update(dict.fromkeys(_bound_in(s.body)))
    return list(seen)


def _not_ok(traces: Iterable[Trace]) -> set[str]:
    return {e.path for tr in traces for e in tr.events if e.status != "ok"}


def body(stmts: list[Stmt], prefix: str, guard: set[str], indent: str = "") -> list[str]:
    """The lines of a run of statements (a block's body: prefix 'path.')."""
    out: list[str] = []
    for i, s in enumerate(stmts):
        path = f"{prefix}{i}"
        cites = f"  {', '.join(s.clauses)}" if s.clauses else ""
        out.append(f"{indent}# [{path}]{cites}")
        lines, done = _lines(s, path, guard)
        inner = indent
        if path in guard:
            out.append(f"{indent}try:")
            inner = indent + "    "
        out += [inner + ln for ln in lines]
        if path in guard:
            out += [f"{indent}except Exception as exc:",
                    f"{indent}    print({f'[{path}] raised'!r}, type(exc).__name__, "
                    f"str(exc).splitlines()[0] if str(exc) else '')"]
        else:                       # e.g. a backward's end marker (ends its hook calls)
            out += [indent + ln for ln in done]
    return out


def render(program: Program, prelude: str = "import torch", traces: Iterable[Trace] = (),
           title: str = "", guard_all: bool = False) -> str:
    """A runnable script; statements that did not run cleanly in `traces` are guarded (all
    statements with `guard_all`, for a program whose traces are unknown)."""
    head = title or "A gradspec program"
    if program.seed is not None:
        head += f" (generator seed {program.seed})"
    lines = [f'"""{head}.', "", "Generated by gradspec (conformance/reports/render.py). Lines "
             "marked [path] are program statements,", 'with the spec clauses they exercise."""',
             prelude, HELPERS.strip("\n"), "", ""]
    for helpers in dict.fromkeys(_kind_helpers(program)):
        lines += [helpers.strip("\n"), "", ""]
    guard = {p for p, _ in program.walk()} if guard_all else _not_ok(traces)
    lines += body(program.statements, "", guard)
    return "\n".join(lines) + "\n"


def _kind_helpers(program: Program) -> list[str]:
    """The helpers of the kinds the program's statements have (Kind.render_helpers)."""
    found = []
    for _, s in program.walk():
        kind = KINDS.get(s.op)
        if kind is not None and kind.render_helpers():
            found.append(kind.render_helpers())
    return found


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
