"""Rankings by group: the share of a group in the top k for every k with a simultaneous band,
exposure disparity (Singh & Joachims 2018) with an interval and a test, and FA*IR's ranked group
fairness test (Zehlike et al. 2017) with its adjusted significance.

A *ranking* orders rows best first by a score (:func:`ranking`: a model's probability of the
favourable label, a deployed system's decile read the favourable way).  Rows of equal score form
a *tie block*; no order within a block is claimed, so every number is its expectation over the
orders of each block (a row's position is uniform over its block's positions).

* **Top-k share** (:func:`top_shares`): the share of the protected (disadvantaged) group among
  the first ``k`` rows; inside a tie block it grows linearly (the expected count).  Its
  **simultaneous band** (:func:`share_band`) holds the population curve at every ``k`` from
  ``k_min`` (:func:`default_k_min`: 50 rows or 10 % of them, whichever is more -- the share of
  the very top is an extreme-value statistic the bootstrap does not reproduce: from 20 rows of
  300 the band held the truth in 0.87 of simulated audits with a strong gap) to ``n`` at once
  with probability ``confidence``: a sup-t bootstrap band -- rows
  resampled, each resample re-ranked (its copies of a row tie), the share at every ``k``
  standardised by its bootstrap standard error, and the ``confidence`` quantile of the largest
  standardised deviation over ``k`` the band's half-width in standard errors (Montiel Olea &
  Plagborg-Møller 2019).  Past :data:`MAX_BAND_POINTS` values of ``k`` the band is calibrated
  on that many evenly spaced ones (the share moves by at most ``1/k`` between neighbours).
* **Exposure** (:func:`exposure_gap`): position ``j`` (1-based) is seen with weight
  ``v_j = 1 / log2(1 + j)`` (Singh & Joachims' logarithmic position bias); a group's exposure is
  the mean ``v`` of its rows (a tie block's rows each get the block's mean ``v``), and the
  disparity is the ratio disadvantaged / advantaged (1: demographic parity of exposure) with its
  difference beside it.  Test: the permutation of group labels over the fixed positions,
  statistic the difference of the groups' mean exposures, ``p = (1 + #{|T*| ≥ |T|}) / (1 + P)``.
  Interval: ``exp(log T ± z·√(V1 + V2))``, the law of total variance given the ranked scores.
  Given the scores, each row's group is a Bernoulli draw with the probability of the group at
  its score, estimated by the share of the group among its neighbours (the ``w`` positions
  either side, :func:`local_shares`; a tie block at least that large: the block's share): ``V1``
  is the delta-method variance of ``log T`` over those draws.  ``V2`` is the variance of the
  same ratio with every row's group replaced by that probability, over the bootstrap's
  re-ranked resamples (a smooth functional of the scores; small).  The percentile bootstrap of
  ``T`` itself is not used: ``T`` leans on the few rows at the top (``v_1 = 1`` against a mean
  near 0.1), the bootstrap of extreme positions is inconsistent, and it held the true ratio in
  0.90 of simulated audits at 95 % (``bench/multiclass_ranking.py``).
* **FA*IR** (:func:`fair_test`): a prefix of length ``j`` *fairly represents* the protected
  group at minimal proportion ``p`` and significance ``α`` when ``F(τ_j; j, p) > α`` -- ``F``
  the binomial CDF, ``τ_j`` the protected rows among the first ``j`` (Definition 3.1) -- i.e.
  when ``τ_j ≥ m(j)``, :func:`fair_table`.  The ranking passes when every tested prefix of the
  top ``k`` does.  Testing ``k`` prefixes rejects a fair ranking (each position protected with
  probability ``p``, independently) more often than ``α``, so the test is made at the *adjusted*
  ``α_c``: the paper's procedure computes the probability that a fair ranking fails some prefix
  (:func:`fail_probability`, exactly, by dynamic programming over the count of protected rows)
  and searches ``α_c`` so that it is ``α`` -- here the largest ``α_c`` (bisection on its log,
  from Bonferroni's ``α / k``, which always qualifies) whose failure probability is at most
  ``α`` (:func:`adjusted_alpha`).  With ties only the prefixes that end a tie block are
  determined and tested, and the failure probability is that of exactly those tests.
* Seeds: ``seed`` feeds a child stream per resampling (bootstrap, permutation), explicit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import resampling

__all__ = [
    "FAIR_MAX_K",
    "MAX_BAND_POINTS",
    "ExposureGap",
    "FairTest",
    "RankView",
    "Ranking",
    "TopShares",
    "adjusted_alpha",
    "band_points",
    "default_k_min",
    "exposure_gap",
    "fail_probability",
    "fair_table",
    "fair_test",
    "local_shares",
    "rank_views",
    "ranking",
    "report_points",
    "row_exposure",
    "share_band",
    "top_shares",
]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

MAX_BAND_POINTS = 400
"""The most values of ``k`` a band is calibrated on (module docstring)."""
FAIR_MAX_K = 1000
"""The most prefixes FA*IR tests: a test of the top of a ranking (the paper's rankings are of
tens to a few hundred; its library accepts up to 400).  A strict ranking is tested on its top
1,000; a tied one (a decile score) on every determined prefix of its top ``k``."""
_CHUNK = 250
"""Resamples drawn at a time (memory: ``_CHUNK x n`` counts)."""
_BOOTSTRAP, _PERMUTATION = 0, 1
"""Child streams of ``seed``."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """Rows ordered best first, and where each tie block ends.

    ``order[i]`` is the row at position ``i + 1``; ``ends`` the number of rows through each
    block (increasing, the last ``n``); ``starts`` each block's first position (0-based).
    """

    order: Ints
    ends: Ints

    @property
    def n(self) -> int:
        """The rows ranked."""
        return int(self.order.size)

    @property
    def starts(self) -> Ints:
        """Each block's first 0-based position."""
        return np.concatenate([[0], self.ends[:-1]]).astype(np.int64)


