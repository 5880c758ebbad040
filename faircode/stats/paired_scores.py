"""Paired counterfactual scores: the CTF gap, the mean score shift and the direction of flips.

Each changed payload and its counterfactual copy are scored by the same model; ``d = f(x') −
f(x)`` is the pair's score change.  Everything here works on plain arrays (scores, decisions,
unit ids) from any scorer.

* **CTF gap** (Garg et al., "Counterfactual Fairness in Text Classification through Robustness",
  AIES 2019): ``mean |d|`` over the changed pairs -- how far the edit moves the score, in either
  direction.  **Shift**: ``mean d`` -- whether it moves it one way (positive: the copy scores
  higher, e.g. more toxic).
* **Units.**  Pairs of one unit (a template frame: "Being ⟦·⟧ is wonderful." with any term, any
  name) are not independent, so every resample and permutation works on whole units: a pair
  without a unit is its own unit.  Per unit only three numbers are needed (its pairs, ``Σ|d|``,
  ``Σd``), so B resamples cost ``B × units``, whatever the number of pairs.
* **Intervals**: the cluster (unit) percentile bootstrap with ``n_resamples`` draws (units drawn
  with replacement at their own number; a ratio of sums, so units of different sizes weigh by
  their pairs).
* **Test of no shift** (``p_value``): the cluster sign-flip test (NaN, note
  ``no_score_change``, when no pair's score moved: nothing to test).  Under "the copy and the
  original are exchangeable" every unit's ``Σd`` is as likely to have either sign, so ``|Σd|``
  is compared with ``n_permutations`` draws of ``|Σ ±Σd_u|``; ``p = (1 + hits) / (1 + P)``.
  The gap itself has no such test (``|d|`` has no sign to flip; a deterministic model with one
  non-zero ``d`` has a non-zero gap), it is reported with its interval.
* **Direction of flips** (:func:`flip_direction`): whether decisions flip more often one way.
  Without repeated units it is McNemar's exact test (the flips to positive among all flips are
  Binomial(flips, ½) under exchangeability; two-sided, ``scipy.stats.binomtest``); with units,
  the cluster sign-flip test of the units' net flips.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core.checks import as_binary, as_mask, check_confidence, check_positive_int
from faircode.core.seeds import child_seed
from faircode.stats.resampling import draw_blocks, percentile_interval, permutation_p_value

__all__ = ["NO_CHANGE", "NO_CHANGED_PAIRS", "GapResult", "counterfactual_gap", "flip_direction"]

NO_CHANGED_PAIRS = "no_changed_rows"
"""The note of a comparison with no changed pair (every statistic NaN)."""
NO_CHANGE = "no_score_change"
"""The note of pairs whose scores all stayed the same: gap and shift 0, no test (p NaN)."""
Seed = int | np.random.SeedSequence


@dataclass(frozen=True, slots=True)
class GapResult:
    """The CTF gap and shift of one set of pairs, their intervals and the shift's test."""

    n_pairs: int
    n_units: int
    gap: float
    gap_low: float
    gap_high: float
    shift: float
    shift_low: float
    shift_high: float
    p_value: float
    note: str = ""


def _units(units: ArrayLike | None, n: int) -> tuple[NDArray[np.int64], int]:
    """Unit ids ``0..U-1`` per pair (each pair its own unit without ``units``) and ``U``."""
    if units is None:
        return np.arange(n, dtype=np.int64), n
    u = np.asarray(units)
    if u.shape != (n,):
        raise ValueError(f"units: expected {n} unit ids, got shape {u.shape}")
    _, inverse = np.unique(u, return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int64)
    return inverse, int(inverse.max()) + 1 if n else 0


def _scores(name: str, values: ArrayLike) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of scores, got ndim={array.ndim}")
    if not np.isfinite(array).all():
        where = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(f"{name}[{where}]: expected a finite score, got {array[where]}")
    return array


def _bootstrap(sizes: NDArray[np.float64], sums: NDArray[np.float64], n_resamples: int,
               rng: np.random.Generator) -> NDArray[np.float64]:
    """``n_resamples`` cluster-bootstrap draws of ``Σ sums / Σ sizes`` per column of ``sums``
    (shape ``(U, k)``): units drawn with replacement, ``U`` of them per draw."""
    n_units = sizes.size
    out = []
    for block in draw_blocks(n_resamples, n_units):
        weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=block)
        weights = weights.astype(np.float64)
        out.append((weights @ sums) / (weights @ sizes)[:, None])
    return np.concatenate(out)


