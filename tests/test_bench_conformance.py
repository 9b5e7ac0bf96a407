"""benchmarks/bench_conformance.py: the loops it times do the work they are named for. The
full loop, the loop in batches, the campaign worker's per-program work run in-process, and
`gradspec run`'s own loop in a worker process must find the same divergences on the same
seeds (an engine that diverges often, so that the counts say something), and the stage
figures must be built from the stages measured."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROKEN = "tests.broken_engines.retains_every_grad:factory"


@pytest.fixture(scope="module")
def bench():
    env = dict(os.environ)
    spec = importlib.util.spec_from_file_location(
        "bench_conformance", ROOT / "benchmarks" / "bench_conformance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.environ.clear()          # the script sets one-thread variables for its own process
    os.environ.update(env)
    return module


@pytest.fixture
def one_thread():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _caps(oracle, engine):
    return frozenset(oracle.capabilities) & frozenset(engine.capabilities)


def test_the_loops_find_the_same_divergences(bench, one_thread):
    oracle, engine = bench._engines(BROKEN, "torch")
    caps, seeds = _caps(oracle, engine), list(range(30))
    _, found, _ = bench.serial(seeds, 12, oracle, engine, caps)
    assert found > 10
    assert bench.runner_loop(seeds, 12, oracle, engine, caps)() == found
    assert bench.batched(seeds, 12, oracle, engine, caps) == found
    # its workers would come from a forkserver, whose CPU time is not this process's to read
    assert bench.campaign(seeds, 12, BROKEN, "torch", caps) is None


def test_the_campaign_is_gradspec_runs_loop(bench, one_thread, monkeypatch):
    # forked workers, whose CPU time this process can read (campaign/pool.py: start_method)
    monkeypatch.setenv("GRADSPEC_START_METHOD", "fork")
    oracle, engine = bench._engines(BROKEN, "torch")
    caps, seeds = _caps(oracle, engine), list(range(bench.WARM + 15))
    _, found, _ = bench.serial(seeds, 12, oracle, engine, caps)
    assert found > 10
    worker_s, parent_s, divergences = bench.campaign(seeds, 12, BROKEN, "torch", caps)
    assert divergences == found
    # a difference of two runs (the first WARM programs' run taken off): over 15 programs
    # the noise of a worker's start can outweigh them, so only its sign is asserted
    assert worker_s >= 0 and parent_s >= 0


def test_stage_figures_come_from_the_stages(bench, one_thread):
    oracle, engine = bench._engines("refimpl", "torch")
    caps, n = _caps(oracle, engine), bench.WARM + 5
    best = bench.stages(list(range(n)), 8, oracle, engine, caps, 1, ("refimpl", "torch"))
    assert set(bench.STAGES) <= set(best)
    # the campaign's figure is a difference of two runs (its fixed cost taken off), which
    # the noise of a worker's start can outweigh over a handful of programs: >= 0 only
    assert all(v > 0 for k, v in best.items() if not k.startswith("campaign"))
    assert best["campaign"] >= 0
    figures = bench.stage_figures(best, n)
    floor = (best["oracle"] + best["engine"]) / n * 1e3
    assert figures["floor_ms"] == pytest.approx(floor, abs=1e-3)
    for stage in ("loop", "runner", "campaign"):
        if best[stage] > 0:
            ratio = floor / (best[stage] / n * 1e3)
            assert figures[f"{stage}_vs_floor"] == pytest.approx(ratio, abs=2e-3)
    switch = (best["both"] - best["blocks"]) / n * 1e3
    assert figures["switch_ms"] == pytest.approx(switch, abs=1e-3)


def test_blocks_run_each_program_on_each_engine_once(bench, monkeypatch):
    """The "blocks" stage makes the runs of "both" (each program on the oracle, then on the
    engine, k at a time), only switching engines less often."""
    calls = []

    class Counting:
        def __init__(self, name):
            self.name = name

    monkeypatch.setattr(bench, "execute", lambda p, e: calls.append((e.name, p)))
    bench._run_blocks(list(range(7)), Counting("o"), Counting("e"), 3)
    assert calls == ([("o", p) for p in (0, 1, 2)] + [("e", p) for p in (0, 1, 2)]
                     + [("o", p) for p in (3, 4, 5)] + [("e", p) for p in (3, 4, 5)]
                     + [("o", 6), ("e", 6)])
