"""The op table (conformance/lang/ops.py): its rows against the spec's saved-values table, the
generator's views of it against the literal vocabulary they replace (order included), and its
one spelling of each op, run (`apply`) and written (`source`), agreeing with each other."""
from __future__ import annotations

import re

import pytest

from conformance.lang import ops
from conformance.spec.reader import spec_dir

SAVED_VALUES = "Saved values for the op set of this spec"
# Ops of the spec (and of refimpl) that the suite's vocabulary does not hold yet; an entry that
# becomes a row must leave this set (the test below fails on a stale entry). `to(dtype)` needs a
# dtype setting, which a statement cannot write as a literal (its rows are double, float and
# long); nonzero's result has a shape no model of the generator can predict.
NOT_YET_ROWS: set[str] = {"to", "nonzero"}


def saved_values_table() -> dict[str, str | None]:
    """spec/version.md's saved-values table as op name -> "input" | "output" | "other" |
    "both" | "condition" | None. Ops are the code spans of the first column: names (`pow(x, n)`)
    and binary operator expressions (`a * b`, found through the rows' operators)."""
    lines = (spec_dir() / "version.md").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(SAVED_VALUES))
    rows = []
    for ln in lines[start + 1:]:
        if ln.startswith("|"):
            rows.append([c.strip() for c in ln.strip("|").split("|")])
        elif rows:
            break
    by_operator = {r.operator: r.name for r in ops.CALLS if r.operator}
    table: dict[str, str | None] = {}
    for op_cell, saves_cell, _clause in rows[2:]:       # past the header and the rule
        op_cell = re.sub(r" \((?:[^()`]|`[^`]*`)*\)", "", op_cell)  # prose asides: (any `alpha`)
        saves = ("other" if "needs grad" in saves_cell else None if "no tensor" in saves_cell
                 else "both" if saves_cell.startswith("input and output")
                 else saves_cell.split()[0])
        for span in re.findall(r"`([^`]+)`", op_cell):
            if m := re.fullmatch(r"([A-Za-z_]\w*)(\(.*\))?", span):
                table[m[1]] = saves
            elif m := re.fullmatch(r"\w+ (\S+) \w+", span):
                table[by_operator[m[1]]] = saves
            # else: a bare operator list ("`+ - * /` with a Python number"): no one op
    return table


def test_the_spec_table_is_parsed():
    table = saved_values_table()
    assert table["pow"] == "input" and table["exp"] == "output" and table["matmul"] == "other"
    assert table["add"] is None and table["expand"] is None and len(table) >= 25


def test_every_op_of_the_spec_table_saves_what_its_row_says():
    table = saved_values_table()
    assert {n for n in table if n not in ops.ROWS} == NOT_YET_ROWS
    for name, saves in table.items():
        if name not in NOT_YET_ROWS:
            assert ops.ROWS[name].saves == saves, name


def test_every_row_that_saves_something_is_in_the_spec_table():
    table = saved_values_table()
    for r in ops.OPS:
        if r.saves is not None:
            name = r.of if r.kind == "inplace" else r.name   # exp_ saves as exp does
            assert name in table and table[name] == r.saves, r.name
    # and the table covers the whole out-of-place op set
    assert set(ops.FUNCTIONS) | set(ops.VIEWS) <= set(table)


def _v1(table):
    """The entries of a derived table that belong to generator vocabulary 1."""
    if isinstance(table, dict):
        return {k: v for k, v in table.items() if ops.ROWS[k].since == 1}
    return {k for k in table if ops.ROWS[k].since == 1}