def ranking(score: ArrayLike, *, higher_first: bool = True) -> Ranking:
    """The ranking of the rows by ``score`` (descending when ``higher_first``); NaN scores
    are an error."""
    values = np.asarray(score, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"score: expected a non-empty 1-D array, got shape {values.shape}")
    if not np.isfinite(values).all():
        bad = values[~np.isfinite(values)][0]
        raise ValueError(f"score: expected finite numbers, got {describe(float(bad))}")
    key = -values if higher_first else values
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    ends = np.flatnonzero(np.diff(ordered) != 0) + 1
    return Ranking(order.astype(np.int64), np.concatenate([ends, [values.size]]).astype(np.int64))


def _protected(protected: ArrayLike, n: int) -> NDArray[np.bool_]:
    mask = checks.as_mask("protected", np.asarray(protected))
    if mask.size != n:
        raise ValueError(f"protected: expected {n} values (the ranked rows), got {mask.size}")
    return mask


@lru_cache(maxsize=64)
def _discount_sums(n: int) -> Floats:
    """``D[m] = Σ_{j ≤ m} 1 / log2(1 + j)`` for ``m = 0..n``."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, n + 2)))])


def row_exposure(r: Ranking) -> Floats:
    """Each row's expected exposure (in row order): its block's mean ``1 / log2(1 + j)``."""
    d = _discount_sums(r.n)
    starts = r.starts
    mean = (d[r.ends] - d[starts]) / (r.ends - starts)
    out = np.empty(r.n)
    out[r.order] = np.repeat(mean, r.ends - starts)
    return out


def top_shares(r: Ranking, protected: ArrayLike, ks: ArrayLike) -> Floats:
    """The protected group's expected share among the first ``k`` rows, for each ``k`` of
    ``ks`` (integers in ``1..n``)."""
    mask = _protected(protected, r.n)
    k = np.asarray(ks, dtype=np.int64)
    if k.size and (k.min() < 1 or k.max() > r.n):
        raise ValueError(f"ks: expected integers in 1..{r.n}, got {describe(int(k.min()))}..."
                         f"{int(k.max())}")
    through = np.concatenate([[0], np.cumsum(mask[r.order])[r.ends - 1]])
    return np.interp(k, np.concatenate([[0], r.ends]), through) / k


def _weights(seed: int | np.random.SeedSequence, chunk: int, n: int, size: int
             ) -> NDArray[np.int32]:
    """Chunk ``chunk``'s ``size`` bootstrap resamples of ``n`` rows, as counts per row
    (``size x n``), from its own child stream (so any ranking of the rows sees the same draws)."""
    rng = np.random.default_rng(child_seed(seed, _BOOTSTRAP, chunk))
    rows = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
    return np.bincount(rows.ravel(), minlength=size * n).reshape(size, n).astype(np.int32)


def _block_sums(w: NDArray[np.int32], r: Ranking) -> NDArray[np.int32]:
    """Per resample (rows of ``w``, in rank order), the sum over each tie block."""
    return w if r.ends.size == r.n else np.add.reduceat(w, r.starts, axis=1)


def _bracket(knots: Floats, ks: Ints, n: int) -> tuple[Ints, Ints, Floats]:
    """Row-wise linear interpolation at the points ``ks`` over increasing ``knots`` (each row
    starts at 0 and ends at ``n``), as flat indices of the knots below and above each point and
    its fraction between them: one ``searchsorted`` on the rows laid end to end."""
    rows = knots.shape[0]
    offset = (np.arange(rows) * (n + 1.0))[:, None]
    flat = (knots + offset).ravel()
    at = (ks[None, :] + offset).ravel()
    hi = np.searchsorted(flat, at, side="left")
    lo = hi - 1  # the knot before: strictly below k (first knot >= k is hi), same row
    return lo, hi, (at - flat[lo]) / (flat[hi] - flat[lo])


def default_k_min(n: int) -> int:
    """The smallest ``k`` a band holds: 50 rows or 10 % of the ``n`` ranked, whichever is more
    (at most ``n``)."""
    return int(min(n, max(50, math.ceil(0.1 * n))))


def local_shares(r: Ranking, protected: NDArray[np.bool_]) -> Floats:
    """Per position, the share of the protected rows among its neighbours -- the
    ``w = max(25, round(√n))`` positions either side (fewer at the ends) -- or, in a tie block of
    at least ``2w + 1`` rows, the block's share (module docstring)."""
    w = max(25, round(math.sqrt(r.n)))
    flags = protected[r.order].astype(np.float64)
    total = np.concatenate([[0.0], np.cumsum(flags)])
    at = np.arange(r.n)
    low, high = np.maximum(at - w, 0), np.minimum(at + w + 1, r.n)
    share = (total[high] - total[low]) / (high - low)
    sizes = r.ends - r.starts
    block = np.repeat((total[r.ends] - total[r.starts]) / sizes, sizes)
    return np.where(np.repeat(sizes >= 2 * w + 1, sizes), block, share)


