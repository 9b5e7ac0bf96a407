"""A run's output folder, written so that nothing earlier is lost.

A run writes into a fresh folder beside OUT (`Staging`), and only a complete run swaps what it
wrote into OUT: each entry the run owns (`ENTRIES`: report.json, report.html and the folders of
divergent, crashed, timed-out and oracle-failed programs) is replaced as a whole, and one the
new run did not write is removed, so that OUT never mixes two runs. Other files in OUT are left
alone. A run that fails removes its staging folder and leaves OUT as it was; an interrupted one
keeps its staging folder, with the partial report in it, and says where.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

ENTRIES = ("report.json", "report.html", "divergences", "crashes", "timeouts",
           "oracle-failures")


class Staging:
    """The fresh folder a run writes into, beside `out`. Creating it checks, before the run,
    that `out` can be written (an OSError says why not)."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        if not os.access(self.out, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied", str(self.out))
        parent = self.out.resolve().parent
        self.path = Path(tempfile.mkdtemp(prefix=f"{self.out.resolve().name}.partial-",
                                          dir=parent))

    def final(self, path: str | Path) -> str:
        """Where a path written under the staging folder will be once swapped in."""
        try:
            rel = Path(path).relative_to(self.path)
        except ValueError:
            return str(path)
        return str(self.out / rel)

    def commit(self) -> None:
        """Swap the run's entries into OUT and remove the staging folder."""
        trash = Path(tempfile.mkdtemp(prefix=f"{self.path.name}.old-", dir=self.path.parent))
        try:
            for name in ENTRIES:
                old, new = self.out / name, self.path / name
                if old.exists() or old.is_symlink():
                    os.replace(old, trash / name)
                if new.exists():
                    os.replace(new, old)
        finally:
            shutil.rmtree(trash, ignore_errors=True)
            self.discard()

    def discard(self) -> None:
        """Remove the staging folder (a failed run)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self.path)
