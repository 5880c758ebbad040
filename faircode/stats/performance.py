"""Performance metrics of one cell on the whole test set: accuracy, AUC and F1 with intervals.

Split from :mod:`faircode.stats.metrics` (which re-exports everything here) because performance is
one concept and group fairness another.  Accuracy and F1 take the multinomial count bootstrap
(whole units resampled when units repeat, :mod:`faircode.stats.clusters`); AUC takes DeLong's
closed-form variance, computed exactly from the table of distinct scores
(:func:`faircode.stats.score_table.auc_from_table`), so a streamed log gives the same bits.
Seeds: metric ``k`` (its index in ``accuracy, auc, f1``) uses ``child_seed(seed, k)`` for rows
or ``child_seed(seed, k, 1)`` for repeated units.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import _metric_defs as defs
from faircode.stats import clusters, resampling
from faircode.stats.score_table import auc_from_table, table_from_rows

__all__ = ["PERFORMANCE_METRICS", "PerformanceResult", "performance_from_counts",
           "performance_metrics"]

PERFORMANCE_METRICS: tuple[str, ...] = ("accuracy", "auc", "f1")


@dataclass(frozen=True, slots=True)
class PerformanceResult:
    """One performance metric on the whole test set with its confidence interval."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    note: str

    def __post_init__(self) -> None:
        if self.metric not in PERFORMANCE_METRICS:
            raise ValueError(
                f"PerformanceResult: metric: expected one of {', '.join(PERFORMANCE_METRICS)}, "
                f"got {describe(self.metric)}"
            )
        if isinstance(self.n, bool) or not isinstance(self.n, numbers.Integral) or self.n < 0:
            raise ValueError(f"PerformanceResult: n: expected a non-negative int, "
                             f"got {describe(self.n)}")


def performance_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    y_score: ArrayLike | None,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
) -> tuple[PerformanceResult, ...]:
    """Compute accuracy and F1 (multinomial bootstrap CI) and AUC (DeLong CI), in that order.

    AUC is NaN with note ``no_scores`` without scores and ``single_class`` when ``y_true`` has
    one class; its interval is ``AUC ± z·se`` clipped to [0, 1] (NaN with note
    ``too_few_for_variance`` when a class has one row).  F1 is NaN with note
    ``undefined_no_positives`` when neither ``y_true`` nor ``y_pred`` has a positive.  With
    repeated ``units`` accuracy and F1 resample whole units (cluster bootstrap); AUC keeps
    DeLong's row-level variance and says so in its note (``auc_rows_independent``).
    """
    y = checks.as_binary("y_true", y_true)
    yhat = checks.as_binary("y_pred", y_pred)
    checks.check_lengths(y_true=y, y_pred=yhat)
    counts = resampling.confusion_counts(y, yhat)
    n = int(y.size)
    inverse = clusters.repeated_units(units, n)
    types = None if inverse is None else clusters.unit_types(clusters.unit_counts(
        y, yhat, np.zeros(n, dtype=np.int64), inverse, n_groups=1))
    auc = None
    if y_score is not None:
        score = np.asarray(y_score, dtype=np.float64)
        if score.ndim != 1 or not np.all(np.isfinite(score)):
            raise ValueError(
                f"y_score: expected a 1-D array of finite floats, got {describe(y_score)}"
            )
        checks.check_lengths(y_true=y, y_score=score)
        auc = auc_from_table(table_from_rows(score, y, 2), np.array([0, 1]))
    return performance_from_counts(counts, types, auc, n_resamples=n_resamples,
                                   confidence=confidence, seed=seed)


def performance_from_counts(
    counts: ArrayLike,
    types: clusters.UnitTypes | None,
    auc: tuple[float, float] | None,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
) -> tuple[PerformanceResult, ...]:
    """:func:`performance_metrics` from the set's ``(TN, FP, FN, TP)`` counts, the units' types
    (None: rows independent) and DeLong's ``(AUC, variance)`` (None: no score;
    :func:`faircode.stats.score_table.auc_from_table`)."""
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_confidence(confidence)
    counts = np.asarray(counts, dtype=np.int64)
    accuracy = _bootstrapped(0, "accuracy", defs.accuracy, "insufficient_data", counts=counts,
                             types=types, n_resamples=n_resamples, confidence=confidence,
                             seed=seed)
    f1 = _bootstrapped(2, "f1", _f1, "undefined_no_positives", counts=counts, types=types,
                       n_resamples=n_resamples, confidence=confidence, seed=seed)
    return (accuracy, _auc(int(counts.sum()), auc, confidence=confidence,
                           clustered=types is not None), f1)


def _f1(c: defs.Counts) -> defs.Floats:
    """F1 = 2 TP / (2 TP + FP + FN) of counts over a leading resample axis."""
    return defs.ratio(2 * c[..., defs.TP], 2 * c[..., defs.TP] + c[..., defs.FP] + c[..., defs.FN])


def _bootstrapped(
    k: int, name: str, fn: Callable[[defs.Counts], defs.Floats], bad: str, *,
    counts: defs.Counts, types: clusters.UnitTypes | None, n_resamples: int, confidence: float,
    seed: int | np.random.SeedSequence,
) -> PerformanceResult:
    """Metric ``k``'s value and percentile bootstrap interval; NaN with note ``bad`` if undefined.

    Rows are resampled from ``child_seed(seed, k)``, or whole units (``types``) from
    ``child_seed(seed, k, 1)``.
    """
    n, nan = int(counts.sum()), float("nan")
    value = float(fn(counts))
    if np.isnan(value):
        return PerformanceResult(name, nan, nan, nan, n, "insufficient_data" if n == 0 else bad)
    if types is None:
        rng = np.random.default_rng(child_seed(seed, k))
        draws = fn(resampling.bootstrap_counts(counts, n_resamples=n_resamples, rng=rng))
    else:  # repeated units: resample whole units
        rng = np.random.default_rng(child_seed(seed, k, 1))
        boot = clusters.cluster_bootstrap_counts(types, n_resamples=n_resamples, rng=rng)
        draws = fn(boot[:, 0])
    low, high = resampling.percentile_interval(draws, confidence=confidence)
    return PerformanceResult(name, value, low, high, n, "")


def _auc(n: int, auc: tuple[float, float] | None, *, confidence: float,
         clustered: bool) -> PerformanceResult:
    """AUC with DeLong's interval clipped to [0, 1] (notes in :func:`performance_metrics`)."""
    nan = float("nan")
    if auc is None:
        return PerformanceResult("auc", nan, nan, nan, n, "no_scores")
    value, variance = auc
    if np.isnan(value):
        return PerformanceResult("auc", nan, nan, nan, n, "single_class")
    if np.isnan(variance):
        return PerformanceResult("auc", value, nan, nan, n, "too_few_for_variance")
    half = resampling.z_quantile(confidence) * float(np.sqrt(variance))
    return PerformanceResult(
        "auc", value, max(0.0, value - half), min(1.0, value + half), n,
        "auc_rows_independent" if clustered else "",
    )
