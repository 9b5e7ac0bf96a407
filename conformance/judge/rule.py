"""The comparison rule for floats (spec/README.md, "Comparing traces"): the plain bound, which
compare.py applies to every value and conditioning.py widens for ill-conditioned ones."""
from __future__ import annotations

import math
from typing import Any

# The comparison rule (spec/README.md, "Comparing traces"): floats a, b agree when
# |a - b| <= ULPS * eps * max(1, |a|, |b|), eps the machine epsilon of the least precise
# floating dtype the program creates. ULPS covers the measured differences between engines
# that order their sums, round their kernels and compute exp or sin differently, amplified by
# the ops after them (spec/README.md gives the measurements).
EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}
ULPS = 512
# dtype -> (relative, absolute) tolerance: math.isclose with both is the rule; unknown dtypes
# get the float32 row.
TOLERANCES = {dtype: (ULPS * eps, ULPS * eps) for dtype, eps in EPS.items()}


def close(a: Any, b: Any, dtype: str | None) -> bool:
    """Equality within the tolerance of `dtype` for floats (NaN equals NaN, an infinity only
    itself); exact for everything else."""
    ta, tb = type(a), type(b)
    if ta is float and tb is float and a == b:      # the common case: no tolerance needed
        return True
    if ta is list and tb is list:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=False):     # lengths checked
            if not (type(x) is float and type(y) is float and x == y) \
                    and not close(x, y, dtype):
                return False
        return True
    return _close_scalar(a, b, dtype)


def _close_scalar(a: Any, b: Any, dtype: str | None) -> bool:
    if isinstance(a, list) and isinstance(b, list):     # list subclasses
        return len(a) == len(b) and all(close(x, y, dtype) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None \
            or isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        rel, abs_ = TOLERANCES.get(dtype or "", TOLERANCES["float32"])
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    return False
