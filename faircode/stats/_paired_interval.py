"""The paired effect's interval at any level, and the tests that invert it (Δ = 0, equivalence).

Private to :mod:`faircode.stats.paired` (which explains the design).  Everything here works on
the paired bootstrap draws of both strategies' signed components, shape ``(..., M, 2, B)``, and
their estimates ``(..., M, 2)``, vectorised over any leading axes (the bench passes a chunk of
synthetic audits at once):

* :func:`piece_share` -- the share of draws on the estimate's linear piece of ``Δ`` (the signs
  of the gaps and, for equalized odds, which gap is the larger), the test that decides, per
  cell and before any level is chosen, whether the kinks of ``|·|`` matter;
* :class:`PairedInterval` -- the interval at any level (the expanded percentile interval of the
  draws of ``Δ`` where the kinks do not matter, the signed box where they may), and the p-values
  of ``Δ = 0`` and of ``|Δ| ≥ δ`` that invert that very family of intervals, so a test and its
  interval can never disagree.

Quantiles are computed on the sorted draws (NaN draws dropped, numpy's default linear
interpolation) at a per-element level, which is what the bisection of a test inversion needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from faircode.core import checks
from faircode.stats._paired_box import box_range, expanded_level, percentile_bounds
from faircode.stats._paired_counts import EFFECT_METRICS, distance, effect_shape

if TYPE_CHECKING:
    from faircode.stats._paired_draws import PairedDraws

__all__ = [
    "NUISANCE_RATIO",
    "SMOOTH_SHARE",
    "EffectInterval",
    "EffectTests",
    "PairedInterval",
    "SortedDraws",
    "box_interval",
    "effect_tests",
    "expanded_levels",
    "interval_method",
    "piece_share",
    "pieces",
]

Floats = NDArray[np.float64]

SMOOTH_SHARE: float = 0.99
"""A cell's draws must lie on its estimate's linear piece this often for the smooth interval."""

NUISANCE_RATIO: float = 0.5
"""The box's sums get this share of the differences' tail probability (97.5 % sums at 95 %)."""

_BISECTIONS = 24
_SHAPES = tuple(effect_shape(m) for m in EFFECT_METRICS)
_BY_SHAPE = {shape: np.array([k for k, s in enumerate(_SHAPES) if s == shape])
             for shape in ("abs", "max_abs")}
_Holds = Callable[[Floats], NDArray[np.bool_]]
_BATCH = 64
"""Comparisons whose intervals are inverted together (bounds the memory of one pass: 0.13 GB at
B = 2000).  Every operation of an inversion is elementwise, so the numbers do not depend on it;
a bisection step is many small array operations, and 36 comparisons took 0.70 / 0.90 s in
batches of 16 against 0.48 / 0.52 s in one (two runs each; the same bytes)."""


def expanded_levels(level: ArrayLike, n_units: ArrayLike | None) -> Floats:
    """:func:`faircode.stats._paired_box.expanded_level`, elementwise and for levels in [0, 1).

    ``n_units`` None or below 2 leaves a level as it is.
    """
    lv = np.asarray(level, dtype=np.float64)
    if n_units is None:
        return lv
    n = np.asarray(n_units, dtype=np.float64)
    tail = (1.0 - lv) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.sqrt(n / (n - 1.0)) * special.stdtrit(np.maximum(n - 1.0, 1.0), 1.0 - tail)
    return np.where(n >= 2, 2.0 * special.ndtr(z) - 1.0, lv)


def pieces(comps: ArrayLike) -> NDArray[np.int64]:
    """Which linear piece of its distance one strategy's components ``(..., M, 2)`` are on.

    ``abs``: the sign of the gap; ``max_abs`` (equalized odds): the larger gap and its sign;
    ``linear``: a single piece (0).  A value on a kink (a gap of exactly 0, two tied gaps) or
    undefined is ``-1``.
    """
    c = np.asarray(comps, dtype=np.float64)
    first, second = c[..., 0], c[..., 1]
    out = np.where(first > 0, 1, np.where(first < 0, 0, -1)).astype(np.int64)
    for k, shape in enumerate(_SHAPES):
        if shape == "linear":
            out[..., k] = np.where(np.isfinite(first[..., k]), 0, -1)
        elif shape == "max_abs":
            t, f = first[..., k], second[..., k]
            larger = np.where(np.abs(f) > np.abs(t), f, t)
            code = 2 * (np.abs(f) > np.abs(t)) + (larger > 0)
            kink = (np.abs(f) == np.abs(t)) | (larger == 0) | ~np.isfinite(t) | ~np.isfinite(f)
            out[..., k] = np.where(kink, -1, code)
    return out


def piece_share(estimate_a: ArrayLike, estimate_b: ArrayLike, draws_a: ArrayLike,
                draws_b: ArrayLike) -> Floats:
    """The share of defined draws ``(..., M, 2, B)`` whose pieces (both strategies) are the
    estimates' ``(..., M, 2)``; 0 where an estimate is on a kink, NaN without a defined draw."""
    piece_a, piece_b = pieces(estimate_a), pieces(estimate_b)
    da = np.moveaxis(np.asarray(draws_a, np.float64), -1, 0)
    db = np.moveaxis(np.asarray(draws_b, np.float64), -1, 0)
    on = (pieces(da) == piece_a) & (pieces(db) == piece_b)
    defined = np.isfinite(distance(da) - distance(db))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (on & defined).sum(axis=0) / defined.sum(axis=0)
    return np.where((piece_a < 0) | (piece_b < 0), np.where(np.isnan(share), np.nan, 0.0),
                    share)


