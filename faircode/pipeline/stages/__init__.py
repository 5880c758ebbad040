"""Thin DVC stage entry points: ``python -m faircode.pipeline.stages.<name> ...`` (see
``dvc.yaml``).

Each stage parses its arguments, validates ``params.yaml`` into the typed config, calls one
library function and writes its outputs; no statistics or model logic lives here.  Paths are
relative to the project root (DVC runs every command there, also inside an experiment's copy).

An audit whose raw data cannot be had is not a failure: ``fetch`` writes
``data/raw/<audit>/unavailable.json`` with the message (and how to obtain the file), every later
stage carries that note forward, and ``evaluate`` ends in ``results/<audit>/unavailable.json``.
A bad ``params.yaml`` is one line on stderr and exit code 2.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from faircode.core.cells import Strategy
from faircode.core.errors import FaircodeError
from faircode.core.numerics import require

__all__ = [
    "PARTS",
    "UNAVAILABLE",
    "carry_unavailable",
    "manifest_path",
    "run_stage",
    "write_unavailable",
]

UNAVAILABLE = "unavailable.json"
PARAMS = Path("params.yaml")
PARTS: dict[str, tuple[Strategy, ...]] = {
    "unmitigated": (Strategy.BASELINE, Strategy.UNAWARENESS, Strategy.UNAWARENESS_PROXY_REMOVAL),
    "in_processing": (Strategy.IN_PROCESSING,),
    "post_processing": (Strategy.POST_PROCESSING,),
}
"""The grid's parts, one fit stage each (split by the ``mitigation.*`` keys they read,
:data:`faircode.grid.strategies.READS`), in grid order; evaluate merges them."""


def manifest_path(audit: str) -> Path:
    """The manifest of ``audit`` in the project (``audits/<audit>/audit.yaml``)."""
    return Path("audits") / audit / "audit.yaml"


def write_unavailable(folder: Path, *, audit: str, message: str) -> None:
    """Replace ``folder`` with a single note saying that ``audit`` has no data, and why."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():  # a persisted results folder may hold a deployed/ folder
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    note = {"audit": audit, "available": False, "message": message}
    (folder / UNAVAILABLE).write_text(json.dumps(note, indent=2) + "\n")


def carry_unavailable(upstream: Path, folder: Path, *, audit: str) -> bool:
    """Copy ``upstream``'s unavailable note into ``folder``; return whether there was one."""
    note = upstream / UNAVAILABLE
    if not note.is_file():
        return False
    write_unavailable(folder, audit=audit, message=json.loads(note.read_text())["message"])
    print(f"skipped: {json.loads(note.read_text())['message']}")
    return True


def run_stage(work: Callable[[], None]) -> None:
    """Run ``work`` (under the declared numerical configuration,
    :func:`faircode.core.numerics.require`); a :class:`FaircodeError` is one line on stderr and
    exit code 2."""
    try:
        require()
        work()
    except FaircodeError as exc:
        print(str(exc), file=sys.stderr)
        sys.exit(2)
