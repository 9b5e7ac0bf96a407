"""Mutation score: how many small faults in refimpl's autograd core `gradspec run` catches.

The mutants are cosmic-ray's (its operators, its enumeration, its application of one mutation
to a file and its restoration afterwards), made in a private copy of refimpl/, conformance/ and
spec/ in a temporary folder: the checkout itself is never written, since others run tests
against it. Each mutant is judged by the command users run, `gradspec run` at its default
budget (300 programs, seed 0, one worker), in a subprocess whose PYTHONPATH puts the copy
first; the script checks that the copy is what gets imported and that the unmutated copy runs
clean before it judges any mutant. cosmic-ray's own runner only tells exit 0 from the rest,
and `gradspec run` has a third answer (exit 3: could not judge) that must not count as a kill,
so the script drives the runs itself (verdicts: mutation_verdicts.py) and records each result
in cosmic-ray's session database. Programs-to-first-catch is the position (from 1) of the
first program that caught the mutant.

    python benchmarks/bench_mutation.py [--sample N] [--seed S] [--modules refimpl/engine.py ...]
        [--same-as earlier.json]
        [--rev COMMIT] [--json out.json] [--resume out.json] [--list]

Needs the `mutation` extra (`pip install -e '.[mutation]'`). Times are printed, never asserted.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutation_verdicts import (  # noqa: E402  (beside this script, which is no package)
    Mutant,
    Outcome,
    UsageError,
    annotate,
    carry,
    carry_annotations,
    classify,
    divergent,
    first_catch,
    line_map,
    load_annotations,
    mutant_key,
    resumable,
    sample_mutants,
    summarize,
)

ROOT = Path(__file__).resolve().parent.parent
# the autograd core: the engine, nodes, the tensor, hooks, grad modes, in-place ops and views
DEFAULT_MODULES = ("refimpl/engine.py", "refimpl/node.py", "refimpl/tensor.py",
                   "refimpl/hooks.py", "refimpl/grad_mode.py", "refimpl/ops/inplace.py",
                   "refimpl/ops/views.py")
COPIED = ("refimpl", "conformance", "spec")        # what a `gradspec run` reads
DEFAULT_ANNOTATIONS = ROOT / "benchmarks" / "mutation_survivors.json"
DEFAULT_COUNT = 300                                # `gradspec run`'s default --count
EXIT_USAGE, EXIT_UNMEASURED = 2, 3


def check_modules(modules: list[str]) -> list[str]:
    """The modules to mutate, as paths relative to the repository, each a refimpl .py file."""
    out = []
    for name in modules:
        path = (ROOT / name).resolve()
        if path.suffix != ".py" or not path.is_file():
            raise UsageError(f"--modules {name}: not a Python file of this checkout")
        if (ROOT / "refimpl") not in path.parents:
            raise UsageError(f"--modules {name}: only refimpl's modules are mutated")
        out.append(path.relative_to(ROOT).as_posix())
    if len(set(out)) != len(out):
        raise UsageError("--modules: a module is named twice")
    return out


def make_copy(workdir: Path, rev: str | None) -> Path:
    """A private copy of what `gradspec run` reads, without compiled files: the working tree
    as it is, or the files of commit `rev` (a figure others can reproduce while the working
    tree holds someone's unfinished edits)."""
    snap = workdir / "src"
    if rev is None:
        for name in COPIED:
            shutil.copytree(ROOT / name, snap / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return snap
    snap.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, *COPIED],
                             capture_output=True, check=False)
    if archive.returncode:
        raise UsageError(f"--rev {rev}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(snap)], input=archive.stdout, check=True)
    return snap


def commit_of(rev: str | None) -> str:
    """What was measured: a commit, or the working tree on top of one."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev or "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    return head if rev else f"working tree on {head or 'an unknown commit'}"


def enumerate_mutants(snap: Path, modules: list[str], db_path: Path) -> list[Mutant]:
    """Every mutant cosmic-ray's core operators make of `modules`, in a new session database."""
    from cosmic_ray.commands.init import init
    from cosmic_ray.work_db import WorkDB, use_db
    here = os.getcwd()
    os.chdir(snap)              # module paths in the database stay relative to the copy
    try:
        with use_db(str(db_path), WorkDB.Mode.create) as db:
            init([Path(m) for m in modules], db, {})
            items = db.work_items
    finally:
        os.chdir(here)
    out = []
    for item in items:
        (spec,) = item.mutations
        module = Path(spec.module_path).as_posix()
        out.append(Mutant(mutant_key(module, spec.operator_name, spec.occurrence), item.job_id,
                          module, spec.operator_name, spec.occurrence, spec.start_pos[0],
                          spec.definition_name))
    return out


def gradspec_env(snap: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(snap), env.get("PYTHONPATH")) if p)
    return env


