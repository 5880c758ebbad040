"""The four result tables of one audit, assembled from its scored cells (:func:`assemble`).

:class:`AuditResults` holds ``fairness``, ``performance``, ``intersectional`` and
``counterfactual`` with exactly their published columns; the q-values of the audit's one
Benjamini-Hochberg family (:func:`faircode.stats.metrics.audit_q_values`: each fairness null
once, every DD-vs-AA gap and interaction) are filled in here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from faircode.audit.prepared import AuditLike
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.score import CellResult
from faircode.stats.metrics import FAIRNESS_COLUMNS, INTERSECTIONAL_COLUMNS, audit_q_values

__all__ = ["COUNTERFACTUAL_COLUMNS", "PERFORMANCE_COLUMNS", "AuditResults", "assemble"]


@dataclass(frozen=True, slots=True)
class AuditResults:
    """The four result tables of one audit and the per-cell record that produced them.

    ``stability``/``replicates``: the training-replicate tables
    (:mod:`faircode.evaluate.stability`),
    None without replicates (``run.seeds`` 1).
    """

    fairness: pd.DataFrame
    performance: pd.DataFrame
    intersectional: pd.DataFrame
    counterfactual: pd.DataFrame
    cells: tuple[CellResult, ...]
    stability: pd.DataFrame | None = None
    replicates: pd.DataFrame | None = None


PERFORMANCE_COLUMNS = ("audit", "strategy", "model", "protected_attribute", "metric",
                       "value", "ci_low", "ci_high", "n", "note")


COUNTERFACTUAL_COLUMNS = (
    "audit", "strategy", "model", "axis", "kind", "columns", "flip_rate", "ci_low", "ci_high",
    "to_favourable", "to_unfavourable", "n_changed", "n_unchanged", "n_flipped",
    "design_effect", "note",
)


def assemble(
    data: AuditLike, results: Sequence[CellResult], config: BenchmarkConfig
) -> AuditResults:
    audit = data.manifest.name
    fairness = _frame(audit, [row for r in results for row in r.fairness], FAIRNESS_COLUMNS)
    intersectional = _frame(audit, [row for r in results for row in r.intersectional],
                            INTERSECTIONAL_COLUMNS)
    # One BH family per audit: each fairness null once, every DD-vs-AA gap and interaction.
    fairness, intersectional = audit_q_values(fairness, intersectional, alpha=config.alpha)
    return AuditResults(
        fairness=fairness,
        performance=_frame(audit, [row for r in results for row in r.performance],
                           PERFORMANCE_COLUMNS),
        intersectional=intersectional,
        counterfactual=_frame(audit, [row for r in results for row in r.counterfactual],
                              COUNTERFACTUAL_COLUMNS),
        cells=tuple(results),
    )


def _frame(audit: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows as a frame with exactly ``columns`` (q_value/significant filled in later)."""
    frame = pd.DataFrame(rows, columns=[c for c in columns
                                        if c not in ("audit", "q_value", "significant")])
    frame.insert(0, "audit", audit)
    return frame.reindex(columns=list(columns))

