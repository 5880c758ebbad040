"""Operating-point numbers of a cell's decisions, and whether the decisions say anything.

A cell is **degenerate** (:func:`is_degenerate`) when its decisions cannot show a gap: its
selection rate is below ``min_selection_rate`` or above ``max_selection_rate``, or its balanced
accuracy lies within ``balanced_accuracy_margin`` of 0.5 (inclusive), or is undefined.
:func:`operating_point_metrics` gives the numbers the rule reads (selection rate overall and per
group, balanced accuracy, the majority baseline), with bootstrap CIs from the count-level engine
of :mod:`faircode.stats.resampling`.  How a score becomes a decision is
:mod:`faircode.audit.decision`.

A cell that could not be fitted at all (a group too small for a stratified split) has no
decisions; :func:`undefined_metrics` gives its fairness rows -- every metric undefined, the
groups' sizes kept -- marked :data:`UNFITTABLE_NOTE`, uninformative like a degenerate cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.seeds import child_seed
from faircode.stats import resampling
from faircode.stats._metric_defs import SPECS
from faircode.stats.metrics import FAIRNESS_METRICS, SMALL_SAMPLE, MetricResult

__all__ = [
    "DEGENERATE_NOTE",
    "OPERATING_POINT_METRICS",
    "UNFITTABLE_NOTE",
    "OperatingPoint",
    "is_degenerate",
    "operating_from_counts",
    "operating_point_metrics",
    "undefined_metrics",
]

_TN, _FP, _FN, _TP = 0, 1, 2, 3


DEGENERATE_NOTE = "degenerate_decisions"
"""Note carried by every fairness row of a degenerate cell (beside any other note)."""
UNFITTABLE_NOTE = "unfittable"
"""Note carried by every fairness row of a cell that could not be fitted (no decisions)."""


OPERATING_POINT_METRICS: tuple[str, ...] = (
    "selection_rate",
    "balanced_accuracy",
    "majority_baseline_accuracy",
)
"""Whole-test-set metrics of :func:`operating_point_metrics`, in order, each with a CI."""


@dataclass(frozen=True, slots=True)
class OperatingPoint:
    """One operating-point number of a cell: value, bootstrap CI (NaN if none), rows, group."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    protected_attribute: str = ""
    note: str = ""


def is_degenerate(
    *,
    selection_rate: float,
    balanced_accuracy: float | None,
    min_selection_rate: float,
    max_selection_rate: float,
    balanced_accuracy_margin: float,
) -> bool:
    """Whether a cell's decisions are uninformative (see the module docstring for the rule).

    ``balanced_accuracy`` None: decisions with no ground truth to score them against (people's
    decisions that are the recorded outcome), judged on the selection rate alone.
    """
    if math.isnan(selection_rate) or (balanced_accuracy is not None
                                      and math.isnan(balanced_accuracy)):
        return True
    return (selection_rate < min_selection_rate or selection_rate > max_selection_rate
            or (balanced_accuracy is not None
                and abs(balanced_accuracy - 0.5) <= balanced_accuracy_margin))


def _selection(c: NDArray[np.int64]) -> NDArray[np.float64]:
    return _ratio(c[..., _FP] + c[..., _TP], c.sum(axis=-1))


def _balanced(c: NDArray[np.int64]) -> NDArray[np.float64]:
    tpr = _ratio(c[..., _TP], c[..., _TP] + c[..., _FN])
    tnr = _ratio(c[..., _TN], c[..., _TN] + c[..., _FP])
    return (tpr + tnr) / 2.0


def _majority(c: NDArray[np.int64]) -> NDArray[np.float64]:
    positives = _ratio(c[..., _FN] + c[..., _TP], c.sum(axis=-1))
    return np.maximum(positives, 1.0 - positives)


def _ratio(num: ArrayLike, den: ArrayLike) -> NDArray[np.float64]:
    num_f, den_f = np.asarray(num, np.float64), np.asarray(den, np.float64)
    out = np.full(np.broadcast(num_f, den_f).shape, np.nan)
    np.divide(num_f, den_f, out=out, where=den_f > 0)
    return out


