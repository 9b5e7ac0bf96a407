"""Releases of the spec: what a clause's normative text is, its digest in spec/clauses.lock, the
archived text of every release (spec/releases/VERSION.json) and the machine-readable index
(spec/ids.json).

A clause is cited as "spec 1.1.0 VER-7", so the text behind that citation must never change
silently. The normative part of a clause is its title, status, the torch release it holds
from, what it requires, its Rule and its examples (their outcomes are the checkable part);
Why, History and notes are informative. clauses.lock holds a digest of each clause's normative
part, so that a change to it fails tests/test_spec_releases.py until the lock is rewritten
(`gradspec index --write`), the clause's `revised` column names the coming release, and
spec/CHANGES.md lists it. The class column is checked by the same test against the release
that introduced classes, not digested (the digests of releases before classes must stay
comparable): a class is what an engine may claim, and a clause moved between classes since the
last release needs its `revised` column and a CHANGES.md entry like any revision.

spec/VERSION is the version of the text in the tree: a release ("1.1.0"), or the coming one
with "-dev" ("1.2.0-dev") while changes are unreleased. Each release's text is archived, so
`gradspec spec ID --at VERSION` prints a clause as that release had it, from an installed
wheel as from a checkout.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .reader import Clause, Spec, SpecError

LOCK_HEADER = ("# Every clause ID ever issued, with the digest of its normative text (its title, "
               "status, since,\n# requires, Rule and examples: conformance/spec/releases.py). "
               "IDs are appended, never removed\n# or reused; `gradspec index --write` "
               "rewrites the digests.\n")


def normative(c: Clause) -> str:
    """The normative part of a clause, canonically: what its digest covers."""
    parts = [c.id, c.title, c.status, c.since, ",".join(c.requires), c.rule]
    parts += [e.code for e in c.examples]
    return "\n\x1f".join(parts)


def digest(c: Clause) -> str:
    return hashlib.sha256(normative(c).encode("utf-8")).hexdigest()[:16]


def release_of(version: str) -> str:
    """The release a version's text belongs to: "1.2.0" for "1.2.0-dev"."""
    return version.split("-", 1)[0]


def read_lock(path: Path) -> dict[str, str | None]:
    """ID -> digest (None where the lock has none), in the order the IDs were issued."""
    out: dict[str, str | None] = {}
    if not path.exists():
        return out
    for ln in path.read_text(encoding="utf-8").splitlines():
        if ln.strip() and not ln.startswith("#"):
            fields = ln.split()
            out[fields[0]] = fields[1] if len(fields) > 1 else None
    return out


def render_lock(spec: Spec, old: dict[str, str | None]) -> str:
    """The lock for `spec`: every ID of `old` in its order (a withdrawn or removed clause keeps
    its last digest), then the new ones in spec order."""
    ids = list(old) + [cid for cid in spec.clauses if cid not in old]
    lines = [f"{cid} {digest(spec.clauses[cid]) if cid in spec.clauses else old[cid] or '-'}"
             for cid in ids]
    return LOCK_HEADER + "\n".join(lines) + "\n"


def archive(spec: Spec, definitions: str | None = None) -> dict[str, Any]:
    """A release's record: each clause's metadata, digest and whole text, and the text of
    definitions.md (normative too: the terms the clauses rest on)."""
    return {"version": spec.version, "definitions": definitions, "clauses": {
        c.id: {"title": c.title, "file": c.file, "status": c.status, "class": c.cls,
               "since": c.since, "added": c.added, "revised": c.revised,
               "digest": digest(c), "text": c.text}
        for c in spec.clauses.values()}}


def releases(directory: Path) -> list[str]:
    """The archived releases, oldest first."""
    folder = directory / "releases"
    names = [p.stem for p in folder.glob("*.json")] if folder.is_dir() else []
    return sorted(names, key=_key)


def _key(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in release_of(version).split("."))
    except ValueError:
        return (-1,)


def load_archive(directory: Path, version: str) -> dict[str, Any]:
    known = releases(directory)
    if version not in known:
        raise SpecError(f"no spec release {version!r}; archived releases: "
                        f"{', '.join(known) or 'none'}")
    path = directory / "releases" / f"{version}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def clause_at(directory: Path, cid: str, version: str) -> dict[str, Any]:
    """A clause's record as release `version` had it; SpecError if it had none."""
    record = load_archive(directory, version)["clauses"].get(cid)
    if record is None:
        from .reader import load_spec
        if cid not in load_spec(str(directory)).clauses:
            raise SpecError(f"unknown clause ID {cid!r}: in no spec release, nor in this one")
        raise SpecError(f"{cid} is not in spec {version} (it was added later)")
    return record


def write_archive(spec: Spec, directory: Path) -> str | None:
    """Archive the tree's text as release spec.version, if it is a release (not "-dev") and
    not archived yet; what was written, or None. An archived release is never rewritten: a
    release whose text differs from its archive is a SpecError (bump the version instead)."""
    if spec.version.endswith("-dev") or spec.version == "unknown":
        return None
    path = directory / "releases" / f"{spec.version}.json"
    record = archive(spec, definitions_text(directory))
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        changed = [cid for cid, c in record["clauses"].items()
                   if (old["clauses"].get(cid, {}).get("digest"), old["clauses"].get(cid, {})
                       .get("class")) != (c["digest"], c["class"])]
        if old.get("definitions") not in (None, record["definitions"]):
            changed.append("definitions.md")
        if changed:
            raise SpecError(f"spec {spec.version} is released and archived; its text may not "
                            f"change ({', '.join(changed[:5])}): set spec/VERSION to the "
                            "next version with -dev")
        return None
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return str(path)


def definitions_text(directory: Path) -> str | None:
    path = directory / "definitions.md"
    return path.read_text(encoding="utf-8") if path.exists() else None


def render_ids(spec: Spec) -> str:
    """The text of spec/ids.json: for each clause ID, where it is and what it is."""
    ids = {c.id: {"file": f"spec/{c.file}", "anchor": c.id.lower(), "title": c.title,
                  "class": c.cls, "status": c.status, "since": c.since,
                  "added": c.added, "revised": c.revised or None}
           for c in spec.clauses.values()}
    return json.dumps({"version": spec.version, "clauses": ids}, indent=1,
                      ensure_ascii=False) + "\n"


__all__ = ["archive", "clause_at", "digest", "load_archive", "normative", "read_lock",
           "definitions_text", "release_of", "releases", "render_ids", "render_lock",
           "write_archive"]
