"""conformance.runner: campaigns in worker processes. Crashes and hangs are reported, apart
from divergences, and the run goes on; the oracle's own failures are kept apart and the run
cannot judge; -n 2 gives what -n 1 gives."""
from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import pytest

from conformance.campaign.pool import ENGINE, ORACLE, PATH_BYTES, Progress
from conformance.lang.program import Program
from conformance.runner import program_seeds, run_campaign
from tests.conformance.test_executor import MOD, source

NAMES = {0: "sample", 1: "saved_output", 2: "no_backward"}


def campaign(tmp_path, engine="torch", oracle="torch", **kw):
    kw.setdefault("count", 6)
    kw.setdefault("timeout", 5.0)
    return run_campaign(engine, oracle, out_dir=tmp_path, progress=None, source=source, **kw)


def kinds(seeds):
    return [NAMES[s % 3] for s in seeds]


def test_torch_against_itself(tmp_path):
    report = campaign(tmp_path)
    assert report.exit_code == 0 and report.programs == 6 and report.divergences == []
    data = json.loads((tmp_path / "report.json").read_text())
    for key in ("engine", "engine_version", "device", "oracle", "oracle_version",
                "spec_version", "seed", "clauses", "divergences"):
        assert key in data
    exercised = {c for c, r in data["clauses"].items() if r["programs"]}
    assert {"LEAF-1", "VER-7", "GRAPH-2"} <= exercised


def test_divergences_are_written_and_jobs_do_not_change_results(tmp_path):
    one = campaign(tmp_path / "one", f"{MOD}:no_leaf_check", jobs=1)
    two = campaign(tmp_path / "two", f"{MOD}:no_leaf_check", jobs=2)
    assert one.exit_code == 1
    want = [i for i, k in enumerate(kinds(program_seeds(0, 6))) if k == "sample"]
    assert [d["index"] for d in one.divergences] == want
    strip = ("folder", "program", "divergence", "traces", "repro_torch", "repro_engine")
    assert [{k: v for k, v in d.items() if k not in strip} for d in one.divergences] == \
        [{k: v for k, v in d.items() if k not in strip} for d in two.divergences]
    assert one.clauses == two.clauses
    d = one.divergences[0]
    assert d["what"] == "outcome" and d["clauses"][0] == "INPLACE-1" and d["statements"] == 2
    for key in ("program", "divergence", "traces", "repro_torch", "repro_engine"):
        assert (tmp_path / "one").joinpath(d[key].split("one/", 1)[1]).exists()
    assert one.clauses["INPLACE-1"]["divergences"] == len(want)


def test_a_crashing_engine_does_not_end_the_run(tmp_path):
    report = campaign(tmp_path, f"{MOD}:crashing", jobs=2)
    seeds = program_seeds(0, 6)
    crashed = [i for i, k in enumerate(kinds(seeds)) if k != "no_backward"]
    assert report.programs == 6 and [d["index"] for d in report.crashes] == crashed
    assert report.divergences == [] and report.exit_code == 3     # more than 1% crashed
    assert all(d["what"] == "crash" and "exit code 3" in d["first"] for d in report.crashes)
    for d in report.crashes:        # the progress record named the statement that crashed
        program = Program.from_json(json.loads(Path(d["program"]).read_text()))
        assert dict(program.walk())[d["path"]].op == "backward"
        assert d["first"].endswith(f"at statement {d['path']}")
    folder = tmp_path / "crashes"
    assert len(list(folder.glob("*/program.json"))) == len(crashed)
    assert not (tmp_path / "divergences").exists()


def test_the_progress_record_holds_the_statement_last_begun():
    progress = Progress(mp.get_context())
    assert progress.where() == ("the worker", "")
    progress.begin(7)
    progress.running(ORACLE)
    for path in ["0", "1", "1.0", "2"]:
        progress.statement(path)
    assert progress.where() == ("the oracle", "2") and progress.index.value == 7
    progress.running(ENGINE)
    assert progress.where() == ("the engine", "")
    for i in range(5000):               # more paths than the record keeps encoded
        progress.statement(f"{i}.{i}")
        assert progress.where()[1] == f"{i}.{i}"
    long = ".".join(["12"] * 100)
    progress.statement(long)
    assert progress.where() == ("the engine", long[:PATH_BYTES - 1])