def _sign_flip(sums: NDArray[np.float64], n_permutations: int,
               rng: np.random.Generator) -> NDArray[np.float64]:
    """``|Σ ε_u · sums_u|`` for ``n_permutations`` draws of independent random signs ``ε``."""
    out = []
    for block in draw_blocks(n_permutations, sums.size):
        signs = rng.integers(0, 2, size=(block, sums.size), dtype=np.int8) * 2 - 1
        out.append(np.abs(signs @ sums))
    return np.concatenate(out)


def counterfactual_gap(
    original: ArrayLike,
    copy: ArrayLike,
    *,
    units: ArrayLike | None = None,
    n_resamples: int,
    n_permutations: int,
    seed: Seed,
    confidence: float = 0.95,
) -> GapResult:
    """The CTF gap ``mean|f(x') − f(x)|`` and shift ``mean(f(x') − f(x))`` of changed pairs.

    Parameters
    ----------
    original, copy
        Scores of each changed payload and of its copy (1-D, one length, finite).
    units
        Optional unit id per pair (see the module docstring).
    n_resamples, n_permutations
        Cluster bootstrap draws (both intervals) and sign-flip draws (the shift's p-value).
    seed
        The comparison's seed; the bootstrap draws from its child 0, the test from child 1.
    """
    a, b = _scores("original", original), _scores("copy", copy)
    if a.shape != b.shape:
        raise ValueError(f"original, copy: expected one length, got {a.size} and {b.size}")
    check_positive_int("n_resamples", n_resamples)
    check_positive_int("n_permutations", n_permutations)
    check_confidence(confidence)
    if a.size == 0:
        nan = math.nan
        return GapResult(0, 0, nan, nan, nan, nan, nan, nan, nan, NO_CHANGED_PAIRS)
    d = b - a
    unit, n_units = _units(units, d.size)
    sizes = np.bincount(unit, minlength=n_units).astype(np.float64)
    sums = np.stack([np.bincount(unit, weights=np.abs(d), minlength=n_units),
                     np.bincount(unit, weights=d, minlength=n_units)], axis=1).astype(np.float64)
    draws = _bootstrap(sizes, sums, n_resamples,
                       np.random.default_rng(child_seed(seed, 0)))
    gap_low, gap_high = percentile_interval(draws[:, 0], confidence=confidence)
    shift_low, shift_high = percentile_interval(draws[:, 1], confidence=confidence)
    if not np.any(d):  # no pair moved: the test has nothing to tell apart
        return GapResult(int(d.size), n_units, 0.0, gap_low, gap_high, 0.0, shift_low,
                         shift_high, math.nan, NO_CHANGE)
    flipped = _sign_flip(sums[:, 1], n_permutations, np.random.default_rng(child_seed(seed, 1)))
    p = permutation_p_value(float(sums[:, 1].sum()), flipped)
    return GapResult(int(d.size), n_units, float(np.abs(d).mean()), gap_low, gap_high,
                     float(d.mean()), shift_low, shift_high, p)


def flip_direction(
    before: ArrayLike,
    after: ArrayLike,
    changed: ArrayLike,
    *,
    units: ArrayLike | None = None,
    n_permutations: int,
    seed: Seed,
) -> float:
    """Two-sided p-value of "flips to 1 and flips to 0 are equally likely" among changed rows.

    McNemar's exact binomial test when no unit repeats among the changed rows (no ``units``, or
    one changed row per unit), else the cluster sign-flip test of the units' net flips with
    ``n_permutations`` draws from ``seed``.  NaN when nothing flipped (the test has nothing to
    tell apart, so it is left out of a family) or no row changed.
    """
    b, a = as_binary("before", before), as_binary("after", after)
    mask = as_mask("changed", changed)
    if not b.shape == a.shape == mask.shape:
        raise ValueError(f"before, after, changed: expected one length, got {b.size}, {a.size}, "
                         f"{mask.size}")
    check_positive_int("n_permutations", n_permutations)
    if not mask.any():
        return math.nan
    net = a[mask].astype(np.int64) - b[mask]
    up, down = int(np.count_nonzero(net > 0)), int(np.count_nonzero(net < 0))
    if up + down == 0:
        return math.nan
    unit, n_units = _units(None if units is None else np.asarray(units)[mask], net.size)
    if n_units == net.size:  # every changed row its own unit: exact McNemar
        return float(sps.binomtest(up, up + down, 0.5).pvalue)
    per_unit = np.bincount(unit, weights=net, minlength=n_units).astype(np.float64)
    flipped = _sign_flip(per_unit, n_permutations, np.random.default_rng(child_seed(seed, 0)))
    return permutation_p_value(float(per_unit.sum()), flipped)