def band_points(n: int, *, k_min: int) -> Ints:
    """The ``k`` a band is calibrated on: every ``k`` from ``k_min`` to ``n``, or
    :data:`MAX_BAND_POINTS` of them evenly spaced."""
    if n - k_min + 1 <= MAX_BAND_POINTS:
        return np.arange(k_min, n + 1, dtype=np.int64)
    return np.unique(np.rint(np.linspace(k_min, n, MAX_BAND_POINTS))).astype(np.int64)


def report_points(r: Ranking) -> Ints:
    """The ``k`` a table reports: the end of every tie block when there are at most 20 (a
    decile score: each cut), else every 5 % of the rows."""
    if r.ends.size <= 20:
        return r.ends.copy()
    return np.unique(np.ceil(np.arange(1, 21) * r.n / 20.0)).astype(np.int64)


def _chunks(total: int) -> list[int]:
    return [min(_CHUNK, total - i) for i in range(0, total, _CHUNK)]


@dataclass(frozen=True, slots=True)
class TopShares:
    """The protected share in the top ``k`` at the reported ``k``, with the simultaneous band."""

    k: Ints
    share: Floats
    band_low: Floats
    band_high: Floats
    """NaN where ``k < k_min`` (not calibrated)."""
    critical: float
    """The band's half-width in bootstrap standard errors."""
    k_min: int


@dataclass(frozen=True, slots=True)
class ExposureGap:
    """The groups' mean exposure, their ratio with its bootstrap interval, their difference and
    the permutation test (module docstring)."""

    exposure_protected: float
    exposure_other: float
    ratio: float
    ci_low: float
    ci_high: float
    difference: float
    p_value: float


@dataclass(frozen=True, slots=True)
class RankView:
    """One ranking of the rows seen through one attribute: its top-k shares with their band,
    its exposure disparity and FA*IR's test."""

    shares: TopShares
    exposure: ExposureGap
    fair: FairTest


