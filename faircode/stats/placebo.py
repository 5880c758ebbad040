"""A between-group swap against its placebo: the difference, its paired interval, tests, verdict.

For one (axis, kind) the **between** arm holds the pairs of the axis's own swaps (a White name
for a Black one) and the **placebo** arm the swaps within its declared groups (a White name for
another White name; :mod:`faircode.counterfactual.placebo`).  For any per-pair measure -- a flip
at an operating point (0/1), the absolute score change (the CTF gap's ``|d|``), the signed score
change (the shift's ``d``) -- :func:`placebo_differences` returns each arm's mean, their
difference ``Δ = between − placebo`` and what the data say about it.

Design decisions
----------------
* **Paired by unit.**  Both arms are measured on sentences of the same template frames, so one
  cluster bootstrap draws the frames once for both (``n_resamples`` multinomial weights of the
  units, a ratio of sums per arm: a draw costs ``B × units``, whatever the number of pairs);
  the frames' shared effect cancels in ``Δ``, which is what makes the difference sharper than
  two separate intervals.
* **The interval** is the expanded percentile interval of the draws of ``Δ`` (the paired
  effects' own, :func:`faircode.stats._paired_interval.expanded_levels`: the percentile level
  widened for the number of units, which matters with 32 frames), and the **test** of
  ``Δ = 0`` inverts it: the smallest ``a`` at which the ``1 − a`` interval excludes 0, so
  ``p ≤ 1 − confidence`` exactly when the interval excludes 0.  The **equivalence test** of
  ``|Δ| ≥ margin`` inverts it likewise (the smallest ``a`` whose ``1 − 2a`` interval lies
  inside ``±margin``).  Coverage on a simulated system with a known effect:
  ``bench/placebo_coverage.py`` and ``tests/test_placebo.py``.
* **Verdicts** (:class:`PlaceboVerdict`) read the difference, never the raw rate: ``above``
  (the swap moves more than its placebo: significant in the family, interval above 0),
  ``below``, ``within_margin`` (equivalence significant, no difference shown), ``inconclusive``,
  ``uninformative`` (no placebo arm, or an undefined difference) -- the same rule as the paired
  effects' (:func:`faircode.stats.verdicts.effect_verdicts`).
* A measure that is 0 on every pair of both arms (nothing flipped, no score moved) has
  ``Δ = 0`` exactly and no test of ``Δ = 0`` (p NaN, ``moved`` False: left out of a family, as
  the flip-direction test is when nothing flipped); its equivalence test holds.
* A pair's unit is its original sentence's; without units every pair is its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core.checks import check_confidence, check_positive_int
from faircode.core.seeds import child_seed
from faircode.stats._paired_interval import SortedDraws, expanded_levels
from faircode.stats.resampling import draw_blocks
from faircode.stats.verdicts import EffectVerdict, effect_verdicts

__all__ = ["NO_PLACEBO", "PlaceboDifference", "PlaceboVerdict", "placebo_differences",
           "placebo_verdicts"]

Floats = NDArray[np.float64]
NO_PLACEBO = "no_placebo_pairs"
"""The note of a comparison without placebo pairs (or without between pairs)."""
_BISECTIONS = 24


class PlaceboVerdict(StrEnum):
    """What the difference between a swap and its placebo shows (module docstring)."""

    ABOVE = "above_placebo"
    BELOW = "below_placebo"
    WITHIN_MARGIN = "within_margin"
    INCONCLUSIVE = "inconclusive"
    UNINFORMATIVE = "uninformative"


_FROM_EFFECT = {EffectVerdict.INCREASED.value: PlaceboVerdict.ABOVE.value,
                EffectVerdict.REDUCED.value: PlaceboVerdict.BELOW.value,
                EffectVerdict.NO_CHANGE.value: PlaceboVerdict.WITHIN_MARGIN.value,
                EffectVerdict.INCONCLUSIVE.value: PlaceboVerdict.INCONCLUSIVE.value,
                EffectVerdict.UNINFORMATIVE.value: PlaceboVerdict.UNINFORMATIVE.value}


@dataclass(frozen=True, slots=True)
class PlaceboDifference:
    """Per measure (arrays of length ``k``): each arm's mean and interval, ``Δ``, its interval and
    both p-values; and the arms' pairs and the units."""

    between: Floats
    between_low: Floats
    between_high: Floats
    placebo: Floats
    placebo_low: Floats
    placebo_high: Floats
    difference: Floats
    ci_low: Floats
    ci_high: Floats
    p_value: Floats
    equivalence_p_value: Floats
    n_between: int
    n_placebo: int
    n_units: int
    note: str = ""
    moved: NDArray[np.bool_] | None = None
    """Per measure: whether any pair of either arm is non-zero (else p is NaN)."""


def _measures(name: str, values: ArrayLike, n: int) -> Floats:
    """``values`` as ``(n, k)`` (a 1-D array is one measure); a row count other than ``n``
    is a ``ValueError``."""
    array = np.asarray(values, dtype=np.float64)
    array = array[:, None] if array.ndim == 1 else array
    if array.ndim != 2 or array.shape[0] != n:
        raise ValueError(f"{name}_values: expected {n} rows (one per pair), got shape "
                         f"{array.shape}")
    return array


def _unit_sums(units: NDArray[np.int64], values: Floats, n_units: int) -> tuple[Floats, Floats]:
    """Per unit: the number of pairs and the sums of each measure (``(U,)``, ``(U, k)``)."""
    size = np.bincount(units, minlength=n_units).astype(np.float64)
    sums = np.zeros((n_units, values.shape[1]))
    for j in range(values.shape[1]):
        sums[:, j] = np.bincount(units, weights=values[:, j], minlength=n_units)
    return size, sums


