"""Claiming a pipeline state in an MLflow store, so that concurrent syncs log it exactly once.

:func:`faircode.record.tracking.sync_results` finds a state's parent run by its digest tag and, if
there is none, creates it.  Search-then-create is two steps, and MLflow has no unique constraint on
run names or tags and no compare-and-set on a tag, so two syncs at once (``dvc queue start -j 2``,
two terminals) each created children -- 105 of 105 duplicated in one trial -- and two syncs into a
new SQLite file raced on the schema (the loser exited 3).  A sync now first *claims* the state;
only the holder searches, creates and logs, and the others wait for it and then find the state
complete.

Design decisions
----------------
* **SQLite: a file lock beside the store** (:func:`store_lock`: ``flock`` on ``<file>.lock``, held
  for the whole sync, schema creation included).  The embedded store is one file on one host, so
  the kernel's lock is exact and crash-safe (a killed holder's lock is released by the kernel), and
  it costs no throughput: writes to one SQLite file serialise anyway.
* **A SQLite file is an MLflow store or nothing**: an existing file that is not SQLite, or a
  SQLite database without MLflow's tables (a user's own ``data.db`` given as the store), is
  refused before anything touches it (:func:`check_sqlite_store`: read-only, one line) -- MLflow
  would add its forty tables to it.  A store file that this sync creates (with its WAL files
  and its lock) is removed again when the sync fails, so a failure (a full disk) leaves nothing
  behind.
* **Any other store (an MLflow server, a database): a lease on a lock experiment**
  (:func:`claim_state`).  The one create-if-absent MLflow offers through every backend is
  ``create_experiment``: experiment names are unique in the store's schema, so of several
  processes creating the name ``faircode sync lock <key>.<generation>`` (``key`` from the
  experiment name and the digest) exactly one succeeds (the others get ``RESOURCE_ALREADY_EXISTS``).
  The alternatives were rejected: a tag written then read back is not atomic (two writers can
  each read their own value), and "the earliest parent wins" lets a process that read before the
  other's create keep its own parent.  The holder heartbeats a tag on its lock every
  :data:`BEAT_SECONDS` and deletes the lock experiment when it is done (or fails), so the lock is
  visible in the UI only while a sync runs.
* **A crashed holder is taken over by the next generation.**  A waiter considers the holder gone
  when its lock is deleted, when its heartbeat has not changed for :data:`LEASE_SECONDS` (on the
  waiter's own clock: no clock skew between hosts), or at once when the holder ran on this host
  (same boot id) and its pid no longer exists (or is another process: the pid's start time is
  recorded).  It then re-checks whether the state is complete and, if not, creates generation
  ``g + 1`` -- again exactly one process succeeds -- and deletes the older generations.  The new
  holder completes the state as a sequential sync always has (keep the finished children of the
  incomplete parent, delete the unfinished, log the missing).  A holder that only stalled longer
  than the lease (SIGSTOP, a suspended laptop) finds the next generation at its next heartbeat
  and stops logging (:meth:`Claim.check`); what it wrote in the last heartbeat interval may
  duplicate a child, which the next sync of the state removes.
* No mlflow import here: the functions take the caller's ``MlflowClient`` and recognise
  "already exists" by the exception's ``error_code``.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faircode.core.errors import ConfigError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["BEAT_SECONDS", "LEASE_SECONDS", "Claim", "ClaimLost", "check_sqlite_store",
           "claim_state", "lock_name", "sqlite_path", "store_lock"]

LEASE_SECONDS = 30.0
"""A lock whose heartbeat has not changed for this long belongs to a dead (or stalled) sync."""
BEAT_SECONDS = 5.0
"""How often the holder updates its lock's heartbeat tag."""
POLL_SECONDS = 0.5
"""How often a waiting sync looks at the lock it waits for."""
HOLDER, BEAT = "faircode.lock.holder", "faircode.lock.beat"
_EXISTS = "RESOURCE_ALREADY_EXISTS"


class ClaimLost(Exception):
    """Another sync took the state over while this one stalled past the lease."""


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///<path>`` store (None for any other URI)."""
    if not uri.startswith("sqlite:///") or "?" in uri:
        return None
    path = Path(uri.removeprefix("sqlite:///"))
    return None if path.name in ("", ":memory:") else path


_MLFLOW_TABLES = frozenset({"alembic_version", "experiments", "runs"})
"""Tables every MLflow SQLite store has."""


def check_sqlite_store(uri: str) -> None:
    """Refuse (one line, :class:`~faircode.core.errors.ConfigError`) an existing file at a
    ``sqlite:///`` store that is not an MLflow store; read-only, nothing is written."""
    path = sqlite_path(uri)
    if path is None or not path.exists() or (path.is_file() and path.stat().st_size == 0):
        return
    expected = "an MLflow tracking store (a SQLite file with MLflow's tables) or no file"
    if not path.is_file():
        raise ConfigError(f"{path}: expected {expected}, got a folder or special file")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=20)
        try:
            tables = {row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            connection.close()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{path}: expected {expected}, got a file SQLite cannot read "
                          f"({exc}); nothing was written") from None
    if tables and not _MLFLOW_TABLES <= tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise ConfigError(f"{path}: expected {expected}, got a SQLite database of other tables "
                          f"({shown}); nothing was written to it")


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive lock on ``<file>.lock`` beside a ``sqlite:///`` store for the block;
    if the block fails, remove the store file it created (and its WAL files and the lock)."""
    path = sqlite_path(uri)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = Path(f"{path}.lock")
    new_lock = not lock.exists()
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits for the sync holding it; released if it dies
        new_store = not path.exists() or path.stat().st_size == 0  # decided under the lock
        try:
            yield
        except BaseException:
            if new_store:  # nothing of it is the user's: a failure leaves no empty store
                for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm"),
                                 *((lock,) if new_lock else ())):
                    leftover.unlink(missing_ok=True)
            raise
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def lock_name(experiment: str, digest: str, generation: int) -> str:
    """The lock experiment's name for ``(experiment, digest)`` at ``generation``."""
    key = hashlib.sha256(f"{experiment}\0{digest}".encode()).hexdigest()[:32]
    return f"faircode sync lock {key}.{generation}"


