"""Which spec clauses define what the oracle shows at a divergence: the tables the verdict
(conformance/judge/verdict.py) picks a divergence's primary clause from.

An error kind is defined by the clauses spec/errors.md lists for it (read from there, never
copied here). What this module adds is the spec's word on the other observations: per
observable (and the form of the oracle's value, where the rule that applies depends on it),
the clauses whose rule says what that observable shows, and per error kind the clauses under
which the oracle does *not* raise it (an engine that raises it there breaks one of those).
Each tuple is ordered from the most specific rule to the most general one: the verdict takes
the first clause of the tuple that the divergent statement, or the statement that made what it
observes, exercises (then: that anything in its backward slice exercises), and falls back on
the general rule. Last, the differences that decide a divergence's conformance class whatever
its primary clause (`conformance_class`).
"""
from __future__ import annotations

from ..spec.capabilities import closure
from ..spec.reader import load_spec

# error kind -> the clauses under which the oracle does not raise it, most specific first
ALLOWS: dict[str, tuple[str, ...]] = {
    "LEAF_INPLACE": ("INPLACE-4", "INPLACE-5", "INPLACE-6", "INPLACE-14", "INPLACE-11",
                     "INPLACE-9"),
    "VIEW_OF_LEAF_INPLACE": ("INPLACE-4", "INPLACE-5", "INPLACE-6", "INPLACE-14", "INPLACE-8",
                             "INPLACE-9"),
    "NO_GRAD_VIEW_INPLACE": ("INPLACE-4",),
    "VERSION_MISMATCH": ("SAVED-6", "VER-8", "VER-11", "VER-12", "VER-13", "VER-6", "INPLACE-5",
                         "INPLACE-12", "VER-14"),
    "GRAPH_FREED": ("FREE-2", "FREE-3", "FREE-6", "FREE-7", "API-5"),
    "NO_GRAD_FN": ("API-5", "MODE-2", "GRAPH-1"),
    "IMPLICIT_GRAD_NONSCALAR": ("API-2",),
    "GRAD_OUTPUT_SHAPE": ("API-2", "API-9"),
    "RETAIN_GRAD_NO_REQUIRES_GRAD": ("RETAIN-3", "RETAIN-1"),
    "HOOK_NO_REQUIRES_GRAD": ("HOOK-1",),
    "HOOK_CHANGED_SIZE": ("HOOK-4", "HOOK-3"),
    "GRAD_ASSIGN_SHAPE": ("LEAF-14",),
    "GRAD_ASSIGN_DTYPE": ("LEAF-14",),
    "INPUT_NO_REQUIRES_GRAD": ("API-10",),
    "DATA_REQUIRES_GRAD_DTYPE": ("DATA-6", "DATA-1"),
    "DETACH_VIEW_INPLACE": ("VIEW-8",),
    "SET_BACKWARD": ("DATA-8",),
    "SET_DTYPE": ("DATA-7",),
    "SAVED_DETACHED_INPLACE": ("SAVED-6", "FUNC-4", "VER-16"),
}
# an error no kind of spec/errors.md names (the executor's OTHER) where the oracle raised none:
# most often a custom Function's forward or backward given what its contract rules out (a None
# where zeros are due, FUNC-9), most specific first
UNNAMED_ERROR: tuple[str, ...] = ("FUNC-10", "FUNC-9", "FUNC-12", "FUNC-6", "FUNC-5", "FUNC-8",
                                  "FUNC-13", "FUNC-11", "FUNC-14", "FUNC-3", "FUNC-4", "FUNC-1")

