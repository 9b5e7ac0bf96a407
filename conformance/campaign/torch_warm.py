"""torch's lazy imports, made at once. Imported by name before a campaign's workers start
(process.PRELOAD: by a forkserver, or by the process that forks the workers), so that no
worker pays them on the clock of the program that first needs them, and each worker does not
pay them again:

- torch.fx.experimental.symbolic_shapes, with sympy: the first backward given a gradient
  tensor imports it (torch 2.13's autograd/__init__.py, _make_grads); on a busy machine that
  outlasted a program's time limit ("the oracle timed out"), so loading the torch engine
  imports it too (engines/torchlike.py, _warm);
- torch._dynamo: the first backward through one of torch's Python-written formulas imports it
  (torch/_compile.py, _disable_dynamo; abs differentiated twice with create_graph does), 1.1 s
  of CPU.

Neither starts a thread (tests/conformance/test_engines.py). Importing this module never
fails, whatever the torch build: a forkserver dies of a preload that raises anything but
ImportError, and a Dask worker imports PRELOAD unguarded (cluster.py).
"""
from __future__ import annotations

import importlib

LAZY = ("torch.fx.experimental.symbolic_shapes", "torch._dynamo")

for _name in LAZY:
    try:
        importlib.import_module(_name)
    except Exception:  # noqa: BLE001 - only a saving of time, never fatal
        pass
