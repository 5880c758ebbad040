"""Minimum detectable gaps: how large a fairness gap the audit could have seen at a given power.

A non-significant gap on 200 test rows says more about the sample than about the model.  For
every fairness comparison this module returns the **minimum detectable gap** (MDE): the
smallest absolute gap that faircode's two-sided test at level ``alpha`` detects with probability
``power`` (default 0.8), given the two groups' confusion counts (cell order ``(TN, FP, FN, TP)``
of :mod:`faircode.stats.resampling`).  ``powered`` is ``|observed gap| >= MDE``.

Definitions
-----------
* **Rate differences** (demographic parity: decision rate over all rows; equal opportunity /
  ``tpr_gap``: over ``y = 1`` rows; ``fpr_gap``: over ``y = 0`` rows; predictive parity: over
  ``ŷ = 1`` rows; accuracy equality: accuracy over all rows).  With the two groups'
  denominators ``n_d``, ``n_a`` and the *advantaged group's observed rate* ``p_a`` as the base,
  the detectable Cohen's ``h = 2·asin√p_d − 2·asin√p_a`` is the root of
  ``statsmodels.stats.power.normal_power(h, n_eff, alpha, 'two-sided') = power`` with
  ``n_eff = 1 / (1/n_d + 1/n_a)`` — exactly ``NormalIndPower().solve_power(nobs1=n_d,
  ratio=n_a/n_d)``, solved here for all comparisons at once.  ``h`` is turned back into rates on
  both sides of the base, ``p_± = sin²(asin√p_a ± h/2)``, and the MDE is the **harder side**,
  ``max(p_+ − p_a, p_a − p_−)``, over the sides that stay inside [0, 1].  So every gap of at
  least the MDE, in either direction, has at least the target power; a side that leaves [0, 1]
  holds no gap that large.  **Continuity correction:** faircode's permutation test is exact
  and conditional on the pooled counts, hence conservative like Fisher's test, and the plain
  normal approximation overstates its power (exact power at the plain MDE 0.67–0.79 instead of
  0.80 for groups of 20–300 rows; ``bench/power.py``).  So ``½(1/n_d + 1/n_a)`` — the classical
  correction of a two-proportion test (Fleiss, Levin & Paik, *Statistical Methods for Rates and
  Proportions*, 3rd ed., ch. 4) — is added to each side's difference (``continuity=False`` turns
  it off); with it the exact power at the MDE is 0.76–0.86 for 20–50 rows per group and
  0.79–0.83 for 74–300.  The advantaged rate is used (not the pooled one) so that the MDE does
  not move with the observed gap itself, and because it is the orientation-free reference: the
  MDE is the same whichever sign convention the gap has.
* **Equalized odds** is ``max(|TPR gap|, |FPR gap|)`` tested with that maximum (each gap
  permuted in its own stratum).  The smaller of the two components' MDEs would be wrong: a gap
  carried by the noisier component is not detected at that size, and the maximum's critical
  value is larger than either component's own.  The MDE is the worst case over which component
  carries the gap, with the other at 0 (the least favourable case, since power rises with
  either component): normal approximation on the raw scale, null s.d.
  ``σ0_k = √(p̄_k(1−p̄_k)(1/n_dk + 1/n_ak))`` at the pooled rate ``p̄_k`` (the permutation
  test conditions on it; the non-carrying component's pooled rate is its advantaged rate), the
  critical value ``c`` from ``(2Φ(c/σ0_tpr) − 1)(2Φ(c/σ0_fpr) − 1) = 1 − alpha``, and the
  carrying component's alternative s.d. ``√(p_d(1−p_d)/n_d + p_a(1−p_a)/n_a)``, plus that
  component's continuity correction.  Harder side and worst component, as above; the result is
  always larger than both component MDEs.
* **Disparate impact** is on the ``|log ratio|`` scale.  Its permutation test shuffles the same
  stratum (all rows) as demographic parity, so the detectable disadvantaged rates are the same
  ``p_±``; the MDE is ``max(log(p_+/p_a), log(p_a/p_−))``.  A delta-method standard error is
  not used: its power is not monotone as ``p_d → 0`` (the s.e. of ``log p_d`` explodes), so it
  would call the most extreme ratios undetectable.  If the lower side leaves [0, 1] (even
  ``p_d = 0`` is not detected at the target power) arbitrarily large log-ratio gaps exist that
  are not detected, and the MDE is n/a (``not_detectable``).

n/a reasons (the MDE is NaN and ``powered`` False): ``empty_group`` (a denominator is 0),
``below_min_size`` (a denominator below ``min_size``, default :data:`MIN_SIZE`),
``undefined_advantaged_rate_zero`` (disparate impact with ``p_a = 0``), ``not_detectable`` (no
gap inside [0, 1] reaches the power).

Design decisions
----------------
* ``alpha`` is the per-comparison two-sided level.  The grid's ``significant`` column uses
  Benjamini–Hochberg q-values at the same ``alpha``, which is stricter, so this MDE is a lower
  bound on the gap a BH-significant finding needs; it answers "could this one test see it?".
* Everything is vectorised over a leading axis of comparisons, and :func:`detectable_gaps` solves
  a batch of comparisons of *mixed* metrics at once: every rate-type comparison (the five rate
  differences and disparate impact) in one bisection, every equalized-odds comparison with its
  two components x two sides stacked in one bisection.  The only loops are over bisection and
  Newton steps.  The check against faircode's own count-level permutation test is
  ``bench/power.py`` (and a fast version in ``tests/test_power.py``).
* **Fast, and bit-identical to the one-comparison-at-a-time implementation** that produced the
  committed results (frozen in ``tests/power_reference.py``; ``bench/power_speed.py`` times both,
  ``bench/power_committed.py`` recomputes every committed row): only comparisons whose MDE is
  defined by size are solved, and the iterations stop as soon as further steps could not change
  a bit (:mod:`faircode.stats._power_solvers`).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core.errors import describe
from faircode.core.metrics import FAIRNESS_METRICS, metric_info, table_of
from faircode.stats import _power_solvers as solve

__all__ = [
    "MIN_SIZE",
    "NA_REASONS",
    "POWER_METRICS",
    "Detectable",
    "detectable_gap",
    "detectable_gaps",
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

_Floats = NDArray[np.float64]
_Ints = NDArray[np.int64]

_RATES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    m.name: (m.numerator, m.denominator) for m in table_of("binary") if m.scale != "magnitude"}
"""Each rate-type metric's (numerator cells, denominator cells) of the group rate it compares
(:data:`faircode.core.metrics.METRIC_TABLE`; disparate impact: demographic parity's rate)."""
POWER_METRICS: tuple[str, ...] = FAIRNESS_METRICS
"""Metric names :func:`minimum_detectable_gap` knows (every fairness metric)."""

# 0/1 cell masks of each rate-type metric's numerator and denominator
_CELLS: dict[str, tuple[_Ints, _Ints]] = {
    m: tuple(np.isin(np.arange(4), cells).astype(np.int64)  # type: ignore[misc]
             for cells in rates)
    for m, rates in _RATES.items()
}


def _is(scale: str, metrics: Sequence[str]) -> NDArray[np.bool_]:
    """Which of ``metrics`` are on ``scale``."""
    return np.array([metric_info(m).scale == scale for m in metrics], dtype=bool)


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
    _check_metric(metric)
    _check_options(alpha, power, min_size)
    d, a = _as_counts("counts_d", counts_d), _as_counts("counts_a", counts_a)
    d, a = np.broadcast_arrays(d, a)
    shape = d.shape[:-1]
    flat_d, flat_a = d.reshape(-1, 4), a.reshape(-1, 4)
    mde, note = _solve((metric,) * flat_d.shape[0], flat_d, flat_a, alpha=alpha, power=power,
                       min_size=min_size, continuity=continuity)
    return mde.reshape(shape), note.reshape(shape)


def detectable_gaps(
    metrics: Sequence[str],
    counts_d: ArrayLike,
    counts_a: ArrayLike,
    *,
    values: ArrayLike,
    alpha: float,
    power: float = 0.8,
    min_size: int = MIN_SIZE,
    continuity: bool = True,
) -> tuple[_Floats, NDArray[np.bool_], NDArray[np.str_]]:
    """Return the MDE, ``powered`` flag and n/a reason of ``k`` comparisons of mixed metrics.

    Parameters
    ----------
    metrics
        ``k`` names from :data:`POWER_METRICS`, one per comparison (any mix, any order).
    counts_d, counts_a
        ``(k, 4)`` ``(TN, FP, FN, TP)`` counts of the disadvantaged and advantaged groups.
    values
        ``k`` observed values as the grid reports them (see :func:`powered`).
    alpha, power, min_size, continuity
        As in :func:`minimum_detectable_gap`.

    Returns
    -------
    mde, powered, note
        Three length-``k`` arrays; each entry equals :func:`detectable_gap` on that row, bit
        for bit (all rate-type rows are solved together, and all equalized-odds rows; see the
        module docstring).  ``k = 0`` gives three empty arrays.
    """
    names = tuple(metrics)
    for name in names:
        _check_metric(name)
    _check_options(alpha, power, min_size)
    k = len(names)
    if k == 0 and np.size(counts_d) == np.size(counts_a) == np.size(values) == 0:
        return np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0, dtype="<U32")
    d, a = _as_counts("counts_d", counts_d), _as_counts("counts_a", counts_a)
    v = np.asarray(values, dtype=np.float64)
    for label, shape in (("counts_d", d.shape), ("counts_a", a.shape), ("values", v.shape)):
        if shape != ((k, 4) if label != "values" else (k,)):
            want = f"({k}, 4)" if label != "values" else f"({k},)"
            raise ValueError(f"{label}: expected shape {want} (one row per metric), "
                             f"got shape {shape}")
    mde, note = _solve(names, d, a, alpha=alpha, power=power, min_size=min_size,
                       continuity=continuity)
    return mde, _reached(v, mde, log=_is("ratio", names)), note


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
    convention for the differences); counts are two length-4 vectors.  For many comparisons
    use :func:`detectable_gaps` (one call, the same numbers).
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
    """Return ``|value| >= mde`` (``|log value|`` for a ratio such as disparate impact); False if
    either is NaN."""
    return _reached(value, mde, log=metric_info(metric).scale == "ratio")


