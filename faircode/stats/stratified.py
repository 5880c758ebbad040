"""The parity gap within strata: the Mantel–Haenszel common risk difference, count-level.

Is a gap explained by declared legitimate factors (résumé quality, a city, credit history)?
Within each stratum ``k`` the disadvantaged group's favourable-decision rate ``p_dk = x_dk /
n_dk`` is compared with the advantaged group's ``p_ak = x_ak / n_ak``; the strata's differences
are pooled with Mantel–Haenszel weights ``w_k = n_dk n_ak / N_k``:

    RD_MH = Σ_k w_k (p_dk − p_ak) / Σ_k w_k = Σ_k (x_dk n_ak − x_ak n_dk) / N_k / Σ_k w_k

(the Mantel–Haenszel estimator of a common risk difference; Greenland & Robins 1985).  With one
stratum it is the plain demographic-parity gap.  Decisions must be oriented first
(:func:`faircode.stats.metrics.orient`: 1 = favourable), so a negative value means the
disadvantaged group is worse off *at equal levels of the stratum*, as everywhere.

Design decisions
----------------
* **Interval**: ``RD_MH ± z·√V`` with Sato's (1989) variance, consistent both for many small
  strata and for few large ones (Greenland & Robins 1985 showed the estimator is; Sato gave the
  variance that is):
  ``V = (RD_MH Σ_k P_k + Σ_k Q_k) / (Σ_k w_k)²`` with
  ``P_k = (n_dk² x_ak − n_ak² x_dk + n_dk n_ak (n_ak − n_dk) / 2) / N_k²`` and
  ``Q_k = (x_dk (n_ak − x_ak) + x_ak (n_dk − x_dk)) / (2 N_k)``.  In one stratum ``V`` is the
  Wald variance ``p_d(1 − p_d)/n_d + p_a(1 − p_a)/n_a``; the interval is clipped to [−1, 1].
  Its coverage is measured by ``bench/stratified_coverage.py``.
* **Test**: a permutation test within strata, as every faircode p-value is a permutation test:
  the group labels are exchanged within each stratum, so each stratum keeps its size, its
  groups' sizes and its favourable decisions, and ``x_dk`` is hypergeometric; ``P`` draws of
  every stratum at once (count-level, no row is touched), statistic ``|RD_MH|``,
  ``p = (1 + #{|RD*| ≥ |RD|}) / (1 + P)``.  The Cochran–Mantel–Haenszel chi-square of the same
  null (no association in any stratum; without continuity correction) is reported beside it as
  ``cmh_p_value`` (it equals statsmodels' ``StratifiedTable.test_null_odds(correction=False)``).
* **Heterogeneity**: the pooled difference assumes one common difference across strata;
  Cochran's Q tests it.  Each compared stratum's difference ``d_k = p_dk − p_ak`` gets its
  Wald variance ``v_k = p_dk(1 − p_dk)/n_dk + p_ak(1 − p_ak)/n_ak`` and weight ``1/v_k``;
  ``Q = Σ_k (d_k − d̄)² / v_k`` around the inverse-variance mean ``d̄``, on ``S − 1`` degrees of
  freedom for the ``S`` strata used, ``p = P(χ²_{S−1} > Q)`` (DerSimonian & Laird 1986, the
  usual test of a common risk difference).  A stratum is used only when each group's rate is
  strictly between 0 and 1: at 0 or 1 a group's Wald variance is 0, which would give a thin
  stratum (8 rows against 1) a weight far beyond its information.  A small p says the strata's
  differences differ: the pooled gap then averages unlike gaps, and the per-stratum table
  (``stratum_counts``) shows them.
* **Strata with one group** carry no comparison (``w_k = 0``): they are counted in ``strata``
  but not in ``strata_compared`` and the note says ``strata_without_both_groups:<n>``; no
  stratum with both groups gives NaN and ``insufficient_data``.  A zero variance (every compared
  stratum all 0 or all 1 in both groups) gives the zero-width interval and ``zero_variance``.
* Seeds: the permutation draws from ``seed`` itself (the caller passes a child stream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as scipy_stats

from faircode.core import checks
from faircode.stats import resampling

__all__ = ["STRATIFIED_CI_METHOD", "Heterogeneity", "StratifiedGap", "cmh_p_value",
           "heterogeneity", "mantel_haenszel_rd", "stratified_gap", "stratum_counts"]

STRATIFIED_CI_METHOD = "mantel_haenszel_sato"
"""The ``ci_method`` of a stratified gap's interval."""

