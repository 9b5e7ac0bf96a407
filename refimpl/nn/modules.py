"""Parameter, Module and Linear, as torch.nn has them, for the autograd they take part in.

A Parameter is a leaf tensor that requires grad by default; a Module finds the parameters and
the submodules assigned to its attributes, in assignment order. A Module's autograd is its
tensors' own: `Linear` calls `linear` (refimpl/ops/linalg.py), so its output's graph is the one
torch records (AddmmBackward0 over TBackward0 for a 2-D input, GRAPH-3), and `zero_grad` only
sets each parameter's `.grad` (LEAF-5, LEAF-7, GRAD-5, GRAD-6).
"""
from __future__ import annotations

import math
import warnings

from .. import errors
from ..factories import rand, set_requires_grad, zeros
from ..grad_mode import no_grad
from ..ops.linalg import linear
from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf made from `data` as detach() makes one (same storage and version counter, no
    history), requiring grad unless told otherwise. Ops on it give plain tensors."""
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        p = (data if data is not None else zeros(0)).detach()
        p.__class__ = cls
        errors.check_bool(requires_grad, "_make_subclass", "require_grad", position=3)
        return set_requires_grad(p, requires_grad, "Parameter")  # the factories' dtype error

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


def _typename(value) -> str:
    """torch.typename: a tensor's legacy type name, else the qualified name of its class."""
    if isinstance(value, Tensor):
        return value.dtype.legacy
    module, name = type(value).__module__, type(value).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


class Module:
    """The base of every model: assigning a Parameter or a Module to an attribute registers it
    (torch's `_parameters` and `_modules` tables); anything else, a plain tensor too, is an
    ordinary attribute. Calling the module runs `forward`."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- attributes: registering parameters and submodules --------------------------------
    def __setattr__(self, name, value):
        # (what registers, its table, the words of torch's messages), Parameter first
        for cls, key, what, slot, expected in (
                (Parameter, "_parameters", "parameters", "parameter", "torch.nn.Parameter"),
                (Module, "_modules", "module", "child module", "torch.nn.Module")):
            table = self.__dict__.get(key)
            if isinstance(value, cls):
                if table is None:
                    raise AttributeError(f"cannot assign {what} before Module.__init__() call")
                self._forget(name, keep=table)
                table[name] = value
                return
            if table is not None and name in table:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as {slot} '{name}' "
                                    f"({expected} or None expected)")
                table[name] = None
                return
        object.__setattr__(self, name, value)

    def _forget(self, name, keep):
        """Drop `name` from the other tables before it is registered in `keep`, where it keeps
        its place if it was there already (replacing a submodule keeps the repr's order)."""
        for table in (self.__dict__, self._parameters, self._modules):
            if table is not keep:
                table.pop(name, None)

    def __getattr__(self, name):  # only called when ordinary lookup fails
        for table in ("_parameters", "_modules"):
            held = self.__dict__.get(table, {})
            if name in held:
                return held[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """Register `param` (a Parameter, or None: a parameter slot left empty, as Linear's
        bias=False leaves `bias`)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        self._parameters[name] = param

    # ---- walking the tree -------------------------------------------------------------------
    def named_modules(self, prefix=""):
        """(dotted name, module) for this module and every submodule below it, depth first in
        registration order, each module once."""
        seen = set()

        def walk(module, prefix):
            if id(module) in seen:
                return
            seen.add(id(module))
            yield prefix, module
            for name, child in module._modules.items():
                if child is not None:
                    yield from walk(child, f"{prefix}.{name}" if prefix else name)
        return walk(self, prefix)

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, parameter): a module's own parameters before its submodules', each in
        registration order; a parameter shared by two modules comes once, empty slots never."""
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, p in module._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's `.grad`: to None (torch 2.x's default, GRAD-5), or else zeroed
        in place, the same tensor first cut from any graph it has (a `.grad` made under
        create_graph), as torch's detach_() cuts it (GRAD-6)."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
                continue
            if g.grad_fn is not None:  # the same tensor, with no history from now on
                g.detach_()
            else:
                g.requires_grad_(False)
            g.zero_()

    # ---- repr -------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        """torch's: `Name(extra)`, or the extra lines and one `(name): child` per submodule, each
        on its own line, indented by two spaces."""
        extra = self.extra_repr().split("\n") if self.extra_repr() else []
        children = [f"({name}): " + repr(child).replace("\n", "\n  ")
                    for name, child in self._modules.items()]
        lines = extra + children
        if len(extra) == 1 and not children:
            return f"{type(self).__name__}({extra[0]})"
        inner = "\n  " + "\n  ".join(lines) + "\n" if lines else ""
        return f"{type(self).__name__}({inner})"


class Linear(Module):
    """y = x @ weight.t() + bias, weight of shape (out_features, in_features)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(zeros(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(zeros(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """torch's initialisation, in place under no_grad, so each parameter is at version 1:
        weight by kaiming_uniform_(a=sqrt(5)), whose bound gain * sqrt(3 / fan_in) with gain =
        sqrt(2 / (1 + a**2)) comes to 1 / sqrt(fan_in), bias uniformly within the same bound.
        refimpl draws from those ranges with its own generator (UNSPEC-4)."""
        bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        with no_grad():
            if self.weight.numel() == 0:  # torch leaves it as it is (version 0)
                warnings.warn("Initializing zero-element tensors is a no-op", UserWarning,
                              stacklevel=2)
            else:
                self.weight.copy_(_uniform(self.weight, bound))
            if self.bias is not None:
                self.bias.copy_(_uniform(self.bias, bound))

    def forward(self, input):
        return linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _uniform(like, bound):
    """Values drawn uniformly from [-bound, bound), shaped like `like`, of its dtype and device."""
    return rand(*like.shape, dtype=like.dtype, device=like._be.device) * (2 * bound) - bound
