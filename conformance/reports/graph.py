"""Pictures of the backward graph: a program run on an engine up to a statement, the graph of
its live tensors as the engine describes it (`Engine.graph_of`, plain data), drawn as DOT and
rendered by Graphviz's `dot` through the graphviz package (the optional extra `graph`).

What a picture shows, and its legend says: every live tensor that requires grad; a leaf as a
green ellipse labelled with its program name (the seed articles mark leaves green), a grad_fn
node as a box with its `name()`, the program names of the tensors it is the grad_fn of, and its
saved values where the engine can say (torch: the node's `_saved_*` attributes; refimpl: its
`saved` arrays); a node whose saved values were freed is grey and dashed. Arrows follow
next_functions (the way backward runs); a dotted line links an AccumulateGrad node to its
leaf. What a divergence names is red.

Where `dot` is not installed the DOT text is written instead (`render` says so in one line),
so that a picture is never what makes a run fail: `draw_folder`, which a divergence folder's
writer calls, turns every failure into one line of the folder's notes.txt.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..engines.base import Engine, grad_mode
from ..judge.compare import Divergence
from ..judge.executor import names, settled
from ..lang.program import Program, Stmt

PICTURES = ("graph-oracle", "graph-engine")     # a divergence folder's, without the suffix
LEAF_FILL, FREED_FILL, HIGHLIGHT = "#b7e4b0", "#e8e8e8", "red"
INSTALL = "pip install 'gradspec[graph]'"


class GraphError(Exception):
    """A picture that cannot be drawn (one line): no graphviz package, an engine without
    grad_fn, a statement the program does not have."""


def _graphviz() -> Any:
    try:
        import graphviz
    except ImportError:
        raise GraphError(f"drawing needs the graphviz package ({INSTALL})") from None
    return graphviz


def formats() -> frozenset[str]:
    """The output suffixes `render` knows: 'dot' (the text) and Graphviz's formats."""
    return frozenset(_graphviz().FORMATS) | {"dot"}


# ---- running a program up to a statement -------------------------------------------------
def truncate(program: Program, at: str | None) -> Program:
    """The program up to statement `at` ('3', or '5.0' in a block) inclusive; a block that
    holds it ends after it. None: the whole program. GraphError for a path it lacks."""
    if at is None:
        return program
    if at not in dict(program.walk()):
        paths = [p for p, _ in program.walk()]
        have = f"{paths[0]} to {paths[-1]}" if paths else "none"
        raise GraphError(f"no statement {at!r} in the program (its statements: {have})")

    def cut(stmts: list[Stmt], parts: list[int]) -> list[Stmt]:
        head = stmts[parts[0]]
        if len(parts) > 1:
            head = replace(head, body=cut(head.body, parts[1:]))
        return [*stmts[:parts[0]], head]

    return Program(cut(program.statements, [int(p) for p in at.split(".")]),
                   seed=program.seed, meta=dict(program.meta))


def capture(program: Program, engine: Engine, at: str | None = None) -> dict[str, Any]:
    """Run `program` on `engine` up to statement `at` (None: all of it) and return the graph
    of the tensors then bound (Engine.graph_of), with `engine`, `version` and `at`. The run is
    the one `execute` keeps (`settled`: a failed unit's rerun included), with its tensors still
    bound, where `execute` drops them when the program ends. Grad mode is put back as it was,
    since this may run in a campaign's own process."""
    if "grad_fn" not in engine.capabilities:
        raise GraphError(f"engine {engine.name} lacks the grad_fn capability: it cannot say "
                         "what its graph is")
    mode = grad_mode(engine)
    run = None
    try:
        # as `execute` runs it (units, reruns of a failed unit: judge/executor.py, settled)
        run = settled(truncate(program, at), engine, keep=True)
        live = {n: t for n, t in run.env.items() if n not in run.dead}
        data = engine.graph_of(live)
    finally:
        if run is not None:
            run.release()
        if mode is not None and grad_mode(engine) != mode:
            engine.grad_mode("set_grad_enabled", mode)  # sets the mode when made (MODE-3)
    return {**data, "engine": engine.name, "version": engine.version, "at": at}


# ---- drawing ------------------------------------------------------------------------------
def _label(lines: Iterable[str], end: str = "\\n") -> str:
    """A DOT label of plain lines: each escaped, joined by DOT's line break `end`."""
    gv = _graphviz()
    text = end.join(gv.escape(line) for line in lines) + (end if end != "\\n" else "")
    return gv.nohtml(text)      # a label that starts with '<' is still plain text


