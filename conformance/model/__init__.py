"""What the generator believes about the tensors of a program being drawn: storages, backward
nodes and tensors (tensors.py), shape rules (shapes.py), the backward graph and what a pass
raises (graph.py), in-place writes (inplace.py), clause tagging (clauses.py) and the grids
and weights programs are drawn from (tables.py). Pure logic: no chooser, no statements."""
from __future__ import annotations

from .clauses import backward_clauses, clauses_of_observing, observe_clauses, observed_state
from .graph import (
    after_backward,
    captured,
    carried,
    every_node,
    joins,
    leaves_reached,
    needed,
    predict,
    ran_before_failure,
    reach,
)
from .inplace import (
    apply_inplace,
    detach_in_place,
    hide_refused_views,
    inplace_ok,
    leaf_rg_view,
    owns_memory,
)
from .shapes import (
    broadcast,
    copy_kw,
    index_shape,
    matmul_shape,
    numel,
    part_contiguous,
    view_options,
)
from .tensors import Node, Storage, T, accumulator

__all__ = ["Node", "Storage", "T", "accumulator", "after_backward", "apply_inplace",
           "backward_clauses", "broadcast", "captured", "carried", "copy_kw", "detach_in_place",
           "every_node", "index_shape", "hide_refused_views", "owns_memory",
           "inplace_ok", "joins", "leaf_rg_view", "leaves_reached", "matmul_shape",
           "needed", "numel", "observe_clauses", "observed_state", "clauses_of_observing",
           "part_contiguous", "predict", "ran_before_failure", "reach", "view_options"]