Counts = NDArray[np.int64]
"""Per stratum ``(n_d, x_d, n_a, x_a)``: group sizes and favourable decisions, shape (K, 4)."""


@dataclass(frozen=True, slots=True)
class Heterogeneity:
    """Cochran's Q of the strata's differences: statistic, degrees of freedom, p-value."""

    q: float
    df: int
    p_value: float

    def __post_init__(self) -> None:
        if self.df < 0:
            raise ValueError(f"Heterogeneity: df: expected >= 0, got {self.df}")


NO_HETEROGENEITY_TEST = Heterogeneity(float("nan"), 0, float("nan"))
"""Fewer than two strata with a variance: nothing to compare."""


@dataclass(frozen=True, slots=True)
class StratifiedGap:
    """The gap within strata of one attribute: estimate, interval, tests, counts, note."""

    value: float
    ci_low: float
    ci_high: float
    p_value: float
    cmh_p_value: float
    raw_gap: float
    """The plain parity gap of the same rows (every stratum, no weights)."""
    strata: int
    strata_compared: int
    n_disadvantaged: int
    n_advantaged: int
    note: str = ""
    heterogeneity: Heterogeneity = NO_HETEROGENEITY_TEST
    """Cochran's Q of a common difference across the compared strata (module docstring)."""

    def __post_init__(self) -> None:
        if not 0 <= self.strata_compared <= self.strata:
            raise ValueError(f"StratifiedGap: strata_compared {self.strata_compared} not in "
                             f"0..strata {self.strata}")
        if math.isnan(self.value) and not math.isnan(self.p_value):
            raise ValueError("StratifiedGap: p_value must be NaN when value is NaN")


def stratum_counts(y_pred: ArrayLike, disadvantaged: ArrayLike, strata: ArrayLike) -> Counts:
    """``(n_d, x_d, n_a, x_a)`` per stratum code ``0..max`` of oriented 0/1 decisions."""
    yhat = checks.as_binary("y_pred", y_pred)
    mask = checks.as_mask("disadvantaged", disadvantaged)
    codes = np.asarray(strata)
    if codes.ndim != 1 or not np.issubdtype(codes.dtype, np.integer) or (codes < 0).any():
        raise ValueError("strata: expected a 1-D array of non-negative integer codes")
    checks.check_lengths(y_pred=yhat, disadvantaged=mask, strata=codes)
    k = int(codes.max()) + 1 if codes.size else 0
    out = np.empty((k, 4), dtype=np.int64)
    for column, (rows, weights) in enumerate(((mask, None), (mask, yhat), (~mask, None),
                                              (~mask, yhat))):
        w = None if weights is None else weights[rows].astype(np.float64)
        out[:, column] = np.rint(np.bincount(codes[rows], weights=w, minlength=k))
    return out


def _rd(n_d: NDArray[np.float64], x_d: NDArray[np.float64], n_a: NDArray[np.float64],
        x_a: NDArray[np.float64]) -> NDArray[np.float64]:
    """RD_MH over the last axis (strata with both groups only, ``N > 0``)."""
    total = n_d + n_a
    return ((x_d * n_a - x_a * n_d) / total).sum(axis=-1) / (n_d * n_a / total).sum(axis=-1)


def mantel_haenszel_rd(counts: ArrayLike) -> tuple[float, float, int]:
    """``(RD_MH, Sato's variance, strata compared)`` of per-stratum ``(n_d, x_d, n_a, x_a)``.

    NaN and NaN when no stratum has both groups.
    """
    c = np.asarray(counts, dtype=np.float64).reshape(-1, 4)
    both = (c[:, 0] > 0) & (c[:, 2] > 0)
    if not both.any():
        return float("nan"), float("nan"), 0
    n_d, x_d, n_a, x_a = c[both].T
    total = n_d + n_a
    w = n_d * n_a / total
    rd = float(_rd(n_d, x_d, n_a, x_a))
    p = (n_d**2 * x_a - n_a**2 * x_d + n_d * n_a * (n_a - n_d) / 2.0) / total**2
    q = (x_d * (n_a - x_a) + x_a * (n_d - x_d)) / (2.0 * total)
    variance = (rd * p.sum() + q.sum()) / w.sum() ** 2
    return rd, max(float(variance), 0.0), int(both.sum())


