"""Gaps of a continuous outcome between two groups: means, quantiles, a distribution distance and
a model's errors, each with an interval, a permutation test and a minimum detectable gap.

A regression audit (:mod:`faircode.core.kinds`) compares a number per row -- a wage, a salary, a
course rating, or a model's prediction of it -- between the disadvantaged and the advantaged
group of a protected attribute.  Its metrics (the ``regression`` kind of
:data:`faircode.core.metrics.METRIC_TABLE`) are functions of each group's weighted sample:

==========================  ===============================================================
metric                      value (``d``: disadvantaged, ``a``: advantaged)
==========================  ===============================================================
``mean_difference``         ``mean_d − mean_a`` (outcome units; log points on a log scale)
``mean_ratio``              ``mean_d / mean_a``; on a log scale ``exp(mean_d − mean_a)``, the
                            ratio of the groups' geometric means on the original scale
``q10_gap`` .. ``q90_gap``  the groups' 10th, 50th, 90th percentiles' difference
``ks_distance``             ``max_x |F_d(x) − F_a(x)|`` (Kolmogorov–Smirnov)
``mae_gap``                 ``MAE_d − MAE_a`` of a model (``MAE = mean |y − ŷ|``)
``bounded_group_loss``      ``max(MAE_d, MAE_a)``: the worst group's error, the loss fairlearn's
                            ``BoundedGroupLoss`` bounds (a level, not a gap)
``residual_gap``            ``mean(y − ŷ)_d − mean(y − ŷ)_a``: a model that under-predicts one
                            group has a positive residual there
==========================  ===============================================================

Design decisions
----------------
* **One engine, weights.**  Every resample is a pair of row weights ``(w_d, w_a)``: a bootstrap
  draw is the multinomial count of each row (or unit) within its group, a permutation draw the
  0/1 indicator of the rows the disadvantaged label lands on.  Every statistic is a weighted
  mean, a weighted quantile or a weighted distribution function of the rows sorted once
  (:func:`weighted_quantile`), vectorised over a block of resamples; no loop over rows or
  resamples.  Blocks have a fixed size for a given number of rows, so a number never depends on
  the machine.
* **Quantiles** are numpy's default (linear interpolation between order statistics, "type 7"):
  on unit weights :func:`weighted_quantile` is ``np.quantile``.
* **Interval**: the percentile bootstrap, each group resampled at its own size (or, with
  repeated units, the units resampled within their group pattern, as
  :func:`faircode.stats.clusters.cluster_bootstrap_counts` does with counts).  Its coverage is
  measured by ``bench/continuous_inference.py`` (docs/statistics.md).  The KS distance, the
  maximum of a process, has the bounds of a maximum instead (:mod:`faircode.stats.
  continuous_ks`: the percentile bootstrap of it covers far below its level).
* **Test**: a permutation test of exchangeable group labels, ``p = (1 + #{|T*| ≥ |T|}) / (1 +
  P)`` (:func:`faircode.stats.resampling.permutation_p_value`).  With repeated units the labels
  are exchanged between units; a unit whose attribute varies is split into its per-group parts,
  which the note says (:data:`faircode.stats.clusters.MIXED_UNITS_NOTE`), as for counts.  Each
  metric draws its own permutations from the stream of its name (its seed key,
  :attr:`faircode.core.metrics.MetricInfo.key`); a metric whose null is another's
  (``same_null``: the mean ratio's is the mean gap's, the worst group's error's the error
  gap's) reports that one's p-value.
* **Minimum detectable gap**: ``c + z_power · se``, with ``c`` the ``1 − alpha`` quantile of the
  permuted ``|T*|`` (the test's critical value) and ``se`` the bootstrap standard error: the
  gap at which the permutation test rejects with probability ``power`` when the estimate is
  roughly normal.  A ratio's is on the ``|log ratio|`` scale, as disparate impact's; a level has
  none.
* Seeds: the bootstrap draws from ``child_seed(seed, 0)``, metric ``m``'s permutations from
  ``child_seed(seed, 1, key(m))``, the row bootstrap of a clustered design's design effect from
  ``child_seed(seed, 2)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core import checks
from faircode.core.metrics import Metric, metric_info, metrics_of
from faircode.core.seeds import child_seed
from faircode.stats import clusters, resampling
from faircode.stats._continuous_engine import (
    Components,
    Design,
    Sample,
    Weights,
    blocks,
    bootstrap_weights,
    components,
    design_of,
    draw,
    permuted_weights,
    sample,
    weighted_quantile,
)
from faircode.stats.continuous_ks import KS_CI_METHOD, ks_interval
from faircode.stats.power import MIN_SIZE

__all__ = [
    "COMPONENTS",
    "GROUP_STATISTICS",
    "PERCENTILE",
    "Design",
    "Gap",
    "GroupGaps",
    "GroupSummary",
    "design_of",
    "group_gaps",
    "weighted_quantile",
]

Floats = NDArray[np.float64]

PERCENTILE = "percentile_bootstrap"
"""The ``ci_method`` of a row-level percentile bootstrap interval."""
CLUSTER_PERCENTILE = "cluster_percentile_bootstrap"
"""The ``ci_method`` of a unit-level (cluster) percentile bootstrap interval."""

COMPONENTS: dict[Metric, str] = {
    Metric.MEAN_DIFFERENCE: "mean", Metric.MEAN_RATIO: "mean", Metric.Q10_GAP: "q10",
    Metric.Q50_GAP: "q50", Metric.Q90_GAP: "q90", Metric.KS_DISTANCE: "ks",
    Metric.MAE_GAP: "mae", Metric.BOUNDED_GROUP_LOSS: "mae", Metric.RESIDUAL_GAP: "residual"}
"""The per-group statistic each metric is a function of (``ks``: the pair's distance)."""

GROUP_STATISTICS: tuple[str, ...] = ("mean", "q10", "q50", "q90", "mae", "residual")
"""The per-group statistics a group's summary reports (``mae``, ``residual``: a model's)."""

@dataclass(frozen=True, slots=True)
class Gap:
    """One metric's gap between the groups: value, interval, test, detectable gap, sizes."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    ci_method: str
    p_value: float
    se: float
    mde: float
    powered: bool
    mde_note: str
    design_effect: float
    note: str = ""


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One group's size, spread and statistics with their bootstrap intervals
    (``statistics[name] = (value, low, high)``, :data:`GROUP_STATISTICS`)."""

    n: int
    units: int
    sd: float
    statistics: dict[str, tuple[float, float, float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupGaps:
    """Every metric's :class:`Gap` (in the metric table's order) and both groups' summaries."""

    gaps: tuple[Gap, ...]
    disadvantaged: GroupSummary
    advantaged: GroupSummary
    note: str = ""


def _metric_value(metric: Metric, parts: Components, *, log_scale: bool) -> Floats:
    """A metric's value from its groups' statistics (module docstring)."""
    if metric is Metric.KS_DISTANCE:
        return np.asarray(parts["ks"])
    pair = parts[COMPONENTS[metric]]
    assert isinstance(pair, tuple)
    d, a = pair
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric is Metric.MEAN_RATIO:
            return np.exp(d - a) if log_scale else np.where((d > 0) & (a > 0), d / a, np.nan)
        if metric is Metric.BOUNDED_GROUP_LOSS:
            return np.maximum(d, a)
    return d - a


def _test_scale(metric: Metric, values: Floats) -> Floats:
    """A metric on the scale its test and detectable gap are taken on (log for a ratio)."""
    if metric_info(metric).scale == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(values)
    return values


def _se(samples: Floats) -> float:
    finite = samples[np.isfinite(samples)]
    return float(finite.std(ddof=1)) if finite.size > 1 else float("nan")


def group_gaps(
    values: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    truth: ArrayLike | None = None,
    units: ArrayLike | None = None,
    log_scale: bool = False,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
    seed: int | np.random.SeedSequence,
) -> GroupGaps:
    """Every regression metric of ``values`` between the ``disadvantaged`` rows and the others.

    ``values`` are the outcome, or a model's predictions with ``truth`` the outcome (then the
    error metrics too); ``units`` ids of repeated units (a cluster design); ``log_scale``: the
    values are logs (the mean ratio is then ``exp`` of the mean gap).  See the module docstring
    for the statistics, intervals, tests and seeds.
    """
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    s = sample(values, disadvantaged, truth, units)
    n_d, n_a = int(s.disadvantaged.sum()), int((~s.disadvantaged).sum())
    if n_d == 0 or n_a == 0:
        raise ValueError(f"disadvantaged: expected rows in both groups, got {n_d} and {n_a}")
    metrics = [Metric(m) for m in metrics_of("regression")
               if truth is not None or not metric_info(m).ground_truth]
    wanted = {"mean", "q10", "q50", "q90", *(COMPONENTS[m] for m in metrics)} | (
        {"mae", "residual"} if truth is not None else set())
    design = s.design

    def boot(k: int, rng: np.random.Generator) -> Floats:
        return bootstrap_weights(design.unit, design.strata, k, rng)

    booted = draw(s, n_resamples, wanted, boot, np.random.default_rng(child_seed(seed, 0)))
    boot_values = {m: _metric_value(m, booted, log_scale=log_scale) for m in metrics}
    row_values = _row_bootstrap(s, n_resamples, wanted, seed, log_scale=log_scale,
                                metrics=metrics) if design.clustered else {}
    observed = components(s, s.disadvantaged[None, :].astype(np.float64),
                          (~s.disadvantaged)[None, :].astype(np.float64), wanted)
    value = {m: float(_metric_value(m, observed, log_scale=log_scale)[0]) for m in metrics}
    permuted, p_value = _permutations(s, n_permutations, value, seed, log_scale=log_scale,
                                      metrics=metrics)
    intervals = {m: resampling.percentile_interval(boot_values[m], confidence=confidence)
                 for m in metrics}
    intervals[Metric.KS_DISTANCE] = _ks_bounds(s, boot, n_resamples, seed,
                                               confidence=confidence)
    gaps = tuple(_gap(m, value[m], p_value[m], intervals[m], boot_values[m], permuted[m],
                      row_values.get(m), design=design, alpha=alpha, power=power)
                 for m in metrics)
    mixed = f"{clusters.MIXED_UNITS_NOTE}:{design.mixed}" if design.mixed else ""
    summaries = [_summary(s, side, observed, booted, confidence=confidence)
                 for side in (0, 1)]
    return GroupGaps(gaps, summaries[0], summaries[1], mixed)


def _row_bootstrap(s: Sample, total: int, wanted: set[str], seed: int | np.random.SeedSequence,
                   *, log_scale: bool, metrics: list[Metric]) -> dict[Metric, Floats]:
    """A clustered design's row bootstrap (each row its own unit, within its group), from
    ``child_seed(seed, 2)``: the design effect's denominator."""
    rows = np.arange(s.value.size, dtype=np.int64)
    by_group = (rows[s.disadvantaged], rows[~s.disadvantaged])
    drawn = draw(s, total, wanted, lambda k, rng: bootstrap_weights(rows, by_group, k, rng),
                 np.random.default_rng(child_seed(seed, 2)))
    return {m: _metric_value(m, drawn, log_scale=log_scale) for m in metrics}


def _permutations(s: Sample, total: int, value: dict[Metric, float],
                  seed: int | np.random.SeedSequence, *, log_scale: bool,
                  metrics: list[Metric]) -> tuple[dict[Metric, Floats], dict[Metric, float]]:
    """Every metric's permuted values and p-value: each null's own stream (its metric's seed
    key), its twins (``same_null``) on the same draws, reporting its p-value."""
    permuted: dict[Metric, Floats] = {}
    p_value: dict[Metric, float] = {}
    for m in metrics:
        info = metric_info(m)
        if info.same_null is not None:
            continue
        twins = [m, *(o for o in metrics if metric_info(o).same_null is m)]
        drawn = draw(s, total, {COMPONENTS[o] for o in twins},
                     lambda k, rng: permuted_weights(s.design, k, rng),
                     np.random.default_rng(child_seed(seed, 1, info.key)))
        for twin in twins:
            permuted[twin] = _metric_value(twin, drawn, log_scale=log_scale)
            p_value[twin] = _p_value(m, value[m], permuted[m])
    return permuted, p_value


def _centred(metric: Metric, values: Floats) -> Floats:
    """``|T − parity|`` on the metric's test scale (log for a ratio)."""
    parity = _test_scale(metric, np.array([metric_info(metric).parity]))[0]
    return np.abs(_test_scale(metric, np.asarray(values, dtype=np.float64)) - parity)


def _p_value(metric: Metric, value: float, null: Floats) -> float:
    """The permutation p-value of ``value`` against its permuted ``null`` (module docstring)."""
    if not np.isfinite(value):
        return float("nan")
    return resampling.permutation_p_value(float(_centred(metric, np.array([value]))[0]),
                                          _centred(metric, null))


def _ks_bounds(s: Sample, boot: Weights, n_resamples: int, seed: int | np.random.SeedSequence,
               *, confidence: float) -> tuple[float, float]:
    """The KS distance's interval (:func:`faircode.stats.continuous_ks.ks_interval`) on the
    bootstrap's own draws (its stream, re-drawn on each pass)."""
    d, a = s.disadvantaged.astype(np.float64), (~s.disadvantaged).astype(np.float64)

    def delta(w_d: Floats, w_a: Floats) -> Floats:
        cdf = [np.cumsum(w, axis=1)[:, s.ends] / w.sum(axis=1, keepdims=True)
               for w in (w_d, w_a)]
        return cdf[0] - cdf[1]

    def resampled() -> Iterable[Floats]:
        rng = np.random.default_rng(child_seed(seed, 0))
        for k in blocks(s.value.size, n_resamples):
            w = boot(k, rng)
            yield delta(w * d, w * a)

    observed = delta(d[None, :], a[None, :])[0]
    return ks_interval(observed, resampled, n_rows=s.value.size, confidence=confidence)


def _gap(metric: Metric, value: float, p: float, interval: tuple[float, float], boot: Floats,
         null: Floats, rows: Floats | None, *, design: Design, alpha: float,
         power: float) -> Gap:
    """One metric's :class:`Gap` from its interval, bootstrap and null's permutations."""
    low, high = interval if np.isfinite(value) else (float("nan"), float("nan"))
    se = _se(_test_scale(metric, boot))
    mde, note = _mde(metric, null, se, alpha=alpha, power=power, design=design)
    reached = bool(np.isfinite(mde) and np.isfinite(value)
                   and float(_centred(metric, np.array([value]))[0]) >= mde)
    deff = clusters.design_effect(boot, rows) if rows is not None else 1.0
    method = (KS_CI_METHOD if metric is Metric.KS_DISTANCE else CLUSTER_PERCENTILE
              if design.clustered else PERCENTILE)
    return Gap(metric_info(metric).name, value, low, high, method, p, se, mde, reached, note,
               deff, "" if np.isfinite(value) else "undefined")


def _mde(metric: Metric, null: Floats, se: float, *, alpha: float, power: float,
         design: Design) -> tuple[float, str]:
    """The minimum detectable gap on the test scale and its n/a reason (module docstring)."""
    if metric_info(metric).scale == "level":
        return float("nan"), "level"
    if not np.isfinite(se):
        return float("nan"), "undefined"
    sizes = np.bincount(design.part_disadvantaged.astype(np.int64), minlength=2)
    if sizes.min() < MIN_SIZE:
        return float("nan"), "below_min_size"
    centred = _centred(metric, null)
    centred = centred[np.isfinite(centred)]
    if centred.size == 0 or not np.isfinite(se):
        return float("nan"), "not_detectable"
    critical = float(np.quantile(centred, 1.0 - alpha))
    return critical + float(sps.norm.ppf(power)) * se, ""


def _summary(s: Sample, side: int, observed: Components, boot: Components, *,
             confidence: float) -> GroupSummary:
    """One group's :class:`GroupSummary` (``side`` 0 disadvantaged, 1 advantaged)."""
    mask = s.disadvantaged if side == 0 else ~s.disadvantaged
    units = np.unique(s.design.unit[mask]).size
    values = s.value[mask]
    stats: dict[str, tuple[float, float, float]] = {}
    for name in GROUP_STATISTICS:
        pair, drawn = observed.get(name), boot.get(name)
        if not isinstance(pair, tuple) or not isinstance(drawn, tuple):
            continue
        low, high = resampling.percentile_interval(drawn[side], confidence=confidence)
        stats[name] = (float(pair[side][0]), low, high)
    sd = float(values.std(ddof=1)) if values.size > 1 else math.nan
    return GroupSummary(int(mask.sum()), int(units), sd, stats)
