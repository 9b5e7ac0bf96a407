"""Which tensors the generator may write in place (conformance/model/inplace.py inplace_ok): a
retained output other than the first of a node is never a target, nor a view of one, since torch
2.13 fails an internal assert on the first and crashes at the next backward after the second
(docs/bugs/torch-retain-grad-inplace-second-output.md)."""
from __future__ import annotations

from conformance.model import inplace_ok
from conformance.model.tensors import Storage, T


def _output(output_nr: int, retains: bool) -> T:
    return T("q", (3,), "float32", rg=True, leaf=False, storage=Storage(),
             output_nr=output_nr, retains=retains)


def _view(base: T) -> T:
    v = T("v", (1,), "float32", rg=True, leaf=False, storage=base.storage, base=base,
          origin="view")
    base.views.append(v)
    return v


def test_a_retained_second_output_and_its_views_are_not_written():
    q = _output(1, retains=True)
    assert not inplace_ok(q, True)
    assert not inplace_ok(_view(q), True)


def test_a_first_output_or_one_that_does_not_retain_may_be_written_through_a_view():
    for q in (_output(0, retains=True), _output(1, retains=False)):
        assert inplace_ok(q, True)
        assert inplace_ok(_view(q), True)