def to_dot(data: dict[str, Any], title: str = "", highlight: Sequence[str] = ()) -> str:
    """The DOT text of a graph as Engine.graph_of gives it (plain data in, text out). The
    tensors named in `highlight` (their leaf, or the node that is their grad_fn, and its
    AccumulateGrad) are drawn red."""
    gv = _graphviz()
    dot = gv.Digraph("backward", node_attr={"fontname": "Helvetica", "fontsize": "10"},
                     edge_attr={"fontname": "Helvetica", "fontsize": "9"})
    tensors, nodes = data.get("tensors", []), data.get("nodes", [])
    marked = set(highlight)
    hot_tensors = {i for i, t in enumerate(tensors) if marked & set(t["names"])}
    hot_nodes = {t["node"] for i, t in enumerate(tensors) if i in hot_tensors
                 and t["node"] is not None}
    hot_nodes |= {k for k, n in enumerate(nodes) if n.get("variable") in hot_tensors}
    made: dict[int, list[str]] = {}     # node -> the tensors it is the grad_fn of
    for t in tensors:
        if t["node"] is not None:
            made.setdefault(t["node"], []).extend(t["names"])
    for i, t in enumerate(tensors):
        if t["leaf"]:
            what = ", ".join(t["names"]) or "(a leaf no name holds)"
            dot.node(f"t{i}", _label([what, f"{t['shape']} {t['dtype']}"]), shape="ellipse",
                     style="filled", fillcolor=LEAF_FILL,
                     **_hot(i in hot_tensors))
    for k, n in enumerate(nodes):
        dot.node(f"n{k}", _label(_node_lines(n, made.get(k, []))), shape="box",
                 **{**_freed(n.get("freed")), **_hot(k in hot_nodes)})
        if n.get("variable") is not None:
            dot.edge(f"n{k}", f"t{n['variable']}", style="dotted", arrowhead="none",
                     **_hot(k in hot_nodes))
    fanout: dict[int, int] = {}
    for src, _, _ in data.get("edges", []):
        fanout[src] = fanout.get(src, 0) + 1
    for src, dst, j in data.get("edges", []):
        dot.edge(f"n{src}", f"n{dst}", **({"label": f"[{j}]"} if fanout[src] > 1 else {}))
    if not tensors:
        dot.node("empty", "no live tensor requires grad", shape="plaintext")
    dot.attr(label=_label(_legend(data, title, bool(hot_tensors)), "\\l"), labelloc="b",
             labeljust="l", fontname="Helvetica", fontsize="9")
    return dot.source


def _node_lines(node: dict[str, Any], made: list[str]) -> list[str]:
    lines = [node["name"]]
    if made:
        lines.append(f"grad_fn of {', '.join(made)}")
    if node.get("freed"):
        lines.append("saved values freed")
    lines += [f"saved {label}: {text}" for label, text in node.get("saved") or []]
    return lines


def _freed(freed: bool | None) -> dict[str, str]:
    return {"style": "dashed,filled", "fillcolor": FREED_FILL, "fontcolor": "gray35"} \
        if freed else {}


def _hot(hot: bool) -> dict[str, str]:
    return {"color": HIGHLIGHT, "fontcolor": HIGHLIGHT, "penwidth": "2.5"} if hot else {}


def _legend(data: dict[str, Any], title: str, highlighted: bool) -> list[str]:
    nodes = data.get("nodes", [])
    lines = [title or f"{data.get('engine', '?')} {data.get('version', '')}: backward graph"
             + (f" after statement {data['at']}" if data.get("at") else "")]
    lines += ["green ellipse: a leaf that requires grad, with its program names",
              "box: a grad_fn node, name(); 'grad_fn of x': the program's tensors it made",
              "arrow: next_functions[i] (the way backward runs); dotted: AccumulateGrad "
              "and its leaf"]
    if any(n.get("saved") is None for n in nodes):
        lines.append(f"saved values: not shown where {data.get('engine', 'the engine')} "
                     "cannot say")
    else:
        lines.append("saved: what the node keeps for backward (a name: that tensor)")
    if any(n.get("freed") for n in nodes):
        lines.append("grey dashed: its saved values were freed by a backward pass")
    if highlighted:
        lines.append("red: named in the divergence")
    return lines