@dataclass(frozen=True, slots=True)
class SortedDraws:
    """Draws sorted along the last axis (NaN last) and the number of finite ones."""

    values: Floats
    n: NDArray[np.int64]

    @classmethod
    def of(cls, draws: Floats) -> SortedDraws:
        return cls(np.sort(draws, axis=-1), np.isfinite(draws).sum(axis=-1))

    def quantile(self, q: ArrayLike) -> Floats:
        """The ``q`` quantile (elementwise ``q``, broadcast to the leading shape); NaN if none."""
        q = np.broadcast_to(np.asarray(q, dtype=np.float64), self.n.shape)
        h = (np.maximum(self.n, 1) - 1) * q
        low = np.clip(np.floor(h).astype(np.int64), 0, None)
        high = np.minimum(low + 1, np.maximum(self.n - 1, 0))
        x_lo = np.take_along_axis(self.values, low[..., None], -1)[..., 0]
        x_hi = np.take_along_axis(self.values, high[..., None], -1)[..., 0]
        out = x_lo + (h - low) * (x_hi - x_lo)
        return np.where(self.n > 0, np.where(x_hi == x_lo, x_lo, out), np.nan)

    def bounds(self, level: ArrayLike) -> tuple[Floats, Floats]:
        tail = (1.0 - np.asarray(level, dtype=np.float64)) / 2.0
        return self.quantile(tail), self.quantile(1.0 - tail)


