"""Spec releases (conformance/spec/releases.py): no silent change to a clause's normative text,
every change recorded (its `revised` column and spec/CHANGES.md), each release archived, and
`gradspec spec ID --at VERSION` printing a clause as that release had it."""
from __future__ import annotations

import json
import re

import pytest

from conformance.cli import main
from conformance.spec.reader import CLASSES, load_spec, spec_dir
from conformance.spec.releases import (
    digest,
    load_archive,
    read_lock,
    release_of,
    releases,
    render_ids,
)

SPEC = load_spec()
COMING = release_of(SPEC.version)
PREVIOUS = [v for v in releases(spec_dir()) if v != COMING][-1]
ARCHIVE = load_archive(spec_dir(), PREVIOUS)["clauses"]


def _listed(cid: str) -> bool:
    """Whether CHANGES.md's section for the coming release names `cid` (as a whole ID: VER-1
    is not listed by a line about VER-10)."""
    return re.search(rf"(?<![\w-]){re.escape(cid)}(?![\w-])", _changes_section()) is not None


def _changes_section() -> str:
    """The text CHANGES.md gives the release the tree's text is (or becomes)."""
    text = (spec_dir() / "CHANGES.md").read_text(encoding="utf-8")
    heads = [m for m in re.finditer(r"^## (.+)$", text, re.M)]
    for i, m in enumerate(heads):
        title = m.group(1)
        if title.startswith(COMING) or (SPEC.version.endswith("-dev") and "Unreleased" in title):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            return text[m.end():end]
    raise AssertionError(f"spec/CHANGES.md has no section for {COMING} (or Unreleased)")


def test_the_version_is_a_release_or_the_coming_one_in_development():
    assert re.fullmatch(r"\d+\.\d+\.\d+(-dev)?", SPEC.version), SPEC.version
    if not SPEC.version.endswith("-dev"):   # a release: its text is the archived one
        assert COMING in releases(spec_dir()), f"release {COMING} is not archived"
        frozen = load_archive(spec_dir(), COMING)["clauses"]
        changed = [cid for cid, c in SPEC.clauses.items()
                   if frozen.get(cid, {}).get("digest") != digest(c)]
        assert not changed, (f"spec {COMING} is released: {changed} changed; set spec/VERSION "
                             "to the next version with -dev")


def test_a_released_text_is_never_archived_again(tmp_path):
    import shutil

    from conformance.spec.reader import SpecError
    from conformance.spec.releases import write_archive
    shutil.copytree(spec_dir(), tmp_path / "spec")
    copy = tmp_path / "spec"
    (copy / "VERSION").write_text("9.0.0\n")
    spec = load_spec(str(copy))
    assert write_archive(spec, copy) == str(copy / "releases" / "9.0.0.json")
    assert write_archive(spec, copy) is None            # the same text: nothing to do
    graph = copy / "graph.md"
    graph.write_text(graph.read_text().replace("MUST have `requires_grad`",
                                               "MUST have `requires_grad` always", 1))
    load_spec.cache_clear()
    with pytest.raises(SpecError, match="9.0.0 is released"):
        write_archive(load_spec(str(copy)), copy)
    load_spec.cache_clear()


@pytest.mark.parametrize("cid", list(SPEC.clauses))
def test_the_lock_holds_the_digest_of_the_normative_text(cid):
    lock = read_lock(spec_dir() / "clauses.lock")
    assert lock.get(cid) == digest(SPEC.clauses[cid]), (
        f"{cid}'s normative text (title, status, since, requires, Rule, examples) changed "
        f"without the lock: run `gradspec index --write`, set its `revised` column to "
        f"{COMING} and list it under {COMING} in spec/CHANGES.md")


@pytest.mark.parametrize("cid", list(SPEC.clauses))
def test_every_change_since_the_last_release_is_recorded(cid):
    c, old = SPEC.clauses[cid], ARCHIVE.get(cid)
    if old is None:
        assert c.added == COMING, f"{cid} is new since {PREVIOUS}: its `added` must be {COMING}"
        assert _listed(cid), f"{cid} is not listed in CHANGES.md for {COMING}"
        return
    assert c.added == old["added"], f"{cid}: `added` changed from {old['added']}"
    if old["class"] is not None and c.cls != old["class"]:     # a class is normative too
        assert c.revised == COMING and _listed(cid), (
            f"{cid} moved from class {old['class']} to {c.cls} since spec {PREVIOUS}: its "
            f"`revised` must be {COMING} and CHANGES.md must list it")
    if digest(c) != old["digest"]:
        assert c.revised == COMING, (
            f"{cid} differs from spec {PREVIOUS}: its `revised` must be {COMING}")
        assert _listed(cid), f"{cid} is not listed in CHANGES.md for {COMING}"
    else:
        assert c.revised == (old["revised"] or ""), (
            f"{cid}: `revised` says {c.revised or 'never'}, but its normative text is "
            f"{PREVIOUS}'s (revised {old['revised'] or 'never'})")


def test_a_change_to_the_definitions_is_recorded():
    """definitions.md is normative: a text other than the last release's needs a line in
    CHANGES.md's section for the coming release that starts "- Definitions"."""
    from conformance.spec.releases import definitions_text
    old = load_archive(spec_dir(), PREVIOUS).get("definitions")
    if old is not None and definitions_text(spec_dir()) != old:
        assert re.search(r"^- Definitions\b", _changes_section(), re.M), (
            f"spec/definitions.md differs from spec {PREVIOUS}: list the change in CHANGES.md")


def test_every_clause_has_a_class_and_the_ids_file_is_current():
    assert {c.cls for c in SPEC.clauses.values()} <= set(CLASSES)
    written = (spec_dir() / "ids.json").read_text(encoding="utf-8")
    assert written == render_ids(SPEC), "spec/ids.json is stale: run `gradspec index --write`"
    ids = json.loads(written)["clauses"]
    assert list(ids) == list(SPEC.clauses)
    assert ids["VER-7"]["file"] == "spec/version.md" and ids["VER-7"]["anchor"] == "ver-7"


def test_archives_are_complete_records():
    for version in releases(spec_dir()):
        record = load_archive(spec_dir(), version)
        assert record["version"] == version
        for cid, c in record["clauses"].items():
            assert c["text"].startswith(f"## {cid}\n"), (version, cid)
            assert {"title", "status", "since", "added", "digest", "class"} <= set(c)


def test_spec_at_a_release_prints_that_release_text(capsys):
    assert main(["spec", "LEAF-5", "--at", "1.0.0"]) == 0
    out = capsys.readouterr().out
    assert "as of spec 1.0.0" in out
    assert load_archive(spec_dir(), "1.0.0")["clauses"]["LEAF-5"]["text"].rstrip() in out
    assert main(["spec", "LEAF-5"]) == 0
    now = capsys.readouterr().out
    assert f"class {SPEC.clauses['LEAF-5'].cls}" in now and "revised" in now


@pytest.mark.parametrize("argv,message", [
    (["spec", "LEAF-5", "--at", "0.9.0"], "no spec release '0.9.0'"),
    (["spec", "LEAF-16", "--at", "1.0.0"], "LEAF-16 is not in spec 1.0.0"),
    (["spec", "NOPE-1"], "unknown clause ID"),
])
def test_bad_versions_and_ids_get_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