def test_a_hanging_engine_times_out(tmp_path):
    report = campaign(tmp_path, f"{MOD}:hanging", count=3, timeout=1.0)
    hung = [i for i, k in enumerate(kinds(program_seeds(0, 3))) if k != "no_backward"]
    assert [d["index"] for d in report.timeouts] == hung and report.divergences == []
    assert all(d["what"] == "timeout" for d in report.timeouts)


def test_the_oracle_crashing_is_not_the_engines_divergence(tmp_path):
    report = campaign(tmp_path, "torch", f"{MOD}:crashing", count=3)
    assert report.exit_code == 3 and report.divergences == []     # could not judge
    assert report.oracle_failures and "the oracle crashed" in report.oracle_failures[0]["detail"]


def test_clauses_the_engine_cannot_express_are_not_applicable():
    from conformance.engines.torchlike import ALL_CAPABILITIES
    from conformance.report import clause_rows, clause_table
    from conformance.specdoc import load_spec
    spec = load_spec()
    caps = ALL_CAPABILITIES - {"hooks"}
    rows = clause_rows(spec, caps, {"LEAF-1": 4, "HOOK-2": 1}, {"LEAF-1": 1})
    assert rows["LEAF-1"] == {"programs": 4, "divergences": 1, "applicable": True}
    assert rows["HOOK-2"]["applicable"] is False
    table = clause_table(rows).splitlines()
    assert next(ln for ln in table if ln.startswith("HOOK-2 ")).split()[1:] == ["n/a", "n/a"]
    assert next(ln for ln in table if ln.startswith("LEAF-1 ")).split()[1:] == ["4", "1"]


def test_a_gradspec_bug_is_reported_not_hidden(tmp_path, capsys):
    """A program the harness failed on is reported with its reason, and the run could not
    judge (exit 3): it is no divergence of the engine's (exit 1), and is not counted as one."""
    from conformance.reports.summary import print_summary
    from tests.conformance.test_executor import broken_source
    report = run_campaign("torch", "torch", count=4, out_dir=tmp_path, progress=None,
                          source=broken_source)
    bad = [i for i, s in enumerate(program_seeds(0, 4)) if s % 2]
    assert [d["index"] for d in report.divergences] == bad and report.exit_code == 3
    assert all(d["what"] == "internal" and "KeyError" in d["traceback"]
               for d in report.divergences)
    assert "could not judge 2 program(s): gradspec failed" in report.unjudged()
    data = report.to_json()
    assert (data["divergent_programs"], data["not_judged_programs"]) == (0, 2)
    assert data["distinct_problems"] == 0 and report.problems == 0     # not the engine's
    assert [(g["count"], g.get("not_judged")) for g in report.groups] == [(2, True)]
    assert all(n["divergent_programs"] == n["distinct_problems"] == 0
               for n in data["by_class"].values())
    print_summary(report, tmp_path)
    out = capsys.readouterr().out
    assert "4 programs, 0 divergent, 2 not judged (gradspec failed on them), 0 crashed" in out
    assert ("0 divergent programs and 2 not judged, 0 distinct problem(s) and 1 group(s) not "
            "judged" in out)
    from conformance.reports.report_html import render_report
    page = render_report(data, tmp_path)
    assert "Problems (0, and 1 group(s) not judged)" in page
    assert "(not judged: gradspec failed on these programs)" in page


