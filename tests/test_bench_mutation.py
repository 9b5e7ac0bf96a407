"""The mutation-score script's own logic (benchmarks/bench_mutation.py): which mutants a seed
draws, how one `gradspec run` is read as killed / survived / unjudged, how survivors take their
explanations. No mutant is run here; the tests that need cosmic-ray skip without it."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    """A module of benchmarks/ (no package): by its path, registered under its name, as the
    script imports its sibling by name and dataclasses look their module up there."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


verdicts = _load("mutation_verdicts")
bench = _load("bench_mutation")


def mutant(module: str, operator: str, occurrence: int, line: int = 1):
    return verdicts.Mutant(verdicts.mutant_key(module, operator, occurrence), f"job{occurrence}",
                        module, operator, occurrence, line, None)


def outcome(status: str, key: str = "refimpl/engine.py:core/AddNot#3", line: int = 40,
            first: int | None = None):
    return verdicts.Outcome(key, "refimpl/engine.py", "core/AddNot", line, None, status,
                         {"killed": 1, "survived": 0}.get(status, 3), first)


MUTANTS = [mutant(f"refimpl/{m}.py", op, i)
           for m in ("engine", "node", "tensor") for op in ("core/AddNot", "core/NumberReplacer")
           for i in range(7)]


def test_sample_depends_on_the_seed_and_not_on_the_order_mutants_come_in():
    a = verdicts.sample_mutants(MUTANTS, 10, seed=4)
    b = verdicts.sample_mutants(list(reversed(MUTANTS)), 10, seed=4)
    assert [m.key for m in a] == [m.key for m in b]
    assert len({m.key for m in a}) == 10
    assert [m.key for m in a] == sorted(m.key for m in a)
    others = [[m.key for m in verdicts.sample_mutants(MUTANTS, 10, seed=s)] for s in range(5, 9)]
    assert any(keys != [m.key for m in a] for keys in others)


def test_a_sample_at_least_as_large_as_the_set_is_the_whole_set():
    assert len(verdicts.sample_mutants(MUTANTS, None, 0)) == len(MUTANTS)
    assert len(verdicts.sample_mutants(MUTANTS, len(MUTANTS) + 5, 0)) == len(MUTANTS)


def report(**lists) -> dict:
    base = {"divergences": [], "crashes": [], "timeouts": [], "oracle_failures": [],
            "unjudged": None}
    return {**base, **lists}


DIVERGENCE = {"index": 7, "what": "value"}
HARNESS = {"index": 2, "what": "harness"}
INTERNAL = {"index": 3, "what": "internal"}     # a program gradspec itself failed on


@pytest.mark.parametrize("code, rep, status", [
    (0, report(), "survived"),
    (1, report(divergences=[DIVERGENCE]), "killed"),
    (1, report(crashes=[{"index": 4}]), "killed"),
    # too many crashes or timeouts: could not judge, yet the engine failed
    (3, report(timeouts=[{"index": 0}] * 5, unjudged="could not judge: 5 timeouts"), "killed"),
    # the oracle failed or gradspec could not express a statement: never a kill
    (3, report(divergences=[DIVERGENCE], oracle_failures=[{"index": 1}]), "unjudged"),
    (3, report(divergences=[DIVERGENCE, HARNESS]), "unjudged"),
    (3, report(crashes=[{"index": 1}], oracle_failures=[{"index": 1}]), "unjudged"),
    (1, report(divergences=[HARNESS]), "unjudged"),
    (3, report(divergences=[INTERNAL]), "unjudged"),
    (130, report(divergences=[INTERNAL]), "unjudged"),
    # the run was interrupted (it hung past the script's limit): its partial report decides
    (130, report(timeouts=[{"index": 0}]), "killed"),
    (130, report(divergences=[DIVERGENCE]), "killed"),
    (130, report(), "unjudged"),
    (130, report(timeouts=[{"index": 0}], oracle_failures=[{"index": 1}]), "unjudged"),
    (2, report(), "unjudged"),
    (None, None, "unjudged"),
    (1, None, "unjudged"),
])
def test_classify_reads_the_exit_status_and_the_report(code, rep, status):
    assert verdicts.classify(code, rep)[0] == status


def test_first_catch_is_the_earliest_engine_failure_counted_from_one():
    rep = report(divergences=[{"index": 9, "what": "value"}, HARNESS],
                 crashes=[{"index": 5}], timeouts=[{"index": 12}])
    assert verdicts.first_catch(rep) == 6
    assert verdicts.first_catch(report(divergences=[{"index": 0, "what": "grad"}])) == 1
    assert verdicts.first_catch(report(divergences=[HARNESS, INTERNAL])) is None
    assert verdicts.divergent(report(divergences=[DIVERGENCE, HARNESS, INTERNAL])) == 1


