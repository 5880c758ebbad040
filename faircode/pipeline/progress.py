"""What ``faircode run`` shows while the queue runs and when it is done.

* One progress bar over every cell of the run (all audits in one queue): cells done / total and
  an ETA from the cost model (:class:`~faircode.grid.scheduler.ProgressEstimate`: the remaining
  expected seconds, scaled by how fast the cells done so far ran against the model, divided by
  the workers); above it one line per finished cell.
* At the end, one table with a row per audit: prepared rows, cells fitted (and skipped), the sum
  of the cells' seconds, the longest cell, and the largest significant fairness gap.
* ``quiet`` (CI): no bar and no per-cell lines; the table is still printed.

Display only: nothing here feeds a result file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from faircode.core.cells import STRATEGY_CODES, Strategy, strategy_code
from faircode.core.metrics import no_gap
from faircode.evaluate.tables import AuditResults
from faircode.grid.predictions import AuditPredictions
from faircode.grid.scheduler import Finished, ProgressEstimate, Task

__all__ = ["AuditSummary", "RunDisplay", "audit_summary", "summary_table"]


def _label(key: tuple[object, ...]) -> str:
    """``S3 random_forest`` for a grid key; further key parts appended (e.g. a replicate)."""
    parts = [STRATEGY_CODES[k] if isinstance(k, Strategy) else str(k) for k in key]
    return " ".join(parts)


def _clock(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


class RunDisplay:
    """The progress bar of one run (a context manager); its methods are the queue's callbacks."""

    def __init__(self, console: Console, *, quiet: bool) -> None:
        self.console, self.quiet = console, quiet
        self._bar: Progress | None = None
        self._task: object = None
        self._estimate: ProgressEstimate | None = None

    def __enter__(self) -> RunDisplay:
        if not self.quiet:
            self._bar = Progress(
                "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                console=self.console, transient=True)
            self._bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)

    def start(self, tasks: Sequence[Task], workers: int) -> None:
        """The queue is ready: ``tasks`` on ``workers`` workers."""
        self._estimate = ProgressEstimate(tasks, workers=workers)
        if self._bar is not None:
            audits = len({t.audit for t in tasks})
            self._task = self._bar.add_task(
                f"fit {audits} audit{'s' if audits != 1 else ''} on {workers} worker"
                f"{'s' if workers != 1 else ''}", total=len(tasks),
                eta=_clock(self._estimate.eta_seconds()))

    def done(self, finished: Finished) -> None:
        """One task finished: its line, and the bar advanced."""
        if self._estimate is not None:
            self._estimate.record(finished)
        if self._bar is None or self._estimate is None:
            return
        seconds = getattr(finished.result, "seconds", None) or {"wall": finished.seconds}
        cell = getattr(finished.result, "cell", finished.result)  # a replicate holds its cell
        unfittable = getattr(cell, "unfittable", "")
        what = getattr(cell, "skipped", "") or (
            f"not fitted (uninformative): {unfittable}" if unfittable else " ".join(
                f"{k} {v:.1f}s" for k, v in seconds.items()))
        self._bar.console.print(f"  {finished.task.audit} {_label(finished.task.key)}: {what}",
                                soft_wrap=True)
        self._bar.update(self._task, advance=1,  # type: ignore[arg-type]
                         eta=_clock(self._estimate.eta_seconds()))


@dataclass(frozen=True, slots=True)
class AuditSummary:
    """One row of the end-of-run table."""

    audit: str
    rows: int
    cells: int
    skipped: int
    seconds: float
    longest: str
    gap: str


def audit_summary(predictions: AuditPredictions, results: AuditResults, *,
                  rows: int) -> AuditSummary:
    """Summarise one audit: cell seconds (fit + predict + counterfactual), the longest cell, and
    the largest significant fairness gap (a difference metric, ``significant`` true)."""
    def cell_seconds(seconds: dict[str, float]) -> float:
        return sum(seconds.get(k, 0.0) for k in ("fit", "predict", "counterfactual"))

    fitted = [c for c in predictions.cells if c.fitted]
    longest = max(fitted, key=lambda c: cell_seconds(c.seconds), default=None)
    fairness = results.fairness
    gap = "none"
    if len(fairness):
        found = fairness[fairness["significant"].astype(bool)
                         & (fairness["metric"].map(no_gap) == 0.0)  # not a ratio
                         & fairness["value"].notna()]
        if len(found):
            row = found.iloc[int(np.argmax(found["value"].abs().to_numpy(dtype=float)))]
            code = strategy_code(row["strategy"])
            gap = (f"{row['value']:+.3f} {row['metric']} ({row['protected_attribute']}, "
                   f"{code} {row['model']})")
    return AuditSummary(
        audit=predictions.audit, rows=rows, cells=len(fitted),
        skipped=len(predictions.cells) - len(fitted),
        seconds=sum(cell_seconds(c.seconds) for c in fitted),
        longest=("-" if longest is None else
                 f"{STRATEGY_CODES[longest.strategy]} {longest.family.value} "
                 f"{cell_seconds(longest.seconds):.1f} s"),
        gap=gap,
    )


def summary_table(rows: Sequence[AuditSummary], *, wall: float) -> Table:
    """The end-of-run table (one row per audit) with the run's wall time in its title."""
    table = Table(title=f"faircode run: {len(rows)} audit{'s' if len(rows) != 1 else ''}, "
                        f"wall {wall:.1f} s", title_justify="left")
    for name, justify in (("audit", "left"), ("rows", "right"), ("cells", "right"),
                          ("cell s", "right"), ("longest cell", "left"),
                          ("largest significant gap", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        cells = f"{r.cells}" + (f" (+{r.skipped} skipped)" if r.skipped else "")
        table.add_row(r.audit, f"{r.rows:,}", cells, f"{r.seconds:.1f}", r.longest, r.gap)
    return table
