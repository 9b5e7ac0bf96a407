"""Names its graph nodes its own way (no `Backward0` suffix, `Accumulate` for torch's
`AccumulateGrad`) and is right about everything else: it diverges only in what the class
torch-observable covers (node names and the names of the edges, spec/README.md, "Conformance
classes"), so it conforms to core and diagnostics, and a run that judges only those passes."""
from __future__ import annotations

import re

from ._base import Broken

_SUFFIX = re.compile(r"(Backward\d*|Grad)$")


def _renamed(name: str | None) -> str | None:
    return None if name is None else (_SUFFIX.sub("", name) or name)


class RenamedNodes(Broken):
    label = "renamed_nodes"

    def grad_fn_name(self, t):
        return _renamed(super().grad_fn_name(t))

    def next_functions(self, t):
        return [_renamed(n) for n in super().next_functions(t)]


def factory(device: str = "cpu") -> RenamedNodes:
    return RenamedNodes(device)
