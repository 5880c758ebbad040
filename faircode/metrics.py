"""Group-fairness and performance metrics with bootstrap CIs and permutation p-values.

Every fairness metric is "disadvantaged minus advantaged" (ratio for disparate impact) and is
written once, as a vectorised function of the two groups' confusion counts — arrays of shape
``(..., 4)`` in the cell order ``(TN, FP, FN, TP)`` of :mod:`faircode.stats`, with a leading
resample axis.  The same function gives the point estimate, every bootstrap resample and every
permutation statistic, so composite metrics (equalized odds' larger gap, the ratio) are
re-selected inside each resample.

Design decisions
----------------
* A metric's *subsets* are the row sets its group rates are defined on (all rows; ``y = 1``;
  ``ŷ = 1``; ``y = 1`` and ``y = 0`` for equalized odds).  A group with an empty subset gives
  value NaN, no CI, no p-value and note ``insufficient_data``; ``small_sample_warning`` is set
  when either group has fewer than 30 rows in any of the metric's subsets;
  ``n_disadvantaged``/``n_advantaged`` count the rows of the union of the subsets.
* Permutations shuffle group labels within each subset (the strata) and use the statistic
  ``|value|`` — for equalized odds ``max(|TPR gap|, |FPR gap|)``, each from its own stratum —
  except disparate impact, which uses ``|log ratio|``.
* Disparate impact is NaN with note ``undefined_advantaged_rate_zero`` when the advantaged
  positive rate is 0; no epsilon is added.  Resamples where the ratio is undefined are dropped
  from the percentile interval (see :func:`faircode.stats.percentile_interval`).
* Equalized odds takes the TPR gap on an exact tie of absolute values; its note names the gap
  chosen (``tpr_gap`` or ``fpr_gap``).
* Seeds: fairness metric ``k`` (its index in :data:`FAIRNESS_METRICS`) uses
  ``child_seed(seed, k)``, whose children ``0`` and ``1`` drive the bootstrap and the permutation
  test, so changing ``n_resamples`` never changes a p-value.  Performance metric ``k`` uses
  ``child_seed(seed, k)``; the intersectional gap uses ``child_seed(seed, 0)``/``(seed, 1)``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode import stats
from faircode.errors import describe

__all__ = [
    "FAIRNESS_METRICS",
    "PERFORMANCE_METRICS",
    "SMALL_SAMPLE",
    "IntersectionalResult",
    "MetricResult",
    "PerformanceResult",
    "bootstrap_distribution",
    "fairness_metrics",
    "intersectional_gap",
    "metric_values",
    "performance_metrics",
    "permutation_distribution",
]

FAIRNESS_METRICS: tuple[str, ...] = (
    "demographic_parity_diff",
    "disparate_impact_ratio",
    "equal_opportunity_diff",
    "equalized_odds_diff",
    "predictive_parity_diff",
    "accuracy_equality_diff",
)
PERFORMANCE_METRICS: tuple[str, ...] = ("accuracy", "auc", "f1")
SMALL_SAMPLE: int = 30
"""A group with fewer rows than this in a metric's subset raises ``small_sample_warning``."""

_TN, _FP, _FN, _TP = 0, 1, 2, 3
_DI_UNDEFINED = "undefined_advantaged_rate_zero"
_ALL = (_TN, _FP, _FN, _TP)
_Counts = NDArray[np.int64]
_Floats = NDArray[np.float64]


def _ratio(num: ArrayLike, den: ArrayLike) -> _Floats:
    """Divide elementwise, NaN where the denominator is 0."""
    num_f = np.asarray(num, dtype=np.float64)
    den_f = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num_f, den_f).shape, np.nan)
    np.divide(num_f, den_f, out=out, where=den_f > 0)
    return out


def _positive_rate(c: _Counts) -> _Floats:
    return _ratio(c[..., _FP] + c[..., _TP], c.sum(axis=-1))


def _tpr(c: _Counts) -> _Floats:
    return _ratio(c[..., _TP], c[..., _TP] + c[..., _FN])


