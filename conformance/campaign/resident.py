"""One worker process kept for many programs: the campaign's worker (campaign/worker.py) behind
the campaign's pool machinery (campaign/pool.py), handed one program at a time by a caller that
draws the programs itself (the pytest plugin, under Hypothesis).

`Resident(engine_spec, oracle_spec, device, timeout).run(program)` runs the program on the
oracle and the engine in the worker, hermetically, as `gradspec run` and `gradspec replay` do,
and returns replay's result: {"oracle", "engine" (traces as JSON), "divergences", "names"}, or
for a crash or hang {"failure": a Divergence at the statement that was running} (the oracle's:
{"oracle_failure": why}), or {"internal": a gradspec traceback}. The worker is started on the
first program and kept for the next ones; one that crashed, hung or retired (a program left its
grad mode changed) is replaced by a fresh one on the next program. `close()` stops it.
`explain(program, result, engine)` writes the folder of a program that could not be judged
(program.json and the repro scripts, as `gradspec run` writes them) and says what happened.
"""
from __future__ import annotations

import math
import tempfile
import time
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from ..engines import EngineError
from ..engines.base import Engine
from ..judge.compare import INTERNAL, Divergence
from ..lang.program import Program, Stmt
from ..reports.report import write_divergence
from . import worker
from .pool import Pool, PoolError, Task, _Slot, context


class Resident:
    """A worker process that runs programs on `oracle_spec` and `engine_spec`, one at a time,
    each within `timeout` seconds from when the worker begins it."""

    def __init__(self, engine_spec: str, oracle_spec: str, device: str = "cpu",
                 timeout: float = 10.0, folder: str | Path | None = None):
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be finite and positive, not {timeout!r}")
        self.engine_spec, self.oracle_spec, self.device = engine_spec, oracle_spec, device
        self.timeout, self.folder, self.faults = timeout, folder, 0
        self._stmts: dict[str, Stmt] = {}
        self._pool = Pool(context([engine_spec, oracle_spec], device), 1, worker.setup,
                          (engine_spec, oracle_spec, device, {}), worker.work, self._failure)
        self._slot: _Slot | None = None

    def _failure(self, task: Task, what: str, detail: str, who: str, path: str
                 ) -> dict[str, Any]:
        r = worker.failure(None, what, detail, who, path)
        if "failure" in r and path in self._stmts:
            stmt = self._stmts[path]
            r["failure"].update(op=stmt.op, clauses=list(stmt.clauses))
        return r

    def run(self, program: Program) -> dict[str, Any]:
        """The result of one program (see the module's docstring). An engine that cannot load
        in the worker is an EngineError; Ctrl-C stops the worker and propagates."""
        self._stmts = dict(program.walk())
        out: dict[str, Any] = {}
        if self._slot is None:
            self._slot = _Slot(self._pool)
        slot = self._slot
        slot.give(Task(0, ("program", program.to_json()), self.timeout))
        try:
            while slot.task is not None:
                ready = wait([slot.conn], timeout=max(0.0, slot.deadline - time.monotonic()))
                if not self._pool._step(slot, bool(ready), lambda _t, r: out.update(r), []):
                    self.close(kill=True)
                    break
        except PoolError as exc:
            self.close(kill=True)
            raise EngineError(str(exc)) from None
        except BaseException:
            self.close(kill=True)
            raise
        return out

    def explain(self, program: Program, result: dict[str, Any], engine: Engine) -> str:
        """What became of a program that was not judged (a result without traces): the engine
        crashed or hung on it, or the oracle did, or gradspec failed. Writes its folder under
        `folder` (a fresh temporary folder without one) and names it, with the command that
        replays it, the repro script and the program's JSON."""
        if result.get("failure"):
            div = Divergence.from_json(result["failure"])
            head = f"{engine.name} {'crashed' if div.what == 'crash' else 'hung'} on a program"
        elif result.get("oracle_failure"):
            div = Divergence("", "program", "oracle failure", result["oracle_failure"],
                             "not judged")
            head = "the oracle failed on a program: not judged"
        else:
            why = (result.get("internal") or "no result").strip()
            div = Divergence("", "program", INTERNAL, "completed", why.splitlines()[-1])
            head = f"gradspec failed on a program (a gradspec bug):\n{why}"
        self.faults += 1
        base = Path(self.folder) if self.folder else Path(tempfile.mkdtemp(prefix="gradspec-"))
        folder = base / f"{self.faults:04d}-{div.what.replace(' ', '-')}"
        paths = write_divergence(folder, program, None, None, [div], engine, self.engine_spec,
                                 self.oracle_spec)
        at = f"statement {div.path} ({div.op})" if div.path else "the program"
        return "\n".join([
            f"{head}: {at}: {div.oracle if div.what == 'oracle failure' else div.engine}"
            + (f"  [{', '.join(div.clauses)}]" if div.clauses else ""),
            f"program and repro: {folder}",
            f"replay: gradspec replay {paths['program']} --engine {self.engine_spec} "
            f"--oracle {self.oracle_spec} --device {self.device} --timeout {self.timeout:g}",
            "", "repro (plain torch):", Path(paths["repro_torch"]).read_text(encoding="utf-8"),
            "program JSON:", program.dumps()])

    def close(self, kill: bool = False) -> None:
        """Stop the worker (killed if it is on a program or failed one, or with `kill`)."""
        slot, self._slot = self._slot, None
        if slot is not None:
            slot.stop(kill=kill or slot.busy)

    def __enter__(self) -> Resident:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
