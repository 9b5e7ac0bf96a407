"""Old path of conformance.lang.program (programs as plain data); kept as a re-export for one
release. OPS (op -> (description, capabilities)) and OBSERVABLES (what -> capability) are
read from the statement kinds (conformance/kinds)."""
from .kinds import KINDS
from .kinds.observe import OBSERVABLES
from .lang.program import *  # noqa: F403
from .lang.program import (  # noqa: F401  (names the star import leaves out)
    FORMAT_VERSION,
    FUNCTIONS,
    INPLACE,
    VIEWS,
    HarnessError,
    Program,
    ProgramError,
    Stmt,
    index_of,
)

OPS: dict[str, tuple[str, tuple[str, ...]]] = {name: (k.doc, k.caps) for name, k in KINDS.items()}

__all__ = ["FORMAT_VERSION", "FUNCTIONS", "INPLACE", "OBSERVABLES", "OPS", "VIEWS",
           "HarnessError", "Program", "ProgramError", "Stmt", "index_of"]
