"""Old path of conformance.judge.compare (comparing two traces); kept as a re-export for one
release."""
from .judge.compare import *  # noqa: F403
from .judge.compare import (  # noqa: F401
    TOLERANCES,
    Divergence,
    close,
    compare,
    involved_clauses,
    outcome,
)
