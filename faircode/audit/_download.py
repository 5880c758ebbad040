"""Bounded transfers of a raw file: a deadline, a size cap, and partial files that never stay.

Private helpers of :func:`faircode.audit.fetch.fetch`.  Every byte of a mirror copy, a download
or a zip member is written to a partial file beside the target while it is hashed
(:func:`staging`, :func:`copy_hashing`); :func:`download` fetches a ``dataset.source.url``.

Design decisions
----------------
* **A deadline on the whole download**, connecting included (:class:`Budget`), not only a
  timeout per read: a server dripping one byte a second never trips a per-read timeout, so the
  socket's timeout is set before every read to what is left of the deadline (at most
  ``timeout``) and a read returns whatever arrived (``read1``), after which the deadline is
  checked again.
* **A size cap**: the manifest's ``dataset.size`` when it declares one (the file is exactly that
  big), else :data:`DEFAULT_MAX_BYTES`.  A ``Content-Length`` above it is refused before the
  body is read; a body that goes past it is stopped one chunk later; a zip member is capped the
  same way (a zip bomb stops at the cap).
* **``file://`` sources are opened as regular files** (:func:`faircode.core.files.open_regular`):
  ``urllib`` would block forever opening a FIFO and copy ``/dev/zero`` without end.
* **Partial files never stay.**  A partial file is ``.<target name>.<8 characters>.part`` (a zip
  archive ``....zip.part``) and is locked (``flock``) by the fetch writing it.  It is removed on
  every exit path of that fetch -- success (moved into place), an error, SIGINT, and SIGTERM
  (which the command-line boundary turns into an exception, :mod:`faircode.pipeline._boundary`);
  a fetch killed by SIGKILL (or a power cut) leaves one, and the next fetch of that target
  removes every leftover whose lock it can take (the kernel drops a dead process's locks), never
  a live fetch's.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import socket
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from faircode.core.errors import DataError
from faircode.core.files import open_regular

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locks, leftovers are always removed
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_MAX_BYTES", "Budget", "NoDownload", "copy_hashing", "download",
           "remove_stale", "staging"]

_WRITE_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""A write's errors that name no file (a full disk, a quota, a file size limit)."""

DEFAULT_MAX_BYTES = 1 << 30
"""The size cap of a download whose manifest declares no ``dataset.size`` (1 GiB; the largest
shipped raw file is 18 MB)."""
_CHUNK = 1 << 20


class NoDownload(Exception):
    """The download (or the extraction of its member) failed; the message says why."""


@dataclass(slots=True)
class Budget:
    """What one download may take: ``timeout`` seconds waiting for any read, ``deadline``
    seconds in all (from creation) and ``max_bytes`` bytes."""

    timeout: float
    deadline: float
    max_bytes: int
    started: float = field(default_factory=time.monotonic)

    def remaining(self, what: str) -> float:
        """Seconds left, at most ``timeout``; :class:`NoDownload` once the deadline passed."""
        left = self.started + self.deadline - time.monotonic()
        if left <= 0:
            raise NoDownload(f"{what} stopped at its deadline of {self.deadline:g} s")
        return min(self.timeout, left)

    def check_size(self, size: int, what: str) -> None:
        """:class:`NoDownload` when ``size`` bytes are more than the cap."""
        if size > self.max_bytes:
            raise NoDownload(f"{what} stopped: more than {self.max_bytes:,} bytes (the size cap: "
                             "dataset.size, or the default of "
                             f"{DEFAULT_MAX_BYTES:,})")


def _leftover(name: str) -> re.Pattern[str]:
    """The partial-file names :func:`staging` gives for a target called ``name``."""
    return re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}(?:\.zip)?\.part")


def _lock(fd: int, *, wait: bool) -> bool:
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def remove_stale(target: Path) -> list[Path]:
    """Remove the partial files of ``target`` left by killed fetches (unlocked ones); return
    them."""
    if not target.parent.is_dir():
        return []
    pattern, removed = _leftover(target.name), []
    for path in sorted(target.parent.iterdir()):
        if not pattern.fullmatch(path.name) or path.is_symlink() or not path.is_file():
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if _lock(fd, wait=False):  # no live fetch holds it
                path.unlink(missing_ok=True)
                removed.append(path)
        finally:
            os.close(fd)
    return removed


