"""What the executor's probes (conformance/judge/executor.py) ask of operands' shapes and
strides: whether they fit an op (UNSPEC-10's INFERENCE_SAVED against an error of no kind), and
whether a tensor's elements share memory (INPLACE-18)."""
from __future__ import annotations

from typing import Any

from ..lang.program import Stmt


def shapes_fit(s: Stmt, kind: Any, shapes: list[tuple[int, ...]]) -> bool:
    """Whether the tensor operands' shapes fit the op (UNSPEC-10 opens INFERENCE_SAVED against
    an error of no kind only where they do not; where they fit, INFER-5 fixes
    INFERENCE_SAVED): a matmul's operands by matmul's rule, any other op's by broadcasting, and
    a write's result must keep its target's shape."""
    import numpy as np
    try:
        if s.params.get("fn") == "matmul" and len(shapes) == 2:
            np.matmul(np.zeros(shapes[0]), np.zeros(shapes[1]))
            return True
        out = np.broadcast_shapes(*shapes) if shapes else ()
    except ValueError:
        return False
    return not (kind.writes and shapes and tuple(out) != shapes[0])


def overlapping(shape: Any, stride: Any) -> bool:
    """Elements that are one memory location: a dimension of size > 1 and stride 0, in a
    tensor that has elements (INPLACE-18)."""
    return all(n > 0 for n in shape) and any(
        n > 1 and st == 0 for n, st in zip(shape, stride, strict=True))