# (observable, form of the oracle's value) or observable -> the clauses whose rule says what
# it shows, most specific first; the last is the observable's general rule, the primary clause
# when neither statement exercises any (None: there is none, the statement's own first clause
# is). Forms: None, True, False, number, name, tensor (verdict.py, `form`); "<observable>.dtype"
# is the dtype of what it shows. The DATA clauses come just before the general rules: an
# observation after `.data =` carries one (model/clauses.py), and one more specific to what
# differs wins over it. SAVED-6 comes first for gradients: a pass that computed with a packed
# value written after the pack is where they come from. MODE-12 comes first: only a statement
# inside a decorated generator's body has it near, and whether that body ran in the mode is
# what decides the rest. The FUNC clauses come next where a custom Function made the tensor
# (its statement is the maker) or computed the gradient (the observation carries the clauses of
# the Functions the passes ran, model/clauses.py): the most specific of them first, FUNC-1
# (apply and backward in general) last.
DEFINES: dict[tuple[str, str] | str, tuple[str | None, ...]] = {
    ("grad", "None"): ("FUNC-11", "FUNC-6", "RETAIN-7", "GRAD-5", "GRAD-6", "LEAF-14", "API-6",
                       "API-11", "RETAIN-8", "LEAF-16", "DATA-5", "RETAIN-1", "LEAF-6", "LEAF-5"),
    "grad": ("SAVED-6", "FUNC-10", "FUNC-9", "FUNC-12", "FUNC-8", "FUNC-6", "FUNC-5",
             "FUNC-13", "FUNC-11", "FUNC-14", "FUNC-3", "FUNC-4", "FUNC-1", "GRAD-6",
             "GRAD-5", "DOUBLE-2", "RETAIN-5", "RETAIN-6", "RETAIN-4", "RETAIN-1", "GRAD-3",
             "LEAF-8", "LEAF-9",
             "DATA-5", "LEAF-5"),
    "grad.dtype": ("RETAIN-1", "DATA-5", "LEAF-9"),
    "retains_grad": ("RETAIN-3", "RETAIN-2", "RETAIN-1"),
    ("is_leaf", "True"): ("GRAD-1", "MODE-12", "DOUBLE-1", "FUNC-12", "FUNC-11", "FUNC-14",
                          "FUNC-1", "VER-16", "INPLACE-1", "LEAF-11", "MODE-9", "LEAF-3", "LEAF-4",
                          "DATA-1", "LEAF-2", "LEAF-1"),
    ("is_leaf", "False"): ("MODE-12", "DOUBLE-1", "FUNC-11", "FUNC-14", "FUNC-1", "VIEW-8",
                           "VER-16", "INPLACE-15",
                           "MODE-2", "GRAPH-10", "DATA-1", "GRAPH-1"),
    ("requires_grad", "False"): ("GRAD-1", "MODE-12", "DOUBLE-1", "FUNC-12", "FUNC-11",
                                 "FUNC-14", "FUNC-1", "VER-16", "INPLACE-1", "LEAF-16",
                                 "LEAF-11", "MODE-9", "MODE-1",
                                 "LEAF-4", "INPLACE-10", "DATA-1", "LEAF-2", "GRAPH-2"),
    ("requires_grad", "True"): ("MODE-12", "DOUBLE-1", "FUNC-11", "FUNC-14", "FUNC-1",
                                "VIEW-8", "VER-16", "LEAF-11", "MODE-7", "MODE-9", "MODE-2",
                                "INPLACE-10", "DATA-1", "LEAF-1", "GRAPH-1"),
    ("grad_fn", "None"): ("GRAD-1", "MODE-12", "FUNC-12", "FUNC-11", "FUNC-14", "FUNC-1", "VER-16",
                          "INPLACE-4",
                          "MODE-9", "MODE-1", "LEAF-3", "LEAF-4", "DATA-1", "GRAPH-2", "LEAF-2",
                          "LEAF-1"),
    "grad_fn": ("MODE-12", "FUNC-11", "FUNC-14", "FUNC-2", "FUNC-1", "VIEW-8", "VER-16",
                "MODE-1", "INPLACE-8",
                "INPLACE-7", "GRAPH-10", "MODE-2", "DATA-1", "GRAPH-3", "GRAPH-1"),
    "next_functions": ("GRAPH-5", "GRAPH-6", "GRAPH-4"),
    "grad_dtype": ("DATA-5", "GRAD-7"),
    "grad_layout": ("GRAD-4", "GRAD-2"),
    # the node of a .grad: none where nothing recorded it (zeroed in place, GRAD-6; linear,
    # DOUBLE-1; a plain pass, GRAD-1), else the one DOUBLE-4 names
    ("grad_grad_fn", "None"): ("GRAD-6", "DOUBLE-1", "GRAD-1"),
    "grad_grad_fn": ("DOUBLE-4",),
    "base_is": ("VIEW-1",),
    "grad_is": ("GRAD-6", "GRAD-5", "DOUBLE-3", "LEAF-14", "GRAD-4", "GRAD-3"),
    # the tensor's own in-place write made the version (VER-2); or it is seen through a view,
    # detach() or .data of what was written (VER-4, -5, -6), or nothing wrote it (VER-1, -3)
    ("version", "written"): ("FUNC-11", "VER-2"),
    "version": ("FUNC-11", "FUNC-14", "VER-6", "VER-5", "VER-4", "DATA-2", "VER-2", "VER-1",
                "VER-3"),
    "value": ("FUNC-5", "FUNC-11", "FUNC-14", "FUNC-3", "FUNC-9", "FUNC-12", "FUNC-1",
              "GRAD-6", "GRAD-5", "GRAD-4", "GRAD-3",
              "INPLACE-13", "INPLACE-9", "INPLACE-10", "INPLACE-12", "INPLACE-5", "INPLACE-6",
              "DATA-1", None),
    "results": ("SAVED-6", "FUNC-10", "FUNC-9", "FUNC-12", "FUNC-8", "FUNC-6", "FUNC-5",
                "FUNC-13", "FUNC-11", "FUNC-14", "FUNC-3", "FUNC-4", "FUNC-1", "DOUBLE-1",
                "API-10", "API-9", "API-7", "RETAIN-8", "API-6"),
    # is_grad_enabled inside a grad-mode block (by what the oracle says), and outside (after
    # one: MODE-4)
    ("grad_enabled", "inside, False"): ("MODE-12", "MODE-1", "MODE-3", "MODE-5", "MODE-6"),
    ("grad_enabled", "inside, True"): ("MODE-12", "MODE-2", "MODE-3", "MODE-5", "MODE-6"),
    "grad_enabled": ("MODE-4", "MODE-5", "MODE-6"),
}

