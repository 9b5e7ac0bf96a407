"""The bad-input corpus: malformed flags, broken adapters, malformed program files and
expected-failure files. Each one, given to `gradspec` (as `python -m conformance`, in a fresh
folder), must end in exactly one line on stderr starting with "gradspec: ", exit code 2, no
traceback, and no earlier results deleted.

The cases are data (CASES: name, arguments, files to write into the folder); most are refused
before any engine loads, and those that get further run refimpl against itself, so that no case
pays for a torch import. Adapters live in tests/bad_inputs/adapters.py; modules broken at import
are written into the folder, which `--engine module:factory` resolves from.
"""
from __future__ import annotations

import copy
import errno
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.bad_inputs.programs import BASE

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
A = "tests.bad_inputs.adapters"
REFIMPL = ["--engine", "refimpl", "--oracle", "refimpl"]
SMALL = ["--count", "1", "--size", "4", "--timeout", "20", "--quiet"]
KEEP = Path("gradspec-out") / "divergences" / "0000-seed1" / "program.json"


@dataclass
class Case:
    name: str
    args: list[str]
    files: dict[str, str | bytes] = field(default_factory=dict)
    words: str = ""             # expected in the error line, where the wording matters


def gradspec(args: list[str], cwd: Path, timeout: float = 60,
             env: dict[str, str] = ENV) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, errors="replace", timeout=timeout)


def folder(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """A fresh working folder with `files` and the results of an earlier run."""
    (tmp_path / KEEP).parent.mkdir(parents=True)
    (tmp_path / KEEP).write_text("{}")
    for name, data in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            p.write_text(data, encoding="utf-8")
    return tmp_path


def assert_one_line_exit_2(r: subprocess.CompletedProcess, words: str = "") -> None:
    err = r.stderr
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, err, r.stdout[-2000:])
    assert lines[0].startswith("gradspec: ") and lines[0][len("gradspec: "):].strip(), err
    assert words in lines[0], err


# ---- flags ----------------------------------------------------------------------------------
def run(*args: str) -> list[str]:
    return ["run", *REFIMPL, *SMALL, *args]