class PairedInterval:
    """Every effect's interval family and the tests inverting it, from one comparison's draws.

    ``draws_a``/``draws_b`` ``(..., M, 2, B)`` and ``estimate_a``/``estimate_b`` ``(..., M, 2)``
    as :class:`faircode.stats.paired.PairedDraws` holds them; ``n_units`` (scalar or broadcast to
    the leading shape) the size the levels are expanded for.  A cell is ``smooth`` when at least
    ``smooth_share`` of its draws lie on its estimate's piece (:func:`piece_share`): its interval
    is then the expanded percentile interval of the draws of ``Δ``, otherwise the signed box with
    the sums' tails ``nuisance_ratio`` times the differences'.  Linear effects are always smooth.
    """

    def __init__(self, draws_a: ArrayLike, draws_b: ArrayLike, estimate_a: ArrayLike,
                 estimate_b: ArrayLike, *, n_units: ArrayLike | None,
                 smooth_share: float = SMOOTH_SHARE, nuisance_ratio: float = NUISANCE_RATIO,
                 box_only: bool = False) -> None:
        a, b = np.asarray(draws_a, np.float64), np.asarray(draws_b, np.float64)
        self.n_units = None if n_units is None else np.asarray(n_units)[..., None]
        self.nuisance_ratio = nuisance_ratio
        da, db = np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0)
        delta = np.moveaxis(distance(da) - distance(db), 0, -1)  # (..., M, B)
        self.delta = SortedDraws.of(delta)
        self.sums, self.diffs = SortedDraws.of(a + b), SortedDraws.of(a - b)
        share = piece_share(estimate_a, estimate_b, a, b)
        linear = np.array([s == "linear" for s in _SHAPES])
        self.smooth = linear | ((not box_only) & (np.nan_to_num(share) >= smooth_share))
        self.share = share
        self.n_draws = a.shape[-1]
        # the box only where a cell takes it: the cells' flat positions, sums, diffs and sizes
        self._at = np.nonzero(~self.smooth)
        self._box_sums = SortedDraws(self.sums.values[self._at], self.sums.n[self._at])
        self._box_diffs = SortedDraws(self.diffs.values[self._at], self.diffs.n[self._at])
        self._box_units = None if self.n_units is None else np.broadcast_to(
            self.n_units, self.smooth.shape)[self._at]
        self._box_shapes = {shape: np.isin(self._at[-1], index)
                            for shape, index in _BY_SHAPE.items()}

    def bounds(self, level: ArrayLike) -> tuple[Floats, Floats]:
        """``(low, high)`` ``(..., M)`` at ``level`` (elementwise, in [0, 1)).

        The box is computed for the cells that take it alone (every operation is elementwise,
        so a cell's bounds are the same numbers as over the whole array; tests/test_paired.py
        checks them against the box of every cell)."""
        lv = np.broadcast_to(np.asarray(level, dtype=np.float64), self.smooth.shape)
        smooth_lo, smooth_hi = self.delta.bounds(expanded_levels(lv, self.n_units))
        low, high = smooth_lo.copy(), smooth_hi.copy()
        if self._at[0].size:
            at_level = lv[self._at]
            nuisance = 1.0 - (1.0 - at_level) * self.nuisance_ratio
            s_lo, s_hi = self._box_sums.bounds(
                expanded_levels(nuisance, self._box_units)[..., None])
            d_lo, d_hi = self._box_diffs.bounds(
                expanded_levels(at_level, self._box_units)[..., None])
            box = np.stack([s_lo, s_hi, d_lo, d_hi], axis=-1)  # (cells, 2, 4)
            box_lo, box_hi = np.empty(at_level.shape), np.empty(at_level.shape)
            for shape, chosen in self._box_shapes.items():
                if chosen.any():
                    box_lo[chosen], box_hi[chosen] = box_range(shape, box[chosen])
            low[self._at], high[self._at] = box_lo, box_hi
        return low + 0.0, high + 0.0

    def p_value(self, *, confidence: float) -> Floats:
        """The p-value of ``Δ = 0``: the smallest ``a`` at which the ``1 − a`` interval excludes
        0 (at least ``min(1 / (B + 1), 1 − confidence)``; 1 if even the median point is 0).
        ``p ≤ 1 − confidence`` exactly when the interval at ``confidence`` excludes 0."""

        def excludes(a: Floats) -> NDArray[np.bool_]:
            low, high = self.bounds(1.0 - a)
            return (low > 0) | (high < 0)

        return self._invert(excludes, cut=1.0 - confidence, top=1.0)

    def equivalence_p_value(self, *, margin: ArrayLike) -> Floats:
        """The p-value of ``|Δ| ≥ margin`` (two one-sided tests by interval inclusion): the
        smallest ``a`` at which the ``1 − 2a`` interval lies strictly inside ``±margin``."""
        m = np.broadcast_to(np.asarray(margin, dtype=np.float64), self.smooth.shape)

        def inside(a: Floats) -> NDArray[np.bool_]:
            low, high = self.bounds(1.0 - 2.0 * a)
            return (low > -m) & (high < m)

        return self._invert(inside, cut=None, top=0.5)

    def _invert(self, holds: _Holds, *, cut: float | None, top: float) -> Floats:
        """``inf {a : holds(a)}`` for a monotone ``holds`` (False below, True above), by
        bisection in log ``a`` on ``[1 / (B + 1), top]``; ``cut`` is tested first, so the
        answer is on the right side of it exactly.  ``top`` failing gives 1."""
        shape = self.smooth.shape
        floor = 1.0 / (self.n_draws + 1.0)
        lo, hi = np.full(shape, floor), np.full(shape, top)
        if cut is not None:  # exactly consistent with the interval at ``cut``, even below 1/(B+1)
            at = holds(np.full(shape, cut))
            lo, hi = np.where(at, np.minimum(lo, cut), cut), np.where(at, cut, hi)
        never = ~holds(hi)
        done = holds(lo)
        for _ in range(_BISECTIONS):
            mid = np.sqrt(lo * hi)
            yes = holds(mid)
            lo, hi = np.where(yes, lo, mid), np.where(yes, mid, hi)
        out = np.where(done, lo, hi)
        undefined = np.isnan(self.bounds(np.zeros(shape))[0])
        return np.where(undefined, np.nan, np.where(never, 1.0, out))


class EffectInterval(StrEnum):
    """How an effect's interval is computed (column ``ci_method``)."""

    SIGNED_BOX = "paired_signed_box"
    EXPANDED_PERCENTILE = "paired_expanded_percentile"


