"""Frozen reference: faircode.stats.power as it was before the batched, early-exit rewrite.

Copied verbatim from ``faircode/power.py`` at commit 70e205b (only this docstring differs), so
``tests/test_power.py`` can check that the fast implementation gives the same minimum detectable
gaps, bit for bit, as the one that produced the committed results.  In the grid the reference was
called one comparison at a time (``detectable_gap`` on length-4 counts), where numpy works on
scalars; that is the behaviour to reproduce (see ``faircode.stats.power._square``).  Do not edit.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri
from statsmodels.stats.power import normal_power

from faircode.core.errors import describe

__all__ = [
    "MIN_SIZE",
    "NA_REASONS",
    "POWER_METRICS",
    "Detectable",
    "detectable_gap",
    "minimum_detectable_gap",
    "powered",
]

MIN_SIZE: int = 20
"""Default smallest denominator (rows per group in a metric's subset) an MDE is reported for.

At 10 rows per group the permutation test's exact power at the MDE ranged 0.48–0.87 (it is too
discrete for any normal approximation); from 20 rows it stayed within 0.76–0.86
(``bench/power.py``)."""

NA_REASONS: tuple[str, ...] = (
    "empty_group",
    "below_min_size",
    "undefined_advantaged_rate_zero",
    "not_detectable",
)

_TN, _FP, _FN, _TP = 0, 1, 2, 3
_Floats = NDArray[np.float64]

# metric -> (numerator cells, denominator cells) of the group rate it differences
_RATES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "demographic_parity_diff": ((_FP, _TP), (_TN, _FP, _FN, _TP)),
    "equal_opportunity_diff": ((_TP,), (_FN, _TP)),
    "tpr_gap": ((_TP,), (_FN, _TP)),
    "fpr_gap": ((_FP,), (_TN, _FP)),
    "predictive_parity_diff": ((_TP,), (_FP, _TP)),
    "accuracy_equality_diff": ((_TN, _TP), (_TN, _FP, _FN, _TP)),
}
POWER_METRICS: tuple[str, ...] = (
    *_RATES, "equalized_odds_diff", "disparate_impact_ratio",
)
"""Metric names :func:`minimum_detectable_gap` knows (the grid's names plus the two EO gaps)."""

_ITERATIONS = 64  # bisection steps: the bracket shrinks by 2**-64, below float resolution
_NEWTON = 12  # Newton steps for the equalized-odds critical value (quadratic convergence)


@dataclass(frozen=True, slots=True)
class Detectable:
    """The MDE of one comparison, whether its observed gap reaches it, and why it may be n/a.

    ``mde`` is on the metric's own scale (``|log ratio|`` for disparate impact); NaN with a
    ``note`` from :data:`NA_REASONS` when undefined, in which case ``powered`` is False.
    """

    mde: float
    powered: bool
    note: str

    def __post_init__(self) -> None:
        if self.note not in ("", *NA_REASONS):
            raise ValueError(
                f"Detectable: note: expected '' or one of {', '.join(NA_REASONS)}, "
                f"got {describe(self.note)}"
            )
        if np.isnan(self.mde) != bool(self.note):
            raise ValueError("Detectable: mde must be NaN exactly when note gives a reason")
        if self.powered and np.isnan(self.mde):
            raise ValueError("Detectable: powered must be False when mde is NaN")


def minimum_detectable_gap(
    metric: str,
    counts_d: ArrayLike,
    counts_a: ArrayLike,
    *,
    alpha: float,
    power: float = 0.8,
    min_size: int = MIN_SIZE,
    continuity: bool = True,
) -> tuple[_Floats, NDArray[np.str_]]:
    """Return the MDEs and n/a reasons of ``metric`` for confusion counts of shape ``(..., 4)``.

    Parameters
    ----------
    metric
        One of :data:`POWER_METRICS`.
    counts_d, counts_a
        The disadvantaged and advantaged groups' ``(TN, FP, FN, TP)`` counts; any leading
        shape (one entry per comparison), broadcast together.
    alpha
        Two-sided level of the test (per comparison).
    power
        Target probability of detecting a gap of the MDE.
    min_size
        Denominators below this give NaN with reason ``below_min_size``.
    continuity
        Add the continuity correction ``½(1/n_d + 1/n_a)`` to the detectable difference (see
        the module docstring); False gives the plain normal-approximation MDE.

    Returns
    -------
    mde, note
        Float array (NaN where n/a) and a same-shape string array (``""`` or a reason).
    """
    if metric not in POWER_METRICS:
        raise ValueError(
            f"metric: expected one of {', '.join(POWER_METRICS)}, got {describe(metric)}"
        )
    _check_level("alpha", alpha)
    _check_level("power", power)
    if isinstance(min_size, bool) or not isinstance(min_size, numbers.Integral) or min_size < 1:
        raise ValueError(f"min_size: expected a positive int, got {describe(min_size)}")
    d, a = _as_counts("counts_d", counts_d), _as_counts("counts_a", counts_a)
    d, a = np.broadcast_arrays(d, a)
    if metric == "equalized_odds_diff":
        return _eodds_mde(d, a, alpha=alpha, power=power, min_size=min_size,
                          continuity=continuity)
    rate_metric = "demographic_parity_diff" if metric == "disparate_impact_ratio" else metric
    num, den = _RATES[rate_metric]
    n_d, n_a = d[..., list(den)].sum(axis=-1), a[..., list(den)].sum(axis=-1)
    base = _safe_ratio(a[..., list(num)].sum(axis=-1), n_a)
    note = _size_note(n_d, n_a, min_size)
    up, down = _rate_sides(n_d, n_a, base, alpha=alpha, power=power, continuity=continuity)
    if metric == "disparate_impact_ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            up = np.log1p(up / base)
            down = np.where(np.isnan(down), np.inf, -np.log1p(-down / base))
        note = np.where((note == "") & (base == 0.0), "undefined_advantaged_rate_zero", note)
    mde = np.fmax(up, down)  # NaN only when both sides are infeasible
    note = np.where((note == "") & ~np.isfinite(mde), "not_detectable", note)
    return np.where(note == "", mde, np.nan), note


def detectable_gap(
    metric: str,
    counts_d: ArrayLike,
    counts_a: ArrayLike,
    *,
    value: float,
    alpha: float,
    power: float = 0.8,
    min_size: int = MIN_SIZE,
    continuity: bool = True,
) -> Detectable:
    """Return the MDE of one comparison and whether its observed ``value`` reaches it.

    ``value`` is the metric as the grid reports it (a ratio for disparate impact, any sign
    convention for the differences); counts are two length-4 vectors.
    """
    mde, note = minimum_detectable_gap(
        metric, counts_d, counts_a, alpha=alpha, power=power, min_size=min_size,
        continuity=continuity,
    )
    if mde.shape != ():
        raise ValueError(
            f"counts_d, counts_a: expected one comparison (shape (4,)), got shape {mde.shape}"
        )
    reached = powered(metric, value, mde)
    return Detectable(float(mde), bool(reached), str(note))


def powered(metric: str, value: ArrayLike, mde: ArrayLike) -> NDArray[np.bool_]:
    """Return ``|value| >= mde`` (``|log value|`` for disparate impact); False if either is NaN."""
    v = np.asarray(value, dtype=np.float64)
    if metric == "disparate_impact_ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.log(v)
    m = np.asarray(mde, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.abs(v) >= m)  # comparisons with NaN are False


def _rate_sides(
    n_d: NDArray[np.int64],
    n_a: NDArray[np.int64],
    base: _Floats,
    *,
    alpha: float,
    power: float,
    continuity: bool,
) -> tuple[_Floats, _Floats]:
    """Detectable rate differences above and below ``base`` (NaN where a side leaves [0, 1])."""
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where((n_d > 0) & (n_a > 0), 1.0 / (1.0 / n_d + 1.0 / n_a), np.nan)

    def power_of(h: _Floats) -> _Floats:
        return np.asarray(normal_power(h, n_eff, alpha, alternative="two-sided"), np.float64)

    h = _bisect(power_of, np.zeros_like(n_eff), np.full_like(n_eff, np.pi), power)
    h = np.where(power_of(np.full_like(n_eff, np.pi)) >= power, h, np.nan)
    phi = np.arcsin(np.sqrt(base))
    up = np.where(phi + h / 2 <= np.pi / 2, np.sin(phi + h / 2) ** 2 - base, np.nan)
    down = np.where(phi - h / 2 >= 0.0, base - np.sin(phi - h / 2) ** 2, np.nan)
    if continuity:
        cc = _correction(n_d, n_a)
        up = np.where(up + cc <= 1.0 - base, up + cc, np.nan)
        down = np.where(down + cc <= base, down + cc, np.nan)
    return up, down


def _correction(n_d: ArrayLike, n_a: ArrayLike) -> _Floats:
    """The continuity correction ``½(1/n_d + 1/n_a)`` of a difference of two proportions."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(0.5 * (1.0 / np.asarray(n_d, np.float64)
                                 + 1.0 / np.asarray(n_a, np.float64)))


def _eodds_mde(
    d: NDArray[np.int64],
    a: NDArray[np.int64],
    *,
    alpha: float,
    power: float,
    min_size: int,
    continuity: bool,
) -> tuple[_Floats, NDArray[np.str_]]:
    """Worst case over the carrying component of the max(|TPR gap|, |FPR gap|) test's MDE."""
    parts = []
    for num, den in (_RATES["tpr_gap"], _RATES["fpr_gap"]):
        n_d, n_a = d[..., list(den)].sum(axis=-1), a[..., list(den)].sum(axis=-1)
        base = _safe_ratio(a[..., list(num)].sum(axis=-1), n_a)
        parts.append((n_d.astype(np.float64), n_a.astype(np.float64), base))
    note = _size_note(d[..., [_FN, _TP]].sum(axis=-1), a[..., [_FN, _TP]].sum(axis=-1), min_size)
    note = np.where(note == "", _size_note(d[..., [_TN, _FP]].sum(axis=-1),
                                           a[..., [_TN, _FP]].sum(axis=-1), min_size), note)
    worst = np.full(note.shape, -np.inf)
    for k, (n_d, n_a, base) in enumerate(parts):
        o_d, o_a, o_base = parts[1 - k]
        null_other = _null_sd(o_base, o_d, o_a)
        side_mdes = []
        for sign in (1.0, -1.0):
            room = 1.0 - base if sign > 0 else base
            power_of = _eodds_power(n_d, n_a, base, sign, null_other, alpha)
            delta = _bisect(power_of, np.zeros_like(base), room, power)
            if continuity:
                delta = delta + _correction(n_d, n_a)
            side_mdes.append(np.where((power_of(room) >= power) & (delta <= room), delta, np.nan))
        component = np.fmax(side_mdes[0], side_mdes[1])
        worst = np.maximum(worst, component)  # NaN (an undetectable component) propagates
    note = np.where((note == "") & ~np.isfinite(worst), "not_detectable", note)
    return np.where(note == "", worst, np.nan), note


def _null_sd(rate: _Floats, n_d: _Floats, n_a: _Floats) -> _Floats:
    """Null s.d. of a rate gap when both groups share ``rate`` (NaN for an empty group)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(rate * (1.0 - rate) * (1.0 / n_d + 1.0 / n_a))


def _inside(c: _Floats, sd: _Floats) -> _Floats:
    """P(|N(0, sd)| < c); 1 for a degenerate (zero-variance) component."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, 2.0 * ndtr(c / sd) - 1.0, 1.0)


def _max_critical(sd_1: _Floats, sd_2: _Floats, alpha: float) -> _Floats:
    """Solve ``P(|G_1| < c)·P(|G_2| < c) = 1 − alpha`` for ``c`` by Newton's method.

    The start, ``z_{1−(1−√(1−alpha))/2}·max(sd)``, makes each factor at least ``√(1 − alpha)``,
    so it lies right of the root; the product is increasing and concave there, so the steps
    descend monotonically onto the root (a dozen suffice to float precision).
    """
    level = np.sqrt(1.0 - alpha)
    c = float(ndtri(0.5 + level / 2.0)) * np.fmax(sd_1, sd_2)
    for _ in range(_NEWTON):
        f_1, f_2 = _inside(c, sd_1), _inside(c, sd_2)
        slope = f_1 * _density(c, sd_2) + f_2 * _density(c, sd_1)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope > 0, (f_1 * f_2 - (1.0 - alpha)) / slope, 0.0)
        c = np.fmax(c - step, 0.0)
    return c