FLAGS = [
    Case("no-command", []),
    Case("unknown-command", ["frobnicate"]),
    Case("unknown-flag", run("--frobnicate")),
    Case("unknown-flag-top", ["--frobnicate"]),
    Case("run-positional", run("extra")),
    Case("engine-unknown", ["run", "--engine", "nope", "--oracle", "refimpl", *SMALL],
         words="unknown engine 'nope'"),
    Case("engine-empty", ["run", "--engine", "", "--oracle", "refimpl", *SMALL]),
    Case("engine-blank", ["run", "--engine", "   ", "--oracle", "refimpl", *SMALL]),
    Case("engine-colon", ["run", "--engine", ":", "--oracle", "refimpl", *SMALL]),
    Case("engine-no-attr", ["run", "--engine", "os:", "--oracle", "refimpl", *SMALL]),
    Case("engine-relative", ["run", "--engine", ".x:f", "--oracle", "refimpl", *SMALL]),
    Case("engine-path", ["run", "--engine", "tests/bad_inputs/adapters.py:returns_int",
                         "--oracle", "refimpl", *SMALL]),
    Case("engine-newline", ["run", "--engine", "no\nsuch", "--oracle", "refimpl", *SMALL]),
    Case("engine-sys-exit", ["run", "--engine", "sys:exit", "--oracle", "refimpl", *SMALL]),
    Case("engine-builtins-exit", ["run", "--engine", "builtins:exit", "--oracle", "refimpl",
                                  *SMALL]),
    Case("engine-cli-main", ["run", "--engine", "conformance.cli:main", "--oracle", "refimpl",
                             *SMALL]),
    Case("oracle-unknown", ["run", "--engine", "refimpl", "--oracle", "nope", *SMALL]),
    Case("count-0", run("--count", "0"), words="--count"),
    Case("count-negative", run("--count", "-5"), words="--count"),
    Case("count-huge", run("--count", "1000000000000"), words="--count"),
    Case("count-float", run("--count", "1.5"), words="--count"),
    Case("count-word", run("--count", "many"), words="--count"),
    Case("count-empty", run("--count", ""), words="--count"),
    Case("timeout-inf", run("--timeout", "inf"), words="--timeout"),
    Case("timeout-minus-inf", run("--timeout", "-inf"), words="--timeout"),
    Case("timeout-overflow", run("--timeout", "1e400"), words="--timeout"),
    Case("timeout-nan", run("--timeout", "nan"), words="--timeout"),
    Case("timeout-0", run("--timeout", "0"), words="--timeout"),
    Case("timeout-negative", run("--timeout", "-1"), words="--timeout"),
    Case("timeout-word", run("--timeout", "soon"), words="--timeout"),
    Case("timeout-huge", run("--timeout", "1e300"), words="--timeout"),
    Case("seed-word", run("--seed", "x"), words="--seed"),
    Case("seed-float", run("--seed", "1.5"), words="--seed"),
    Case("seed-digits", run("--seed", "9" * 5000), words="--seed"),
    Case("jobs-0", run("-n", "0"), words="--jobs"),
    Case("jobs-negative", run("-n", "-2"), words="--jobs"),
    Case("jobs-huge", run("-n", "100000"), words="--jobs"),
    Case("jobs-word", run("--jobs", "lots"), words="--jobs"),
    Case("device-unknown", run("--device", "tpu"), words="--device"),
    Case("device-empty", run("--device", ""), words="--device"),
    Case("size-0", run("--size", "0"), words="--size"),
    Case("size-negative", run("--size", "-1"), words="--size"),
    Case("size-word", run("--size", "big"), words="--size"),
    Case("size-huge", run("--size", "1000000000"), words="--size"),
    Case("source-missing-module", run("--source", "no_such_module:f"), words="--source"),
    Case("source-missing-attr", run("--source", "os:no_such_function"), words="--source"),
    Case("source-not-callable", run("--source", "os:sep"), words="--source"),
    Case("xfail-missing", run("--xfail", "none.txt"), words="cannot read"),
    Case("xfail-device", run("--xfail", "/dev/zero"), words="neither a regular file"),
    Case("replay-device", ["replay", "/dev/zero", "--quiet"], words="neither a regular file"),
    Case("graph-device", ["graph", "/dev/zero", "--engine", "refimpl"],
         words="neither a regular file"),
    Case("replay-too-large", ["replay", "large.json", "--quiet"], words="larger than 64 MiB"),
    Case("xfail-folder", run("--xfail", "."), words="cannot read"),
    Case("xfail-dangling-link", run("--xfail", "link.txt"), words="cannot read"),
    Case("xfail-newline-name", run("--xfail", "no\nsuch.txt"), words="cannot read"),
    Case("out-a-file", run("--out", "file.txt"), {"file.txt": "x"}),
    Case("out-under-a-file", run("--out", "file.txt/sub"), {"file.txt": "x"}),
    Case("out-in-proc", run("--out", "/proc/gradspec-out")),
    Case("out-in-sys", run("--out", "/sys/gradspec-out")),
    Case("out-read-only-folder", run("--out", "ro/out")),      # ro made read-only below
    # an unset $VAR: never the current folder, whose files the run would replace
    Case("out-empty", run("--out", ""), words="--out is empty"),
    Case("out-blank", run("--out", "  "), words="--out is empty"),
    Case("matrix-out-empty", ["matrix", "--engines", "refimpl", "--oracle", "refimpl", *SMALL,
                              "--out", ""], words="--out is empty"),
    Case("graph-out-empty", ["graph", "program.json", "--engine", "refimpl", "--out", ""],
         words="--out is empty"),
    Case("spec-html-empty", ["spec", "--html", ""], words="--html is empty"),
    Case("xfail-unreadable", run("--xfail", "secret.txt"), {"secret.txt": "LEAF-5 why\n"},
         words="cannot read"),
    Case("spec-unknown", ["spec", "NOPE"], words="unknown clause ID 'NOPE'"),
    Case("spec-unknown-at-a-release", ["spec", "ZZZ-1", "--at", "1.0.0"],
         words="unknown clause ID 'ZZZ-1': in no spec release"),
    Case("spec-missing", ["spec"]),
    Case("spec-two", ["spec", "LEAF-1", "LEAF-2"]),
    Case("index-extra", ["index", "--frobnicate"]),
    Case("engines-oracle-unknown", ["engines", "--probe", "--oracle", "nope"]),
    Case("engines-unknown-flag", ["engines", "--jsn"]),
    Case("matrix-no-engine", ["matrix", "--engines", ",", *SMALL], words="no engine"),
    Case("matrix-twice", ["matrix", "--engines", "refimpl,refimpl", *SMALL], words="twice"),
    Case("matrix-oracle-unknown", ["matrix", "--engines", "refimpl", "--oracle", "nope",
                                   *SMALL]),
    Case("matrix-count-0", ["matrix", "--engines", "refimpl", "--oracle", "refimpl",
                            "--count", "0"], words="--count"),
    Case("matrix-timeout-nan", ["matrix", "--engines", "refimpl", "--oracle", "refimpl",
                                "--timeout", "nan"], words="--timeout"),
    Case("matrix-xfail-missing", ["matrix", "--engines", "refimpl", "--oracle", "refimpl",
                                  *SMALL, "--xfail", "none.txt"], words="cannot read"),
    Case("replay-no-file", ["replay", *REFIMPL]),
    Case("replay-missing", ["replay", "none.json", *REFIMPL], words="cannot read"),
    Case("replay-folder-without-program", ["replay", ".", *REFIMPL], words="cannot read"),
    Case("replay-device-unknown", ["replay", "p.json", *REFIMPL, "--device", "tpu"],
         words="--device"),
]