def _fpr(c: _Counts) -> _Floats:
    return _ratio(c[..., _FP], c[..., _FP] + c[..., _TN])


def _precision(c: _Counts) -> _Floats:
    return _ratio(c[..., _TP], c[..., _TP] + c[..., _FP])


def _accuracy(c: _Counts) -> _Floats:
    return _ratio(c[..., _TN] + c[..., _TP], c.sum(axis=-1))


def _dp(d: _Counts, a: _Counts) -> _Floats:
    return _positive_rate(d) - _positive_rate(a)


def _di(d: _Counts, a: _Counts) -> _Floats:
    rate_a = _positive_rate(a)
    return _ratio(_positive_rate(d), np.where(rate_a > 0, rate_a, 0.0))


def _abs_log_di(d: _Counts, a: _Counts) -> _Floats:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(np.log(_positive_rate(d)) - np.log(_positive_rate(a)))


def _eo(d: _Counts, a: _Counts) -> _Floats:
    return _tpr(d) - _tpr(a)


def _eodds_gaps(d: _Counts, a: _Counts) -> tuple[_Floats, _Floats]:
    return _tpr(d) - _tpr(a), _fpr(d) - _fpr(a)


def _eodds(d: _Counts, a: _Counts) -> _Floats:
    tgap, fgap = _eodds_gaps(d, a)
    chosen = np.where(np.abs(fgap) > np.abs(tgap), fgap, tgap)
    return np.where(np.isnan(tgap) | np.isnan(fgap), np.nan, chosen)


def _pp(d: _Counts, a: _Counts) -> _Floats:
    return _precision(d) - _precision(a)


def _acc(d: _Counts, a: _Counts) -> _Floats:
    return _accuracy(d) - _accuracy(a)


def _absolute(fn: Callable[[_Counts, _Counts], _Floats]) -> Callable[[_Counts, _Counts], _Floats]:
    return lambda d, a: np.abs(fn(d, a))


@dataclass(frozen=True, slots=True)
class _Spec:
    """How one fairness metric is computed, subset and permuted."""

    value: Callable[[_Counts, _Counts], _Floats]
    statistic: Callable[[_Counts, _Counts], _Floats]
    subsets: tuple[tuple[int, ...], ...]


_SPECS: dict[str, _Spec] = {
    "demographic_parity_diff": _Spec(_dp, _absolute(_dp), (_ALL,)),
    "disparate_impact_ratio": _Spec(_di, _abs_log_di, (_ALL,)),
    "equal_opportunity_diff": _Spec(_eo, _absolute(_eo), ((_FN, _TP),)),
    "equalized_odds_diff": _Spec(_eodds, _absolute(_eodds), ((_FN, _TP), (_TN, _FP))),
    "predictive_parity_diff": _Spec(_pp, _absolute(_pp), ((_FP, _TP),)),
    "accuracy_equality_diff": _Spec(_acc, _absolute(_acc), (_ALL,)),
}


def metric_values(metric: str, counts_d: ArrayLike, counts_a: ArrayLike) -> _Floats:
    """Evaluate fairness ``metric`` on confusion counts of shape ``(..., 4)`` (NaN if undefined)."""
    spec = _spec(metric)
    return spec.value(np.asarray(counts_d, np.int64), np.asarray(counts_a, np.int64))


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One fairness metric for one attribute: value, percentile CI and permutation p-value."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    p_value: float
    n_disadvantaged: int
    n_advantaged: int
    small_sample_warning: bool
    note: str

    def __post_init__(self) -> None:
        _spec(self.metric)
        _check_counts(
            "MetricResult", n_disadvantaged=self.n_disadvantaged, n_advantaged=self.n_advantaged
        )
        if np.isnan(self.value) and not np.isnan(self.p_value):
            raise ValueError(f"MetricResult({self.metric}): p_value must be NaN when value is NaN")
        if not np.isnan(self.p_value) and not 0.0 < self.p_value <= 1.0:
            raise ValueError(
                f"MetricResult: p_value: expected (0, 1], got {describe(self.p_value)}"
            )


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
        _check_counts("PerformanceResult", n=self.n)


