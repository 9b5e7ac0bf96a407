"""refimpl stays small: its core engine (the graph, nodes, hooks, grad modes and the backward
pass, for every area of the spec) is under 1,800 lines of code, counted without blank lines,
comments and docstrings, and each core module opens with a docstring that names the clauses
it implements, so that a reader can go from a clause to its code and back.

Not counted: the ops (refimpl/ops/, each op's forward beside its backward), `refimpl.nn`, the
array namespace it runs on (backend.py), the array-like surface of a tensor (shape,
strides, conversions: surface.py) and the helpers that make and print tensors (dtypes,
memory formats in layout, broadcast, sizes, factories, formatting, the package's own
__init__)."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

REFIMPL = Path(__file__).resolve().parents[2] / "refimpl"
CORE = ("autograd", "engine", "node", "tensor", "hooks", "graph", "grad_mode", "function",
        "saved_hooks", "differentiable", "errors", "function_errors")
BUDGET = 1800
CLAUSE = re.compile(r"\b[A-Z]+-\d+\b")


def code_lines(source: str) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    tree = ast.parse(source)
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docs.update(range(first.lineno, first.end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docs)
    return len(lines)


def test_the_counter_skips_blank_lines_comments_and_docstrings():
    src = ('"""Module\ndoc."""\n\n# a comment\ndef f(x):\n    """Doc."""\n'
           '    return (x +\n            1)  # c\n')
    assert code_lines(src) == 3      # def, and the two lines of the return


def test_the_core_engine_is_under_its_budget():
    sizes = {m: code_lines((REFIMPL / f"{m}.py").read_text(encoding="utf-8")) for m in CORE}
    assert sum(sizes.values()) < BUDGET, sizes


def test_every_module_is_counted_or_named_as_outside_the_core():
    outside = {"__init__", "backend", "surface", "dtypes", "layout", "broadcast", "sizes",
               "factories", "formatting"}
    top = {p.stem for p in REFIMPL.glob("*.py")}
    assert top == set(CORE) | outside, top ^ (set(CORE) | outside)


@pytest.mark.parametrize("module", CORE)
def test_each_core_module_names_the_clauses_it_implements(module):
    doc = ast.get_docstring(ast.parse((REFIMPL / f"{module}.py").read_text(encoding="utf-8")))
    assert doc and CLAUSE.search(doc), f"refimpl/{module}.py: no clause in its docstring"
