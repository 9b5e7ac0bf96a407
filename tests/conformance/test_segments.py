"""Engines that run whole segments: how a program splits into segments, that correct segment and
program engines agree with statement-by-statement torch, and that a divergence only a unit shows
is attributed to its segment and localised by an eager replay (or reported as the unit's)."""
from __future__ import annotations

import functools
import json

import pytest

from conformance.engines import load_engine
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.judge.localise import UNIT, localise
from conformance.judge.segments import STRAIGHT, predicted_to_raise, split
from conformance.lang.program import Program
from conformance.lang.program import Stmt as S
from conformance.runner import default_source, program_seeds, run_campaign
from tests.broken_engines import (
    no_grad_ignored,
    segment_error_escapes,
    segment_no_grad_after_backward,
    segment_no_grad_ignored,
    segment_program,
    segment_torch,
    segment_unit_fails,
)
from tests.broken_engines._base import Broken
from tests.conformance.test_executor import leaf, obs

PROGRAMS = 50


@functools.cache
def oracle():
    return load_engine("torch")


@functools.cache
def generated() -> tuple[Program, ...]:
    caps = frozenset(oracle().capabilities)
    return tuple(default_source(seed, caps, 20) for seed in program_seeds(11, PROGRAMS))


def divergent(engine):
    """(program, oracle trace, divergences) of every generated program the engine diverges on."""
    out = []
    for p in generated():
        o = execute(p, oracle())
        found = compare(p, o, execute(p, engine))
        if found:
            out.append((p, o, found))
    return out


def two_backwards() -> Program:
    return Program([
        leaf("x", [1.0, 2.0], [2]),
        S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
        S("call", out="l", args=["y"], params={"fn": "sum", "kw": {"dim": None}}),
        S("backward", target="l"),
        obs("x", "grad"),
        S("mode", params={"mode": "enable_grad"}, body=[
            S("call", out="m", args=["x"], params={"fn": "sum", "kw": {"dim": None}}),
            S("backward", target="m"),
        ]),
        S("call", out="z", args=["x", 3.0], params={"fn": "mul"}),
        obs("z", "requires_grad"),
    ])


def test_a_segment_ends_after_a_backward_like_statement_or_a_block_holding_one():
    stmts = two_backwards().statements
    assert [g.id for g in split(stmts)] == ["0-3", "4-5", "6-7"]
    assert [g.index for g in split(stmts)] == [0, 1, 2]
    assert [g.size for g in split(stmts)] == [4, 2, 2]
    assert [p for p, _ in split(stmts)[1].walk()] == ["4", "5", "5.0", "5.1"]
    assert [g.id for g in split(stmts, "program")] == ["0-7"]
    assert split([]) == [] and split([], "program") == []
    with pytest.raises(ValueError, match="granularity"):
        split(stmts, "statement")


def _update_block(*body):
    return S("mode", params={"mode": "no_grad"}, body=list(body))


def test_a_step_takes_the_update_blocks_right_after_its_backward():
    """Granularity "step": forward, loss, backward and the no_grad blocks right after it (the
    update) are one unit; a block holding a backward still ends a unit; a no_grad block that
    does not follow a backward starts nothing."""
    step = [S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
            S("call", out="l", args=["y"], params={"fn": "sum"}),
            S("backward", target="l"),
            _update_block(S("set_grad", target="x", args=[None])),
            _update_block(obs("x", "value"))]
    stmts = [leaf("x", [1.0, 2.0], [2]), *step, *step, obs("x", "value"),
             _update_block(obs("x", "value")), *two_backwards().statements[5:]]
    assert [g.id for g in split(stmts, "step")] == ["0-5", "6-10", "11-13", "14-15"]
    assert [g.id for g in split(stmts, "segment")] == ["0-3", "4-8", "9-13", "14-15"]
    assert [g.id for g in split(step[:4], "step")] == ["0-3"]      # ends at the update
    assert [g.id for g in split(two_backwards().statements, "step")] == ["0-3", "4-5", "6-7"]


