"""Temporary folders owned by a live process: locked while it runs, swept once it is gone.

A process ended outright (SIGKILL, the kernel's out-of-memory killer, a container stopped) runs
no clean-up, and the temporary folders it wrote stay: a streamed audit's spilled records are
gigabytes (:class:`faircode.stats.records.RecordStore`).  Such a folder holds a mark file its
owner keeps locked; the next owner of a folder of the same kind removes every one whose lock it
can take.

Design decisions
----------------
* **The kernel's word for "gone"**: the mark is locked with ``flock``, which the kernel drops
  when the owning process ends, however it ends -- no process id to outlive its process and be
  reused.  A lock that can be taken is an owner that is gone.
* **Marked before it can be seen**: the mark is made and locked under a temporary name and then
  renamed into place, so no sweep takes the lock of a folder whose owner is about to hold it.
  A folder without a mark (being made, or the caller's own) is never touched.
* **Only one's own**: folders are made ``0700`` (``tempfile.mkdtemp``), so another user's are
  not even opened.  Without ``fcntl`` (Windows) nothing is locked and nothing swept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks, nothing is ever taken for abandoned
    fcntl = None  # type: ignore[assignment]

__all__ = ["MARK", "Owned", "mark", "sweep", "take"]

MARK = ".owner.lock"
"""In an owned folder: the mark its owner keeps locked."""


def take(path: Path) -> int | None:
    """An open, locked descriptor of the mark ``path`` (a file or a folder) when no live owner
    holds it, else None (no such path, or locked)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    if fcntl is None:  # pragma: no cover - Windows
        os.close(fd)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def mark(path: Path) -> int:
    """Make the mark ``path``, locked by this process before it appears (module docstring); its
    descriptor, to keep open while the folder is in use."""
    hidden = path.with_name(f"{path.name}.{os.getpid()}.new")
    fd = os.open(hidden, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(hidden, path)
    except BaseException:
        os.close(fd)
        hidden.unlink(missing_ok=True)
        raise
    return fd


def sweep(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove the folders ``<parent>/<prefix>*`` whose owners are gone; return them."""
    gone = []
    for folder in sorted(Path(parent or tempfile.gettempdir()).glob(f"{prefix}*")):
        fd = take(folder / MARK)
        if fd is None:
            continue
        try:
            shutil.rmtree(folder, ignore_errors=True)
            gone.append(folder)
        finally:
            os.close(fd)
    return gone


class Owned:
    """A fresh temporary folder ``<parent>/<prefix>XXXX`` owned by this process, made after the
    abandoned ones of its kind are swept; :meth:`remove` when done."""

    def __init__(self, prefix: str, parent: Path | None = None) -> None:
        sweep(prefix, parent)
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        try:
            self._fd: int | None = mark(self.path / MARK)
        except BaseException:
            shutil.rmtree(self.path, ignore_errors=True)
            raise

    def remove(self) -> None:
        """Delete the folder and drop the lock (once; later calls do nothing)."""
        if self._fd is None:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._fd)
        self._fd = None
