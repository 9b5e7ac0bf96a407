"""The table of scenarios: a few statements that build what one rare behaviour needs, drawn as
focus moves (focus.py draws among them; focus.py and higher.py declare them)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kinds import KINDS
from ..kinds.backward import joined
from ..model import predict, reach

Scenario = Callable[[Any], bool]
# name -> (capabilities it needs, weight in the focus table, the draw)
SCENARIOS: dict[str, tuple[tuple[str, ...], int, Scenario]] = {}
# the scenarios' order in the focus table, which a draw's outcome depends on: an explicit
# tuple, never the order modules happen to be imported in (a new scenario goes last)
ORDER: tuple[str, ...] = (
    "hooked tensor used twice",
    "hooks on two tensors of one pass",
    "in-place op on a hooked tensor",
    "autograd.grad through a hooked tensor",
    "retained tensor reached twice",
    "in-place op on a retained tensor",
    "autograd.grad with a retained tensor",
    "write through a detached alias",
    "write through a view of a non-leaf",
    "two in-place ops in a row",
    "a hook removed that is not the newest, then another",
    "a no_grad block",
    "leaves that require grad made under no_grad, and the mode asked",
    "a node post-hook scaling a gradient beside an undefined one, then backward",
    "a node hook, then a backward pass",
    "an enable_grad block",
    "a retained tensor with a hook",
    "matmul of graphs",
    "a leaf written in place under no_grad",
    ".grad reset to None, then another backward pass",
    "autograd.backward on two roots",
    "setitem on a non-leaf",
    "a write through .data",
    "an augmented assignment",
    "an in-place op that saves its output, then backward",
    "a non-leaf overwritten (fill_, copy_), then backward",
    "a set_grad_enabled block",
    "where with a graph as its first operand, then backward",
    "a cast to the other float dtype, then backward and the leaf's .grad",
    "max or min over tied elements, then backward",
    "an op at its kinks, then backward and the leaf's .grad",
    "an in-place op between two disjoint views of one tensor, then backward",
    "a retained tensor marked dirty between two passes",
    "a pass from one output of a Function of two",
    "a pass from a Function that sends a leaf no gradient",
    "a leaf's .grad bound to a name, then added into",
    "a leaf of another layout, and the .grad a pass gives it",
    "a tensor assigned to .grad and kept, then added into",
    "autograd.grad with create_graph, then a pass through the gradient's graph",
    "inference mode",
    "a view of a view that is not contiguous or has three dims, then backward",
    "a narrow at its dim's end (an empty view), then backward",
    "a view of a tensor of more than 256 elements, then backward",
    "a view of a tensor of four dims, then backward",
    "an expand that adds leading dims to a matrix, then backward",
    "an index with None among slices and ints, then backward",
    "setitem of a value broadcast to the view it writes, then backward",
    "zero_ or fill_ of an expanded view of a tensor that does not require grad",
    "a view of a tensor with a size-1 dim, then a reshape or view of it, then backward",
    "a narrow that starts from the end of its dim, then backward",
)

# scenario -> (vocabulary, weight from it on): from vocabulary 4 those whose clauses the
# measure still found in fewer than 20 programs of 300 weigh more, and the scenarios of a newer
# vocabulary weigh 0 before it (tests/generator_stats.py)
REWEIGHTED_SCENARIOS: dict[str, tuple[tuple[int, int], ...]] = {}


def scenario(name: str, needs: tuple[str, ...] = (), weight: int = 1,
             reweighted: tuple[tuple[int, int], ...] = ()) -> Callable[[Scenario], Scenario]:
    """Declare a scenario: its name, the capabilities it needs, its weight in the focus
    table (2 for those whose clauses the measure found rarer: tests/generator_stats.py) and
    its (vocabulary, weight) changes."""
    def declare(fn: Scenario) -> Scenario:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name!r} is declared twice")
        SCENARIOS[name] = (needs, weight, fn)
        if reweighted:
            REWEIGHTED_SCENARIOS[name] = reweighted
        return fn
    return declare


def backward_pass(g: Any, t: Any, retain: Any = "draw") -> bool:
    """A backward pass from t (its sum), mostly through a graph joined with others first; none
    when it would raise an error the capabilities do not let a program keep (Gen.ok_kind)."""
    t = joined(g, t)
    if t.node is not None and not g.ok_kind(predict(reach([t.node]))):
        return False
    return g.emit_backward(g.sum_of(t) if t.shape else t, [], retain)


def backward_then_grad(g: Any, x: Any, t: Any) -> bool:
    """A backward pass from t (backward_pass), then a look at x.grad."""
    backward_pass(g, t)
    return KINDS["observe"].draw(g, x, "grad")
