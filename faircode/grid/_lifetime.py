"""Process lifetime of a local pool: workers die with their parent; SIGTERM/SIGINT stop the pool.

Used by :mod:`faircode.grid.scheduler` for its ``ProcessPoolExecutor`` (spawned workers).  Before
this, a ``faircode run`` killed during fitting (a CI timeout, ``timeout``, DVC stopped, SIGKILL
or SIGTERM) left every worker and the multiprocessing resource tracker alive forever: a spawned
worker waits on its call queue and nothing tells it that the coordinator is gone, and the
tracker exits only when every process holding its pipe (the coordinator *and* every worker) has
closed it.

Design decisions
----------------
* **The kernel kills a worker when its parent dies** (Linux: ``prctl(PR_SET_PDEATHSIG,
  SIGKILL)`` via ctypes, armed by :func:`follow_parent` in the worker initializer).  The death
  signal follows the *thread* that spawned the worker: the executor spawns in ``submit``, i.e.
  in the thread calling :func:`faircode.grid.scheduler.run_tasks`, which outlives the pool.  If the
  parent died before the signal was armed, ``os.getppid()`` has already changed and the worker
  exits at once.
* **A watchdog thread is the portable fallback**: a daemon thread polls ``os.getppid()`` every
  :data:`PARENT_POLL_SECONDS` and ``os._exit``\\ s the worker when the parent changed (on
  systems without ``prctl``, and as a second line on Linux).  A worker writes no file, so dying
  abruptly loses nothing.
* **The resource tracker then goes by itself**: it reads its pipe until every holder has closed
  it, so once the coordinator and the workers are gone it sees EOF and exits.  Nothing is done
  to it directly.
* **SIGTERM and SIGINT stop the pool, then the process**: while the pool runs (main thread
  only, :class:`SignalStop`) they raise :class:`Stopped`, a ``SystemExit`` with code
  ``128 + signal``, so ``finally`` blocks and context managers (the progress display, the results
  staging folder) still run; the pool's workers are killed (:func:`terminate`) before it
  propagates, and the executor's manager thread is waited for: left running, it may close its
  wake-up pipe while the interpreter's exit writes to it (CPython 3.11's
  ``concurrent.futures.process._python_exit`` does so without a lock; CPython gh-125451), an
  ``OSError: [Errno 9] Bad file descriptor`` traceback after the stop line, seen once in a CI
  simulation.  A signal that arrives while a worker is being spawned is raised once the spawn
  returns, so no half-started worker is left to fail on a closed pipe.  A signal the process
  ignores (``nohup``) stays ignored.
* **Workers ignore SIGINT**: a Ctrl-C in a terminal reaches the whole process group, and the
  coordinator alone stops the run, without a ``KeyboardInterrupt`` traceback per worker.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["PARENT_POLL_SECONDS", "SignalStop", "Stopped", "follow_parent", "terminate"]

PARENT_POLL_SECONDS = 1.0
"""How often a local worker checks that the coordinating process is still its parent."""
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopped(SystemExit):
    """SIGTERM or SIGINT stopped a local pool (its workers are killed); exits ``128 + signal``."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def follow_parent(parent: int) -> None:
    """In a worker: die with the coordinating process ``parent``, and leave SIGINT to it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watchdog remains
            pass
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="faircode-parent-watch",
                     daemon=True).start()


def _watch_parent(parent: int) -> None:
    """Exit this worker once ``parent`` is no longer its parent (the portable fallback)."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


class SignalStop:
    """Between :meth:`install` and :meth:`restore`, SIGTERM and SIGINT raise :class:`Stopped`.

    Main thread only (elsewhere both are no-ops); inside :meth:`held` the signal is deferred.
    """

    def __init__(self) -> None:
        self._holding = False
        self._pending: int | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._holding:
            self._pending = signum
            return
        raise Stopped(signum)

    def install(self) -> None:
        """Handle SIGTERM and SIGINT (each unless the process ignores it)."""
        if threading.current_thread() is not threading.main_thread():
            return
        self._previous = {s: signal.getsignal(s) for s in _STOP_SIGNALS}
        for signum, handler in self._previous.items():
            if handler is not signal.SIG_IGN:
                signal.signal(signum, self._handle)

    def restore(self) -> None:
        """Put the previous handlers back."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    @contextmanager
    def held(self) -> Iterator[None]:
        """Defer a stop signal until the block (which may spawn a worker) has finished."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        if self._pending is not None:
            raise Stopped(self._pending)


def terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: drop the queued tasks and kill its workers, running tasks included;
    return once its manager thread has ended (module docstring)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # 3.14: terminate_workers
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()
    for process in processes:
        process.join(timeout=5)
    if manager is not None:
        manager.join(timeout=5)
