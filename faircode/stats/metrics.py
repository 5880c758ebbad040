"""Group-fairness and performance metrics: values, intervals, permutation p-values, BH family.

The metric definitions live in :mod:`faircode.stats._metric_defs` (vectorised functions of the two
groups' confusion counts); this module turns them into results.  Labels and decisions must be
oriented first with :func:`orient` (1 = the manifest's favourable outcome), so that for every
metric and every audit **a negative value means the disadvantaged group is worse off** (for
disparate impact: a ratio below 1; equalized odds is an unsigned magnitude, read its signed
components ``tpr_gap``/``fpr_gap``).

Intervals (column ``ci_method``)
--------------------------------
* ``demographic_parity_diff``, ``equal_opportunity_diff``, ``tpr_gap``, ``fpr_gap``,
  ``predictive_parity_diff``, ``accuracy_equality_diff``: Newcombe's hybrid score interval
  (method 10) for the difference of the two groups' proportions over the metric's subset.
* ``disparate_impact_ratio``: Katz's log interval for a ratio of proportions (lower limit 0 and
  a 1/2 continuity correction when the disadvantaged group has no favourable decision).
* ``equalized_odds_diff``: an interval of ``max(|TPR gap|, |FPR gap|)`` itself, the endpoint-wise
  maximum of the intervals of ``|TPR gap|`` and ``|FPR gap|`` implied by their Newcombe
  intervals (see :mod:`faircode.stats._metric_defs`).
The percentile bootstrap covered 0.88–0.95 for the differences and 0.83–0.88 for equalized odds
on groups of 25–40 rows; these intervals keep ≥ 0.94 there (``bench/coverage.py``, table in the
README).  No interval is random; the bootstrap engine (:func:`bootstrap_distribution`) remains
the count-level resampler for diagnostics and for resampling schemes that need it.

Design decisions
----------------
* A metric's *subsets* are the row sets its group rates are defined on (all rows; ``y = 1``;
  ``ŷ = 1``; ``y = 0``; ``y = 1`` and ``y = 0`` for equalized odds).  A group with an empty
  subset gives value NaN, no CI, no p-value and note ``insufficient_data``;
  ``small_sample_warning`` is set when either group has fewer than :data:`SMALL_SAMPLE` rows in
  any of the metric's subsets; ``n_disadvantaged``/``n_advantaged`` count the rows of the union
  of the subsets.
* The p-value is the permutation test that shuffles group labels within each subset (the
  strata), statistic ``|value|`` (equalized odds: its own value, each gap from its own stratum).
  With independent rows it is **exact** (:mod:`faircode.stats.exact`: the disadvantaged group's
  success count is hypergeometric given the subset's margins; equalized odds a product of two
  such tails), so it has no Monte-Carlo floor; ``n_permutations`` draws are taken only where
  units repeat.  Disparate impact and ``tpr_gap`` test the null of demographic parity and of
  equal opportunity respectively (:data:`SAME_NULL`) and report that twin's p-value, computed
  once; :func:`audit_q_values` counts each such null once in the Benjamini–Hochberg family.
* Disparate impact is NaN with note ``undefined_advantaged_rate_zero`` when the advantaged
  favourable rate is 0; no epsilon is added.
* Equalized odds' note names the larger gap (``tpr_gap`` or ``fpr_gap``; ``tpr_gap`` on a tie).
* Repeated units (``units=``, e.g. a person id per row; see :mod:`faircode.stats.clusters`).
  Without
  units, or with one row per unit, nothing changes and ``design_effect`` is 1.0 (the rows are the
  independent units; a result compares equal to itself).  When some unit has several rows: the
  p-value is the cluster permutation test (group labels exchanged between units; where the
  attribute varies within units the note ``attribute_varies_within_units:<n>``); ``design_effect``
  is the cluster-bootstrap variance over the row-bootstrap variance of the metric (B =
  ``n_resamples``); the interval is the same closed-form interval at *effective* counts, every
  count divided by ``max(1, design_effect)`` (Kish's effective sample size; equalized odds, a
  maximum of two absolute gaps whose variance ratio is no scaling factor, by the larger of its
  components' ``max(1, design_effect)``). ``bench/cluster_interval.py``: on synthetic clustered
  audits it covers 0.93–0.97 where the row interval covers 0.78–0.89, as well as the
  cluster-bootstrap percentile interval and better on small audits, and unlike the percentile
  interval it keeps the closed form's behaviour at rates near 0 and 1.  Performance metrics use
  the cluster bootstrap (units resampled) instead of the row bootstrap.
* Seeds: a fairness metric of seed key ``k`` (its own, :attr:`faircode.core.metrics.MetricInfo.key`:
  never its place in :data:`FAIRNESS_METRICS`) uses ``child_seed(seed, k)``, whose children ``0``
  and ``1`` drive the bootstrap diagnostic and the Monte-Carlo row permutation of
  :func:`permutation_distribution` (a diagnostic: the reported row-level p is exact), and with
  repeated units ``2`` the cluster permutation, ``3`` and ``4`` the cluster and row bootstraps
  of the design effect.  Performance metric ``k`` uses
  ``child_seed(seed, k)`` (rows) or ``child_seed(seed, k, 1)`` (repeated units).  The
  resampling is count-based throughout (counts in, statistic over a leading resample axis out),
  so any other resampler of counts can feed the same functions.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.metrics import metric_info
from faircode.core.seeds import child_seed
from faircode.stats import _metric_defs as defs
from faircode.stats import clusters, exact, resampling
from faircode.stats._metric_defs import FAIRNESS_METRICS, SAME_NULL, Interval, metric_values, orient
from faircode.stats.intersectional import (
    IntersectionalResult,
    interaction_test,
    intersectional_from_counts,
    intersectional_gap,
)
from faircode.stats.performance import (
    PERFORMANCE_METRICS,
    PerformanceResult,
    performance_from_counts,
    performance_metrics,
)

__all__ = [
    "FAIRNESS_COLUMNS",
    "FAIRNESS_METRICS",
    "INTERSECTIONAL_COLUMNS",
    "PERFORMANCE_METRICS",
    "SAME_NULL",
    "SMALL_SAMPLE",
    "IntersectionalResult",
    "Interval",
    "MetricResult",
    "PerformanceResult",
    "audit_q_values",
    "bootstrap_distribution",
    "bootstrap_draws",
    "fairness_from_counts",
    "fairness_metrics",
    "interaction_test",
    "intersectional_from_counts",
    "intersectional_gap",
    "metric_values",
    "orient",
    "performance_from_counts",
    "performance_metrics",
    "permutation_distribution",
]

SMALL_SAMPLE: int = 30
"""A group with fewer rows than this in a metric's subset raises ``small_sample_warning``."""