def check_imports(snap: Path, workdir: Path) -> str:
    """The subprocesses must import the copy, not the checkout (an editable install): where
    they import refimpl from."""
    code = "import refimpl, conformance; print(refimpl.__file__); print(conformance.__file__)"
    got = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=gradspec_env(snap),
                         capture_output=True, text=True, check=False)
    paths = got.stdout.split()
    if got.returncode or len(paths) != 2 or not all(Path(p).is_relative_to(snap) for p in paths):
        raise RuntimeError(f"the copy is not what gets imported: {got.stdout or got.stderr}")
    return paths[0]


def run_gradspec(snap: Path, workdir: Path, args) -> tuple[int | None, dict | None, float, str]:
    """One `gradspec run` on whatever refimpl the copy holds now: (exit, report, seconds, the
    last line it wrote to stderr). Shrinking is off: it changes neither the verdict nor which
    programs diverge. It stops at the first failing program (`-x`): the verdict and the
    programs to first catch are those of the whole run (the programs run in seed order and
    stop only at a program that fails the run), and a killed mutant no longer costs a report
    folder for each of its hundreds of divergent programs. A run still
    going after --mutant-timeout seconds (a mutant that hangs every backward costs gradspec's
    10 s per program) is interrupted as a user would, and its partial report read."""
    out = workdir / "run"
    cmd = [sys.executable, "-m", "conformance.cli", "run", "--engine", "refimpl",
           "--seed", str(args.run_seed), "--count", str(args.count), "-n", "1", "--quiet",
           "--no-shrink", "--exitfirst", "--out", str(out)]
    t0 = time.perf_counter()
    with open(workdir / "stderr.txt", "w+b") as err:
        proc = subprocess.Popen(cmd, cwd=workdir, env=gradspec_env(snap),
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=args.mutant_timeout)
        except subprocess.TimeoutExpired:
            code = _interrupt(proc)
        err.seek(0)
        last = (err.read().decode(errors="replace").strip().splitlines() or [""])[-1]
    seconds = time.perf_counter() - t0
    # an interrupted run leaves its report in its staging folder (conformance/campaign/outdir.py)
    found = [out / "report.json"] + sorted(workdir.glob("run.partial-*/report.json"))
    found = [f for f in found if f.is_file()]
    report = json.loads(found[0].read_text(encoding="utf-8")) if found else None
    for folder in [out, *workdir.glob("run.partial-*")]:
        shutil.rmtree(folder, ignore_errors=True)
    return code, report, seconds, last


