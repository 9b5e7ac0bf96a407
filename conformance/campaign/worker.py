"""What a campaign's worker does with one program: run it on the oracle and the engine,
hermetically, compare, and shrink a divergence (conformance/campaign/pool.py runs it).

Hermetic: grad mode is global engine state the spec covers (MODE-1..MODE-6). Before each run
of a program it is reset to on; after it, the engine's mode is checked against the oracle's.
A program after which the engine's mode differs from the oracle's (a grad-mode block or
decorator that did not restore it, MODE-4 and MODE-5) has that as its first divergence, of kind
"grad mode leak"; the mode is reset, and the worker retires after the program, so that no later
program runs in a process it may have changed. Shrinking runs in a fresh worker.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..engines import load_engine
from ..engines.base import Engine, grad_mode
from ..judge.compare import Divergence, compare
from ..judge.conditioning import Relief
from ..judge.executor import execute
from ..judge.localise import localise
from ..judge.minimize import minimize, same_problem
from ..judge.verdict import judged, lead
from ..lang.program import Program, ProgramError
from ..lang.trace import Trace
from ..lang.validate import check_clauses, validate
from ..reports.graph import capture_pair
from .pool import ENGINE, ORACLE, Progress


class SourceError(Exception):
    """A program source given to a campaign (`--source`) raised, or returned something that is
    no valid program: the run cannot judge that program (it is never compared)."""


class CheckedSource:
    """A program source whose programs are checked as a program file is (lang/validate.py)
    before any engine runs them: a malformed statement from it would otherwise run as skipped
    on both engines and compare equal. Picklable where the source is, for workers that are
    not forked. The generator's own source is not wrapped: what it draws validates
    (tests/conformance/test_validate.py), and checking every program would cost the loop."""

    def __init__(self, source: ProgramSource):
        self.source = source

    def __eq__(self, other: object) -> bool:    # one unpickled per Dask slice: the same
        return isinstance(other, CheckedSource) and other.source == self.source     # pool

    def __hash__(self) -> int:
        return hash(self.source)

    def __call__(self, seed: int, capabilities: frozenset[str], size: int) -> Program:
        try:
            program = self.source(seed, capabilities, size)
        except Exception as exc:  # noqa: BLE001 - the source's own failure, in one line
            first = (str(exc).strip().splitlines() or [""])[0]
            raise SourceError(f"the program source raised {type(exc).__name__}: {first}"
                              ) from None
        if not isinstance(program, Program):
            raise SourceError(f"the program source returned {type(program).__name__}, not a "
                              f"conformance Program")
        try:
            validate(program)
            check_clauses(program)
        except ProgramError as exc:
            raise SourceError(f"the program source returned a program that does not "
                              f"validate: {exc}") from None
        return program


LEAK = "grad mode leak"
LEAK_CLAUSES = ["MODE-4", "MODE-5"]
ProgramSource = Callable[[int, frozenset[str], int], Program]
_ENTERED: list[Any] = []    # mode managers entered to reset the mode, kept so none restores


def reset_grad_mode(engine: Engine) -> bool:
    """Turn the engine's grad mode on (a bare set_grad_enabled(True), MODE-3); whether it is
    on afterwards (True for an engine without grad modes)."""
    if grad_mode(engine) is not False:
        return True
    try:
        cm = engine.grad_mode("set_grad_enabled", True)
        if grad_mode(engine) is False:
            cm.__enter__()
        _ENTERED.append(cm)
    except Exception:  # noqa: BLE001 - judged by the check below
        pass
    return grad_mode(engine) is not False


class Runs:
    """A worker's engines and what they left behind: `dirty` once a program left an engine's
    grad mode changed, or it could not be reset (the worker must then retire). `classes`: the
    conformance classes judged (default the engine's claim); a divergence of another class
    is not what a program is shrunk for."""

    def __init__(self, engine: Engine, oracle: Engine, progress: Progress | None = None,
                 classes: frozenset[str] | None = None):
        self.engine, self.oracle, self.progress = engine, oracle, progress
        self.classes = frozenset(engine.classes if classes is None else classes)
        self.dirty = False

    def run(self, program: Program, engine: Engine, who: int, checked: set[int] | None = None
            ) -> tuple[Trace, bool | None]:
        """One hermetic run: (trace, grad mode after it). `checked`: shared by the runs of
        one program, which check its statements once (judge/executor.py, execute)."""
        if not reset_grad_mode(engine):
            self.dirty = True
        on = None
        if self.progress is not None:
            self.progress.running(who)
            on = self.progress.statement
        trace = execute(program, engine, on, checked)
        after = grad_mode(engine)
        if after is False and not reset_grad_mode(engine):
            self.dirty = True
        return trace, after

    def judge(self, program: Program, on_engine: Callable[[], None] | None = None
              ) -> tuple[Trace, Trace, list[Divergence]]:
        """Both runs and their divergences, a grad-mode leak first."""
        checked: set[int] = set()
        o, o_mode = self.run(program, self.oracle, ORACLE, checked)
        if on_engine:
            on_engine()
        return self.against(program, o, o_mode, checked)

    def against(self, program: Program, o: Trace, o_mode: bool | None,
                checked: set[int] | None = None) -> tuple[Trace, Trace, list[Divergence]]:
        """The engine's run of a program the oracle ran (trace `o`, grad mode after it
        `o_mode`, the statements it checked `checked`), and their divergences, a grad-mode
        leak first."""
        e, e_mode = self.run(program, self.engine, ENGINE, checked)
        found = compare(program, o, e, self.relief(program, o))
        if o_mode is not None and e_mode is not None and o_mode != e_mode:
            self.dirty = True
            state = {True: "on", False: "off"}
            found.insert(0, Divergence(
                "", "program", LEAK, f"grad mode {state[o_mode]} after the program",
                f"grad mode {state[e_mode]} after the program: a mode the program set was "
                "not restored", list(LEAK_CLAUSES)))
        return o, e, found

    def relief(self, program: Program, o: Trace) -> Relief:
        """The oracle's sensitivity of each float of its trace `o`, measured by hermetic
        runs of perturbed copies of the program when first needed (judge/conditioning.py)."""
        return Relief(program, o, lambda p: self.run(p, self.oracle, ORACLE)[0])

    def diverges_like(self, target: Divergence) -> Callable[[Program], bool]:
        def test(p: Program) -> bool:
            return same_problem(judged(self.judge(p)[2], self.classes), target)
        return test


def check(program: Program, oracle: Engine, engine: Engine, shrink: bool = True,
          shrink_seconds: float = 10.0, on_engine: Callable[[], None] | None = None,
          runs: Runs | None = None) -> dict[str, Any]:
    """Run one program on both engines; a JSON-able result, the program shrunk if divergent.
    `on_engine` is called between the oracle's run and the engine's."""
    runs = runs or Runs(engine, oracle)
    return judged_result(runs, program, *runs.judge(program, on_engine), shrink=shrink,
                         shrink_seconds=shrink_seconds)


def judged_result(runs: Runs, program: Program, o: Trace, e: Trace, found: list[Divergence],
                  shrink: bool = False, shrink_seconds: float = 10.0) -> dict[str, Any]:
    """The JSON-able result of a program judged (`check`): its clauses, and where it diverged
    its divergences, traces and graphs, the program shrunk first with `shrink`."""
    engine, oracle = runs.engine, runs.oracle
    result: dict[str, Any] = {"clauses": program.clauses(), "divergences": []}
    if not found:
        return result
    if shrink:
        small = minimize(program, runs.diverges_like(lead(found, runs.classes) or found[0]),
                         max_seconds=shrink_seconds)
        so, se, again = runs.judge(small)
        if again:
            program, o, e, found = small, so, se, again
    if engine.granularity != "statement":   # found in a unit: where does an eager replay differ
        where = localise(program, o, engine, runs.relief(program, o))
        for d in found:
            d.localised_to = where
    result.update(program=program.to_json(), oracle=o.to_json(), engine=e.to_json(),
                  divergences=[d.to_json() for d in found],
                  graphs=capture_pair(program, found, engine, oracle))
    return result


def setup(progress: Progress, engine_spec: str, oracle_spec: str, device: str,
          options: dict[str, Any]) -> tuple[Runs, dict[str, Any]]:
    """A worker's engines, loaded in the worker (the engine first, then the oracle)."""
    progress.running(ENGINE)
    engine = load_engine(engine_spec, device)
    progress.running(ORACLE)
    oracle = load_engine(oracle_spec, device)
    progress.running(0)
    return Runs(engine, oracle, progress, options.get("classes")), options


