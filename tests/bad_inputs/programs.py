"""A good program that uses most statement kinds and observes every core observable: the
base that tests/test_bad_inputs.py breaks one field at a time, and a program source
(`--source tests.bad_inputs.programs:source`) for runs of the duck-typed adapters."""
from __future__ import annotations

from typing import Any

BASE = {"gradspec_program": 1, "seed": None, "meta": {}, "statements": [
    {"op": "leaf", "out": "x", "params": {"values": [1.0, 2.0, 3.0, 4.0], "shape": [2, 2],
                                          "dtype": "float64", "requires_grad": True}},
    {"op": "call", "out": "y", "args": ["x", 2.0], "params": {"fn": "mul"}},
    {"op": "view", "out": "v", "target": "y", "params": {"fn": "reshape",
                                                         "kw": {"shape": [4]}}},
    {"op": "getitem", "out": "r", "target": "v", "params": {"index": [{"slice": [0, 2, None]}]}},
    {"op": "call", "out": "s", "args": ["r"], "params": {"fn": "sum"}},
    {"op": "mode", "params": {"mode": "no_grad"}, "body": [
        {"op": "call", "out": "q", "args": ["x", "x"], "params": {"fn": "add"}}]},
    {"op": "hook", "out": "h", "target": "y", "params": {"behaviour": "record", "label": "h"}},
    {"op": "backward", "target": "s"},
    {"op": "observe", "target": "x", "params": {"what": "grad"}},
    {"op": "grad", "params": {"outputs": ["s"], "inputs": ["x"], "outs": ["gx"]}},
    {"op": "remove", "target": "h"},
    *[{"op": "observe", "target": "y", "params": {"what": what}}
      for what in ("value", "shape", "dtype", "is_leaf", "grad_fn", "next_functions",
                   "version")],
]}


def source(seed: int, capabilities: Any = None, size: int = 20) -> Any:
    """BASE as a Program, whatever the seed."""
    from conformance.lang.program import Program
    program = Program.from_json(BASE)
    program.seed = seed
    return program