_DI_UNDEFINED = "undefined_advantaged_rate_zero"

FAIRNESS_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "protected_attribute", "metric", "value", "ci_low", "ci_high",
    "ci_method", "p_value", "q_value", "significant", "mde", "powered", "mde_note",
    "n_disadvantaged", "n_advantaged", "small_sample_warning", "design_effect", "note",
)
"""Columns of an audit's fairness table (one row per cell x attribute x metric)."""

INTERSECTIONAL_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "model", "attribute_a", "attribute_b",
    "gap", "ci_low", "ci_high", "p_value", "q_value", "significant", "mde", "powered", "mde_note",
    "design_effect", "interaction", "interaction_ci_low", "interaction_ci_high",
    "interaction_p_value", "interaction_q_value", "interaction_significant",
    "gap_a", "gap_b", "n_dd", "n_da", "n_ad", "n_aa", "rate_dd", "rate_da", "rate_ad", "rate_aa",
    "note",
)
"""Columns of an audit's intersectional table (one row per cell x pair of attributes)."""


@dataclass(frozen=True, slots=True)
class MetricResult:
    """One fairness metric for one attribute: value, CI (and its method), permutation p-value."""

    metric: str
    value: float
    ci_low: float
    ci_high: float
    ci_method: str
    p_value: float
    n_disadvantaged: int
    n_advantaged: int
    small_sample_warning: bool
    note: str
    design_effect: float = 1.0

    def __post_init__(self) -> None:
        defs.spec(self.metric)
        if self.ci_method not in {i.value for i in Interval}:
            raise ValueError(
                f"MetricResult: ci_method: expected one of {', '.join(i.value for i in Interval)}"
                f", got {describe(self.ci_method)}"
            )
        _check_counts(
            "MetricResult", n_disadvantaged=self.n_disadvantaged, n_advantaged=self.n_advantaged
        )
        if np.isnan(self.value) and not np.isnan(self.p_value):
            raise ValueError(f"MetricResult({self.metric}): p_value must be NaN when value is NaN")
        if not np.isnan(self.p_value) and not 0.0 < self.p_value <= 1.0:
            raise ValueError(
                f"MetricResult: p_value: expected (0, 1], got {describe(self.p_value)}"
            )


