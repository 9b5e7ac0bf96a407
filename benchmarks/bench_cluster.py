"""Programs per second of a campaign on a local Dask cluster against the built-in pool.

The same campaign (`gradspec run`'s run_campaign: generation, both engines, comparison,
shrinking, the report) runs with the built-in pool of 1 and 2 worker processes, and on a
`distributed.LocalCluster` of 1 and 2 worker processes (one thread each), alternating `--repeat`
times; the best wall-clock time of each is kept. The cluster is started before it is timed (a
real cluster is up before the campaign); the figures include what a campaign adds around the
programs (the capability probes, the report). Ratios are printed against the built-in pool
with as many processes; nothing here asserts on time.

    python benchmarks/bench_cluster.py [--engine refimpl] [--count 2000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from conformance.campaign.runner import run_campaign  # noqa: E402


def timed(engine: str, count: int, size: int, **kw) -> float:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        report = run_campaign(engine, "torch", count=count, size=size, out_dir=out,
                              progress=None, **kw)
        seconds = time.perf_counter() - start
    if report.programs != count:
        raise SystemExit(f"the campaign ran {report.programs} of {count} programs")
    return seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="refimpl")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--size", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    import dask
    from distributed import LocalCluster
    dask.config.set({"distributed.worker.daemon": False})   # gradspec's workers have children
    clusters = {n: LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                dashboard_address=":0", silence_logs=50) for n in (1, 2)}
    best: dict[str, float] = {}
    try:
        for _ in range(args.repeat):
            for n in (1, 2):
                for name, kw in ((f"pool, {n} worker(s)", {"jobs": n}),
                                 (f"dask, {n} worker(s)",
                                  {"scheduler": clusters[n].scheduler_address})):
                    t = timed(args.engine, args.count, args.size, **kw)
                    best[name] = min(best.get(name, float("inf")), t)
    finally:
        for c in clusters.values():
            c.close()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.engine} vs torch, {args.count} programs of size {args.size}, best of "
          f"{args.repeat}, {os.cpu_count()} CPUs, load average {load:.2f}")
    figures = {}
    for n in (1, 2):
        pool, spread = best[f"pool, {n} worker(s)"], best[f"dask, {n} worker(s)"]
        figures[n] = {"pool_programs_per_s": args.count / pool,
                      "dask_programs_per_s": args.count / spread, "dask_over_pool": pool / spread}
        print(f"  {n} worker(s): built-in pool {args.count / pool:7.1f} programs/s, "
              f"Dask {args.count / spread:7.1f} programs/s ({pool / spread:.2f}x the pool)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
