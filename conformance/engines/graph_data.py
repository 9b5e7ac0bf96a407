"""Engine.graph_of for a torch-shaped module (conformance/engines/torchlike.py): the data a
graph picture is drawn from (conformance/reports/pictures)."""
from __future__ import annotations

from typing import Any


def graph_data(engine: Any, tensors: dict[str, Any]) -> dict[str, Any]:
    """Engine.graph_of for a torch-shaped module: grad_fn, next_functions, name(), an
    AccumulateGrad's `variable` and the saved values (`_saved_values`). Nodes are
    numbered in the order first reached (the tensors in the order given, then breadth first
    through next_functions), so the data, and the picture, is the same on every run."""
    kind = getattr(engine.torch, "Tensor", None)
    named = [(n, t) for n, t in tensors.items() if kind is None or isinstance(t, kind)]
    live = [(n, t) for n, t in named if getattr(t, "requires_grad", False)]
    found: dict[int, int] = {}      # id(tensor) -> its entry; the objects are held in `held`
    held: list[Any] = []
    out: dict[str, Any] = {"tensors": [], "nodes": [], "edges": []}

    def entry(t: Any, name: str | None) -> int:
        if id(t) not in found:
            found[id(t)] = len(out["tensors"])
            held.append(t)
            out["tensors"].append({"names": [], "leaf": bool(t.is_leaf), "node": None,
                                   "shape": list(engine.shape(t)), "dtype": engine.dtype(t)})
        i = found[id(t)]
        if name is not None:
            out["tensors"][i]["names"].append(name)
        return i

    for name, t in live:
        entry(t, name)
    order: list[Any] = []           # the nodes; held, so that no id() is reused while walking
    index: dict[int, int] = {}

    def number(fn: Any) -> int:
        if id(fn) not in index:
            index[id(fn)] = len(order)
            order.append(fn)
        return index[id(fn)]

    for i, t in enumerate(list(held)):     # the named tensors; leaves join while walking
        if t.grad_fn is not None:
            out["tensors"][i]["node"] = number(t.grad_fn)
    k = 0
    while k < len(order):
        fn = order[k]
        for j, (nxt, _) in enumerate(fn.next_functions):
            if nxt is not None:
                out["edges"].append([k, number(nxt), j])
        k += 1
    for fn in order:
        leaf = getattr(fn, "variable", None)
        saved, freed = _saved_values(engine, fn, named)
        out["nodes"].append({"name": fn.name(), "saved": saved, "freed": freed,
                             "variable": None if leaf is None else entry(leaf, None)})
    return out


def _saved_values(engine: Any, fn: Any, named: list[tuple[str, Any]]
                  ) -> tuple[list[list[str]] | None, bool | None]:
    """What a node saved, as ([label, text] ..., freed). refimpl: `saved`, a tuple of arrays,
    or a marker string once freed. torch (a node is a torch.autograd.graph.Node): one
    `_saved_<name>` attribute per value it may save (None: not saved this time), none if it
    saves nothing, a tensor one raising GRAPH_FREED once freed (so freed is None, unknown,
    for a node that holds no tensor). Any other node cannot say: (None, None)."""
    saved = getattr(fn, "saved", None)
    if isinstance(saved, str):
        return [], True
    if isinstance(saved, tuple):
        return [[f"saved[{i}]", _array_text(s.array)]
                for i, s in enumerate(saved) if s is not None and hasattr(s, "array")], False
    node_type = getattr(getattr(getattr(engine.torch, "autograd", None), "graph", None),
                        "Node", None)
    if isinstance(node_type, type) and isinstance(fn, node_type):
        values: list[list[str]] = []
        freed: bool | None = None       # known only where a tensor was saved
        for a in [a for a in dir(fn) if a.startswith("_saved_")]:
            try:
                value = getattr(fn, a)
                if isinstance(value, engine.torch.Tensor):
                    freed = bool(freed)
                if value is not None:
                    values.append([a[len("_saved_"):], _describe(engine, value, named)])
            except Exception as exc:  # noqa: BLE001 - the engine says why it cannot read it
                kind = engine.classify_error(exc)
                freed = bool(freed) or kind == "GRAPH_FREED"
                if kind != "GRAPH_FREED":
                    why = kind or type(exc).__name__
                    values.append([a[len("_saved_"):], f"unreadable ({why})"])
        return values, freed
    return None, None


def _array_text(array: Any) -> str:
    """An array a refimpl node saved: its shape and dtype (a number, a constant: itself)."""
    if hasattr(array, "shape") and hasattr(array, "dtype"):
        return f"{list(array.shape)} {array.dtype}"
    return repr(array)


def _describe(engine: Any, value: Any, named: list[tuple[str, Any]]) -> str:
    """A saved value in words: the program names of the tensor it is (the same object, or the
    output of the same node), else its shape and dtype; a non-tensor as its repr."""
    kind = getattr(engine.torch, "Tensor", None)
    if kind is None or not isinstance(value, kind):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    fn = value.grad_fn
    names = [n for n, t in named if t is value or (fn is not None and t.grad_fn is fn
                                                  and engine.shape(t) == engine.shape(value))]
    return ", ".join(names) or f"{list(engine.shape(value))} {engine.dtype(value)}"
