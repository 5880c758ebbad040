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
* **Anything else is a bug** and keeps its traceback: only the causes above are outside the
  program's control (or the user's input), so only they are worded.
* A ``SystemExit`` passes through untouched (argparse's ``--help``, the pool's stop).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from faircode.core.errors import FaircodeError

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE",
           "Terminated", "run_command"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
"""Success; a check that found something (drift, a failed audit) or an ``OSError``/``MemoryError``;
bad input (one line)."""
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived while a command ran (raised by the handler :func:`run_command` installs)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
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


def run_command(body: Callable[[], int]) -> int:
    """Run ``body`` and return its exit code, or the code of what stopped it (module docstring),
    with exactly one line on stderr for each of those."""
    previous = None
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return body()
    except FaircodeError as exc:
        _say(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("interrupted by SIGINT: stopped; results written before stay as they were, nothing "
             "half-written is left")
        return EXIT_INTERRUPTED
    except Terminated:
        _say("stopped by SIGTERM: results written before stay as they were, nothing "
             "half-written is left")
        return EXIT_TERMINATED
    except MemoryError:
        _say("out of memory: the input is larger than this machine's memory allows (see the "
             "size limits in docs/operations.md)")
        return EXIT_FAILED
    except OSError as exc:
        _say(os_error_line(exc))
        return EXIT_FAILED
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
