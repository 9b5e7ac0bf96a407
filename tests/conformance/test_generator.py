"""Tests of the program generator (conformance/generate.py, conformance/strategies.py):
determinism, coverage of every statement kind, op and error kind of spec/errors.md, clause
tags, capabilities, how often programs fail on purpose, and shrinking under Hypothesis."""
from __future__ import annotations

import collections
import functools
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.engines import load_engine
from conformance.executor import execute
from conformance.generate import (
    ALL_CAPABILITIES,
    ERROR_MOVES,
    GENERATOR_VERSION,
    INEXPRESSIBLE,
    NOT_GENERATED,
    generate,
    program_for_seed,
)
from conformance.generate import programs as gen_programs
from conformance.lang import ops
from conformance.program import FUNCTIONS, INPLACE, OBSERVABLES, OPS, VIEWS, Program
from conformance.spec.capabilities import closure
from conformance.specdoc import load_errors, load_spec
from conformance.strategies import HypothesisChooser

SEEDS = range(300)
# Clauses no program can exercise: they need what program.py cannot express (rebinding a
# name, Python control flow on values), or they are statements about what the spec leaves open.


@functools.cache
def programs(caps: tuple[str, ...] = ALL_CAPABILITIES, size: int = 20) -> tuple[Program, ...]:
    return tuple(program_for_seed(s, caps, size) for s in SEEDS)


@functools.cache
def torch_traces():
    torch = load_engine("torch")
    return tuple(execute(p, torch) for p in programs())


def test_same_seed_same_program():
    for seed in range(30):
        assert program_for_seed(seed).dumps() == program_for_seed(seed).dumps()
    assert program_for_seed(1).dumps() != program_for_seed(2).dumps()


def test_programs_round_trip_through_json():
    for p in programs()[:50]:
        assert Program.loads(p.dumps()).dumps() == p.dumps()


