"""The op set, attached to Tensor as methods and Python operators (GRAPH-3, INPLACE-13).

Families live in their own modules: elementwise, power (pow and `__rpow__`), reduce, linalg,
views (movement and indexing), split (the views that come several at once), inplace, discrete
(zero-derivative ops, casts, where). Every in-place `_` variant is built from its out-of-place
op by `inplace`.
"""
from __future__ import annotations

import numbers
import operator

from ..tensor import Tensor
from . import discrete, linalg, power, reduce, split, views
from . import elementwise as ew
from . import inplace as ip

_METHODS = {
    "add": ew.add, "sub": ew.sub, "mul": ew.mul, "div": ew.div, "neg": ew.neg, "pow": power.pow,
    "exp": ew.exp, "sqrt": ew.sqrt, "log": ew.log, "sin": ew.sin, "cos": ew.cos, "tanh": ew.tanh,
    "sigmoid": ew.sigmoid, "relu": ew.relu, "abs": ew.abs, "clamp": ew.clamp,
    "reciprocal": ew.reciprocal,
    "sum": reduce.sum, "mean": reduce.mean, "matmul": linalg.matmul,
    "view": views.view, "reshape": views.reshape, "t": views.t, "transpose": views.transpose,
    "unsqueeze": views.unsqueeze, "squeeze": views.squeeze, "expand": views.expand,
    "expand_as": views.expand_as, "narrow": views.narrow, "select": views.select,
    "split": split.split, "split_with_sizes": split.split_with_sizes, "chunk": split.chunk,
    "unbind": split.unbind, "clone": ip.clone, "zero_": ip.zero_, "fill_": ip.fill_,
    "copy_": ip.copy_, "set_": ip.set_,
    "floor": discrete.floor, "sign": discrete.sign, "round": discrete.round,
    "max": reduce.reduce_max, "min": reduce.reduce_min, "argmax": reduce.argmax,
    "argmin": reduce.argmin, "to": discrete.to, "long": discrete.long, "double": discrete.double,
    "float": discrete.float_, "nonzero": discrete.nonzero, "where": discrete.where_method,
}
_INPLACE = ("add", "sub", "mul", "div", "neg", "pow", "exp", "sqrt", "log", "sin", "cos", "tanh",
            "sigmoid", "relu", "abs", "clamp", "reciprocal", "floor", "sign", "round")
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
for _name in _INPLACE:
    setattr(Tensor, _name + "_", ip.inplace(_METHODS[_name]))

Tensor.multiply, Tensor.subtract, Tensor.divide, Tensor.true_divide = ew.mul, ew.sub, ew.div, ew.div
Tensor.clip, Tensor.negative = ew.clamp, ew.neg
Tensor.T = property(lambda self: views.transpose(self, 0, 1, "TBackward0")
                    if self._data.ndim == 2 else self.t())
Tensor.__add__ = Tensor.__radd__ = ew.add
Tensor.__sub__ = ew.sub
Tensor.__rsub__ = ew.rsub
Tensor.__mul__ = Tensor.__rmul__ = ew.mul
Tensor.__truediv__ = ew.div
Tensor.__rtruediv__ = ew.rdiv
Tensor.__neg__ = ew.neg
Tensor.__pow__ = power.pow
Tensor.__rpow__ = power.rpow
Tensor.__abs__ = ew.abs
Tensor.__matmul__ = linalg.matmul
Tensor.__rmatmul__ = lambda self, other: linalg.matmul(other, self)
Tensor.__iadd__, Tensor.__isub__ = Tensor.add_, Tensor.sub_
Tensor.__imul__, Tensor.__itruediv__ = Tensor.mul_, Tensor.div_
Tensor.__ipow__ = Tensor.pow_
Tensor.__getitem__ = views.getitem


def _setitem(self, key, value) -> None:     # torch's __setitem__ returns None
    views.setitem(self, key, value)


Tensor.__setitem__ = _setitem


def _operator(method):
    """A comparison as a Python operator: an operand it refuses (None, a string, a list, any
    other object) makes it return NotImplemented, as torch's do, so that `t == None` is False
    and `t != None` True (Python's identity fallback) and `t < None` raises TypeError
    (DERIV-1)."""
    def fn(self, other):
        if isinstance(other, (Tensor, numbers.Number)):     # a complex one is refused as
            return method(self, other)                      # before: refimpl has no complex
        try:
            return method(self, other)
        except TypeError:
            return NotImplemented
    return fn


for _op in ("lt", "le", "gt", "ge", "eq", "ne"):  # bool leaves, never recorded (DERIV-1)
    setattr(Tensor, _op, ew.compare(getattr(operator, _op)))
    setattr(Tensor, f"__{_op}__", _operator(getattr(Tensor, _op)))
Tensor.__hash__ = object.__hash__
