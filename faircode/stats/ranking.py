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
* **FA*IR** (:func:`fair_test`, :mod:`faircode.stats.fair_prefix`): every determined prefix of
  the top ``k`` holds at least the binomial lower bound of protected rows at the paper's
  adjusted significance.
* Seeds: ``seed`` feeds a child stream per resampling (bootstrap, permutation), explicit.
* Layout: the ordering with ties and what a place means (:mod:`faircode.stats._ranked`) and
  FA*IR (:mod:`faircode.stats.fair_prefix`) are modules of their own; this one is the face.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.seeds import child_seed
from faircode.stats import resampling
from faircode.stats._ranked import (
    Ranking,
    discount_sums,
    local_shares,
    protected_mask,
    ranking,
    row_exposure,
    top_shares,
)
from faircode.stats.fair_prefix import (
    FAIR_MAX_K,
    FairTest,
    adjusted_alpha,
    fail_probability,
    fair_of,
    fair_table,
    fair_test,
)

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
_CHUNK = 250
"""Resamples drawn at a time (memory: ``_CHUNK x n`` counts)."""
_BOOTSTRAP, _PERMUTATION = 0, 1
"""Child streams of ``seed``."""


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
        d = discount_sums(r.n)
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
    flags = [protected_mask(m, n) for m in masks]
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
                fair_of(r, mask, k=fair_k[i], alpha=alpha)))
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
