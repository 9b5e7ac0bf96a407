"""Every ```python block of docs/findings.md runs and asserts what the engine does today.

Clauses (as divergences): DERIV-1, DERIV-4, FREE-1, GRAPH-1, LEAF-5, LEAF-6, LEAF-9, MODE-1,
API-6, RETAIN-1, RETAIN-7, VER-2, VER-4, VER-6, VER-8, VER-11, VER-13, FREE-3, FREE-4, HOOK-5,
HOOK-13, HOOK-14, HOOK-16, RETAIN-2, RETAIN-5, INPLACE-1, INPLACE-2, INPLACE-3, INPLACE-5,
INPLACE-7, INPLACE-13, INPLACE-15, MODE-9, API-1, API-4, API-9, API-10, LEAF-11, LEAF-12,
LEAF-13, LEAF-15, LEAF-16, VIEW-1, VIEW-3, INPLACE-8, INPLACE-9, INPLACE-10, INPLACE-14,
INPLACE-17, INPLACE-18; lightning-thunder (T entries): VIEW-1, FREE-1, FREE-7, VER-7, VER-16,
DERIV-4, LEAF-5, GRAPH-1.

A block that fails means the engine changed: the finding is stale (or newly wrong) and
docs/findings.md needs a look. Blocks for an engine that is not installed are skipped; blocks
fenced ```py are documentation only (they crash or hang the interpreter).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
import types
import warnings
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "findings.md"


def _blocks() -> list[tuple[str, str]]:
    out, heading = [], "preamble"
    text = DOC.read_text(encoding="utf-8")
    for m in re.finditer(r"^#### (\S+)|^```python\n(.*?)^```", text, re.S | re.M):
        if m.group(1):
            heading, n = m.group(1).rstrip("."), 0
        else:
            n = sum(1 for b in out if b[0].startswith(heading))
            line = text.count("\n", 0, m.start(2))     # so tracebacks point into the doc
            out.append((f"{heading}-{n}", "\n" * line + m.group(2)))
    return out


@functools.cache
def _compile_broken() -> str | None:
    """Why torch.compile cannot run here, or None (some platforms lack dynamo support)."""
    try:
        import torch
        torch.compile(lambda a: a + 1, backend="aot_eager", fullgraph=True)(torch.ones(1))
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


@pytest.mark.parametrize("code", [pytest.param(c, id=i) for i, c in _blocks()])
def test_finding_repro(code):
    engine = "paddle" if re.search(r"^import paddle", code, re.M) else \
        "tinygrad" if re.search(r"^from tinygrad import", code, re.M) else \
        "mygrad" if re.search(r"^import mygrad", code, re.M) else \
        "thunder" if re.search(r"^import thunder", code, re.M) else "torch"
    if importlib.util.find_spec(engine) is None:
        pytest.skip(f"{engine} is not installed")
    if engine == "torch" and "torch.compile" in code and _compile_broken():
        pytest.skip(f"torch.compile does not work here: {_compile_broken()}")
    if engine == "paddle":
        os.environ.setdefault("GLOG_minloglevel", "2")
    # run as a real module: dynamo resolves the globals of traced code (tensor hooks under
    # compiled autograd included) through sys.modules[__name__]; with a bare dict it fails
    # with ModuleNotFoundError, which a block expecting "some error" would mistake for the bug
    module = types.ModuleType("finding_" + re.sub(r"\W", "_", str(abs(hash(code)))))
    sys.modules[module.__name__] = module
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, str(DOC), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