def fairness_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    n_resamples: int = 2000,
) -> tuple[MetricResult, ...]:
    """Compute every fairness metric with CI and p-value, in :data:`FAIRNESS_METRICS` order.

    ``y_true`` and ``y_pred`` must be oriented (:func:`orient`): 1 is the favourable outcome.
    ``units`` (optional, one id per row) declares which rows are the same independent unit; when
    some unit repeats, p-values, intervals and ``design_effect`` account for it (module
    docstring; ``n_resamples`` is then the bootstrap size of the design effect).
    """
    counts_d, counts_a = _group_counts(y_true, y_pred, disadvantaged)
    types = _fairness_types(y_true, y_pred, disadvantaged, units)
    return fairness_from_counts(counts_d, counts_a, types, n_permutations=n_permutations,
                                confidence=confidence, seed=seed, n_resamples=n_resamples)


def fairness_from_counts(
    counts_d: ArrayLike,
    counts_a: ArrayLike,
    types: clusters.UnitTypes | None,
    *,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
    n_resamples: int = 2000,
) -> tuple[MetricResult, ...]:
    """:func:`fairness_metrics` from the groups' oriented ``(TN, FP, FN, TP)`` counts and, when
    some unit repeats, the units' two-group types (else None): what the rows reduce to."""
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    if types is not None:
        checks.check_positive_int("n_resamples", n_resamples)
    tests = _AttributeTests(np.asarray(counts_d, dtype=np.int64),
                            np.asarray(counts_a, dtype=np.int64), types,
                            n_permutations=n_permutations, n_resamples=n_resamples, seed=seed)
    return tuple(_metric_result(metric, tests, confidence=confidence)
                 for metric in FAIRNESS_METRICS)


