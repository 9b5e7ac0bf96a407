"""The spec's own rules (spec/README.md): every clause is complete, IDs are stable and unique,
the index is current, every error kind is exercised, and every clause ID cited exists."""
import re
from pathlib import Path

import pytest

from conformance.examples import _markers
from conformance.specdoc import (
    AREA_FILES,
    load_errors,
    load_spec,
    render_index,
    spec_dir,
)

ROOT = Path(__file__).resolve().parent.parent
SPEC = load_spec()
CLAUSES = list(SPEC.clauses.values())
VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
NORMATIVE = re.compile(r"\b(MUST NOT|MUST|MAY|SHOULD NOT|SHOULD)\b")
AREAS = sorted({c.area for c in CLAUSES}, key=len, reverse=True)
CITED = re.compile(r"\b(" + "|".join(AREAS) + r")-(\d+)\b")


def test_spec_has_at_least_60_active_clauses_in_every_area():
    assert len(SPEC.active()) >= 60
    assert len(SPEC.areas) == len(AREA_FILES)


@pytest.mark.parametrize("clause", CLAUSES, ids=[c.id for c in CLAUSES])
def test_clause_is_complete(clause):
    where = f"{clause.anchor} (line {clause.line})"
    assert "TODO" not in clause.text, f"{where}: TODO left in clause"
    assert clause.examples, f"{where}: clause has no example"
    assert NORMATIVE.search(clause.rule), f"{where}: rule has no MUST/MUST NOT/MAY: {clause.rule!r}"
    assert clause.why, f"{where}: no **Why.** rationale"
    assert VERSION.match(clause.verified), f"{where}: verified {clause.verified!r} is no version"
    assert VERSION.match(clause.since), f"{where}: since {clause.since!r} is no version"


def test_ids_are_numbered_from_one_without_gaps_per_area():
    for area in SPEC.areas:
        nums = [c.number for c in CLAUSES if c.area == area]
        assert nums == list(range(1, len(nums) + 1)), f"{area}: {nums}"


def test_clause_ids_are_locked():
    # spec/clauses.lock lists every ID ever issued: an ID may be withdrawn, never removed.
    locked = [ln.split()[0] for ln in (spec_dir() / "clauses.lock").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    assert len(locked) == len(set(locked)), "duplicate ID in clauses.lock"
    missing = [cid for cid in locked if cid not in SPEC.clauses]
    assert not missing, f"clauses removed from spec/ (withdraw them instead): {missing}"
    unlocked = [cid for cid in SPEC.clauses if cid not in locked]
    assert not unlocked, (
        f"new clauses not in spec/clauses.lock (run gradspec index --write): {unlocked}")


def test_load_spec_rejects_duplicate_id(tmp_path):
    from conformance.specdoc import SpecError
    for name in list(AREA_FILES) + ["errors.md"]:
        (tmp_path / name).write_text((spec_dir() / name).read_text())
    (tmp_path / "graph.md").write_text((tmp_path / "graph.md").read_text()
                                       + (spec_dir() / "leaf.md").read_text())
    with pytest.raises(SpecError, match="LEAF-1 is duplicated"):
        load_spec.__wrapped__(str(tmp_path))


def test_index_is_current():
    committed = (spec_dir() / "index.md").read_text()
    assert committed == render_index(SPEC), "spec/index.md is stale: run gradspec index --write"


def test_every_error_kind_is_exercised_by_an_example_and_cites_real_clauses():
    kinds = load_errors()
    used = set()
    for c in CLAUSES:
        for ex in c.examples:
            for m in (m for ms in _markers(ex.code).values() for m in ms):
                if m.kind in ("raises:", "warns:"):
                    used.add(m.arg)
    assert not (set(kinds) - used), f"error kinds no example raises: {sorted(set(kinds) - used)}"
    assert not (used - set(kinds)), f"markers name unknown kinds: {sorted(used - set(kinds))}"
    for k in kinds.values():
        assert k.clauses, f"{k.kind} cites no clause"
        for cid in k.clauses:
            assert cid in SPEC.clauses, f"{k.kind} cites unknown {cid}"


def _repo_files():
    for top in ("spec", "refimpl", "conformance", "tests", "docs", "benchmarks"):
        for p in sorted((ROOT / top).rglob("*")):
            if p.suffix in (".py", ".md", ".txt", ".toml", ".json") and p.is_file() \
                    and "__pycache__" not in p.parts:
                yield p
    yield ROOT / "README.md"


def test_every_cited_clause_exists():
    bad = []
    for p in _repo_files():
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for m in CITED.finditer(line):
                cid = f"{m.group(1)}-{m.group(2)}"
                if cid not in SPEC.clauses:
                    bad.append(f"{p.relative_to(ROOT)}:{n}: {cid}")
    assert not bad, "citations of clauses that do not exist:\n" + "\n".join(bad)


def test_every_clause_is_cited_by_a_test():
    # The executable-spec test runs every example, but a clause also needs a test that names it.
    cited = set()
    for p in sorted((ROOT / "tests").rglob("*.py")):
        if p.name == "test_spec_format.py":
            continue
        for m in CITED.finditer(p.read_text(encoding="utf-8")):
            cited.add(f"{m.group(1)}-{m.group(2)}")
    uncited = [c.id for c in CLAUSES if c.id not in cited]
    assert not uncited, f"clauses no test in tests/ cites: {uncited}"
