"""A campaign on a Dask distributed cluster: `gradspec run --scheduler ADDRESS`.

Dask does the distributing (scheduling, data transfer, worker loss); gradspec only cuts the
campaign into slices and puts their results back in order:
- a slice is a run of consecutive programs of the campaign (their seeds, derived from the
  campaign seed alone: campaign/runner.py, program_seeds), run on one Dask worker by
  `run_programs` exactly as `gradspec run -n 1` runs them: each program in a child process of
  the worker (an engine that crashes or hangs is reported and the slice goes on), each
  divergent program shrunk there;
- the client writes each slice's results at their programs' places, so that the report is the
  one a serial run writes, whatever the number of workers and the order slices finish in;
- a worker lost while it runs a slice (killed, out of memory, its machine gone) has the slice
  rerun from the start on another worker: the scheduler's `allowed-failures` (3 by default)
  says how often before it gives up (distributed.KilledWorker, a one-line error here).

Dask workers must be allowed child processes: they are daemonic processes by default, which
multiprocessing forbids to have children. Start them with DASK_DISTRIBUTED__WORKER__DAEMON=False
(README.md, "Campaigns on a cluster"); a slice on a daemonic worker stops the run with one line
that says so.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections.abc import Callable
from typing import Any

from ..engines import EngineError
from .programs import Interrupted, check_programs, failing, program_pool

CONNECT_SECONDS = 10.0      # how long to wait for the scheduler before giving up
SLICES_PER_THREAD = 4       # slices per worker thread: balance against per-slice start-up
MIN_SLICE = 4               # programs: fewer would spend more on a child's start than on them
DAEMONIC = ("the Dask workers are daemonic processes, which cannot start the child process "
            "gradspec isolates each program in: start them with "
            "DASK_DISTRIBUTED__WORKER__DAEMON=False")


class ClusterError(Exception):
    """The cluster cannot run the campaign (unreachable, misconfigured, a slice lost too often):
    one line for the user."""


def slices(n: int, threads: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of program indexes that cover range(n) in order: about
    SLICES_PER_THREAD per worker thread, of at least MIN_SLICE programs each."""
    size = max(MIN_SLICE, -(-n // max(1, threads * SLICES_PER_THREAD)))
    return [(lo, min(n, lo + size)) for lo in range(0, n, size)]


def connect(address: str) -> Any:
    """A distributed.Client of the scheduler at `address`, or a ClusterError that says why
    there is none."""
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError("--scheduler needs Dask's distributed package: pip install "
                           "'gradspec[cluster]'") from None
    try:
        return Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                           f"{type(exc).__name__}: {_first_line(exc)}") from None


def check(address: str) -> None:
    """Fail now, before anything runs, when the scheduler cannot be reached."""
    connect(address).close()


def run_slice(engine_spec: str, oracle_spec: str, device: str, seeds: list[int],
              timeout: float, options: dict[str, Any], shrink: bool
              ) -> list[dict[str, Any] | None]:
    """One slice, on a Dask worker: its programs in one child process, as programs.check_programs
    runs them (crashes and hangs are shrunk by the client, over the whole run)."""
    if mp.current_process().daemon:
        raise ClusterError(DAEMONIC)
    _warm(engine_spec, oracle_spec, device)
    return check_programs(engine_spec, oracle_spec, device, seeds, 1, timeout, options, shrink,
                          None, _kept_pool(engine_spec, oracle_spec, device, timeout, options,
                                           shrink))


_KEPT = threading.local()


def _kept_pool(engine_spec: str, oracle_spec: str, device: str, timeout: float,
               options: dict[str, Any], shrink: bool) -> Any:
    """This thread's pool of one worker for the campaign, kept from slice to slice, as `gradspec
    run -n 1` keeps its worker from program to program: a fresh child per slice would pay the
    engines' first-call costs again (about 0.3 s on torch). Another campaign's pool is closed."""
    key = (engine_spec, oracle_spec, device, timeout, shrink,
           *(options[k] for k in sorted(options)))
    kept = getattr(_KEPT, "pool", None)
    if kept is not None and kept[0] == key:
        return kept[1]
    if kept is not None:
        kept[1].__exit__(None, None, None)
    pool = program_pool(engine_spec, oracle_spec, device, 1, timeout, options, shrink)
    pool.__enter__()
    _KEPT.pool = (key, pool)
    return pool


_WARM: set[tuple[str, str, str]] = set()


def _warm(engine_spec: str, oracle_spec: str, device: str) -> None:
    """Import what the slice's child processes need in the Dask worker itself, once, as
    `gradspec run` has it imported before it starts its pool: a forked child then starts
    warm instead of importing torch for every slice (a forkserver preloads it: pool.PRELOAD)."""
    if (engine_spec, oracle_spec, device) in _WARM:
        return
    import importlib

    from ..engines import load_engine
    from .pool import FORK_SAFE, PRELOAD
    for name in PRELOAD:
        importlib.import_module(name)
    if device == "cpu" and {engine_spec, oracle_spec} <= FORK_SAFE:    # what a fork inherits
        load_engine(engine_spec, device), load_engine(oracle_spec, device)
    _WARM.add((engine_spec, oracle_spec, device))


def run_on_cluster(address: str, engine_spec: str, oracle_spec: str, device: str,
                   seeds: list[int], timeout: float, options: dict[str, Any], shrink: bool,
                   progress: Callable[[int, int, int, float], None] | None
                   ) -> list[dict[str, Any] | None]:
    """Results per program in seed order, as runner.check_programs returns them, computed on
    the cluster whose scheduler is at `address`. Ctrl-C cancels what is left and raises
    programs.Interrupted with the slices finished."""
    import time

    client = connect(address)
    from distributed import as_completed
    results: list[dict[str, Any] | None] = [None] * len(seeds)
    start, done, bad = time.monotonic(), 0, 0
    with client:
        threads = sum(client.nthreads().values())
        if not threads:
            raise ClusterError(f"the Dask scheduler at {address} has no workers")
        token = f"{os.getpid()}-{time.time_ns()}"
        futures = {client.submit(run_slice, engine_spec, oracle_spec, device, seeds[lo:hi],
                                 timeout, options, shrink,
                                 key=f"gradspec-slice-{lo}-{token}", pure=False): lo
                   for lo, hi in slices(len(seeds), threads)}
        try:
            for future in as_completed(futures, loop=client.loop):
                lo = futures[future]
                part = _outcome(future, lo)
                results[lo:lo + len(part)] = part
                done += len(part)
                bad += sum(failing(r) for r in part if r)
                if progress:
                    progress(done, len(seeds), bad, time.monotonic() - start)
        except BaseException as exc:
            client.cancel(list(futures))
            if isinstance(exc, KeyboardInterrupt):
                raise Interrupted(results) from None
            raise
    return results


def _outcome(future: Any, lo: int) -> list[dict[str, Any]]:
    """A slice's results; its failure as one line (an engine that cannot load stays an
    EngineError, as in a local run)."""
    try:
        return future.result()
    except (EngineError, ClusterError):
        raise
    except Exception as exc:
        raise ClusterError(f"the slice of programs from #{lo} failed on the cluster: "
                           f"{type(exc).__name__}: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]