# hook calls: (the kind of statement that registered the hook, how the calls differ) -> the
# clauses that define the oracle's calls, most specific first, the general rule last
HOOK_CALLS: dict[tuple[str, str], tuple[str, ...]] = {
    ("hook", "same tensor"): ("HOOK-2",),
    ("hook", "reordered"): ("HOOK-14",),
    ("hook", "missing"): ("HOOK-16", "HOOK-8", "HOOK-1"),
    ("hook", "removed"): ("HOOK-6",),
    ("hook", "extra"): ("HOOK-9",),
    ("hook", "other-calls"): ("HOOK-9", "HOOK-6", "HOOK-1"),
    ("hook", "other-gradients"): ("HOOK-11", "HOOK-10", "HOOK-4", "HOOK-3", "RETAIN-5",
                                  "HOOK-1"),
    ("post_hook", ""): ("HOOK-13",),
    ("node_hook", ""): ("HOOK-15",),
    ("multi_grad_hook", "all"): ("HOOK-19",),
    ("multi_grad_hook", "any"): ("HOOK-20",),
    ("saved_hooks", ""): ("SAVED-11", "SAVED-4", "SAVED-7", "SAVED-2", "SAVED-5", "SAVED-1"),
}

# What a divergence shows that is a class of its own whatever its primary clause (spec/README.md,
# "Conformance classes"): (what differs, observable, the oracle's value, the engine's, as the
# signature words them; "" for any) -> class. A warning is a diagnostic; a node's name where
# both have a node, and the edges, are how torch itself is built; so is the order of hook calls
# when the calls are the same. Whether there is a node at all (grad_fn None on one side) is
# graph recording, of the primary clause's class like every other divergence.
CLASS_OF_DIFFERENCE: tuple[tuple[tuple[str, str, str, str], str], ...] = (
    (("warnings", "", "", ""), "diagnostics"),
    (("value", "grad_fn", "name", "other-name"), "torch-observable"),
    (("value", "grad_grad_fn", "name", "other-name"), "torch-observable"),
    (("value", "next_functions", "", ""), "torch-observable"),
    (("hooks", "hooks", "", "reordered"), "torch-observable"),
)


def conformance_class(what: str, observable: str, oracle: str, engine: str,
                      primary: str | None) -> str:
    """The class of a compared divergence: by what differs where that decides it, else its
    primary clause's (core for a clause the spec does not have)."""
    for pattern, cls in CLASS_OF_DIFFERENCE:
        if all(p in ("", v) for p, v in zip(pattern, (what, observable, oracle, engine),
                                             strict=True)):
            return cls
    clause = load_spec().clauses.get(primary or "")
    return clause.cls if clause is not None else "core"


def drawable(clauses: tuple[str, ...], caps: frozenset[str] | None) -> tuple[str, ...]:
    """The clauses of `clauses` a program drawn under `caps` can exercise: those whose
    `requires` the capabilities cover (the others are n/a to the campaign, reports/report.py,
    set_statuses). `caps` None: a program the generator did not draw, all of them."""
    spec = load_spec().clauses
    caps = closure(caps) if caps is not None else None     # finer ones implied: recorded normal
    return tuple(c for c in clauses if caps is None or c not in spec
                 or caps.issuperset(spec[c].requires))


# the spec clauses the tables cite, for the test that every one exists
CITED = sorted({c for t in (*ALLOWS.values(), *DEFINES.values(), *HOOK_CALLS.values(),
                           UNNAMED_ERROR)
                for c in t if c is not None})