# ---- adapters -------------------------------------------------------------------------------
def engine(spec: str, *more: str) -> list[str]:
    return ["run", "--engine", spec, "--oracle", "refimpl", *SMALL, "--no-probe", *more]


AT_IMPORT = {
    "gs_bad_import_error": "raise ImportError('libfoo.so: cannot open shared object file')\n",
    "gs_bad_runtime_error": "raise RuntimeError('CUDA driver too old\\nsecond line')\n",
    "gs_bad_system_exit": "import sys\nsys.exit('the module exits at import')\n",
    "gs_bad_system_exit_0": "raise SystemExit(0)\n",
    "gs_bad_keyboard": "raise KeyboardInterrupt\n",
    "gs_bad_syntax": "def engine(device='cpu'):\n    return (\n",
    "gs_bad_missing_dep": "import gs_no_such_dependency\n",
    "gs_bad_recursion": "import sys\nsys.setrecursionlimit(100)\ndef f():\n    f()\nf()\n",
    "gs_bad_indent": "def engine(device='cpu'):\nreturn 1\n",
}
ADAPTERS = [
    Case("adapter-module-not-found", engine("gs_no_such_module:engine"), words="cannot import"),
    Case("adapter-package-not-found", engine("gs_no_such_pkg.sub:engine"),
         words="cannot import"),
    *[Case(f"adapter-{name[7:]}-at-import".replace("_", "-"), engine(f"{name}:engine"),
           {f"{name}.py": text}) for name, text in AT_IMPORT.items()],
    Case("adapter-binary-module", engine("gs_bad_binary:engine"),
         {"gs_bad_binary.py": b"\xff\xfe\x00\x00garbage"}),
    Case("adapter-broken-package", engine("gs_bad_pkg.mod:engine"),
         {"gs_bad_pkg/__init__.py": "raise ValueError('broken __init__')\n",
          "gs_bad_pkg/mod.py": "def engine(device='cpu'):\n    return None\n"}),
    Case("adapter-attribute-missing", engine(f"{A}:no_such_factory"), words="no attribute"),
    Case("adapter-attribute-dotted", engine(f"{A}:Duck.nope")),
    Case("adapter-not-callable", engine(f"{A}:NOT_CALLABLE"), words="not callable"),
    *[Case(f"adapter-{name}".replace("_", "-"), engine(f"{A}:{name}"))
      for name in ("raises_value_error", "raises_empty", "raises_system_exit",
                   "raises_system_exit_0", "raises_keyboard_interrupt",
                   "raises_base_exception", "raises_recursion", "raises_memory_error",
                   "no_device_argument", "returns_none", "returns_int", "returns_class",
                   "missing_methods", "capabilities_none", "capabilities_ints",
                   "capabilities_unknown", "capabilities_string", "name_not_a_string",
                   "version_not_a_string", "granularity_unknown", "capabilities_raise")],
    Case("adapter-oracle-raises-system-exit",
         ["run", "--engine", "refimpl", "--oracle", f"{A}:raises_system_exit", *SMALL]),
    Case("adapter-oracle-returns-none",
         ["run", "--engine", "refimpl", "--oracle", f"{A}:returns_none", *SMALL]),
    Case("adapter-replay-keyboard-interrupt",
         ["replay", "p.json", "--engine", f"{A}:raises_keyboard_interrupt", "--oracle",
          "refimpl"]),
    Case("adapter-engines-probe-oracle-broken",
         ["engines", "--probe", "--oracle", f"{A}:raises_value_error"]),
]

