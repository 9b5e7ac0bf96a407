"""conformance.lang.validate: every generated program validates, and every malformed one is a
ProgramError, one line naming the statement's path, its op and the field; `gradspec replay`
rejects it with exit 2 before any engine runs."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conformance.cli import main
from conformance.gen.core import ALL_CAPABILITIES, generate, program_for_seed
from conformance.gen.strategies import HypothesisChooser
from conformance.judge.minimize import minimize
from conformance.lang.program import Program, ProgramError
from conformance.lang.program import Stmt as S
from conformance.lang.validate import is_valid, load, validate
from tests.conformance.test_executor import leaf, obs, sample
from tests.conformance.test_generator_golden import CAPS


# ---- the generator's self-check: what it draws validates ---------------------------------
@pytest.mark.parametrize("caps", list(CAPS))
@pytest.mark.parametrize("vocabulary", [1, 2])
def test_generated_programs_validate(caps, vocabulary):
    count = 150 if caps == "all" else 50
    for seed in range(count):
        p = program_for_seed(seed, CAPS[caps], 20, vocabulary=vocabulary)
        validate(p)
        validate(load(p.dumps()))       # and so does the file it is saved as


def test_hypothesis_drawn_programs_validate():
    @settings(max_examples=60, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data):
        validate(generate(HypothesisChooser(data), ALL_CAPABILITIES, 20))
    check()


# ---- malformed files: (what, the program's JSON, the message) -----------------------------
X = {"op": "leaf", "out": "x", "params": {"values": [1.0, 2.0], "shape": [2],
                                          "dtype": "float64", "requires_grad": True}}
H = {"op": "hook", "out": "h", "target": "x", "params": {"label": "h"}}


def prog(*statements, **top):
    return {"gradspec_program": 1, "seed": None, "meta": {}, "statements": list(statements),
            **top}


def call(fn="exp", args=("x",), **kw):
    return {"op": "call", "out": "y", "args": list(args), "params": {"fn": fn, "kw": kw}}


MALFORMED = [
    # structure
    ("statements an int", prog() | {"statements": 3}, "program: statements: expected array"),
    ("args an int", prog(X, {"op": "call", "out": "y", "args": 3, "params": {"fn": "exp"}}),
     "statement 1: args: expected array, got int"),
    ("params a string", prog(X, {"op": "observe", "target": "x", "params": "value"}),
     "statement 1: params: expected object, got str"),
    ("body an int", prog({"op": "mode", "params": {"mode": "no_grad"}, "body": 1}),
     "statement 0: body: expected array, got int"),
    ("meta an int", prog(meta=3), "program: meta: expected object"),
    ("seed a string", prog(seed="7"), "program: seed: expected int"),
    ("a statement not an object", prog(X, 5), "statement 1: expected object, got int"),
    ("an unknown field", prog(X | {"output": "x"}), "statement 0: object contains unknown field"),
    ("a nested bad arg", prog(X, {"op": "mode", "params": {"mode": "no_grad"}, "body": [
        obs("x", "value").to_json(), {"op": "call", "out": "y", "args": [[1]],
                                      "params": {"fn": "exp"}}]}),
     "statement 1.1: args[0]: expected int | float | str | null, got array"),
    ("two hooks with one label", prog(X, H, {"op": "mode", "params": {"mode": "no_grad"},
                                            "body": [H | {"out": "h2"}]}),
     "statement 2.0 (hook): params.label: 'h' labels the hook of statement 1 too"),
    ("two hooks under one out name", prog(X, H | {"params": {}}, H | {"params": {}}),
     "statement 2 (hook): params.label: 'h' labels the hook of statement 1 too"),
    ("inputs an int", prog(X, {"op": "backward", "target": "x", "params": {"inputs": 3}}),
     "statement 1 (backward): params.inputs: must be a list or null, got 3"),
    ("an index an int", prog(X, {"op": "getitem", "out": "y", "target": "x",
                                 "params": {"index": 0}}),
     "statement 1 (getitem): params.index: must be a list, got 0"),
    ("an index item a string", prog(X, {"op": "getitem", "out": "y", "target": "x",
                                        "params": {"index": ["0"]}}),
     "statement 1 (getitem): params.index[0]: must be an int, a slice, \"...\" or null"),
    ("an ellipsis and a newline", prog(X, {"op": "getitem", "out": "y", "target": "x",
                                          "params": {"index": ["...\n"]}}),
     "statement 1 (getitem): params.index[0]: must be an int, a slice, \"...\" or null"),
    ("two ellipses", prog(X, {"op": "getitem", "out": "y", "target": "x",
                              "params": {"index": ["...", "..."]}}),
     "statement 1 (getitem): params.index: at most one \"...\""),
    ("a slice of strings", prog(X, {"op": "getitem", "out": "y", "target": "x",
                                   "params": {"index": [{"slice": ["a", None, None]}]}}),
     "params.index[0]: must be an int, a slice"),
    ("an unknown param", prog(X, {"op": "observe", "target": "x",
                                  "params": {"what": "value", "wat": 1}}),
     "statement 1 (observe): params: unknown field 'wat'"),
    ("a body outside a block", prog(X | {"body": [obs("x", "value").to_json()]}),
     "statement 0 (leaf): body: only a grad-mode block has a body"),
    ("a clause that is no ID", prog(X | {"clauses": ["LEAF-1\nimport os"]}),
     "statement 0 (leaf): clauses[0]: not a clause ID"),
    # vocabulary
    ("unknown op", prog({"op": "frobnicate"}), "statement 0: unknown or missing op"),
    ("missing op", prog({"out": "x"}), "statement 0: unknown or missing op None"),
    ("unknown fn", prog(X, call("frobnicate")),
     "statement 1 (call): params.fn: unknown call op 'frobnicate'"),
    ("unknown in-place fn", prog(X, {"op": "inplace", "target": "x", "params": {"fn": "exp__"}}),
     "statement 1 (inplace): params.fn: unknown inplace op 'exp__'"),
    ("an in-place fn in a call", prog(X, call("exp_")), "unknown call op 'exp_'"),
    ("unknown mode", prog({"op": "mode", "params": {"mode": "no_grd"}}),
     "statement 0 (mode): params.mode: unknown mode 'no_grd'"),
    ("unknown dtype", prog(X | {"params": X["params"] | {"dtype": "float33"}}),
     "statement 0 (leaf): params.dtype: unknown dtype 'float33'"),
    ("unknown observable", prog(X, obs("x", "valu").to_json()),
     "statement 1 (observe): params.what: unknown what 'valu'"),
    ("missing observable", prog(X, {"op": "observe", "target": "x"}),
     "statement 1 (observe): params.what: missing"),
    ("unknown behaviour", prog(X, H | {"params": {"behaviour": "explode"}}),
     "statement 1 (hook): params.behaviour: unknown behaviour 'explode'"),
    ("unknown node-hook kind", prog(X, call("mul", ["x", 2.0]), H | {
        "op": "node_hook", "target": "y", "params": {"kind": "middle"}}),
     "statement 2 (node_hook): params.kind: unknown kind 'middle'"),
    ("unknown kw key", prog(X, call("sum", dims=[0])),
     "statement 1 (call): params.kw: unknown setting 'dims'"),
    ("missing kw key", prog(X, {"op": "view", "out": "y", "target": "x",
                                "params": {"fn": "reshape", "kw": {}}}),
     "statement 1 (view): params.kw.shape: missing"),
    ("a kw value a string", prog(X, call("sum", dim="0")),
     "statement 1 (call): params.kw.dim: must be null, a bool, a finite number"),
    # numbers and values
    ("two values for shape [1]", prog(X | {"params": X["params"] | {"shape": [1]}}),
     "statement 0 (leaf): params.values: holds 2 value(s), shape [1] has 1"),
    ("a negative shape", prog(X | {"params": X["params"] | {"shape": [-2]}}),
     "statement 0 (leaf): params.shape[0]: must be a non-negative int"),
    ("a value a string", prog(X | {"params": X["params"] | {"values": [1.0, "2"]}}),
     "statement 0 (leaf): params.values[1]: must be a finite number (float64), got '2'"),
    ("a bool for a float", prog(X | {"params": X["params"] | {"values": [1.0, True]}}),
     "statement 0 (leaf): params.values[1]: must be a finite number (float64), got True"),
    ("a float for an int64", prog(X | {"params": X["params"] | {"dtype": "int64"}}),
     "statement 0 (leaf): params.values[0]: must be an int (int64), got 1.0"),
    ("an int for a bool", prog(X | {"params": X["params"] | {"dtype": "bool",
                                                             "values": [True, 1]}}),
     "statement 0 (leaf): params.values[1]: must be a bool (bool), got 1"),
    ("a huge operand", prog(X, call("mul", ["x", 10 ** 30])),
     "statement 1 (call): args[1]: must be a finite number within int64's range"),
    ("a huge factor", prog(X, H | {"params": {"behaviour": "scale", "factor": 10 ** 30}}),
     "statement 1 (hook): params.factor: must be a finite number"),
    # names
    ("an undefined name", prog(X, call("exp", ["nothing"])),
     "statement 1 (call): args[0]: name 'nothing' is not bound by an earlier statement"),
    ("an undefined target", prog(obs("x", "value").to_json()),
     "statement 0 (observe): target: name 'x' is not bound"),
    ("a name used before it is bound", prog(obs("x", "value").to_json(), X),
     "statement 0 (observe): target: name 'x' is not bound"),
    ("an undefined backward input", prog(X, {"op": "backward", "target": "x",
                                            "params": {"inputs": ["ghost"]}}),
     "statement 1 (backward): params.inputs[0]: name 'ghost' is not bound"),
    ("a handle used as a tensor", prog(X, H, obs("h", "value").to_json()),
     "statement 2 (observe): target: must name a tensor, 'h' is a hook handle"),
    ("a tensor removed as a handle", prog(X, {"op": "remove", "target": "x"}),
     "statement 1 (remove): target: must name a hook handle, 'x' is a tensor"),
    ("a name that is no identifier", prog(X | {"out": "x y"}),
     "statement 0 (leaf): out: must be a name (an identifier, no keyword), got 'x y'"),
    ("a keyword as a name", prog(X | {"out": "lambda"}), "out: must be a name"),
    ("a name the script uses", prog(X | {"out": "torch"}), "out: must be a name"),
    ("a private name", prog(X | {"out": "_results"}), "out: must be a name"),
    ("a non-ASCII name", prog(X | {"out": "x\u2028"}), "out: must be a name"),
]


@pytest.mark.parametrize("what, data, message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_programs_are_one_line_program_errors(what, data, message):
    with pytest.raises(ProgramError) as info:
        load(json.dumps(data))
    text = str(info.value)
    assert message in text, text
    assert len(text.splitlines()) == 1 and text.isprintable(), text


@pytest.mark.parametrize("text, message", [
    (b"\xff\xfe{}", "not UTF-8 text"),
    (b"[1, 2]", "not a gradspec program"),
    (b"17", "not a gradspec program"),
    (b'"statements"', "not a gradspec program"),
    (b"{", "not valid JSON"),
    (b'{"gradspec_program": 1, "statements": [NaN]}', "not valid JSON"),
    (b'{"gradspec_program": 1, "statements": [], "seed": 1e999}', "not valid JSON"),
    (b"[" * 100_000, "not valid JSON"),
    (b'{"gradspec_program": 2, "statements": []}', "unsupported program format 2"),
])
def test_files_that_are_no_program_are_program_errors(text, message):
    with pytest.raises(ProgramError, match=message):
        load(text)


def test_names_bound_in_a_block_are_visible_after_it():
    p = Program([leaf("x", [1.0], []), S("mode", params={"mode": "no_grad"}, body=[
        S("call", out="y", args=["x"], params={"fn": "exp"})]), obs("y", "value")])
    validate(p)
    nested = Program([leaf("x", [1.0], []), S("mode", params={"mode": "no_grad"}, body=[
        S("mode", params={"mode": "enable_grad"}, body=[
            S("call", out="y", args=["x"], params={"fn": "exp"})])]), obs("y", "value")])
    validate(nested)


def test_a_rebound_name_takes_its_new_kind():
    validate(Program([leaf("x", [1.0], []),
                      S("hook", out="h", target="x", params={"label": "h"}),
                      S("remove", target="h"), leaf("h", [1.0], []), obs("h", "value")]))


def test_a_program_built_in_python_is_checked_for_types_too():
    bad = Program([S("leaf", out="x", args=3)])      # type: ignore[arg-type]
    with pytest.raises(ProgramError, match=r"^statement 0: args: expected array, got int$"):
        validate(bad)
    assert not is_valid(bad) and is_valid(sample())


def test_loading_checks_the_structure_and_validate_the_rest():
    """Program.from_json / loads (also how results come back from workers) check the
    structure; validate (load) the names, vocabulary and values."""
    p = Program.loads(json.dumps(prog(X, obs("x", "valu").to_json())))
    assert p.statements[1].params == {"what": "valu"}
    with pytest.raises(ProgramError, match="unknown what"):
        validate(p)


def test_the_minimizer_tries_only_candidates_that_validate():
    tried: list[Program] = []

    def test(q: Program) -> bool:
        tried.append(q)
        return any(s.op == "remove" for _, s in q.walk())
    small = minimize(sample(), test)
    assert tried and all(is_valid(q) for q in tried)
    assert [s.op for s in small.statements] == ["leaf", "call", "hook", "remove"]


@pytest.mark.parametrize("what, data, message", MALFORMED[::4], ids=[m[0] for m in
                                                                   MALFORMED[::4]])
def test_replay_rejects_a_malformed_file_before_any_engine_runs(capsys, tmp_path, what,
                                                                 data, message):
    path = tmp_path / "program.json"
    path.write_text(json.dumps(data))
    # the engines named do not exist: loading them would be a different error
    assert main(["replay", str(path), "--engine", "no_such:engine",
                 "--oracle", "no_such:oracle"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradspec: error: "), lines
    assert message in lines[0], lines


def _nested(depth: int) -> Program:
    """A leaf, then a call `depth` no_grad blocks deep."""
    body = [S("call", "q", None, ["x", "x"], {"fn": "add", "kw": {}})]
    for _ in range(depth):
        body = [S("mode", None, None, [], {"mode": "no_grad"}, body=body)]
    return Program([leaf("x", [1.0, 2.0], [2]), *body])


def test_blocks_nest_up_to_the_bound_and_no_deeper(tmp_path):
    """MAX_DEPTH blocks deep validates and runs through a worker process (a program that
    cannot be pickled to one was a traceback); one more is refused, naming the statement."""
    from conformance.lang.validate import MAX_DEPTH
    deepest = _nested(MAX_DEPTH)
    validate(deepest)
    path = tmp_path / "p.json"
    path.write_text(deepest.dumps())
    assert main(["replay", str(path), "--engine", "refimpl", "--oracle", "refimpl"]) == 0
    with pytest.raises(ProgramError, match=f"body: blocks nested more than {MAX_DEPTH} deep"):
        validate(_nested(MAX_DEPTH + 1))


@pytest.mark.parametrize("stmt", [
    S("hook", "h", "x", [], {"behaviour": "record", "label": "a\nb"}),
    S("multi_grad_hook", "h", None, ["x"], {"mode": "all", "label": "a\nb"}),
    S("saved_hooks", None, None, [], {"pack": "keep", "label": "a\x1b[2J"},
      body=[S("call", "y", None, ["x", "x"], {"fn": "mul", "kw": {}})]),
], ids=["hook", "multi_grad_hook", "saved_hooks"])
def test_every_label_is_one_printable_line(stmt):
    """Labels name hook calls in a replay's table: one with a line break or a control
    character would break it (and could forge its lines)."""
    with pytest.raises(ProgramError, match="params.label: must be printable text on one line"):
        validate(Program([leaf("x", [1.0, 2.0], [2]), stmt]))
