"""Deliberately broken engines: torch behind TorchLike with one semantic rule broken each.

The conformance suite must catch every one of them within the CI profile
(tests/conformance/test_broken_engines_caught.py), and `gradspec run --engine
tests.broken_engines.<module>:factory` must exit 1 with a repro. They wrap torch, so they do not
depend on refimpl. BROKEN maps each import path to the clauses whose rule it breaks.

FAULTS are the fault drills (tests/conformance/test_fault_drills.py): engines that abort, are
killed, hang, leak grad mode out of a program, start a thread when imported, or load slowly;
each maps to what a campaign must report for it.
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

FAULTS = {
    "tests.broken_engines.aborts:factory": "crash",
    "tests.broken_engines.killed:factory": "crash",
    "tests.broken_engines.hangs:factory": "timeout",
    "tests.broken_engines.leaks_grad_mode:factory": "grad mode leak",
    "tests.broken_engines.thread_at_import:factory": "nothing",
    "tests.broken_engines.slow_start:factory": "nothing",
}
