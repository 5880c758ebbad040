"""Child commands that end with the command that started them: a process group of their own.

``faircode verify`` runs ``dvc repro`` (whose stages start fit processes, whose pools start
workers) or ``faircode run``; when verify stops -- done, failed, SIGTERM, SIGINT, an exception
-- nothing it started may keep running.  :func:`run_group` runs such a command.

Design decisions
----------------
* **A group of its own**: the command starts in a new session, so every process it starts is in
  its process group (unless one makes a group of its own), and one ``killpg`` reaches them all:
  the direct child, DVC's stage, the stage's pool workers.
* **No window without a record**: SIGTERM and SIGINT are blocked while the command starts,
  until its group is recorded inside the ``try`` that ends it (the child unblocks them).
* **Stopped on every exit path**: :func:`stop_group` sends SIGTERM to the group, waits
  :data:`GRACE_SECONDS`, then SIGKILLs whatever is left.  It runs in :func:`run_group`'s
  ``finally`` (an error, a timeout, SIGTERM and SIGINT raised as exceptions by the command-line
  boundary), from an ``atexit`` hook, and from the boundary's stop watchdog
  (:func:`stop_all`: :mod:`faircode.pipeline._boundary`), which ends a process that does not
  stop by itself.
* **A parent killed by SIGKILL** can run nothing: the direct child gets SIGTERM from the kernel
  when its parent dies (Linux ``PR_SET_PDEATHSIG``), and the caller records the group
  (:attr:`Group.pgid`) where its next run finds it (:func:`stop_leftover`: verify's worktree
  marker), so the next run ends what is left of it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GRACE_SECONDS", "Finished", "run_group", "stop_all", "stop_group", "stop_leftover"]

GRACE_SECONDS = 10.0
"""How long a stopped group has between SIGTERM and SIGKILL."""
_PR_SET_PDEATHSIG = 1
_STOPS = {signal.SIGTERM, signal.SIGINT}
_LIVE: dict[int, subprocess.Popen[str]] = {}
"""The groups started here and not yet ended, by process group id."""


@dataclass(frozen=True, slots=True)
class Finished:
    """A command's exit code and output (stdout and stderr as text)."""

    returncode: int
    stdout: str
    stderr: str


def _child_setup() -> None:  # pragma: no cover - runs in the child, between fork and exec
    """The child's stop signals unblocked (the parent blocks them while it starts it), and
    Linux's death signal: SIGTERM when its parent dies."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a group of another user: not ours
        return False
    return True


def stop_group(pgid: int, *, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM to process group ``pgid``, then SIGKILL to what is left after ``grace`` s."""
    process = _LIVE.get(pgid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if process is not None:
            process.poll()  # reap the leader, or the group lives on as its zombie
        if not _alive(pgid):
            break
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    if process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
    _LIVE.pop(pgid, None)


def stop_all() -> None:
    """End every group :func:`run_group` started and has not ended (exit paths, watchdog)."""
    for pgid in list(_LIVE):
        stop_group(pgid)


atexit.register(stop_all)


def run_group(command: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None,
              timeout: float | None = None,
              started: Callable[[int], None] | None = None) -> Finished:
    """Run ``command`` in a process group of its own and return how it finished; the group is
    ended (:func:`stop_group`) however this call ends, a timeout included
    (``subprocess.TimeoutExpired``).  ``started(pgid)`` is called once it runs (to record it).
    """
    # A stop signal between the start and the record would leave the group unknown: SIGTERM
    # and SIGINT wait (blocked) until the group is recorded, inside the try that ends it.
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    pgid = None
    try:
        process = subprocess.Popen(list(command), cwd=cwd, env=dict(env) if env else None,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, preexec_fn=_child_setup)
        pgid = process.pid
        _LIVE[pgid] = process
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if started is not None:
            started(pgid)
        stdout, stderr = process.communicate(timeout=timeout)
        return Finished(process.returncode, stdout, stderr)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if pgid is not None:
            stop_group(pgid)  # the command's own children may outlive it: end them too


def stop_leftover(pgid: int, *, inside: Path) -> list[int]:
    """End the processes of group ``pgid`` left by a run killed with SIGKILL, but only those
    whose working directory is inside ``inside`` (a pid may have been reused); return them.
    Linux only (``/proc``); elsewhere nothing is done."""
    proc = Path("/proc")
    if not proc.is_dir():  # pragma: no cover - not Linux
        return []
    ended = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if int(fields[2]) == pgid and cwd.is_relative_to(inside):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                ended.append(int(entry.name))
    return ended
