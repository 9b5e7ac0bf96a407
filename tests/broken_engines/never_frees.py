"""Never frees saved values (breaks FREE-1): every backward and autograd.grad retains the
graph, so a second backward through it succeeds where it must raise GRAPH_FREED."""
from __future__ import annotations

from ._base import Broken


class NeverFrees(Broken):
    label = "never_frees"

    def backward(self, t, gradient, retain_graph, inputs, create_graph=False):
        super().backward(t, gradient, True, inputs, create_graph)

    def autograd_grad(self, outputs, inputs, grad_outputs, retain_graph, allow_unused,
                      create_graph=False):
        return super().autograd_grad(outputs, inputs, grad_outputs, True, allow_unused,
                                     create_graph)


def factory(device: str = "cpu") -> NeverFrees:
    return NeverFrees(device)