@dataclass(frozen=True, slots=True)
class IntersectionalResult:
    """Demographic-parity gap of the doubly-disadvantaged vs the doubly-advantaged cell."""

    gap: float
    ci_low: float
    ci_high: float
    p_value: float
    gap_a: float
    gap_b: float
    n_dd: int
    n_da: int
    n_ad: int
    n_aa: int
    rate_dd: float
    rate_da: float
    rate_ad: float
    rate_aa: float
    superadditive: bool
    note: str

    def __post_init__(self) -> None:
        _check_counts(
            "IntersectionalResult", n_dd=self.n_dd, n_da=self.n_da, n_ad=self.n_ad, n_aa=self.n_aa
        )
        if np.isnan(self.gap) and not np.isnan(self.p_value):
            raise ValueError("IntersectionalResult: p_value must be NaN when gap is NaN")


def fairness_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
) -> tuple[MetricResult, ...]:
    """Compute every fairness metric with CI and p-value, in :data:`FAIRNESS_METRICS` order."""
    counts_d, counts_a = _group_counts(y_true, y_pred, disadvantaged)
    stats.check_positive_int("n_resamples", n_resamples)
    stats.check_positive_int("n_permutations", n_permutations)
    stats.check_confidence(confidence)
    results = []
    for k, metric in enumerate(FAIRNESS_METRICS):
        spec = _SPECS[metric]
        sizes_d = [int(counts_d[list(s)].sum()) for s in spec.subsets]
        sizes_a = [int(counts_a[list(s)].sum()) for s in spec.subsets]
        union = sorted({cell for subset in spec.subsets for cell in subset})
        n_d, n_a = int(counts_d[union].sum()), int(counts_a[union].sum())
        small = min(sizes_d + sizes_a) < SMALL_SAMPLE
        value = float(spec.value(counts_d, counts_a))
        if min(sizes_d + sizes_a) == 0 or np.isnan(value):
            # an empty subset, or else disparate impact with a zero advantaged rate
            why = "insufficient_data" if min(sizes_d + sizes_a) == 0 else _DI_UNDEFINED
            nan = float("nan")
            results.append(MetricResult(metric, nan, nan, nan, nan, n_d, n_a, small, why))
            continue
        stream = stats.child_seed(seed, k)
        boot = _bootstrap_values(spec, counts_d, counts_a, n_resamples, stream)
        low, high = stats.percentile_interval(boot, confidence=confidence)
        permuted = _permutation_stats(spec, counts_d, counts_a, n_permutations, stream)
        p_value = stats.permutation_p_value(float(spec.statistic(counts_d, counts_a)), permuted)
        note = ""
        if metric == "equalized_odds_diff":
            tgap, _ = _eodds_gaps(counts_d, counts_a)
            note = "tpr_gap" if value == float(tgap) else "fpr_gap"
        results.append(MetricResult(metric, value, low, high, p_value, n_d, n_a, small, note))
    return tuple(results)


def bootstrap_distribution(
    metric: str,
    y_true: ArrayLike,
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    n_resamples: int = 2000,
    seed: int | np.random.SeedSequence,
) -> _Floats:
    """Return the bootstrap resamples of ``metric`` that :func:`fairness_metrics` draws."""
    counts_d, counts_a = _group_counts(y_true, y_pred, disadvantaged)
    spec = _spec(metric)
    stream = stats.child_seed(seed, FAIRNESS_METRICS.index(metric))
    return _bootstrap_values(spec, counts_d, counts_a, n_resamples, stream)


def permutation_distribution(
    metric: str,
    y_true: ArrayLike,
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    n_permutations: int = 2000,
    seed: int | np.random.SeedSequence,
) -> tuple[float, _Floats]:
    """Return the observed statistic and the permuted ones that :func:`fairness_metrics` draws."""
    counts_d, counts_a = _group_counts(y_true, y_pred, disadvantaged)
    spec = _spec(metric)
    stream = stats.child_seed(seed, FAIRNESS_METRICS.index(metric))
    observed = float(spec.statistic(counts_d, counts_a))
    return observed, _permutation_stats(spec, counts_d, counts_a, n_permutations, stream)


