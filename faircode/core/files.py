"""The files faircode reads on a user's word and the files it creates.

**Reading**: a regular file only, read up to a stated number of bytes.

Every file faircode reads on a user's word -- params, manifests (also the ``audits/*/audit.yaml``
it discovers), axes files, JSONL payloads, raw data, results and freeze records -- is opened
through :func:`open_regular` or read through :func:`read_bounded`, so a FIFO, a device, a socket
or a folder in its place is one line instead of a read that never ends (a FIFO without a writer,
``/dev/zero``) or a ``MemoryError`` at the address-space cap.

Design decisions
----------------
* **The kind is checked on the opened descriptor** (``fstat``), not on the path before opening,
  so a path swapped between the check and the read cannot slip a FIFO in.  The open itself is
  non-blocking: opening a FIFO for reading waits for a writer otherwise, before any check could
  run.  On a regular file ``O_NONBLOCK`` changes nothing.
* **Bounded by the bytes actually read**, never by ``st_size``: ``st_size`` is 0 for
  ``/dev/zero``, a FIFO and the files of ``/proc``, and a file may grow while it is read.
  :func:`read_bounded` reads at most ``limit + 1`` bytes and refuses the file if it got them.
* The error class is the caller's (a :class:`~faircode.core.errors.ConfigError` for a YAML file,
  a :class:`~faircode.core.errors.DataError` for data), so the message keeps the one-line form
  ``<path>: expected a regular file, got a FIFO`` and the caller's exit code.
* Only ``OSError`` of the open itself (a missing file, no permission) passes through unchanged:
  callers word it with their own context.

**Creating**: the permissions of what faircode creates are the user's umask, as ``open`` and
``mkdir`` give them.

Files and folders written through :mod:`tempfile` (a fetched raw file's staging copy, a results
folder's staging folder) are created ``0600`` and ``0700`` whatever the umask, for the secrecy a
temporary file needs; once such a file or folder is moved into place it is the user's result,
so :func:`user_mode` gives it the mode ``open``/``mkdir`` would have: ``0666`` or ``0777`` less
the umask (``0644``/``0755`` under the usual ``022``).

The umask is read from ``/proc/self/status`` where the kernel reports it (Linux >= 4.7); only
elsewhere is it read by setting and restoring it (``os.umask``), which another thread creating a
file at that instant could notice.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO

from faircode.core.errors import FaircodeError, describe

__all__ = ["check_regular", "file_kind", "open_regular", "read_bounded", "read_json_object",
           "umask", "user_mode"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words (``a FIFO (named pipe)``)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: Path, *, error: type[FaircodeError] = FaircodeError) -> BinaryIO:
    """Open ``path`` for binary reading; anything but a regular file raises ``error``.

    Symbolic links are followed (the kind checked is the target's).  The caller closes the
    returned file; ``OSError`` of the open (missing, no permission) is raised unchanged.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{path}: expected a regular file, got {file_kind(mode)}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_regular(path: Path, *, error: type[FaircodeError] = FaircodeError) -> None:
    """Raise ``error`` unless ``path`` opens as a regular file (for readers that reopen it)."""
    open_regular(path, error=error).close()


def read_bounded(path: Path, *, limit: int, error: type[FaircodeError] = FaircodeError,
                 what: str = "file") -> bytes:
    """The bytes of the regular file ``path``; more than ``limit`` bytes raises ``error``.

    At most ``limit + 1`` bytes are ever read: ``<path>: expected a <what> of at most
    <limit> bytes, got more``.
    """
    with open_regular(path, error=error) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise error(f"{path}: expected a {what} of at most {limit:,} bytes, got more")
    return data


def read_json_object(path: Path, *, limit: int, error: type[FaircodeError] = FaircodeError,
                     what: str = "JSON object") -> dict[str, Any]:
    """The JSON object in the regular file ``path`` (at most ``limit`` bytes); anything else --
    unreadable, too big, not JSON, not an object -- is one ``error`` line naming ``what``."""
    try:
        value = json.loads(read_bounded(path, limit=limit, error=error, what=what))
    except OSError as exc:
        raise error(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except RecursionError:  # json's decoder recurses: arrays in arrays thousands deep
        raise error(f"{path}: expected a {what} in JSON, got one nested deeper than "
                    f"{sys.getrecursionlimit():,} levels") from None
    except ValueError as exc:
        raise error(f"{path}: expected a {what} in JSON, got {type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:200]}") from None
    if not isinstance(value, dict):
        raise error(f"{path}: expected a JSON object (a {what}), got {describe(value)}")
    return value


def umask() -> int:
    """The process's umask."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def user_mode(path: Path, *, directory: bool | None = None) -> None:
    """Give ``path`` the mode ``open`` (a file) or ``mkdir`` (a folder) would have given it."""
    folder = path.is_dir() if directory is None else directory
    os.chmod(path, (0o777 if folder else 0o666) & ~umask())
