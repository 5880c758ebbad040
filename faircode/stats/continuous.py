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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core import checks
from faircode.core.metrics import Metric, metric_info, metrics_of
from faircode.core.seeds import child_seed
from faircode.stats import clusters, resampling
from faircode.stats.continuous_ks import KS_CI_METHOD, ks_interval
from faircode.stats.power import MIN_SIZE

__all__ = [
    "COMPONENTS",
    "GROUP_STATISTICS",
    "PERCENTILE",
    "QUANTILES",
    "Design",
    "Gap",
    "GroupGaps",
    "GroupSummary",
    "design_of",
    "group_gaps",
    "weighted_quantile",
]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Bools = NDArray[np.bool_]

PERCENTILE = "percentile_bootstrap"
"""The ``ci_method`` of a row-level percentile bootstrap interval."""
CLUSTER_PERCENTILE = "cluster_percentile_bootstrap"
"""The ``ci_method`` of a unit-level (cluster) percentile bootstrap interval."""

QUANTILES: dict[Metric, float] = {Metric.Q10_GAP: 0.1, Metric.Q50_GAP: 0.5, Metric.Q90_GAP: 0.9}
"""The quantile level each quantile gap compares."""

COMPONENTS: dict[Metric, str] = {
    Metric.MEAN_DIFFERENCE: "mean", Metric.MEAN_RATIO: "mean", Metric.Q10_GAP: "q10",
    Metric.Q50_GAP: "q50", Metric.Q90_GAP: "q90", Metric.KS_DISTANCE: "ks",
    Metric.MAE_GAP: "mae", Metric.BOUNDED_GROUP_LOSS: "mae", Metric.RESIDUAL_GAP: "residual"}
"""The per-group statistic each metric is a function of (``ks``: the pair's distance)."""

GROUP_STATISTICS: tuple[str, ...] = ("mean", "q10", "q50", "q90", "mae", "residual")
"""The per-group statistics a group's summary reports (``mae``, ``residual``: a model's)."""

_BLOCK_CELLS = 1_500_000
"""Resample weights held at once (resamples x rows: 12 MB of float64 per array)."""


def weighted_quantile(sorted_values: Floats, cumulative: Floats, level: float) -> Floats:
    """The ``level`` quantile (numpy's linear interpolation) of each row's weighted sample.

    ``sorted_values`` ``(n,)`` ascending; ``cumulative`` ``(k, n)`` the running sums of each
    row's non-negative integer weights (a weight is how many times the row is drawn).  Order
    statistic ``j`` of a sample is the first value whose running weight exceeds ``j``; the
    quantile interpolates between order statistics ``⌊h⌋`` and ``⌊h⌋ + 1``, ``h = (N − 1)·level``.
    A row without weight is NaN.
    """
    total = cumulative[:, -1]
    h = (total - 1.0) * level
    low = np.floor(h)
    frac = h - low
    high = np.minimum(low + 1.0, total - 1.0)
    last = sorted_values.size - 1
    at_low = np.minimum((cumulative <= low[:, None]).sum(axis=1), last)
    at_high = np.minimum((cumulative <= high[:, None]).sum(axis=1), last)
    out = sorted_values[at_low] + frac * (sorted_values[at_high] - sorted_values[at_low])
    return np.where(total > 0, out, np.nan)


@dataclass(frozen=True, slots=True)
class Design:
    """How rows are resampled and exchanged: ``unit`` per row (``0..U-1``), the bootstrap
    ``strata`` (the unit ids of each group pattern: only disadvantaged, only advantaged, both),
    the exchangeable ``part`` of each row (a unit's rows of one group) and each part's label
    (``part_disadvantaged``), ``mixed`` the units split into parts, ``clustered`` whether some
    unit has several rows."""

    unit: Ints
    strata: tuple[Ints, ...]
    part: Ints
    part_disadvantaged: Bools
    mixed: int
    clustered: bool