def test_derived_tables_equal_the_vocabulary_they_replace():
    # vocabulary 1 (rows with since 1) is what the first generator drew, in its order
    # copied from conformance/program.py (FUNCTIONS, VIEWS, INPLACE) and conformance/generate.py
    assert list(_v1(ops.FUNCTIONS).items()) == list({
        "add": 2, "sub": 2, "mul": 2, "div": 2,
        "neg": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1, "sigmoid": 1, "relu": 1,
        "abs": 1, "clone": 1, "pow": 1, "clamp": 1, "sum": 1, "mean": 1, "matmul": 2}.items())
    assert list(_v1(ops.VIEWS).items()) == list({
        "reshape": "shape", "view": "shape", "t": None, "transpose": "dims",
        "unsqueeze": "dim", "squeeze": "dim", "expand": "size"}.items())
    assert list(_v1(ops.INPLACE).items()) == list({
        "add_": 1, "sub_": 1, "mul_": 1, "div_": 1, "pow_": 0, "clamp_": 0, "neg_": 0,
        "exp_": 0, "log_": 0, "sin_": 0, "cos_": 0, "tanh_": 0, "sigmoid_": 0, "relu_": 0,
        "abs_": 0, "zero_": 0, "fill_": 1, "copy_": 1,
        "iadd": 1, "isub": 1, "imul": 1, "idiv": 1}.items())
    assert ops.EXPONENTS == [2, 3, -1, 0.5]
    assert ops.CLAMPS == [(-0.6, 0.8), (None, 0.8), (-0.6, None)]
    assert _v1(ops.SAVES_INPUT) == {"sin", "cos", "log", "pow", "abs", "clamp"}
    assert _v1(ops.SAVES_OUTPUT) == {"exp", "tanh", "sigmoid", "relu"}
    assert _v1(ops.SAVES_OTHER) == {"mul", "div", "matmul"}
    assert _v1(ops.HOLDS) == _v1(ops.SAVES_INPUT | ops.SAVES_OUTPUT | ops.SAVES_OTHER)
    assert _v1(ops.INPLACE_HOLDS) == {"mul_", "div_", "imul", "idiv", "pow_", "clamp_", "exp_",
                                 "sin_", "cos_", "log_", "tanh_", "sigmoid_", "relu_", "abs_"}
    assert _v1(ops.INPLACE_SAVES_OUTPUT) == {"exp_", "tanh_", "sigmoid_", "relu_"}
    assert list(ops.AUGMENTED.items()) == [("iadd", "add"), ("isub", "sub"), ("imul", "mul"),
                                           ("idiv", "div")]
    # the weighted draws of Gen.move_call and Gen.move_inplace
    assert ops.CALL_WEIGHTS == [
        ("add", 5), ("mul", 5), ("sub", 3), ("div", 2), ("matmul", 3), ("sum", 5),
        ("mean", 2), ("exp", 2), ("sin", 2), ("cos", 1), ("log", 1), ("tanh", 2),
        ("sigmoid", 2), ("relu", 2), ("abs", 1), ("neg", 1), ("clone", 1), ("pow", 3),
        ("clamp", 1)]
    assert ops.INPLACE_WEIGHTS == [
        ("add_", 4), ("mul_", 4), ("sub_", 1), ("div_", 1), ("exp_", 2), ("sin_", 1),
        ("cos_", 1), ("tanh_", 1), ("sigmoid_", 1), ("relu_", 1), ("abs_", 1),
        ("neg_", 1), ("log_", 1), ("pow_", 2), ("clamp_", 1), ("zero_", 1), ("fill_", 1),
        ("copy_", 2), ("iadd", 2), ("imul", 2), ("isub", 1), ("idiv", 1)]


def test_vocabulary_2_adds_sqrt_and_nothing_else():
    assert [r.name for r in ops.OPS if r.since == 2] == ["sqrt", "sqrt_"]
    assert ops.ROWS["sqrt"].saves == "output" and ops.ROWS["sqrt_"].of == "sqrt"
    assert ops.weights("call", 2) == ops.weights("call", 1) + [("sqrt", 1)]
    assert ops.weights("inplace", 2) == ops.weights("inplace", 1) + [("sqrt_", 1)]


V4_CALLS = ["floor", "sign", "round", "gt", "lt", "ge", "le", "eq", "ne", "double", "float",
            "long", "max", "min", "max_dim", "min_dim", "argmax", "argmin", "where"]


def test_vocabulary_4_adds_the_ops_of_deriv_md_and_nothing_before_it():
    """Rows of vocabulary 4 (DERIV-1..DERIV-8) come after every earlier row in the draw order,
    so vocabularies 1 to 3 draw exactly what they drew (the golden digests)."""
    assert [r.name for r in ops.OPS if r.since == 3] == []
    assert ops.weights("call", 3) == ops.weights("call", 2)
    # from vocabulary 4 the earlier rows weigh twice as much
    assert ops.weights("call", 4) == [(n, 2 * w) for n, w in ops.weights("call", 3)] + [
        (n, 1) for n in V4_CALLS]
    assert ops.weights("inplace", 4) == [(n, 2 * w) for n, w in ops.weights("inplace", 3)] + [
        ("floor_", 1), ("sign_", 1), ("round_", 1)]
    no_deriv = frozenset({"core", "inplace"})
    assert ops.weights("call", 4, no_deriv) == [(n, 2 * w) for n, w in ops.weights("call", 3)]
    assert {ops.ROWS[n].family for n in V4_CALLS} == {"unary", "compare", "cast", "select",
                                                      "where"}
    saves = {n: ops.ROWS[n].saves for n in V4_CALLS if ops.ROWS[n].saves}
    assert saves == {"max": "both", "min": "both", "where": "condition"}
    assert {n for n in V4_CALLS if ops.ROWS[n].holds} == {"max", "min", "max_dim", "min_dim",
                                                        "where"}
    assert ops.ROWS["max_dim"].output == "values" and ops.ROWS["max_dim"].method == "max"