def _reached(value: ArrayLike, mde: ArrayLike, *, log: ArrayLike) -> NDArray[np.bool_]:
    """``|value| >= mde`` elementwise, on the log scale where ``log``; False if either is NaN."""
    v = np.asarray(value, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(log, np.log(v), v)
    m = np.asarray(mde, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.asarray(np.abs(v) >= m)  # comparisons with NaN are False


def _solve(
    metrics: Sequence[str], d: _Ints, a: _Ints, *, alpha: float, power: float, min_size: int,
    continuity: bool,
) -> tuple[_Floats, NDArray[np.str_]]:
    """MDEs and notes of validated ``(k, 4)`` counts: rate-type rows together, then EO rows."""
    magnitude = _is("magnitude", metrics)
    mde, note = np.full(len(metrics), np.nan), np.full(len(metrics), "", dtype="<U32")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if (~magnitude).any():
            rest = [m for m, e in zip(metrics, magnitude, strict=True) if not e]
            mde[~magnitude], note[~magnitude] = _rate_mde(
                rest, d[~magnitude], a[~magnitude], alpha=alpha, power=power,
                min_size=min_size, continuity=continuity)
        for name in dict.fromkeys(m for m, e in zip(metrics, magnitude, strict=True) if e):
            rows = np.array([m == name for m in metrics], dtype=bool)
            first, second = (c.value for c in metric_info(name).components)
            mde[rows], note[rows] = _max_abs_mde((first, second), d[rows], a[rows], alpha=alpha,
                                                 power=power, min_size=min_size,
                                                 continuity=continuity)
    return mde, note


def _rate_mde(
    metrics: Sequence[str], d: _Ints, a: _Ints, *, alpha: float, power: float, min_size: int,
    continuity: bool,
) -> tuple[_Floats, NDArray[np.str_]]:
    """The rate-difference and disparate-impact MDEs of mixed rows (one bisection for all)."""
    num = np.stack([_CELLS[m][0] for m in metrics])
    den = np.stack([_CELLS[m][1] for m in metrics])
    n_d, n_a = (d * den).sum(axis=-1), (a * den).sum(axis=-1)
    base = _safe_ratio((a * num).sum(axis=-1), n_a)
    note = _size_note(n_d, n_a, min_size)
    live = note == ""  # the others are n/a by size: nothing to solve
    up, down = np.full(len(metrics), np.nan), np.full(len(metrics), np.nan)
    up[live], down[live] = _rate_sides(n_d[live], n_a[live], base[live], alpha=alpha,
                                       power=power, continuity=continuity)
    di = _is("ratio", metrics)  # disparate impact: a ratio of the same rates
    if di.any():
        up[di] = np.log1p(up[di] / base[di])
        down[di] = np.where(np.isnan(down[di]), np.inf, -np.log1p(-down[di] / base[di]))
        note = np.where(di & (note == "") & (base == 0.0), "undefined_advantaged_rate_zero", note)
    mde = np.fmax(up, down)  # NaN only when both sides are infeasible
    note = np.where((note == "") & ~np.isfinite(mde), "not_detectable", note)
    return np.where(note == "", mde, np.nan), note


def _rate_sides(
    n_d: _Ints, n_a: _Ints, base: _Floats, *, alpha: float, power: float, continuity: bool,
) -> tuple[_Floats, _Floats]:
    """Detectable rate differences above and below ``base`` (NaN where a side leaves [0, 1])."""
    n_eff = np.where((n_d > 0) & (n_a > 0), 1.0 / (1.0 / n_d + 1.0 / n_a), np.nan)
    power_of = solve.rate_power(np.sqrt(n_eff), alpha)
    h = solve.bisect(power_of, np.zeros_like(n_eff), np.full_like(n_eff, np.pi), power)
    h = np.where(power_of(np.full_like(n_eff, np.pi)) >= power, h, np.nan)
    phi = np.arcsin(np.sqrt(base))
    up = np.where(phi + h / 2 <= np.pi / 2, solve.square(np.sin(phi + h / 2)) - base, np.nan)
    down = np.where(phi - h / 2 >= 0.0, base - solve.square(np.sin(phi - h / 2)), np.nan)
    if continuity:
        cc = solve.correction(n_d, n_a)
        up = np.where(up + cc <= 1.0 - base, up + cc, np.nan)
        down = np.where(down + cc <= base, down + cc, np.nan)
    return up, down


def _max_abs_mde(
    components: tuple[str, str], d: _Ints, a: _Ints, *, alpha: float, power: float,
    min_size: int, continuity: bool,
) -> tuple[_Floats, NDArray[np.str_]]:
    """Worst case over the carrying component of a ``max(|first|, |second|)`` test's MDE
    (equalized odds: the TPR gap and the FPR gap)."""
    rates = [_RATES[c] for c in components]
    first, second = (list(den) for _, den in rates)
    note = _size_note(d[..., first].sum(axis=-1), a[..., first].sum(axis=-1), min_size)
    note = np.where(note == "", _size_note(d[..., second].sum(axis=-1),
                                           a[..., second].sum(axis=-1), min_size), note)
    live = note == ""
    parts = []
    for num, den in rates:
        n_d, n_a = d[live][:, list(den)].sum(axis=-1), a[live][:, list(den)].sum(axis=-1)
        base = _safe_ratio(a[live][:, list(num)].sum(axis=-1), n_a)
        parts.append((n_d.astype(np.float64), n_a.astype(np.float64), base))
    # rows of the stacked problem: (first carries, +), (first, -), (second, +), (second, -)
    n_d, n_a, base = (np.stack([parts[k][i] for k in (0, 0, 1, 1)]) for i in range(3))
    null_other = np.stack([solve.null_sd(parts[1 - k][2], parts[1 - k][0], parts[1 - k][1])
                           for k in (0, 0, 1, 1)])
    sign = np.array([1.0, -1.0, 1.0, -1.0])[:, None]
    room = np.where(sign > 0, 1.0 - base, base)
    power_of = solve.eodds_power(n_d, n_a, base, sign, null_other, alpha)
    delta = solve.bisect(power_of, np.zeros_like(base), room, power, ahead=True)
    if continuity:
        delta = delta + solve.correction(n_d, n_a)
    side = np.where((power_of(room) >= power) & (delta <= room), delta, np.nan)
    component = np.fmax(side[0::2], side[1::2])  # (first, second) x live rows
    worst = np.full(len(note), np.nan)
    worst[live] = np.maximum(component[0], component[1])  # NaN (undetectable) propagates
    note = np.where((note == "") & ~np.isfinite(worst), "not_detectable", note)
    return np.where(note == "", worst, np.nan), note


def _size_note(n_d: _Ints, n_a: _Ints, min_size: int) -> NDArray[np.str_]:
    smallest = np.minimum(n_d, n_a)
    return np.where(smallest == 0, "empty_group",
                    np.where(smallest < min_size, "below_min_size", "")).astype("<U32")


def _safe_ratio(num: _Ints, den: _Ints) -> _Floats:
    out = np.full(np.shape(num), np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _as_counts(name: str, counts: ArrayLike) -> _Ints:
    array = np.asarray(counts)
    if array.ndim == 0 or array.shape[-1] != 4:
        raise ValueError(f"{name}: expected counts of shape (..., 4), got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer) or np.any(array < 0):
        raise ValueError(f"{name}: expected non-negative integer counts, got {describe(counts)}")
    return array.astype(np.int64)


def _check_metric(metric: str) -> None:
    if metric not in POWER_METRICS:
        raise ValueError(
            f"metric: expected one of {', '.join(POWER_METRICS)}, got {describe(metric)}"
        )


def _check_options(alpha: float, power: float, min_size: int) -> None:
    _check_level("alpha", alpha)
    _check_level("power", power)
    if isinstance(min_size, bool) or not isinstance(min_size, numbers.Integral) or min_size < 1:
        raise ValueError(f"min_size: expected a positive int, got {describe(min_size)}")


def _check_level(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 < float(value) < 1.0
    ):
        raise ValueError(f"{name}: expected a float in (0, 1), got {describe(value)}")