# ---- program files for `gradspec replay` ----------------------------------------------------


def program(edit) -> str:
    """BASE with `edit(data)` applied (edit may also return a replacement)."""
    data = copy.deepcopy(BASE)
    return json.dumps(edit(data) or data, allow_nan=True)


def at(i: int, key: str, value):
    def edit(d):
        d["statements"][i][key] = value
    return edit


def param(i: int, key: str, value):
    def edit(d):
        d["statements"][i].setdefault("params", {})[key] = value
    return edit


def without(i: int, *keys: str):
    def edit(d):
        where = d["statements"][i]
        for k in keys[:-1]:
            where = where[k]
        del where[keys[-1]]
    return edit


def top(key: str, value):
    def edit(d):
        d[key] = value
    return edit


def nested(depth: int) -> str:
    """A program whose last statement is `depth` grad-mode blocks deep (too deep for JSON
    encoders, so written as text)."""
    block = '{"op": "mode", "params": {"mode": "no_grad"}, "body": ['
    inner = '{"op": "call", "out": "q", "args": ["x", "x"], "params": {"fn": "add"}}'
    text = program(lambda d: None)
    return text[:-2] + ", " + block * depth + inner + "]}" * depth + "]}"


TEXT_FILES: dict[str, str | bytes] = {
    "non-utf8": b'{"gradspec_program": 1, "statements": [], "meta": {"x": "\xff\xfe"}}',
    "utf16": json.dumps(BASE).encode("utf-16"),
    "empty": "",
    "not-json": "this is not JSON\n",
    "truncated-json": program(lambda d: None)[:-10],
    "json-list": "[]",
    "json-string": '"statements"',
    "json-null": "null",
    "json-number": "1",
    "deep-json": "[" * 100_000 + "]" * 100_000,
    "deep-body": nested(5000),
    # deep enough to parse, too deep to cross to a worker process (pickling recursed): refused
    # by the validator's own bound, with the ones between
    "deep-body-33": nested(33),
    "deep-body-250": nested(250),
    "deep-body-500": nested(500),
    "long-integer": '{"gradspec_program": 1, "statements": [], "seed": ' + "9" * 5000 + "}",
}
PROGRAM_EDITS = {
    "missing-statements": lambda d: {"gradspec_program": 1},
    "format-version-99": top("gradspec_program", 99),
    "format-version-string": top("gradspec_program", "1"),
    "format-version-true": top("gradspec_program", True),
    "format-version-missing": lambda d: {k: v for k, v in d.items() if k != "gradspec_program"},
    "statements-int": top("statements", 3),
    "grad-binds-a-name-twice": lambda d: d["statements"][9]["params"].update(
        inputs=["x", "x"], outs=["gx", "gx"]),
    "statements-string": top("statements", "leaf"),
    "statements-object": top("statements", {"op": "leaf"}),
    "statement-int": top("statements", [1]),
    "statement-op-missing": without(0, "op"),
    "statement-op-unknown": at(0, "op", "frobnicate"),
    # a clause the spec lacks would be cited, and decide how a divergence is judged
    "clause-unknown": at(1, "clauses", ["ZZZ-1"]),
    # a label is a line of a report: one that breaks the replay table could forge lines
    "hook-label-newline": param(6, "label", "h\n0 divergence(s)"),
    "hook-label-escape": param(6, "label", "h\x1b[2J"),
    "statement-op-list": at(0, "op", ["leaf"]),
    "statement-unknown-field": at(0, "colour", "red"),
    "meta-int": top("meta", 1),
    "meta-list": top("meta", ["generator"]),
    "seed-string": top("seed", "seven"),
    "args-int": at(1, "args", 5),
    "args-string": at(1, "args", "xy"),
    "args-nested-list": at(1, "args", [["x"], 2.0]),
    "params-string": at(1, "params", "mul"),
    "params-list": at(1, "params", ["mul"]),
    "body-int": at(5, "body", 1),
    "body-object": at(5, "body", {"op": "call"}),
    "clauses-int": at(1, "clauses", 3),
    "out-int": at(1, "out", 3),
    "target-list": at(2, "target", ["y"]),
    "inputs-int": param(9, "inputs", 1),
    "outputs-string": param(9, "outputs", "s"),
    "index-int": param(3, "index", 0),
    "index-item-string": param(3, "index", ["0"]),
    "index-slice-bad": param(3, "index", [{"slice": "0:2"}]),
    "what-missing": without(8, "params", "what"),
    "what-unknown": param(8, "what", "colour"),
    "view-kw-shape-missing": param(2, "kw", {}),
    "view-kw-int": param(2, "kw", 4),
    "view-fn-unknown": param(2, "fn", "squash"),
    "name-undefined": at(1, "args", ["nowhere", 2.0]),
    "target-undefined": at(7, "target", "nowhere"),
    "remove-a-tensor": at(10, "target", "x"),
    "fn-unknown": param(1, "fn", "frobnicate"),
    "fn-dunder": param(1, "fn", "__import__"),
    "mode-unknown": param(5, "mode", "half_grad"),
    "hook-behaviour-unknown": param(6, "behaviour", "explode"),
    "dtype-float33": param(0, "dtype", "float33"),
    "dtype-int": param(0, "dtype", 64),
    "shape-two-values-for-1": lambda d: d["statements"][0]["params"].update(
        values=[1.0, 2.0], shape=[1]),
    "shape-negative": param(0, "shape", [-1, -4]),
    "shape-string": param(0, "shape", "2x2"),
    "values-string": param(0, "values", "1234"),
    "values-nan": param(0, "values", [float("nan"), 1.0, 2.0, 3.0]),
    "values-inf": param(0, "values", [float("inf"), 1.0, 2.0, 3.0]),
    "values-bool": param(0, "values", [True, False, True, False]),
    "requires-grad-string": param(0, "requires_grad", "yes"),
    "retain-graph-string": param(7, "retain_graph", "yes"),
    "mul-by-nan": at(1, "args", ["x", float("nan")]),
}
PROGRAMS = [Case(f"program-{name}", ["replay", "p.json", *REFIMPL], {"p.json": text})
            for name, text in TEXT_FILES.items()]