def work(state: tuple[Runs, dict[str, Any]], payload: tuple[str, Any], progress: Progress,
         keep: Callable[[Any], None]) -> tuple[dict[str, Any], bool]:
    """One task: ("check", seed) runs the seed's program unshrunk; ("shrink", seed) runs and
    shrinks it; ("program", program JSON) runs a given program (a replay); ("probe",
    capability) probes a capability. Returns (result, whether the worker must retire)."""
    runs, opt = state
    what, arg = payload
    if what == "probe":
        # capability `arg` probed (judge/probes.py), in a worker that goes on to the next:
        # the probes ran in one process before, and starting an engine (torch.compile) per
        # probe costs seconds
        result = _guarded(lambda: {"probe": _probe(runs, arg)})
        return result, "probe" not in result and runs.dirty
    return _guarded(lambda: _judged(runs, opt, what, arg)), runs.dirty


def _probe(runs: Runs, capability: str) -> dict[str, Any]:
    from ..judge.probes import probe
    return probe(runs.engine, runs.oracle, capability).to_json()


def _judged(runs: Runs, opt: dict[str, Any], what: str, arg: Any) -> dict[str, Any]:
    """The result of a "program", "check" or "shrink" task (`work`)."""
    if what == "program":
        program = Program.from_json(arg)
        o, e, found = runs.judge(program)
        return {"oracle": o.to_json(), "engine": e.to_json(),
                "divergences": [d.to_json() for d in found],
                "names": [runs.oracle.name, runs.engine.name],
                "classes": sorted(runs.classes)}
    program = opt["source"](arg, opt["caps"], opt["size"])
    return check(program, runs.oracle, runs.engine, shrink=what == "shrink",
                 shrink_seconds=opt["shrink_seconds"], runs=runs)