@contextmanager
def staging(target: Path, *, suffix: str = ".part") -> Iterator[Path]:
    """Yield a locked partial file beside ``target``; it is removed on every exit path unless
    moved into place (module docstring).  Leftovers of killed fetches go first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    temp = Path(name)
    try:
        _lock(fd, wait=True)
        yield temp
    except OSError as exc:
        if exc.filename is None and exc.errno in _WRITE_ERRORS:  # names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from None
        raise
    finally:
        temp.unlink(missing_ok=True)
        os.close(fd)


def _read(source: IO[bytes]) -> bytes:
    """What the next read gives: at most one chunk, and whatever has arrived (``read1``)."""
    read1 = getattr(source, "read1", None)
    return read1(_CHUNK) if read1 is not None else source.read(_CHUNK)


def copy_hashing(source: IO[bytes], dest: Path, *, budget: Budget | None = None,
                 total: int | None = None, progress: bool = False, label: str = "",
                 sock: socket.socket | None = None, what: str = "the copy") -> str:
    """Copy ``source`` to ``dest`` in chunks while hashing; return the hex sha256.

    With ``budget`` the copy stops (:class:`NoDownload`) past its deadline or size cap; with
    ``sock`` (the connection under ``source``) each read waits at most what is left of it.
    """
    digest, size = hashlib.sha256(), 0
    with dest.open("wb") as out:
        bar = None
        if progress:
            from rich.progress import Progress

            bar = Progress(transient=True)
            bar.start()
            task = bar.add_task(f"fetching {label or dest.name}", total=total)
        try:
            while True:
                if budget is not None and sock is not None:
                    sock.settimeout(budget.remaining(what))
                try:
                    chunk = _read(source)
                except TimeoutError:  # the wait was cut to the deadline: say which ran out
                    if budget is not None:
                        budget.remaining(what)
                    raise
                if not chunk:
                    return digest.hexdigest()
                size += len(chunk)
                if budget is not None:
                    budget.check_size(size, what)
                    budget.remaining(what)
                out.write(chunk)
                digest.update(chunk)
                if bar is not None:
                    bar.advance(task, len(chunk))
        finally:
            if bar is not None:
                bar.stop()


def _socket_of(response: object) -> socket.socket | None:
    """The connection under an ``http.client`` response (None where there is none)."""
    raw = getattr(getattr(response, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


def download(url: str, member: str | None, temp: Path, *, target: Path, budget: Budget,
             progress: bool, label: str) -> str:
    """Fetch ``url`` (extracting zip ``member`` if given) into ``temp``, a partial file of
    ``target``; return its sha256.

    Raises :class:`NoDownload` saying why it failed (HTTP status, network, deadline, size cap,
    a file:// path that is not a regular file, a bad archive).
    """
    what = f"download of {url}"
    try:
        length: int | None = None
        if url.startswith("file://"):
            path = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
            opened: IO[bytes] = open_regular(path, error=DataError)
        else:
            request = urllib.request.Request(url, headers={"User-Agent": "faircode"})
            answer = urllib.request.urlopen(request, timeout=budget.remaining(what))
            header = answer.headers.get("Content-Length")
            length = int(header) if header and header.isdigit() else None
            opened = answer
        sock = _socket_of(opened)
        with opened as response:
            if length is not None:  # refused before the body is read
                budget.check_size(length, what)
            if member is None:
                return copy_hashing(response, temp, budget=budget, total=length,
                                    progress=progress, label=label, sock=sock, what=what)
            with staging(target, suffix=".zip.part") as archive:
                copy_hashing(response, archive, budget=budget, total=length, progress=progress,
                             label=label, sock=sock, what=what)
                return _extract(archive, member, temp, budget=budget)
    except NoDownload:
        raise
    except DataError as exc:
        raise NoDownload(f"{what} failed: {exc}") from None
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        budget.remaining(what)  # a connection cut short by the deadline says so
        if isinstance(exc, urllib.error.HTTPError):
            reason: object = f"HTTP {exc.code} {exc.reason}"
        else:
            reason = getattr(exc, "reason", None) or exc
        raise NoDownload(f"{what} failed: {reason}") from None


def _extract(archive: Path, member: str, dest: Path, *, budget: Budget) -> str:
    try:
        with zipfile.ZipFile(archive) as zf, zf.open(member) as handle:
            return copy_hashing(handle, dest, budget=budget, what=f"extraction of {member!r}")
    except (zipfile.BadZipFile, KeyError) as exc:
        raise NoDownload(f"cannot extract {member!r}: {exc}") from None
