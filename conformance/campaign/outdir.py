"""A run's output folder, written so that nothing earlier is lost.

A run writes into a fresh folder beside OUT (`Staging`), and only a complete run swaps what it
wrote into OUT: each entry the run owns (`ENTRIES`: report.json, report.html and the folders of
divergent, crashed, timed-out and oracle-failed programs) is replaced as a whole, and one the
new run did not write is removed, so that OUT never mixes two runs. Other files in OUT are left
alone. A run that fails removes its staging folder and leaves OUT as it was; an interrupted one
keeps its staging folder, with the partial report in it, and says where.

One run at a time per OUT: a run holds an exclusive lock (`fcntl.flock`, not waited for) on
OUT/.gradspec.lock from before it starts until it ends, so that a second run given the same
OUT refuses at once (`OutInUse`) rather than swapping its entries in among the first one's.
The kernel releases the lock with the process, however it ends (killed included); the file
stays, empty of meaning once unlocked.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:     # not on Windows: runs there are not locked
    fcntl = None  # type: ignore[assignment]

ENTRIES = ("report.json", "report.html", "divergences", "crashes", "timeouts",
           "oracle-failures")
LOCK = ".gradspec.lock"


class OutInUse(OSError):
    """Another run holds OUT's lock; `strerror` says so in words (the commands print 'cannot
    write to OUT: ...', exit 2)."""


class Lock:
    """The exclusive lock of one run on folder `out` (which exists), taken now; `release()`
    gives it up (so does the end of the process)."""

    def __init__(self, out: Path):
        path = out / LOCK
        self.fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is None:
            return
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 32).decode("ascii", "replace").strip()
            self.release()
            raise OutInUse(errno.EBUSY, "another gradspec run is writing there"
                           f"{f' (pid {holder})' if holder.isdigit() else ''}: wait for it "
                           f"or give another --out", str(out)) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)       # (closing the file releases its flock)
            self.fd = None


class Staging:
    """The fresh folder a run writes into, beside `out`. Creating it checks, before the run,
    that `out` can be written and takes its lock (an OSError says why not: OutInUse when
    another run holds it); `release()` once the run has ended."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        if not os.access(self.out, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied", str(self.out))
        self.lock = Lock(self.out)
        parent = self.out.resolve().parent
        try:
            self.path = Path(tempfile.mkdtemp(prefix=f"{self.out.resolve().name}.partial-",
                                              dir=parent))
        except BaseException:
            self.lock.release()
            raise

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

    def release(self) -> None:
        """The run has ended (however): OUT's lock given up."""
        self.lock.release()
