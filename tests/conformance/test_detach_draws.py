"""Generator vocabulary 20 draws `detach_()` (the statement kind detach_, kinds/flags.py): on a
tensor that is no view, owns its memory and was never written, and inside inference mode on
any tensor made outside it; and its two errors (gen/errors_detach.py). Its programs agree on
torch and refimpl, the model predicts every outcome after a detach_(), and an engine that gets
detach_() wrong is told so under VER-16, VIEW-8 or INPLACE-1."""
from __future__ import annotations

import collections
import importlib

import pytest

from conformance.engines import load_engine
from conformance.gen.vocabulary import NOT_GENERATED
from conformance.judge.compare import compare
from conformance.judge.executor import execute
from conformance.lang.program import Program, ProgramError, Stmt
from conformance.lang.validate import validate
from conformance.reports.render import render
from tests.conformance.blame import (
    assert_drawn_only_where_declared,
    blamed,
    drawn_with,
    first_of,
)

SEEDS = range(500)


@pytest.fixture(scope="module")
def drawn() -> list[tuple[int, Program]]:
    return drawn_with("detach_", SEEDS)


def test_detach_is_drawn_from_vocabulary_20_where_declared(drawn):
    assert len(drawn) >= 40, len(drawn)         # 53 of seeds 0-499
    assert_drawn_only_where_declared(drawn, "detach_", "detach_inplace", since=20)
    for cid in ("VIEW-8", "VER-16"):
        assert cid not in NOT_GENERATED


def test_the_model_predicts_what_follows_and_torch_and_refimpl_agree(drawn):
    """Every outcome from the first detach_() on is the model's, the passes that find a saved
    input detached included."""
    torch, ref = load_engine("torch"), load_engine("refimpl")
    outcomes: collections.Counter[tuple[str, str | None]] = collections.Counter()
    for seed, p in drawn:
        oracle = execute(p, torch)
        first = first_of(p, "detach_")
        for i, ((path, s), ev) in enumerate(zip(p.walk(), oracle.events, strict=True)):
            got = ev.error if ev.status == "error" else None
            if i >= first:
                assert got == p.meta["expect"].get(path), (seed, path, s.op, got)
            if s.op == "detach_" or got == "SAVED_DETACHED_INPLACE":
                outcomes[(s.op, got)] += 1
        assert compare(p, oracle, execute(p, ref)) == [], seed
    # seeds 0-499: {(detach_, None): 43, (detach_, DETACH_VIEW_INPLACE): 16,
    # (backward, SAVED_DETACHED_INPLACE): 4, (grad, SAVED_DETACHED_INPLACE): 5}
    assert outcomes[("detach_", None)] >= 30, outcomes
    assert outcomes[("detach_", "DETACH_VIEW_INPLACE")] >= 10, outcomes
    assert outcomes[("backward", "SAVED_DETACHED_INPLACE")] + \
        outcomes[("grad", "SAVED_DETACHED_INPLACE")] >= 6, outcomes


def test_each_case_of_the_clauses_is_drawn(drawn):
    """Outside inference mode on a leaf that requires grad (INPLACE-1, LEAF-16), on a non-leaf
    (VER-16), and inside inference mode, where it changes nothing."""
    tags = collections.Counter()
    for _, p in drawn:
        inside = {path for path, s in p.walk() if s.op == "mode"
                  and s.params.get("mode") == "inference_mode"}
        for path, s in p.walk():
            if s.op == "detach_":
                mode = "inference" if any(path.startswith(b + ".") for b in inside) else "out"
                tags.update((mode, c) for c in s.clauses)
    assert tags[("out", "VER-16")] >= 10 and tags[("out", "VIEW-8")] >= 6, tags
    assert tags[("out", "LEAF-16")] >= 2 and tags[("out", "INPLACE-1")] >= 4, tags
    assert tags[("inference", "VER-16")] + tags[("inference", "VIEW-8")] >= 1, tags


def test_a_repro_script_spells_it(drawn):
    _, p = drawn[0]
    script = render(p, guard_all=True)
    assert ".detach_()" in script
    compile(script, "repro.py", "exec")


def test_a_malformed_detach_statement_is_refused_with_its_field():
    leaf = Stmt("leaf", out="t0", params={"values": [1.0], "shape": [1], "dtype": "float32",
                                         "requires_grad": True})
    with pytest.raises(ProgramError, match="target"):
        validate(Program([leaf, Stmt("detach_", target=None)]))
    with pytest.raises(ProgramError, match="t9"):
        validate(Program([leaf, Stmt("detach_", target="t9")]))


# ---- engines that get detach_() wrong ----------------------------------------------------
def _saved_never_checked(monkeypatch):
    """A fault: a saved input detached in place since is used as saved (VER-16)."""
    import refimpl.node as node
    real = node.SavedValue.__init__

    def init(self, *a, **k):
        real(self, *a, **k)
        self.nonleaf = False
    monkeypatch.setattr(node.SavedValue, "__init__", init)


def _views_detach(monkeypatch):
    """A fault: detach_() on a view detaches it, as on any tensor (VIEW-8)."""
    tensor = importlib.import_module("refimpl.tensor")     # refimpl.tensor is also a function

    def detach_(self):
        self._grad_fn, self._requires_grad, self._output_nr = None, False, 0
        return self
    monkeypatch.setattr(tensor.Tensor, "detach_", detach_)


def _keeps_requires_grad(monkeypatch):
    """A fault: detach_() drops the history but leaves requires_grad as it was."""
    tensor = importlib.import_module("refimpl.tensor")
    real = tensor.Tensor.detach_

    def detach_(self):
        was = self._requires_grad
        real(self)
        self._requires_grad = was
        return self
    monkeypatch.setattr(tensor.Tensor, "detach_", detach_)


@pytest.mark.parametrize("fault, clauses", [(_saved_never_checked, {"VER-16"}),
                                            (_views_detach, {"VIEW-8"}),
                                            (_keeps_requires_grad, {"VER-16", "INPLACE-1"})],
                         ids=["saved-never-checked", "views-detach", "keeps-requires-grad"])
def test_an_engine_that_gets_it_wrong_is_blamed_under_its_clause(drawn, monkeypatch, fault,
                                                                  clauses):
    primaries = blamed([p for _, p in drawn], fault, monkeypatch)
    assert primaries and primaries.most_common(1)[0][0] in clauses, primaries
