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
  says how often before it gives up (distributed.KilledWorker, a one-line error here);
- each worker thread keeps its child process from slice to slice (and campaign to campaign,
  while the options are the same), replaced if it died while idle, closed when the worker
  exits;
- every slice reports the versions of gradspec, the engine and the oracle it ran: a worker
  whose versions differ from the client's stops the run (the report would not be the one
  this machine writes).

Exit status: an address that is not host:port over tcp, an unreachable scheduler, a cluster
with no workers, daemonic workers or other versions are ClusterUnusable (one line, exit 2);
a cluster that fails mid-run (a slice lost too often, the scheduler gone) is ClusterFailed
(one line, exit 3: the run could not judge).

Dask workers must be allowed child processes: they are daemonic processes by default, which
multiprocessing forbids to have children. Start them with DASK_DISTRIBUTED__WORKER__DAEMON=False
(README.md, "Campaigns on a cluster"); a slice on a daemonic worker stops the run with one line
that says so.
"""
from __future__ import annotations

import atexit
import logging
import multiprocessing as mp
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import __version__
from ..engines import EngineError
from .programs import Interrupted, check_programs, failing, program_pool

CONNECT_SECONDS = 10.0      # how long to wait for the scheduler, and for a first worker
SLICES_PER_THREAD = 4       # slices per worker thread: balance against per-slice start-up
MIN_SLICE = 4               # programs: fewer would spend more on a child's start than on them
MAX_SLICE = 200             # programs: the progress line, Ctrl-C and a lost worker's rerun
#                             move in steps of at most this many
DAEMONIC = ("the Dask workers are daemonic processes, which cannot start the child process "
            "gradspec isolates each program in: start them with "
            "DASK_DISTRIBUTED__WORKER__DAEMON=False")


class ClusterError(Exception):
    """The cluster cannot run the campaign: one line for the user."""


class ClusterUnusable(ClusterError):
    """Nothing was judged: a bad address, no scheduler or workers, workers that cannot start
    children or run other versions (exit 2)."""


class ClusterFailed(ClusterError):
    """The cluster failed mid-run: a slice lost too often, the scheduler gone (exit 3)."""


def slices(n: int, threads: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of program indexes that cover range(n) in order: about
    SLICES_PER_THREAD per worker thread, of MIN_SLICE to MAX_SLICE programs each."""
    size = min(MAX_SLICE, max(MIN_SLICE, -(-n // max(1, threads * SLICES_PER_THREAD))))
    return [(lo, min(n, lo + size)) for lo in range(0, n, size)]


def check_address(address: str) -> None:
    """A ClusterUnusable unless `address` is host:port, over tcp (tls and ucx need security or
    transport settings gradspec does not take)."""
    try:
        from distributed.comm import parse_address
        from distributed.comm.addressing import parse_host_port
    except ImportError:
        raise ClusterUnusable("--scheduler needs Dask's distributed package: pip install "
                              "'gradspec[cluster]'") from None
    try:
        scheme, where = parse_address(address)
        parse_host_port(where)
    except (ValueError, TypeError) as exc:
        raise ClusterUnusable(f"--scheduler {address!r}: give host:port or "
                              f"tcp://host:port ({_first_line(exc)})") from None
    if scheme != "tcp":
        raise ClusterUnusable(f"--scheduler {address!r}: only tcp:// addresses are supported, "
                              f"not {scheme}://")


def connect(address: str) -> Any:
    """A distributed.Client of the scheduler at `address` with at least one worker, or a
    ClusterUnusable that says why there is none."""
    check_address(address)
    from distributed import Client
    try:
        client = Client(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - whatever the connection raised: one line
        raise ClusterUnusable(f"cannot reach the Dask scheduler at {address}: "
                              f"{type(exc).__name__}: {_first_line(exc)}") from None
    try:
        client.wait_for_workers(1, timeout=CONNECT_SECONDS)
    except Exception:  # noqa: BLE001 - a timeout, or the scheduler went away
        client.close()
        raise ClusterUnusable(f"the Dask scheduler at {address} has no workers (waited "
                              f"{CONNECT_SECONDS:g} s)") from None
    return client


def check(address: str) -> None:
    """Fail now, before anything runs, when the scheduler cannot be used."""
    connect(address).close()


def run_slice(engine_spec: str, oracle_spec: str, device: str, seeds: list[int],
              timeout: float, options: dict[str, Any], shrink: bool
              ) -> tuple[tuple[str, str, str], list[dict[str, Any] | None]]:
    """One slice, on a Dask worker: (the versions it ran: gradspec, engine, oracle; its
    programs' results, run in one child process as programs.check_programs runs them;
    crashes and hangs are shrunk by the client, over the whole run)."""
    if mp.current_process().daemon:
        raise ClusterUnusable(DAEMONIC)
    versions = _warm(engine_spec, oracle_spec, device)
    return versions, check_programs(
        engine_spec, oracle_spec, device, seeds, 1, timeout, options, shrink, None,
        _kept_pool(engine_spec, oracle_spec, device, timeout, options, shrink))


_KEPT = threading.local()
_ALL_KEPT: list[Any] = []       # every thread's kept pool, closed when the worker exits


def _kept_pool(engine_spec: str, oracle_spec: str, device: str, timeout: float,
               options: dict[str, Any], shrink: bool) -> Any:
    """This thread's pool of one worker for the campaign, kept from slice to slice, as `gradspec
    run -n 1` keeps its worker from program to program: a fresh child per slice would pay the
    engines' first-call costs again (about 0.3 s on torch). Another campaign's pool is closed;
    a child that died while idle is replaced by the pool itself."""
    key = (engine_spec, oracle_spec, device, timeout, shrink,
           *(options[k] for k in sorted(options)))
    kept = getattr(_KEPT, "pool", None)
    if kept is not None and kept[0] == key:
        return kept[1]
    if kept is not None:
        kept[1].__exit__(None, None, None)
        _ALL_KEPT.remove(kept[1])
    pool = program_pool(engine_spec, oracle_spec, device, 1, timeout, options, shrink)
    pool.__enter__()
    if not _ALL_KEPT:
        atexit.register(_close_kept)
    _ALL_KEPT.append(pool)
    _KEPT.pool = (key, pool)
    return pool


def _close_kept() -> None:
    for pool in _ALL_KEPT:
        pool.__exit__(None, None, None)
    _ALL_KEPT.clear()


_WARM: dict[tuple[str, str, str], tuple[str, str, str]] = {}


def _warm(engine_spec: str, oracle_spec: str, device: str) -> tuple[str, str, str]:
    """Import what the slice's child processes need in the Dask worker itself, once, as
    `gradspec run` has it imported before it starts its pool: a forked child then starts
    warm instead of importing torch for every slice (a forkserver preloads it: process.PRELOAD).
    Returns (gradspec's version, the engine's, the oracle's) on this worker."""
    key = (engine_spec, oracle_spec, device)
    if key not in _WARM:
        import importlib

        from ..engines import load_engine
        from .process import PRELOAD
        for name in PRELOAD:
            importlib.import_module(name)
        engine, oracle = load_engine(engine_spec, device), load_engine(oracle_spec, device)
        _WARM[key] = (__version__, engine.version, oracle.version)
    return _WARM[key]


def run_on_cluster(address: str, engine_spec: str, oracle_spec: str, device: str,
                   seeds: list[int], timeout: float, options: dict[str, Any], shrink: bool,
                   progress: Callable[[int, int, int, float], None] | None,
                   versions: tuple[str, str, str]) -> list[dict[str, Any] | None]:
    """Results per program in seed order, as programs.check_programs returns them, computed
    on the cluster whose scheduler is at `address`, whose workers must run `versions`
    (gradspec, engine, oracle). Ctrl-C cancels what is left and raises programs.Interrupted
    with the slices finished."""
    client = connect(address)
    from distributed import as_completed
    results: list[dict[str, Any] | None] = [None] * len(seeds)
    start, done, bad = time.monotonic(), 0, 0
    quiet = logging.getLogger("distributed.client")     # its own log lines of a lost
    level, quiet.level = quiet.level, logging.CRITICAL   # scheduler: the error says it
    try:
        with client:
            threads = sum(client.nthreads().values())
            token = f"{os.getpid()}-{time.time_ns()}"
            futures = {client.submit(run_slice, engine_spec, oracle_spec, device,
                                     seeds[lo:hi], timeout, options, shrink,
                                     key=f"gradspec-slice-{lo}-{token}", pure=False): lo
                       for lo, hi in slices(len(seeds), threads)}
            try:
                for future in as_completed(futures, loop=client.loop):
                    lo = futures[future]
                    part = _outcome(future, lo, versions)
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
    finally:
        quiet.setLevel(level)
    return results


def _outcome(future: Any, lo: int, versions: tuple[str, str, str]
             ) -> list[dict[str, Any] | None]:
    """A slice's results; its failure as one line (an engine that cannot load stays an
    EngineError, as in a local run)."""
    try:
        theirs, part = future.result()
    except (EngineError, ClusterError):
        raise
    except Exception as exc:
        raise ClusterFailed(f"the slice of programs from #{lo} failed on the cluster: "
                            f"{type(exc).__name__}: {_first_line(exc)}") from None
    if tuple(theirs) != tuple(versions):
        what = ", ".join(f"{n} {t} (here {m})" for n, t, m in
                         zip(("gradspec", "engine", "oracle"), theirs, versions, strict=True)
                         if t != m)
        raise ClusterUnusable(f"a Dask worker runs other versions: {what}; install the same "
                              f"on every machine")
    return part


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]