def test_rows_hang_together():
    for r in ops.OPS:
        assert r.since in (1, 2, 4, 7) and ops.lookup(r.kind, r.name) is r
        if r.inplace:
            assert ops.ROWS[r.inplace].of == r.name and ops.ROWS[r.inplace].kind == "inplace"
    assert ops.ROWS["pow_"].draws == ops.ROWS["pow"].draws
    assert ops.ROWS["clamp_"].draws == ops.ROWS["clamp"].draws
    assert ops.weights("call", version=0) == []


# the text conformance/render.py writes today for these statements
SOURCES = [
    ("add", ["x", "y"], {}, "x + y"), ("sub", ["2.0", "x"], {}, "2.0 - x"),
    ("matmul", ["x", "y"], {}, "x @ y"), ("exp", ["x"], {}, "x.exp()"),
    ("pow", ["x"], {"exponent": 2}, "x.pow(2)"),
    ("clamp", ["x"], {"min": -0.6, "max": None}, "x.clamp(min=-0.6, max=None)"),
    ("sum", ["x"], {}, "x.sum()"),
    ("sum", ["x"], {"dim": [0, 1], "keepdim": True}, "x.sum((0, 1), keepdim=True)"),
    ("mean", ["x"], {"dim": -1}, "x.mean(-1, keepdim=False)"),
    ("reshape", ["x"], {"shape": []}, "x.reshape(())"),
    ("reshape", ["x"], {"shape": [2, 3]}, "x.reshape(2, 3)"),
    ("view", ["x"], {"shape": [6]}, "x.view(6)"), ("expand", ["x"], {"size": [3]}, "x.expand(3)"),
    ("t", ["x"], {}, "x.t()"), ("transpose", ["x"], {"dims": [0, 1]}, "x.transpose(0, 1)"),
    ("unsqueeze", ["x"], {"dim": 1}, "x.unsqueeze(1)"), ("squeeze", ["x"], {}, "x.squeeze()"),
    ("squeeze", ["x"], {"dim": 0}, "x.squeeze(0)"),
    ("iadd", ["x", "2.0"], {}, "x += 2.0"), ("idiv", ["x", "y"], {}, "x /= y"),
    ("add_", ["x", "y"], {}, "x.add_(y)"), ("pow_", ["x"], {"exponent": 0.5}, "x.pow_(0.5)"),
    ("clamp_", ["x"], {"min": None, "max": 0.8}, "x.clamp_(min=None, max=0.8)"),
    ("zero_", ["x"], {}, "x.zero_()"), ("fill_", ["x", "2.0"], {}, "x.fill_(2.0)"),
    ("copy_", ["x", "y"], {}, "x.copy_(y)"),
    ("floor", ["x"], {}, "x.floor()"), ("round_", ["x"], {}, "x.round_()"),
    ("gt", ["x", "0.5"], {}, "x > 0.5"), ("ne", ["x", "y"], {}, "x != y"),
    ("double", ["x"], {}, "x.double()"), ("max", ["x"], {}, "x.max()"),
    ("max_dim", ["x"], {"dim": -1}, "x.max(-1, keepdim=False).values"),
    ("min_dim", ["x"], {"dim": 0, "keepdim": True}, "x.min(0, keepdim=True).values"),
    ("argmax", ["x"], {}, "x.argmax()"), ("argmin", ["x"], {"dim": 1, "keepdim": False},
                                              "x.argmin(1, keepdim=False)"),
    ("where", ["x", "c", "y"], {}, "x.where(c, y)"),
]