def _density(c: _Floats, sd: _Floats) -> _Floats:
    """d/dc of :func:`_inside`: ``2φ(c/sd)/sd`` (0 for a degenerate component)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sd > 0, 2.0 * np.exp(-0.5 * (c / sd) ** 2) / (np.sqrt(2 * np.pi) * sd),
                        0.0)


def _eodds_power(
    n_d: _Floats, n_a: _Floats, base: _Floats, sign: float, null_other: _Floats, alpha: float
) -> Callable[[_Floats], _Floats]:
    """Power of the max test when one component's disadvantaged rate is ``base + sign·delta``.

    The permutation test conditions on the pooled counts, so the carrying component's null s.d.
    is taken at its pooled rate under the alternative; the critical value ``c`` of the maximum
    solves ``P(|G_k| < c)·P(|G_j| < c) = 1 − alpha`` (independent strata).
    """

    def power_of(delta: _Floats) -> _Floats:
        p_d = base + sign * delta
        null_own = _null_sd((n_d * p_d + n_a * base) / (n_d + n_a), n_d, n_a)
        crit = _max_critical(null_own, null_other, alpha)
        with np.errstate(divide="ignore", invalid="ignore"):
            sd = np.sqrt(p_d * (1.0 - p_d) / n_d + base * (1.0 - base) / n_a)
            keep = np.where(
                sd > 0,
                ndtr((crit - delta) / sd) - ndtr((-crit - delta) / sd),
                (delta < crit).astype(np.float64),
            )
        return np.asarray(1.0 - keep * _inside(crit, null_other), np.float64)

    return power_of


def _bisect(
    fn: Callable[[_Floats], _Floats], low: _Floats, high: _Floats, target: float
) -> _Floats:
    """Vectorised bisection for ``fn(x) = target`` with ``fn`` increasing on ``[low, high]``."""
    low, high = np.array(low, dtype=np.float64), np.array(high, dtype=np.float64)
    for _ in range(_ITERATIONS):
        mid = (low + high) / 2.0
        below = fn(mid) < target
        low, high = np.where(below, mid, low), np.where(below, high, mid)
    return (low + high) / 2.0


def _size_note(
    n_d: NDArray[np.int64], n_a: NDArray[np.int64], min_size: int
) -> NDArray[np.str_]:
    smallest = np.minimum(n_d, n_a)
    return np.where(smallest == 0, "empty_group",
                    np.where(smallest < min_size, "below_min_size", "")).astype("<U32")


def _safe_ratio(num: NDArray[np.int64], den: NDArray[np.int64]) -> _Floats:
    out = np.full(np.shape(num), np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _as_counts(name: str, counts: ArrayLike) -> NDArray[np.int64]:
    array = np.asarray(counts)
    if array.ndim == 0 or array.shape[-1] != 4:
        raise ValueError(f"{name}: expected counts of shape (..., 4), got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer) or np.any(array < 0):
        raise ValueError(f"{name}: expected non-negative integer counts, got {describe(counts)}")
    return array.astype(np.int64)


def _check_level(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 < float(value) < 1.0
    ):
        raise ValueError(f"{name}: expected a float in (0, 1), got {describe(value)}")