def test_line_map_follows_unchanged_lines_past_an_insertion():
    old = "a\nb\nc\nd"
    new = "a\nx\ny\nb\nc2\nd"
    assert verdicts.line_map(old, new) == {1: 1, 2: 4, 4: 6}     # c changed: no line


def test_carry_finds_each_mutant_at_its_moved_line_by_its_place_on_the_line():
    f, op = "refimpl/grad_mode.py", "core/AddNot"
    old = [mutant(f, op, 0, line=10), mutant(f, op, 1, line=20), mutant(f, op, 2, line=20),
           mutant(f, "core/NumberReplacer", 0, line=30)]
    # two new mutants of the operator on new lines before; lines 20 and 30 moved to 25, 35;
    # the old line 10 changed
    new = [mutant(f, op, 0, line=3), mutant(f, op, 1, line=4), mutant(f, op, 2, line=25),
           mutant(f, op, 3, line=25), mutant(f, "core/NumberReplacer", 0, line=35)]
    maps = {f: {20: 25, 30: 35}}
    pairs, lost = verdicts.carry([m.key for m in old], old, new, maps)
    assert [(m.key, n.key) for m, n in pairs] == [
        (f"{f}:core/AddNot#1", f"{f}:core/AddNot#2"),
        (f"{f}:core/AddNot#2", f"{f}:core/AddNot#3"),
        (f"{f}:core/NumberReplacer#0", f"{f}:core/NumberReplacer#0")]
    assert lost == [f"{f}:core/AddNot#0"]
    notes = {f"{f}:core/AddNot#2": {"line": 20, "verdict": "equivalent", "why": "same"},
             f"{f}:core/NumberReplacer#0": {"line": 29, "verdict": "gap", "why": "stale"}}
    assert verdicts.carry_annotations(notes, pairs) == {
        f"{f}:core/AddNot#3": {"line": 25, "verdict": "equivalent", "why": "same"}}


NOTES = {"refimpl/engine.py:core/AddNot#3": {"line": 40, "verdict": "equivalent", "why": "same"},
         "refimpl/engine.py:core/AddNot#4": {"line": 41, "verdict": "gap", "why": "unreached"}}


def test_an_annotated_equivalent_survivor_leaves_the_denominator():
    o = verdicts.annotate(outcome("survived"), NOTES)
    assert (o.status, o.why) == ("equivalent", "same")
    gap = verdicts.annotate(outcome("survived", key="refimpl/engine.py:core/AddNot#4", line=41),
                         NOTES)
    assert (gap.status, gap.why) == ("survived", "unreached")
    killed = verdicts.annotate(outcome("killed", first=3), NOTES)
    assert (killed.status, killed.why) == ("killed", "")


def test_an_annotation_for_another_line_is_stale_and_changes_nothing():
    o = verdicts.annotate(outcome("survived", line=52), NOTES)
    assert o.status == "survived"
    assert o.why.startswith("(stale annotation for line 40)")


def test_summary_kill_rate_counts_only_judged_non_equivalent_mutants():
    outcomes = ([outcome("killed", first=f) for f in (1, 4, 30, 250)]
                + [outcome("survived"), outcome("equivalent"), outcome("unjudged")])
    s = verdicts.summarize(outcomes)
    assert (s["killed"], s["survived"], s["equivalent"], s["unjudged"]) == (4, 1, 1, 1)
    assert s["kill_rate"] == 0.8
    assert s["first_catch"] == {"min": 1, "median": 30, "max": 250, "at_1": 1,
                                "within_10": 2, "within_100": 3}
    assert s["by_module"] == {"refimpl/engine.py": {"killed": 4, "survived": 1, "equivalent": 1,
                                                     "unjudged": 1}}
    assert verdicts.summarize([outcome("unjudged")])["kill_rate"] is None


def notes_file(mutants) -> str:
    return json.dumps({"source": "abc", "mutants": mutants})


@pytest.mark.parametrize("text", [
    "[]",
    "{not json",
    json.dumps({"k": {"line": 40, "verdict": "gap", "why": "x"}}),      # no source
    notes_file({"k": {"line": "40", "verdict": "gap", "why": "x"}}),
    notes_file({"k": {"line": 40, "verdict": "maybe", "why": "x"}}),
    notes_file({"k": {"line": 40, "verdict": "gap"}}),
])
def test_a_malformed_annotations_file_is_bad_input(tmp_path, text):
    path = tmp_path / "notes.json"
    path.write_text(text)
    with pytest.raises(verdicts.UsageError):
        verdicts.load_annotations(path)


