"""The command-line boundary: every way a command can end is one line on stderr and an exit code.

:func:`run_command` runs the body of ``faircode <subcommand>`` and of every DVC stage entry point
(:func:`faircode.pipeline.stages.run_stage`).  Inside it:

=========================================================  ====  ===============================
what ended the command                                     exit  the line
=========================================================  ====  ===============================
bad input (:class:`~faircode.core.errors.FaircodeError`)   2     its message
``OSError`` (disk full, no permission, a vanished file)    1     ``<file>: cannot ...: <why>``
``MemoryError``                                            1     ``out of memory ...``
SIGINT (``KeyboardInterrupt``, Ctrl-C)                     130   ``interrupted by SIGINT ...``
SIGTERM (``kill``, a CI timeout, DVC stopping a stage)     143   ``stopped by SIGTERM ...``
=========================================================  ====  ===============================

Design decisions
----------------
* **SIGTERM becomes an exception** while the command runs (unless the process ignores it), so
  ``finally`` blocks and context managers run before the process ends: a download's ``.part``
  file is removed, a results staging folder is removed, the progress display is closed.  The
  default action would end the process on the spot and leave them behind.  The previous
  handler is put back afterwards; the local pool's own handlers
  (:class:`faircode.grid._lifetime.SignalStop`) nest inside and print their own line.
* **A command stops once**: a second SIGTERM or SIGINT while the first one's clean-up runs (a
  second Ctrl-C, a supervisor repeating its SIGTERM) raises nothing, so the clean-up goes on; it
  arms the watchdog below at once, so a clean-up that hangs still ends.  Raised again, it ended
  the clean-up where it was: a streamed audit of 10⁸ rows stopped by two SIGTERMs 50 ms apart
  left its 1.1 GB of spilled records behind.
* **A stop is a stop, whatever it became on its way up**: the signal's exception can be turned
  into another by the code it passes through -- a C extension being imported when it lands
  raises its own ``ImportError`` (pandas: ``pd_datetime.c could not import module pandas``,
  seen once in the CI simulation) -- so once a stop signal has been raised in a command, any
  exception that ends it is that stop's line and exit code.
* **A stopped command ends within** :data:`STOP_GRACE_SECONDS` **of the stop**
  (:func:`_end_later`): once SIGTERM or SIGINT has stopped it, a watchdog thread is armed, and
  if the process is still alive that long after -- its exit hangs joining a thread such as a
  process pool's manager stuck on a dead worker (a fit stage of a failed CI drift check ran on
  for 38 minutes so, and ignored SIGTERM) -- it ends the process groups this process started
  (:func:`faircode.core.processes.stop_all`), kills its multiprocessing children, says so in one
  line and exits ``128 + signal`` at once.  Only a real signal arms it (a handler here records
  it), and no thread runs before one: under an address-space limit (``ulimit -v``) a thread
  reserves 64 MiB of it for its malloc arena.  A signal that arrives while the main thread is
  inside one long C call (a single model fit) is acted on when that call returns.
* **Anything else is a bug** and keeps its traceback: only the causes above are outside the
  program's control (or the user's input), so only they are worded.
* A ``SystemExit`` passes through untouched (argparse's ``--help``, the pool's stop).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from faircode.core.errors import FaircodeError
from faircode.core.processes import stop_all

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE",
           "STOP_GRACE_SECONDS", "Terminated", "run_command"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
"""Success; a check that found something (drift, a failed audit) or an ``OSError``/``MemoryError``;
bad input (one line)."""
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM
STOP_GRACE_SECONDS = 5.0
"""How long after SIGTERM or SIGINT a command may take to end by itself (then it is ended)."""
_STACK_BYTES = 256 * 1024


class Terminated(BaseException):
    """SIGTERM arrived while a command ran (raised by the handler :func:`run_command` installs)."""


_armed = threading.Event()  # the watchdog (_end_later) runs
_raised = 0  # the stop signal raised in this command (0: none yet)


def _first_stop(signum: int) -> bool:
    """Record ``signum`` as the command's stop and say so, unless it is already stopping: then
    the clean-up goes on and the watchdog is armed (module docstring)."""
    global _raised
    if _raised:
        _end_later(signum)
        return False
    _raised = signum
    return True


def _terminate(signum: int, frame: FrameType | None) -> None:
    if _first_stop(signum):
        raise Terminated()


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:  # a closed stderr: nothing left to tell
        pass


def os_error_line(exc: OSError) -> str:
    """``<file>: <why> (<type>)`` for an ``OSError`` (the file when it names one)."""
    where = exc.filename if exc.filename is not None else "faircode"
    why = exc.strerror or str(exc) or type(exc).__name__
    other = f" -> {exc.filename2}" if getattr(exc, "filename2", None) else ""
    return f"{where}{other}: {why} ({type(exc).__name__})"


def _end_later(signum: int) -> None:
    """End this process :data:`STOP_GRACE_SECONDS` from now unless it has ended by itself: a
    daemon thread with a small stack (module docstring).  Under an address-space limit that
    leaves no room for a thread, nothing is armed.  Armed once per process."""
    if _armed.is_set():
        return
    _armed.set()

    def end() -> None:
        time.sleep(STOP_GRACE_SECONDS)
        _say(f"stopped by {signal.Signals(signum).name}: still running "
             f"{STOP_GRACE_SECONDS:g} s after it; ended, with the processes it started")
        stop_all()
        import multiprocessing

        for child in multiprocessing.active_children():
            child.kill()
        os._exit(128 + signum)

    size = threading.stack_size(_STACK_BYTES)
    try:
        threading.Thread(target=end, name="faircode-stop-end", daemon=True).start()
    except RuntimeError:  # pragma: no cover - no room for a thread
        pass
    finally:
        threading.stack_size(size)


def _stop_signal(exc: BaseException) -> int | None:
    """The signal that ended a command with ``exc``, when a real one did (not a simulated
    ``KeyboardInterrupt``)."""
    if isinstance(exc, Terminated):
        return signal.SIGTERM
    if isinstance(exc, KeyboardInterrupt) and _raised == signal.SIGINT:  # a real one
        return signal.SIGINT
    signum = getattr(exc, "signum", None)  # the local pool's Stopped
    if isinstance(exc, SystemExit):
        return signum if isinstance(signum, int) else None
    return _raised or None  # the stop's exception, turned into another on its way up


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if _first_stop(signum):
        raise KeyboardInterrupt


def run_command(body: Callable[[], int]) -> int:
    """Run ``body`` and return its exit code, or the code of what stopped it (module docstring),
    with exactly one line on stderr for each of those."""
    previous = previous_int = None
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            previous = signal.signal(signal.SIGTERM, _terminate)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            previous_int = signal.signal(signal.SIGINT, _interrupt)
    global _raised
    _raised = 0
    stopped_by = None
    try:
        return body()
    except BaseException as exc:
        stopped_by = _stop_signal(exc)
        if stopped_by is not None and not isinstance(exc, (KeyboardInterrupt, Terminated,
                                                          SystemExit)):
            exc = KeyboardInterrupt() if stopped_by == signal.SIGINT else Terminated()
        code = _ending(exc)
        if code is None:
            raise
        return code
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
        if stopped_by is not None:
            _end_later(stopped_by)


def _ending(exc: BaseException) -> int | None:
    """The exit code of what ended a command, its line said (module docstring); None for
    anything else (a bug, a ``SystemExit``), which the caller re-raises."""
    if isinstance(exc, FaircodeError):
        _say(str(exc))
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        _say("interrupted by SIGINT: stopped; results written before stay as they were, nothing "
             "half-written is left")
        return EXIT_INTERRUPTED
    if isinstance(exc, Terminated):
        _say("stopped by SIGTERM: results written before stay as they were, nothing "
             "half-written is left")
        return EXIT_TERMINATED
    if isinstance(exc, MemoryError):
        what = f" {exc}" if str(exc) else ""  # a reader names the file it was reading
        _say(f"out of memory{what}: the input is larger than this machine's memory allows (see "
             "the size limits in docs/operations.md)")
        return EXIT_FAILED
    if isinstance(exc, OSError):
        _say(os_error_line(exc))
        return EXIT_FAILED
    return None
