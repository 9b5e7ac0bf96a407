"""Run one program on torch and on refimpl and compare what it returns (micrograd-style)."""
from __future__ import annotations

import warnings

import torch

import refimpl
from conformance.examples import classify, to_plain, values_equal


def outcome(fn, lib):
    """fn(lib) -> value; the plain value, or ('raises', kind) for an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return to_plain(fn(lib))
        except Exception as exc:  # errors are compared by spec kind
            return ("raises", classify(exc) or f"{type(exc).__name__}: {exc}")


def same(fn, rel_tol: float | None = None):
    """fn on torch and on refimpl agree (values within the examples' tolerance, or `rel_tol`)."""
    want, got = outcome(fn, torch), outcome(fn, refimpl)
    ok = values_equal(got, want) if rel_tol is None else values_equal(got, want, rel_tol)
    assert ok, f"torch: {want!r}\nrefimpl: {got!r}"
    return want


def graph(t):
    """The graph below t as nested (name, [children]) with leaves as 'Acc' and empty edges None."""
    def rec(fn):
        if fn is None:
            return None
        if fn.name() == "torch::autograd::AccumulateGrad":
            return "Acc"
        return [fn.name(), [rec(n) for n, _ in fn.next_functions]]
    return rec(t.grad_fn)
