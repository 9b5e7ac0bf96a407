"""mygrad 2.5.0 with the ops of spec/deriv.md it runs as torch does: the registered adapter
(conformance/engines/mygrad.py) declaring `deriv_ops` too, less the rows it lacks
(`lacks_ops`, docs/engines.md "Finer capabilities"). `gradspec run --engine
conformance.engines.mygrad_deriv:engine`; the registered engine's programs stay as
docs/findings.md quotes them by seed."""
from __future__ import annotations

from .mygrad import CAPABILITIES, MygradEngine, mygrad_engine

# the deriv_ops rows whose op probe fails (`gradspec engines --probe --engine
# conformance.engines.mygrad_deriv:engine`, every row probed with this set emptied):
# floor, sign and round (and their in-place forms) raise "<ufunc 'floor'> cannot involve
# non-constant mygrad tensors"; double() and float() give x no gradient; argmax and argmin
# get the keyword `keepdims` mygrad's do not take, and where overflows the stack here
LACKS = frozenset({"floor", "sign", "round", "floor_", "sign_", "round_", "double", "float",
                   "argmax", "argmin", "where"})


def engine(device: str = "cpu") -> MygradEngine:
    """The comparisons, long(), max and min beside what mygrad declares."""
    e = mygrad_engine(device)
    e.capabilities = CAPABILITIES | {"deriv_ops"}
    e.lacks_ops = LACKS
    return e
