"""Read the written spec (spec/*.md) into clause records.

The format is described in spec/README.md. Parsing is strict: a clause that is missing a field
is reported with its file and line, because a spec that silently drops a clause is worse than
one that refuses to load.
"""
from __future__ import annotations

import importlib.resources
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

AREA_FILES = (
    "graph.md", "leaf.md", "grad.md", "retain.md", "hook.md", "version.md",
    "inplace.md", "free.md", "mode.md", "api.md", "deriv.md", "double.md", "function.md",
    "infer.md", "data.md", "saved.md", "view.md", "unspecified.md",
)
CAPABILITIES = (
    "core", "grad_fn", "retain_grad", "hooks", "post_accumulate_hooks", "node_hooks",
    "version_counter", "views", "inplace", "autograd_grad", "grad_modes", "retain_graph",
    "warnings", "backward_inputs", "deriv_ops", "create_graph", "inference_mode",
    "custom_function", "data_assign", "saved_tensors_hooks", "multi_grad_hooks", "narrow_select",
    "multi_views", "grad_dtype", "requires_grad_setter", "detach_inplace", "grad_tensor",
    "view_base", "nn_module",
    # finer capabilities, implied by a coarser one (conformance/spec/capabilities.py)
    "view_ops", "no_grad", "graph_structure",
)
# Conformance classes (spec/README.md, "Conformance classes"): what an engine claims.
CLASSES = ("core", "torch-observable", "diagnostics")
CLAUSE_ID = re.compile(r"\b([A-Z]+)-([0-9]+)\b")
_HEADING = re.compile(r"^## ([A-Z]+-[0-9]+)\s*$")
_AREA_TITLE = re.compile(r"^# (.+)$")
_FENCE = re.compile(r"^```(\w*)\s*$")


class SpecError(Exception):
    """The spec files are malformed; the message names file and line."""


@dataclass
class Example:
    clause: str
    index: int          # 1-based within the clause
    code: str
    path: str
    line: int           # line of the first code line in the .md file

    @property
    def id(self) -> str:
        return f"{self.clause}/{self.index}"


@dataclass
class Clause:
    id: str
    area: str           # e.g. "LEAF"
    file: str           # e.g. "leaf.md"
    line: int
    title: str
    status: str
    verified: str
    since: str          # the torch release the behaviour holds from
    requires: tuple[str, ...]
    rule: str
    why: str
    history: str
    examples: list[Example] = field(default_factory=list)
    text: str = ""      # the clause's markdown, heading included
    cls: str = "core"   # its conformance class (CLASSES): the `class` column
    added: str = ""     # the spec release that introduced it
    revised: str = ""   # the spec release of its last normative change; "" if never

    @property
    def anchor(self) -> str:
        return f"spec/{self.file}#{self.id.lower()}"

    @property
    def number(self) -> int:
        return int(self.id.split("-")[1])


# The wheel carries the repository's spec/ as this subfolder of the package (pyproject.toml maps
# it at build time), so that an installed gradspec does not depend on a checkout.
PACKAGED_SPEC = "text"


def spec_dir() -> Path:
    """The spec folder: $GRADSPEC_SPEC_DIR; else the copy an installed wheel carries; else the
    checkout's spec/ (a checkout or an editable install, where the copy does not exist), so that
    edits to spec/*.md take effect without a reinstall."""
    env = os.environ.get("GRADSPEC_SPEC_DIR")
    if env:
        return Path(env)
    packaged = importlib.resources.files(__package__) / PACKAGED_SPEC
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "spec"


def _paragraph(lines: list[str], label: str) -> str:
    """Text of the paragraph that starts with **Label.**, joined into one line."""
    out: list[str] = []
    collecting = False
    for ln in lines:
        if ln.startswith(f"**{label}.**"):
            collecting = True
            out.append(ln[len(label) + 5:].strip())
            continue
        if collecting:
            if not ln.strip() or ln.startswith("```") or ln.startswith("**") or ln.startswith("|"):
                break
            out.append(ln.strip())
    return " ".join(out).strip()


def _parse_clause(cid: str, file: str, start: int, lines: list[str]) -> Clause:
    where = f"spec/{file}:{start}"
    title = ""
    meta: dict[str, str] = {}
    examples: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        fence = _FENCE.match(ln)
        if fence:
            lang = fence.group(1)
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                raise SpecError(f"{where}: {cid}: unclosed code fence")
            if lang == "python":
                examples.append((start + i + 1, "\n".join(lines[i + 1:j]) + "\n"))
            i = j + 1
            continue
        if not title and ln.startswith("**") and ln.rstrip().endswith("**") \
                and not re.match(r"^\*\*(Rule|Why|History)\.\*\*", ln):
            title = ln.strip()[2:-2].strip()
        if ln.startswith("| status"):
            keys = [c.strip() for c in ln.strip().strip("|").split("|")]
            if i + 2 >= len(lines):
                raise SpecError(f"{where}: {cid}: metadata table has no row")
            vals = [c.strip() for c in lines[i + 2].strip().strip("|").split("|")]
            meta = dict(zip(keys, vals, strict=False))
        i += 1
    for key in ("status", "class", "verified", "since", "added", "revised", "requires"):
        if not meta.get(key):
            raise SpecError(f"{where}: {cid}: metadata field '{key}' is missing")
    if not title:
        raise SpecError(f"{where}: {cid}: no bold title line")
    requires = tuple(r.strip() for r in meta["requires"].split(",") if r.strip())
    for cap in requires:
        if cap not in CAPABILITIES:
            raise SpecError(f"{where}: {cid}: unknown capability '{cap}'")
    cls = meta["class"]
    if cls not in CLASSES:
        raise SpecError(f"{where}: {cid}: class must be one of {', '.join(CLASSES)}, not '{cls}'")
    status = meta["status"].split()[0]
    if status not in ("active", "withdrawn"):
        raise SpecError(f"{where}: {cid}: status must be active or withdrawn, not '{status}'")
    rule = _paragraph(lines, "Rule")
    clause = Clause(
        id=cid, area=cid.split("-")[0], file=file, line=start, title=title,
        status=status, verified=meta["verified"], since=meta["since"], requires=requires,
        rule=rule, why=_paragraph(lines, "Why"), history=_paragraph(lines, "History"),
        text="\n".join([f"## {cid}"] + lines).strip() + "\n", cls=cls,
        added=meta["added"], revised=meta["revised"].strip("-— "),
    )
    clause.examples = [Example(cid, n, code, f"spec/{file}", ln)
                       for n, (ln, code) in enumerate(examples, 1)]
    return clause


