"""One audit's evaluate step, whatever its task kind: the job and the evaluator's shape.

The evaluate stage settles every audit with its kind's :class:`Evaluator`
(:mod:`faircode.evaluate.kinds`) and runs the :class:`Job` it returns, in this process or a
worker.  A job is a frozen record of paths and plain values: it is pickled to a worker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from faircode.core.layout import DvcViews

if TYPE_CHECKING:
    from faircode.core.config import BenchmarkConfig

__all__ = ["Evaluator", "Job", "Upstream"]


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where the data stages wrote every audit's inputs: the evaluate stage's arguments
    (``upstream/dvc.yaml``'s outputs) and the fit stages' parts in grid order."""

    prepared: Path
    predictions: Path
    text: Path
    parts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Job:
    """One audit to evaluate: what its kind's :meth:`Evaluator.run` reads."""

    kind: str
    """The task kind's name (:data:`EVALUATORS`)."""
    audit: str
    results: Path
    """The results folder the audit's folder is written into."""
    manifest: Path
    inputs: tuple[Path, ...] = ()
    """The data stages' folders it reads, in the kind's order."""
    views: DvcViews | None = None
    """The kind's DVC views of the audit (``None``: it has none)."""
    provenance_record: Mapping[str, Any] = field(default_factory=dict)


class Evaluator(Protocol):
    """A task kind's evaluate step (module docstring)."""

    def settle(self, audit: str, *, manifest: Path, upstream: Upstream, results: Path,
               config: BenchmarkConfig, say: Callable[[str], None]) -> Job | None:
        """Write what needs no evaluation (``say`` tells what was done); else the job."""

    def run(self, job: Job, *, config: BenchmarkConfig) -> Path:
        """Evaluate ``job`` and write its results folder; the folder."""
