"""Throughput of the conformance loop: generated programs per second.

One program = generation (conformance/gen/) + a run on the oracle + a run on the engine + the
comparison (conformance/judge/), as `gradspec run` does it minus shrinking and reporting.
Measured serially and with 2 worker processes (what `pytest -n 2` or `gradspec run --jobs 2`
gives), and set against running the same programs on torch alone: once through the executor,
and once as the plain Python of their repro scripts (conformance/reports/render.py) with
output discarded.

The stages are also timed one by one on the same seeds, alternately, best of `--repeat`:
generation alone, each engine's executor runs alone, the comparison alone, the full loop, the
campaign worker's per-program work (conformance/campaign/worker.py) in this process, and
`gradspec run`'s loop itself in one worker process (by the worker's CPU time). The *execution
floor* is the two executor runs alone; the loop's throughput over the floor's (floor seconds /
loop seconds) says how much of the loop is the engines' own work. The loop shares two things
between a program's runs that the floor's runs alone cannot: a paused collector, and the check
of the program's statements; the loop is also set against a floor that pauses the collector
as the loop does, and one that checks each program once as the loop does. Each stage
frees what it makes as it goes, as the loop does: results kept for the whole stage would be
traversed by each of its full garbage collections, a cost charged to the stage that the loop
never pays.

Targets (benchmarks/README.md): >= 200 programs/s per core for ~20-statement programs,
2 workers >= 1.7x serial, and the loop at >= 0.8 of the execution floor. Results are printed
as ratios; nothing here asserts on time.

    python benchmarks/bench_conformance.py [--engine refimpl] [--count 400] [--size 20]
    python benchmarks/bench_conformance.py --stages-only     # the stage breakdown alone
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import multiprocessing as mp
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# One thread per process, set before numpy and torch load their thread pools: tiny tensors
# gain nothing from threads, and two workers with a pool each spin against each other.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from conformance.campaign.programs import BATCH as PROGRAMS_A_BATCH  # noqa: E402
from conformance.compare import compare  # noqa: E402
from conformance.engines import EngineError, load_engine  # noqa: E402
from conformance.executor import execute  # noqa: E402
from conformance.generate import program_for_seed  # noqa: E402

_W: dict = {}


def _engines(engine: str, oracle: str):
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass
    return load_engine(oracle), load_engine(engine)


def one(seed: int, size: int, oracle, engine, caps) -> int:
    """The full loop for one program, its statements checked once for its two runs as in
    `batched`; returns its number of divergences."""
    p, checked = program_for_seed(seed, caps, size), set()
    return len(compare(p, execute(p, oracle, checked=checked),
                       execute(p, engine, checked=checked)))


def _init(engine: str, oracle: str, size: int) -> None:
    o, e = _engines(engine, oracle)
    _W.update(o=o, e=e, size=size, caps=frozenset(o.capabilities) & frozenset(e.capabilities))


def _chunk(seeds: list[int]) -> tuple[int, int, float]:
    """(divergences, worker pid, CPU seconds) of a chunk of programs."""
    c = time.process_time()
    n = batched(seeds, _W["size"], _W["o"], _W["e"], _W["caps"])
    return n, os.getpid(), time.process_time() - c


def serial(seeds, size, oracle, engine, caps, loop=None) -> tuple[float, int, float]:
    """(wall seconds, divergences, CPU seconds) of the full loop (`batched`, as gradspec run's
    workers make it; `loop` another, such as one program at a time: `per_program`)."""
    t, c = time.perf_counter(), time.process_time()
    n = (loop or batched)(seeds, size, oracle, engine, caps)
    return time.perf_counter() - t, n, time.process_time() - c


def per_program(seeds, size, oracle, engine, caps) -> int:
    """The full loop one program at a time (`one`): the loop before gradspec run's workers
    took batches (each program's check shared, as now, so that the two differ by batching
    alone)."""
    return sum(one(s, size, oracle, engine, caps) for s in seeds)


def parallel(seeds, size, engine_spec, oracle_spec, jobs) -> tuple[float, int, float]:
    """(wall seconds, divergences, CPU seconds of the busiest worker)."""
    chunks = [seeds[i:i + BATCH] for i in range(0, len(seeds), BATCH)]   # small: even load
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with ctx.Pool(jobs, _init, (engine_spec, oracle_spec, size)) as pool:
        pool.map(_chunk, [[s] for s in seeds[:jobs]])          # warm the workers up
        t = time.perf_counter()
        res = pool.map(_chunk, chunks)
        wall = time.perf_counter() - t
    per_worker: dict[int, float] = {}
    for _, pid, cpu in res:
        per_worker[pid] = per_worker.get(pid, 0.0) + cpu
    return wall, sum(r[0] for r in res), max(per_worker.values())


def _burn(n: int) -> int:
    x = 0
    for i in range(n):
        x += i * i
    return x


def control(jobs: int, n: int = 2_000_000) -> float:
    """The speedup `jobs` processes get on pure Python work right now: on a shared machine
    it bounds what the conformance loop can show."""
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    t = time.perf_counter()
    for _ in range(jobs):
        _burn(n)
    s = time.perf_counter() - t
    with ctx.Pool(jobs) as pool:
        t = time.perf_counter()
        pool.map(_burn, [n] * jobs)
        return s / (time.perf_counter() - t)


def torch_alone(programs, oracle) -> tuple[float, float]:
    """(seconds through the executor, seconds as plain repro-script code) on torch."""
    t = time.perf_counter()
    for p in programs:
        execute(p, oracle)
    executor = time.perf_counter() - t
    from conformance.render import render
    codes = [compile(render(p, guard_all=True), f"seed{p.seed}", "exec") for p in programs]
    sink = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        for c in codes:
            exec(c, {"__name__": "gradspec_bench"})
    return executor, time.perf_counter() - t


def _timed(f) -> tuple[float, object]:
    """(CPU seconds, result) of f(), after a full collection so that garbage left by the stage
    before is not collected on this one's time. CPU time, not wall time: on a shared machine
    the time a stage waits for a core is the other jobs', not its own."""
    gc.collect()
    t = time.process_time()
    out = f()
    return time.process_time() - t, out


