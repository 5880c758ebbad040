"""Thin DVC stage entry points: ``python -m faircode.pipeline.stages.<name> ...`` (see
``dvc.yaml``).

Each stage parses its arguments, validates ``params.yaml`` into the typed config, calls one
library function and writes its outputs; no statistics or model logic lives here.  Paths are
relative to the project root (DVC runs every command there, also inside an experiment's copy).

An audit whose raw data cannot be had is not a failure: ``fetch`` writes
``data/raw/<audit>/unavailable.json`` with the message (and how to obtain the file), every later
stage carries that note forward, and ``evaluate`` ends in ``results/<audit>/unavailable.json``.
A bad ``params.yaml`` is one line on stderr and exit code 2 (and every other way a stage can
stop is one line too: :mod:`faircode.pipeline._boundary`); an ``AUDIT`` argument is a safe name
(:func:`audit_argument`) before any path is built from it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from faircode.core.cells import FIT_PARTS, Strategy
from faircode.core.errors import ConfigError
from faircode.core.layout import unavailable_message, write_unavailable
from faircode.core.names import check_name
from faircode.core.numerics import require
from faircode.pipeline._boundary import run_command

__all__ = [
    "PARTS",
    "audit_argument",
    "carry_unavailable",
    "manifest_path",
    "run_stage",
    "write_unavailable",
]

PARAMS = Path("params.yaml")
PARTS: dict[str, tuple[Strategy, ...]] = FIT_PARTS
"""The grid's parts, one fit stage each (each strategy's ``part`` in
:data:`faircode.core.cells.STRATEGY_TABLE`, split by the ``mitigation.*`` keys they read), in grid
order; evaluate merges them."""


def audit_argument(value: str) -> str:
    """A stage's ``AUDIT`` argument, checked before any path is built from it: a safe name
    (:func:`faircode.core.names.check_name`), else one line on stderr and exit code 2."""
    try:
        return check_name(value, where="AUDIT")
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        sys.exit(2)


def manifest_path(audit: str) -> Path:
    """The manifest of ``audit`` in the project (``audits/<audit>/audit.yaml``)."""
    return Path("audits") / audit / "audit.yaml"


def carry_unavailable(upstream: Path, folder: Path, *, audit: str) -> bool:
    """Copy ``upstream``'s unavailable note into ``folder`` (:func:`faircode.core.layout.
    write_unavailable`); return whether there was one."""
    message = unavailable_message(upstream)
    if message is None:
        return False
    write_unavailable(folder, audit=audit, message=message)
    print(f"skipped: {message}")
    return True


def run_stage(work: Callable[[], None]) -> None:
    """Run ``work`` under the declared numerical configuration
    (:func:`faircode.core.numerics.require`) at the command-line boundary
    (:func:`faircode.pipeline._boundary.run_command`): bad input is one line and exit code 2, an
    ``OSError``, a ``MemoryError``, SIGINT or SIGTERM one line and their codes."""
    def body() -> int:
        require()
        work()
        return 0

    code = run_command(body)
    if code:
        sys.exit(code)
