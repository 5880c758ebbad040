"""A verify's temporary git worktree: made, marked as in use, removed -- and found when left.

Private to :func:`faircode.record.freeze.verify`.  :func:`verify_worktree` checks the frozen
commit out into ``<tmp>/faircode-verify-<name>-XXXX/state`` and removes it (``git worktree
remove``, ``prune``, the folder) however the block ends.

Design decisions
----------------
* **Marked while in use**: the folder holds ``verify.lock``, locked (``flock``) by the live
  verify, naming its process and the process group of the command it runs
  (:func:`faircode.core.processes.run_group`).  The kernel drops a dead process's locks, so a
  lock that can be taken is a verify that was killed (SIGKILL, a power cut) before it could
  clean up (the lock: :mod:`faircode.core.owned`).
* **Cleaned at the next start**: :func:`clean_abandoned` (the first thing a verify does) ends
  what is left of such a verify's command group (only processes working inside its folder:
  :func:`faircode.core.processes.stop_leftover`), removes its worktree from this repository's
  registry and deletes its folder.  A live verify's worktree is never touched, nor a
  ``--keep``-style folder of the caller's (it has no mark).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from faircode.core.owned import mark as hold_mark
from faircode.core.owned import take
from faircode.core.processes import stop_leftover

__all__ = ["MARK", "PREFIX", "Worktree", "clean_abandoned", "verify_worktree"]

PREFIX = "faircode-verify-"
"""The temporary folders of verify's worktrees: ``<tmp>/faircode-verify-<name>-XXXX``."""
MARK = "verify.lock"
"""In such a folder, locked by the verify using it."""


@dataclass(frozen=True, slots=True)
class Worktree:
    """A verify's checkout (``work``), its copy of the frozen results (``frozen``), and how to
    record the process group of the command run in it (``record_group``)."""

    work: Path
    frozen: Path
    record_group: Callable[[int], None]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=120,
                          check=False)


def _registered(root: Path) -> list[Path]:
    """The worktrees registered in ``root``'s repository (its own checkout excluded)."""
    done = _git(root, "worktree", "list", "--porcelain")
    paths = [Path(line[len("worktree "):]) for line in done.stdout.splitlines()
             if line.startswith("worktree ")]
    return paths[1:]


def clean_abandoned(root: Path) -> list[Path]:
    """Remove the worktrees of killed verifies of ``root``'s repository (module docstring);
    return their folders."""
    cleaned = []
    for work in _registered(root):
        base = work.parent
        if not base.name.startswith(PREFIX):
            continue
        fd = take(base / MARK)
        if fd is None:
            continue
        try:
            with contextlib.suppress(ValueError, OSError):
                pgid = json.loads((base / MARK).read_text() or "{}").get("pgid")
                if isinstance(pgid, int) and pgid > 1:
                    stop_leftover(pgid, inside=base)
            _git(root, "worktree", "remove", "--force", str(work))
            shutil.rmtree(base, ignore_errors=True)
            cleaned.append(base)
        finally:
            os.close(fd)
    _git(root, "worktree", "prune")
    return cleaned


@contextmanager
def verify_worktree(root: Path, commit: str, *, name: str,
                    error: type[Exception]) -> Iterator[Worktree]:
    """Check ``commit`` out into a fresh marked worktree; remove it when the block ends."""
    clean_abandoned(root)
    base = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{name}-"))
    mark = base / MARK
    fd = hold_mark(mark)

    def record(pgid: int | None) -> None:
        mark.write_text(json.dumps({"pid": os.getpid(), "pgid": pgid}))

    work = base / "state"
    try:
        record(None)
        done = _git(root, "worktree", "add", "--detach", "--force", str(work), commit)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise error(f"git worktree add {work} {commit[:12]}: "
                        f"{lines[-1] if lines else 'failed'}")
        yield Worktree(work, base / "frozen-results", record)
    finally:
        _git(root, "worktree", "remove", "--force", str(work))
        _git(root, "worktree", "prune")
        shutil.rmtree(base, ignore_errors=True)
        os.close(fd)