STAGES = ("generation", "oracle", "engine", "paused", "shared", "both", "blocks", "comparison",
          "loop", "runner", "per_program", "campaign")
BATCH = PROGRAMS_A_BATCH     # as gradspec run's workers batch them
BLOCK = 30      # programs each engine runs in a row in the "blocks" stage
WARM = 20       # programs of the campaign run whose cost is taken as its fixed cost


def batched(seeds, size, oracle, engine, caps, k: int = BATCH) -> int:
    """The full loop as gradspec run's workers make it (campaign/worker.py, work_batch): over
    batches of k programs, generate k, run them all on the oracle, then each on the engine
    and compare, the collector paused for each batch, each program's statements checked once
    for its two runs; its number of divergences. Each engine then runs programs back to back,
    as in the floor, instead of in turn with the other engine and the generator."""
    n = 0
    for i in range(0, len(seeds), k):
        gc.disable()
        try:
            ps = [program_for_seed(s, caps, size) for s in seeds[i:i + k]]
            checks: list[set[int]] = [set() for _ in ps]
            ours = [execute(p, oracle, checked=c) for p, c in zip(ps, checks, strict=True)]
            for p, o, c in zip(ps, ours, checks, strict=True):
                n += len(compare(p, o, execute(p, engine, checked=c)))
            del ps, ours, checks
        finally:
            gc.enable()
    return n


def runner_loop(seeds, size, oracle, engine, caps):
    """A function running `gradspec run`'s per-program work over seeds in this process: what
    a campaign worker does with its batches of ("check", seed) tasks (conformance/campaign/
    worker.py: `work_batch`): the programs drawn by the campaign's source, the grad mode reset
    and checked around each run, each statement's path written to the shared-memory progress
    record, the comparison, the results built. Not the pipe traffic with the parent (see
    `campaign`)."""
    from conformance.campaign import worker
    from conformance.campaign.pool import Progress
    from conformance.campaign.runner import default_source
    progress = Progress(mp.get_context())
    state = (worker.Runs(engine, oracle, progress),
             {"source": default_source, "caps": caps, "size": size, "shrink_seconds": 20.0})

    def run() -> int:
        found = 0
        for i in range(0, len(seeds), BATCH):
            items = [(j, ("check", s)) for j, s in enumerate(seeds[i:i + BATCH], i)]
            for _, result, _ in worker.work_batch(state, items, progress):
                found += len(result["divergences"])
        return found
    return run