@pytest.mark.parametrize("module", [segment_torch, segment_program])
def test_correct_segment_and_program_engines_do_not_diverge(module):
    engine = module.factory()
    for p in generated():
        engine.units.clear()
        trace = execute(p, engine)
        assert compare(p, execute(p, oracle()), trace) == [], p.seed
        segments = split(p.statements, engine.granularity, predicted_to_raise(p.meta))
        assert engine.units == [g.id for g in segments]
        want = {path: g.id for g in segments for path, _ in g.walk()}
        assert {ev.path: ev.segment for ev in trace.events} == want
        assert all(ev.to_json()["segment"] == ev.segment for ev in trace.events)


def test_per_statement_engines_record_no_segments():
    trace = execute(two_backwards(), segment_torch.factory().eager())
    assert all(ev.segment is None and "segment" not in ev.to_json() for ev in trace.events)
    o = execute(two_backwards(), oracle())
    assert [d.to_json() for d in compare(two_backwards(), o, trace)] == []


def test_a_divergence_only_the_unit_shows_is_attributed_to_its_segment():
    engine = segment_no_grad_after_backward.factory()
    found = divergent(engine)
    assert len(found) >= 5
    at_the_unit = 0
    for p, o, divs in found:
        ids = [g.id for g in split(p.statements, alone=predicted_to_raise(p.meta))]
        # shown by the unit itself, or by a later observation of what it did (a grad_fn,
        # read by the closing sweep): never before it
        assert all(d.segment in ids[1:] for d in divs), (p.seed, str(divs[0]))
        at_the_unit += divs[0].segment == ids[1]
        assert localise(p, o, engine) == UNIT     # statement by statement it is torch
    assert at_the_unit >= 5


def test_a_unit_that_fails_as_a_whole_marks_its_unfinished_statements():
    engine = segment_unit_fails.factory()
    found = divergent(engine)
    assert len(found) >= 5
    for p, o, divs in found:
        long = [g for g in split(p.statements, alone=predicted_to_raise(p.meta))
                if g.size > segment_unit_fails.LONGEST]
        by_path = execute(p, engine).by_path()
        for path, _ in long[0].walk():
            ev = by_path[path]
            assert ev.status == "error" and ev.segment == long[0].id
            assert ev.message.startswith(f"segment {long[0].id} failed as a unit: RuntimeError")
        assert divs[0].segment == long[0].id
        assert localise(p, o, engine) == UNIT


def test_a_statement_gradspec_cannot_express_is_a_harness_error_in_a_unit_too():
    p = Program([leaf("x", [1.0], [1]), S("no_such_op", out="y", target="x"),
                 S("backward", target="x"), obs("x", "grad")])
    trace = execute(p, segment_torch.factory())
    assert [(ev.status, ev.segment) for ev in trace.events] == [
        ("ok", "0-2"), ("harness", "0-2"), ("ok", "0-2"), ("ok", "3-3")]


class FailsAfterBody(Broken):
    """Runs each unit's body, then raises: the failure lands on the unit's last statement."""

    granularity = "segment"

    def run_segment(self, body, segment):
        body()
        raise RuntimeError("the unit could not be finished")


def test_a_unit_that_fails_after_its_body_ran_fails_on_its_last_statement():
    trace = execute(two_backwards(), FailsAfterBody())
    bad = [ev.path for ev in trace.events if ev.status == "error"]
    assert bad == ["3", "5", "7"]
    assert [ev.path for ev in trace.events] == [p for p, _ in two_backwards().walk()]
    assert trace.by_path()["5.1"].status == "ok"


def test_the_eager_replay_localises_a_divergence_the_statements_make():
    engine = segment_no_grad_ignored.factory()
    found = divergent(engine)
    assert len(found) >= 3
    for p, o, divs in found:
        eager = compare(p, o, execute(p, no_grad_ignored.factory()))
        assert localise(p, o, engine) == eager[0].path == divs[0].path