def test_a_problem_of_the_engine_is_never_grouped_with_programs_gradspec_failed_on():
    """Entries of one signature and primary clause are one problem only when all were judged:
    programs gradspec could not judge (a harness error, a program it failed on) make groups of
    their own, flagged."""
    from conformance.judge.problems import group
    entries = [{"index": i, "what": what, "signature": "sig", "primary": ["LEAF-1"],
                "statements": 3} for i, what in enumerate(("value", "internal", "harness",
                                                            "value"))]
    groups = group(entries)
    assert sorted((g["programs"], g.get("not_judged", False)) for g in groups) == [
        ([0, 3], False), ([1, 2], True)]


def _unbound_name(seed, capabilities=None, size=20):
    return Program.from_json({"gradspec_program": 1, "statements": [
        {"op": "leaf", "out": "x", "params": {"values": [1.0], "shape": [1],
                                              "dtype": "float64", "requires_grad": True}},
        {"op": "call", "out": "y", "args": ["nowhere"], "params": {"fn": "exp"}}]})


def _unknown_field(seed, capabilities=None, size=20):
    program = _unbound_name(seed)
    program.statements[1].args = ["x"]
    program.statements[1].params["bogus"] = 1
    return program


def _no_program(seed, capabilities=None, size=20):
    return {"statements": []}


def _unknown_clause(seed, capabilities=None, size=20):
    program = _unbound_name(seed)
    program.statements[1].args = ["x"]
    program.statements[1].clauses = ["NOPE-1"]
    return program


@pytest.mark.parametrize("source, words", [
    (_unbound_name, "name 'nowhere' is not bound"),
    (_unknown_field, "unknown field 'bogus'"),
    (_no_program, "returned dict, not a conformance Program"),
    (_unknown_clause, "NOPE-1 is not a clause of this spec"),
])
def test_a_program_source_is_held_to_what_a_program_file_is(tmp_path, source, words):
    """A statement the harness cannot run ran as skipped on both engines and compared equal
    (exit 0); something that is no program was a traceback. Both are programs not judged."""
    report = run_campaign("refimpl", "refimpl", count=2, size=4, out_dir=tmp_path,
                          progress=None, probe=False, source=source)
    assert report.exit_code == 3 and len(report.divergences) == 2
    assert all(d["what"] == "internal" and words in d["traceback"]
               for d in report.divergences)
    if source is _no_program:   # nothing to replay: one line, not a replay that "agrees"
        from conformance.cli import main
        assert main(["replay", report.divergences[0]["folder"]]) == 2


FORKED_AFTER_THREADS = """
import sys, torch
torch.tensor([[1.0, 3.0], [2.0, 0.5]]).max(0)    # starts torch's OpenMP pool in this process
from conformance.runner import run_campaign
report = run_campaign("torch", "torch", count=30, jobs=1, timeout=5.0, out_dir=sys.argv[1],
                      progress=None)
unjudged = report.oracle_failures + report.crashes + report.timeouts
print(report.exit_code, report.programs, len(unjudged))
"""


