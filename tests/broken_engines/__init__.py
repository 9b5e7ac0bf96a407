"""Deliberately broken engines: torch behind TorchLike with one semantic rule broken each.

The conformance suite must catch every one of them within the CI profile
(tests/conformance/test_broken_engines_caught.py), and `gradspec run --engine
tests.broken_engines.<module>:factory` must exit 1 with a repro. They wrap torch, so they do not
depend on refimpl. BROKEN maps each import path to the clauses whose rule it breaks.
"""
from __future__ import annotations

BROKEN = {
    "tests.broken_engines.no_version_check:factory": ("VER-7",),
    "tests.broken_engines.retains_every_grad:factory": ("RETAIN-7",),
    "tests.broken_engines.reversed_hooks:factory": ("HOOK-2",),
    "tests.broken_engines.never_frees:factory": ("FREE-1",),
    "tests.broken_engines.leaf_inplace_allowed:factory": ("INPLACE-1",),
    "tests.broken_engines.no_grad_ignored:factory": ("MODE-1",),
}