def render(source: str, out: Path) -> tuple[Path, str | None]:
    """Write the picture of DOT `source` to `out`, in the format its suffix names (.dot: the
    text itself). Without Graphviz's `dot` program, the text goes to `out` with the suffix
    .dot instead; returns the path written and, then, one line saying so."""
    out = Path(out)
    if out.suffix == ".dot":
        out.write_text(source, encoding="utf-8")
        return out, None
    gv = _graphviz()
    try:
        picture = gv.Source(source).pipe(format=out.suffix.lstrip(".") or "svg")
    except gv.ExecutableNotFound:
        text = out.with_suffix(".dot")
        text.write_text(source, encoding="utf-8")
        # the file's name only: a campaign draws into a staging folder it then renames
        return text, (f"Graphviz's dot program is not installed: wrote the DOT text to "
                      f"{text.name} beside it instead of {out.name} (apt-get install graphviz "
                      f"renders it)")
    out.write_bytes(picture)
    return out, None


# ---- a divergence folder's pictures --------------------------------------------------------
def named_in(program: Program, div: Divergence) -> list[str]:
    """The tensors a divergence is about: the one its observation names ('x.grad = ...'),
    else those its statement reads and binds."""
    stmt = dict(program.walk()).get(div.path)
    if stmt is None:
        return []
    reads, binds = names(stmt)
    for text in (div.oracle, div.engine):
        head = str(text).split(" ", 1)[0].split(".", 1)[0]
        if head in reads:
            return [head]
    return [*binds, *reads]


def capture_pair(program: Program, divergences: Sequence[Divergence], engine: Engine,
                 oracle: Engine) -> dict[str, Any]:
    """What a divergence folder's pictures show, as plain data: the graph on each engine after
    the first differing statement (or why it could not be captured), and what it names. Runs
    where the program was judged, in a campaign's worker, so that an engine that crashes
    while its graph is read takes down that worker, never the campaign."""
    first = next((d for d in divergences if d.path), None)
    if first is None:
        return {"note": "graph pictures: not drawn: the divergence is at no statement"}
    pair: dict[str, Any] = {"at": first.path, "op": first.op, "what": first.what,
                            "hot": named_in(program, first)}
    for role, eng in (("oracle", oracle), ("engine", engine)):
        try:
            pair[role] = capture(program, eng, first.path)
        except GraphError as exc:
            pair[role] = {"error": f"not drawn: {exc}"}
        except Exception as exc:  # noqa: BLE001 - one side's failure leaves the other's
            pair[role] = {"error": f"capture failed: {_why(exc)}"}
    return pair


def draw_folder(folder: Path, pair: dict[str, Any] | None) -> list[str]:
    """graph-oracle.svg and graph-engine.svg in a divergence folder, from what capture_pair
    captured: what the divergence names in red. Never raises: what was not drawn, and the
    DOT text written for want of `dot`, are lines of the folder's notes.txt (returned too)."""
    try:
        notes = _draw_pair(Path(folder), pair)
    except Exception as exc:  # noqa: BLE001 - a picture must never fail the run
        notes = [f"graph pictures: not drawn: {_why(exc)}"]
    if notes:
        try:
            with open(Path(folder) / "notes.txt", "a", encoding="utf-8") as f:
                f.write("".join(f"{n}\n" for n in notes))
        except OSError:
            pass
    return notes


def _draw_pair(folder: Path, pair: dict[str, Any] | None) -> list[str]:
    if not pair:
        return ["graph pictures: not drawn: the graphs were not captured"]
    if "note" in pair:
        return [pair["note"]]
    notes = []
    for stem, role in zip(PICTURES, ("oracle", "engine"), strict=True):
        data = pair.get(role) or {"error": "not captured"}
        if "error" in data:
            notes.append(f"{stem}: {data['error']}")
            continue
        try:
            title = (f"{role} {data['engine']} {data['version']}: the backward graph after "
                     f"statement {pair['at']} ({pair['op']}), where {pair['what']} first "
                     "differs")
            _, note = render(to_dot(data, title, pair["hot"]), folder / f"{stem}.svg")
        except GraphError as exc:
            note = f"{stem}: not drawn: {exc}"
        except Exception as exc:  # noqa: BLE001 - one side's failure leaves the other's
            note = f"{stem}: drawing failed: {_why(exc)}"
        if note:
            notes.append(note)
    return notes


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"
