"""Deliberately broken engines: torch behind TorchLike with one semantic rule broken each.

The conformance suite must catch every one of them within the CI profile
(tests/conformance/test_broken_engines_caught.py), and `gradspec run --engine
tests.broken_engines.<module>:factory` must exit 1 with a repro. They wrap torch, so they do not
depend on refimpl. BROKEN maps each import path to the clauses whose rule it breaks, the one
it is named for first, then those its mechanism breaks with it: a divergent program names one
of them as its primary clause (conformance/judge/verdict.py), the rule that defines what torch
did at the first differing observation:
- no_version_check resets the counter after each write, so `_version` does not count writes
  (VER-2), a graph that saves a tensor after a write sees a counter older than the one it
  noted and raises where nothing changed (VER-8), and so raises VERSION_MISMATCH at such a
  node before a pass reaches a freed node, where torch raises GRAPH_FREED (FREE-1: the CI
  profile's stream finds that first from generator vocabulary 21), and a view taken under
  no_grad is not refused once its base is written, which torch tells by the counter (MODE-11);
- retains_every_grad makes `retains_grad` True on every non-leaf (RETAIN-1);
- no_grad_ignored leaves results of no_grad computations in the graph: they are no leaves
  (LEAF-3), in-place writes on leaves under no_grad raise (INPLACE-4), and views taken under
  no_grad are not marked as such (MODE-9), nor refused once their base is written (MODE-11);
  the body of a generator function decorated with no_grad runs with grad enabled (MODE-12),
  an op under no_grad inside saved-tensor hooks calls the pack hook (SAVED-1), and a custom
  Function applied under no_grad records its node (FUNC-1) or, marking a leaf dirty, raises
  (FUNC-11);
- leaf_inplace_allowed writes under no_grad, so a view taken under no_grad, or in inference
  mode, can be modified in place with grad mode enabled (MODE-9, INFER-7).

FAULTS are the fault drills (tests/conformance/test_fault_drills.py): engines that abort, are
killed, hang, leak grad mode out of a program, start a thread when imported, or load slowly;
each maps to what a campaign must report for it.
"""
from __future__ import annotations

BROKEN = {
    "tests.broken_engines.no_version_check:factory": ("VER-7", "VER-2", "VER-8", "MODE-11",
                                                   "FREE-1"),
    "tests.broken_engines.retains_every_grad:factory": ("RETAIN-7", "RETAIN-1"),
    "tests.broken_engines.reversed_hooks:factory": ("HOOK-2",),
    "tests.broken_engines.never_frees:factory": ("FREE-1",),
    "tests.broken_engines.leaf_inplace_allowed:factory": ("INPLACE-1", "MODE-9", "INFER-7"),
    "tests.broken_engines.no_grad_ignored:factory": ("MODE-1", "LEAF-3", "INPLACE-4", "MODE-9",
                                                  "MODE-11", "MODE-12", "SAVED-1", "FUNC-1",
                                                  "FUNC-11"),
}

FAULTS = {
    "tests.broken_engines.aborts:factory": "crash",
    "tests.broken_engines.killed:factory": "crash",
    "tests.broken_engines.hangs:factory": "timeout",
    "tests.broken_engines.leaks_grad_mode:factory": "grad mode leak",
    "tests.broken_engines.thread_at_import:factory": "nothing",
    "tests.broken_engines.slow_start:factory": "nothing",
}
