"""Localising a divergence found in a unit: replay the program eagerly, statement by statement.

An engine that runs segments as units (conformance/judge/segments.py) may diverge in a way only
the unit shows (a compiled graph that differs from eager), or fail as a whole, which marks every
unfinished statement of the segment. Replaying the same program on the engine's per-statement
twin (`Engine.eager`) and comparing with the oracle's trace tells the two apart: the first
statement the replay differs at, or UNIT when the replay does not diverge (the divergence lives
in the unit). Runs record it as `localised_to`.
"""
from __future__ import annotations

from ..engines.base import Engine
from ..lang.program import Program
from ..lang.trace import Trace
from .compare import compare
from .conditioning import Relief
from .executor import execute
from .segments import UNIT


def localise(program: Program, oracle: Trace, engine: Engine, relief: Relief | None = None
             ) -> str:
    """The path of the first statement at which `program` replayed on engine.eager() differs
    from the oracle's trace `oracle`, or UNIT if it does not differ anywhere. `relief`: the
    oracle's sensitivities, as in the comparison that found the divergence."""
    found = compare(program, oracle, execute(program, engine.eager()), relief)
    return found[0].path if found else UNIT