def test_size_is_about_n_statements():
    # The last step may be a focus move (several statements, gen/focus.py: the longest, the
    # second derivative of gen/higher.py, up to 16) or a grad-mode block of up to three steps
    # (kinds/modes.py), and the closing sweep is one more. Most programs end close to their
    # size (at vocabulary 16, seeds 0-39: median 2 to 3 over, mean 2.7 to 3.8, most 19).
    # From vocabulary 22 some programs end with a module's zero_grad over fresh parameters
    # (gen/modules.py), a program of its own after the drawn steps: not counted here.
    for size in (5, 20, 40):
        counts = [sum(1 for _ in itertools.takewhile(lambda ps: ps[1].op != "parameter",
                                                     program_for_seed(s, None, size).walk()))
                  for s in range(40)]
        over = sorted(c - size for c in counts)
        assert over[0] >= 0 and over[-1] <= 2 + 3 * 16, (size, counts)
        assert over[len(over) // 2] <= 6 and sum(over) <= 8 * len(over), (size, counts)


def test_every_statement_kind_op_and_observable_appears():
    seen: dict[str, set] = collections.defaultdict(set)
    # twice the usual seeds: vocabulary 4 has 61 ops to draw, some of them about once in
    # a hundred programs
    for p in programs() + tuple(program_for_seed(s, ALL_CAPABILITIES, 20)
                                for s in range(len(SEEDS), 2 * len(SEEDS))):
        for _, s in p.walk():
            seen["op"].add(s.op)
            fn = s.params.get("fn")
            if s.op == "call":
                seen["call"].add(fn)
            elif s.op == "view":
                seen["view"].add(fn)
            elif s.op == "inplace":
                seen["inplace"].add(fn)
            elif s.op == "observe":
                seen["observe"].add(s.params["what"])
            elif s.op == "hook":
                seen["hook"].add(s.params["behaviour"])
            elif s.op == "mode":
                seen["mode"].add(s.params["mode"])
                seen["mode"].add("decorator" if s.params.get("decorator") else "with")
            elif s.op == "node_hook":
                seen["node_hook"].add((s.params["kind"], s.params["behaviour"]))
            elif s.op == "post_hook":
                seen["post_hook"].add(s.params.get("behaviour", "record"))
            elif s.op == "backward":
                seen["backward"].update(k for k, v in s.params.items() if v)
                if s.args:
                    seen["backward"].add("gradient")
            elif s.op == "sweep":
                seen["observe"].update(what for _, what, _ in s.params["of"])
            elif s.op == "leaf":
                seen["dtype"].add(s.params["dtype"])
                seen["shape"].add(len(s.params["shape"]))
    assert seen["op"] == set(OPS)
    drawn = {r.name for r in ops.OPS if r.since <= GENERATOR_VERSION}  # not later vocabularies
    assert seen["call"] == set(FUNCTIONS) & drawn
    assert seen["view"] == set(VIEWS)
    assert seen["inplace"] == set(INPLACE) & drawn
    assert seen["observe"] == set(OBSERVABLES)
    assert seen["hook"] == {"record", "scale", "wrong_shape", "wrong_dtype", "non_tensor"}
    assert seen["mode"] == {"no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "with",
                            "decorator"}
    assert seen["node_hook"] == {(k, b) for k in ("pre", "post")
                                 for b in ("record", "scale", "extra", "list")}
    assert seen["post_hook"] == {"record", "return"}
    assert {"retain_graph", "inputs", "gradient"} <= seen["backward"]
    assert {"float32", "float64", "int64"} <= seen["dtype"] and {0, 1, 2} <= seen["shape"]


def test_every_error_kind_is_provoked_on_torch():
    """Every kind of spec/errors.md that a program can express really happens on torch."""
    kinds = set(load_errors())
    assert set(ERROR_MOVES) | set(INEXPRESSIBLE) >= kinds - {"NONLEAF_GRAD_ACCESS"}, \
        "spec/errors.md has a kind the generator neither provokes nor lists as inexpressible"
    happened = collections.Counter()
    for tr in torch_traces():
        for ev in tr.events:
            if ev.status == "error":
                happened[ev.error] += 1
            happened.update(ev.warnings)
    missing = kinds - set(INEXPRESSIBLE) - set(happened)
    if missing == {"BACKWARD_EMPTY_INPUTS"} and not _executor_keeps_empty_inputs():
        pytest.xfail("the executor passes backward(inputs=[]) as inputs=None")
    assert not missing, f"never raised over {len(SEEDS)} programs: {sorted(missing)}"


def _executor_keeps_empty_inputs() -> bool:
    p = Program.from_json({"gradspec_program": 1, "statements": [
        {"op": "leaf", "out": "x", "params": {"values": [1.0], "shape": [], "dtype": "float64",
                                             "requires_grad": True}},
        {"op": "call", "out": "y", "args": ["x", "x"], "params": {"fn": "mul"}},
        {"op": "backward", "target": "y", "params": {"inputs": []}}]})
    return execute(p, load_engine("torch")).events[-1].status == "error"


def test_programs_are_mostly_valid_and_errors_deliberate():
    total = errors = skipped = right = predicted = 0
    for p, tr in zip(programs(), torch_traces(), strict=True):
        expect = p.meta["expect"]
        for ev in tr.events:
            total += 1
            errors += ev.status == "error"
            skipped += ev.status == "skipped"
            if ev.status != "skipped":
                got = ev.error if ev.status == "error" else None
                predicted += 1
                right += expect.get(ev.path) == got
    assert errors / total < 0.10, f"{errors} of {total} statements raise"
    assert skipped / total < 0.01, f"{skipped} of {total} statements skipped"
    assert right / predicted > 0.99, f"the model predicts {right} of {predicted} outcomes"


def test_the_model_follows_a_backward_into_an_expanded_grad():
    """SELF_OVERLAPPING_WRITE is raised by the leaf's accumulator, the last node to run: the
    nodes before it have freed what they saved, so the move's results are never used again
    (a later pass through them would raise GRAPH_FREED, which the model would not predict)."""
    seen = 0
    for seed in range(600):
        p = program_for_seed(seed, ALL_CAPABILITIES, 20)
        if "SELF_OVERLAPPING_WRITE" not in p.meta["expect"].values():
            continue
        seen += 1
        # from the move on: what comes before it the model predicts as it does anywhere (a
        # pass over a freed node after one that fails a version check, say, is predicted
        # GRAPH_FREED: model/graph.py `predict` ranks the kinds, not the order nodes run in)
        move = next(i for i, (path, _) in enumerate(p.walk())
                    if p.meta["expect"].get(path) == "SELF_OVERLAPPING_WRITE")
        for ev in execute(p, load_engine("torch")).events[move:]:
            got = ev.error if ev.status == "error" else None
            assert ev.status == "skipped" or p.meta["expect"].get(ev.path) == got, \
                (seed, ev.path, got)
    assert seen >= 10, seen     # 9 in seeds 0-399 at vocabulary 17


def test_clause_tags_are_spec_clauses_and_cover_the_spec():
    spec = load_spec()
    # rare clauses (HOOK-14: hooks of two leaves ready at once) need a few hundred programs
    tagged = collections.Counter(c for s in range(600) for c in program_for_seed(s).clauses())
    assert set(tagged) <= set(spec.clauses)
    unspec = {c for c in spec.clauses if c.startswith("UNSPEC-")}
    never = set(spec.clauses) - set(tagged) - unspec - set(NOT_GENERATED)
    assert not never, f"clauses no generated program exercises: {sorted(never)}"


@pytest.mark.parametrize("missing", [c for c in ALL_CAPABILITIES if c != "core"])
def test_capabilities_are_respected(missing):
    caps = tuple(c for c in ALL_CAPABILITIES if c != missing)
    for p in programs(caps, 20)[:120]:
        assert missing not in p.capabilities()
        for _, s in p.walk():
            if missing == "retain_graph":
                assert not s.params.get("retain_graph")
            if missing == "warnings" and s.op == "observe":
                assert s.params["what"] != "grad" or "RETAIN-7" not in s.clauses
        for kind in p.meta["expect"].values():
            assert missing not in ERROR_MOVES.get(kind, ()), kind
        if missing == "backward_inputs":
            assert not any(s.op == "backward" and s.params.get("inputs") is not None
                           for _, s in p.walk())


@pytest.mark.parametrize("missing", [c for c in ALL_CAPABILITIES if c != "core"])
def test_tags_name_only_clauses_the_engine_can_exercise(missing):
    """A statement is tagged with a clause only if the capabilities include all the clause
    `requires` (spec metadata; a coarse capability implies its finer ones), so that reports
    never show an engine exercising a clause it cannot."""
    spec = load_spec()
    caps = closure(set(ALL_CAPABILITIES) - {missing})
    for p in programs(tuple(sorted(caps)), 20)[:60]:
        for path, s in p.walk():
            for c in s.clauses:
                assert set(spec.clauses[c].requires) <= caps | {"core"}, (path, s.op, c)


def test_core_only_programs_use_core_statements():
    for p in programs(("core",), 20)[:100]:
        assert p.capabilities() == ["core"]


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_hypothesis_chooser_draws_valid_programs(data):
    p = generate(HypothesisChooser(data), ALL_CAPABILITIES, 15)
    assert Program.loads(p.dumps()).dumps() == p.dumps()


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(gen_programs(ALL_CAPABILITIES, 15))
def test_program_strategy_draws_valid_programs(p):
    assert Program.loads(p.dumps()).dumps() == p.dumps()


def test_hypothesis_shrinks_to_a_short_program():
    """A program with a second backward through a freed graph shrinks to a few statements."""
    # the same draws whatever ran before in this process (the plugin turns Hypothesis's
    # literals-from-imported-modules off for its derandomized profile, for good)
    from conformance.pytest_plugin import _without_local_constants
    _without_local_constants()
    failing: list[Program] = []

    @settings(max_examples=1000, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(gen_programs(ALL_CAPABILITIES, 12))
    def search(p):
        # the model's prediction stands in for running torch: shrinking runs this many times
        if "GRAPH_FREED" in p.meta["expect"].values():
            failing.append(p)
            raise AssertionError("found")

    with pytest.raises(AssertionError):
        search()
    # the end-of-program sweep (vocabulary 3) is not a statement shrinking can drop; 5 are
    # needed (a leaf, an op, its sum, two backward passes). Vocabulary 2 shrank to 7 here;
    # vocabulary 3 (a fixed number of steps, focus moves, roots joined with other graphs)
    # shrinks to 14, vocabulary 11 (four more scenarios in the focus table) to 15: a
    # regression to win back (gradspec run also shrinks with its own minimizer, the pytest
    # profile only with Hypothesis's). Where shrinking ends depends on the derandomized seed,
    # which Hypothesis takes from this function: the same search in another function ends
    # at 8 statements at vocabulary 11
    smallest = min(sum(1 for _, s in p.walk() if s.op != "sweep") for p in failing)
    assert smallest <= 15, failing[-1].dumps()


def test_no_hook_drawn_where_a_write_may_have_reached_the_view():
    """torch 2.13 crashes registering a hook on a view whose version counter moved since it
    was made (docs/findings.md, torch-1). The model calls `t1[0, -2].reshape(1)` a copy (it
    cannot prove the 0-d index contiguous), torch makes it a view: a write through its
    `detach()` reaches t1's counter, so the view t1[0, -2] is not hookable after it. Seed 1181
    drew that hook before the model learnt to doubt; its program must now run on torch."""
    import subprocess
    import sys
    code = (
        "from conformance.engines import load_engine\n"
        "from conformance.executor import execute\n"
        "from conformance.generate import program_for_seed\n"
        "o, e = load_engine('torch'), load_engine('refimpl')\n"
        "caps = frozenset(o.capabilities) & frozenset(e.capabilities)\n"
        "for size in (20, 40):\n"
        "    execute(program_for_seed(1181, caps, size), o)\n"
        "print('ran')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert (r.returncode, r.stdout.strip()) == (0, "ran"), (r.returncode, r.stderr[-500:])
