"""Old path of the program generator; kept as a re-export for one release.

The generator is conformance/gen/ (the loop: core.py; deliberate error moves: errors.py and
errors_backward.py; choosers: strategies.py), drawing statement kinds (conformance/kinds/)
over a model of the program's tensors (conformance/model/).
"""
from .gen.core import (  # noqa: F401
    ALL_CAPABILITIES,
    GENERATOR_VERSION,
    NOT_GENERATED,
    VOCABULARIES,
    Gen,
    generate,
    program_for_seed,
    programs,
)
from .gen.errors import (  # noqa: F401
    ERROR_CLAUSE,
    ERROR_MOVES,
    INEXPRESSIBLE,
    NATURAL_ERROR_CAPS,
    NO_GRAD_ERRORS,
)
from .gen.order import DRAW_ORDER, clause_requires  # noqa: F401
from .lang.ops import (  # noqa: F401
    AUGMENTED,
    CLAMPS,
    EXPONENTS,
    HOLDS,
    INPLACE_HOLDS,
    INPLACE_SAVES_OUTPUT,
    SAVES_INPUT,
    SAVES_OTHER,
    SAVES_OUTPUT,
)
from .model import Node, Storage, T, broadcast, index_shape, matmul_shape  # noqa: F401
from .model.tables import FACTORS, NUMBERS, SHAPES, VALUES  # noqa: F401
