"""The backward passes a program being drawn emits: their clauses, what they do to the model
(freed nodes, written grads) and the draw of their settings. A mixin of core.Gen (the Gen's
model, chooser and emit are what these methods use)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import model
from ..lang.program import Stmt
from ..model import Node, T
from ..model.tables import RETAIN_GRAPH
from . import errors


class BackwardPasses:
    """Gen's backward passes (the attributes are core.Gen's)."""

    caps: frozenset[str]
    handles: dict[str, tuple[Node, bool]]
    vocabulary: int
    live: Callable[..., list[T]]

    def backward_clauses(self, nodes: list[Node], kind: str | None,
                         live: list[T] | None = None) -> list[str]:
        """`live`: self.live(), where the caller has it."""
        # a node has tensor hooks exactly when a handle that is no post hook names it
        hooked = [n for n, post in self.handles.values() if not post]
        return model.backward_clauses(self.live() if live is None else live, nodes, kind,
                                      hooked)

    def after_backward(self, nodes: list[Node], retain: bool | None, inputs: list[T] | None,
                       create_graph: bool = False, live: list[T] | None = None):
        """`live`: self.live(), where the caller has it (read only without inputs)."""
        if inputs is None and live is None:
            live = self.live()
        model.after_backward(live or [], nodes, retain, inputs, create_graph)

    def grads_open(self) -> None:
        """A backward raised: every .grad is open now (UNSPEC-1)."""
        for t in self.tensors.values():
            t.grad_plain = t.grad_node_known = False

    def draw_retain(self) -> bool | None:
        if "retain_graph" not in self.caps:
            return None
        return self.weighted("retain_graph", RETAIN_GRAPH)

    def emit_backward(self, root: T, gradient: list[Any], retain: Any = "draw",
                      inputs: list[T] | None = None, kind: str | None = None,
                      create_graph: bool = False, draw_inputs: bool = True) -> bool:
        """Emit root.backward(...) and update the model; `kind` is the deliberate error it
        raises (its clause is added), else the model predicts what it raises. With
        create_graph the .grad it stores is recorded (DOUBLE-3) and the graph kept by default
        (FREE-7). Without `inputs` it sometimes draws some, unless not `draw_inputs`."""
        nodes = model.reach([root.node])
        predicted = model.predict(nodes) if root.rg and root.node is not None else "NO_GRAD_FN"
        retain = self.draw_retain() if retain == "draw" else retain
        if inputs is None and draw_inputs and "backward_inputs" in self.caps and self.boolean(
                "backward inputs", 20):
            leaves = [u for u in self.live(lambda u: u.leaf and u.rg and u.node is not None)
                      if u.node in nodes]
            if leaves:
                inputs = [self.choice("input", leaves)]
                if self.vocabulary >= 3 and len(leaves) > 1 and self.boolean("second input", 50):
                    other = self.choice("input 2", leaves)
                    if other is not inputs[0]:
                        inputs.append(other)
        params: dict[str, Any] = {"retain_graph": retain}
        if create_graph:
            params["create_graph"] = True
        if inputs:
            params["inputs"] = [u.name for u in inputs]
            nodes = model.needed([root.node], inputs)
            predicted = model.predict(nodes) if predicted != "NO_GRAD_FN" else predicted
        live = self.live()      # (what the pass's clauses and its effects read: the same)
        cl = self.backward_clauses(nodes, predicted, live)
        cl += ["FREE-2"] if retain else ["FREE-1"]
        if retain is None:
            cl.append("FREE-7")
        if gradient:
            cl.append("API-2")
        if root.leaf:
            cl.append("API-5")
        if inputs:
            cl.append("API-11")
        if kind:
            cl.append(errors.ERROR_CLAUSE[kind])
        if create_graph and predicted is None and kind is None:
            cl += ["DOUBLE-1", "DOUBLE-3"] + (["DOUBLE-7"] if any(n.hooks for n in nodes) else [])
            if any(n.packed for n in nodes):
                cl.append("SAVED-12")       # the gradient recorded from unpacked values
        self.emit(Stmt("backward", None, root.name, gradient, params), cl,
                  kind or predicted)
        if predicted is None and kind is None:
            self.after_backward(nodes, retain or (create_graph and retain is None),
                                inputs or None, create_graph, live)
        else:
            self.grads_open()
            self.after_failed_pass(nodes, kind or predicted, retain or (
                create_graph and retain is None))
        return True

    def after_failed_pass(self, nodes: list[Node], kind: str | None, retain: Any,
                          unrun: frozenset[int] | None = None) -> None:
        """A pass over `nodes` raised `kind`: where that is set_()'s node's or a detached
        input's (vocabulary 20), the nodes torch ran before it (model.ran_before_failure)
        freed what they held, unless the graph is retained, and a backward's accumulators
        among them filled their leaves' .grad (autograd.grad, `unrun` given, runs none)."""
        if kind not in ("SET_BACKWARD", "SAVED_DETACHED_INPLACE"):
            return
        ran = model.ran_before_failure(nodes)
        if not retain:
            for n in ran:
                n.freed = n.freed or unrun is None or id(n) not in unrun
        if unrun is None:
            ids = {id(n) for n in ran if n.leaf}
            for t in self.live(lambda u: u.leaf and u.rg and u.node is not None):
                if id(t.node) in ids:
                    t.has_grad = True

