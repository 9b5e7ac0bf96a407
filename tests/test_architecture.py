"""The layering rules of docs/ARCHITECTURE.md, checked on the source of conformance/ and refimpl/.

Every module is parsed with `ast`; every import counts, at any depth (a lazy import inside a
function too), relative ones resolved against the importing module's package. Four rules, each
a test parametrized by module, so that a failure names the module:

- no import cycle: the module is on no cycle of the import graph (the cycle is printed);
- no upward import: nothing it imports sits on a higher layer (LAYERS, the table of
  docs/ARCHITECTURE.md as data); a re-export module at an old flat path (OLD_PATHS,
  `is_reexport`) is exempt as an importer, and, imported, counts at the layer of the module it
  re-exports;
- no module over MAX_MODULE_LINES lines, no function over MAX_FUNCTION_LINES lines.

An edge of the import graph goes from a module to each module it names: `import a.b` names
`a.b`; `from a import b` names `a.b` when that is a module, else `a`. The package `__init__`
modules Python runs on the way (`a` for `import a.b`) are not edges. Imports by string
(importlib.import_module, entry points) are not seen.
"""
from __future__ import annotations

import ast
from collections import deque
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("refimpl", "conformance")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80

# package or module -> layer, bottom to top (docs/ARCHITECTURE.md); the longest prefix decides.
# refimpl is below the whole suite: it imports nothing of it.
LAYERS: dict[str, int] = {
    "refimpl": 0,
    "conformance": 0,                   # the package's own __init__: a version string
    "conformance.spec": 1,
    "conformance.lang": 2,
    "conformance.engines": 3,
    "conformance.model": 4,
    "conformance.kinds": 5,
    "conformance.gen": 6,
    "conformance.judge": 6,
    "conformance.reports": 7,
    "conformance.campaign": 8,
    "conformance.cli": 9,
    "conformance.pytest_plugin": 9,
    "conformance.suite": 9,                 # the shipped pytest suite, beside the plugin
    "conformance.__main__": 9,
}

# old flat module -> where it moves. Until it is a thin re-export module it is judged as a
# module of its new layer; once it is one, it is exempt as an importer.
OLD_PATHS: dict[str, str] = {
    "conformance.specdoc": "conformance.spec.reader",
    "conformance.examples": "conformance.spec.examples",
    "conformance.program": "conformance.lang.program",
    "conformance.executor": "conformance.judge.executor",
    "conformance.compare": "conformance.judge.compare",
    "conformance.minimize": "conformance.judge.minimize",
    "conformance.capabilities": "conformance.judge.probes",
    "conformance.xfail": "conformance.judge.xfail",
    "conformance.generate": "conformance.gen.core",
    "conformance.strategies": "conformance.gen.strategies",
    "conformance.render": "conformance.reports.render",
    "conformance.report": "conformance.reports.report",
    "conformance.runner": "conformance.campaign.runner",
    "conformance.matrix": "conformance.campaign.matrix",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _discover() -> dict[str, Path]:
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            found[_module_name(path)] = path
    return found


PATHS = _discover()
MODULES = sorted(PATHS)


@cache
def _tree(name: str) -> ast.Module:
    path = PATHS[name]
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _package(name: str) -> str:
    """The package a module's relative imports start from."""
    return name if PATHS[name].name == "__init__.py" else name.rpartition(".")[0]


def _known(dotted: str) -> str | None:
    """The longest prefix of `dotted` that is one of our modules."""
    while dotted:
        if dotted in PATHS:
            return dotted
        dotted = dotted.rpartition(".")[0]
    return None


def _targets(name: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [m for a in node.names if (m := _known(a.name))]
    base = node.module or ""
    if node.level:
        pkg = _package(name).split(".")
        pkg = pkg[:len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([base] if base else []))
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        m = sub if sub in PATHS else _known(base)
        if m:
            out.append(m)
    return out


@cache
def imports(name: str) -> dict[str, int]:
    """Our modules that `name` imports, each with the line of its first import."""
    out: dict[str, int] = {}
    for node in ast.walk(_tree(name)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(name, node):
                if target != name:
                    out.setdefault(target, node.lineno)
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def is_reexport(name: str) -> bool:
    """A module at an old flat path that only imports and names things: its body is imports
    and assignments (`__all__`, an old table derived from the new homes), no def, no class."""
    if name not in OLD_PATHS:
        return False
    body = _tree(name).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign))
               for s in body)


