"""The table of scenarios: a few statements that build what one rare behaviour needs, drawn as
focus moves (focus.py draws among them; focus.py and higher.py declare them)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kinds import KINDS
from ..kinds.backward import joined
from ..model import predict, reach

Scenario = Callable[[Any], bool]
# name -> (capabilities it needs, weight in the focus table, the draw), in declaration order:
# focus.py's scenarios, then higher.py's and inference.py's (focus.py imports them after its
# own)
SCENARIOS: dict[str, tuple[tuple[str, ...], int, Scenario]] = {}
# scenario -> (vocabulary, weight from it on): from vocabulary 4 those whose clauses the
# measure still found in fewer than 20 programs of 300 weigh more, and the scenarios of a newer
# vocabulary weigh 0 before it (tests/generator_stats.py)
REWEIGHTED_SCENARIOS: dict[str, tuple[tuple[int, int], ...]] = {}


def scenario(name: str, needs: tuple[str, ...] = (), weight: int = 1,
             reweighted: tuple[tuple[int, int], ...] = ()) -> Callable[[Scenario], Scenario]:
    """Declare a scenario: its name, the capabilities it needs, its weight in the focus
    table (2 for those whose clauses the measure found rarer: tests/generator_stats.py) and
    its (vocabulary, weight) changes."""
    def declare(fn: Scenario) -> Scenario:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name!r} is declared twice")
        SCENARIOS[name] = (needs, weight, fn)
        if reweighted:
            REWEIGHTED_SCENARIOS[name] = reweighted
        return fn
    return declare


def backward_pass(g: Any, t: Any, retain: Any = "draw") -> bool:
    """A backward pass from t (its sum), mostly through a graph joined with others first; none
    when it would raise an error the capabilities do not let a program keep (Gen.ok_kind)."""
    t = joined(g, t)
    if t.node is not None and not g.ok_kind(predict(reach([t.node]))):
        return False
    return g.emit_backward(g.sum_of(t) if t.shape else t, [], retain)


def backward_then_grad(g: Any, x: Any, t: Any) -> bool:
    """A backward pass from t (backward_pass), then a look at x.grad."""
    backward_pass(g, t)
    return KINDS["observe"].draw(g, x, "grad")