def test_a_campaign_reports_the_segment_and_where_the_replay_localised_it(tmp_path):
    report = run_campaign("tests.broken_engines.segment_no_grad_after_backward:factory",
                          "torch", count=6, size=20, seed=3, out_dir=tmp_path, progress=None,
                          probe=False)
    assert report.exit_code == 1 and report.divergences
    data = json.loads((tmp_path / "report.json").read_text())
    for entry in data["divergences"]:
        assert entry["localised_to"] == UNIT and entry["segment"]
        assert f"segment {entry['segment']}" in entry["first"].splitlines()[0]
        assert "eager replay does not diverge" in entry["first"].splitlines()[0]
    # seed 4: 4 of its 6 programs diverge at generator vocabulary 10 (a new vocabulary draws
    # other programs: pick again if this finds none)
    plain = run_campaign("tests.broken_engines.no_grad_ignored:factory", "torch", count=6,
                         size=20, seed=4, out_dir=tmp_path / "plain", progress=None, probe=False)
    assert plain.divergences
    assert all("localised_to" not in d and "segment" not in d for d in plain.divergences)


@pytest.mark.parametrize("size", [1, 2, STRAIGHT, STRAIGHT + 1, STRAIGHT + 2, 2 * STRAIGHT + 7])
def test_a_unit_runs_each_of_its_statements_once_in_order_whatever_its_length(size):
    """The body is written out, STRAIGHT statements a call (segments.py): a unit of any length
    runs every statement once, in order, as statement by statement; a failing unit marks the
    statements after its last finished one (here none finished: all of them)."""
    stmts = [leaf("x", [1.0, 2.0], [2])] + [
        S("call", out=f"y{i}", args=[f"y{i - 1}" if i else "x", 1.0], params={"fn": "add"})
        for i in range(size - 1)]
    p = Program(stmts)
    engine = segment_program.factory()
    trace = execute(p, engine)
    assert engine.units == [f"0-{size - 1}"]
    assert [ev.path for ev in trace.events] == [str(i) for i in range(size)]
    assert compare(p, execute(p, oracle()), trace) == []

    class FailsBeforeBody(Broken):
        granularity = "program"

        def run_segment(self, body, segment):
            raise RuntimeError("the unit could not start")
    failed = execute(p, FailsBeforeBody())
    assert [(ev.path, ev.status) for ev in failed.events] == [
        (str(i), "error") for i in range(size)]


class NotStarted(RuntimeError):
    """A unit refused before any of it ran."""


class RefusesUnitsWithAnInPlaceWrite(Broken):
    """Refuses, before running it, every unit of more than one statement that holds an in-place
    write (as a compiler that cannot compile code in which an op raises), and says so through
    `unit_not_started`; with `says` False it does not say so."""

    granularity = "segment"
    says = True

    def run_segment(self, body, segment):
        if segment.size > 1 and any(s.op == "inplace" for _, s in segment.walk()):
            raise NotStarted("cannot compile this unit")
        body()

    def unit_not_started(self, exc):
        return self.says and isinstance(exc, NotStarted)


def test_a_unit_refused_before_it_ran_reruns_its_statements_so_errors_stay_on_theirs():
    p = Program([leaf("x", [1.0, 2.0], [2]),
                 S("call", out="y", args=["x", 2.0], params={"fn": "mul"}),
                 S("inplace", target="x", args=[1.0], params={"fn": "add_"}),   # a leaf: raises
                 S("call", out="z", args=["y", 3.0], params={"fn": "mul"}),
                 S("call", out="l", args=["z"], params={"fn": "sum", "kw": {"dim": None}}),
                 S("backward", target="l"), obs("x", "grad")])
    o = execute(p, oracle())
    assert [ev.status for ev in o.events] == ["ok", "ok", "error", "ok", "ok", "ok", "ok"]
    engine = RefusesUnitsWithAnInPlaceWrite()
    trace = execute(p, engine)
    assert compare(p, o, trace) == []
    assert [ev.segment for ev in trace.events] == ["0-5"] * 6 + ["6-6"]
    engine.says = False         # the unit failed as a whole: every statement of it errs
    trace = execute(p, engine)
    assert [ev.status for ev in trace.events] == ["error"] * 6 + ["skipped"]   # x is dead