def design_of(disadvantaged: Bools, units: ArrayLike | None) -> Design:
    """The :class:`Design` of rows with group ``disadvantaged`` and optional unit ids (without
    units, or one row per unit, every row is its own unit and part)."""
    n = disadvantaged.size
    unit = clusters.repeated_units(units, n)
    if unit is None:
        rows = np.arange(n, dtype=np.int64)
        return Design(rows, (rows[disadvantaged], rows[~disadvantaged]), rows,
                      disadvantaged.copy(), 0, False)
    count = int(unit.max()) + 1
    has_d = np.bincount(unit, weights=disadvantaged, minlength=count) > 0
    has_a = np.bincount(unit, weights=~disadvantaged, minlength=count) > 0
    ids = np.arange(count, dtype=np.int64)
    strata = tuple(ids[m] for m in (has_d & ~has_a, has_a & ~has_d, has_d & has_a)
                   if m.any())
    part_key = unit * 2 + (~disadvantaged).astype(np.int64)
    keys, part = np.unique(part_key, return_inverse=True)
    return Design(unit, strata, part.reshape(-1).astype(np.int64), keys % 2 == 0,
                  int((has_d & has_a).sum()), True)


@dataclass(frozen=True, slots=True)
class _Sample:
    """The rows sorted by value once: values, group, residuals, tie-block ends, design."""

    value: Floats
    disadvantaged: Bools
    residual: Floats | None
    ends: Ints
    design: Design


def _numbers(name: str, values: ArrayLike) -> Floats:
    """``values`` as a 1-D array of finite floats, else one ValueError line naming it."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or not np.isfinite(array).all():
        raise ValueError(f"{name}: expected a 1-D array of finite numbers, got shape "
                         f"{array.shape} with {int((~np.isfinite(array)).sum())} not finite")
    return array


def _sample(values: ArrayLike, disadvantaged: ArrayLike, truth: ArrayLike | None,
            units: ArrayLike | None) -> _Sample:
    v = _numbers("values", values)
    mask = checks.as_mask("disadvantaged", disadvantaged)
    checks.check_lengths(values=v, disadvantaged=mask)
    order = np.argsort(v, kind="stable")
    residual = None
    if truth is not None:
        t = _numbers("truth", truth)
        checks.check_lengths(values=v, truth=t)
        residual = (t - v)[order]
    unit = None if units is None else np.asarray(units)[order]
    sorted_values = v[order]
    ends = np.flatnonzero(np.append(sorted_values[1:] != sorted_values[:-1], True))
    return _Sample(sorted_values, mask[order], residual, ends.astype(np.int64),
                   design_of(mask[order], unit))


def _group_components(s: _Sample, w: Floats, wanted: set[str]) -> dict[str, Floats]:
    """Each wanted per-group statistic of the weighted samples ``w`` ``(k, n)``."""
    total = w.sum(axis=1)
    out: dict[str, Floats] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        if "mean" in wanted:
            out["mean"] = w @ s.value / total
        if s.residual is not None and "mae" in wanted:
            out["mae"] = w @ np.abs(s.residual) / total
        if s.residual is not None and "residual" in wanted:
            out["residual"] = w @ s.residual / total
    levels = [(f"q{round(100 * q)}", q) for q in QUANTILES.values()]
    if any(name in wanted for name, _ in levels) or "cdf" in wanted:
        cumulative = np.cumsum(w, axis=1)
        for name, q in levels:
            if name in wanted:
                out[name] = weighted_quantile(s.value, cumulative, q)
        if "cdf" in wanted:
            with np.errstate(invalid="ignore", divide="ignore"):
                out["cdf"] = cumulative[:, s.ends] / total[:, None]
    return out


def _components(s: _Sample, wd: Floats, wa: Floats, wanted: set[str]
                ) -> dict[str, tuple[Floats, Floats] | Floats]:
    """The wanted statistics of both groups' weighted samples, and ``ks`` (their distance)."""
    per = wanted - {"ks"} | ({"cdf"} if "ks" in wanted else set())
    d, a = _group_components(s, wd, per), _group_components(s, wa, per)
    out: dict[str, tuple[Floats, Floats] | Floats] = {
        k: (d[k], a[k]) for k in d if k != "cdf"}
    if "ks" in wanted:
        out["ks"] = np.abs(d["cdf"] - a["cdf"]).max(axis=1)
    return out


