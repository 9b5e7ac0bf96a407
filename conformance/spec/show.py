"""What `gradspec spec` and `gradspec index --write` print and write (conformance/cli.py calls
these): a clause as the tree has it or as a release had it, and the generated files
(spec/index.md, spec/ids.json, the digests of spec/clauses.lock, and the archive of a release
when spec/VERSION names one that is not archived yet)."""
from __future__ import annotations

from .reader import Spec, SpecError, load_spec, render_index, spec_dir
from .releases import clause_at, read_lock, render_ids, render_lock, write_archive


def clause_text(cid: str, at: str | None = None) -> str:
    """A clause's header lines and markdown; `at`: as that archived release had it."""
    spec = load_spec()
    cid = cid.upper()
    if at is not None:
        r = clause_at(spec_dir(), cid, at)
        cls = r["class"] or "none (classes came later)"
        head = (f"{cid}  {r['title']}\n  spec/{r['file']}#{cid.lower()}  (as of spec {at}; "
                f"status {r['status']}; class {cls}; since torch {r['since']}; "
                f"added in {r['added'] or '?'}; revised {r['revised'] or 'never'})")
        return f"{head}\n\n{r['text'].rstrip()}"
    if cid not in spec.clauses:
        raise SpecError(f"unknown clause ID {cid!r}; `gradspec index` lists them")
    c = spec.clauses[cid]
    head = (f"{c.id}  {c.title}\n  {c.anchor}  (spec {spec.version}; area "
            f"{spec.areas[c.area]}; status {c.status}; class {c.cls}; verified on torch "
            f"{c.verified}; since torch {c.since}; added in {c.added or '?'}; revised "
            f"{c.revised or 'never'}; requires {', '.join(c.requires)})")
    return f"{head}\n\n{c.text.rstrip()}"


def write_generated(spec: Spec | None = None) -> list[str]:
    """Regenerate spec/index.md, spec/ids.json and the lock's digests; what was written."""
    spec = spec or load_spec()
    d = spec_dir()
    (d / "index.md").write_text(render_index(spec), encoding="utf-8")
    (d / "ids.json").write_text(render_ids(spec), encoding="utf-8")
    lock = d / "clauses.lock"
    old = read_lock(lock)
    lock.write_text(render_lock(spec, old), encoding="utf-8")
    new = [cid for cid in spec.clauses if cid not in old]
    archived = write_archive(spec, d)
    return ([f"archived release {spec.version} in {archived}"] if archived else []) + [
        f"wrote {d / 'index.md'} and {d / 'ids.json'} ({len(spec.clauses)} clauses)",
        f"wrote {lock}" + (f" ({len(new)} new IDs: {', '.join(new)})" if new else "")]
