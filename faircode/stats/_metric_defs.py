"""Definitions of the group-fairness metrics as vectorised functions of confusion counts.

This private module is the *what* of :mod:`faircode.stats.metrics` (which holds the *how*:
intervals,
resampling drivers, result records).  Every metric is a function of the two groups' confusion
counts, arrays of shape ``(..., 4)`` in the cell order ``(TN, FP, FN, TP)`` of
:mod:`faircode.stats.resampling`, so one function gives the point estimate, every bootstrap
resample and
every permutation statistic, whatever feeds the counts (a row bootstrap today, a cluster
bootstrap tomorrow).

Design decisions
----------------
* **One orientation.**  Counts are built from labels already relabelled by :func:`orient`:
  ``1`` means the manifest's *favourable* outcome (AIF360's ``favorable_label``), whatever its
  raw code.  "Positive rate" is the favourable-decision rate, TPR the favourable-decision rate
  among rows whose true outcome is favourable, FPR among rows whose true outcome is
  unfavourable, precision the share of favourable decisions whose true outcome is favourable.
  Every difference is disadvantaged minus advantaged and disparate impact the ratio of the
  favourable-decision rates, so a negative difference (a ratio below 1) means the disadvantaged
  group is worse off.
* **Equalized odds** is ``max(|TPR gap|, |FPR gap|)`` (fairlearn's definition), a magnitude with
  no sign; the signed gaps are the separate metrics ``tpr_gap`` and ``fpr_gap``.  Its interval is
  on that same statistic: each gap's Newcombe interval ``[l, u]`` is mapped to an interval of
  ``|gap|`` (``[0, max(|l|, |u|)]`` if it contains 0, else ``[min(|l|, |u|), max(|l|, |u|)]``)
  and the two are combined by ``max`` endpoint-wise; it contains the truth whenever both gap
  intervals do.  A percentile bootstrap of the maximum covered only 0.83–0.88 on groups of
  25–40 rows (``bench/coverage.py``), since the maximum of absolute values is biased upwards.
* **One null, one test.**  Disparate impact tests the same null on the same stratum as
  demographic parity, and ``tpr_gap`` the same as equal opportunity (it *is* equal opportunity;
  it is repeated so the two signed components of equalized odds sit side by side).  Such a
  metric reports its twin's permutation p-value (:data:`SAME_NULL`) and enters the audit's
  Benjamini–Hochberg family once, through the twin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.cells import FAIRNESS_METRICS
from faircode.core.errors import describe
from faircode.stats import resampling

TN, FP, FN, TP = 0, 1, 2, 3
ALL = (TN, FP, FN, TP)
Y1, Y0, YHAT1 = (FN, TP), (TN, FP), (FP, TP)
Counts = NDArray[np.int64]
Floats = NDArray[np.float64]


SAME_NULL: dict[str, str] = {
    "disparate_impact_ratio": "demographic_parity_diff",
    "tpr_gap": "equal_opportunity_diff",
}
"""A metric whose null hypothesis is another's reports that one's p-value (and q-value)."""


class Interval(StrEnum):
    """How a fairness metric's confidence interval is computed (column ``ci_method``)."""

    NEWCOMBE = "newcombe_hybrid_score"
    KATZ = "katz_log"
    NEWCOMBE_MAX = "newcombe_max_abs"


def orient(
    y_true: ArrayLike, y_pred: ArrayLike, *, favourable: int
) -> tuple[NDArray[np.int8], NDArray[np.int8]]:
    """Relabel validated 0/1 labels and decisions so that ``1`` is the favourable outcome.

    Call it once, before any group metric: with ``favourable = 0`` both arrays are flipped.
    """
    if isinstance(favourable, bool) or favourable not in (0, 1):
        raise ValueError(f"favourable: expected 0 or 1, got {describe(favourable)}")
    y = checks.as_binary("y_true", y_true)
    yhat = checks.as_binary("y_pred", y_pred)
    if favourable == 1:
        return y, yhat
    return (1 - y).astype(np.int8), (1 - yhat).astype(np.int8)


def ratio(num: ArrayLike, den: ArrayLike) -> Floats:
    """Divide elementwise, NaN where the denominator is 0."""
    num_f = np.asarray(num, dtype=np.float64)
    den_f = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num_f, den_f).shape, np.nan)
    np.divide(num_f, den_f, out=out, where=den_f > 0)
    return out


def positive_rate(c: Counts) -> Floats:
    return ratio(c[..., FP] + c[..., TP], c.sum(axis=-1))


def tpr(c: Counts) -> Floats:
    return ratio(c[..., TP], c[..., TP] + c[..., FN])


def fpr(c: Counts) -> Floats:
    return ratio(c[..., FP], c[..., FP] + c[..., TN])


def precision(c: Counts) -> Floats:
    return ratio(c[..., TP], c[..., TP] + c[..., FP])


def accuracy(c: Counts) -> Floats:
    return ratio(c[..., TN] + c[..., TP], c.sum(axis=-1))


def dp(d: Counts, a: Counts) -> Floats:
    return positive_rate(d) - positive_rate(a)


def _di(d: Counts, a: Counts) -> Floats:
    rate_a = positive_rate(a)
    return ratio(positive_rate(d), np.where(rate_a > 0, rate_a, 0.0))