def parse_file(path: Path) -> tuple[str, list[Clause]]:
    """Return (area title, clauses) of one area file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    area_title = ""
    heads: list[tuple[int, str]] = []
    in_fence = False
    for n, ln in enumerate(lines):
        if ln.startswith("```"):
            in_fence = not in_fence
        if in_fence:
            continue
        if not area_title and (m := _AREA_TITLE.match(ln)):
            area_title = m.group(1).strip()
        if (m := _HEADING.match(ln)):
            heads.append((n, m.group(1)))
    clauses = []
    for k, (n, cid) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        clauses.append(_parse_clause(cid, path.name, n + 1, lines[n + 1:end]))
    return area_title, clauses


@dataclass
class Spec:
    clauses: dict[str, Clause]          # in spec order: area files in AREA_FILES order
    areas: dict[str, str]               # area prefix -> title
    version: str

    def get(self, cid: str) -> Clause:
        return self.clauses[cid.upper()]

    def active(self) -> list[Clause]:
        return [c for c in self.clauses.values() if c.status == "active"]


@lru_cache(maxsize=4)
def load_spec(directory: str | None = None) -> Spec:
    d = Path(directory) if directory else spec_dir()
    if not d.is_dir():
        raise SpecError(f"spec folder not found: {d} (set GRADSPEC_SPEC_DIR)")
    clauses: dict[str, Clause] = {}
    areas: dict[str, str] = {}
    for name in AREA_FILES:
        p = d / name
        if not p.exists():
            raise SpecError(f"{p} is missing: not a spec folder (GRADSPEC_SPEC_DIR)")
        title, found = parse_file(p)
        for c in found:
            if c.id in clauses:
                other = clauses[c.id]
                raise SpecError(f"spec/{c.file}:{c.line}: {c.id} is duplicated "
                                f"(first at spec/{other.file}:{other.line})")
            clauses[c.id] = c
            areas.setdefault(c.area, title)
    version = "unknown"
    vfile = d / "VERSION"
    if vfile.exists():
        version = vfile.read_text(encoding="utf-8").strip()
    return Spec(clauses=clauses, areas=areas, version=version)


def render_index(spec: Spec) -> str:
    """The text of spec/index.md; tests check the committed file equals this."""
    out = [
        "# gradspec clause index",
        "",
        f"Spec version {spec.version}. Generated by `gradspec index --write`; do not edit by hand.",
        "",
        "| ID | title | area | status | class | verified | since | added | revised |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in spec.clauses.values():
        title = c.title.replace("|", "\\|")
        out.append(f"| [{c.id}]({c.file}#{c.id.lower()}) | {title} | {spec.areas[c.area]} "
                   f"| {c.status} | {c.cls} | {c.verified} | {c.since} | {c.added} "
                   f"| {c.revised or '-'} |")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class ErrorKind:
    kind: str
    type: str           # exception or warning class name, e.g. "RuntimeError"
    prefix: str         # the message starts with this; "…" stands for any text
    clauses: tuple[str, ...]
    is_warning: bool

    def matches(self, message: str) -> bool:
        parts = self.prefix.split("…")
        if len(parts) == 1:
            return message.startswith(self.prefix)
        return re.match(".*?".join(re.escape(p) for p in parts), message, re.S) is not None


_ERROR_ROW = re.compile(r"^\|\s*`?([A-Z][A-Z0-9_]+)`?\s*\|")


@lru_cache(maxsize=4)
def load_errors(directory: str | None = None) -> dict[str, ErrorKind]:
    """Parse the table in spec/errors.md: | kind | type | message prefix | clauses |."""
    d = Path(directory) if directory else spec_dir()
    path = d / "errors.md"
    kinds: dict[str, ErrorKind] = {}
    for n, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not _ERROR_ROW.match(ln):
            continue
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if len(cells) != 4:
            raise SpecError(f"spec/errors.md:{n}: expected 4 cells, got {len(cells)}")
        kind, typ, prefix, cites = cells[0].strip("`"), cells[1].strip("`"), cells[2], cells[3]
        if kind in kinds:
            raise SpecError(f"spec/errors.md:{n}: error kind {kind} is duplicated")
        kinds[kind] = ErrorKind(kind, typ, prefix.replace("\\|", "|"),
                                tuple(CLAUSE_ID.findall(cites) and
                                      [f"{a}-{b}" for a, b in CLAUSE_ID.findall(cites)]),
                                typ.endswith("Warning"))
    return kinds
