"""Geometry of the paired signed box: the range of a kinked effect over a box of intervals.

Private to :mod:`faircode.stats.paired` (which explains the interval and why).  An effect is a
function of two strategies' signed components ``c_A`` and ``c_B``; in the coordinates
``s = c_A + c_B`` and ``d = c_A − c_B`` each component gets an interval, and :func:`box_range`
returns the exact range of the effect over the product of those intervals.  The effect is
piecewise linear, so its extremes lie at the box's corners, where an edge crosses a kink line, or
where two kink lines cross: a short, vectorised candidate list, no optimiser.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from faircode.core import checks

__all__ = ["box_range", "expanded_level", "percentile_bounds"]

Floats = NDArray[np.float64]


def _max_kinked(s_lo: Floats, s_hi: Floats, d_lo: Floats,
                d_hi: Floats, c: Floats) -> Floats:
    """Max of ``|c_A| − max(|c_B|, c)`` over ``s ∈ [s_lo, s_hi]``, ``d ∈ [d_lo, d_hi]``.

    ``c_A = (s + d) / 2`` and ``c_B = (s − d) / 2``.  The function is linear between the kink
    lines ``s + d = 0`` and ``s − d = ±2c``, so its maximum is at a corner, where an edge crosses
    a kink line, or where two kink lines cross inside the box.
    """
    s_cand, d_cand = [], []
    for s0 in (s_lo, s_hi):
        for d0 in (d_lo, d_hi):
            s_cand.append(s0)
            d_cand.append(d0)
        for d0 in (-s0, s0 - 2 * c, s0 + 2 * c):  # edge s = s0 meets the kink lines
            s_cand.append(s0)
            d_cand.append(np.where((d0 >= d_lo) & (d0 <= d_hi), d0, np.nan))
    for d0 in (d_lo, d_hi):
        for s0 in (-d0, d0 + 2 * c, d0 - 2 * c):  # edge d = d0 meets the kink lines
            s_cand.append(np.where((s0 >= s_lo) & (s0 <= s_hi), s0, np.nan))
            d_cand.append(d0)
    for s0, d0 in ((c, -c), (-c, c)):  # the kink lines cross each other
        inside = (s0 >= s_lo) & (s0 <= s_hi) & (d0 >= d_lo) & (d0 <= d_hi)
        s_cand.append(np.where(inside, s0, np.nan))
        d_cand.append(d0)
    s_all, d_all = np.stack(np.broadcast_arrays(*s_cand)), np.stack(np.broadcast_arrays(*d_cand))
    values = np.abs(s_all + d_all) / 2 - np.maximum(np.abs(s_all - d_all) / 2, c)
    values = np.where(np.isnan(values), -np.inf, values)
    out = values.max(axis=0)
    bad = np.isnan(s_lo) | np.isnan(s_hi) | np.isnan(d_lo) | np.isnan(d_hi) | np.isnan(c)
    return np.where(bad, np.nan, out)


def _min_abs_b(s_lo: Floats, s_hi: Floats, d_lo: Floats,
               d_hi: Floats) -> Floats:
    """Min of ``|c_B| = |s − d| / 2`` over the box (0 if the box crosses ``c_B = 0``)."""
    low, high = s_lo - d_hi, s_hi - d_lo
    return np.where((low <= 0) & (high >= 0), 0.0, np.minimum(np.abs(low), np.abs(high)) / 2)


def _max_over_box(shape: str, box: Floats) -> Floats:
    """Max of ``Δ`` over ``box`` ``(..., 2 components, 4 = s_lo, s_hi, d_lo, d_hi)``."""
    t_s_lo, t_s_hi, t_d_lo, t_d_hi = (box[..., 0, j] for j in range(4))
    if shape == "linear":
        return t_d_hi
    if shape == "abs":
        return _max_kinked(t_s_lo, t_s_hi, t_d_lo, t_d_hi, np.zeros_like(t_s_lo))
    f_s_lo, f_s_hi, f_d_lo, f_d_hi = (box[..., 1, j] for j in range(4))
    # max(a_t, a_f) − max(b_t, b_f) is largest with the other component's |c_B| at its minimum
    return np.maximum(
        _max_kinked(t_s_lo, t_s_hi, t_d_lo, t_d_hi, _min_abs_b(f_s_lo, f_s_hi, f_d_lo, f_d_hi)),
        _max_kinked(f_s_lo, f_s_hi, f_d_lo, f_d_hi, _min_abs_b(t_s_lo, t_s_hi, t_d_lo, t_d_hi)))


def box_range(shape: str, box: ArrayLike) -> tuple[Floats, Floats]:
    """Range of ``Δ`` over ``box`` ``(..., 2, 4)``: per component ``(s_lo, s_hi, d_lo, d_hi)``.

    ``shape`` is ``abs`` (``|c_A| − |c_B|``), ``max_abs`` (equalized odds: ``max(|t_A|, |f_A|)
    − max(|t_B|, |f_B|)``) or ``linear`` (``c_A − c_B``).  The minimum is minus the maximum with
    A and B exchanged (``d`` negated).
    """
    b = np.asarray(box, dtype=np.float64)
    flipped = b[..., [0, 1, 3, 2]] * np.array([1.0, 1.0, -1.0, -1.0])
    return -_max_over_box(shape, flipped) + 0.0, _max_over_box(shape, b)  # no -0.0


def percentile_bounds(draws: Floats, confidence: float) -> Floats:
    """Percentile interval over the last axis, NaN draws dropped: shape ``(..., 2)``."""
    tail = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN: undefined, NaN interval
        return np.moveaxis(np.nanquantile(draws, [tail, 1.0 - tail], axis=-1), 0, -1)


def expanded_level(confidence: float, n_units: int | None) -> float:
    """The expanded percentile level for ``n_units`` resampled units (Hesterberg 2015).

    The level whose normal quantile is ``sqrt(n / (n − 1)) · t_{n−1}`` at ``confidence``: it
    undoes the bootstrap's ``(n − 1) / n`` variance and the normal-for-t substitution, which make
    the percentile interval short on a few dozen units.  ``None`` or ``n < 2``: ``confidence``.
    """
    checks.check_confidence(confidence)
    if n_units is None or n_units < 2:
        return confidence
    tail = (1.0 - confidence) / 2.0
    z = float(np.sqrt(n_units / (n_units - 1.0)) * special.stdtrit(n_units - 1, 1.0 - tail))
    return float(2.0 * special.ndtr(z) - 1.0)


