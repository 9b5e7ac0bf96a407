"""Backward-like statements: tensor.backward, autograd.backward and autograd.grad."""
from __future__ import annotations

from .registry import Kind, kind


@kind
class Backward(Kind):
    name = "backward"


@kind
class BackwardMany(Kind):
    name = "backward_many"


@kind
class Grad(Kind):
    name = "grad"
