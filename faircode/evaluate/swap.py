"""Replacing a results folder as one step: readers see the old folder or the new one, never neither.

:func:`replacing` yields an empty staging folder beside the target (``.<name>-xxxxxxxx``, a
sibling in the same directory, so every rename stays on one filesystem); when the block ends
without an exception the staging folder takes the target's place, otherwise it is removed and the
target is untouched.  ``write_audit`` writes ``results/<audit>/`` through it.

Design decisions
----------------
* **One atomic exchange where the kernel offers it.**  On Linux (glibc >= 2.28, and ext4, xfs,
  btrfs, tmpfs, ...) ``renameat2(RENAME_EXCHANGE)`` (via ctypes) swaps the two folders in one
  step: a kill at any instant leaves the old or the new results at the target, and the old ones
  then sit in the staging name until they are deleted.  Two renames (target -> ``.previous``,
  staging -> target) would leave a moment with no target; that is the fallback only where the
  exchange is unavailable (another OS, a filesystem answering ``EINVAL``), with a rollback when
  the second rename raises and :func:`recover` for a kill between the two.
* **The next write of the same target recovers and cleans.**  :func:`recover` runs first: if the
  target is missing and a ``.<name>-xxxxxxxx.previous`` folder exists (a kill between the two
  renames), it is renamed back; every other leftover staging or ``.previous`` folder of that
  name (a kill during the writes or before the old copy was deleted) is removed.  Leftovers are
  recognised by exactly the names ``tempfile.mkdtemp`` gives (the prefix ``.<name>-`` and eight
  characters), which is also what the code before this module left behind, so an audit named
  ``compas`` never touches ``compas-2``'s folders.
* **A folder in use is never cleaned.**  A writer holds an exclusive ``flock`` on its staging
  folder (and, in the fallback, on the target it moves aside) until it is done; a leftover whose
  lock can be taken has no live writer (the kernel drops the locks of a killed process), and a
  locked one belongs to a concurrent writer and is left alone.  Without ``fcntl`` (Windows) there
  is no lock and leftovers are always cleaned.
* **Hidden folders are not results.**  Every reader of ``results/`` skips names starting with a dot
  (:func:`faircode.record.runs.audit_folders`, the report, freeze's digests), and the repository's
  ``.gitignore`` ignores ``results/.*/``, so a leftover never makes ``faircode freeze`` refuse a
  dirty tree before the next write removes it.
* Durability after a power loss (fsync of the files and the directory) is not attempted: the
  protocol is about processes that die, on a filesystem that stays up.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from faircode.core.files import user_mode
from faircode.core.owned import take

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["recover", "replacing"]

_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""A write's errors that name no file (a full disk, a quota, a file size limit)."""

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_PREVIOUS = ".previous"


def _leftover_pattern(name: str) -> re.Pattern[str]:
    """Names ``tempfile.mkdtemp(prefix=f".{name}-")`` gives, with or without ``.previous``."""
    return re.compile(rf"\.{re.escape(name)}-[a-z0-9_]{{8}}(?:{re.escape(_PREVIOUS)})?")


def _lock(path: Path) -> int | None:
    """Open ``path`` and take an exclusive lock without waiting; the fd, or None if locked (or
    gone).  Without ``fcntl``: the fd, unlocked (module docstring)."""
    if fcntl is None:  # pragma: no cover - Windows
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
    return take(path)


def _rename(source: Path, target: Path) -> None:
    """``os.replace``; one function so a test can fail (or kill the process) between the steps."""
    os.replace(source, target)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):  # glibc < 2.28 or another libc
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint)
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # not on this filesystem/kernel
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def recover(final: Path) -> None:
    """Restore ``final`` from a swap killed half-way, then remove its other leftovers."""
    final = Path(final)
    if not final.parent.is_dir():
        return
    pattern = _leftover_pattern(final.name)
    leftovers = sorted(p for p in final.parent.iterdir()
                       if pattern.fullmatch(p.name) and p.is_dir() and not p.is_symlink())
    if not final.exists():
        previous = [p for p in leftovers if p.name.endswith(_PREVIOUS)]
        fd = _lock(previous[-1]) if previous else None
        if fd is not None:  # a kill between the fallback's two renames: put the old copy back
            try:
                _rename(previous[-1], final)
                leftovers.remove(previous[-1])
            finally:
                os.close(fd)
    for path in leftovers:
        fd = _lock(path)
        if fd is None:  # a live writer's folder
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)


@contextmanager
def replacing(final: Path) -> Iterator[Path]:
    """Yield an empty staging folder that replaces ``final`` in one step when the block succeeds.

    Leftovers of earlier interrupted writes of ``final`` are recovered or removed first
    (:func:`recover`).  If the block raises, the staging folder is removed and ``final`` is left
    as it was.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    recover(final)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    user_mode(staging, directory=True)  # mkdtemp made it 0700; it becomes the user's folder
    fd = _lock(staging)
    try:
        yield staging
        _swap(staging, final)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if exc.filename is None and exc.errno in _WRITE_ERRORS:  # names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(final)) from None
        raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if fd is not None:
            os.close(fd)


def _swap(staging: Path, final: Path) -> None:
    """Put ``staging`` at ``final``; the old ``final`` (if any) is deleted afterwards."""
    if not final.exists():
        _rename(staging, final)
        return
    if _exchange(staging, final):  # staging now holds the old results
        shutil.rmtree(staging, ignore_errors=True)
        return
    previous = staging.with_name(staging.name + _PREVIOUS)
    fd = _lock(final)
    try:
        _rename(final, previous)
        try:
            _rename(staging, final)
        except BaseException:
            _rename(previous, final)
            raise
    finally:
        if fd is not None:
            os.close(fd)
    shutil.rmtree(previous, ignore_errors=True)
