"""Paired mitigation effects: two strategies scored on the same test rows, and what one buys.

A mitigated strategy A and a reference B decide on the *same* test rows (same labels, same group
mask, same units).  The effect of A on a fairness metric is its change in distance from parity,
``Δ = |gap_A| − |gap_B|`` (negative: A is closer to parity), where ``gap_X`` is exactly what
:func:`faircode.stats.metrics.fairness_metrics` reports for X; the effect on accuracy and balanced
accuracy (over all rows, not per group) is ``A − B``.  Because both strategies are scored on the
same rows, their estimates are correlated, and an interval that resamples them *jointly* is
narrower than any arithmetic on two separate intervals.

The sufficient table
--------------------
Every statistic here is a function of each group's 2×2 confusion counts of A and of B; resampling
them jointly needs their joint law, the per-group counts of ``(y, ŷ_A, ŷ_B)``: 8 cells per group,
16 in all (cell index ``4·y + 2·ŷ_A + ŷ_B``, :data:`JOINT_CELLS`).  Nothing smaller keeps both
strategies' counts and their dependence, and nothing more is needed, so the cost of every draw is
independent of the number of rows.  A's counts are the table summed over ŷ_B, B's over ŷ_A.  With
repeated units each unit carries its ``(2, 8)`` count array (:mod:`faircode.stats.clusters`).

Design decisions
----------------
* **Distance from parity** is ``|value − parity|`` with parity 1 for disparate impact and 0 for
  the differences (:func:`faircode.report.inputs.metric_reference`, the residual floor's
  definition, and the "no gap" of ``stability.csv``), so the effect replaces the residual floor's
  ``|S3| − |S2|`` with the same point value.  ``|log DI|`` would treat the two groups
  symmetrically but would disagree with every number the report already shows.  Equalized odds is
  already a magnitude: ``max(|TPR gap|, |FPR gap|)``.  ``tpr_gap``'s effect is equal
  opportunity's (the same distance), kept so every fairness row has its effect row.
* **One paired draw for every metric.**  Each group's rows are resampled at the group's size as a
  multinomial over its 8 joint cells (stream ``child_seed(seed, 0)``), so every draw scores both
  strategies and every metric on the same resampled rows; with repeated units whole units are
  resampled within their group pattern (:func:`faircode.stats.clusters.cluster_bootstrap_counts`,
  the same stream; bit-identical to the row draw with one row per unit).
* **The interval: the paired signed box** (``paired_signed_box``).  ``|·|`` is not smooth at 0,
  and the percentile interval of the paired draws of ``Δ`` under-covers exactly where a
  mitigation reaches parity (``bench/paired_coverage.py``, 1,000 audits of 400 rows per group:
  0.87-0.90 for parity and equal opportunity, 0.77 for equalized odds).  Every fairness distance
  is built from *signed* components ``c``, smooth in the counts (the gap minus parity; equalized
  odds: the TPR and the FPR gaps).  Per component, the sum ``s = c_A + c_B`` and the difference
  ``d = c_A − c_B`` get percentile intervals from the same paired draws, and the interval of
  ``Δ`` is its exact range over that box (:func:`box_range`).  With one component
  ``Δ = sgn(s)·sgn(d)·min(|s|, |d|)``: while both gaps keep one sign, ``Δ = ±d`` and the box is
  the paired percentile interval of ``d`` (self-pairing: ``d ≡ 0``, the interval ``[0, 0]``);
  when A overshoots parity ``Δ = ±s``; at a kink (a true gap of 0, ``|s| = |d|``) the box covers
  when ``s`` and ``d`` both do on one side each.  With both at 95 % that is about 0.95 (0.937 in
  the bench), so the sums are taken at :data:`NUISANCE_CONFIDENCE` (0.99): kink coverage
  0.96-0.99.  Both levels are *expanded* for the smaller group's number of units
  (:func:`expanded_level`, Hesterberg 2015: 0.9595 at 40, 0.951 at 400), because the percentile
  interval of a smooth paired difference covered only 0.927 at 40 rows per group (balanced
  accuracy).  Accuracy and balanced accuracy have ``Δ = d`` and so the expanded percentile
  interval of ``A − B`` (``paired_expanded_percentile``).  Shipped coverage: 0.945-1.000 for the
  fairness effects and 0.933-0.970 for accuracy and balanced accuracy in every cell of the bench.
  Width against the residual floor's conservative interval arithmetic on the same audits:
  0.39-0.84 (equalized odds 0.58-0.96) where both gaps clearly keep their sign, 0.61-1.00 where
  A reaches parity, up to 1.18 (equalized odds, a box of four intervals: 1.28) where A
  overshoots parity or sits near a kink on 40 rows -- the price of the 0.99 sums, which are then
  the working interval.  NaN draws (a subset drawn empty) are dropped from each interval.
* **The paired test of "no change"** (:func:`paired_effects`): ``H0``: within every unit (every
  row, without units) the two strategies' decisions are exchangeable -- the pair ``(ŷ_A, ŷ_B)`` of
  its rows has the same joint law as ``(ŷ_B, ŷ_A)`` given the unit's labels and groups.  Each
  unit's A and B decisions are swapped with probability 1/2 (stream ``child_seed(seed, 1)``; at
  count level a binomial number of each discordant cell or unit-type pool is swapped), and the
  p-value is :func:`faircode.stats.resampling.permutation_p_value` of ``|Δ|``. The test is exact
  for that null (rejection rate 0.012-0.054 at 0.05 in the bench, conservative on 40 rows); it is
  not a test of ``Δ = 0`` alone (a strategy may change who is decided what without changing the
  gap).  Self-pairing gives ``p = 1``.
* **Units.**  Without units, or with one row per unit, the rows are the units and the row path
  runs (``design_effect`` 1.0); otherwise the unit path, and ``design_effect`` is the
  unit-bootstrap over the row-bootstrap variance of ``Δ`` (row stream ``child_seed(seed, 2)``).
* **Training replicates** (:func:`combine_replicates`): the K replicates' paired draws are pooled
  with equal weight per replicate, the mixture of ``faircode.evaluate.stability``, and the same box
  is taken on the mixture; the value is the mean effect over the replicates.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import _metric_defs as defs
from faircode.stats import clusters, resampling
from faircode.stats._paired_box import box_range, expanded_level, percentile_bounds
from faircode.stats._paired_counts import (
    EFFECT_METRICS,
    JOINT_CELLS,
    PERFORMANCE_EFFECTS,
    bootstrap_joint,
    components,
    distance,
    effect_shape,
    joint_counts,
    joint_unit_counts,
    marginal_counts,
    swap_counts,
    swap_draws,
)

__all__ = [
    "EFFECT_METRICS",
    "JOINT_CELLS",
    "NUISANCE_CONFIDENCE",
    "CombinedEffect",
    "EffectInterval",
    "EffectResult",
    "PairedDraws",
    "box_interval",
    "box_range",
    "combine_replicates",
    "components",
    "distance",
    "expanded_level",
    "interval_method",
    "joint_counts",
    "marginal_counts",
    "paired_comparison",
    "paired_draws",
    "paired_effects",
    "swap_counts",
    "swap_draws",
]

NUISANCE_CONFIDENCE: float = 0.99
"""Confidence of the sums' (nuisance) intervals in the box, if above the reported one."""