def _drawn(opt: dict[str, Any], seed: int) -> Program | dict[str, Any]:
    """The program of a seed, or the result of a source that could not give one."""
    return _guarded(lambda: opt["source"](seed, opt["caps"], opt["size"]))


def work_batch(state: tuple[Runs, dict[str, Any]], items: list[tuple[int, tuple[str, Any]]],
               progress: Progress) -> Iterator[tuple[int, dict[str, Any], bool]]:
    """("check", seed) tasks `items` (index, payload) run as one batch: every program drawn,
    then every one run on the oracle, then each run on the engine and judged; yields (index,
    result, whether the worker must retire) as each is judged, and stops after one that
    retires it (the pool runs the rest elsewhere). The same results as `work` gives each task.

    Why a batch: the generator, the oracle and the engine each run programs back to back,
    instead of the three taking turns on the core at every program, which costs what they
    evict of each other's caches; and the collector is paused while the batch's programs and
    traces are alive, since each collection it triggered would traverse them with everything
    torch and numpy keep alive (benchmarks/README.md measures both). A program's time limit
    counts its own drawing and runs (Progress.resume). The engine's run of a program does not
    check again the statements the oracle's run checked (execute's `checked`). A run that
    leaves an engine's grad mode
    where it cannot be reset (the worker must retire) ends the oracle's runs there: that
    program is judged, the others of the batch run elsewhere."""
    runs, opt = state
    paused = gc.isenabled()
    gc.disable()
    try:
        # [index, program or its result, time used, oracle's run, the statements it checked]
        drawn: list[list[Any]] = []
        for index, (_, seed) in items:
            progress.begin(index)
            start = time.monotonic()
            drawn.append([index, _drawn(opt, seed), time.monotonic() - start, None, set()])
        for entry in drawn:
            index, program, used, _, checked = entry
            if isinstance(program, dict):
                continue
            progress.resume(index, used)
            start = time.monotonic()
            entry[3] = _guarded(lambda p=program, c=checked: runs.run(p, runs.oracle, ORACLE, c))
            entry[2] = used + time.monotonic() - start
            if runs.dirty:
                drawn = [entry]
                break
        for index, program, used, oracle, checked in drawn:
            if isinstance(program, dict) or isinstance(oracle, dict):
                yield index, program if isinstance(program, dict) else oracle, runs.dirty
                continue
            progress.resume(index, used)
            result = _guarded(lambda p=program, o=oracle, c=checked: judged_result(
                runs, p, *runs.against(p, *o, c)))
            # the young garbage (this program's cycles, and the oracle's before the first) is
            # freed now, on this task's clock and record: its finalizers (an engine's native
            # handles) never run between batches, where a crash or hang in them would be
            # blamed on the next batch's first program, or kill a worker the pool thinks idle
            gc.collect(0)
            yield index, result, runs.dirty
            if runs.dirty:
                return
    finally:
        if paused:
            gc.enable()


def _guarded(f: Callable[[], Any]) -> Any:
    """f(), or the result of a program gradspec could not judge: a program source's failure
    (one line, no traceback of gradspec's), or gradspec's own (its traceback)."""
    try:
        return f()
    except SourceError as exc:
        return {"clauses": [], "internal": str(exc)}
    except Exception:  # noqa: BLE001 - a gradspec bug, reported with its traceback
        import traceback
        return {"clauses": [], "internal": traceback.format_exc()}


def failure(partial: dict[str, Any] | None, what: str, detail: str, who: str, path: str
            ) -> dict[str, Any]:
    """The result of a program whose worker crashed or hung. The engine's is a failure of the
    engine (at statement `path`); the oracle's cannot judge the engine and is reported apart
    (a bug in the oracle, or a program to stop generating). A divergence found before the
    crash (while shrinking) is kept instead."""
    if partial:
        return partial
    at = f" at statement {path}" if path else ""
    if who == "the oracle":
        verb = {"crash": "crashed", "timeout": "timed out"}[what]
        return {"oracle_failure": f"the oracle {verb}{at}: {detail}"}
    return {"failure": Divergence(path, "program", what, "completed",
                                  f"{detail}{at}").to_json()}
