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
  the differences (:func:`faircode.core.metrics.no_gap`, the residual floor's
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
* **The interval** (``ci_method``; :class:`faircode.stats._paired_interval.PairedInterval`).
  ``|·|`` is not smooth at 0, and the percentile interval of the paired draws of ``Δ``
  under-covers exactly where a mitigation reaches parity (``bench/paired_coverage.py``: 0.87-0.90
  for parity and equal opportunity at 400 rows per group, 0.77 for equalized odds).  But a kink
  only matters where the draws cross it.  Every distance is piecewise linear in *signed*
  components ``c`` (the gap minus parity; equalized odds: the TPR and FPR gaps), and a cell
  whose draws lie on its estimate's linear piece (the same signs, and for equalized odds the
  same larger gap, for both strategies) in at least :data:`SMOOTH_SHARE` (99 %) of the draws is
  *smooth*: its interval is the **expanded percentile interval of the draws of** ``Δ``
  (``paired_expanded_percentile``), as for accuracy and balanced accuracy (always smooth).  The
  others take the **paired signed box** (``paired_signed_box``): per component, the sum
  ``s = c_A + c_B`` and the difference ``d = c_A − c_B`` get percentile intervals from the same
  draws, and the interval of ``Δ`` is its exact range over that box (:func:`box_range`); with
  one component ``Δ = sgn(s)·sgn(d)·min(|s|, |d|)``, so it is ``±d`` while both gaps keep their
  sign, ``±s`` where A overshoots parity, and at a kink it covers when ``s`` and ``d`` both do
  on one side each (asymptotically a miss has probability ``(α_s + α_d) / 2`` there, ``α_d``
  where both gaps keep their sign, ``α_s`` where A overshoots); the sums' tails are
  :data:`NUISANCE_RATIO` (1/2) of the differences' (97.5 % sums for a 95 % interval; faircode
  0.3 took 99 %).  The choice is made per cell from the draws before any level, so each cell
  has one nested family of intervals; at 95 % of the draws instead of 99 % the choice itself
  let kinks through (coverage 0.932 at a mitigation reaching parity on 2,000 rows per group).
  Every level is *expanded* for the smaller group's number of units (:func:`expanded_level`,
  Hesterberg 2015: 0.9595 at 40, 0.951 at 400), because the percentile interval of a smooth
  paired difference covered only 0.927 at 40 rows per group.  NaN draws (a subset drawn empty)
  are dropped.  Coverage and width against the box alone and BCa: ``bench/paired_coverage.py``
  (``docs/statistics.md``).
* **The test of** ``Δ = 0`` (``p_value``) **inverts that interval**: ``p`` is the smallest ``a``
  at which the cell's ``1 − a`` interval excludes 0 (at least ``1 / (B + 1)``), so ``p ≤ 1 −
  confidence`` exactly when the reported interval excludes 0; a test and its interval never
  disagree.  The effects table's ``significant`` is then the family's q below alpha *and* the
  interval excluding 0 (:mod:`faircode.evaluate.effects`).  Self-pairing gives ``p = 1``.
* **Equivalence** (``equivalence_p_value``, with a margin ``δ`` per metric): the smallest ``a``
  at which the ``1 − 2a`` interval lies strictly inside ``±δ`` -- two one-sided tests by interval
  inclusion, on the same family -- so "no change larger than δ" is shown when it is below alpha.
* **The swap test** (``swap_p_value``) is a different question, kept as its own column:
  ``H0``: within every unit (every row, without units) the two strategies' decisions are
  exchangeable -- the pair ``(ŷ_A, ŷ_B)`` of its rows has the same joint law as ``(ŷ_B, ŷ_A)``
  given the unit's labels and groups.  Each unit's A and B decisions are swapped with
  probability 1/2 (stream ``child_seed(seed, 1)``; at count level a binomial number of each
  discordant cell or unit-type pool is swapped), and the p-value is
  :func:`faircode.stats.resampling.permutation_p_value` of ``|Δ|``.  It is exact for that null
  (rejection rate 0.012-0.054 at 0.05 in the bench), and it rejects where a mitigation mirrors
  a gap (``Δ = 0``, A's decisions not B's): it is not a test of ``Δ = 0``.
* **Units.**  Without units, or with one row per unit, the rows are the units and the row path
  runs (``design_effect`` 1.0); otherwise the unit path, and ``design_effect`` is the
  unit-bootstrap over the row-bootstrap variance of ``Δ`` (row stream ``child_seed(seed, 2)``).
* **Batched.**  :func:`paired_comparisons` draws each comparison's bootstrap and swaps, then
  inverts the intervals of every comparison at once (vectorised bisection), so a replicate's
  effects cost one pass.