def layer(name: str) -> int:
    dotted = OLD_PATHS.get(name, name)
    while dotted not in LAYERS:
        if "." not in dotted:
            raise KeyError(f"{name} is on no layer: add its package to LAYERS")
        dotted = dotted.rpartition(".")[0]
    return LAYERS[dotted]


def shortest_cycles(graph: dict[str, list[str]]) -> dict[str, list[str]]:
    """Node -> one shortest cycle through it (first node repeated last), for every node on a
    cycle of `graph` (node -> the nodes it points to)."""
    out: dict[str, list[str]] = {}
    for start in graph:
        prev: dict[str, str] = {}
        queue = deque([start])
        while queue and start not in prev:
            here = queue.popleft()
            for nxt in graph.get(here, ()):
                if nxt not in prev:
                    prev[nxt] = here
                    queue.append(nxt)
        if start in prev:
            path = [start]
            while len(path) == 1 or path[-1] != start:
                path.append(prev[path[-1]])
            out[start] = path[::-1]
    return out


@cache
def _cycles() -> dict[str, list[str]]:
    return shortest_cycles({m: list(imports(m)) for m in MODULES})


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, first line, lines) of every function, methods and nested ones too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node.lineno, node.end_lineno - node.lineno + 1
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def test_the_layer_table_covers_every_module():
    assert MODULES and all(layer(m) >= 0 for m in MODULES)


def test_the_resolver_reads_relative_and_lazy_imports():
    assert "conformance.spec.reader" in imports("conformance.spec.examples")
    assert "conformance.engines.base" in imports("conformance.engines")
    lazy = imports("conformance.campaign.coverage")    # `from ..generate import ...` in a def
    assert any(m.startswith("conformance.gen") for m in lazy)


def test_the_cycle_finder():
    graph = {"a": ["b"], "b": ["c", "d"], "c": ["a"], "d": [], "e": ["a", "e2"], "e2": ["e"]}
    assert shortest_cycles(graph) == {"a": ["a", "b", "c", "a"], "b": ["b", "c", "a", "b"],
                                      "c": ["c", "a", "b", "c"], "e": ["e", "e2", "e"],
                                      "e2": ["e2", "e", "e2"]}
    assert is_reexport("conformance.specdoc") and not is_reexport("conformance.cli")


@pytest.mark.parametrize("name", MODULES)
def test_no_import_cycle(name):
    cycle = _cycles().get(name)
    assert cycle is None, f"{name} is on an import cycle: {' -> '.join(cycle)}"


@pytest.mark.parametrize("name", MODULES)
def test_no_import_from_a_higher_layer(name):
    if is_reexport(name):
        return      # a re-export at an old path imports its new home, wherever that is
    mine = layer(name)
    upward = [f"{target} (layer {layer(target)}, line {line})"
              for target, line in imports(name).items() if layer(target) > mine]
    assert not upward, f"{name} (layer {mine}) imports from higher layers: {', '.join(upward)}"


@pytest.mark.parametrize("name", MODULES)
def test_module_size(name):
    lines = len(PATHS[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines (at most {MAX_MODULE_LINES})"


@pytest.mark.parametrize("name", MODULES)
def test_function_size(name):
    long = [f"{fn} (line {line}, {n} lines)" for fn, line, n in _functions(_tree(name))
            if n > MAX_FUNCTION_LINES]
    assert not long, f"{name}: functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"