def performance_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    y_score: ArrayLike | None,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
) -> tuple[PerformanceResult, ...]:
    """Compute accuracy and F1 (multinomial bootstrap CI) and AUC (DeLong CI), in that order.

    AUC is NaN with note ``no_scores`` without scores and ``single_class`` when ``y_true`` has
    one class; its interval is ``AUC ± z·se`` clipped to [0, 1] (NaN with note
    ``too_few_for_variance`` when a class has one row).  F1 is NaN with note
    ``undefined_no_positives`` when neither ``y_true`` nor ``y_pred`` has a positive.
    """
    y = stats.as_binary("y_true", y_true)
    yhat = stats.as_binary("y_pred", y_pred)
    stats.check_lengths(y_true=y, y_pred=yhat)
    stats.check_positive_int("n_resamples", n_resamples)
    stats.check_confidence(confidence)
    counts = stats.confusion_counts(y, yhat)
    n, nan = int(y.size), float("nan")

    def bootstrapped(
        k: int, name: str, fn: Callable[[_Counts], _Floats], bad: str
    ) -> PerformanceResult:
        value = float(fn(counts))
        if np.isnan(value):
            return PerformanceResult(name, nan, nan, nan, n, "insufficient_data" if n == 0 else bad)
        rng = np.random.default_rng(stats.child_seed(seed, k))
        draws = fn(stats.bootstrap_counts(counts, n_resamples=n_resamples, rng=rng))
        low, high = stats.percentile_interval(draws, confidence=confidence)
        return PerformanceResult(name, value, low, high, n, "")

    accuracy = bootstrapped(0, "accuracy", _accuracy, "insufficient_data")
    f1 = bootstrapped(
        2,
        "f1",
        lambda c: _ratio(2 * c[..., _TP], 2 * c[..., _TP] + c[..., _FP] + c[..., _FN]),
        "undefined_no_positives",
    )
    if y_score is None:
        auc = PerformanceResult("auc", nan, nan, nan, n, "no_scores")
    else:
        score = np.asarray(y_score, dtype=np.float64)
        if score.ndim != 1 or not np.all(np.isfinite(score)):
            raise ValueError(
                f"y_score: expected a 1-D array of finite floats, got {describe(y_score)}"
            )
        stats.check_lengths(y_true=y, y_score=score)
        value, variance = stats.delong_auc(y, score)
        if np.isnan(value):
            auc = PerformanceResult("auc", nan, nan, nan, n, "single_class")
        elif np.isnan(variance):
            auc = PerformanceResult("auc", value, nan, nan, n, "too_few_for_variance")
        else:
            half = float(sps.norm.ppf(0.5 + confidence / 2.0)) * float(np.sqrt(variance))
            auc = PerformanceResult(
                "auc", value, max(0.0, value - half), min(1.0, value + half), n, ""
            )
    return (accuracy, auc, f1)