class _Draws:
    """One ranking's bootstrap statistics per attribute, accumulated chunk by chunk."""

    def __init__(self, r: Ranking, flags: NDArray[np.int32], points: Ints,
                 smooth: Floats) -> None:
        self.r, self.points = r, points
        self.flags = flags[:, r.order]  # attributes x positions
        self.smooth = smooth  # attributes x positions: each position's local share
        self.shares: list[NDArray[np.float32]] = []
        self.ratios: list[Floats] = []

    def add(self, w_rows: NDArray[np.int32]) -> None:
        """Add one chunk of resamples (``size x n`` counts per row, in row order)."""
        r, size = self.r, w_rows.shape[0]
        rows = w_rows[:, r.order]
        w = _block_sums(rows, r)  # size x blocks: each block's copies
        mine = rows[:, None, :] * self.flags[None]  # size x attributes x positions
        if r.ends.size != r.n:
            mine = np.add.reduceat(mine, r.starts, axis=2)
        ends = np.cumsum(w, axis=1)
        d = _discount_sums(r.n)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = np.where(w > 0, (d[ends] - d[ends - w]) / w, 0.0)  # a copy's exposure
        expected = rows[:, None, :] * self.smooth[None]  # copies x their local share
        if r.ends.size != r.n:
            expected = np.add.reduceat(expected, r.starts, axis=2)
        ones = expected.sum(axis=2)
        seen = np.einsum("sb,sab->sa", mean, expected)
        others = (mean * w).sum(axis=1)[:, None] - seen
        with np.errstate(divide="ignore", invalid="ignore"):
            self.ratios.append(np.log((seen / ones) / (others / (r.n - ones))))
        zero = np.zeros((size, 1))
        lo, hi, frac = _bracket(np.hstack([zero, ends]), self.points, r.n)
        through = np.concatenate([np.zeros((size, mine.shape[1], 1)),
                                  np.cumsum(mine, axis=2)], axis=2)
        through = through.transpose(1, 0, 2).reshape(mine.shape[1], -1)  # attribute rows
        share = (through[:, lo] + frac * (through[:, hi] - through[:, lo])) / np.tile(
            self.points, size)
        self.shares.append(share.reshape(mine.shape[1], size, -1).astype(np.float32))


def _band(estimate: Floats, shares: NDArray[np.float32], confidence: float
          ) -> tuple[Floats, Floats, float]:
    se = shares.std(axis=0, ddof=1, dtype=np.float64)
    usable = se > 0
    critical = 0.0
    if usable.any():
        deviation = np.abs(shares[:, usable] - estimate[usable]) / se[usable]
        critical = float(np.quantile(deviation.max(axis=1), confidence))
    return (np.clip(estimate - critical * se, 0.0, 1.0),
            np.clip(estimate + critical * se, 0.0, 1.0), critical)