Floats = NDArray[np.float64]


class EffectInterval(StrEnum):
    """How an effect's interval is computed (column ``ci_method``)."""

    SIGNED_BOX = "paired_signed_box"
    EXPANDED_PERCENTILE = "paired_expanded_percentile"


def interval_method(metric: str) -> str:
    """The ``ci_method`` of ``metric``'s effect (an :class:`EffectInterval` value)."""
    linear = effect_shape(metric) == "linear"
    return (EffectInterval.EXPANDED_PERCENTILE if linear else EffectInterval.SIGNED_BOX).value


def box_interval(
    draws_a: ArrayLike, draws_b: ArrayLike, *, confidence: float, n_units: int | None = None,
    nuisance: float | None = None,
) -> tuple[Floats, Floats]:
    """The paired signed box interval of every effect from component draws ``(..., M, 2, B)``.

    Returns ``(low, high)`` of shape ``(..., M)``.  The differences' intervals are at
    ``confidence``, the sums' at ``nuisance`` (default ``max(confidence,``
    :data:`NUISANCE_CONFIDENCE` ``)``), both expanded for ``n_units`` units
    (:func:`expanded_level`).  For accuracy and balanced accuracy this is the expanded percentile
    interval of ``A − B``.
    """
    checks.check_confidence(confidence)
    level = max(confidence, NUISANCE_CONFIDENCE) if nuisance is None else nuisance
    a, b = np.asarray(draws_a, np.float64), np.asarray(draws_b, np.float64)
    box = np.concatenate([percentile_bounds(a + b, expanded_level(level, n_units)),
                          percentile_bounds(a - b, expanded_level(confidence, n_units))], axis=-1)
    low, high = np.empty(box.shape[:-2]), np.empty(box.shape[:-2])
    for k, metric in enumerate(EFFECT_METRICS):
        low[..., k], high[..., k] = box_range(effect_shape(metric), box[..., k, :, :])
    return low, high


