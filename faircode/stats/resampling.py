"""Resampling engine: exact, vectorised bootstrap and permutation on confusion counts.

Every group-fairness metric faircode reports is a function of the two groups' 2×2 (y, ŷ)
confusion counts, stored as a length-4 integer vector in the cell order
``(TN, FP, FN, TP)`` (cell index ``2 * y + ŷ``; see :data:`CELLS`).  That makes two exact
shortcuts possible, and this module implements both:

* **Bootstrap** — resampling a group's rows with replacement at its own size is the same, in
  distribution, as drawing its four cell counts from a multinomial with the observed cell
  proportions.  :func:`bootstrap_counts` draws all resamples at once, at a cost independent of
  the number of rows.
* **Permutation** — shuffling group labels among the rows of a stratum (all rows, the ``y = 1``
  rows, ...) leaves the stratum's pooled cell counts fixed and hands the disadvantaged group a
  multivariate-hypergeometric draw of them.  :func:`permute_counts` draws every permutation at
  once, one stratum at a time (at most two strata).

Design decisions
----------------
* Randomness only from explicit :class:`numpy.random.Generator` objects built from
  :func:`child_seed`, which derives a child :class:`~numpy.random.SeedSequence` by *appending* a
  key to the parent's ``spawn_key`` without mutating it (unlike ``SeedSequence.spawn``).  A
  stream therefore depends only on (master seed, key), never on the order or number of workers.
* :func:`permutation_p_value` is two-sided on a non-negative statistic ``|T|`` and counts a
  permuted ``|T*|`` as at least as extreme when ``|T*| >= |T| * (1 - 1e-9)``
  (:data:`TIE_RTOL`): rates that are equal as rationals can differ by an ulp after subtraction,
  and such floating-point ties must count as ties.  ``p = (1 + hits) / (1 + P)`` is never 0.
* :func:`percentile_interval` drops resamples in which the statistic is undefined (NaN, e.g. a
  tiny group whose ``y = 1`` subset was drawn empty) and takes the percentile interval of the
  rest; the row-level reference in ``tests/reference.py`` does the same.
* AUC uses DeLong's variance (one O(n log n) ranking pass) and a normal interval clipped to
  [0, 1], so no resample loop is needed at all.
* Closed-form score intervals for proportions, vectorised over any leading axes of counts:
  :func:`wilson_interval` (one proportion), :func:`newcombe_interval` (a difference of two
  independent proportions, Newcombe's 1998 hybrid score method 10), :func:`mover_interval`
  (any linear contrast of independent proportions: the MOVER-Wilson generalisation of method 10,
  used for the intersectional interaction) and :func:`katz_ratio_interval` (a ratio of two
  proportions, Katz's log method).  They do not collapse to a point at 0 or all successes and
  keep nominal coverage on groups of a few dozen rows, where the percentile bootstrap does not
  (``bench/coverage.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core.checks import check_confidence

__all__ = [
    "CELLS",
    "TIE_RTOL",
    "benjamini_hochberg",
    "bootstrap_counts",
    "check_confidence",
    "confusion_counts",
    "delong_auc",
    "draw_blocks",
    "katz_ratio_interval",
    "mover_interval",
    "newcombe_interval",
    "percentile_interval",
    "permutation_p_value",
    "permute_counts",
    "wilson_interval",
    "z_quantile",
]

CELLS: tuple[str, ...] = ("TN", "FP", "FN", "TP")
"""Names of the four confusion cells in storage order; cell index is ``2 * y + ŷ``."""

TIE_RTOL: float = 1e-9
"""Relative tolerance under which a permuted statistic counts as tying the observed one."""


DRAW_CELLS = 4_000_000
"""Draws held at once (resamples x unit types: 32 MB of int64), :func:`draw_blocks`."""


def draw_blocks(n: int, width: int) -> list[int]:
    """Sizes of the blocks ``n`` draws over ``width`` unit types are taken in (each at most
    ``DRAW_CELLS // width`` draws), so no ``(n, width)`` array is ever held at once.

    Drawing block after block gives the same numbers as one call of ``size=n``: numpy's
    ``multinomial``, ``multivariate_hypergeometric`` and ``binomial`` take draw after draw from
    the generator, so ``size=k`` calls in order consume it exactly as one ``size=n`` call does
    (``tests/test_clusters.py``).  Small bounded ``integers`` (the text audits' sign flips)
    buffer bits within one call, so theirs do depend on the block sizes.  The number of
    distinct unit types grows with a log (rare long units are each their own type), so whole,
    the unit bootstrap and permutation of a 10⁸-row log would hold gigabytes.
    """
    per = max(1, DRAW_CELLS // max(1, width))
    return [min(per, n - b) for b in range(0, n, per)]


def confusion_counts(y_true: ArrayLike, y_pred: ArrayLike) -> NDArray[np.int64]:
    """Count the (TN, FP, FN, TP) cells of validated 0/1 arrays in one O(n) pass."""
    cells = 2 * np.asarray(y_true, dtype=np.int64) + np.asarray(y_pred, dtype=np.int64)
    return np.bincount(cells, minlength=4).astype(np.int64)


def bootstrap_counts(
    counts: NDArray[np.int64], *, n_resamples: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Draw ``n_resamples`` bootstrap resamples of one group's cell counts, shape ``(B, 4)``.

    A resample of ``n`` rows with replacement has multinomial cell counts with the observed
    cell proportions; an empty group yields all-zero resamples without touching ``rng``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros((n_resamples, counts.shape[-1]), dtype=np.int64)
    draws = rng.multinomial(total, counts / total, size=n_resamples)
    return np.asarray(draws, dtype=np.int64)


def permute_counts(
    counts_d: NDArray[np.int64],
    counts_a: NDArray[np.int64],
    *,
    strata: Sequence[Sequence[int]],
    n_permutations: int,
    rng: np.random.Generator,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Draw group-label permutations within each stratum as cell counts, two ``(P, 4)`` arrays.

    Within a stratum (a set of cell indices, e.g. ``(2, 3)`` for the ``y = 1`` rows) the group
    labels are shuffled: the disadvantaged group keeps its stratum size and receives a
    multivariate-hypergeometric draw of the pooled cells; the advantaged group gets the rest.
    Cells outside every stratum keep their observed counts.
    """
    counts_d = np.asarray(counts_d, dtype=np.int64)
    counts_a = np.asarray(counts_a, dtype=np.int64)
    pooled = counts_d + counts_a
    out_d = np.tile(counts_d, (n_permutations, 1))
    out_a = np.tile(counts_a, (n_permutations, 1))
    for stratum in strata:
        index = np.asarray(stratum, dtype=np.intp)
        colors = pooled[index]
        draws = rng.multivariate_hypergeometric(
            colors, int(counts_d[index].sum()), size=n_permutations
        )
        out_d[:, index] = draws
        out_a[:, index] = colors - draws
    return out_d, out_a


def percentile_interval(samples: ArrayLike, *, confidence: float) -> tuple[float, float]:
    """Return the percentile interval of the finite bootstrap ``samples`` at ``confidence``.

    NaN resamples (statistic undefined in that resample) are dropped; with no finite resample
    the interval is ``(nan, nan)``.  Quantiles use numpy's default linear interpolation.
    """
    check_confidence(confidence)
    values = np.asarray(samples, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return (float("nan"), float("nan"))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return (float(low), float(high))


def permutation_p_value(observed: float, permuted: ArrayLike, *, rtol: float = TIE_RTOL) -> float:
    """Return the two-sided permutation p-value ``(1 + #{|T*| >= |T|}) / (1 + P)``.

    ``observed`` and ``permuted`` are taken in absolute value; ``|T*|`` ties ``|T|`` within the
    relative tolerance ``rtol``.  NaN permuted values never count; a NaN observed gives NaN.
    """
    stat = abs(float(observed))
    if np.isnan(stat):
        return float("nan")
    values = np.abs(np.asarray(permuted, dtype=np.float64))
    threshold = stat * (1.0 - rtol)
    hits = int(np.count_nonzero(values >= threshold))
    return (1.0 + hits) / (1.0 + values.size)


def benjamini_hochberg(p_values: ArrayLike) -> NDArray[np.float64]:
    """Return Benjamini–Hochberg q-values; NaN p-values stay NaN and are excluded from m.

    The q-values are monotone in p and capped at 1 (``scipy.stats.false_discovery_control``).
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"benjamini_hochberg: p_values: expected a 1-D array, got ndim={p.ndim}")
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0.0) | (p[finite] > 1.0)):
        raise ValueError("benjamini_hochberg: p_values: expected values in [0, 1] or NaN")
    q = np.full(p.shape, np.nan)
    if finite.any():
        q[finite] = sps.false_discovery_control(p[finite], method="bh")
    return q


def delong_auc(y_true: ArrayLike, y_score: ArrayLike) -> tuple[float, float]:
    """Return the AUC and its DeLong variance from one midrank pass (O(n log n)).

    With ``m`` positives and ``n`` negatives, the structural components are
    ``V10_i = (R_i - R^+_i) / n`` for positive ``i`` (``R`` the midrank among all scores,
    ``R^+`` among positives) and ``V01_j = 1 - (R_j - R^-_j) / m`` for negative ``j``; the AUC
    is ``mean(V10)`` and its variance ``var(V10) / m + var(V01) / n``.  Either class with fewer
    than two rows gives a NaN variance; either class empty gives a NaN AUC.
    """
    y = np.asarray(y_true, dtype=bool)
    s = np.asarray(y_score, dtype=np.float64)
    m = int(y.sum())
    n = y.size - m
    if m == 0 or n == 0:
        return (float("nan"), float("nan"))
    rank_all = sps.rankdata(s)
    v10 = (rank_all[y] - sps.rankdata(s[y])) / n
    v01 = 1.0 - (rank_all[~y] - sps.rankdata(s[~y])) / m
    auc = float(v10.mean())
    if m < 2 or n < 2:
        return (auc, float("nan"))
    variance = float(v10.var(ddof=1) / m + v01.var(ddof=1) / n)
    return (auc, variance)


def z_quantile(confidence: float) -> float:
    """Return the two-sided standard-normal quantile ``Φ⁻¹(1/2 + confidence/2)`` (1.96 at 95 %)."""
    check_confidence(confidence)
    return float(sps.norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return the Wilson score interval of ``successes / trials``, elementwise (NaN if trials 0).

    ``centre = (x + z²/2) / (n + z²)`` and ``half = z·sqrt(x(n − x)/n + z²/4) / (n + z²)``.
    """
    z = z_quantile(confidence)
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = (x + z * z / 2.0) / (n + z * z)
        half = z * np.sqrt(np.maximum(x * (n - x), 0.0) / n + z * z / 4.0) / (n + z * z)
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def mover_interval(
    successes: ArrayLike, trials: ArrayLike, weights: Sequence[float], *, confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return the MOVER-Wilson interval of ``Σ_j w_j · x_j / n_j`` over the last axis.

    With ``θ_j = w_j p_j`` and ``[l_j, u_j]`` the Wilson interval of ``w_j p_j`` (limits swapped
    for a negative weight), ``L = Σθ − sqrt(Σ(θ_j − l_j)²)`` and ``U = Σθ + sqrt(Σ(u_j − θ_j)²)``
    (Zou & Donner 2008).  For weights ``(1, −1)`` this is Newcombe's hybrid score interval.
    """
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    lo, hi = wilson_interval(x, n, confidence=confidence)
    p = _safe_rate(x, n)
    theta = w * p
    lower_j = np.where(w >= 0, w * lo, w * hi)
    upper_j = np.where(w >= 0, w * hi, w * lo)
    estimate = theta.sum(axis=-1)
    low = estimate - np.sqrt(((theta - lower_j) ** 2).sum(axis=-1))
    high = estimate + np.sqrt(((upper_j - theta) ** 2).sum(axis=-1))
    return low, high


def newcombe_interval(
    x1: ArrayLike, n1: ArrayLike, x2: ArrayLike, n2: ArrayLike, *, confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return Newcombe's hybrid score interval (method 10) for ``x1/n1 − x2/n2``, elementwise.

    ``δ − sqrt((p1 − l1)² + (u2 − p2)²)`` to ``δ + sqrt((u1 − p1)² + (p2 − l2)²)`` with
    ``[l_i, u_i]`` the Wilson interval of ``p_i``; NaN where a denominator is 0.
    """
    x = np.stack(np.broadcast_arrays(np.asarray(x1, np.float64), np.asarray(x2, np.float64)), -1)
    n = np.stack(np.broadcast_arrays(np.asarray(n1, np.float64), np.asarray(n2, np.float64)), -1)
    return mover_interval(x, n, (1.0, -1.0), confidence=confidence)


def katz_ratio_interval(
    x1: ArrayLike, n1: ArrayLike, x2: ArrayLike, n2: ArrayLike, *, confidence: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Return Katz's log interval for the ratio ``(x1/n1) / (x2/n2)``, elementwise.

    ``exp(log R ± z·sqrt(1/x1 − 1/n1 + 1/x2 − 1/n2))``.  With ``x1 = 0`` the lower limit is 0
    and the upper limit uses ``x1 = 1/2`` (the usual continuity correction); with ``x2 = 0`` or
    an empty group the ratio is undefined and the interval NaN.
    """
    z = z_quantile(confidence)
    a, m = np.asarray(x1, np.float64), np.asarray(n1, np.float64)
    b, k = np.asarray(x2, np.float64), np.asarray(n2, np.float64)
    defined = (b > 0) & (m > 0) & (k > 0)
    a_c = np.where(a > 0, a, 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(a_c / m) - np.log(b / k)
        se = np.sqrt(1.0 / a_c - 1.0 / m + 1.0 / b - 1.0 / k)
        low = np.where(a > 0, np.exp(log_ratio - z * se), 0.0)
        high = np.exp(log_ratio + z * se)
    return np.where(defined, low, np.nan), np.where(defined, high, np.nan)


def _safe_rate(x: NDArray[np.float64], n: NDArray[np.float64]) -> NDArray[np.float64]:
    out = np.full(np.broadcast(x, n).shape, np.nan)
    np.divide(x, n, out=out, where=n > 0)
    return out