def _interrupt(proc: subprocess.Popen) -> int | None:
    """Ctrl-C for the run (it writes an incomplete report and exits 130); if it does not stop
    within 30 s, kill it and the workers it started (its own process group)."""
    os.kill(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def drop_compiled(snap: Path) -> None:
    """A mutant of the same size written within a second of the last one could reuse its
    stale .pyc (Python checks the source's mtime in whole seconds and its size)."""
    for cache in sorted((snap / "refimpl").rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)


def judge_mutant(mutant: Mutant, snap: Path, workdir: Path, args, annotations) -> Outcome:
    """Apply one mutant with cosmic-ray (restored on leaving), run gradspec, classify."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import use_mutation
    operator = cosmic_ray.plugins.get_operator(mutant.operator)()
    path = snap / mutant.module
    with use_mutation(path, operator, mutant.occurrence) as (original, mutated):
        if mutated is None:
            raise RuntimeError(f"{mutant.key}: cosmic-ray made no mutation")
        drop_compiled(snap)
        code, report, seconds, last = run_gradspec(snap, workdir, args)
    drop_compiled(snap)
    diff = "\n".join(difflib.unified_diff(original.split("\n"), mutated.split("\n"),
                                          f"a/{mutant.module}", f"b/{mutant.module}",
                                          lineterm=""))
    status, detail = classify(code, report)
    if report is None and last:
        detail = f"exit {code}: {last}"     # e.g. the mutant broke refimpl's import
    outcome = Outcome(mutant.key, mutant.module, mutant.operator, mutant.line, mutant.definition,
                      status, code, first_catch(report) if status == "killed" else None,
                      detail, seconds=round(seconds, 2), diff=diff)
    if report is not None:
        outcome.divergent = divergent(report)
        outcome.crashed, outcome.timed_out = len(report.get("crashes", [])), len(
            report.get("timeouts", []))
    return annotate(outcome, annotations)


def record(db_path: Path, mutant: Mutant, outcome: Outcome) -> None:
    """The result in cosmic-ray's session database too, so that `cr-report` can read it."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult
    test = {"killed": TestOutcome.KILLED, "survived": TestOutcome.SURVIVED,
            "equivalent": TestOutcome.SURVIVED}.get(outcome.status, TestOutcome.INCOMPETENT)
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        db.set_result(mutant.job_id, WorkResult(worker_outcome=WorkerOutcome.NORMAL,
                                                output=outcome.detail, test_outcome=test,
                                                diff=outcome.diff))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", nargs="+", default=list(DEFAULT_MODULES), metavar="PATH",
                    help="refimpl modules to mutate (default: the autograd core)")
    ap.add_argument("--rev", default=None, metavar="COMMIT",
                    help="mutate and run this commit's files (default: the working tree)")
    ap.add_argument("--sample", type=_positive, default=None, metavar="N",
                    help="judge N mutants drawn by --seed (default: all)")
    ap.add_argument("--seed", type=_whole, default=0, help="sample seed (default 0)")
    ap.add_argument("--same-as", type=Path, default=None, metavar="FILE",
                    help="judge the mutants an earlier --json file judged, carried to this "
                    "source line by line (a line that changed loses its mutants, which are "
                    "listed); instead of --sample")
    ap.add_argument("--count", type=_positive, default=DEFAULT_COUNT,
                    help=f"programs per gradspec run (default {DEFAULT_COUNT}, its default)")
    ap.add_argument("--run-seed", type=_whole, default=0, help="gradspec run's --seed (default 0)")
    ap.add_argument("--mutant-timeout", type=_positive, default=90, metavar="SECONDS",
                    help="wall clock per mutant before its run is interrupted and judged on its "
                    "partial report (default 90; an unmutated run takes a few seconds)")
    ap.add_argument("--annotations", type=Path, default=DEFAULT_ANNOTATIONS,
                    help="survivors' explanations (default benchmarks/mutation_survivors.json)")
    ap.add_argument("--json", type=Path, default=None, metavar="FILE",
                    help="write every mutant's result (with its diff) here, after each mutant")
    ap.add_argument("--resume", type=Path, default=None, metavar="FILE",
                    help="take the results of an earlier --json file of the same source and "
                    "gradspec flags instead of judging those mutants again")
    ap.add_argument("--list", action="store_true", help="list the sampled mutants and stop")
    ap.add_argument("--quiet", action="store_true", help="no line per mutant")
    return ap.parse_args(argv)


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 or more")
    return value