@dataclass(frozen=True, slots=True)
class PairedDraws:
    """One comparison's paired bootstrap: estimates and draws of every effect's components.

    ``estimate_a``/``estimate_b`` have shape ``(M, 2)`` and ``draws_a``/``draws_b``
    ``(M, 2, B)``, rows in :data:`EFFECT_METRICS` order (:func:`components`; NaN where unused or
    undefined); ``n_units`` is the smaller group's number of units (rows), the size the interval
    is expanded for.  The arrays are made read-only.
    """

    estimate_a: Floats
    estimate_b: Floats
    draws_a: Floats
    draws_b: Floats
    n_units: int

    def __post_init__(self) -> None:
        m = len(EFFECT_METRICS)
        if self.estimate_a.shape != (m, 2) or self.estimate_b.shape != (m, 2):
            raise ValueError(f"PairedDraws: estimates: expected shape ({m}, 2), got "
                             f"{self.estimate_a.shape} and {self.estimate_b.shape}")
        if (self.draws_a.ndim != 3 or self.draws_a.shape[:2] != (m, 2)
                or self.draws_b.shape != self.draws_a.shape):
            raise ValueError(f"PairedDraws: draws: expected two arrays of shape ({m}, 2, B), "
                             f"got {self.draws_a.shape} and {self.draws_b.shape}")
        _check_count("PairedDraws", "n_units", self.n_units)
        for array in (self.estimate_a, self.estimate_b, self.draws_a, self.draws_b):
            array.setflags(write=False)

    @property
    def n_resamples(self) -> int:
        """Number of draws ``B``."""
        return int(self.draws_a.shape[2])

    @property
    def value(self) -> Floats:
        """Every effect's estimate ``Δ``, shape ``(M,)``."""
        return distance(self.estimate_a) - distance(self.estimate_b)

    @property
    def delta(self) -> Floats:
        """Every effect's paired bootstrap draws of ``Δ``, shape ``(M, B)``."""
        return _delta(self.draws_a, self.draws_b)

    def interval(self, *, confidence: float) -> tuple[Floats, Floats]:
        """Every effect's interval ``(low, high)``, shape ``(M,)`` (:func:`box_interval`)."""
        return box_interval(self.draws_a, self.draws_b, confidence=confidence,
                            n_units=self.n_units)


