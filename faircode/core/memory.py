"""The process's memory while a long input is read chunk by chunk: large arrays mapped, free
pages handed back.

A streamed audit's peak is one chunk's arrays on top of what the process holds between chunks.
Both must be the same for the 10⁶th chunk as for the first, and the C allocator keeps what it
was given unless it is told otherwise.

Design decisions
----------------
The figures are peaks of ``bench/log_scale.py stream`` over logs of 10⁶ and 10⁷ rows, read
10⁶ rows at a time (docs/operations.md has the four sizes).

* **Arrays are mapped, not carved from the heap** (:func:`map_large_arrays`, Linux glibc):
  by default glibc raises its mmap threshold to the largest block freed so far (up to 32 MiB),
  so a chunk's arrays (a 10⁶-row mask is 1 MB) come from the heap, whose freed holes the
  process keeps.  The threshold is fixed at glibc's initial 128 KiB, so every array of at least
  that is its own mapping, returned when freed: 285 and 287 MiB, against 289 and 300 at 1 MiB.
* **Arrow allocates from the same C heap** (its system pool, not its bundled mimalloc): mimalloc
  keeps freed pages per thread, which the main thread cannot hand back, and a reader thread's
  share differs from chunk to chunk: 324 and 330 MiB with mimalloc.  Arrow's C++ readers take
  the pool chosen when Arrow is first loaded (pandas loads it), so a streaming command calls
  :func:`map_large_arrays` before anything else; called later it sets only Python's default.
* **Free pages are handed back where a chunk's garbage ends** (:func:`release_free_memory`):
  glibc's ``malloc_trim`` and Arrow's ``release_unused``.  Freed holes in the heap stay
  resident until trimmed, and how much of them is left when the next large array is made
  differs from chunk to chunk; the run's peak is the highest of these, so it rose with the
  number of chunks.  The log reader calls it after each chunk is checked, before each copy of
  a chunk's rows and once the chunk's frame is gone; the builders after each chunk counted and
  each record part read.  With the builders' calls alone: 370 and 378 MiB; with the reader's
  too (mimalloc, 1 MiB): 325 and 331.
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["map_large_arrays", "release_free_memory"]

_MMAP_THRESHOLD = 1 << 17
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
_ARROW_POOL = "ARROW_DEFAULT_MEMORY_POOL"
_mapped = False


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (``mallopt`` and ``malloc_trim``), else None."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt, libc.malloc_trim  # noqa: B018 - glibc's own
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return None
    return libc


_libc = _glibc()


def map_large_arrays() -> None:
    """From now on, in this process, allocate every block of at least 128 KiB as its own
    mapping, and Arrow's buffers from the C heap (module docstring); a no-op where the C
    library is not glibc.  Called before Arrow is loaded, it chooses the pool Arrow is loaded
    with, which its C++ readers take too; called after, only Python's default pool."""
    global _mapped
    if _libc is None:
        return
    if not _mapped:
        _mapped = True
        _libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    arrow = sys.modules.get("pyarrow")
    if arrow is None:  # Arrow reads it when it makes its pool
        os.environ.setdefault(_ARROW_POOL, "system")
    elif arrow.default_memory_pool().backend_name != "system":
        arrow.set_memory_pool(arrow.system_memory_pool())


def release_free_memory() -> None:
    """Hand the free pages of the C heap (glibc's ``malloc_trim``) and of Arrow's memory pool,
    when Arrow is loaded, back to the system (module docstring); well under a millisecond."""
    if _libc is not None:
        _libc.malloc_trim(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.default_memory_pool().release_unused()
