"""Fault drills: engines that abort, are killed, hang, leak grad mode, start a thread when
imported or load slowly (tests/broken_engines/). Each is reported as what it is (a crash or a
timeout at the statement that was running, apart from divergences; a grad-mode leak as the
divergence of the program that leaked), the run completes, the report is the same serially and
with -n 2, and no worker is left running: not after the run, not after its parent is killed,
not after Ctrl-C (which writes a partial report and leaves earlier results alone)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from conformance.runner import program_seeds, run_campaign
from tests.conformance.test_executor import leaf, obs

ROOT = Path(__file__).resolve().parents[2]
ENGINES = "tests.broken_engines"
HERE = "tests.conformance.test_fault_drills"
BACKWARD = "3"      # the path of the backward statement of the "backward" programs


def source(seed: int, capabilities=None, size: int = 20) -> Program:
    """Three small programs, by seed: one with a set_grad_enabled(False) block followed by a
    statement that records a graph, one with a backward pass (statement 3), one with neither."""
    kind = seed % 3
    if kind == 0:
        body = [leaf("x", [1.0, 2.0], [2]),
                S("mode", params={"mode": "set_grad_enabled", "enabled": False},
                  clauses=["MODE-3"], body=[S("call", out="y", args=["x", 2.0],
                                              params={"fn": "mul"})]),
                S("call", out="z", args=["x", 3.0], params={"fn": "mul"}),
                obs("z", "requires_grad", clauses=["MODE-4"])]
    elif kind == 1:
        body = [leaf("x", [1.0, 2.0], [2]),
                S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
                S("call", out="s", args=["y"], params={"fn": "sum"}),
                S("backward", target="s", clauses=["GRAPH-2"]),
                obs("x", "grad")]
    else:
        body = [leaf("x", [1.0, 2.0], [2]),
                S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
                obs("y", "requires_grad")]
    return Program(body, seed=seed)


def kinds(count: int) -> list[int]:
    return [s % 3 for s in program_seeds(0, count)]


def descendants(pid: int) -> list[int]:
    """The living descendants of `pid` (from /proc), but for zombies and multiprocessing's
    own helpers (the forkserver and the resource tracker: one each per parent, idle between
    runs, they exit with it; a forkserver's children, the workers, do count)."""
    parent: dict[int, int] = {}
    helper: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if fields[0] != "Z":
            parent[int(entry.name)] = int(fields[1])
            if b"multiprocessing.forkserver" in cmd or b"multiprocessing.resource_tracker" in cmd:
                helper.add(int(entry.name))
    children: dict[int, list[int]] = {}
    for child, ppid in parent.items():
        children.setdefault(ppid, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            if not (child in helper and parent[child] not in helper):
                found.append(child)
    return found


_BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def _children_before_the_test():
    """The test process's descendants before the test: other tests in the same process (a
    session's resident conformance worker, under xdist) may keep theirs, legitimately."""
    _BEFORE.clear()
    _BEFORE.update(descendants(os.getpid()))
    yield


def settled(pid: int, seconds: float = 5.0) -> list[int]:
    """The descendants of `pid` still alive after up to `seconds` (of this test process:
    those the test started)."""
    def left_over() -> list[int]:
        found = descendants(pid)
        return [d for d in found if d not in _BEFORE] if pid == os.getpid() else found
    end = time.monotonic() + seconds
    while (left := left_over()) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def campaign(tmp_path, engine, oracle="torch", **kw):
    kw.setdefault("count", 6)
    kw.setdefault("timeout", 5.0)
    kw.setdefault("probe", False)
    if engine not in ("torch", "refimpl"):
        engine = f"{ENGINES}.{engine}:factory"
    return run_campaign(engine, oracle, out_dir=tmp_path, progress=None, source=source, **kw)


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@pytest.mark.parametrize("engine,code", [("aborts", -signal.SIGABRT),
                                         ("killed", -signal.SIGKILL)])
def test_an_engine_that_dies_is_a_crash_at_the_statement_running(tmp_path, engine, code):
    report = campaign(tmp_path, engine, jobs=2)
    died = [i for i, k in enumerate(kinds(6)) if k == 1]
    assert report.programs == 6 and [d["index"] for d in report.crashes] == died
    assert report.divergences == [] and report.timeouts == []
    for d in report.crashes:
        assert d["what"] == "crash" and d["path"] == BACKWARD and d["primary"] == ["GRAPH-2"]
        assert f"exit code {code}" in d["first"] and f"at statement {BACKWARD}" in d["first"]
        assert d["statements"] == 4 and d["minimized_from"] == 5   # cut after the statement
        assert Path(d["folder"]).parent == tmp_path / "crashes"
    assert report.clauses["GRAPH-2"]["crashes"] == len(died)
    assert report.exit_code == 3 and "crash" in report.unjudged()     # more than 1% crashed
    assert settled(os.getpid()) == []


def padded(seed: int, capabilities=None, size: int = 20) -> Program:
    """A program with a backward pass (statement 6) among statements it does not need: two
    of them before it, unrelated to it, and two after it."""
    return Program([
        leaf("x", [1.0, 2.0], [2]),
        leaf("w", [3.0], [1]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
        S("call", out="v", args=["w", "w"], params={"fn": "add"}),
        obs("v", "requires_grad"),
        S("call", out="s", args=["y"], params={"fn": "sum"}),
        S("backward", target="s", clauses=["GRAPH-2"]),
        obs("x", "grad"),
        obs("w", "requires_grad")], seed=seed)


@pytest.mark.parametrize("engine,what,timeout", [("aborts", "crashes", 5.0),
                                                 ("hangs", "timeouts", 1.0)])
def test_a_crash_or_hang_repro_is_shrunk_to_what_still_fails(tmp_path, engine, what, timeout,
                                                             capsys):
    report = run_campaign(f"{ENGINES}.{engine}:factory", "torch", out_dir=tmp_path,
                          progress=None, source=padded, count=2, timeout=timeout, probe=False)
    failed = getattr(report, what)
    assert len(failed) == 2 and report.divergences == []
    for d in failed:
        assert d["statements"] == 4 and d["minimized_from"] == 9 and d["path"] == "3"
        program = Program.loads((Path(d["folder"]) / "program.json").read_text())
        assert [s.op for s in program.statements] == ["leaf", "call", "call", "backward"]
        assert d["primary"] == ["GRAPH-2"] and "at statement 3" in d["first"]
    # the shrunk repro still fails, on replay, at the statement it names (the engine given
    # again: divergence.json records an import path, which replay never imports on its word)
    assert main(["replay", failed[0]["folder"], "--timeout", str(timeout),
                 "--engine", f"{ENGINES}.{engine}:factory"]) == 3
    assert "at statement 3" in capsys.readouterr().err
    assert settled(os.getpid()) == []


def test_a_crash_that_does_not_come_back_is_reported_as_first_found(tmp_path):
    from tests.broken_engines.aborts_once import MARKER
    MARKER.unlink(missing_ok=True)
    report = run_campaign(f"{ENGINES}.aborts_once:factory", "torch", out_dir=tmp_path / "out",
                          progress=None, source=padded, count=1, timeout=5.0, probe=False)
    assert MARKER.exists() and len(report.crashes) == 1
    MARKER.unlink()
    d = report.crashes[0]
    assert d["path"] == "6" and d["statements"] == 7 and d["minimized_from"] == 9   # the cut
    assert settled(os.getpid()) == []


def test_an_engine_raising_keyboard_interrupt_is_a_crash_told_without_a_traceback(tmp_path):
    """KeyboardInterrupt is a BaseException, not an Exception: raised by an engine's method in
    a worker, it is that engine's crash at the statement running, like an abort, and the
    worker's end prints nothing (multiprocessing would print its traceback)."""
    proc = gradspec("run", "--engine", f"{ENGINES}.interrupts:factory", "--source",
                    f"{HERE}:source", "--count", "6", "-n", "2", "--no-probe", "--quiet",
                    "--out", str(tmp_path / "out"))
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.strip().splitlines() == [
        "gradspec: could not judge: 2 crash(es) and 0 timeout(s) in 6 programs, more than "
        "1.0% (--max-unjudged)"]
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    died = [i for i, k in enumerate(kinds(6)) if k == 1]
    assert [d["index"] for d in data["crashes"]] == died and data["divergences"] == []
    for d in data["crashes"]:
        assert d["path"] == BACKWARD and d["primary"] == ["GRAPH-2"]
        assert f"engine: raised KeyboardInterrupt at statement {BACKWARD}" in d["first"]


def test_a_few_crashes_fail_the_run_without_making_it_unjudged(tmp_path):
    report = campaign(tmp_path, "aborts", count=3, max_unjudged=1.0)
    assert report.crashes and report.unjudged() is None and report.exit_code == 1


def test_a_hanging_engine_is_a_timeout_at_the_statement_running(tmp_path):
    report = campaign(tmp_path, "hangs", count=3, timeout=1.0, jobs=2)
    hung = [i for i, k in enumerate(kinds(3)) if k == 1]
    assert [d["index"] for d in report.timeouts] == hung and report.divergences == []
    assert all(d["what"] == "timeout" and d["path"] == BACKWARD for d in report.timeouts)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["timed_out_programs"] == len(hung) and data["divergent_programs"] == 0
    assert data["clauses"]["GRAPH-2"]["timeouts"] == len(hung)
    assert settled(os.getpid()) == []


def test_a_grad_mode_leak_is_the_divergence_of_the_program_that_leaked(tmp_path):
    report = campaign(tmp_path, "leaks_grad_mode", count=9, jobs=1)
    leaked = [i for i, k in enumerate(kinds(9)) if k == 0]
    assert leaked and [d["index"] for d in report.divergences] == leaked   # no later program
    for d in report.divergences:
        assert d["what"] == "grad mode leak" and "MODE-4" in d["primary"]
        assert d["statements"] <= 4     # shrunk, in a fresh worker
    assert report.exit_code == 1


def test_an_engine_that_starts_a_thread_at_import_is_judged_like_torch(tmp_path):
    import tests.broken_engines.thread_at_import  # noqa: F401 - the parent has the thread too
    report = campaign(tmp_path, "thread_at_import", count=4, timeout=10.0, jobs=2)
    assert report.exit_code == 0 and report.timeouts == [] and report.divergences == []


def test_the_clock_starts_when_the_worker_begins_the_program(tmp_path):
    report = campaign(tmp_path, "slow_start", count=2, timeout=1.0, jobs=2)
    assert report.timeouts == [] and report.exit_code == 0


STRIP = ("folder", "program", "divergence", "traces", "repro_torch", "repro_engine")


@pytest.mark.parametrize("engine", ["aborts", "hangs"])
def test_reports_are_the_same_serially_and_with_two_jobs(tmp_path, engine):
    one = campaign(tmp_path / "one", engine, count=4, timeout=1.0, jobs=1)
    two = campaign(tmp_path / "two", engine, count=4, timeout=1.0, jobs=2)

    def strip(r):
        return [[{k: v for k, v in d.items() if k not in STRIP} for d in getattr(r, kind)]
                for kind in ("divergences", "crashes", "timeouts", "oracle_failures")]
    assert strip(one) == strip(two) and one.clauses == two.clauses
    assert one.crashes or one.timeouts


def test_the_oracle_failing_means_the_run_cannot_be_judged(tmp_path):
    report = campaign(tmp_path, "torch", f"{ENGINES}.aborts:factory", count=3)
    assert report.oracle_failures and report.exit_code == 3
    assert "the oracle crashed at statement 3" in report.oracle_failures[0]["detail"]


def test_replay_of_a_crash_takes_the_recorded_oracle_and_names_the_statement(tmp_path, capsys):
    """The folder records the engine by import path: replay refuses to import it on the
    file's word (one line, exit 2) and replays when it is given again."""
    report = campaign(tmp_path, "aborts", count=3)
    folder = report.crashes[0]["folder"]
    assert main(["replay", folder, "--timeout", "5"]) == 2
    assert "give it with --engine" in capsys.readouterr().err
    assert main(["replay", folder, "--timeout", "5", "--engine", f"{ENGINES}.aborts:factory"]
                ) == 3
    out, err = capsys.readouterr()
    assert f"{ENGINES}.aborts:factory" in out and f"!! {BACKWARD} " in out
    assert err.count("\n") == 1 and f"at statement {BACKWARD}" in err and "crash" in err
    assert settled(os.getpid()) == []


def test_replay_of_a_hang_times_out(tmp_path, capsys):
    program = tmp_path / "program.json"
    program.write_text(source(1).dumps())
    assert main(["replay", str(program), "--engine", f"{ENGINES}.hangs:factory",
                 "--timeout", "1"]) == 3
    err = capsys.readouterr().err
    assert "timeout" in err and f"at statement {BACKWARD}" in err
    assert settled(os.getpid()) == []


def gradspec(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "conformance.cli", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def wait_for_workers(proc: subprocess.Popen, n: int, seconds: float = 60.0) -> list[int]:
    end = time.monotonic() + seconds
    while len(descendants(proc.pid)) < n and time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    time.sleep(1.0)     # the workers are running their programs
    return descendants(proc.pid)


HANGING = ["run", "--engine", f"{ENGINES}.hangs:factory", "--source", f"{HERE}:source",
           "--count", "6", "-n", "2", "--timeout", "60", "--no-probe", "--quiet"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_exit_when_the_parent_is_killed(tmp_path, sig):
    proc = gradspec(*HANGING, "--out", str(tmp_path / "out"))
    workers = wait_for_workers(proc, 2)
    assert len(workers) >= 2
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    end = time.monotonic() + 10
    while any(Path(f"/proc/{w}").exists() and "Z" not in _state(w) for w in workers) \
            and time.monotonic() < end:
        time.sleep(0.1)
    assert [w for w in workers if Path(f"/proc/{w}").exists() and "Z" not in _state(w)] == []


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "Z"


def test_ctrl_c_writes_a_partial_report_and_keeps_earlier_results(tmp_path):
    out = tmp_path / "out"
    (out / "divergences" / "old").mkdir(parents=True)
    (out / "report.json").write_text('{"earlier": true}\n')
    proc = gradspec(*HANGING, "--out", str(out), start_new_session=True)
    wait_for_workers(proc, 2)
    os.killpg(proc.pid, signal.SIGINT)       # what a terminal's Ctrl-C does: the whole group
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradspec: interrupted after"), stderr
    partial = Path(lines[0].split(" in ", 1)[1].split(" (", 1)[0])
    data = json.loads(partial.read_text())
    assert data["complete"] is False and data["exit_code"] == 130
    assert partial.parent != out and partial.parent.parent == out.parent
    assert json.loads((out / "report.json").read_text()) == {"earlier": True}
    assert (out / "divergences" / "old").is_dir()
    assert settled(proc.pid, 10) == []


def test_ctrl_c_while_the_forkserver_starts_is_a_clean_interrupt(tmp_path):
    """A Ctrl-C while the forkserver still imports its preload (torch: seconds) ends the run
    as a later one does: one line naming the partial report, exit 130, no traceback of the
    forkserver's import (it gets the Ctrl-C too, a terminal sends it to the whole group)."""
    mark = tmp_path / "preloading"
    code = ("import sys; from conformance.campaign import process; "
            f"process.PRELOAD = [*process.PRELOAD, '{ENGINES}.slow_preload']; "
            "from conformance.cli import main; sys.exit(main())")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "run", "--engine", "torch", "--count", "3", "--quiet",
         "--out", str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "GRADSPEC_START_METHOD": "forkserver",
             "GRADSPEC_TEST_PRELOADING": str(mark)})
    end = time.monotonic() + 60
    while not mark.exists() and time.monotonic() < end:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    time.sleep(0.5)             # the forkserver ends once its parent is gone
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradspec: interrupted after 0 of 3 "
                                                   "programs; incomplete report in"), stderr
    partial = Path(lines[0].split(" in ", 1)[1].split(" (", 1)[0])
    assert json.loads(partial.read_text())["complete"] is False
    assert not (tmp_path / "out" / "report.json").exists()


def test_an_interrupt_caught_after_a_string_eval_still_exits_130(tmp_path):
    """A Ctrl-C that lands in code eval() runs from a string (namedtuple's, while torch
    imports) leaves CPython's mark of an unhandled KeyboardInterrupt behind, though gradspec
    catches it: `python -m conformance run` must still exit 130, not kill itself with SIGINT
    at exit (-m is the way that checks the mark: a script, and -c, exit at once)."""
    (tmp_path / "interrupted_in_eval.py").write_text(
        "import sys\nfrom conformance.campaign import runner\n\n\n"
        "def stop():\n    raise KeyboardInterrupt\n\n\n"
        "def run_campaign(*args, **kwargs):\n    eval('stop()', {'stop': stop})\n\n\n"
        "runner.run_campaign = run_campaign\n"
        "runpy = __import__('runpy')\nrunpy.run_module('conformance', run_name='__main__')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    proc = subprocess.run([sys.executable, "-m", "interrupted_in_eval", "run", "--count", "1",
                           "--quiet", "--out", str(tmp_path / "out")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (130, "gradspec: interrupted\n")


def test_a_second_run_into_the_same_out_is_refused_while_the_first_runs(tmp_path, capsys):
    """One run at a time per --out: a second, of `run` or `matrix`, refuses in one line, exit
    2, before it runs anything; the lock goes with the first run, however it ends (here
    killed), and a run in this process releases it when it ends, so the next one may go."""
    out = tmp_path / "out"
    proc = gradspec(*HANGING, "--out", str(out), start_new_session=True)
    wait_for_workers(proc, 2)
    small = ["--count", "2", "--size", "6", "--quiet", "--out", str(out)]
    for command in (["run", "--engine", "refimpl", "--oracle", "refimpl"],
                    ["matrix", "--engines", "refimpl", "--oracle", "refimpl"]):
        assert main([*command, *small]) == 2
        err = capsys.readouterr().err
        assert err == (f"gradspec: error: cannot write to {out}: another gradspec run is "
                       f"writing there (pid {proc.pid}): wait for it or give another --out\n")
    assert not (out / "report.json").exists() and not (out / "matrix.json").exists()
    os.killpg(proc.pid, signal.SIGKILL)     # a crash: the kernel releases its lock
    proc.communicate(timeout=30)
    for _ in range(2):
        assert main(["run", "--engine", "refimpl", "--oracle", "refimpl", *small]) == 0
    assert json.loads((out / "report.json").read_text())["complete"] is True
    assert main(["matrix", "--engines", "refimpl", "--oracle", "refimpl", *small]) == 0
    assert settled(os.getpid()) == []


def test_an_unwritable_out_is_refused_before_the_campaign(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    start = time.monotonic()
    assert main(["run", "--engine", "torch", "--count", "50", "--out", str(blocker / "o"),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write to" in err
    assert time.monotonic() - start < 30


def test_a_complete_run_replaces_the_previous_one_whole(tmp_path):
    out = tmp_path / "out"
    (out / "divergences" / "stale").mkdir(parents=True)
    (out / "mine.txt").write_text("kept")
    report = campaign(out, "torch", count=3)
    assert report.exit_code == 0 and not (out / "divergences").exists()
    assert (out / "mine.txt").read_text() == "kept" and (out / "report.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]     # no staging folder left


def test_sigterm_keeps_the_partial_report_as_ctrl_c_does(tmp_path):
    """SIGTERM (what `timeout`, CI cancellation and `docker stop` send, to the command alone)
    stops the run as Ctrl-C does: exit 130, one line naming the partial report."""
    out = tmp_path / "out"
    proc = gradspec(*HANGING, "--out", str(out), start_new_session=True)
    wait_for_workers(proc, 2)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradspec: interrupted after"), stderr
    partial = Path(lines[0].split(" in ", 1)[1].split(" (", 1)[0])
    assert json.loads(partial.read_text())["complete"] is False
    assert settled(proc.pid, 10) == []


def test_an_interrupt_while_the_results_are_written_loses_nothing(tmp_path, monkeypatch):
    """Once every program has run, a first Ctrl-C waits until the report is written and
    swapped in, and the run ends with its verdict; a second one interrupts at once (a program
    source that hangs while crashed programs are rebuilt must not make the run unstoppable)."""
    from conformance.campaign import runner
    collect = runner._collect
    signals_sent = []

    def interrupted_collect(*args, **kwargs):
        for _ in range(len(signals_sent) and 2 or 1):
            os.kill(os.getpid(), signal.SIGINT)     # arrives while the results are written
        return collect(*args, **kwargs)
    monkeypatch.setattr(runner, "_collect", interrupted_collect)
    out = tmp_path / "out"
    report = runner.run_campaign("refimpl", "refimpl", seed=0, count=3, size=8, jobs=1,
                                 out_dir=out, progress=False, probe=False, shrink=False)
    data = json.loads((out / "report.json").read_text())
    assert report.complete and data["complete"] is True and data["programs"] == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    signals_sent.append("twice")
    with pytest.raises(KeyboardInterrupt):
        runner.run_campaign("refimpl", "refimpl", seed=1, count=3, size=8, jobs=1,
                            out_dir=tmp_path / "out2", progress=False, probe=False,
                            shrink=False)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    monkeypatch.setattr(runner, "_collect", collect)    # the interrupted run let go of out2
    assert runner.run_campaign("refimpl", "refimpl", seed=1, count=3, size=8, jobs=1,
                               out_dir=tmp_path / "out2", progress=False, probe=False,
                               shrink=False).complete
