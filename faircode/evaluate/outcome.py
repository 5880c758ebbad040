"""People's decisions: a row set whose decision *is* the recorded outcome, and what it cannot say.

A manifest's ``system.decision: outcome`` declares that the audited decision is the data's own
outcome (an employer's callback, a lender's denial): there is no separate ground truth to check it
against.  Such a row set is scored on what decisions alone can show -- selection rates, the parity
gap and disparate impact (:data:`faircode.core.metrics.DECISION_METRICS`), the intersectional
cells and the gap within declared strata, each with its interval and test -- and every number that
compares the decision with a ground truth (the error-rate gaps, equalized odds, predictive parity,
accuracy equality; accuracy, AUC, F1, balanced accuracy and the majority-class baseline; the
per-group TPR, FPR, FNR, PPV, NPV and accuracy) is *not applicable*: NaN with the note
:data:`~faircode.core.metrics.NOT_APPLICABLE`, by design -- never an error and never 0 (computed on
the decision as its own truth, each would read as a perfect 1 or a perfect 0).

:func:`mark_not_applicable` rewrites a scored row set's rows in place; the p-values it blanks are
NaN, so they leave the audit's Benjamini–Hochberg family (nothing tested, nothing adjusted).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from faircode.core.metrics import DECISION_METRICS, NOT_APPLICABLE

__all__ = ["GROUND_TRUTH_PERFORMANCE", "GROUND_TRUTH_RATES", "mark_not_applicable"]

GROUND_TRUTH_PERFORMANCE: tuple[str, ...] = (
    "accuracy", "auc", "f1", "balanced_accuracy", "majority_baseline_accuracy")
"""``performance.csv`` metrics that compare a decision with a ground truth."""
GROUND_TRUTH_RATES: tuple[str, ...] = ("tpr", "fpr", "fnr", "ppv", "npv", "accuracy")
"""``groups.csv`` rates that need a ground truth (base rate and selection rate do not)."""
_NAN = float("nan")


def _blank(row: dict[str, Any], columns: Iterable[str]) -> None:
    """NaN in ``columns``; the note is the marker alone (any other note was about the value)."""
    for column in columns:
        if column in row:
            row[column] = _NAN
    row["note"] = NOT_APPLICABLE


def mark_not_applicable(fairness: list[dict[str, Any]], performance: list[dict[str, Any]],
                        groups: list[dict[str, Any]]) -> None:
    """Mark every ground-truth number of a decision-only row set not applicable (in place)."""
    for row in fairness:
        if row["metric"] not in DECISION_METRICS:
            _blank(row, ("value", "ci_low", "ci_high", "p_value", "mde"))
            row.update(powered=False, mde_note=NOT_APPLICABLE)
    for row in performance:
        if row["metric"] in GROUND_TRUTH_PERFORMANCE:
            _blank(row, ("value", "ci_low", "ci_high"))
    for row in groups:
        if row["metric"] in GROUND_TRUTH_RATES:
            _blank(row, ("value", "ci_low", "ci_high"))