@pytest.mark.parametrize("argv, message", [
    (["--modules", "conformance/cli.py"], "only refimpl's modules"),
    (["--modules", "refimpl/nosuch.py"], "not a Python file"),
    (["--modules", "refimpl/node.py", "refimpl/node.py"], "named twice"),
    (["--json", "/nonexistent-folder/x.json"], "no folder"),
    (["--same-as", "earlier.json", "--sample", "5"], "give no --sample"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert bench.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "not a result file"),
    ('{"source": "abc", "results": []}', "needs the source commit"),
    ('{"source": "' + "0" * 40 + '", "results": [{"key": 3}, {}]}', "every result needs"),
])
def test_a_malformed_same_as_file_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (extra 'mutation')")
    earlier = tmp_path / "earlier.json"
    earlier.write_text(content, encoding="utf-8")
    assert bench.main(["--same-as", str(earlier), "--modules", "refimpl/hooks.py"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_bad_flag_values_exit_2(capsys):
    assert bench.main(["--sample", "0"]) == 2
    assert "--sample" in capsys.readouterr().err


def _files_of(commit: str, modules: list[str], folder: Path) -> None:
    """Write `modules` as they are at `commit` under `folder`; skip when the clone lacks it."""
    for module in modules:
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{module}"],
                               capture_output=True, text=True, check=False)
        if shown.returncode:
            pytest.skip(f"commit {commit[:7]} is not in this clone's history")
        (folder / module).parent.mkdir(parents=True, exist_ok=True)
        (folder / module).write_text(shown.stdout, encoding="utf-8")


def test_the_shipped_annotations_name_mutants_of_their_commit_at_their_lines(tmp_path):
    """A survivor's explanation is only worth its mutant: every entry must be a mutant of the
    commit the file names, at the line it names (the script ignores an entry whose line moved)."""
    pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (extra 'mutation')")
    data = json.loads(bench.DEFAULT_ANNOTATIONS.read_text(encoding="utf-8"))
    notes = verdicts.load_annotations(bench.DEFAULT_ANNOTATIONS)
    assert notes, "the annotations file explains no survivor"
    modules = sorted({key.split(":")[0] for key in notes})
    _files_of(data["source"], modules, tmp_path)
    lines = {m.key: m.line
             for m in bench.enumerate_mutants(tmp_path, modules, tmp_path / "s.sqlite")}
    stale = [k for k, note in notes.items() if lines.get(k) != note["line"]]
    assert not stale, f"annotations for mutants that are not at their line: {stale[:5]}"


@pytest.mark.parametrize("seed", [0, 1])
def test_the_shipped_samples_are_what_their_seed_draws_from_their_commit(tmp_path, seed):
    """benchmarks/mutation_samples/ keep the two samples the README's figures judge, for
    `--same-as`: each must be exactly the sample its seed draws from the commit it names."""
    pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (extra 'mutation')")
    path = ROOT / "benchmarks" / "mutation_samples" / f"seed{seed}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (data["sample"], data["sample_seed"]) == (200, seed)
    modules = list(bench.DEFAULT_MODULES)
    _files_of(data["source"], modules, tmp_path)
    mutants = bench.enumerate_mutants(tmp_path, modules, tmp_path / "s.sqlite")
    drawn = [m.key for m in verdicts.sample_mutants(mutants, 200, seed)]
    assert [r["key"] for r in data["results"]] == drawn


def test_enumeration_is_the_same_twice(tmp_path):
    pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (extra 'mutation')")
    module = "refimpl/grad_mode.py"
    (tmp_path / "refimpl").mkdir()
    shutil.copy(ROOT / module, tmp_path / module)
    first = bench.enumerate_mutants(tmp_path, [module], tmp_path / "a.sqlite")
    second = bench.enumerate_mutants(tmp_path, [module], tmp_path / "b.sqlite")
    assert first and sorted(m.key for m in first) == sorted(m.key for m in second)
    assert [m.key for m in verdicts.sample_mutants(first, 5, 1)] == \
        [m.key for m in verdicts.sample_mutants(second, 5, 1)]


META = {"tool": "cosmic-ray 8.7.0", "source": "abc", "gradspec_run": "--count 300"}


def test_resumed_results_must_measure_the_same_thing_and_drop_old_explanations():
    survivor = outcome("equivalent")
    survivor.why = "yesterday's reason"
    data = {**META, "results": [vars(survivor), vars(outcome("killed", key="k", first=2)),
                                vars(outcome("unjudged", key="u"))]}
    got = verdicts.resumable(data, META)
    assert "u" not in got, "an unjudged mutant is judged again"
    assert (got[survivor.key].status, got[survivor.key].why) == ("survived", "")
    assert got["k"].first_catch == 2
    with pytest.raises(verdicts.UsageError, match="source"):
        verdicts.resumable({**data, "source": "other"}, META)
    with pytest.raises(verdicts.UsageError, match="not a result"):
        verdicts.resumable({**META, "results": [{"key": "x"}]}, META)