def campaign(seeds, size, engine_spec, oracle_spec, caps) -> tuple[float, float, int] | None:
    """`gradspec run`'s loop itself: run_programs with one worker process, unshrunk. (CPU
    seconds of the worker and of this process running the pool, for the programs past the
    first WARM, whose run, the worker's start and engine loading included, is measured apart
    and taken off; divergences of all the programs). None where the worker would not be
    forked from this process (campaign/pool.py: start_method): only a child's CPU time is
    counted here, and a forkserver's workers are not this process's children."""
    import resource

    from conformance.campaign.pool import start_method
    from conformance.campaign.runner import run_programs
    if start_method([engine_spec, oracle_spec], "cpu") != "fork":
        return None

    def once(ss) -> tuple[float, float, int]:
        gc.collect()
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        mine = time.process_time()
        res = run_programs(engine_spec, oracle_spec, "cpu", ss, size, caps, 1, 30.0,
                           shrink=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime + after.ru_stime - child.ru_utime - child.ru_stime,
                time.process_time() - mine, sum(len(r.get("divergences") or ()) for r in res))
    w_all, p_all, n = once(seeds)
    w_warm, p_warm, _ = once(seeds[:WARM])
    return max(0.0, w_all - w_warm), max(0.0, p_all - p_warm), n


# The stages below free what they make as they go, as the loop does: results kept for a whole
# stage would be traversed by each of its full garbage collections, a cost the loop never pays.
def _draw_all(seeds, caps, size) -> None:
    """Generation of each seed's program, nothing kept."""
    for s in seeds:
        program_for_seed(s, caps, size)


def _run_all(programs, *engines) -> None:
    """Each program run on each engine in turn, nothing kept."""
    for p in programs:
        for e in engines:
            execute(p, e)


def _run_paused(programs, oracle, engine, k: int = BATCH) -> None:
    """The floor's runs (each engine's alone) with the collector paused for each k programs,
    as the loop pauses it for each batch: the floor the loop would be measured against if
    pausing the collector were not part of the loop's design."""
    for e in (oracle, engine):
        for i in range(0, len(programs), k):
            gc.disable()
            try:
                for p in programs[i:i + k]:
                    execute(p, e)
            finally:
                gc.enable()


def _run_shared(programs, oracle, engine) -> None:
    """The floor's runs (each engine's alone) with each program's statements checked once for
    its two runs, as the loop checks them (judge/executor.py, execute's `checked`): the floor
    to measure the loop against when sharing the check is not credited to the loop."""
    checks = [set() for _ in programs]
    for e in (oracle, engine):
        for p, c in zip(programs, checks, strict=True):
            execute(p, e, checked=c)


def _run_blocks(programs, oracle, engine, k: int = BLOCK) -> None:
    """The programs in blocks of k: the block on the oracle, then on the engine, nothing
    kept. The same runs as "both" (each program on each engine), the engines switching every
    k programs instead of at every program: the difference is what switching costs on this
    machine (the instructions are the same; see benchmarks/README.md)."""
    for i in range(0, len(programs), k):
        for e in (oracle, engine):
            for p in programs[i:i + k]:
                execute(p, e)


def stages(seeds, size, oracle, engine, caps, repeat, specs=None) -> dict[str, float]:
    """Best-of-`repeat` CPU seconds of each stage on the same seeds, the stages alternating
    within each round: generation; the oracle's executor runs alone, then the engine's; the
    floor's runs with the collector paused per batch (paused) and with each program checked
    once (shared), as the loop runs them; both runs of each program in turn; both runs in
    blocks of BLOCK programs per engine; the comparison; the loop in batches; the campaign
    worker's per-program work in this process (runner); the loop one program at a time
    (per_program); and, given the engines' `specs`, gradspec run's own loop (campaign: the
    worker's CPU time, and the parent's apart). Each stage but the comparison frees its
    results as it goes, as the loop does; the programs they run are drawn beforehand."""
    best = dict.fromkeys(STAGES, float("inf"))
    best["campaign_parent"] = float("inf")
    run_as_worker = runner_loop(seeds, size, oracle, engine, caps)

    def keep(stage: str, f):
        t, out = _timed(f)
        best[stage] = min(best[stage], t)
        return out
    for _ in range(repeat):
        keep("generation", lambda: _draw_all(seeds, caps, size))
        programs = [program_for_seed(s, caps, size) for s in seeds]
        keep("oracle", lambda ps=programs: _run_all(ps, oracle))
        keep("engine", lambda ps=programs: _run_all(ps, engine))
        keep("paused", lambda ps=programs: _run_paused(ps, oracle, engine))
        keep("shared", lambda ps=programs: _run_shared(ps, oracle, engine))
        keep("both", lambda ps=programs: _run_all(ps, oracle, engine))
        keep("blocks", lambda ps=programs: _run_blocks(ps, oracle, engine))
        traces = [(execute(p, oracle), execute(p, engine)) for p in programs]
        keep("comparison", lambda ps=programs, tr=traces: [
            compare(p, a, b) for p, (a, b) in zip(ps, tr, strict=True)])
        del programs, traces
        keep("loop", lambda: batched(seeds, size, oracle, engine, caps))
        keep("runner", run_as_worker)
        keep("per_program", lambda: per_program(seeds, size, oracle, engine, caps))
        measured = campaign(seeds, size, *specs, caps) if specs and len(seeds) > WARM else None
        for stage, t in zip(("campaign", "campaign_parent"), (measured or ())[:2], strict=False):
            best[stage] = min(best[stage], t * len(seeds) / (len(seeds) - WARM))
    return {k: v for k, v in best.items() if v != float("inf")}