def interval_method(metric: str) -> str:
    """The ``ci_method`` a ``metric``'s effect takes near a kink (linear effects: always the
    percentile); a defined row says its own method (:class:`EffectResult`)."""
    linear = effect_shape(metric) == "linear"
    return (EffectInterval.EXPANDED_PERCENTILE if linear else EffectInterval.SIGNED_BOX).value


def box_interval(
    draws_a: ArrayLike, draws_b: ArrayLike, *, confidence: float, n_units: int | None = None,
    nuisance: float | None = None,
) -> tuple[Floats, Floats]:
    """The paired signed box of every effect from component draws ``(..., M, 2, B)``.

    Returns ``(low, high)`` of shape ``(..., M)``: the differences' intervals at
    ``confidence``, the sums' at ``nuisance`` (default ``1 − (1 − confidence)·``
    :data:`NUISANCE_RATIO`), both expanded for ``n_units`` units (:func:`expanded_level`).  For
    accuracy and balanced accuracy this is the expanded percentile interval of ``A − B``.  The
    shipped interval uses the box only where the kinks matter (:class:`EffectTests`).
    """
    checks.check_confidence(confidence)
    level = 1.0 - (1.0 - confidence) * NUISANCE_RATIO if nuisance is None else nuisance
    a, b = np.asarray(draws_a, np.float64), np.asarray(draws_b, np.float64)
    box = np.concatenate([percentile_bounds(a + b, expanded_level(level, n_units)),
                          percentile_bounds(a - b, expanded_level(confidence, n_units))], axis=-1)
    low, high = np.empty(box.shape[:-2]), np.empty(box.shape[:-2])
    for k, metric in enumerate(EFFECT_METRICS):
        low[..., k], high[..., k] = box_range(effect_shape(metric), box[..., k, :, :])
    return low, high


@dataclass(frozen=True, slots=True)
class EffectTests:
    """Intervals and tests of K comparisons' effects, arrays of shape ``(K, M)``: ``low``,
    ``high``, ``smooth`` (the percentile interval, else the box), ``p_value`` (``Δ = 0``) and
    ``equivalence_p_value`` (``|Δ| ≥ δ``; NaN without a margin)."""

    low: Floats
    high: Floats
    smooth: NDArray[np.bool_]
    p_value: Floats
    equivalence_p_value: Floats

    def method(self, k: int, m: int) -> str:
        """The ``ci_method`` of comparison ``k``'s effect ``m``."""
        smooth = bool(self.smooth[k, m])
        return (EffectInterval.EXPANDED_PERCENTILE if smooth else EffectInterval.SIGNED_BOX).value


def effect_tests(draws: Sequence[PairedDraws], *, confidence: float,
                 margins: Mapping[str, float] | None = None,
                 estimates: Sequence[tuple[Floats, Floats]] | None = None) -> EffectTests:
    """The interval at ``confidence`` and both tests of every comparison of ``draws`` at once.

    ``margins`` maps an effect metric to its equivalence margin ``δ`` (absent: no test);
    ``estimates`` replaces each comparison's own ``(estimate_a, estimate_b)`` when choosing
    its piece (the pooled replicates' mean).  Comparisons are inverted :data:`_BATCH` at a time.
    """
    checks.check_confidence(confidence)
    margin = np.array([np.nan if margins is None else margins.get(m, np.nan)
                       for m in EFFECT_METRICS], dtype=np.float64)
    parts: list[tuple[Floats, ...]] = []
    for start in range(0, len(draws), _BATCH):
        chunk = draws[start:start + _BATCH]
        est = [(d.estimate_a, d.estimate_b) for d in chunk] if estimates is None else list(
            estimates[start:start + _BATCH])
        family = PairedInterval(
            np.stack([d.draws_a for d in chunk]), np.stack([d.draws_b for d in chunk]),
            np.stack([e[0] for e in est]), np.stack([e[1] for e in est]),
            n_units=np.array([d.n_units for d in chunk]))
        low, high = family.bounds(confidence)
        p = family.p_value(confidence=confidence)
        eq = np.full(p.shape, np.nan)
        if not np.isnan(margin).all():  # no margin, no equivalence test (and no bisection)
            eq = family.equivalence_p_value(margin=np.nan_to_num(margin, nan=np.inf))
            eq = np.where(np.isnan(margin), np.nan, eq)
        parts.append((low, high, family.smooth.astype(np.float64), p, eq))
    if not parts:
        empty = np.empty((0, len(EFFECT_METRICS)))
        return EffectTests(empty, empty, empty.astype(bool), empty, empty)
    low, high, smooth, p, eq = (np.concatenate(x) for x in zip(*parts, strict=True))
    return EffectTests(low, high, smooth.astype(bool), p, eq)