def cmh_p_value(counts: ArrayLike) -> float:
    """The Cochran–Mantel–Haenszel chi-square p-value (1 df, no continuity correction).

    ``Σ_k (x_dk − E_k)`` over its null variance, ``E_k = n_dk m_k / N_k`` and ``Var_k = n_dk
    n_ak m_k (N_k − m_k) / (N_k² (N_k − 1))`` with ``m_k = x_dk + x_ak``; strata of fewer than
    two rows or one group carry nothing.  NaN when the null variance is 0.
    """
    c = np.asarray(counts, dtype=np.float64).reshape(-1, 4)
    n_d, x_d, n_a, x_a = c.T
    total, m = n_d + n_a, x_d + x_a
    use = (n_d > 0) & (n_a > 0) & (total > 1)
    n_d, x_d, n_a, total, m = n_d[use], x_d[use], n_a[use], total[use], m[use]
    variance = (n_d * n_a * m * (total - m) / (total**2 * (total - 1))).sum()
    if variance <= 0:
        return float("nan")
    statistic = (x_d - n_d * m / total).sum() ** 2 / variance
    return float(scipy_stats.chi2.sf(statistic, df=1))


def heterogeneity(counts: ArrayLike) -> Heterogeneity:
    """Cochran's Q test of one common difference across strata (module docstring).

    ``counts`` are per-stratum ``(n_d, x_d, n_a, x_a)``; a stratum without both groups, or with
    a group's rate at 0 or 1, carries no weight.  Fewer than two used strata: NaN, df 0, NaN.
    """
    c = np.asarray(counts, dtype=np.float64).reshape(-1, 4)
    c = c[(c[:, 0] > 0) & (c[:, 2] > 0)]
    n_d, x_d, n_a, x_a = c.T
    p_d, p_a = x_d / n_d, x_a / n_a
    variance = p_d * (1 - p_d) / n_d + p_a * (1 - p_a) / n_a
    used = (p_d > 0) & (p_d < 1) & (p_a > 0) & (p_a < 1)
    if used.sum() < 2:
        return NO_HETEROGENEITY_TEST
    d, w = (p_d - p_a)[used], 1.0 / variance[used]
    mean = float((w * d).sum() / w.sum())
    q = float((w * (d - mean) ** 2).sum())
    df = int(used.sum()) - 1
    return Heterogeneity(q, df, float(scipy_stats.chi2.sf(q, df=df)))


def _permuted(counts: NDArray[np.float64], *, n_permutations: int,
              rng: np.random.Generator) -> NDArray[np.float64]:
    """RD_MH of ``n_permutations`` within-stratum relabellings (hypergeometric ``x_d``)."""
    n_d, x_d, n_a, x_a = counts.T
    m = (x_d + x_a).astype(np.int64)
    total = (n_d + n_a).astype(np.int64)
    draws = rng.hypergeometric(m, total - m, n_d.astype(np.int64),
                               size=(n_permutations, m.size)).astype(np.float64)
    return _rd(n_d, draws, n_a, m - draws)


def stratified_gap(
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    strata: ArrayLike,
    *,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
) -> StratifiedGap:
    """The Mantel–Haenszel gap of oriented decisions ``y_pred`` within ``strata`` (codes).

    See the module docstring for the estimator, its interval and its two tests.
    """
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    counts = stratum_counts(y_pred, disadvantaged, strata)
    totals = counts.sum(axis=0)
    raw = (totals[1] / totals[0] - totals[3] / totals[2]) if totals[0] and totals[2] \
        else float("nan")
    rd, variance, compared = mantel_haenszel_rd(counts)
    both = (counts[:, 0] > 0) & (counts[:, 2] > 0)
    present = int((counts[:, 0] + counts[:, 2] > 0).sum())
    notes = [f"strata_without_both_groups:{present - compared}"] if present > compared else []
    used = counts[both]
    n_d, n_a = int(used[:, 0].sum()), int(used[:, 2].sum())
    nan = float("nan")
    if compared == 0:
        return StratifiedGap(nan, nan, nan, nan, nan, float(raw), present, 0, n_d, n_a,
                             ";".join(["insufficient_data", *notes]))
    z = resampling.z_quantile(confidence)
    half = z * math.sqrt(variance)
    if variance == 0.0:
        notes.append("zero_variance")
    rng = np.random.default_rng(seed)
    permuted = _permuted(used.astype(np.float64), n_permutations=n_permutations, rng=rng)
    return StratifiedGap(
        value=rd, ci_low=max(-1.0, rd - half), ci_high=min(1.0, rd + half),
        p_value=resampling.permutation_p_value(rd, permuted), cmh_p_value=cmh_p_value(counts),
        raw_gap=float(raw), strata=present, strata_compared=compared, n_disadvantaged=n_d,
        n_advantaged=n_a, note=";".join(notes), heterogeneity=heterogeneity(counts))
