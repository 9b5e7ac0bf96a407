"""The grids programs are drawn from, and the weights of the generator's choices.

Leaf values sit on a grid away from 0 and from the clamp bounds, so that no derivative is
taken at a kink by chance; from vocabulary 4 one scenario's leaf holds them on purpose
(KINKS: DERIV-4 says what the derivative there is).
Weighted tables are tuples of (option, weight), listed simplest first (shrinking goes towards
option 0) and kept as constants, so that a chooser may precompute their cumulative weights.
What each op saves for backward, its settings' values and its draw weight are rows of the
op table (conformance/lang/ops.py).
"""
from __future__ import annotations

from ..lang.ops import CALL_WEIGHTS, INPLACE_WEIGHTS

SHAPES = [(), (2,), (3,), (2, 3), (3, 2), (1, 3), (2, 1), (2, 2)]
VALUES = [0.5, 1.0, -0.5, 1.5, -1.0, 2.0, -1.5, 0.25, -2.0, 0.75, -0.25, 1.25]
# vocabulary 3 joins leaves far more often (a + b of two leaves): no value is another's
# negative, so that two leaves never sum to an exact 0 (a kink of relu, abs, sqrt and pow)
VALUES_3 = [0.5, 1.0, -0.75, 1.5, -1.25, 2.0, -1.75, 0.25, -2.5, 1.25, -0.375, 0.625]
# vocabulary 4: the kinks of spec/deriv.md's DERIV-4 (relu, abs, sqrt and pow at 0, clamp at
# the bounds it draws): the values of the leaf of a scenario (gen/focus.py, at_kinks). Not
# drawn into other leaves: a 0 times a negative number is -0.0, where torch 2.13's derivative
# of pow(x, 0.5) is -inf and 0.5 * x ** -0.5 in IEEE arithmetic (refimpl's) +inf, and spec 2.0
# does not say which sign an engine owes there
KINKS = [0.0, -0.6, 0.8]
NUMBERS = [2.0, 0.5, -1.0, 3.0, 1.5]
FACTORS = [2.0, -1.0, 0.5]

# ---- weighted draws -----------------------------------------------------------------------
PROGRAM_DTYPES = (("float64", 3), ("float32", 1))
LEAF_DTYPES = {"float64": (("float64", 9), ("float32", 1)),     # program dtype -> leaf dtypes
               "float32": (("float32", 9), ("float64", 1))}
CALL_FNS = tuple(CALL_WEIGHTS)          # the op table's, as constants
INPLACE_FNS = tuple(INPLACE_WEIGHTS)
HOOK_BEHAVIOURS = (("record", 5), ("scale", 3))
NODE_HOOK_BEHAVIOURS = (("record", 2), ("scale", 1))
GRAD_MODES = (("no_grad", 4), ("enable_grad", 1), ("set_grad_enabled", 2))
RETAIN_GRAPH = ((None, 5), (False, 1), (True, 3))
OBSERVE_WHAT = (("value", 5), ("grad", 6), ("is_leaf", 2), ("requires_grad", 2),
                ("shape", 1), ("dtype", 1), ("grad_fn", 3), ("next_functions", 2),
                ("version", 3), ("retains_grad", 1), ("is_inference", 2), ("grad_dtype", 2),
                ("grad_layout", 2))
