"""The conformance loop's stages counted in instructions, which a shared machine's load does
not change: the ratio of benchmarks/bench_conformance.py's `--stages-only` (loop / execution
floor) without the noise of CPU time.

The script runs itself under valgrind's callgrind, which dumps its counters each time
`math.lgamma` is called: each stage below ends with such a call, then a full garbage
collection runs in a dump of its own (`_between`), which is not counted. It then prints
millions of instructions per program and the ratios.

    python benchmarks/bench_instructions.py [--count 150] [--size 20] [--engine refimpl]

Stages, on the same seeds (1000 on), after the engines and the generator are warmed on 10
other programs: generation alone; the executor on the oracle alone, then on the engine alone
(the programs drawn beforehand; their sum is the execution floor); the comparison of traces
made beforehand; the full loop (generate, run on both, compare, per program); and gradspec
run's per-program work in this process (bench_conformance.runner_loop: the campaign worker's
`work`, with its progress record and grad-mode checks). Instructions do not show what the CPU
time shows on top (the caches' share when the generator, torch, refimpl and the comparison take
turns on each program): bench_conformance.py measures that. Last, generation alone by the frozen
first generator and by today's at vocabulary 1 (the same programs: bench_generator.py), whose
ratio is issue 8's generation target. Needs valgrind (apt: valgrind).
"""
from __future__ import annotations

import argparse
import gc
import glob
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STAGES = ("generation", "oracle", "engine", "comparison", "loop", "runner", "frozen v1",
          "vocabulary 1")


def _between() -> None:
    """End a stage (a dump), then collect garbage in a window of its own (a dump not kept).
    Each stage starts after a full collection, as bench_conformance.py's stages do: a full
    collection (the ~220,000 objects torch and numpy keep alive) made due by earlier stages
    would otherwise fall in whichever window comes next, and move its count by more than the
    differences this script is for."""
    math.lgamma(1.5)
    gc.collect()
    math.lgamma(1.5)


def _stages(count: int, size: int, engine_spec: str, oracle_spec: str) -> None:
    """Under callgrind: each stage between two math.lgamma calls (one dump each)."""
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.dirname(HERE))
    from bench_conformance import _engines, runner_loop

    from conformance.compare import compare
    from conformance.executor import execute
    from conformance.generate import program_for_seed
    oracle, engine = _engines(engine_spec, oracle_spec)
    caps = frozenset(oracle.capabilities) & frozenset(engine.capabilities)
    seeds = list(range(1000, 1000 + count))
    for s in range(10):                                     # warm everything
        p = program_for_seed(s, caps, size)
        compare(p, execute(p, oracle), execute(p, engine))
    programs = [program_for_seed(s, caps, size) for s in seeds]
    traces = [(execute(p, oracle), execute(p, engine)) for p in programs]
    run_as_worker = runner_loop(seeds, size, oracle, engine, caps)
    _between()                                              # dump: setup
    for s in seeds:
        program_for_seed(s, caps, size)
    _between()                                              # dump: generation
    for p in programs:
        execute(p, oracle)
    _between()                                              # dump: oracle
    for p in programs:
        execute(p, engine)
    _between()                                              # dump: engine
    for p, (a, b) in zip(programs, traces, strict=True):
        compare(p, a, b)
    _between()                                              # dump: comparison
    for s in seeds:
        p = program_for_seed(s, caps, size)
        compare(p, execute(p, oracle), execute(p, engine))
    _between()                                              # dump: loop
    run_as_worker()
    _between()                                              # dump: runner
    # generation alone against the frozen first generator (bench_generator.py): both draw
    # vocabulary 1's programs, the same work
    import functools
    import tempfile

    import bench_generator
    frozen = bench_generator.load_v1(tempfile.mkdtemp()).program_for_seed
    now = functools.partial(program_for_seed, vocabulary=1)
    for s in range(10):
        frozen(s, None, size)
        now(s, None, size)
    _between()                                              # dump: (warming)
    for s in seeds:
        frozen(s, None, size)
    _between()                                              # dump: frozen v1
    for s in seeds:
        now(s, None, size)
    math.lgamma(1.5)                                        # dump: vocabulary 1


def _summary(path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise SystemExit(f"bench_instructions: no summary line in {path}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--size", type=int, default=20)
    ap.add_argument("--engine", default="refimpl")
    ap.add_argument("--oracle", default="torch")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.inner:
        _stages(a.count, a.size, a.engine, a.oracle)
        return 0
    if shutil.which("valgrind") is None:
        print("bench_instructions: valgrind is not installed (apt install valgrind)",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
        cmd = ["valgrind", "--tool=callgrind", "--dump-before=math_lgamma",
               f"--callgrind-out-file={d}/cg.out", sys.executable, os.path.abspath(__file__),
               "--inner", "--count", str(a.count), "--size", str(a.size),
               "--engine", a.engine, "--oracle", a.oracle]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        dumps = sorted(glob.glob(f"{d}/cg.out.*"),
                       key=lambda p: int(re.sub(r".*\.", "", p)))
        if done.returncode != 0 or len(dumps) < 2 * len(STAGES) + 3:
            print(done.stderr[-2000:], file=sys.stderr)
            print(f"bench_instructions: the run under valgrind failed ({len(dumps)} dumps)",
                  file=sys.stderr)
            return 1
        # setup, then each stage after a collection's dump; the one after `runner` is the
        # frozen generator's warming
        stages = dumps[2::2]
        counts = [_summary(p) for p in stages[:6] + stages[7:9]]
    per = {s: c / a.count / 1e6 for s, c in zip(STAGES, counts, strict=True)}
    floor = per["oracle"] + per["engine"]
    print(f"conformance loop stages in instructions: {a.engine} vs {a.oracle}, {a.count} "
          f"programs of size {a.size} (millions of instructions per program)")
    for s in STAGES:
        print(f"  {s:<11} {per[s]:7.3f}")
    print(f"  execution floor {floor:.3f}")
    print(f"  floor / loop   {floor / per['loop']:.3f}  (target >= 0.8)")
    print(f"  floor / runner {floor / per['runner']:.3f}")
    print(f"  generation, frozen v1 / now at vocabulary 1 "
          f"{per['frozen v1'] / per['vocabulary 1']:.2f}x  (target >= 2.0x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