@dataclass(slots=True)
class _AttributeTests:
    """One attribute's (D, A) counts and unit types, with its p-values and design effects.

    Each p-value (by null) and design effect (by metric) is drawn on first use from its own
    stream and kept, so a :data:`SAME_NULL` twin or equalized odds' components draw once.
    """

    counts_d: defs.Counts
    counts_a: defs.Counts
    types: clusters.UnitTypes | None
    n_permutations: int
    n_resamples: int
    seed: int | np.random.SeedSequence
    p_values: dict[str, float] = field(default_factory=dict)
    deffs: dict[str, float] = field(default_factory=dict)
    mixed: str = field(init=False)  # the note of an attribute that varies within units

    def __post_init__(self) -> None:
        self.mixed = "" if self.types is None else clusters.cluster_permutation_note(self.types)

    def p_value(self, null: str) -> float:
        """The permutation p-value of ``null``: exact with independent rows, Monte-Carlo
        (``n_permutations`` unit permutations) when some unit repeats."""
        if null not in self.p_values:
            if self.types is None:
                self.p_values[null] = exact.exact_p_value(null, self.counts_d, self.counts_a)
            else:
                observed, permuted = self._cluster_permutation(null, self.types)
                self.p_values[null] = resampling.permutation_p_value(observed, permuted)
        return self.p_values[null]

    def _cluster_permutation(
        self, metric: str, types: clusters.UnitTypes
    ) -> tuple[float, defs.Floats]:
        """Observed ``|T|`` and unit-permuted ``|T*|`` of ``metric`` (stream ``(k, 2)``)."""
        spec = defs.SPECS[metric]
        rng = np.random.default_rng(child_seed(self.seed, metric_info(metric).key, 2))
        perm_d, perm_a = clusters.cluster_permute_counts(
            types, strata=spec.subsets, n_permutations=self.n_permutations, rng=rng
        )
        pooled = types.pooled()
        return float(spec.statistic(pooled[0], pooled[1])), spec.statistic(perm_d, perm_a)

    def design_effect(self, metric: str) -> float:
        """Cluster- over row-bootstrap variance of ``metric`` (streams ``(k, 3)`` and ``(k, 4)``).

        Only asked for when some unit repeats.
        """
        if metric not in self.deffs and self.types is not None:
            spec, k, types = defs.SPECS[metric], metric_info(metric).key, self.types
            rng = np.random.default_rng(child_seed(self.seed, k, 3))
            boot = clusters.cluster_bootstrap_counts(types, n_resamples=self.n_resamples, rng=rng)
            pooled = types.pooled()
            rng = np.random.default_rng(child_seed(self.seed, k, 4))
            row_d = resampling.bootstrap_counts(pooled[0], n_resamples=self.n_resamples, rng=rng)
            row_a = resampling.bootstrap_counts(pooled[1], n_resamples=self.n_resamples, rng=rng)
            with np.errstate(divide="ignore", invalid="ignore"):
                cluster_values = spec.value(boot[:, 0], boot[:, 1])
                row_values = spec.value(row_d, row_a)
            self.deffs[metric] = clusters.design_effect(cluster_values, row_values)
        return self.deffs[metric]

    def interval(self, metric: str, *, confidence: float) -> tuple[float, float, float]:
        """``(design_effect, ci_low, ci_high)``: the closed form at Kish's effective counts."""
        deff, factor = 1.0, 1.0
        if self.types is not None:
            deff = self.design_effect(metric)
            factor = clusters.deflation(deff)
            components = defs.SPECS[metric].components
            if components:
                # the max of two |gaps| is not a smooth statistic, its variance ratio is no
                # variance-scaling factor: deflate by the larger of its components' effects
                factor = max(clusters.deflation(self.design_effect(c)) for c in components)
        d, a = self.counts_d, self.counts_a
        if factor == 1.0:
            low, high = defs.closed_form_interval(metric, d, a, confidence=confidence)
        else:  # every count divided by the design effect
            low, high = defs.closed_form_interval(metric, d / factor, a / factor,
                                                  confidence=confidence)
        return deff, float(low), float(high)


def _metric_result(metric: str, tests: _AttributeTests, *, confidence: float) -> MetricResult:
    """One metric's row: value, interval at (effective) counts, p-value of its null, note."""
    spec = defs.SPECS[metric]
    counts_d, counts_a = tests.counts_d, tests.counts_a
    sizes = [int(c[list(s)].sum()) for c in (counts_d, counts_a) for s in spec.subsets]
    union = sorted({cell for subset in spec.subsets for cell in subset})
    n_d, n_a = int(counts_d[union].sum()), int(counts_a[union].sum())
    small = min(sizes) < SMALL_SAMPLE
    value = float(spec.value(counts_d, counts_a))
    method = spec.interval.value
    if min(sizes) == 0 or np.isnan(value):
        # an empty subset, or else disparate impact with a zero advantaged rate
        why = "insufficient_data" if min(sizes) == 0 else _DI_UNDEFINED
        nan = float("nan")
        return MetricResult(metric, nan, nan, nan, method, nan, n_d, n_a, small, why,
                            1.0 if tests.types is None else nan)
    deff, low, high = tests.interval(metric, confidence=confidence)
    p_value = tests.p_value(SAME_NULL.get(metric, metric))
    note = ""
    if spec.components:  # a magnitude: name the larger component
        note = str(defs.larger_component(metric, counts_d, counts_a))
    note = ";".join(n for n in (note, tests.mixed) if n)
    return MetricResult(metric, value, low, high, method, p_value, n_d, n_a, small, note, deff)


