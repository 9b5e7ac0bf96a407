"""`refimpl.autograd.graph`, as torch.autograd.graph: the saved-tensor hooks of saved_hooks.py,
and multi-grad hooks (HOOK-19, HOOK-20).

A multi-grad hook is made of tensor hooks, one per tensor, as torch's is, so each runs where and
when tensor hooks run (HOOK-18), at its place among its tensor's hooks. In mode "all" the first
of them to run in a pass counts the tensors whose node the pass will run (engine.running: a
leaf's node is its AccumulateGrad); each one keeps the gradient it receives, and the last to
run calls fn with the list, None for the tensors not counted. In mode "any" the first to run in
a pass calls fn with its gradient and the others do nothing. What fn returns is dropped. What a
hook keeps during a pass lives in the pass's own state, so a pass left halfway leaves nothing.
The cases UNSPEC-14 leaves open are done as torch 2.13 does them where that is simple: a pass
started from one of the tensors does not count it; a leaf input of autograd.grad counts.
"""
from __future__ import annotations

from . import engine
from .node import accumulator
from .saved_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook"]


class _MultiHandle:
    """remove() removes every tensor hook of the multi-grad hook (HOOK-6 for each)."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors, key = tuple(tensors), object()  # key: this hook's entry in a pass's state
    if mode == "any":
        def first(grad):  # HOOK-20
            state = engine.running[-1][1]
            if key not in state:
                state[key] = True
                fn(grad)
        return _MultiHandle(t.register_hook(first) for t in tensors if t.requires_grad)
    nodes = [_node(t) for t in tensors]  # held here, so a leaf keeps this AccumulateGrad

    def inner(i):  # HOOK-19
        def hook(grad):
            will_run, state = engine.running[-1]
            if key not in state:  # the first call of the pass: how many calls to wait for
                state[key] = [sum(map(will_run, nodes)), [None] * len(tensors)]
            entry = state[key]
            entry[0] -= 1
            entry[1][i] = grad
            if entry[0] == 0:
                del state[key]
                fn(entry[1])
        return hook
    return _MultiHandle(t.register_hook(inner(i)) for i, t in enumerate(tensors))


def _node(t):
    """The node whose run brings t's gradient: its grad_fn, or a leaf's AccumulateGrad."""
    node = accumulator(t) if t.requires_grad and t.grad_fn is None else t.grad_fn
    if node is None:  # a tensor that does not require grad (UNSPEC-14), as torch 2.13 fails
        raise AssertionError("Expected gradient function to be set")
    return node
