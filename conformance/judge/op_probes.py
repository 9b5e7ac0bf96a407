"""One probe program per op of the op table, for engines that declare ops they lack
(`Engine.lacks_ops`, conformance/spec/capabilities.py): an op the engine says it has must run
as on the oracle, and one it says it lacks is reported if it works after all. Each program
runs the op once on small positive values (log and sqrt are defined there) and, where its
result has a gradient, a backward pass through it."""
from __future__ import annotations

from typing import Any

from ..lang import ops
from ..lang.program import Program, Stmt
from ..spec.capabilities import closure

PREFIX = "op:"      # the name of an op's probe among the capability probes
_X = [0.5, 1.5, 2.0, 0.25]
_W = [1.0, 2.0, 0.5, 3.0]
# argument form -> the settings its probe passes (the forms whose settings are drawn from
# the row use the first value the row draws)
_SETTINGS: dict[str, dict[str, Any]] = {
    "sizes": {"shape": [4], "size": [2, 2, 2]}, "dims": {"dims": [0, 1]}, "dim": {"dim": 0},
    "dim_keepdim": {"dim": 0}, "narrow": {"dim": 0, "start": 0, "length": 1},
    "dim_index": {"dim": 0, "index": 1},
}
# the capability a statement of each kind needs besides the row's own `needs`
_KIND_NEEDS = {"call": "core", "view": "view_ops", "inplace": "inplace"}
OP_KINDS = tuple(_KIND_NEEDS)       # the statement kinds whose params.fn is an op


def _leaf(out: str, values: list[float], rg: bool = True) -> Stmt:
    return Stmt("leaf", out=out, params={"values": values, "shape": [2, 2],
                                         "dtype": "float64", "requires_grad": rg})


def _kw(row: ops.Op) -> dict[str, Any]:
    if "exponent" in row.draws:
        return {"exponent": row.draws["exponent"][0]}
    if "bounds" in row.draws:
        lo, hi = row.draws["bounds"][0]
        return {"min": lo, "max": hi}
    return {k: v for k, v in _SETTINGS.get(row.form, {}).items() if k in row.kw}


def probed_ops(caps: frozenset[str]) -> list[str]:
    """The ops a program for an engine of these capabilities may name: their probes."""
    full = closure(caps)
    return [r.name for r in ops.OPS if _KIND_NEEDS[r.kind] in full
            and (r.needs is None or r.needs in full)]


def op_program(name: str) -> Program:
    """The probe program of one op."""
    row = ops.ROWS[name]
    kw = _kw(row)
    body = [_leaf("x", _X), _leaf("w", _W)]
    if row.kind == "view":
        body.append(Stmt("view", out="y", target="x", params={"fn": name, "kw": kw}))
    elif row.kind == "inplace":
        args: list[Any] = [2.0] if name == "fill_" else ["w"] if row.arity else []
        body += [Stmt("call", out="y", args=["x", 1.0], params={"fn": "mul", "kw": {}}),
                 Stmt("inplace", target="y", args=args, params={"fn": name, "kw": kw})]
    else:
        args = ["x", "w"][:row.arity]
        if row.family == "where":       # where(x, condition, w)
            body.append(Stmt("leaf", out="c", params={
                "values": [True, False, False, True], "shape": [2, 2], "dtype": "bool",
                "requires_grad": False}))
            args = ["x", "c", "w"]
        body.append(Stmt("call", out="y", args=args, params={"fn": name, "kw": kw}))
    body.append(Stmt("observe", target="y", params={"what": "value"}))
    if row.dtype not in ("bool", "int64"):      # a result with a gradient
        body += [Stmt("call", out="s", args=["y"], params={"fn": "sum", "kw": {}}),
                 Stmt("backward", target="s", params={}),
                 Stmt("observe", target="x", params={"what": "grad"})]
    return Program(body, meta={"probe": PREFIX + name})
