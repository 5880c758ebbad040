"""A mitigation constraint's violation: how far a classifier's group rates are from equal.

A fitted strategy that enforces ``mitigation.constraint`` on the first protected attribute (S3,
S4, S5) reaches some violation of it on the rows it enforced it on; the matched-violation
comparison (:mod:`faircode.evaluate.matched`) compares strategies at the same one.  The fit
measures it, so it lives in the grid wing (the fit stages import no statistics).
:func:`constraint_violation` measures it from the *expected* decisions ``p`` (the probability
that a randomised classifier decides 1: ExponentiatedGradient's mixture, a ThresholdOptimizer's
interpolation), so the number is the classifier's, not one draw's.

Design decisions
----------------
* **Rates in the fit's coding** (label 1, whatever the favourable outcome): the rates the
  constraint is enforced in.  ``demographic_parity``: the selection rate; the ``*_rate_parity``
  constraints their rate; ``equalized_odds`` the larger of the TPR and FPR gaps;
  ``error_rate_parity`` the error rate.  The violation is ``max |rate(1) − rate(0)|`` over the
  constraint's rates, two groups (the 0/1 disadvantaged mask).
* **The test-row metric of the same rates** is :func:`violation_metric`: the fairness table's
  metric (oriented so that 1 is favourable) whose distance from parity is that violation,
  so a frontier shows one quantity on the training and the test rows.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from faircode.core.config import CONSTRAINTS
from faircode.core.errors import describe
from faircode.core.metrics import Metric

__all__ = ["CONSTRAINT_RATES", "constraint_violation", "group_rates", "violation_metric"]

CONSTRAINT_RATES: dict[str, tuple[str, ...]] = {
    "demographic_parity": ("selection",),
    "equalized_odds": ("true_positive", "false_positive"),
    "true_positive_rate_parity": ("true_positive",),
    "false_positive_rate_parity": ("false_positive",),
    "error_rate_parity": ("error",),
}
"""The group rates each constraint equalises (label 1 coding)."""


def _check(constraint: str) -> None:
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint: expected one of {', '.join(CONSTRAINTS)}, got "
                         f"{describe(constraint)}")


def group_rates(y: ArrayLike, sensitive: ArrayLike, p: ArrayLike, *,
                constraint: str) -> np.ndarray:
    """``(rates, 2)``: each of the constraint's rates (:data:`CONSTRAINT_RATES`) of the expected
    decisions ``p`` in group 0 and group 1 of ``sensitive``; NaN where a group has no row of
    the rate's denominator."""
    _check(constraint)
    y_ = np.asarray(y, dtype=np.int64)
    g = np.asarray(sensitive, dtype=np.int64)
    p_ = np.asarray(p, dtype=np.float64)
    if not (y_.shape == g.shape == p_.shape) or y_.ndim != 1:
        raise ValueError(f"y, sensitive, p: expected three 1-d arrays of one length, got shapes "
                         f"{y_.shape}, {g.shape}, {p_.shape}")
    out = np.full((len(CONSTRAINT_RATES[constraint]), 2), np.nan)
    for r, rate in enumerate(CONSTRAINT_RATES[constraint]):
        value = np.abs(p_ - y_) if rate == "error" else p_
        rows = (np.ones_like(y_, dtype=bool) if rate in ("selection", "error")
                else y_ == (1 if rate == "true_positive" else 0))
        for group in (0, 1):
            mine = rows & (g == group)
            if mine.any():
                out[r, group] = float(value[mine].mean())
    return out


def constraint_violation(y: ArrayLike, sensitive: ArrayLike, p: ArrayLike, *,
                         constraint: str) -> float:
    """The violation of ``constraint`` by expected decisions ``p``: ``max |rate(1) − rate(0)|``
    over its rates (module docstring); NaN where a rate is undefined in a group."""
    rates = group_rates(y, sensitive, p, constraint=constraint)
    gaps = np.abs(rates[:, 1] - rates[:, 0])
    return float(gaps.max()) if np.isfinite(gaps).all() else float("nan")


def violation_metric(constraint: str, *, favourable: int) -> str:
    """The fairness metric (:class:`faircode.core.metrics.Metric`, oriented so that 1 is
    favourable) whose distance from parity is ``constraint``'s violation on the test rows.

    A true-positive rate in label-1 coding is one minus the favourable false-positive rate when
    label 0 is favourable, so the two rate-parity constraints swap metrics then.
    """
    _check(constraint)
    if favourable not in (0, 1) or isinstance(favourable, bool):
        raise ValueError(f"favourable: expected 0 or 1, got {describe(favourable)}")
    tpr, fpr = Metric.EQUAL_OPPORTUNITY.value, Metric.FPR_GAP.value
    return {
        "demographic_parity": Metric.DEMOGRAPHIC_PARITY.value,
        "equalized_odds": Metric.EQUALIZED_ODDS.value,
        "error_rate_parity": Metric.ACCURACY_EQUALITY.value,
        "true_positive_rate_parity": tpr if favourable == 1 else fpr,
        "false_positive_rate_parity": fpr if favourable == 1 else tpr,
    }[constraint]