* **Training replicates** (:func:`combine_replicates`): the K replicates' paired draws are pooled
  with equal weight per replicate, the mixture of ``faircode.evaluate.stability``, and the same
  interval is taken on the mixture (its piece from the mean of the replicates' estimates); the
  value is the mean effect over the replicates.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import clusters, resampling
from faircode.stats._paired_box import box_range, expanded_level
from faircode.stats._paired_counts import (
    EFFECT_METRICS,
    JOINT_CELLS,
    PERFORMANCE_EFFECTS,
    bootstrap_joint,
    component_draws,
    components,
    delta_draws,
    distance,
    joint_counts,
    marginal_counts,
    own_value,
    swap_counts,
    swap_draws,
    why_undefined,
)
from faircode.stats._paired_draws import (
    Comparison,
    PairedDraws,
    bootstrap_draws,
    check_count,
    paired_draws,
    prepare,
)
from faircode.stats._paired_interval import (
    NUISANCE_RATIO,
    SMOOTH_SHARE,
    EffectInterval,
    EffectTests,
    box_interval,
    effect_tests,
    interval_method,
)

__all__ = [
    "EFFECT_METRICS",
    "JOINT_CELLS",
    "NUISANCE_RATIO",
    "PERFORMANCE_EFFECTS",
    "SMOOTH_SHARE",
    "CombinedEffect",
    "Comparison",
    "EffectInterval",
    "EffectResult",
    "EffectTests",
    "PairedDraws",
    "box_interval",
    "box_range",
    "combine_replicates",
    "components",
    "distance",
    "effect_tests",
    "expanded_level",
    "interval_method",
    "joint_counts",
    "marginal_counts",
    "paired_comparison",
    "paired_comparisons",
    "paired_draws",
    "paired_effects",
    "swap_counts",
    "swap_draws",
]

Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class EffectResult:
    """One paired effect of A against B: ``Δ``, its interval (and method), its tests.

    ``p_value`` tests ``Δ = 0`` by inverting the interval; ``swap_p_value`` is the swap test of
    exchangeable decisions; ``equivalence_p_value`` tests ``|Δ| ≥ δ`` (NaN without a margin).
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
    swap_p_value: float
    equivalence_p_value: float
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
            check_count("EffectResult", name, getattr(self, name))
        for name in ("p_value", "swap_p_value"):
            p = getattr(self, name)
            if np.isnan(self.value) != np.isnan(p):
                raise ValueError(f"EffectResult({self.metric}): {name} must be NaN exactly when "
                                 "value is NaN")
            if not np.isnan(p) and not 0.0 < p <= 1.0:
                raise ValueError(f"EffectResult: {name}: expected (0, 1], got {describe(p)}")

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of no change (NaN: no)."""
        return bool(self.ci_low > 0 or self.ci_high < 0)


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
    margins: Mapping[str, float] | None = None,
) -> tuple[EffectResult, ...]:
    """Every effect of A (``y_pred_a``) against B (``y_pred_b``) on the same rows.

    In :data:`EFFECT_METRICS` order.  Labels and decisions must be oriented (1 = favourable);
    ``units`` (one id per row) declares repeated units; ``margins`` (metric -> ``δ``) the
    equivalence margins.  Streams: ``child_seed(seed, 0)`` the paired bootstrap
    (:func:`paired_draws`), ``(seed, 1)`` the swap test, ``(seed, 2)`` the row bootstrap of the
    design effect (module docstring).
    """
    return paired_comparison(y_true, y_pred_a, y_pred_b, disadvantaged, seed=seed, units=units,
                             n_resamples=n_resamples, n_permutations=n_permutations,
                             confidence=confidence, margins=margins)[0]


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
    margins: Mapping[str, float] | None = None,
) -> tuple[tuple[EffectResult, ...], PairedDraws]:
    """:func:`paired_effects` and the :class:`PairedDraws` behind them, from one bootstrap.

    The draws are those of :func:`paired_draws` for the same arguments, so a caller that also
    combines training replicates (:func:`combine_replicates`) resamples each comparison once.
    """
    [out] = paired_comparisons(
        [Comparison(y_true, y_pred_a, y_pred_b, disadvantaged, seed, units)],
        n_resamples=n_resamples, n_permutations=n_permutations, confidence=confidence,
        margins=margins)
    return out


def paired_comparisons(
    comparisons: Sequence[Comparison],
    *,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    margins: Mapping[str, float] | None = None,
) -> list[tuple[tuple[EffectResult, ...], PairedDraws]]:
    """:func:`paired_comparison` of every comparison, their intervals inverted together.

    Each comparison's draws, swaps and design effect come from its own seed, so the results are
    those of one call per comparison, bit for bit.
    """
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    prepared = [prepare(c) for c in comparisons]
    draws = [bootstrap_draws(joint, types, n_resamples, c.seed)
             for c, (joint, types) in zip(comparisons, prepared, strict=True)]
    tests = effect_tests(draws, confidence=confidence, margins=margins)
    out = []
    for k, (c, (joint, types), d) in enumerate(zip(comparisons, prepared, draws, strict=True)):
        value = d.value
        swap = _swap_p_values(value, joint, types, n_permutations, c.seed)
        deff = np.ones(len(EFFECT_METRICS))
        if types is not None:
            rng = np.random.default_rng(child_seed(c.seed, 2))
            rows = delta_draws(*component_draws(bootstrap_joint(joint, None, n_resamples, rng)))
            unit_delta = d.delta
            deff = np.array([clusters.design_effect(unit_delta[m], rows[m])
                             for m in range(len(EFFECT_METRICS))])
        out.append((_results(k, joint, types, d, tests, swap, deff), d))
    return out