def _fairness_types(
    y_true: ArrayLike, y_pred: ArrayLike, disadvantaged: ArrayLike, units: ArrayLike | None
) -> clusters.UnitTypes | None:
    """The units' (D, A) count types when some unit repeats, else None (row-level path)."""
    mask = checks.as_mask("disadvantaged", disadvantaged)
    inverse = clusters.repeated_units(units, mask.size)
    if inverse is None:
        return None
    group = np.where(mask, 0, 1).astype(np.int64)
    return clusters.unit_types(
        clusters.unit_counts(y_true, y_pred, group, inverse, n_groups=2)
    )


def bootstrap_draws(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    n_resamples: int = 2000,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    metrics: Sequence[str] = FAIRNESS_METRICS,
) -> defs.Floats:
    """Bootstrap resamples of each of ``metrics``, shape ``(len(metrics), n_resamples)``.

    A metric of seed key ``k`` draws from its stream ``child_seed(seed, k, 0)`` whichever others
    are asked for.  Without repeated units each group is resampled at its own size
    as a multinomial of its cell counts; when some unit repeats (``units``), whole units are
    resampled with their count vectors (:func:`faircode.stats.clusters.cluster_bootstrap_counts`,
    bit-identical to the row bootstrap with one row per unit).  The reported intervals are
    closed-form; these draws are what combines training replicates
    (:mod:`faircode.evaluate.stability`) and a diagnostic of the engine.
    """
    counts_d, counts_a = _group_counts(y_true, y_pred, disadvantaged)
    checks.check_positive_int("n_resamples", n_resamples)
    types = _fairness_types(y_true, y_pred, disadvantaged, units)
    out = np.empty((len(metrics), n_resamples))
    for row, metric in enumerate(metrics):
        spec = defs.spec(metric)
        rng = np.random.default_rng(child_seed(seed, metric_info(metric).key, 0))
        if types is None:
            boot_d = resampling.bootstrap_counts(counts_d, n_resamples=n_resamples, rng=rng)
            boot_a = resampling.bootstrap_counts(counts_a, n_resamples=n_resamples, rng=rng)
        else:
            boot = clusters.cluster_bootstrap_counts(types, n_resamples=n_resamples, rng=rng)
            boot_d, boot_a = boot[:, 0], boot[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[row] = spec.value(boot_d, boot_a)
    return out


def bootstrap_distribution(
    metric: str,
    y_true: ArrayLike,
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    n_resamples: int = 2000,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
) -> defs.Floats:
    """Return bootstrap resamples of ``metric``: one row of :func:`bootstrap_draws`."""
    return bootstrap_draws(y_true, y_pred, disadvantaged, n_resamples=n_resamples, seed=seed,
                           units=units, metrics=(metric,))[0]


def permutation_distribution(
    metric: str,
    y_true: ArrayLike,
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    n_permutations: int = 2000,
    seed: int | np.random.SeedSequence,
) -> tuple[float, defs.Floats]:
    """Return the observed statistic and the permuted ones behind ``metric``'s p-value.

    For a metric in :data:`SAME_NULL` these are its twin's (the test it reports).
    """
    counts_d, counts_a = _group_counts(y_true, y_pred, disadvantaged)
    defs.spec(metric)
    null = SAME_NULL.get(metric, metric)
    return _permutation(null, counts_d, counts_a, n_permutations, seed)


def audit_q_values(
    fairness: pd.DataFrame, intersectional: pd.DataFrame, *, alpha: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return copies of an audit's two tables with Benjamini–Hochberg q-values and flags.

    The audit's family is every fairness p-value whose metric is not in :data:`SAME_NULL`, every
    intersectional DD-vs-AA ``p_value`` and every ``interaction_p_value``, pooled into one BH
    adjustment (NaN p-values are left out).  A :data:`SAME_NULL` metric gets the q-value of its
    twin row (same strategy, model and attribute).  ``significant`` is ``q_value < alpha``,
    ``interaction_significant`` is ``interaction_q_value < alpha``.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a float in (0, 1), got {describe(alpha)}")
    fairness, inter = fairness.copy(), intersectional.copy()
    own = ~fairness["metric"].isin(list(SAME_NULL)).to_numpy()
    p_own = fairness["p_value"].to_numpy(dtype=float)[own]
    p_gap = inter["p_value"].to_numpy(dtype=float)
    p_int = inter["interaction_p_value"].to_numpy(dtype=float)
    q = resampling.benjamini_hochberg(np.concatenate([p_own, p_gap, p_int]))
    q_fair = np.full(len(fairness), np.nan)
    q_fair[own] = q[: own.sum()]
    keys = [c for c in ("audit", "strategy", "model", "protected_attribute") if c in fairness]
    key_rows = list(fairness[keys].itertuples(index=False, name=None))
    metrics = fairness["metric"].to_numpy()
    lookup = {(m, key): q_fair[i] for i, (m, key) in enumerate(zip(metrics, key_rows, strict=True))}
    for i, (metric, key) in enumerate(zip(metrics, key_rows, strict=True)):
        if metric in SAME_NULL:
            q_fair[i] = lookup.get((SAME_NULL[metric], key), np.nan)
    q_gap = q[own.sum() : own.sum() + len(inter)]
    q_int = q[own.sum() + len(inter) :]
    fairness["q_value"] = q_fair
    fairness["significant"] = np.nan_to_num(q_fair, nan=1.0) < alpha
    inter["q_value"] = q_gap
    inter["significant"] = np.nan_to_num(q_gap, nan=1.0) < alpha
    inter["interaction_q_value"] = q_int
    inter["interaction_significant"] = np.nan_to_num(q_int, nan=1.0) < alpha
    return fairness, inter


def _permutation(
    metric: str,
    counts_d: defs.Counts,
    counts_a: defs.Counts,
    n_permutations: int,
    seed: int | np.random.SeedSequence,
) -> tuple[float, defs.Floats]:
    """Observed ``|T|`` and permuted ``|T*|`` of ``metric`` from ``child_seed(seed, k, 1)`` (``k``
    its seed key)."""
    spec = defs.SPECS[metric]
    stream = child_seed(seed, metric_info(metric).key, 1)
    rng = np.random.default_rng(stream)
    perm_d, perm_a = resampling.permute_counts(
        counts_d, counts_a, strata=spec.subsets, n_permutations=n_permutations, rng=rng
    )
    return float(spec.statistic(counts_d, counts_a)), spec.statistic(perm_d, perm_a)


def _group_counts(
    y_true: ArrayLike, y_pred: ArrayLike, disadvantaged: ArrayLike
) -> tuple[defs.Counts, defs.Counts]:
    """Validate the three arrays and return the (D, A) confusion counts."""
    y = checks.as_binary("y_true", y_true)
    yhat = checks.as_binary("y_pred", y_pred)
    mask = checks.as_mask("disadvantaged", disadvantaged)
    checks.check_lengths(y_true=y, y_pred=yhat, disadvantaged=mask)
    return resampling.confusion_counts(y[mask], yhat[mask]), resampling.confusion_counts(
        y[~mask], yhat[~mask]
    )


def _check_counts(where: str, **counts: object) -> None:
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{where}: {name}: expected a non-negative int, got {describe(value)}")