def rank_views(scores: Sequence[ArrayLike], masks: Sequence[ArrayLike], *, higher_first: bool,
               fair_k: Sequence[int], confidence: float, alpha: float, n_resamples: int,
               n_permutations: int, seed: int | np.random.SeedSequence, k_min: int,
               attribute_keys: Sequence[int] | None = None,
               report: Sequence[ArrayLike] | None = None) -> list[list[RankView]]:
    """Every ranking of ``scores`` (each a score per row of the same rows) seen through every
    attribute of ``masks`` (the protected rows): ``[ranking][attribute]`` views (module
    docstring).  ``fair_k[i]`` is ranking ``i``'s FA*IR length.  Every ranking is resampled
    with the same draws of the rows (chunk ``c``: ``child_seed(seed, 0, c)``), and attribute
    ``a`` permuted with the same draws of its labels (``child_seed(seed, 1, key_a, c)``,
    ``attribute_keys`` default the positions), so a ranking's numbers do not depend on the
    others'.  ``report[i]``: ranking ``i``'s reported ``k`` (default :func:`report_points`)."""
    checks.check_confidence(confidence)
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_positive_int("n_permutations", n_permutations)
    ranked = [ranking(s, higher_first=higher_first) for s in scores]
    if not ranked:
        return []
    n = ranked[0].n
    if any(r.n != n for r in ranked) or len(fair_k) != len(ranked):
        raise ValueError(f"scores: expected rankings of the same {n} rows and one fair_k each")
    flags = [_protected(m, n) for m in masks]
    keys = list(range(len(flags))) if attribute_keys is None else list(attribute_keys)
    k_min = int(min(max(k_min, 1), n))
    reported = [report_points(r) for r in ranked] if report is None else \
        [np.asarray(k, dtype=np.int64) for k in report]
    points = [np.union1d(band_points(n, k_min=k_min), rep[rep >= k_min]) for rep in reported]
    exposure = np.stack([row_exposure(r) for r in ranked], axis=1)
    p_values = _permutation_p(exposure, flags, keys, n_permutations=n_permutations, seed=seed)
    stacked = np.stack(flags).astype(np.int32) if flags else np.zeros((0, n), np.int32)
    smooth = [np.stack([local_shares(r, m) for m in flags]) if flags else np.zeros((0, n))
              for r in ranked]
    draws = [_Draws(r, stacked, points[i], smooth[i])
             for i, r in enumerate(ranked)]
    keep = n * n_resamples <= _KEEP_WEIGHTS
    kept = [_weights(seed, c, n, size) for c, size in enumerate(_chunks(n_resamples))] \
        if keep else []
    for draw in draws:
        for c, size in enumerate(_chunks(n_resamples)):
            draw.add(kept[c] if keep else _weights(seed, c, n, size))
    views = []
    for i, (r, draw) in enumerate(zip(ranked, draws, strict=True)):
        row = []
        for a, mask in enumerate(flags):
            estimate = top_shares(r, mask, points[i])
            low, high, critical = _band(estimate, np.vstack([c[a] for c in draw.shares]),
                                        confidence)
            at = np.minimum(np.searchsorted(points[i], reported[i]), points[i].size - 1)
            inside = reported[i] >= k_min
            shares = TopShares(reported[i], top_shares(r, mask, reported[i]),
                               np.where(inside, low[at], np.nan),
                               np.where(inside, high[at], np.nan), critical, k_min)
            row.append(RankView(shares, _exposure(r, exposure[:, i], mask, smooth[i][a],
                                                  np.concatenate([c[:, a] for c in draw.ratios]),
                                                  p_values[a][i], confidence=confidence),
                _fair(r, mask, k=fair_k[i], alpha=alpha)))
        views.append(row)
    return views


_KEEP_WEIGHTS = 20_000_000
"""Resampled counts kept for every ranking at once (``n x B``, int32); past it each ranking
draws them again, from the same streams."""


def _permutation_p(exposure: Floats, flags: list[NDArray[np.bool_]], keys: list[int], *,
                   n_permutations: int, seed: int | np.random.SeedSequence) -> list[Floats]:
    """Per attribute, every ranking's permutation p-value of its exposure difference."""
    n, rankings = exposure.shape
    total = exposure.sum(axis=0)
    out = []
    for mask, key in zip(flags, keys, strict=True):
        size_p = int(mask.sum())
        if size_p in (0, n):
            out.append(np.full(rankings, np.nan))
            continue
        observed = exposure[mask].sum(axis=0) / size_p - exposure[~mask].sum(axis=0) / (n - size_p)
        threshold = np.abs(observed) * (1.0 - resampling.TIE_RTOL)
        hits = np.zeros(rankings, dtype=np.int64)
        for c, size in enumerate(_chunks(n_permutations)):
            rng = np.random.default_rng(child_seed(seed, _PERMUTATION, key, c))
            labels = rng.permuted(np.tile(mask, (size, 1)), axis=1).astype(np.float64)
            inside = labels @ exposure
            drawn = inside / size_p - (total - inside) / (n - size_p)
            hits += (np.abs(drawn) >= threshold).sum(axis=0)
        out.append((1.0 + hits) / (1.0 + n_permutations))
    return out


