"""refimpl.nn, the little of torch.nn that a model of Linear layers needs: `Module` (attributes
that register parameters and submodules, `parameters()`, `named_parameters()`, `zero_grad()`,
calling runs `forward`, torch's repr), `Parameter` and `Linear`; `functional.linear`.
Everything else in torch.nn is out of scope (refimpl/README.md).
"""
from __future__ import annotations

from . import functional
from .modules import Linear, Module, Parameter

__all__ = ["Linear", "Module", "Parameter", "functional"]