def _ratio(weights: Floats, size: Floats, sums: Floats) -> Floats:
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = weights @ size
        return np.where(denominator[:, None] > 0, (weights @ sums) / denominator[:, None],
                        np.nan)


def _invert(holds: Callable[[Floats], NDArray[np.bool_]], *, shape: tuple[int, ...],
            n_draws: int, cut: float | None, top: float) -> Floats:
    """``inf {a : holds(a)}`` for a monotone ``holds``, by bisection in log ``a`` on
    ``[1 / (B + 1), top]``; ``cut`` tested first, so the answer is on its right side exactly."""
    lo, hi = np.full(shape, 1.0 / (n_draws + 1.0)), np.full(shape, top)
    if cut is not None:
        at = holds(np.full(shape, cut))
        lo, hi = np.where(at, np.minimum(lo, cut), cut), np.where(at, cut, hi)
    never, done = ~holds(hi), holds(lo)
    for _ in range(_BISECTIONS):
        mid = np.sqrt(lo * hi)
        yes = holds(mid)
        lo, hi = np.where(yes, lo, mid), np.where(yes, mid, hi)
    return np.where(done, lo, np.where(never, 1.0, hi))


def placebo_differences(
    between_units: ArrayLike,
    between_values: ArrayLike,
    placebo_units: ArrayLike,
    placebo_values: ArrayLike,
    *,
    n_resamples: int,
    seed: int | np.random.SeedSequence,
    confidence: float = 0.95,
    margin: float = 0.05,
) -> PlaceboDifference:
    """Each arm's mean of every measure (columns of ``*_values``, one row per pair), their
    difference, its paired cluster-bootstrap interval and the tests of ``Δ = 0`` and of
    ``|Δ| ≥ margin`` (module docstring).  ``*_units``: each pair's unit id (any hashable
    labels, shared between the arms).  The draws come from ``seed``'s child 0."""
    check_positive_int("n_resamples", n_resamples)
    check_confidence(confidence)
    ub, up = np.asarray(between_units), np.asarray(placebo_units)
    vb, vp = _measures("between", between_values, ub.size), _measures("placebo", placebo_values,
                                                                       up.size)
    if vb.shape[1] != vp.shape[1]:
        raise ValueError(f"between_values, placebo_values: expected one number of measures, got "
                         f"{vb.shape[1]} and {vp.shape[1]}")
    k = vb.shape[1]
    labels, inverse = np.unique(np.concatenate([ub, up]), return_inverse=True)
    n_units = int(labels.size)
    if ub.size == 0 or up.size == 0 or n_units < 2:
        nan = np.full(k, math.nan)
        return PlaceboDifference(*(nan,) * 11, int(ub.size), int(up.size), n_units, NO_PLACEBO)
    inverse = inverse.reshape(-1).astype(np.int64)
    size_b, sums_b = _unit_sums(inverse[:ub.size], vb, n_units)
    size_p, sums_p = _unit_sums(inverse[ub.size:], vp, n_units)
    mean_b, mean_p = sums_b.sum(0) / size_b.sum(), sums_p.sum(0) / size_p.sum()
    rng = np.random.default_rng(child_seed(seed, 0))
    draws_b, draws_p = [], []
    for block in draw_blocks(n_resamples, n_units):
        weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units),
                                  size=block).astype(np.float64)
        draws_b.append(_ratio(weights, size_b, sums_b))
        draws_p.append(_ratio(weights, size_p, sums_p))
    arm_b, arm_p = np.concatenate(draws_b).T, np.concatenate(draws_p).T  # (k, B)
    delta = SortedDraws.of(arm_b - arm_p)

    def bounds(level: Floats) -> tuple[Floats, Floats]:
        return delta.bounds(expanded_levels(level, n_units))

    def excludes(a: Floats) -> NDArray[np.bool_]:
        low, high = bounds(1.0 - a)
        return (low > 0) | (high < 0)

    def inside(a: Floats) -> NDArray[np.bool_]:
        low, high = bounds(1.0 - 2.0 * a)
        return (low > -margin) & (high < margin)

    level = np.full(k, confidence)
    low, high = bounds(level)
    b_low, b_high = SortedDraws.of(arm_b).bounds(expanded_levels(level, n_units))
    p_low, p_high = SortedDraws.of(arm_p).bounds(expanded_levels(level, n_units))
    p = _invert(excludes, shape=(k,), n_draws=n_resamples, cut=1.0 - confidence, top=1.0)
    eq = _invert(inside, shape=(k,), n_draws=n_resamples, cut=None, top=0.5)
    undefined = np.isnan(low)
    moved = np.any(vb != 0, axis=0) | np.any(vp != 0, axis=0)
    return PlaceboDifference(mean_b, b_low, b_high, mean_p, p_low, p_high, mean_b - mean_p,
                             low, high, np.where(undefined | ~moved, np.nan, p),
                             np.where(undefined, np.nan, eq), int(ub.size), int(up.size),
                             n_units, moved=moved)


def placebo_verdicts(ci_low: ArrayLike, ci_high: ArrayLike, *, significant: ArrayLike,
                     equivalent: ArrayLike, informative: ArrayLike) -> NDArray[np.str_]:
    """The :class:`PlaceboVerdict` of every difference (elementwise; the paired effects' rule)."""
    words = effect_verdicts(ci_low, ci_high, significant=significant, equivalent=equivalent,
                            informative=informative)
    return np.array([_FROM_EFFECT[str(w)] for w in words], dtype=np.str_)