def _exposure(r: Ranking, exposure: Floats, mask: NDArray[np.bool_], smooth: Floats,
              smoothed: Floats, p_value: float, *, confidence: float) -> ExposureGap:
    """The exposure gap with its total-variance interval (module docstring): ``smooth`` the
    positions' local shares, ``smoothed`` the resamples' log ratios at those shares."""
    if mask.all() or not mask.any():
        nan = float("nan")
        return ExposureGap(nan, nan, nan, nan, nan, nan, nan)
    mine, other = float(exposure[mask].mean()), float(exposure[~mask].mean())
    v, g = exposure[r.order], mask[r.order]
    a, b = float(v[g].sum()), float(g.sum())
    c, d = float(v[~g].sum()), float((~g).sum())
    gradient = v / a - 1.0 / b + v / c - 1.0 / d  # of log T in each position's group
    within = float((gradient ** 2 * smooth * (1.0 - smooth)).sum())
    finite = smoothed[np.isfinite(smoothed)]
    between = float(finite.var(ddof=1)) if finite.size > 1 else 0.0
    half = resampling.z_quantile(confidence) * math.sqrt(within + between)
    ratio = mine / other
    return ExposureGap(mine, other, ratio, ratio * math.exp(-half), ratio * math.exp(half),
                       mine - other, float(p_value))


def exposure_gap(score: ArrayLike, protected: ArrayLike, *, higher_first: bool,
                 confidence: float, n_resamples: int, n_permutations: int,
                 seed: int | np.random.SeedSequence) -> ExposureGap:
    """The exposure disparity of the ``protected`` rows in the ranking by ``score`` (module
    docstring; one view of :func:`rank_views`); NaN throughout when a group has no row."""
    return rank_views([score], [protected], higher_first=higher_first, fair_k=[1],
                      confidence=confidence, alpha=0.05, n_resamples=n_resamples,
                      n_permutations=n_permutations, seed=seed, k_min=1)[0][0].exposure


def share_band(score: ArrayLike, protected: ArrayLike, *, higher_first: bool, confidence: float,
               n_resamples: int, seed: int | np.random.SeedSequence, k_min: int,
               ks: ArrayLike | None = None) -> TopShares:
    """The top-k shares of the ``protected`` rows at ``ks`` (default :func:`report_points`)
    with the simultaneous band over every ``k >= k_min`` (module docstring; one view of
    :func:`rank_views`)."""
    return rank_views([score], [protected], higher_first=higher_first, fair_k=[1],
                      confidence=confidence, alpha=0.05, n_resamples=n_resamples,
                      n_permutations=1, seed=seed, k_min=k_min,
                      report=None if ks is None else [ks])[0][0].shares


def fair_table(k: int, p: float, alpha: float) -> Ints:
    """``m(j)`` for ``j = 1..k``: the fewest protected rows among the first ``j`` for which
    ``F(m; j, p) > alpha`` (Definition 3.1's fair representation)."""
    _check_fair(k, p, alpha)
    j = np.arange(1, k + 1)
    m = sps.binom.ppf(alpha, j, p)
    m = np.where(sps.binom.cdf(m, j, p) <= alpha, m + 1, m)
    return np.maximum(m, 0).astype(np.int64)


def _check_fair(k: int, p: float, alpha: float) -> None:
    checks.check_positive_int("k", k)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: expected a proportion in (0, 1), got {describe(p)}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha: expected a number in (0, 1), got {describe(alpha)}")


def fail_probability(m: ArrayLike, p: float, *, tested: ArrayLike | None = None) -> float:
    """The probability that a fair ranking -- each position protected with probability ``p``,
    independently -- has fewer than ``m[j-1]`` protected rows among its first ``j`` at some
    tested ``j`` (``tested``: a mask over ``1..k``; default every prefix).  Exact: the
    distribution of the protected count, position by position, with the failed counts
    removed; counts more than 12 standard deviations above the mean are dropped (below
    ``1e-30``)."""
    needed = np.asarray(m, dtype=np.int64)
    k = needed.size
    test = np.ones(k, dtype=bool) if tested is None else np.asarray(tested, dtype=bool)
    if test.shape != needed.shape:
        raise ValueError(f"tested: expected {k} values, got {test.size}")
    dist = np.zeros(k + 2)
    dist[0] = 1.0
    low = high = 0
    q = 1.0 - p
    for j in range(1, k + 1):
        seg = dist[low:high + 1].copy()
        dist[low:high + 2] = 0.0
        dist[low:high + 1] += seg * q
        dist[low + 1:high + 2] += seg * p
        high = min(high + 1, j, int(j * p + 12.0 * math.sqrt(j * p * q) + 12.0))
        dist[high + 1:high + 3] = 0.0
        if test[j - 1] and needed[j - 1] > low:
            dist[low:needed[j - 1]] = 0.0
            low = int(needed[j - 1])
            if low > high:
                return 1.0
    return float(min(1.0, max(0.0, 1.0 - dist[low:high + 1].sum())))


