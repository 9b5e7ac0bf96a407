"""The finer declarations of an adapter, checked at load: the ops it lacks (`lacks_ops`) and
finer capabilities that contradict what else it declares (conformance/spec/capabilities.py).
Each problem is one line, for `load_engine`'s EngineError."""
from __future__ import annotations

from typing import Any

from ..lang import ops
from ..spec.capabilities import FINER, lacks

# ops every generated backward pass is built from (a sum to a scalar, a product by a number):
# an engine without them cannot be driven, so lacking them is refused rather than silently
# leaving most programs undrawable
ESSENTIAL_OPS = ("sum", "mul")
# capability -> the finer capability that contradicts it when declared without the coarse one
# (`view_base` asks for `t._base`, which only views that alias have)
CONTRADICTS = {"view_base": "view_ops"}


def lacked(engine: Any) -> frozenset[str]:
    """The ops the engine declares it lacks (an empty set when it declares none)."""
    return frozenset(getattr(engine, "lacks_ops", None) or ())


def problem(engine: Any, caps: frozenset[str]) -> str | None:
    """What is wrong with the engine's finer declarations, in one line; None when nothing."""
    declared = getattr(engine, "lacks_ops", None) or frozenset()
    if not isinstance(declared, (set, frozenset, list, tuple)) or \
            not all(isinstance(o, str) for o in declared):
        return f"lacks_ops must be a set of op names, got {declared!r}"[:200]
    unknown = sorted(o for o in declared if o not in ops.ROWS)
    if unknown:
        return (f"lacks_ops names ops the op table does not have: {', '.join(unknown)} "
                f"(conformance/lang/ops.py; docs/engines.md lists them)")
    essential = [o for o in ESSENTIAL_OPS if o in declared]
    if essential:
        return (f"lacks_ops names {', '.join(essential)}, which every generated backward pass "
                f"uses: an engine needs {' and '.join(ESSENTIAL_OPS)}")
    for cap, fine in CONTRADICTS.items():
        if cap in caps and fine in caps and FINER[fine] not in caps:
            return (f"declares {cap} with {fine} but not {FINER[fine]}: {cap} needs views "
                    f"that alias their base")
    return None


def capabilities_of(engine: Any) -> frozenset[str]:
    """The engine's capabilities as the generator takes them: what it declares, and one
    `lacks:<op>` entry per op it lacks."""
    return frozenset(engine.capabilities) | lacks(lacked(engine))