@pytest.mark.parametrize("name, sources, kw, want", SOURCES)
def test_source_is_the_line_the_renderer_writes(name, sources, kw, want):
    assert ops.source(ops.ROWS[name], sources, kw) == want


def test_index_encoding():
    items = [0, {"slice": [1, None, 2]}]
    assert ops.index_value(items) == (0, slice(1, None, 2))
    assert ops.index_source(items) == "0, 1::2"
    assert ops.index_source([{"slice": [1, 3, None]}]) == "1:3" and ops.index_source([]) == "()"
    assert ops.index_source(ops.index_value(items)) == "0, 1::2"
    assert ops.index_source([-1], as_tuple=True) == "-1,"


def test_only_rows_and_literals_reach_source():
    with pytest.raises(ops.OpError, match="unknown call op 'system'"):
        ops.lookup("call", "system")
    with pytest.raises(ops.OpError, match="unknown view op 'add'"):
        ops.lookup("view", "add")       # a row, but not of that statement kind
    with pytest.raises(ops.OpError):
        ops.lookup("call", ["add"])
    with pytest.raises(ops.OpError, match="literal"):
        ops.source(ops.ROWS["pow"], ["x"], {"exponent": "__import__('os')"})
    with pytest.raises(ops.OpError, match="literal"):
        ops.source(ops.ROWS["reshape"], ["x"], {"shape": ["x"]})
    with pytest.raises(ops.OpError):
        ops.index_source(["os"])
    assert ops.literal((0,)) == "(0,)" and ops.literal([1, None]) == "[1, None]"


def test_the_compiled_adapter_refuses_an_op_that_is_not_a_row():
    from conformance.engines.compiled import CompiledTorch
    for method, args in (("call", ("os.system", [1.0], {})), ("view", (None, "t()#", {})),
                         ("inplace", (None, "__class__", [], {}))):
        with pytest.raises(ops.OpError, match="not a row of the op table"):
            getattr(CompiledTorch, method)(None, *args)     # refused before self is used


def test_the_paddle_spellings_are_keyed_by_rows():
    from conformance.engines import paddle
    assert set(paddle.RENAMED) | set(paddle.SPELLING) | paddle.NUMBERS_AS_TENSORS <= \
        set(ops.ROWS)
    assert paddle.NUMBERS_AS_TENSORS <= set(ops.INPLACE)


def _samples(row: ops.Op) -> dict:
    kw = {k: v[0] for k, v in row.draws.items() if k in row.kw}
    if "bounds" in row.draws:
        kw["min"], kw["max"] = row.draws["bounds"][0]
    return kw | {"reshape": {"shape": [4]}, "view": {"shape": [4, 1]},
                 "transpose": {"dims": [0, 1]}, "unsqueeze": {"dim": 0},
                 "squeeze": {"dim": 0}, "expand": {"size": [3, 2, 2]},
                 "sum": {"dim": [1], "keepdim": True}, "mean": {"dim": 0},
                 "max_dim": {"dim": 0}, "min_dim": {"dim": -1, "keepdim": True},
                 "argmax": {"dim": 1}, "narrow": {"dim": -1, "start": 1, "length": 1},
                 "select": {"dim": 0, "index": -1}}.get(row.name, {})


@pytest.mark.parametrize("name", list(ops.ROWS))
def test_apply_runs_what_source_writes(name):
    """One spelling: the torch adapter's `apply` and the renderer's `source` do the same."""
    torch = pytest.importorskip("torch")
    row = ops.ROWS[name]
    kw = _samples(row)
    make = lambda: [torch.tensor([[0.5, 1.5], [2.0, 0.25]]),   # noqa: E731
                    torch.tensor([[1.0, 2.0], [0.5, 3.0]])]
    args, env = make(), dict(zip("xy", make(), strict=True))
    names = ["x", "y"]
    if name == "fill_":                 # takes a number
        args[1] = env["y"] = 2.0
    if name == "where":                 # a.where(condition, b)
        args.insert(1, torch.tensor([[True, False], [False, True]]))
        env["c"], names = args[1], ["x", "c", "y"]
    got = ops.apply(row, args[:1 + row.extra], kw)
    src = ops.source(row, names, kw)
    if row.augmented:
        exec(src, env)      # a statement: x op= y
        want = env["x"]
    else:
        want = eval(src, env)
    assert got.dtype == want.dtype and torch.equal(got, want), src
    if row.function:
        assert callable(getattr(torch, row.function))
