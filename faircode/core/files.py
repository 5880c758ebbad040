"""Opening a file a user named: a regular file only, read up to a stated number of bytes.

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
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from faircode.core.errors import FaircodeError, describe

__all__ = ["check_regular", "file_kind", "open_regular", "read_bounded", "read_json_object"]

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
    except ValueError as exc:
        raise error(f"{path}: expected a {what} in JSON, got {type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:200]}") from None
    if not isinstance(value, dict):
        raise error(f"{path}: expected a JSON object (a {what}), got {describe(value)}")
    return value