def stage_figures(best: dict[str, float], n: int) -> dict[str, float | None]:
    """Per-program milliseconds of each stage; the throughput over the execution floor's (the
    two engines' executor runs alone) of the loop, of the campaign worker's work (runner) and
    of gradspec run's worker process (campaign), and of the loop over both runs made in turn;
    and the generation time per program that would bring the loop's ratio to 0.8, the rest of
    the loop as measured (None: generation alone cannot)."""
    ms = {k: v / n * 1e3 for k, v in best.items()}
    floor = ms["oracle"] + ms["engine"]
    gen_for_target = floor / 0.8 - (ms["loop"] - ms["generation"])
    out = {**{f"{k}_ms": round(v, 4) for k, v in ms.items()}, "floor_ms": round(floor, 4),
           "loop_vs_floor": round(floor / ms["loop"], 3),
           "runner_vs_floor": round(floor / ms["runner"], 3),
           "loop_vs_both_in_turn": round(ms["both"] / ms["loop"], 3),
           # what switching engines at every program costs, over switching every BLOCK
           "switch_ms": round(ms["both"] - ms["blocks"], 4),
           "per_program_loop_vs_floor": round(floor / ms["per_program"], 3),
           # against the floor's runs with the collector paused as the loop pauses it
           "loop_vs_paused_floor": round(ms["paused"] / ms["loop"], 3),
           # against the floor's runs checking each program once, as the loop checks it
           "loop_vs_shared_floor": round(ms["shared"] / ms["loop"], 3),
           "generation_ms_for_0.8": round(gen_for_target, 4) if gen_for_target > 0 else None,
           "generation_speedup_for_0.8": (round(ms["generation"] / gen_for_target, 2)
                                          if gen_for_target > 0 else None)}
    if ms.get("campaign"):
        out["campaign_vs_floor"] = round(floor / ms["campaign"], 3)
    return out