def _tpr_gap(d: Counts, a: Counts) -> Floats:
    return tpr(d) - tpr(a)


def _fpr_gap(d: Counts, a: Counts) -> Floats:
    return fpr(d) - fpr(a)


def _eodds(d: Counts, a: Counts) -> Floats:
    return np.maximum(np.abs(_tpr_gap(d, a)), np.abs(_fpr_gap(d, a)))  # NaN if either is NaN


def _pp(d: Counts, a: Counts) -> Floats:
    return precision(d) - precision(a)


def _acc(d: Counts, a: Counts) -> Floats:
    return accuracy(d) - accuracy(a)


def _absolute(fn: Callable[[Counts, Counts], Floats]) -> Callable[[Counts, Counts], Floats]:
    return lambda d, a: np.abs(fn(d, a))


@dataclass(frozen=True, slots=True)
class Spec:
    """How one fairness metric is computed, subset, permuted and given an interval.

    ``value`` maps counts to the metric, ``statistic`` to the permutation statistic ``|T|``,
    ``subsets`` are the row sets (cell tuples) its group rates are defined on (the permutation
    strata), ``success`` the cells counted as a success in the (first) subset.
    """

    value: Callable[[Counts, Counts], Floats]
    statistic: Callable[[Counts, Counts], Floats]
    subsets: tuple[tuple[int, ...], ...]
    interval: Interval
    success: tuple[int, ...]


SPECS: dict[str, Spec] = {
    "demographic_parity_diff": Spec(dp, _absolute(dp), (ALL,), Interval.NEWCOMBE, YHAT1),
    "disparate_impact_ratio": Spec(_di, _absolute(dp), (ALL,), Interval.KATZ, YHAT1),
    "equal_opportunity_diff": Spec(
        _tpr_gap, _absolute(_tpr_gap), (Y1,), Interval.NEWCOMBE, (TP,)
    ),
    "equalized_odds_diff": Spec(_eodds, _eodds, (Y1, Y0), Interval.NEWCOMBE_MAX, (TP,)),
    "predictive_parity_diff": Spec(_pp, _absolute(_pp), (YHAT1,), Interval.NEWCOMBE, (TP,)),
    "accuracy_equality_diff": Spec(_acc, _absolute(_acc), (ALL,), Interval.NEWCOMBE, (TN, TP)),
    "tpr_gap": Spec(_tpr_gap, _absolute(_tpr_gap), (Y1,), Interval.NEWCOMBE, (TP,)),
    "fpr_gap": Spec(_fpr_gap, _absolute(_fpr_gap), (Y0,), Interval.NEWCOMBE, (FP,)),
}


def spec(metric: str) -> Spec:
    """Return the :class:`Spec` of ``metric`` or raise a ValueError naming the valid ones."""
    if metric not in SPECS:
        raise ValueError(
            f"metric: expected one of {', '.join(FAIRNESS_METRICS)}, got {describe(metric)}"
        )
    return SPECS[metric]


def metric_values(metric: str, counts_d: ArrayLike, counts_a: ArrayLike) -> Floats:
    """Evaluate fairness ``metric`` on confusion counts of shape ``(..., 4)`` (NaN if undefined)."""
    return spec(metric).value(np.asarray(counts_d, np.int64), np.asarray(counts_a, np.int64))


def closed_form_interval(
    metric: str, counts_d: ArrayLike, counts_a: ArrayLike, *, confidence: float
) -> tuple[Floats, Floats]:
    """Return the interval of ``metric`` (its :class:`Interval`), vectorised over leading axes."""
    s = spec(metric)
    # float counts: the clustered path passes effective (design-effect-deflated) counts; integer
    # counts give the same sums as before, so the row-level intervals are unchanged bit for bit
    d, a = np.asarray(counts_d, np.float64), np.asarray(counts_a, np.float64)
    if s.interval is Interval.NEWCOMBE_MAX:
        low_t, high_t = _abs_interval(*closed_form_interval("tpr_gap", d, a, confidence=confidence))
        low_f, high_f = _abs_interval(*closed_form_interval("fpr_gap", d, a, confidence=confidence))
        return np.maximum(low_t, low_f), np.maximum(high_t, high_f)  # NaN if either is NaN
    subset = list(s.subsets[0])
    x_d, n_d = d[..., list(s.success)].sum(-1), d[..., subset].sum(-1)
    x_a, n_a = a[..., list(s.success)].sum(-1), a[..., subset].sum(-1)
    if s.interval is Interval.KATZ:
        return resampling.katz_ratio_interval(x_d, n_d, x_a, n_a, confidence=confidence)
    return resampling.newcombe_interval(x_d, n_d, x_a, n_a, confidence=confidence)


def _abs_interval(low: Floats, high: Floats) -> tuple[Floats, Floats]:
    """Map an interval of ``g`` to the interval of ``|g|`` it implies."""
    straddles = (low <= 0.0) & (high >= 0.0)
    lower = np.where(straddles, 0.0, np.minimum(np.abs(low), np.abs(high)))
    return np.where(np.isnan(low), np.nan, lower), np.maximum(np.abs(low), np.abs(high))
