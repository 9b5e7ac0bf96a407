"""conformance.render: the repro script does what the executor does. Each program runs once
through the executor and once as a rendered script in a fresh interpreter; the observations,
hook calls and raising statements printed must match the trace."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conformance.compare import close
from conformance.engines import load_engine
from conformance.executor import VALUED, execute
from conformance.kinds import KINDS
from conformance.program import Program
from conformance.render import render, render_replay
from tests.conformance.test_executor import PROGRAMS, newer_statements

LINE = re.compile(r"^\[(?P<path>[0-9.]+)\] (?P<what>\S+) = (?P<value>.*)$")
HOOK = re.compile(r"^  (?:post |node )?hook (?P<label>\S+) (?:got|saw \.grad) = (?P<value>.*)$")
RAISED = re.compile(r"^\[(?P<path>[0-9.]+)\] raised ")


def generated(n: int) -> list[Program]:
    try:
        from conformance.generate import program_for_seed
    except ImportError:
        return []
    caps = load_engine("torch").capabilities
    return [program_for_seed(seed, caps, 20) for seed in range(n)]


DRIVER = """
import contextlib, io, json, sys
outs = []
for src in json.load(sys.stdin):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(src, "repro", "exec"), {"__name__": "__main__"})
    outs.append(buf.getvalue())
print(json.dumps(outs))
"""


def run_scripts(sources: list[str]) -> list[list[str]]:
    """Run each script in one fresh interpreter (torch imports once); their stdout lines."""
    r = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(sources),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return [o.splitlines() for o in json.loads(r.stdout.splitlines()[-1])]


def check_scripts_match_traces(programs: list[Program]) -> None:
    engine = load_engine("torch")
    traces = [execute(p, engine) for p in programs]
    outs = run_scripts([render(p, "import torch", [t])
                        for p, t in zip(programs, traces, strict=True)])
    for trace, out in zip(traces, outs, strict=True):
        check_output(trace, out)


def check_output(trace, out: list[str]) -> None:
    # a sweep prints one line per item, under its own path: (value, dtype) pairs
    want_values = {e.path: [v for v, _ in e.value] if KINDS[e.op].sweeps else e.value
                   for e in trace.events if e.status == "ok" and e.op in VALUED}
    sweeps = {e.path for e in trace.events if KINDS[e.op].sweeps}
    want_hooks = [(h[0], h[1]) for e in trace.events for h in e.hooks]
    want_raised = {e.path for e in trace.events if e.status != "ok"}
    got_values, got_hooks, got_raised = {}, [], set()
    for ln in out:
        if m := RAISED.match(ln):
            got_raised.add(m["path"])
        elif m := LINE.match(ln):
            if m["path"] in sweeps:
                got_values.setdefault(m["path"], []).append(json.loads(m["value"]))
            else:
                got_values[m["path"]] = json.loads(m["value"])
        elif m := HOOK.match(ln):
            got_hooks.append((m["label"], json.loads(m["value"])))
    assert got_raised == want_raised
    assert set(got_values) == set(want_values)
    for path, value in want_values.items():
        assert close(got_values[path], value, "float32"), path
    assert [h[0] for h in got_hooks] == [h[0] for h in want_hooks]
    assert all(close(g[1], w[1], "float32") for g, w in zip(got_hooks, want_hooks, strict=True))


def test_scripts_match_traces():
    check_scripts_match_traces([make() for make in PROGRAMS] + [newer_statements()])


def test_scripts_of_generated_programs_match_their_traces():
    programs = generated(60)
    if not programs:
        pytest.skip("no generator yet")
    check_scripts_match_traces(programs)


def test_crash_repro_guards_every_statement():
    src = render(PROGRAMS[0](), "import torch", guard_all=True)
    assert src.count("try:") == sum(1 for _ in PROGRAMS[0]().walk())
    run_scripts([src])


def test_replay_script_names_the_engine():
    src = render_replay("program.json", "pkg.mod:factory", "torch", "cpu")
    compile(src, "repro", "exec")
    assert "'--engine', 'pkg.mod:factory'" in src