def test_a_statement_left_alone_is_a_unit_of_its_own_at_every_granularity():
    stmts = two_backwards().statements      # units 0-3, 4-5, 6-7
    assert [g.id for g in split(stmts, "segment", frozenset({2}))] == [
        "0-1", "2-2", "3-3", "4-5", "6-7"]
    assert [g.id for g in split(stmts, "segment", frozenset({0, 3, 7}))] == [
        "0-0", "1-2", "3-3", "4-5", "6-6", "7-7"]
    assert [g.id for g in split(stmts, "program", frozenset({5}))] == ["0-4", "5-5", "6-7"]
    assert [g.id for g in split(stmts, "program", frozenset({99}))] == ["0-7"]
    for granularity in ("segment", "program", "step"):     # every statement once, in order
        for alone in (frozenset(), frozenset({1}), frozenset(range(8))):
            units = split(stmts, granularity, alone)
            assert [i for g in units for i in range(g.first, g.last + 1)] == list(range(8))
            assert all(g.size == 1 for g in units if g.first in alone)


def test_statements_the_generator_predicts_raise_are_read_from_meta_defensively():
    assert predicted_to_raise({"expect": {"3": "LEAF_INPLACE", "10.1": "GRAPH_FREED"}}) == {
        3, 10}
    for meta in ({}, {"expect": None}, {"expect": ["3"]}, {"expect": {"x": "A", "-1": "B",
                                                                       "1e3": "C", "9" * 9: "D"}}):
        assert predicted_to_raise(meta) == frozenset(), meta
    drawn = [p for p in generated() if p.meta.get("expect")]
    assert len(drawn) >= 10
    for p in drawn:         # each a unit of its own, where a backward-like one ends anyway
        alone = predicted_to_raise(p.meta)
        assert {int(path.split(".")[0]) for path in p.meta["expect"]} == alone
        units = split(p.statements, "segment", alone)
        assert all(any(g.id == f"{i}-{i}" for g in units) for i in alone)


def test_a_unit_whose_error_escapes_it_is_rerun_with_its_statements_alone():
    """No prediction to go by (meta dropped): the unit fails, the program runs again with that
    unit's statements each a unit, and that run, which explains the failure, is the trace."""
    engine = segment_error_escapes.factory()
    checked = 0
    for p in generated():
        bare = Program(p.statements, seed=p.seed)
        o = execute(bare, oracle())
        if not any(ev.status == "error" and ev.op == "inplace" for ev in o.events):
            continue
        engine.units.clear()
        trace = execute(bare, engine)
        assert compare(bare, o, trace) == [], p.seed
        assert [ev.status for ev in trace.events] == [ev.status for ev in o.events]
        reran = [u for u in engine.units if u == "0-0" or u.startswith("0-")]
        assert len(reran) >= 2, engine.units        # the program ran from its start again
        checked += 1
    assert checked >= 3


class FailsWithASpecKind(Broken):
    """Every unit of several statements fails after its body with LEAF_INPLACE's error, which
    none of its statements raises alone: a rerun does not explain the failure, which stays."""

    granularity = "segment"

    def run_segment(self, body, segment):
        body()
        if segment.size > 1:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")


def test_a_unit_failure_no_statement_explains_stays_the_unit_s():
    p = two_backwards()
    trace = execute(p, FailsWithASpecKind())
    bad = [(ev.path, ev.error) for ev in trace.events if ev.status == "error"]
    assert bad == [("3", "LEAF_INPLACE"), ("5", "LEAF_INPLACE"), ("7", "LEAF_INPLACE")]
    assert trace.by_path()["3"].message.startswith("segment 0-3 failed as a unit")
