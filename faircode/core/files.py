"""The permissions of what faircode creates: the user's umask, as ``open`` and ``mkdir`` give.

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

import os
from pathlib import Path

__all__ = ["umask", "user_mode"]


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