def _results(k: int, joint: NDArray[np.int64], types: clusters.UnitTypes | None,
             draws: PairedDraws, tests: EffectTests, swap: list[float],
             deff: Floats) -> tuple[EffectResult, ...]:
    """Comparison ``k``'s :class:`EffectResult` rows (NaN numbers where an effect is undefined)."""
    counts_a, counts_b = marginal_counts(joint)
    n_d, n_a = int(joint[0].sum()), int(joint[1].sum())
    n_units = n_d + n_a if types is None else types.n_units
    value, nan = draws.value, float("nan")
    results = []
    for m, metric in enumerate(EFFECT_METRICS):
        ok = bool(np.isfinite(value[m]))

        def num(x: float, ok: bool = ok) -> float:
            return float(x) if ok else nan

        results.append(EffectResult(
            metric, num(value[m]), num(tests.low[k, m]), num(tests.high[k, m]),
            tests.method(k, m) if ok else interval_method(metric), num(tests.p_value[k, m]),
            swap[m], num(tests.equivalence_p_value[k, m]), own_value(metric, counts_a),
            own_value(metric, counts_b), n_d, n_a, n_units, float(deff[m]),
            "" if ok else why_undefined(metric, counts_a, counts_b)))
    return tuple(results)


def _swap_p_values(value: Floats, joint: NDArray[np.int64], types: clusters.UnitTypes | None,
                   n_permutations: int, seed: int | np.random.SeedSequence) -> list[float]:
    """The swap test's p-value of every effect from ``child_seed(seed, 1)`` (NaN if undefined)."""
    rng = np.random.default_rng(child_seed(seed, 1))
    swapped = swap_draws(joint, n_permutations=n_permutations, rng=rng, types=types)
    permuted = delta_draws(*component_draws(swapped))
    return [resampling.permutation_p_value(v, permuted[k]) if np.isfinite(v) else float("nan")
            for k, v in enumerate(value)]


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
        check_count("CombinedEffect", "replicates", self.replicates)
        check_count("CombinedEffect", "n_defined", self.n_defined)
        if self.n_defined > self.replicates:
            raise ValueError(f"CombinedEffect: n_defined: expected at most {self.replicates}, "
                             f"got {describe(self.n_defined)}")


def combine_replicates(
    draws: Sequence[PairedDraws], *, confidence: float
) -> tuple[CombinedEffect, ...]:
    """Combine K replicates' paired draws of the same comparison (module docstring).

    The interval is the paired interval (:func:`effect_tests`) of the mixture of the replicates'
    draws (pooled with equal weight, ``faircode.evaluate.stability``'s mixture), its piece chosen
    from the mean of the replicates' component estimates; ``mean`` and ``sd_between``
    (``ddof=1``, NaN below two) are over the replicates where the effect is defined;
    ``sign_flips`` says some replicate's effect is above 0 and another's below.
    """
    if not draws:
        raise ValueError("combine_replicates: draws: expected at least one replicate, got none")
    sizes = {d.n_resamples for d in draws}
    if len(sizes) > 1:
        raise ValueError(f"combine_replicates: draws: expected the same number of draws in "
                         f"every replicate, got {sorted(sizes)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # undefined in every replicate: NaN
        est_a = np.nanmean(np.stack([d.estimate_a for d in draws]), axis=0)
        est_b = np.nanmean(np.stack([d.estimate_b for d in draws]), axis=0)
    pooled = PairedDraws(est_a, est_b, np.concatenate([d.draws_a for d in draws], axis=-1),
                         np.concatenate([d.draws_b for d in draws], axis=-1),
                         min(d.n_units for d in draws))
    tests = effect_tests([pooled], confidence=confidence)
    values = np.stack([d.value for d in draws])  # (K, M)
    finite = np.isfinite(values)
    out = []
    for k, metric in enumerate(EFFECT_METRICS):
        v = values[finite[:, k], k]
        defined = v.size > 0
        out.append(CombinedEffect(
            metric, float(v.mean()) if defined else float("nan"),
            float(v.std(ddof=1)) if v.size >= 2 else float("nan"),
            float(tests.low[0, k]) if defined else float("nan"),
            float(tests.high[0, k]) if defined else float("nan"),
            tests.method(0, k) if defined else interval_method(metric), len(draws),
            int(v.size), bool((v > 0).any() and (v < 0).any())))
    return tuple(out)