PROGRAMS += [Case(f"program-{name}", ["replay", "p.json", *REFIMPL], {"p.json": program(edit)})
             for name, edit in PROGRAM_EDITS.items()]

# ---- expected-failure files -----------------------------------------------------------------
XFAIL_TEXTS: dict[str, str | bytes] = {
    "no-reason": "LEAF-5\n",
    "lower-case-id": "leaf-5 lower case\n",
    "unknown-id-form": "LEAF5 no dash\n",
    "seed-not-a-number": "seed:x why\n",
    "seed-negative": "seed:-1 why\n",
    "empty-engine-list": "LEAF-5 @ reason\n",
    "engine-list-no-reason": "LEAF-5 @paddle\n",
    "engine-list-semicolon": "LEAF-5 @paddle;torch reason\n",
    "engine-list-double-comma": "LEAF-5 @paddle,,torch reason\n",
    "engine-list-trailing-comma": "LEAF-5 @paddle, reason\n",
    "listed-twice": "LEAF-5 a\nLEAF-5 b\n",
    "binary": b"\x00\x01\x02\xff\xfe\xfd",
    "latin-1": "LEAF-5 caf\xe9\n".encode("latin-1"),
    "utf16": "LEAF-5 why\n".encode("utf-16"),
    "nul-bytes": "LEAF-5\x00 why\n",
    "bad-line-after-good": "# ok\nLEAF-5 a reason\n\n???\n",
    "unknown-error-kind": "GRAPH_FREED known\nNO_SUCH_KIND why\n",
    "signature-three-fields": "sig:backward/outcome/GRAPH_FREED why\n",
    "signature-empty": "sig: why\n",
    "signature-space": "sig:backward/outcome /GRAPH_FREED/ok why\n",
}
XFAILS = [Case(f"xfail-{name}", run("--xfail", "x.txt"), {"x.txt": text})
          for name, text in XFAIL_TEXTS.items()]
