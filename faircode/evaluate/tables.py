"""The four result tables of one audit, assembled from its scored cells (:func:`assemble`).

:class:`AuditResults` holds ``fairness``, ``performance``, ``intersectional`` and
``counterfactual`` with exactly their published columns; the q-values of the audit's one
Benjamini-Hochberg family (:func:`faircode.stats.metrics.audit_q_values`: each fairness null
once, every DD-vs-AA gap and interaction) are filled in here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from faircode.audit.decision import DecisionRule
from faircode.evaluate.score import CellResult, Rows
from faircode.stats.metrics import FAIRNESS_COLUMNS, INTERSECTIONAL_COLUMNS, audit_q_values

__all__ = ["COUNTERFACTUAL_COLUMNS", "PERFORMANCE_COLUMNS", "AuditResults", "assemble"]


@dataclass(slots=True)
class AuditResults:
    """The four result tables of one audit, the per-cell records and the rule behind them.

    A plain (not frozen) container: its tables are DataFrames.  ``rule`` is the operating point
    the evaluate step resolved once (:func:`faircode.audit.decision.resolve_rule`);
    ``stability``/``replicates`` the training-replicate tables (:mod:`faircode.evaluate.stability`),
    None without replicates (``run.seeds`` 1).
    """

    fairness: pd.DataFrame
    performance: pd.DataFrame
    intersectional: pd.DataFrame
    counterfactual: pd.DataFrame
    cells: tuple[CellResult, ...]
    rule: DecisionRule
    stability: pd.DataFrame | None = None
    replicates: pd.DataFrame | None = None
    curves: pd.DataFrame | None = None
    """The operating-point curves (:mod:`faircode.evaluate.curves`); None when not asked for."""


PERFORMANCE_COLUMNS = ("audit", "strategy", "model", "protected_attribute", "metric",
                       "value", "ci_low", "ci_high", "n", "note")


COUNTERFACTUAL_COLUMNS = (
    "audit", "strategy", "model", "axis", "kind", "columns", "flip_rate", "ci_low", "ci_high",
    "to_favourable", "to_unfavourable", "n_changed", "n_unchanged", "n_flipped",
    "design_effect", "note",
)


def assemble(
    audit: str, results: Sequence[CellResult], *, rule: DecisionRule, alpha: float
) -> AuditResults:
    """The four tables of ``results`` (grid order), with the audit's BH q-values at ``alpha``."""
    fairness = _frame(audit, [r.fairness for r in results], FAIRNESS_COLUMNS)
    intersectional = _frame(audit, [r.intersectional for r in results], INTERSECTIONAL_COLUMNS)
    # One BH family per audit: each fairness null once, every DD-vs-AA gap and interaction.
    fairness, intersectional = audit_q_values(fairness, intersectional, alpha=alpha)
    return AuditResults(
        fairness=fairness,
        performance=_frame(audit, [r.performance for r in results], PERFORMANCE_COLUMNS),
        intersectional=intersectional,
        counterfactual=_frame(audit, [r.counterfactual for r in results],
                              COUNTERFACTUAL_COLUMNS),
        cells=tuple(results), rule=rule,
    )


def _frame(audit: str, parts: Sequence[Rows], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows as a frame with exactly ``columns`` (q_value/significant filled in later)."""
    rows = [row for part in parts for row in part.records()]
    frame = pd.DataFrame(rows, columns=[c for c in columns
                                        if c not in ("audit", "q_value", "significant")])
    frame.insert(0, "audit", audit)
    return frame.reindex(columns=list(columns))
