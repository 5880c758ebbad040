"""A worker's numbers count only if it computed them under this run's numerical configuration.

Every task a local pool worker or a Dask worker runs comes back with the kernels that computed
it (:func:`faircode.core.numerics.configuration`: the OpenBLAS kernels and numpy dispatch
targets in use); the coordinating process compares them with its own and stops the run
(:class:`WorkerNumericsError`, one line) on the first that differs.  A local worker inherits the
coordinator's environment, so it only differs when something is wrong; a Dask worker started
as a plain ``dask worker`` has imported numpy before faircode (``distributed`` imports it) and
runs its CPU's own kernels -- it must not silently contribute numbers.  ``python -m
faircode.grid.dask_worker`` starts a worker under the configuration.

Design decisions
----------------
* **Kernels, not machines**: the comparison is of the configuration, not of CPU models -- a
  cluster of different x86-64-v3 CPUs under the pinned configuration computes the same bytes.
* **Read once per worker process**: the kernels are fixed once numpy and scipy are loaded (after
  the worker's first task), so a worker reads them once (about 10 ms), not per task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faircode.core import numerics
from faircode.core.errors import FaircodeError

__all__ = ["Configuration", "WorkerCheck", "WorkerNumericsError", "checked"]

Configuration = dict[str, list[str]]

_SEEN: list[Configuration] = []
"""In a worker process: its configuration, read after its first task."""


class WorkerNumericsError(FaircodeError):
    """A worker computed a task under another numerical configuration than this process."""


def checked(timed: Callable[..., tuple[Any, float]], fn: Callable[..., Any], data: Any,
            *args: Any) -> tuple[Any, float, Configuration]:
    """In a worker: ``timed(fn, data, *args)`` and the configuration that computed it."""
    result, seconds = timed(fn, data, *args)
    if not _SEEN:
        _SEEN.append(numerics.configuration())
    return result, seconds, _SEEN[0]


class WorkerCheck:
    """In the coordinating process: each worker result's configuration against this process's
    (read at the first result, when this process has loaded its numerical libraries)."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.expected: Configuration | None = None

    def check(self, found: Configuration, *, task: str) -> None:
        """Raise :class:`WorkerNumericsError` when ``found`` is not this process's."""
        if self.expected is None:
            self.expected = numerics.configuration()
        if found == self.expected:
            return
        how = ("start each worker with `python -m faircode.grid.dask_worker SCHEDULER ...` "
               "(docs/operations.md)" if self.backend == "dask" else
               "a worker must inherit this process's environment")
        raise WorkerNumericsError(
            f"run.backend {self.backend}: a worker computed {task} under "
            f"{numerics.describe(found)}, this run computes under "
            f"{numerics.describe(self.expected)}; its numbers would differ in the last bits, so "
            f"the run stops: {how}")
