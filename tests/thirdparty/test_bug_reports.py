"""Every report-ready bug file docs/bugs/*.md still reproduces on the installed engine.

Each file has one ```python block (a standalone script whose asserts state the engine's current,
buggy behaviour) followed by the ```text block of its output, pasted from a run. The test runs
the script in-process and checks both: its asserts, and that it prints what the file says it
prints. A failure means the engine changed (fixed, or broken differently): update or retire the
report, and its finding in docs/findings.md. Blocks fenced ```py are documentation only (they
abort or hang the interpreter). A script whose engine is not installed is skipped.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
import re
import sys
import types
import warnings
from pathlib import Path

import pytest

BUGS = Path(__file__).resolve().parents[2] / "docs" / "bugs"
_BLOCK = re.compile(r"^```python\n(.*?)^```\n.*?^```text\n(.*?)^```", re.S | re.M)


def _reports() -> list[tuple[str, str, str, int]]:
    out = []
    for path in sorted(BUGS.glob("*.md")):
        if path.name == "README.md":
            continue
        text = path.read_text(encoding="utf-8")
        blocks = list(_BLOCK.finditer(text))
        out.append((path.stem, blocks[0].group(1) if blocks else "",
                    blocks[0].group(2) if blocks else "",
                    text.count("\n", 0, blocks[0].start(1)) if blocks else 0))
    return out


def test_every_report_has_a_script_and_its_output():
    reports = _reports()
    assert reports, "docs/bugs has no report"
    for name, code, output, _ in reports:
        assert code.strip() and output.strip(), f"docs/bugs/{name}.md: no ```python + ```text pair"


def test_index_lists_every_report():
    index = (BUGS / "README.md").read_text(encoding="utf-8")
    for name, *_ in _reports():
        assert f"({name}.md)" in index, f"docs/bugs/README.md does not link {name}.md"


@functools.cache
def _compile_broken() -> str | None:
    try:
        import torch
        torch.compile(lambda a: a + 1, backend="aot_eager", fullgraph=True)(torch.ones(1))
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


@pytest.mark.parametrize("name,code,output,line",
                         [pytest.param(*r, id=r[0]) for r in _reports()])
def test_bug_report_reproduces(name, code, output, line):
    engine = "paddle" if re.search(r"^import paddle", code, re.M) else \
        "mygrad" if re.search(r"^import mygrad", code, re.M) else \
        "thunder" if re.search(r"^import thunder", code, re.M) else "torch"
    if importlib.util.find_spec(engine) is None:
        pytest.skip(f"{engine} is not installed")
    if "torch.compile" in code and _compile_broken():
        pytest.skip(f"torch.compile does not work here: {_compile_broken()}")
    if engine == "paddle":
        os.environ.setdefault("GLOG_minloglevel", "2")
    # a real module: dynamo resolves the globals of traced code (hooks included) through
    # sys.modules[__name__]
    module = types.ModuleType("bug_report_" + re.sub(r"\W", "_", name))
    sys.modules[module.__name__] = module
    buf = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(buf):
            warnings.simplefilter("ignore")
            exec(compile("\n" * line + code, str(BUGS / f"{name}.md"), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    got = [ln.rstrip() for ln in buf.getvalue().rstrip().splitlines()]
    want = [ln.rstrip() for ln in output.rstrip().splitlines()]
    assert got == want, f"docs/bugs/{name}.md: the script now prints something else"