def adjusted_alpha(k: int, p: float, alpha: float, *, tested: ArrayLike | None = None,
                   tolerance: float = 1e-3) -> tuple[float, float]:
    """``(α_c, its failure probability)``: the largest ``α_c`` (to a relative ``tolerance``)
    whose :func:`fair_table` fails a fair ranking with probability at most ``alpha`` over the
    tested prefixes (module docstring)."""
    _check_fair(k, p, alpha)
    test = np.ones(k, dtype=bool) if tested is None else np.asarray(tested, dtype=bool)
    low = alpha / max(int(test.sum()), 1)  # Bonferroni: always at most alpha
    fail = fail_probability(fair_table(k, p, alpha), p, tested=test)
    if fail <= alpha:
        return alpha, fail
    fail_low = fail_probability(fair_table(k, p, low), p, tested=test)
    high = alpha
    while math.log(high / low) > tolerance:
        middle = math.sqrt(low * high)
        found = fail_probability(fair_table(k, p, middle), p, tested=test)
        if found <= alpha:
            low, fail_low = middle, found
        else:
            high = middle
    return low, fail_low


@dataclass(frozen=True, slots=True)
class FairTest:
    """FA*IR's ranked group fairness test of the top ``k`` (module docstring)."""

    k: int
    p: float
    alpha: float
    alpha_adjusted: float
    fail_probability: float
    """The probability that a fair ranking fails at ``alpha_adjusted`` (at most ``alpha``)."""
    tested: int
    """The prefixes tested (those that end a tie block)."""
    passes: bool
    """No tested prefix fails (vacuously true with none tested)."""
    first_fail: int
    """The first failing prefix's length (0: none)."""
    needed: int
    observed: int
    """At the first failing prefix (else at ``k``): the protected rows needed and present."""


def fair_test(score: ArrayLike, protected: ArrayLike, *, k: int, higher_first: bool,
              alpha: float) -> FairTest:
    """FA*IR's test of the determined prefixes of the first ``k`` rows (at most
    :data:`FAIR_MAX_K` of them), at the protected share ``p`` of all ranked rows and the adjusted
    significance (module docstring); with no prefix determined (a tie block longer than ``k``)
    nothing is tested (``tested`` 0, ``alpha_adjusted`` NaN)."""
    r = ranking(score, higher_first=higher_first)
    return _fair(r, _protected(protected, r.n), k=k, alpha=alpha)


def _fair(r: Ranking, mask: NDArray[np.bool_], *, k: int, alpha: float) -> FairTest:
    p = float(mask.mean())
    k = int(min(max(k, 1), r.n))
    ends = r.ends[r.ends <= k]
    if ends.size > FAIR_MAX_K:  # at most FAIR_MAX_K determined prefixes: the top of the ranking
        k = int(ends[FAIR_MAX_K - 1])
        ends = ends[:FAIR_MAX_K]
    if not 0.0 < p < 1.0 or not ends.size:  # one group only, or no prefix determined
        return FairTest(k, p, alpha, float("nan"), float("nan"), 0, True, 0, 0, 0)
    tested = np.zeros(k, dtype=bool)
    tested[ends - 1] = True
    alpha_c, fail = _adjusted(k, p, alpha, tested.tobytes())
    m = fair_table(k, p, alpha_c)
    counts = np.cumsum(mask[r.order][:k])
    failed = np.flatnonzero(tested & (counts < m))
    at = int(failed[0]) if failed.size else k - 1
    return FairTest(k, p, alpha, alpha_c, fail, int(tested.sum()), not failed.size,
                    at + 1 if failed.size else 0, int(m[at]), int(counts[at]))


@lru_cache(maxsize=256)
def _adjusted(k: int, p: float, alpha: float, tested: bytes) -> tuple[float, float]:
    """:func:`adjusted_alpha`, cached: the grid's cells rank the same rows."""
    return adjusted_alpha(k, p, alpha, tested=np.frombuffer(tested, dtype=bool))
