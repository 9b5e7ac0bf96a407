"""No value from a program file is ever run as code, on any built-in engine.

Each payload, were it pasted into Python source and run, would create a marker file. It is put
in every string field of a program (and in the keys of its params and kw, and in place of its
numbers and index items), one field at a time, and the program is

- replayed (`gradspec replay`): rejected with exit 2 and one stderr line, before any engine
  runs; or, for free text (a hook's label, meta), run to the end;
- executed directly, past the validator (a Program built in Python): the engine's entry, each
  kind's `check`, refuses the statement as a harness error;

and the marker must not exist afterwards. A label is free text: it is written into a repro
script only as a string literal, which the script's syntax tree shows. torch-compile (which
compiles source) and paddle are slow: fewer payloads there, every field still.
"""
from __future__ import annotations

import ast
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.engines import EngineError, load_engine
from conformance.judge.executor import execute
from conformance.lang.program import Program, ProgramError
from conformance.reports.render import render

BASE: dict[str, Any] = {"gradspec_program": 1, "seed": 3, "meta": {"note": "a test"},
                        "statements": [
    {"op": "leaf", "out": "x", "params": {"values": [1.0, 2.0], "shape": [2],
                                          "dtype": "float64", "requires_grad": True}},
    {"op": "leaf", "out": "g", "params": {"values": [1.0, 1.0], "shape": [2],
                                          "dtype": "float64", "requires_grad": False}},
    {"op": "call", "out": "y", "args": ["x", 2.0], "params": {"fn": "mul", "kw": {}},
     "clauses": ["GRAPH-1"]},
    {"op": "view", "out": "v", "target": "y", "params": {"fn": "reshape", "kw": {"shape": [2]}}},
    {"op": "getitem", "out": "w", "target": "x", "params": {"index": [0]}},
    {"op": "hook", "out": "h", "target": "y", "params": {"behaviour": "scale", "factor": 2.0,
                                                         "label": "h"}},
    {"op": "node_hook", "out": "n", "target": "y", "params": {"kind": "pre",
                                                              "behaviour": "record",
                                                              "label": "n"}},
    {"op": "post_hook", "out": "p", "target": "x", "params": {"label": "p"}},
    {"op": "observe", "target": "x", "params": {"what": "value"}},
    {"op": "mode", "params": {"mode": "no_grad"}, "body": [
        {"op": "observe", "target": "v", "params": {"what": "requires_grad"}}]},
    {"op": "call", "out": "s", "args": ["v"], "params": {"fn": "sum", "kw": {"dim": 0}}},
    {"op": "grad", "params": {"outputs": ["s"], "inputs": ["x"], "grad_outputs": None,
                              "retain_graph": True, "outs": ["gx"]}},
    {"op": "backward_many", "params": {"tensors": ["s"], "grad_tensors": None,
                                       "retain_graph": True}},
    {"op": "backward", "target": "s", "params": {"inputs": ["x"]}},
    {"op": "remove", "target": "h"},
    {"op": "set_grad", "target": "x", "args": ["g"]},
    {"op": "inplace", "target": "g", "args": ["gx"], "params": {"fn": "add_"}},
    {"op": "observe", "target": "g", "params": {"what": "value"}},
]}

# numbers and index items a payload also replaces (paths into BASE)
NOT_STRINGS = [("seed",), ("statements", 0, "params", "values", 0),
               ("statements", 0, "params", "shape", 0), ("statements", 2, "args", 1),
               ("statements", 3, "params", "kw", "shape", 0),
               ("statements", 4, "params", "index", 0), ("statements", 5, "params", "factor"),
               ("statements", 10, "params", "kw", "dim")]


def free_text(path: tuple[Any, ...]) -> bool:
    """Fields that hold free text, never code: a hook's label, and meta."""
    return path[0] == "meta" or path[-1:] == ("label",)


def payloads(marker: Path) -> list[str]:
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [
        code,
        f"x'); {code} #", f'x"); {code} #', f"x; {code}",
        f"x\n{code}", f"x\r{code}", f"x\x0b{code}", f"x\x0c{code}", f"x\u2028{code}",
        f"{{{code}}}", f"exp()\r{code}", f"mul\n    {code}",
    ]


def _strings(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, str):
        yield path
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, path + (i,))
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, path + (k,))