def print_stages(f: dict[str, float | None], oracle: str, engine: str) -> None:
    print("  stages, CPU ms per program (best of each):")
    print(f"    generation {f['generation_ms']:.3f}   executor alone on {oracle} "
          f"{f['oracle_ms']:.3f}, on {engine} {f['engine_ms']:.3f}   comparison "
          f"{f['comparison_ms']:.3f}")
    print(f"    execution floor (the two executor runs alone) {f['floor_ms']:.3f}; both runs "
          f"in turn per program {f['both_ms']:.3f}, in blocks of {BLOCK} per engine "
          f"{f['blocks_ms']:.3f} (switching engines at every program: {f['switch_ms']:+.3f}); "
          f"full loop {f['loop_ms']:.3f}")
    print(f"  loop / execution floor   {f['loop_vs_floor']:.2f}  (target >= 0.8; the loop in "
          f"batches of {BATCH}, as gradspec run's workers make it; one program at a time: "
          f"{f['per_program_ms']:.3f} ms, {f['per_program_loop_vs_floor']:.2f} of the floor)")
    print(f"  the floor's runs with the collector paused as the loop pauses it: "
          f"{f['paused_ms']:.3f} ms; the loop is {f['loop_vs_paused_floor']:.2f} of that")
    print(f"  the floor's runs checking each program's statements once, as the loop checks them: "
          f"{f['shared_ms']:.3f} ms; the loop is {f['loop_vs_shared_floor']:.2f} of that")
    print(f"  gradspec run's per-program work (campaign/worker.py), in this process: "
          f"{f['runner_ms']:.3f} ms, {f['runner_vs_floor']:.2f} of the floor")
    if "campaign_ms" in f:
        print(f"  gradspec run, one worker process: worker {f['campaign_ms']:.3f} ms, "
              f"{f['campaign_vs_floor']:.2f} of the floor (and the parent "
              f"{f['campaign_parent_ms']:.3f} ms)")
    need = f["generation_ms_for_0.8"]
    print("  0.8 of the floor needs " + (
        f"generation at {need:.3f} ms per program ({f['generation_speedup_for_0.8']}x faster)"
        if need else "more than faster generation: the rest of the loop is over it already"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="refimpl")
    ap.add_argument("--oracle", default="torch")
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--size", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3,
                    help="alternate serial and parallel runs this often; keep the best of each "
                         "(a shared machine's load then hurts both alike)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--stages-only", action="store_true",
                    help="time the stages (and the loop / floor ratio) only")
    a = ap.parse_args(argv)
    try:
        oracle, engine = _engines(a.engine, a.oracle)
    except EngineError as exc:
        print(f"bench_conformance: {exc}", file=sys.stderr)
        return 2
    caps = frozenset(oracle.capabilities) & frozenset(engine.capabilities)
    seeds = list(range(a.count))
    serial(seeds[:20], a.size, oracle, engine, caps)                   # warm-up
    figures = stage_figures(stages(seeds, a.size, oracle, engine, caps, a.repeat,
                                   (a.engine, a.oracle)), len(seeds))
    if a.stages_only:
        print(f"conformance loop stages: {engine.name} vs {oracle.name}, {len(seeds)} programs "
              f"of size {a.size}, best of {a.repeat}, load average {os.getloadavg()[0]:.2f}")
        print_stages(figures, oracle.name, engine.name)
        if a.json:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump(figures, f, indent=1)
        return 0
    t_gen = float("inf")
    for _ in range(a.repeat):
        t = time.perf_counter()
        programs = [program_for_seed(s, caps, a.size) for s in seeds]
        t_gen = min(t_gen, time.perf_counter() - t)
    stmts = sum(sum(1 for _ in p.walk()) for p in programs) / len(programs)
    t_serial = t_par = c_serial = c_par = float("inf")
    ctl = 0.0
    for _ in range(a.repeat):
        ts, divs, cs = serial(seeds, a.size, oracle, engine, caps)
        tp, divs_par, cp = parallel(seeds, a.size, a.engine, a.oracle, a.jobs)
        t_serial, t_par = min(t_serial, ts), min(t_par, tp)
        c_serial, c_par = min(c_serial, cs), min(c_par, cp)
        ctl = max(ctl, control(a.jobs))
    t_exec, t_plain = map(min, zip(*(torch_alone(programs, oracle) for _ in range(a.repeat)),
                                      strict=True))
    n = len(seeds)
    res = {
        "engine": f"{engine.name} {engine.version}", "oracle": f"{oracle.name} {oracle.version}",
        "programs": n, "statements_per_program": round(stmts, 1), "cpus": os.cpu_count(),
        "python": platform.python_version(), "repeat": a.repeat,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "generation_per_s": round(n / t_gen), "serial_per_s": round(n / t_serial),
        f"jobs{a.jobs}_per_s": round(n / t_par), "speedup": round(t_serial / t_par, 2),
        "control_speedup": round(ctl, 2),
        # CPU seconds of the serial run over those of the busiest worker: the speedup on idle
        # cores, which a loaded machine's wall clock cannot show
        "cpu_speedup": round(c_serial / c_par, 2),
        "torch_executor_per_s": round(n / t_exec), "torch_plain_per_s": round(n / t_plain),
        "loop_cost_vs_torch_executor": round(t_serial / t_exec, 2),
        "loop_cost_vs_torch_plain": round(t_serial / t_plain, 2),
        "divergent_statements": divs, "same_in_parallel": divs == divs_par,
        "stages": figures,
    }
    print(f"conformance loop: {res['engine']} vs {res['oracle']}, {n} programs of "
          f"{stmts:.1f} statements, {os.cpu_count()} CPUs, best of {a.repeat}, load average "
          f"{res['load_average'][0]}")
    print(f"  generation only          {res['generation_per_s']:>7} programs/s")
    print(f"  full loop, serial        {res['serial_per_s']:>7} programs/s  (target >= 200)")
    print(f"  full loop, {a.jobs} workers     {res[f'jobs{a.jobs}_per_s']:>7} programs/s  "
          f"speedup {res['speedup']}x (target >= 1.7x)")
    print(f"  control: {a.jobs} processes of pure Python get {res['control_speedup']}x on "
          f"this machine now; by CPU time the loop's speedup is {res['cpu_speedup']}x")
    print(f"  torch alone, executor    {res['torch_executor_per_s']:>7} programs/s  "
          f"(the loop costs {res['loop_cost_vs_torch_executor']}x)")
    print(f"  torch alone, plain code  {res['torch_plain_per_s']:>7} programs/s  "
          f"(the loop costs {res['loop_cost_vs_torch_plain']}x)")
    print_stages(figures, oracle.name, engine.name)
    print(f"  divergent statements: {divs} (same with {a.jobs} workers: "
          f"{res['same_in_parallel']})")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