def _positive(text: str) -> int:
    value = _whole(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 or more")
    return value


def write_result(path: Path | None, meta: dict, outcomes: list[Outcome], done: bool) -> None:
    if path is None:
        return
    data = {**meta, "complete": done, "summary": summarize(outcomes),
            "results": [asdict(o) for o in outcomes]}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def measure(args, modules: list[str], annotations: dict, workdir: Path) -> int:
    snap = make_copy(workdir, args.rev)
    missing = [m for m in modules if not (snap / m).is_file()]
    if missing:
        raise UsageError(f"--modules {missing[0]}: not in {args.rev or 'the working tree'}")
    db_path = workdir / "session.sqlite"
    mutants = enumerate_mutants(snap, modules, db_path)
    same_as: dict = {}
    if args.same_as is not None:
        chosen, same_as, annotations = same_mutants(args.same_as, snap, modules, mutants,
                                                    workdir, annotations)
        print(f"bench_mutation: {len(chosen)} of the {same_as['of']} mutants of "
              f"{args.same_as} carried to this source; lost (their line changed): "
              f"{', '.join(same_as['lost']) or 'none'}", file=sys.stderr)
    else:
        chosen = sample_mutants(mutants, args.sample, args.seed)
    if args.list:
        for m in chosen:
            print(f"{m.key}  line {m.line}")
        return 0
    meta = {"tool": f"cosmic-ray {metadata.version('cosmic-ray')}",
            "command": " ".join(["python", "benchmarks/bench_mutation.py", *sys.argv[1:]]),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "source": commit_of(args.rev), "modules": modules,
            "mutants_in_modules": len(mutants), "sample": args.sample, "sample_seed": args.seed,
            "gradspec_run": f"--engine refimpl --seed {args.run_seed} --count {args.count} "
                            "-n 1 --quiet --no-shrink --exitfirst"}
    if same_as:
        meta["same_as"] = same_as
    earlier = resumable(_read_json(args.resume, "--resume"), meta) if args.resume else {}
    meta["refimpl_imported_from"] = check_imports(snap, workdir)
    code, _, seconds, _ = run_gradspec(snap, workdir, args)
    if code != 0:
        print(f"bench_mutation: the unmutated copy does not run clean (exit {code}); "
              "no mutant can be judged", file=sys.stderr)
        return EXIT_UNMEASURED
    meta["baseline_seconds"] = round(seconds, 2)
    outcomes: list[Outcome] = []
    for i, mutant in enumerate(chosen, 1):
        outcome = earlier.get(mutant.key)
        if outcome is None or outcome.line != mutant.line:
            outcome = judge_mutant(mutant, snap, workdir, args, annotations)
        else:
            outcome = annotate(outcome, annotations)
        record(db_path, mutant, outcome)
        outcomes.append(outcome)
        write_result(args.json, meta, outcomes, done=False)
        if not args.quiet:
            print(f"[{i}/{len(chosen)}] {outcome.status:<10} {mutant.key} line {mutant.line} "
                  f"first={outcome.first_catch} {outcome.seconds:.1f}s", file=sys.stderr)
    write_result(args.json, meta, outcomes, done=True)
    print_summary(meta, outcomes)
    return 0


def same_mutants(path: Path, snap: Path, modules: list[str], mutants: list[Mutant],
                 workdir: Path, annotations: dict) -> tuple[list[Mutant], dict, dict]:
    """The mutants of this source that are the ones the earlier result file `path` judged (its
    source commit enumerated again and mapped line by line: mutation_verdicts.carry), what
    to record of them, and the annotations (which name the earlier source's mutants) carried
    to them as well."""
    data = _read_json(path, "--same-as")
    source, results = data.get("source"), data.get("results")
    if not (isinstance(source, str) and len(source) == 40 and isinstance(results, list)):
        raise UsageError(f"--same-as {path}: needs the source commit and results of a run "
                         "of this script")
    keys = [r.get("key") if isinstance(r, dict) else None for r in results]
    if not all(isinstance(k, str) for k in keys):
        raise UsageError(f"--same-as {path}: every result needs the key of its mutant")
    (workdir / "earlier").mkdir()
    old_snap = make_copy(workdir / "earlier", source)
    old = enumerate_mutants(old_snap, modules, workdir / "earlier.sqlite")
    unknown = sorted(set(keys) - {m.key for m in old})
    if unknown:
        raise UsageError(f"--same-as {path}: {unknown[0]} is no mutant of {source[:12]} in "
                         f"{', '.join(modules)}")
    maps = {m: line_map((old_snap / m).read_text(encoding="utf-8"),
                        (snap / m).read_text(encoding="utf-8")) for m in modules}
    pairs, lost = carry(keys, old, mutants, maps)
    return [n for _, n in pairs], {"file": str(path), "source": source, "of": len(keys),
                                   "lost": lost}, carry_annotations(annotations, pairs)


def _read_json(path: Path, flag: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{flag} {path}: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{flag} {path}: not a result file of this script")
    return data


def print_summary(meta: dict, outcomes: list[Outcome]) -> None:
    s = summarize(outcomes)
    print(f"{meta['tool']}: {s['mutants']} of {meta['mutants_in_modules']} mutants judged "
          f"(sample {meta['sample']}, seed {meta['sample_seed']}), gradspec run "
          f"{meta['gradspec_run']}")
    print(f"killed {s['killed']}, survived {s['survived']}, equivalent by inspection "
          f"{s['equivalent']}, unjudged {s['unjudged']}")
    if s["kill_rate"] is not None:
        print(f"kill rate over non-equivalent judged mutants: {s['kill_rate']:.1%} (target 90%)")
    if "first_catch" in s:
        print("programs to first catch: " + ", ".join(f"{k} {v}" for k, v in
                                                      s["first_catch"].items()))
    for module, row in s["by_module"].items():
        print(f"  {module}: " + ", ".join(f"{v} {k}" for k, v in row.items()))
    for o in outcomes:
        if o.status in ("survived", "equivalent", "unjudged"):
            print(f"  {o.status:<10} {o.key} line {o.line}: {o.why or o.detail}")


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as exc:           # argparse: --help, or one line for bad usage
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        if args.same_as is not None and args.sample is not None:
            raise UsageError("--same-as judges the mutants of an earlier run: give no --sample")
        modules = check_modules(args.modules)
        annotations = load_annotations(args.annotations)
        if args.json is not None and not args.json.parent.is_dir():
            raise UsageError(f"--json {args.json}: no folder {args.json.parent}")
        try:
            import cosmic_ray  # noqa: F401
        except ImportError:
            raise UsageError("cosmic-ray is not installed: pip install -e '.[mutation]'") from None
        with tempfile.TemporaryDirectory(prefix="gradspec-mutation-") as tmp:
            return measure(args, modules, annotations, Path(tmp))
    except UsageError as exc:
        print(f"bench_mutation: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as exc:         # the copy is not imported, or a mutant not made
        print(f"bench_mutation: {exc}", file=sys.stderr)
        return EXIT_UNMEASURED


if __name__ == "__main__":
    sys.exit(main())