@dataclass
class Claim:
    """The outcome of :func:`claim_state`: ``held`` (this sync logs) or not (already complete)."""

    held: bool
    lost: threading.Event = field(default_factory=threading.Event)

    def check(self) -> None:
        """Raise :class:`ClaimLost` if another sync has taken the state over."""
        if self.lost.is_set():
            raise ClaimLost("another sync took this state over after this one stalled for over "
                            f"{LEASE_SECONDS:.0f}s; it completes the state")


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str | None:
    """The process's start time (Linux ``/proc/<pid>/stat`` field 22); None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _holder() -> dict[str, Any]:
    pid = os.getpid()
    return {"host": socket.gethostname(), "boot": _boot_id(), "pid": pid,
            "start": _start_ticks(pid), "token": uuid.uuid4().hex}


def _dead(holder: str | None) -> bool:
    """True when the holder ran on this host and its process no longer exists."""
    try:
        info = json.loads(holder or "")
        pid, start = int(info["pid"]), info.get("start")
        if info["host"] != socket.gethostname() or info["boot"] != _boot_id():
            return False
    except (ValueError, KeyError, TypeError):
        return False
    if start is not None and Path("/proc/self/stat").exists():
        return _start_ticks(pid) != start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _wait(client: Any, name: str, *, lease: float, poll: float) -> None:
    """Return once the lock ``name`` is deleted or its holder is dead or silent for ``lease``."""
    seen, since = None, time.monotonic()
    while True:
        lock = client.get_experiment_by_name(name)
        if lock is None or lock.lifecycle_stage == "deleted" or _dead(lock.tags.get(HOLDER)):
            return
        beat = lock.tags.get(BEAT)
        if beat != seen:
            seen, since = beat, time.monotonic()
        elif time.monotonic() - since > lease:
            return
        time.sleep(poll)


def _acquire(client: Any, experiment: str, digest: str, *, done: Callable[[], bool],
             lease: float, poll: float) -> tuple[str, int] | None:
    """Create the first free generation's lock: ``(experiment id, generation)``, or None when the
    state was completed while this process waited."""
    generation = 0
    while True:
        name, me = lock_name(experiment, digest, generation), json.dumps(_holder())
        try:
            return str(client.create_experiment(name, tags={
                HOLDER: me, BEAT: "0", "faircode.lock.experiment": experiment,
                "faircode.lock.digest": digest,
                "mlflow.note.content": f"Held by faircode track while it logs state "
                                       f"{digest[:10]} into experiment {experiment!r}; deleted "
                                       "when that sync ends."})), generation
        except Exception as exc:
            if getattr(exc, "error_code", None) != _EXISTS:
                raise
        lock = client.get_experiment_by_name(name)
        if lock is not None and lock.tags.get(HOLDER) == me:  # our create, retried by the client
            return str(lock.experiment_id), generation
        _wait(client, name, lease=lease, poll=poll)
        if done():
            return None
        generation += 1


def _heartbeat(client: Any, lock_id: str, successor: str, *, stop: threading.Event,
               lost: threading.Event, every: float) -> None:
    beat = 0
    while not stop.wait(every):
        beat += 1
        try:
            client.set_experiment_tag(lock_id, BEAT, str(beat))
            if client.get_experiment_by_name(successor) is not None:
                lost.set()
                return
        except Exception:  # a dead server fails the sync's own calls, one line
            continue


@contextmanager
def claim_state(client: Any, *, experiment: str, digest: str, done: Callable[[], bool],
                enabled: bool = True, lease: float = LEASE_SECONDS, beat: float = BEAT_SECONDS,
                poll: float = POLL_SECONDS) -> Iterator[Claim]:
    """Hold the store-wide claim on ``(experiment, digest)`` for the block.

    Yields a held :class:`Claim`, or an unheld one when another sync completed the state while
    this one waited (``done()`` is then true).  ``enabled=False`` (a SQLite store, already under
    :func:`store_lock`) yields a held claim at once and writes nothing.
    """
    if not enabled:
        yield Claim(held=True)
        return
    acquired = _acquire(client, experiment, digest, done=done, lease=lease, poll=poll)
    if acquired is None:
        yield Claim(held=False)
        return
    lock_id, generation = acquired
    for older in range(generation):  # crashed holders' locks: out of the way of later waiters
        try:
            stale = client.get_experiment_by_name(lock_name(experiment, digest, older))
            if stale is not None and stale.lifecycle_stage != "deleted":
                client.delete_experiment(stale.experiment_id)
        except Exception:  # best effort; a waiter also sees the holder is dead
            continue
    claim, stop = Claim(held=True), threading.Event()
    beating = threading.Thread(target=_heartbeat, name="faircode-lock-heartbeat", daemon=True,
                               args=(client, lock_id,
                                     lock_name(experiment, digest, generation + 1)),
                               kwargs={"stop": stop, "lost": claim.lost, "every": beat})
    beating.start()
    try:
        yield claim
    finally:
        stop.set()
        beating.join()
        try:
            client.delete_experiment(lock_id)
        except Exception:  # a dead server: the next local sync sees this process is gone
            pass
