"""Differential tests: one program, run on torch and on refimpl, must log the same things.

A test writes its program once as `def prog(torch, log)` and calls `differential(prog)`:

    @pytest.mark.clause("LEAF-7")
    def test_grad_accumulates_over_three_calls(differential):
        def prog(torch, log):
            x = torch.tensor([1.0, 2.0], requires_grad=True)
            for _ in range(3):
                (x * x).sum().backward()
            log("x.grad", x.grad)
            log.attempt("second backward", lambda: y.backward())   # logs the error kind
        differential(prog)

The log of torch is the expected one, and refimpl's must match it on numpy and again on the
strict Array API namespace (array_api_strict, where installed). The log must not be empty, and
each entry is compared with the same tolerance as spec examples; errors compare by kind
(spec/errors.md).
"""
from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import pytest

from conformance.examples import classify, to_plain, values_equal
from tests import engines


class Log:
    def __init__(self, torch):
        self.torch = torch
        self.entries: list[tuple[str, Any]] = []

    def __call__(self, label: str, value: Any) -> None:
        self.entries.append((label, to_plain(value)))

    def attempt(self, label: str, fn) -> Any:
        """Run fn; log 'ok' or the spec error kind it raised (and the warning kinds it emitted)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = fn()
                outcome: Any = "ok"
            except Exception as exc:
                result = None
                kind = classify(exc)
                outcome = ("raises", kind or f"unclassified {type(exc).__name__}: {exc}")
        warned = [classify(w.message, w.category) for w in caught]
        self.entries.append((label, outcome))
        kinds = [w for w in warned if w]
        if kinds:
            self.entries.append((label + " warnings", kinds))
        return result


def _run(name: str, prog) -> Log:
    engine, _, namespace = name.partition("@")
    log = Log(engines.load(engine))
    if not namespace:
        prog(log.torch, log)
        return log
    from refimpl import backend  # refimpl on another CPU array namespace
    before = backend.cpu_namespace()
    backend.use_cpu_namespace(namespace)
    try:
        prog(log.torch, log)
    finally:
        backend.use_cpu_namespace(before)
    return log


def _engine_names() -> tuple[str, ...]:
    """The engines a differential test compares with torch: those of tests/engines.py, and
    refimpl again on the strict Array API namespace where array_api_strict is installed, which
    shows that refimpl's semantics do not lean on numpy (refimpl/backend.py)."""
    names = engines.ENGINE_NAMES[1:]
    if "refimpl" in names and importlib.util.find_spec("array_api_strict") is not None:
        names += ("refimpl@array_api_strict",)
    return names


@pytest.fixture
def differential(request):
    def check(prog):
        expected = _run("torch", prog)
        assert expected.entries, "the program logged nothing: this test could not fail"
        for name in _engine_names():
            got = _run(name, prog)
            for i, (want, have) in enumerate(zip(expected.entries, got.entries, strict=False)):
                assert want[0] == have[0] and values_equal(have[1], want[1]), (
                    f"{name} diverges from torch at log entry {i} ({want[0]!r}):\n"
                    f"  torch : {want[1]!r}\n  {name:<6}: {have[1]!r}")
            assert len(got.entries) == len(expected.entries), (
                f"{name} logged {len(got.entries)} entries, torch {len(expected.entries)}:\n"
                f"  torch : {expected.entries}\n  {name:<6}: {got.entries}")
        return expected
    return check