XFAILS.append(Case("xfail-matrix-binary", ["matrix", "--engines", "refimpl", "--oracle",
                                           "refimpl", *SMALL, "--xfail", "x.txt"],
                   {"x.txt": b"\xff\xfe"}))

CASES = FLAGS + ADAPTERS + PROGRAMS + XFAILS
GOOD_PROGRAM = program(lambda d: None)
CASES += [Case(f"replay-recorded-{field}-{kind}", ["replay", "d", "--quiet"],
               {"d/program.json": GOOD_PROGRAM,
                "d/divergence.json": json.dumps({field: value})}, words=f"{field} must be")
          for field in ("engine", "oracle", "device", "classes")
          for kind, value in (("null", None), ("list", ["refimpl"]), ("number", 7))]


def test_the_corpus_is_large_and_names_are_unique():
    assert len(CASES) >= 100
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_and_exit_2(case: Case, tmp_path: Path):
    cwd = folder(tmp_path, {"p.json": GOOD_PROGRAM, **case.files})
    if case.name == "xfail-dangling-link":
        (cwd / "link.txt").symlink_to(cwd / "nowhere.txt")
    if case.name == "replay-too-large":
        with open(cwd / "large.json", "wb") as f:      # sparse: no disk, 65 MiB of zeros
            f.truncate((64 << 20) + 1)
    if case.name in ("out-read-only-folder", "xfail-unreadable"):
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            pytest.skip("permissions do not hold for root")
        (cwd / "ro").mkdir()
        (cwd / "ro").chmod(0o555)
        (cwd / "secret.txt").chmod(0)
    r = gradspec(case.args, cwd)
    assert_one_line_exit_2(r, case.words)
    assert (cwd / KEEP).read_text() == "{}", "an earlier run's results were deleted"