def _metric_value(metric: Metric, parts: dict[str, tuple[Floats, Floats] | Floats], *,
                  log_scale: bool) -> Floats:
    """A metric's value from its groups' statistics (module docstring)."""
    name = COMPONENTS[metric]
    if metric is Metric.KS_DISTANCE:
        return np.asarray(parts["ks"])
    d, a = parts[name]
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric is Metric.MEAN_RATIO:
            return np.exp(d - a) if log_scale else np.where((d > 0) & (a > 0), d / a, np.nan)
        if metric is Metric.BOUNDED_GROUP_LOSS:
            return np.maximum(d, a)
    return d - a


def _block(n: int, total: int) -> list[int]:
    size = max(1, _BLOCK_CELLS // max(n, 1))
    return [min(size, total - start) for start in range(0, total, size)]


def _bootstrap_weights(unit: Ints, strata: Sequence[Ints], k: int,
                       rng: np.random.Generator) -> Floats:
    """``k`` bootstrap draws of row weights: the units of each stratum drawn with replacement
    at the stratum's size (each draw a uniform pick among them); a row weighs its unit's
    count."""
    n_units = int(unit.max()) + 1
    counts = np.zeros((k, n_units), dtype=np.float64)
    offset = (np.arange(k, dtype=np.int64) * n_units)[:, None]
    for ids in strata:
        if ids.size:
            picks = ids[rng.integers(0, ids.size, size=(k, ids.size))]
            counts += np.bincount((offset + picks).ravel(),
                                  minlength=k * n_units).reshape(k, n_units)
    return counts[:, unit]


def _permuted_weights(design: Design, k: int, rng: np.random.Generator) -> Floats:
    """``k`` permutations of the parts' labels, as the 0/1 weight of each row in the
    disadvantaged group."""
    labels = rng.permuted(np.tile(design.part_disadvantaged, (k, 1)), axis=1)
    return labels[:, design.part].astype(np.float64)


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


def _test_scale(metric: Metric, values: Floats) -> Floats:
    """A metric on the scale its test and detectable gap are taken on (log for a ratio)."""
    if metric_info(metric).scale == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(values)
    return values


Weights = Callable[[int, np.random.Generator], Floats]
"""``weights(k, rng)``: ``k`` draws of row weights, ``(k, n)`` (a bootstrap: the rows' counts,
split by group) or ``(2, k, n)`` (a permutation: each group's 0/1 weights)."""


def _draw(s: _Sample, k_total: int, wanted: set[str], weights: Weights,
          rng: np.random.Generator, *, log_scale: bool, metrics: Sequence[Metric]
          ) -> tuple[dict[Metric, Floats], dict[str, Floats]]:
    """Every metric's (and group statistic's) values over ``k_total`` draws of ``weights``."""
    n = s.value.size
    values: dict[Metric, list[Floats]] = {m: [] for m in metrics}
    groups: dict[str, list[Floats]] = {}
    for k in _block(n, k_total):
        w = weights(k, rng)
        if w.ndim == 3:  # permutations: (disadvantaged, advantaged)
            wd, wa = w[0], w[1]
        else:
            wd, wa = w * s.disadvantaged, w * ~s.disadvantaged
        parts = _components(s, wd, wa, wanted)
        for m in metrics:
            values[m].append(_metric_value(m, parts, log_scale=log_scale))
        for name, pair in parts.items():
            if isinstance(pair, tuple):
                for side, array in zip(("d", "a"), pair, strict=True):
                    groups.setdefault(f"{name}_{side}", []).append(array)
    return ({m: np.concatenate(v) for m, v in values.items()},
            {g: np.concatenate(v) for g, v in groups.items()})


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
    s = _sample(values, disadvantaged, truth, units)
    n_d, n_a = int(s.disadvantaged.sum()), int((~s.disadvantaged).sum())
    if n_d == 0 or n_a == 0:
        raise ValueError(f"disadvantaged: expected rows in both groups, got {n_d} and {n_a}")
    metrics = [Metric(m) for m in metrics_of("regression")
               if truth is not None or not metric_info(m).ground_truth]
    wanted = {COMPONENTS[m] for m in metrics} | (
        {"mean", "q10", "q50", "q90"} | ({"mae", "residual"} if truth is not None else set()))
    design = s.design

    def boot(k: int, rng: np.random.Generator) -> Floats:
        return _bootstrap_weights(design.unit, design.strata, k, rng)

    boot_values, boot_groups = _draw(s, n_resamples, wanted, boot,
                                     np.random.default_rng(child_seed(seed, 0)),
                                     log_scale=log_scale, metrics=metrics)
    row_values: dict[Metric, Floats] = {}
    if design.clustered:  # the row bootstrap beside it: the design effect
        rows = np.arange(s.value.size, dtype=np.int64)
        by_group = (rows[s.disadvantaged], rows[~s.disadvantaged])
        row_values, _ = _draw(s, n_resamples, wanted,
                              lambda k, rng: _bootstrap_weights(rows, by_group, k, rng),
                              np.random.default_rng(child_seed(seed, 2)),
                              log_scale=log_scale, metrics=metrics)
    observed = _components(s, s.disadvantaged[None, :].astype(np.float64),
                           (~s.disadvantaged)[None, :].astype(np.float64), wanted)
    value = {m: float(_metric_value(m, observed, log_scale=log_scale)[0]) for m in metrics}
    permuted: dict[Metric, Floats] = {}
    p_value: dict[Metric, float] = {}

    def perm(k: int, rng: np.random.Generator) -> Floats:
        wd = _permuted_weights(design, k, rng)
        return np.stack([wd, 1.0 - wd])

    for m in metrics:
        info = metric_info(m)
        if info.same_null is not None:
            continue
        twins = [m, *(o for o in metrics if metric_info(o).same_null is m)]
        drawn, _ = _draw(s, n_permutations, {COMPONENTS[o] for o in twins}, perm,
                         np.random.default_rng(child_seed(seed, 1, info.key)),
                         log_scale=log_scale, metrics=twins)
        permuted.update(drawn)
        for twin in twins:  # a twin reports its null's p-value (same_null)
            p_value[twin] = _p_value(m, value[m], drawn[m])
    intervals = {m: resampling.percentile_interval(boot_values[m], confidence=confidence)
                 for m in metrics}
    intervals[Metric.KS_DISTANCE] = _ks_bounds(s, boot, n_resamples, seed,
                                               confidence=confidence)
    gaps = tuple(_gap(m, value[m], p_value[m], intervals[m], boot_values[m], permuted[m],
                      row_values.get(m), design=design, alpha=alpha, power=power)
                 for m in metrics)
    mixed = f"{clusters.MIXED_UNITS_NOTE}:{design.mixed}" if design.mixed else ""
    summaries = [_summary(s, side, observed, boot_groups, confidence=confidence)
                 for side in ("d", "a")]
    return GroupGaps(gaps, summaries[0], summaries[1], mixed)


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


def _ks_bounds(s: _Sample, boot: Weights, n_resamples: int, seed: int | np.random.SeedSequence,
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
        for k in _block(s.value.size, n_resamples):
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


def _summary(s: _Sample, side: str, observed: dict[str, tuple[Floats, Floats] | Floats],
             boot: dict[str, Floats], *, confidence: float) -> GroupSummary:
    """One group's :class:`GroupSummary` (``side`` ``d`` or ``a``)."""
    mask = s.disadvantaged if side == "d" else ~s.disadvantaged
    units = np.unique(s.design.unit[mask]).size
    values = s.value[mask]
    stats: dict[str, tuple[float, float, float]] = {}
    for name in GROUP_STATISTICS:
        if name not in observed:
            continue
        pair = observed[name]
        assert isinstance(pair, tuple)
        value = float(pair[0 if side == "d" else 1][0])
        low, high = resampling.percentile_interval(boot[f"{name}_{side}"], confidence=confidence)
        stats[name] = (value, low, high)
    sd = float(values.std(ddof=1)) if values.size > 1 else math.nan
    return GroupSummary(int(mask.sum()), int(units), sd, stats)
