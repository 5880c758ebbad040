"""One audit in memory, end to end: prepare, fit every cell, evaluate (:func:`run_audit`).

The library's one-call path for a notebook or script; ``faircode run`` and the DVC pipeline run
the same steps (fit in one queue for every audit, then evaluate each) and give bit-identical
numbers.
"""

from __future__ import annotations

from collections.abc import Callable

from faircode.audit.data import AuditData
from faircode.audit.prepared import prepare
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.audit import evaluate_audit
from faircode.evaluate.tables import AuditResults
from faircode.grid.fit import fit_audit
from faircode.grid.predictions import CellPredictions

__all__ = ["run_audit"]


def run_audit(
    data: AuditData,
    *,
    config: BenchmarkConfig,
    on_cell_done: Callable[[CellPredictions], None] | None = None,
) -> AuditResults:
    """Run the full grid on one loaded audit (fit, then evaluate, in memory)."""
    prepared = prepare(data)
    predictions = fit_audit(prepared, config=config, on_cell_done=on_cell_done)
    return evaluate_audit(prepared, predictions, config=config)