def operating_point_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    groups: Mapping[str, ArrayLike],
    *,
    n_resamples: int,
    confidence: float,
    seed: int | np.random.SeedSequence,
) -> tuple[OperatingPoint, ...]:
    """Selection rate, balanced accuracy and majority-class baseline accuracy of one cell.

    The three whole-test-set metrics (:data:`OPERATING_POINT_METRICS`) get percentile CIs from
    one multinomial bootstrap of the 2x2 counts (``child_seed(seed, 0)``).  The baseline is the
    accuracy of always deciding the test set's majority class.  Then, for each entry of
    ``groups`` (attribute name -> 0/1 disadvantaged mask), ``selection_rate_disadvantaged`` and
    ``selection_rate_advantaged`` as plain values (no CI).
    """
    y = checks.as_binary("y_true", y_true)
    yhat = checks.as_binary("y_pred", y_pred)
    checks.check_lengths(y_true=y, y_pred=yhat)
    sizes: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    for attribute, mask in groups.items():
        dis = checks.as_mask(attribute, mask)
        checks.check_lengths(y_pred=yhat, disadvantaged=dis)
        d, a = int(dis.sum()), int((~dis).sum())
        sizes[attribute] = ((d, int(yhat[dis].sum())), (a, int(yhat[~dis].sum())))
    return operating_from_counts(resampling.confusion_counts(y, yhat), sizes,
                                 n_resamples=n_resamples, confidence=confidence, seed=seed)


def operating_from_counts(
    counts: ArrayLike,
    groups: Mapping[str, tuple[tuple[int, int], tuple[int, int]]],
    *,
    n_resamples: int,
    confidence: float,
    seed: int | np.random.SeedSequence,
) -> tuple[OperatingPoint, ...]:
    """:func:`operating_point_metrics` from the set's ``(TN, FP, FN, TP)`` counts (label coding)
    and per attribute ``((rows, decided 1), (rows, decided 1))`` of its disadvantaged and
    advantaged groups."""
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_confidence(confidence)
    counts = np.asarray(counts, dtype=np.int64)
    n, nan = int(counts.sum()), float("nan")
    rng = np.random.default_rng(child_seed(seed, 0))
    draws = resampling.bootstrap_counts(counts, n_resamples=n_resamples, rng=rng) if n else None
    out: list[OperatingPoint] = []
    for name, fn in zip(OPERATING_POINT_METRICS, (_selection, _balanced, _majority), strict=True):
        value = float(fn(counts))
        if np.isnan(value) or draws is None:
            out.append(OperatingPoint(name, value, nan, nan, n, note="insufficient_data"))
            continue
        low, high = resampling.percentile_interval(fn(draws), confidence=confidence)
        out.append(OperatingPoint(name, value, low, high, n))
    for attribute, sides in groups.items():
        for side, (size, decided) in zip(("disadvantaged", "advantaged"), sides, strict=True):
            rate = decided / size if size else nan
            out.append(OperatingPoint(f"selection_rate_{side}", rate, nan, nan, size,
                                      protected_attribute=attribute,
                                      note="" if size else "insufficient_data"))
    return tuple(out)



def undefined_metrics(n_disadvantaged: int, n_advantaged: int) -> tuple[MetricResult, ...]:
    """Every fairness metric of a cell without decisions: NaN value, interval and p-value, the
    groups' test sizes kept, note :data:`UNFITTABLE_NOTE` (in ``FAIRNESS_METRICS`` order)."""
    nan = float("nan")
    small = min(n_disadvantaged, n_advantaged) < SMALL_SAMPLE
    return tuple(MetricResult(metric, nan, nan, nan, SPECS[metric].interval.value, nan,
                              n_disadvantaged, n_advantaged, small, UNFITTABLE_NOTE, nan)
                 for metric in FAIRNESS_METRICS)