def _check_count(where: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{where}: {name}: expected a non-negative int, got {describe(value)}")


def _component_draws(joint_draws: NDArray[np.int64]) -> tuple[Floats, Floats]:
    """A's and B's component draws ``(M, 2, B)`` from joint count draws ``(B, 2, 8)``."""
    counts_a, counts_b = marginal_counts(joint_draws)
    return (np.moveaxis(components(counts_a), 0, -1),
            np.moveaxis(components(counts_b), 0, -1))


def _prepare(
    y_true: ArrayLike, y_pred_a: ArrayLike, y_pred_b: ArrayLike, disadvantaged: ArrayLike,
    units: ArrayLike | None,
) -> tuple[NDArray[np.int64], clusters.UnitTypes | None]:
    """Joint counts ``(2, 8)`` and, when some unit repeats, the units' joint count types."""
    joint = joint_counts(y_true, y_pred_a, y_pred_b, disadvantaged)
    inverse = clusters.repeated_units(units, int(joint.sum()))
    if inverse is None:
        return joint, None
    return joint, clusters.unit_types(
        joint_unit_counts(y_true, y_pred_a, y_pred_b, disadvantaged, inverse))


def _paired_draws(joint: NDArray[np.int64], types: clusters.UnitTypes | None, n_resamples: int,
                  seed: int | np.random.SeedSequence) -> PairedDraws:
    """The paired bootstrap from ``child_seed(seed, 0)`` (rows, or units with ``types``)."""
    rng = np.random.default_rng(child_seed(seed, 0))
    draws_a, draws_b = _component_draws(bootstrap_joint(joint, types, n_resamples, rng))
    counts_a, counts_b = marginal_counts(joint)
    if types is None:
        n_units = int(joint.sum(axis=1).min())
    else:
        n_units = min(int(types.multiplicity[types.counts[:, g].sum(axis=1) > 0].sum())
                      for g in (0, 1))
    return PairedDraws(components(counts_a), components(counts_b), draws_a, draws_b, n_units)


def paired_draws(
    y_true: ArrayLike,
    y_pred_a: ArrayLike,
    y_pred_b: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    n_resamples: int = 2000,
) -> PairedDraws:
    """Return the paired bootstrap of A (``y_pred_a``) against B (``y_pred_b``) on the same rows.

    Labels and both decision vectors must be oriented (1 = favourable); ``units`` as in
    :func:`paired_effects`, whose draws (and interval) these are for the same arguments.
    """
    checks.check_positive_int("n_resamples", n_resamples)
    joint, types = _prepare(y_true, y_pred_a, y_pred_b, disadvantaged, units)
    return _paired_draws(joint, types, n_resamples, seed)


@dataclass(frozen=True, slots=True)
class EffectResult:
    """One paired effect of A against B: ``Δ``, its interval (and method), the swap p-value.

    ``gap_a``/``gap_b`` are the two strategies' own values (what
    :func:`faircode.stats.metrics.fairness_metrics` reports; for accuracy and balanced accuracy the
    values themselves); ``n_units`` counts the independent units (rows without repeats).
    """

    metric: str
    value: float
    ci_low: float
    ci_high: float
    ci_method: str
    p_value: float
    gap_a: float
    gap_b: float
    n_disadvantaged: int
    n_advantaged: int
    n_units: int
    design_effect: float
    note: str

    def __post_init__(self) -> None:
        if self.metric not in EFFECT_METRICS:
            raise ValueError(f"EffectResult: metric: expected one of {', '.join(EFFECT_METRICS)}"
                             f", got {describe(self.metric)}")
        if self.ci_method not in {i.value for i in EffectInterval}:
            raise ValueError(f"EffectResult: ci_method: expected one of "
                             f"{', '.join(i.value for i in EffectInterval)}, "
                             f"got {describe(self.ci_method)}")
        for name in ("n_disadvantaged", "n_advantaged", "n_units"):
            _check_count("EffectResult", name, getattr(self, name))
        if np.isnan(self.value) != np.isnan(self.p_value):
            raise ValueError(f"EffectResult({self.metric}): p_value must be NaN exactly when "
                             "value is NaN")
        if not np.isnan(self.p_value) and not 0.0 < self.p_value <= 1.0:
            raise ValueError(f"EffectResult: p_value: expected (0, 1], got "
                             f"{describe(self.p_value)}")


def paired_effects(
    y_true: ArrayLike,
    y_pred_a: ArrayLike,
    y_pred_b: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
) -> tuple[EffectResult, ...]:
    """Every effect of A (``y_pred_a``) against B (``y_pred_b``) on the same rows.

    In :data:`EFFECT_METRICS` order.  Labels and decisions must be oriented (1 = favourable);
    ``units`` (one id per row) declares repeated units.  Streams: ``child_seed(seed, 0)`` the
    paired bootstrap (:func:`paired_draws`), ``(seed, 1)`` the swap test, ``(seed, 2)`` the row
    bootstrap of the design effect (module docstring).
    """
    return paired_comparison(y_true, y_pred_a, y_pred_b, disadvantaged, seed=seed, units=units,
                             n_resamples=n_resamples, n_permutations=n_permutations,
                             confidence=confidence)[0]


def paired_comparison(
    y_true: ArrayLike,
    y_pred_a: ArrayLike,
    y_pred_b: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
) -> tuple[tuple[EffectResult, ...], PairedDraws]:
    """:func:`paired_effects` and the :class:`PairedDraws` behind them, from one bootstrap.

    The draws are those of :func:`paired_draws` for the same arguments, so a caller that also
    combines training replicates (:func:`combine_replicates`) resamples each comparison once.
    """
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    joint, types = _prepare(y_true, y_pred_a, y_pred_b, disadvantaged, units)
    draws = _paired_draws(joint, types, n_resamples, seed)
    low, high = draws.interval(confidence=confidence)
    value = draws.value
    p_values = _swap_p_values(value, joint, types, n_permutations, seed)
    deff = np.ones(len(EFFECT_METRICS))
    if types is not None:
        rng = np.random.default_rng(child_seed(seed, 2))
        rows = _delta(*_component_draws(bootstrap_joint(joint, None, n_resamples, rng)))
        unit_delta = draws.delta
        deff = np.array([clusters.design_effect(unit_delta[k], rows[k])
                         for k in range(len(EFFECT_METRICS))])
    counts_a, counts_b = marginal_counts(joint)
    n_d, n_a = int(joint[0].sum()), int(joint[1].sum())
    n_units = n_d + n_a if types is None else types.n_units
    nan = float("nan")
    results = []
    for k, metric in enumerate(EFFECT_METRICS):
        defined = bool(np.isfinite(value[k]))
        results.append(EffectResult(
            metric, float(value[k]) if defined else nan, float(low[k]) if defined else nan,
            float(high[k]) if defined else nan, interval_method(metric), p_values[k],
            _own_value(metric, counts_a), _own_value(metric, counts_b), n_d, n_a, n_units,
            float(deff[k]), "" if defined else _why_undefined(metric, counts_a, counts_b)))
    return tuple(results), draws


def _delta(draws_a: Floats, draws_b: Floats) -> Floats:
    """``Δ`` of component draws ``(M, 2, B)``: shape ``(M, B)``."""
    a, b = np.moveaxis(draws_a, -1, 0), np.moveaxis(draws_b, -1, 0)
    return np.moveaxis(distance(a) - distance(b), 0, -1)


def _swap_p_values(value: Floats, joint: NDArray[np.int64], types: clusters.UnitTypes | None,
                   n_permutations: int, seed: int | np.random.SeedSequence) -> list[float]:
    """The swap test's p-value of every effect from ``child_seed(seed, 1)`` (NaN if undefined)."""
    rng = np.random.default_rng(child_seed(seed, 1))
    swapped = swap_draws(joint, n_permutations=n_permutations, rng=rng, types=types)
    permuted = _delta(*_component_draws(swapped))
    return [resampling.permutation_p_value(v, permuted[k]) if np.isfinite(v) else float("nan")
            for k, v in enumerate(value)]


def _own_value(metric: str, counts: NDArray[np.int64]) -> float:
    """A strategy's own value of ``metric`` from its (D, A) confusion counts ``(2, 4)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric in PERFORMANCE_EFFECTS:
            return float(components(counts)[EFFECT_METRICS.index(metric), 0])
        return float(defs.metric_values(metric, counts[0], counts[1]))


def _why_undefined(metric: str, counts_a: NDArray[np.int64], counts_b: NDArray[np.int64]) -> str:
    """``insufficient_data`` (an empty subset) or, for disparate impact, the zero-rate note."""
    if metric in PERFORMANCE_EFFECTS:
        return "insufficient_data"
    spec = defs.SPECS[metric]
    empty = any(int(c[g][list(s)].sum()) == 0 for c in (counts_a, counts_b) for g in (0, 1)
                for s in spec.subsets)
    return "insufficient_data" if empty else "undefined_advantaged_rate_zero"


@dataclass(frozen=True, slots=True)
class CombinedEffect:
    """One effect over K training replicates: mean, spread, and the mixture interval."""

    metric: str
    mean: float
    sd_between: float
    ci_low: float
    ci_high: float
    ci_method: str
    replicates: int
    n_defined: int
    sign_flips: bool

    def __post_init__(self) -> None:
        if self.metric not in EFFECT_METRICS:
            raise ValueError(f"CombinedEffect: metric: expected one of "
                             f"{', '.join(EFFECT_METRICS)}, got {describe(self.metric)}")
        _check_count("CombinedEffect", "replicates", self.replicates)
        _check_count("CombinedEffect", "n_defined", self.n_defined)
        if self.n_defined > self.replicates:
            raise ValueError(f"CombinedEffect: n_defined: expected at most {self.replicates}, "
                             f"got {describe(self.n_defined)}")


def combine_replicates(
    draws: Sequence[PairedDraws], *, confidence: float
) -> tuple[CombinedEffect, ...]:
    """Combine K replicates' paired draws of the same comparison (module docstring).

    The interval is :func:`box_interval` on the mixture of the replicates' draws (pooled with equal
    weight, ``faircode.evaluate.stability``'s mixture); ``mean`` and ``sd_between`` (``ddof=1``,
    NaN below two) are over the replicates where the effect is defined; ``sign_flips`` says some
    replicate's effect is above 0 and another's below.
    """
    if not draws:
        raise ValueError("combine_replicates: draws: expected at least one replicate, got none")
    sizes = {d.n_resamples for d in draws}
    if len(sizes) > 1:
        raise ValueError(f"combine_replicates: draws: expected the same number of draws in "
                         f"every replicate, got {sorted(sizes)}")
    low, high = box_interval(np.concatenate([d.draws_a for d in draws], axis=-1),
                             np.concatenate([d.draws_b for d in draws], axis=-1),
                             confidence=confidence, n_units=min(d.n_units for d in draws))
    values = np.stack([d.value for d in draws])  # (K, M)
    finite = np.isfinite(values)
    out = []
    for k, metric in enumerate(EFFECT_METRICS):
        v = values[finite[:, k], k]
        defined = v.size > 0
        out.append(CombinedEffect(
            metric, float(v.mean()) if defined else float("nan"),
            float(v.std(ddof=1)) if v.size >= 2 else float("nan"),
            float(low[k]) if defined else float("nan"),
            float(high[k]) if defined else float("nan"), interval_method(metric), len(draws),
            int(v.size), bool((v > 0).any() and (v < 0).any())))
    return tuple(out)
