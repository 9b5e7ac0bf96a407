"""Statements that set a tensor's autograd flags: requires_grad_, retain_grad, .grad =."""
from __future__ import annotations

from .registry import Kind, kind


@kind
class RequiresGrad(Kind):
    name = "requires_grad_"


@kind
class RetainGrad(Kind):
    name = "retain_grad"


@kind
class SetGrad(Kind):
    name = "set_grad"
