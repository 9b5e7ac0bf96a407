"""What the generator does for an engine's finer declarations (conformance/spec/capabilities.py):
the ops it lacks, and views that copy.

Ops an engine lacks are left out of the op tables a draw picks from (lang/ops.py, `weights`;
the view options of kinds/tensors.py). Scenarios and error moves that spell an op themselves
(a product by a number, a transpose, `copy_`) are not rewritten one by one: a program that
names a lacked op anyway is drawn again from the next seed of its stream (`redrawn`), so that no
program for such an engine names one, and a program for an engine that lacks none is drawn as
it always was.

Views that copy (`view_ops` without `views`): `Gen.view_shared` says which tensors a view op
reached, whose aliasing an in-place write or their `version` would show; the draws leave those
out (Gen.inplace_ok, kinds/inplace.py, kinds/observe.py).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from ..lang.program import Program
from ..model import T
from ..spec.capabilities import lacked_ops
from .strategies import NoOptions

# the statement kinds whose params.fn is a row of the op table
OP_KINDS = ("call", "view", "inplace")
# programs drawn for one seed before giving up: each is a fresh draw, and a lacked op that
# only rare scenarios spell is in a few programs in a hundred
REDRAWS = 64
_STRIDE = 1 << 48       # program seeds are 48 bits (campaign.runner.program_seeds): apart


def ops_used(program: Program) -> set[str]:
    """The ops of the op table a program's statements name."""
    return {s.params.get("fn") for _, s in program.walk() if s.op in OP_KINDS}


def redrawn(draw: Callable[[int], Program], seed: int, caps: Iterable[str]) -> Program:
    """draw(seed), or where it names an op the capabilities lack, or a draw found every op
    it could name lacked (NoOptions), the first of draw(seed + k * 2**48), k = 1, 2, ... that
    names none; ValueError after REDRAWS."""
    lacked = lacked_ops(caps)
    if not lacked:
        return draw(seed)
    for k in range(REDRAWS + 1):
        try:
            program = draw(seed + k * _STRIDE)
        except NoOptions:
            continue
        if not ops_used(program) & lacked:
            return program
    raise ValueError(f"no program without the lacked ops {', '.join(sorted(lacked))} in "
                     f"{REDRAWS} draws of seed {seed}")


def honoured(strategy, caps: Iterable[str]):
    """A Hypothesis strategy of programs less those that name an op the capabilities lack
    (the redraw of `redrawn`, as Hypothesis does it)."""
    lacked = lacked_ops(caps)
    return strategy.filter(lambda p: not ops_used(p) & lacked) if lacked else strategy


def view_shared(tensors: Iterable[T], t: T) -> bool:
    """Whether t's memory is one a view op reached (t is a view, or one of `tensors` views
    its memory), or one a reshape that the model calls a copy may have viewed (Storage.
    may_reach): where views copy, a write to it or its `version` would show torch's
    aliasing."""
    mem = t.memory()
    if t.base is not None or mem.storage.may_reach or t.storage.may_reach:
        return True
    return any((u.base is not None and u.memory() is mem)
               or mem.storage in u.storage.may_reach or t.storage in u.storage.may_reach
               for u in tensors)