def test_a_named_pipe_is_read_as_cat_reads_it(tmp_path: Path):
    """A FIFO is no bad input: read before its writer opens it, it waits for the writer (as
    `cat fifo` does) and reads what it writes, rather than reading as empty."""
    cwd = folder(tmp_path, {})
    os.mkfifo(cwd / "fifo")
    proc = subprocess.Popen([sys.executable, "-m", "conformance", "replay", "fifo", *REFIMPL,
                             "--quiet"], cwd=cwd, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while True:     # the writer opens once gradspec has the FIFO open to read
        try:
            fd = os.open(cwd / "fifo", os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            assert exc.errno == errno.ENXIO and proc.poll() is None, proc.communicate()
            assert time.monotonic() < end
            time.sleep(0.02)
    time.sleep(0.5)     # a writer slower than its reader
    with open(fd, "wb") as f:
        f.write(GOOD_PROGRAM.encode())
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == "", (err, out)
    assert out.endswith("0 divergence(s) between refimpl and refimpl\n")


# settings read from the environment: as bad as a bad flag
BAD_SETTINGS = [
    ("GRADSPEC_START_METHOD", "bogus", "run", "GRADSPEC_START_METHOD='bogus'"),
    ("GRADSPEC_START_METHOD", "bogus", "replay", "GRADSPEC_START_METHOD='bogus'"),
    ("GRADSPEC_SPEC_DIR", "nowhere", "run", "spec folder not found"),
    ("GRADSPEC_SPEC_DIR", "nowhere", "replay", "spec folder not found"),
    ("GRADSPEC_SPEC_DIR", ".", "replay", "graph.md is missing: not a spec folder"),
]


@pytest.mark.parametrize("variable, value, command, words", BAD_SETTINGS,
                         ids=[f"{v}-{c}-{w.split()[-1]}" for v, _, c, w in BAD_SETTINGS])
def test_a_bad_setting_in_the_environment_is_one_line_and_exit_2(
        variable: str, value: str, command: str, words: str, tmp_path: Path):
    cwd = folder(tmp_path, {"p.json": GOOD_PROGRAM})
    args = run() if command == "run" else ["replay", "p.json", *REFIMPL]
    r = gradspec(args, cwd, env={**ENV, variable: value})
    assert_one_line_exit_2(r, words)
    assert (cwd / KEEP).read_text() == "{}", "an earlier run's results were deleted"


def test_a_bad_start_method_is_one_line_for_a_replay_of_many_programs(tmp_path: Path):
    """Each program's replay caught it as an engine failure: exit 3 and a line per program."""
    cwd = folder(tmp_path, {"d/a/program.json": GOOD_PROGRAM, "d/b/program.json": GOOD_PROGRAM})
    r = gradspec(["replay", "d", *REFIMPL], cwd, env={**ENV, "GRADSPEC_START_METHOD": "bogus"})
    assert_one_line_exit_2(r, "GRADSPEC_START_METHOD='bogus'")


def test_the_base_program_is_good(tmp_path: Path):
    r = gradspec(["replay", "p.json", *REFIMPL], folder(tmp_path, {"p.json": GOOD_PROGRAM}))
    assert r.returncode == 0, r.stderr
    assert "0 divergence(s)" in r.stdout


# ---- duck-typed adapters that misbehave only mid-run ----------------------------------------
DUCKS = ["to_list_object", "to_list_opaque", "dtype_int", "shape_string", "grad_fn_name_list",
         "next_functions_int", "version_string", "is_leaf_opaque"]
# each through replay; the ones whose values no report can print also through a whole run
DUCK_CASES = [("replay", name) for name in DUCKS] + \
    [("run", name) for name in ("to_list_object", "to_list_opaque", "is_leaf_opaque")]
FORK = {**ENV, "GRADSPEC_START_METHOD": "fork"}    # refimpl underneath: no threads, fork-safe


@pytest.mark.parametrize("how, name", DUCK_CASES, ids=[f"{h}-{n}" for h, n in DUCK_CASES])
def test_a_duck_typed_adapter_is_a_divergence_or_one_line(how: str, name: str,
                                                          tmp_path: Path):
    spec = f"{A}:{name}"
    args = ["replay", "p.json", "--engine", spec, "--oracle", "refimpl"] if how == "replay" \
        else ["run", "--engine", spec, "--oracle", "refimpl", "--count", "2", "--quiet",
              "--no-probe", "--no-shrink", "--source", "tests.bad_inputs.programs:source"]
    r = gradspec(args, folder(tmp_path, {"p.json": GOOD_PROGRAM}), env=FORK)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (1, 2, 3), (r.returncode, r.stderr, r.stdout[-2000:])
    if r.returncode == 2:
        assert len(r.stderr.splitlines()) == 1, r.stderr
    if how == "run" and r.returncode == 1:
        report = json.loads((tmp_path / "gradspec-out" / "report.json").read_text())
        assert report["divergences"]


# ---- a closed pipe, the import path ---------------------------------------------------------
@pytest.mark.parametrize("args", [["spec", "LEAF-1"], ["index"], ["--help"]])
def test_a_closed_stdout_is_no_traceback(args: list[str], tmp_path: Path):
    """`gradspec spec X | head -1`: the reader went away; stop quietly."""
    p = subprocess.Popen([sys.executable, "-m", "conformance", *args], cwd=tmp_path, env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()            # before the program writes anything
    err = p.stderr.read().decode("utf-8", "replace")
    p.stderr.close()
    p.wait(timeout=60)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert p.returncode in (0, 141), err


STRAY = {f"{name}.py": f"raise SystemExit('stray {name}.py imported from the current folder')\n"
         for name in ("numpy", "argparse", "json")}
CWD_ADAPTER = ("from conformance.engines.torchlike import refimpl_engine\n\n"
               "def engine(device='cpu'):\n    return refimpl_engine(device)\n")


def entry_point() -> list[str]:
    """The `gradspec` console script of this interpreter, or its equivalent."""
    script = Path(sys.executable).with_name("gradspec")
    if script.exists():
        return [sys.executable, str(script)]
    return [sys.executable, "-c", "import sys; from conformance.cli import main; "
            "sys.exit(main())"]


@pytest.mark.parametrize("how", ["entry-point", "module"])
def test_stray_modules_in_the_current_folder_are_not_imported(how: str, tmp_path: Path):
    cwd = folder(tmp_path, {**STRAY, "gs_cwd_adapter.py": CWD_ADAPTER, "p.json": GOOD_PROGRAM})
    cmd = entry_point() if how == "entry-point" else [sys.executable, "-m", "conformance"]
    r = subprocess.run([*cmd, "replay", "p.json", "--engine", "gs_cwd_adapter:engine",
                        "--oracle", "refimpl"], cwd=cwd, env=ENV, capture_output=True,
                       text=True, timeout=60)
    assert "stray" not in r.stderr, r.stderr
    assert r.returncode == 0 and "0 divergence(s)" in r.stdout, r.stderr  # the adapter resolved


def test_a_real_ctrl_c_while_an_engine_loads_interrupts(tmp_path: Path):
    """Unlike a KeyboardInterrupt the factory raises itself (a broken adapter, exit 2)."""
    r = gradspec(engine(f"{A}:interrupted_by_user"), folder(tmp_path, {}))
    assert r.returncode == 130 and r.stderr.splitlines() == ["gradspec: interrupted"], r.stderr


def test_a_ctrl_c_while_an_engine_loads_interrupts_once_it_has_loaded(tmp_path: Path):
    """A Ctrl-C waits until the engine has loaded: a KeyboardInterrupt inside an engine's
    import can be swallowed there (torch's C++ does, when numpy's import gets it, and the run
    went on to judge the programs with numpy half-imported) or abort the process."""
    r = gradspec(engine(f"{A}:interrupt_swallowed"), folder(tmp_path, {}))
    assert r.returncode == 130 and r.stderr.splitlines() == ["gradspec: interrupted"], r.stderr


def test_replay_never_imports_a_module_a_divergence_json_names(tmp_path: Path):
    """A folder's divergence.json naming an import path (here a module whose import prints,
    beside the folder in the current folder) is refused before anything is imported."""
    cwd = folder(tmp_path, {"d/program.json": GOOD_PROGRAM,
                            "d/divergence.json": json.dumps({"engine": "loud:factory",
                                                             "oracle": "refimpl"}),
                            "loud.py": "print('IMPORTED')\ndef factory(device='cpu'): pass\n"})
    r = gradspec(["replay", "d"], cwd)
    assert_one_line_exit_2(r, "give it with --engine")
    assert "IMPORTED" not in r.stdout + r.stderr


def test_dev_null_is_an_empty_expected_failure_file(tmp_path: Path):
    """/dev/null is no regular file, but it is the empty file by convention: accepted."""
    cwd = folder(tmp_path, {})
    r = gradspec(["run", *REFIMPL, *SMALL, "--no-probe", "--xfail", os.devnull, "--out", "o"],
                 cwd, timeout=120)
    assert r.returncode == 0, r.stderr
