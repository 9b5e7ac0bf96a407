"""Finer capabilities: what an engine declares beyond the coarse names, and how the two meet.

Three capabilities of the vocabulary (spec/README.md, "Capability vocabulary") refine a
coarser one, which implies them:

    view_ops         views:       view ops and indexing whose results need not alias
    no_grad          grad_modes:  the `no_grad` context manager alone
    graph_structure  grad_fn:     grad_fn present or absent and the shape of next_functions,
                                  not torch's node names

An engine that declares the coarse name has the finer one too (`closure`); one that declares
only the finer name gets the statements it allows and no clause that needs the coarse one.
Programs and reports record the declared set with the finer names its coarse ones imply left
out (`normal`), so that what they record for an engine declaring no finer name is what it was.

An engine may also declare ops of the op table it lacks (`Engine.lacks_ops`); the generator's
capability set then carries one `lacks:<op>` entry per op (`lacks`, `lacked_ops`), which a
combined set keeps from either side (`combine`), since the generator must leave out what
either engine cannot run.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable

# finer capability -> the coarse one that implies it
FINER: dict[str, str] = {"view_ops": "views", "no_grad": "grad_modes",
                         "graph_structure": "grad_fn"}
LACKS = "lacks:"        # prefix of an op the engine lacks, in a generator's capability set


def lacks(ops: Iterable[str]) -> frozenset[str]:
    """The capability-set entries that say these ops are lacked."""
    return frozenset(LACKS + op for op in ops)


def lacked_ops(caps: Iterable[str]) -> frozenset[str]:
    """The ops a capability set says are lacked."""
    return _lacked_ops(frozenset(caps))


@functools.lru_cache(maxsize=256)   # asked for every program drawn, of a few sets
def _lacked_ops(caps: frozenset[str]) -> frozenset[str]:
    return frozenset(c[len(LACKS):] for c in caps if c.startswith(LACKS))


def closure(caps: Iterable[str]) -> frozenset[str]:
    """The capabilities with every finer one their coarse ones imply."""
    caps = frozenset(caps)
    return caps | {fine for fine, coarse in FINER.items() if coarse in caps}


def normal(caps: Iterable[str]) -> frozenset[str]:
    """The capabilities less the finer ones a coarse one present implies (what is recorded)."""
    return _normal(frozenset(caps))


@functools.lru_cache(maxsize=256)   # recorded with every program drawn, of a few sets
def _normal(caps: frozenset[str]) -> frozenset[str]:
    return frozenset(c for c in caps if FINER.get(c) not in caps)


@functools.lru_cache(maxsize=256)   # a program's meta, of a few sets
def recorded(caps: frozenset[str]) -> tuple[str, ...]:
    """The capabilities a program records (program meta "capabilities"): normal, sorted."""
    return tuple(sorted(normal(caps)))


def combine(engine: Iterable[str], oracle: Iterable[str]) -> frozenset[str]:
    """What programs for an engine judged against an oracle may use: the capabilities both
    have (finer ones implied included), normalised, and the ops either lacks."""
    engine, oracle = frozenset(engine), frozenset(oracle)
    both = closure(c for c in engine if not c.startswith(LACKS)) & \
        closure(c for c in oracle if not c.startswith(LACKS))
    return normal(both) | lacks(lacked_ops(engine) | lacked_ops(oracle))


def has(caps: Iterable[str], capability: str) -> bool:
    """Whether the capabilities include `capability`, or a coarse one that implies it."""
    caps = frozenset(caps)
    return capability in caps or FINER.get(capability, "") in caps
