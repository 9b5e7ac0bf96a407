"""The table of scenarios: a few statements that build what one rare behaviour needs, drawn as
focus moves (focus.py draws among them; focus.py and higher.py declare them)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