def intersectional_gap(
    y_pred: ArrayLike,
    disadvantaged_a: ArrayLike,
    disadvantaged_b: ArrayLike,
    *,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
) -> IntersectionalResult:
    """Compare the doubly-disadvantaged cell's positive rate with the doubly-advantaged one's.

    ``gap = rate_dd − rate_aa`` with a bootstrap CI (each cell resampled at its own size) and a
    permutation p-value (cell labels shuffled among the DD and AA rows); ``gap_a``/``gap_b`` are
    each attribute's demographic-parity gap over all rows.  ``superadditive`` is
    ``|gap| > |gap_a| + |gap_b|``.  If any of the four cells is empty the gap, CI and p-value are
    NaN with note ``empty_intersectional_cell`` (the marginal gaps and non-empty rates remain).
    """
    yhat = stats.as_binary("y_pred", y_pred)
    mask_a = stats.as_mask("disadvantaged_a", disadvantaged_a)
    mask_b = stats.as_mask("disadvantaged_b", disadvantaged_b)
    stats.check_lengths(y_pred=yhat, disadvantaged_a=mask_a, disadvantaged_b=mask_b)
    stats.check_positive_int("n_resamples", n_resamples)
    stats.check_positive_int("n_permutations", n_permutations)
    stats.check_confidence(confidence)

    def cell(mask: NDArray[np.bool_]) -> _Counts:  # ŷ counts as (TN, FP) cells of y = 0 rows
        positives = int(yhat[mask].sum())
        return np.array([int(mask.sum()) - positives, positives, 0, 0], dtype=np.int64)

    dd, da = cell(mask_a & mask_b), cell(mask_a & ~mask_b)
    ad, aa = cell(~mask_a & mask_b), cell(~mask_a & ~mask_b)
    gap_a = float(_dp(dd + da, ad + aa))
    gap_b = float(_dp(dd + ad, da + aa))
    groups = {"dd": dd, "da": da, "ad": ad, "aa": aa}
    cells: dict[str, Any] = {f"n_{k}": int(c.sum()) for k, c in groups.items()}
    cells |= {f"rate_{k}": float(_positive_rate(c)) for k, c in groups.items()}
    nan = float("nan")
    if min(int(c.sum()) for c in groups.values()) == 0:
        return IntersectionalResult(
            nan,
            nan,
            nan,
            nan,
            gap_a,
            gap_b,
            **cells,
            superadditive=False,
            note="empty_intersectional_cell",
        )
    gap = float(_dp(dd, aa))
    spec = _SPECS["demographic_parity_diff"]
    boot = _bootstrap_values(spec, dd, aa, n_resamples, seed)
    low, high = stats.percentile_interval(boot, confidence=confidence)
    permuted = _permutation_stats(spec, dd, aa, n_permutations, seed)
    p_value = stats.permutation_p_value(abs(gap), permuted)
    superadditive = bool(abs(gap) > abs(gap_a) + abs(gap_b))
    return IntersectionalResult(
        gap, low, high, p_value, gap_a, gap_b, **cells, superadditive=superadditive, note=""
    )


def _bootstrap_values(
    spec: _Spec,
    counts_d: _Counts,
    counts_a: _Counts,
    n_resamples: int,
    stream: int | np.random.SeedSequence,
) -> _Floats:
    """Bootstrap both groups independently from ``child_seed(stream, 0)``; metric per resample."""
    rng = np.random.default_rng(stats.child_seed(stream, 0))
    boot_d = stats.bootstrap_counts(counts_d, n_resamples=n_resamples, rng=rng)
    boot_a = stats.bootstrap_counts(counts_a, n_resamples=n_resamples, rng=rng)
    return spec.value(boot_d, boot_a)


def _permutation_stats(
    spec: _Spec,
    counts_d: _Counts,
    counts_a: _Counts,
    n_permutations: int,
    stream: int | np.random.SeedSequence,
) -> _Floats:
    """Permute group labels within each stratum from ``child_seed(stream, 1)``; statistic each."""
    rng = np.random.default_rng(stats.child_seed(stream, 1))
    perm_d, perm_a = stats.permute_counts(
        counts_d, counts_a, strata=spec.subsets, n_permutations=n_permutations, rng=rng
    )
    return spec.statistic(perm_d, perm_a)


def _group_counts(
    y_true: ArrayLike, y_pred: ArrayLike, disadvantaged: ArrayLike
) -> tuple[_Counts, _Counts]:
    """Validate the three arrays and return the (D, A) confusion counts."""
    y = stats.as_binary("y_true", y_true)
    yhat = stats.as_binary("y_pred", y_pred)
    mask = stats.as_mask("disadvantaged", disadvantaged)
    stats.check_lengths(y_true=y, y_pred=yhat, disadvantaged=mask)
    return stats.confusion_counts(y[mask], yhat[mask]), stats.confusion_counts(
        y[~mask], yhat[~mask]
    )


def _check_counts(where: str, **counts: object) -> None:
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{where}: {name}: expected a non-negative int, got {describe(value)}")


def _spec(metric: str) -> _Spec:
    if metric not in _SPECS:
        raise ValueError(
            f"metric: expected one of {', '.join(FAIRNESS_METRICS)}, got {describe(metric)}"
        )
    return _SPECS[metric]