def test_workers_forked_from_a_process_whose_torch_started_threads_do_not_hang(tmp_path):
    # the pytest plugin forks its campaign's workers from a test process that may have run
    # any torch op: a worker that inherits a started OpenMP pool hangs in its next parallel
    # region unless it runs torch on one thread (campaign/pool.py)
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", FORKED_AFTER_THREADS, str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=240,
                       env={**__import__("os").environ, "GRADSPEC_START_METHOD": "fork"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["0", "30", "0"], r.stdout


def test_a_checked_source_is_the_same_pool_key_wherever_it_is_unpickled():
    """A Dask worker keeps its pool while the options are equal (campaign/cluster.py); each
    slice unpickles the options afresh."""
    import pickle

    from conformance.campaign.worker import CheckedSource
    a = CheckedSource(_unbound_name)
    b = pickle.loads(pickle.dumps(a))
    assert a == b and hash(a) == hash(b) and a != CheckedSource(_no_program)


@pytest.mark.parametrize("source_of", ["generator", "programs with divergences"])
def test_a_batch_judges_each_program_as_it_is_judged_alone(source_of):
    """worker.work_batch: every program drawn and run on the oracle, then each on the
    engine: the same result per program as worker.work gives it alone, the collector paused
    for the batch and on again after it."""
    import gc

    from conformance.campaign import worker
    from conformance.campaign.runner import default_source
    from conformance.engines import load_engine
    engine = load_engine("refimpl" if source_of == "generator" else f"{MOD}:no_leaf_check")
    oracle = load_engine("torch")
    caps = frozenset(oracle.capabilities) & frozenset(engine.capabilities)
    opt = {"source": default_source if source_of == "generator" else source, "caps": caps,
           "size": 12, "shrink_seconds": 5.0}
    progress = Progress(mp.get_context())
    state = (worker.Runs(engine, oracle, progress), opt)
    seeds = program_seeds(3, 9)
    alone = [worker.work(state, ("check", s), progress, lambda _: None) for s in seeds]
    items = [(i, ("check", s)) for i, s in enumerate(seeds)]
    paused, batch, order = [], [], []
    for index, result, retire in worker.work_batch(state, items, progress):
        paused.append(not gc.isenabled())
        batch.append((result, retire))
        order.append(index)
    assert batch == alone and order == list(range(len(seeds)))
    assert all(paused) and gc.isenabled()
    want = 0 if source_of == "generator" else kinds(seeds).count("sample")
    assert sum(bool(r["divergences"]) for r, _ in alone) == want
    assert want or source_of == "generator"


def test_a_programs_two_runs_check_its_statements_once(monkeypatch):
    """worker.work_batch and Runs.judge: the engine's run does not check again what the
    oracle's run of the same program checked (judge/executor.py, execute's `checked`)."""
    from conformance.campaign import worker
    from conformance.campaign.runner import default_source
    from conformance.engines import load_engine
    from conformance.kinds import KINDS
    calls: list[str] = []
    for kind in KINDS.values():
        monkeypatch.setattr(kind, "check", lambda s, path, f=kind.check: (
            calls.append(path), f(s, path))[1])
    engine, oracle = load_engine("refimpl"), load_engine("torch")
    caps = frozenset(oracle.capabilities) & frozenset(engine.capabilities)
    opt = {"source": default_source, "caps": caps, "size": 12, "shrink_seconds": 5.0}
    progress = Progress(mp.get_context())
    runs = worker.Runs(engine, oracle, progress)
    seeds = program_seeds(4, 3)
    statements = sum(len(list(default_source(s, caps, 12).walk())) for s in seeds)
    out = list(worker.work_batch((runs, opt), [(i, ("check", s)) for i, s in enumerate(seeds)],
                                 progress))
    assert len(out) == len(seeds) and len(calls) == statements
    calls.clear()
    runs.judge(default_source(seeds[0], caps, 12))
    assert len(calls) == len(list(default_source(seeds[0], caps, 12).walk()))


def test_a_batch_whose_oracle_cannot_be_reset_judges_that_program_alone():
    """A run after which an engine's grad mode cannot be reset makes the worker retire: the
    program whose oracle's run did that is judged (as one alone would be), and the others of
    the batch are left to the pool, which runs them in another worker."""
    from conformance.campaign import worker
    from conformance.campaign.runner import default_source
    from conformance.engines import load_engine

    class Stuck(worker.Runs):
        def run(self, program, engine, who, checked=None):
            out = super().run(program, engine, who, checked)
            if who == ORACLE and program.seed == seeds[2]:
                self.dirty = True
            return out
    engine, oracle = load_engine("refimpl"), load_engine("torch")
    caps = frozenset(oracle.capabilities) & frozenset(engine.capabilities)
    progress = Progress(mp.get_context())
    state = (Stuck(engine, oracle, progress), {"source": default_source, "caps": caps,
                                                "size": 8, "shrink_seconds": 5.0})
    seeds = program_seeds(5, 5)
    out = list(worker.work_batch(state, [(i, ("check", s)) for i, s in enumerate(seeds)],
                                 progress))
    assert [(index, retire) for index, _, retire in out] == [(2, True)]
    assert out[0][1]["divergences"] == [] and out[0][1]["clauses"]