def _keys(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Paths of the keys of every params and kw object."""
    if isinstance(node, list):
        for i, v in enumerate(node):
            yield from _keys(v, path + (i,))
    elif isinstance(node, dict):
        for k, v in node.items():
            if path[-1:] in (("params",), ("kw",)):
                yield path + (k,)
            yield from _keys(v, path + (k,))


def variants(payload: str) -> Iterator[tuple[str, bool, dict[str, Any]]]:
    """(where, free text, the program's JSON) with `payload` in one place."""
    for path in [*_strings(BASE, ()), *NOT_STRINGS]:
        data = copy.deepcopy(BASE)
        node = data
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = payload
        yield "/".join(map(str, path)), free_text(path), data
    for path in _keys(BASE, ()):
        data = copy.deepcopy(BASE)
        node = data
        for step in path[:-1]:
            node = node[step]
        node[payload] = node.pop(path[-1])
        yield "/".join(map(str, path)) + " (key)", False, data


def test_the_base_program_runs_cleanly():
    p = Program.from_json(BASE)
    trace = execute(p, load_engine("torch"))
    assert [e.status for e in trace.events] == ["ok"] * len(trace.events)
    assert sum(1 for _ in variants("z")) > 90         # every field, one at a time


def statement_path(where: str) -> str:
    """The path of the statement a variant changed: statements/9/body/0/target -> 9.0."""
    steps = where.split("/")[1:]
    path = [steps[0]]
    while len(steps) > 2 and steps[1] == "body":
        path.append(steps[2])
        steps = steps[2:]
    return ".".join(path)


def _engine(name: str):
    try:
        return load_engine(name)
    except EngineError as exc:
        pytest.skip(str(exc))


ENGINES = [("refimpl", None), ("torch", None), ("torch-compile", 2), ("paddle", 2)]


@pytest.mark.parametrize("engine, many", ENGINES, ids=[e for e, _ in ENGINES])
def test_replay_never_runs_a_payload(engine, many, tmp_path, capsys):
    _engine(engine)
    marker = tmp_path / "marker"
    file = tmp_path / "program.json"
    ran = 0
    for k, payload in enumerate(payloads(marker)[:many]):
        for where, free, data in variants(payload):
            if free and (ran >= 2 if many else k > 1):
                continue            # free text runs the engines: a few suffice
            file.write_text(json.dumps(data))
            # a generous timeout: torch.compile's first compilations on a busy machine
            # outlasted the default 10 s, and the test is about payloads, not hangs
            code = main(["replay", str(file), "--engine", engine, "--timeout", "300"])
            out, err = capsys.readouterr()
            assert not marker.exists(), (where, payload)
            if free:
                ran += 1
                assert code in (0, 1), (where, payload, err)
            else:
                assert code == 2, (where, payload, out)
                lines = err.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("gradspec: error: "), lines


@pytest.mark.parametrize("engine, many", ENGINES, ids=[e for e, _ in ENGINES])
def test_the_engines_entry_refuses_a_payload_past_the_validator(engine, many, tmp_path):
    e = _engine(engine)
    marker = tmp_path / "marker"
    for payload in payloads(marker)[:many]:
        for where, free, data in variants(payload):
            if free and many:
                continue
            try:
                p = Program.from_json(data)
            except ProgramError:
                continue            # no Program holds it: nothing can run it
            trace = execute(p, e)
            assert not marker.exists(), (where, payload)
            if not free and "clauses" not in where and not where.endswith("(key)"):
                event = trace.by_path()[statement_path(where)]
                assert event.status in ("harness", "skipped"), (where, event)


def test_a_label_is_written_into_a_repro_only_as_a_string(tmp_path):
    for payload in payloads(tmp_path / "marker"):
        for where, free, data in variants(payload):
            if not free or where.startswith("meta"):
                continue
            script = render(Program.from_json(data), guard_all=True)
            tree = ast.parse(script)
            names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            assert "__import__" not in names, (where, payload)
            # written as a string, or refused (a label on more than one line): then the
            # script says why, the text only in the message's string
            assert any(isinstance(n, ast.Constant) and n.value == payload
                       for n in ast.walk(tree)) or (
                "harness error" in script and not payload.isprintable()), (where, payload)


def test_a_payload_run_as_code_would_leave_the_marker(tmp_path):
    """The check above is meaningful: run as code, the payload creates the marker."""
    marker = tmp_path / "marker"
    exec(compile(payloads(marker)[0], "<payload>", "exec"), {})   # the test's own text
    assert marker.exists()


def test_the_compiled_adapter_builds_no_source_from_a_payload(tmp_path):
    """torch-compile's methods, called directly: an fn, a setting or an index item that is
    a payload is refused before any source is compiled."""
    from conformance.engines.compiled import region_source
    from conformance.lang.ops import OpError
    from conformance.lang.program import HarnessError
    e = _engine("torch-compile")
    marker = tmp_path / "marker"
    t = e.leaf([1.0, 2.0], [2], "float64", True)
    for payload in payloads(marker)[:4]:
        calls = [(e.call, payload, [t], {}), (e.view, t, payload, {}),
                 (e.inplace, e.detach(t), payload, [], {}),
                 (e.call, "sum", [t], {"dim": payload}),
                 (e.call, "clamp", [t], {"min": payload, "max": None}),
                 (e.view, t, "reshape", {"shape": [payload]}),
                 (e.getitem, t, (payload,)), (e.getitem, t, (slice(payload, None, None),)),
                 (e.call, "mul", [t, float("nan")], {})]
        for method, *args in calls:
            with pytest.raises(OpError):
                method(*args)
            assert not marker.exists(), (method, args)
        for src in [f"def region(a):\n    return a.exp()\n{payload}\n",
                    f"def region(a):\n    return {payload}\n",
                    f"def region(a):\n    return a.exp({payload!r})\n"]:
            with pytest.raises((HarnessError, SyntaxError)):
                region_source(src, ["a"])
    assert region_source("def region(a):\n    return a.exp()\n", ["a"])
    # the op table's comparisons are spelt as operators (spec/deriv.md): a region may hold them
    for op in (">", "<", ">=", "<=", "==", "!="):
        assert region_source(f"def region(a, b):\n    return a {op} b\n", ["a", "b"])
    t = e.leaf([1.0, -2.0], [2], "float64", True)
    assert e.to_list(e.call("gt", [t, 0.0], {})) == [True, False]
