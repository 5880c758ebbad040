"""Verdicts: what an estimate and its interval let the benchmark claim about a gap.

Every fairness gap gets one of four verdicts (:class:`Verdict`) beside its value:

* ``gap`` -- a difference is shown: the gap's test rejects "no gap" in the audit's
  Benjamini-Hochberg family (``q_value < alpha``) *and* its interval excludes no gap;
* ``parity`` -- the gap is shown to lie within the declared margin of parity: an equivalence
  test (two one-sided tests, TOST) at level ``alpha`` whose interval form is "the
  ``1 − 2·alpha`` interval lies inside the margin", with the audit's equivalence tests in their
  own Benjamini-Hochberg family (``equivalence_q_value < alpha``);
* ``inconclusive`` -- neither; ``bound`` names the largest gap that cannot be excluded: the far
  end of the ``1 − 2·t`` interval, ``t`` the one-sided level at which the family's
  Benjamini-Hochberg procedure decides (:func:`family_level`), so a row is ``parity`` exactly
  when its bound lies inside the margin;
* ``uninformative`` -- the decisions cannot show a gap (degenerate decisions, an undefined
  value, or too few informative training replicates).

``gap`` wins over ``parity``: a difference shown is never hidden, even when it is also shown to
be within the margin (its ``equivalence_q_value`` then says so).  A non-rejection is never parity.

A paired effect ``Δ`` (A against its reference B) gets one of five (:class:`EffectVerdict`), from
its interval and its two tests, in one replicate's ``effects.csv`` and in any combination of
replicates alike (:func:`effect_verdicts`):

=================  ==========================================================================
verdict            meaning (``Δ``: the change of A against its reference B)
=================  ==========================================================================
``reduced``        a decrease is shown: the interval lies wholly below 0 and the test of
                   ``Δ = 0`` is significant in its family.  Fairness: A is closer to parity
                   (``Δ |gap|`` < 0); accuracy, balanced accuracy: A costs accuracy.
``increased``      an increase is shown (the interval wholly above 0, significant): A is
                   further from parity, or gains accuracy.
``no_change``      no change larger than the margin ``δ``: the equivalence test of
                   ``|Δ| ≥ δ`` is significant in its family (the ``1 − 2α`` interval lies
                   inside ``±δ``) and no change is shown.
``inconclusive``   neither: the data allow no change and allow a change beyond ``±δ`` (the
                   interval says how large).  Never read as "no change".
``uninformative``  the effect says nothing: a strategy's decisions are degenerate or were not
                   run, or the effect is undefined (an empty subset, a zero rate).
=================  ==========================================================================

A matched-violation comparison says the same in a comparison's words
(:mod:`faircode.stats.matched`: ``better``, ``worse``, ``no_difference``, ...), read from
:func:`effect_verdicts`: one rule.

A shown change wins: an effect that is significant and also within ``±δ`` (a small, real change)
is ``reduced``/``increased``; its equivalence q says it is small.  The direction comes from the
interval, not the point value, so a verdict and the interval shown beside it always agree.

Evidence on the test scale
--------------------------
:class:`Evidence` is an estimate with one-sided standard errors and degrees of freedom on the
scale its tests are taken on (:func:`scale_of`, from the metric's scale in
:data:`faircode.core.metrics.METRIC_TABLE`): the gap itself for the differences (no gap = 0,
margin ``±δ``), the log ratio for disparate impact (no gap = 0, i.e. a ratio of 1; margin the
log of the declared ratio range, e.g. ``[0.8, 1.25]``), and for equalized odds, an unsigned
magnitude, its two signed components (:func:`max_abs_claims`).  The interval at level ``c`` is
``[θ − t_{ν_lo}·se_lo, θ + t_{ν_hi}·se_hi]`` with ``t`` the ``(1 + c)/2`` quantile of Student's
t (normal at ``ν = ∞``); the two-sided p-value of a null uses the side of the interval that faces
it, so ``p < 1 − c`` exactly when the ``c`` interval excludes the null, and the TOST p-value is
``max(P(T ≥ (θ − L)/se_lo), P(T ≥ (U − θ)/se_high))``, below ``alpha`` exactly when the
``1 − 2·alpha`` interval lies inside ``(L, U)``.  One-sided standard errors keep the asymmetry of
a score interval near rates of 0 or 1 (:func:`from_interval`: the halves of a closed-form
interval over its normal quantile).

Equalized odds
--------------
``max(|tpr_gap|, |fpr_gap|)`` has no smooth estimator at 0, so its claims come from the signed
components: the interval is the endpoint-wise maximum of the intervals of ``|tpr_gap|`` and
``|fpr_gap|`` implied by each component's interval at ``1 − (1 − c)/2`` (Bonferroni: it covers
with probability at least ``c``), its p-value ``min(1, 2·min(p_tpr, p_fpr))`` (consistent with
that interval), and its equivalence p-value ``max(p_eq_tpr, p_eq_fpr)`` (both components inside
``±δ``: an intersection-union test, level ``alpha`` without adjustment).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core import checks
from faircode.core.config import VerdictsConfig
from faircode.core.errors import describe
from faircode.core.metrics import metric_info

__all__ = [
    "UNREACHABLE_NOTE",
    "EffectVerdict",
    "Evidence",
    "GapClaims",
    "Margins",
    "Scale",
    "Verdict",
    "effect_verdicts",
    "family_level",
    "far_end",
    "from_interval",
    "gap_claims",
    "gap_verdicts",
    "interval_evidence",
    "log_ratio_interval",
    "margins_of",
    "max_abs_claims",
    "reach_of",
    "scale_of",
]

Floats = NDArray[np.float64]
Scale = Literal["difference", "log_ratio", "max_abs"]

_TEST_SCALE: dict[str, Scale] = {"difference": "difference", "ratio": "log_ratio",
                                 "magnitude": "max_abs", "distance": "difference",
                                 "level": "difference"}
UNREACHABLE_NOTE = "parity_not_reachable"
"""The note of an inconclusive gap whose interval is too wide for the declared margin at any
estimate (:func:`reach_of`): the data's size, not the gap, decides it."""
ZERO_SE = math.sqrt(2.0)
"""Katz's log standard error of a ratio whose numerator has no success: its ``1/½`` term."""


class Verdict(StrEnum):
    """What the evidence supports about one gap (module docstring)."""

    GAP = "gap"
    PARITY = "parity"
    INCONCLUSIVE = "inconclusive"
    UNINFORMATIVE = "uninformative"


class EffectVerdict(StrEnum):
    """What the evidence supports about a paired effect ``Δ`` (mitigated minus reference).

    For a fairness metric ``Δ`` is the change in distance from parity (``reduced``: closer),
    for accuracy and balanced accuracy the change itself.  ``no_change`` is shown by an
    equivalence test at the metric's margin, as ``parity`` is for a gap (module docstring).
    """

    REDUCED = "reduced"
    INCREASED = "increased"
    NO_CHANGE = "no_change"
    INCONCLUSIVE = "inconclusive"
    UNINFORMATIVE = "uninformative"


def scale_of(metric: str) -> Scale:
    """The scale ``metric``'s tests are taken on (module docstring); ``difference`` for any name
    that is no fairness metric (an effect, a performance metric)."""
    try:
        return _TEST_SCALE[metric_info(metric).scale]
    except ValueError:
        return "difference"


@dataclass(frozen=True, slots=True)
class Margins:
    """The equivalence margins: ``difference`` (``δ``, every difference and equalized odds)
    and ``ratio`` (disparate impact's range around 1, tested on the log scale)."""

    difference: float = 0.05
    ratio: tuple[float, float] = (0.8, 1.25)

    def __post_init__(self) -> None:
        d = self.difference
        if isinstance(d, bool) or not isinstance(d, numbers.Real) or not 0 < d < 1:
            raise ValueError(f"Margins: difference: expected a number in (0, 1), got "
                             f"{describe(d)}")
        low, high = self.ratio
        if not 0 < low < 1 < high:
            raise ValueError(f"Margins: ratio: expected (low, high) with 0 < low < 1 < high, "
                             f"got {describe(self.ratio)}")

    def bounds(self, metric: str) -> tuple[float, float]:
        """``(L, U)`` of ``metric``'s equivalence test on its test scale."""
        if scale_of(metric) == "log_ratio":
            return math.log(self.ratio[0]), math.log(self.ratio[1])
        return -self.difference, self.difference

    def reachable(self, metric: str, reach: ArrayLike) -> NDArray[np.bool_]:
        """Whether a ``reach`` (:attr:`GapClaims.reach`, as reported: a ratio for disparate
        impact) fits inside ``metric``'s margin: an interval of that half-width, placed at its
        best, could lie inside ``(L, U)`` (False where ``reach`` is NaN)."""
        r = np.asarray(reach, dtype=np.float64)
        lower, upper = self.bounds(metric)
        with np.errstate(divide="ignore", invalid="ignore"):
            half = np.log(r) if scale_of(metric) == "log_ratio" else r
        return np.asarray(2.0 * half < upper - lower, dtype=bool)


def margins_of(verdicts: VerdictsConfig) -> Margins:
    """The :class:`Margins` of the ``verdicts.*`` params."""
    return Margins(difference=verdicts.margin, ratio=verdicts.ratio_margin)


def _quantile(level: float, df: Floats) -> Floats:
    return np.asarray(sps.t.ppf(0.5 + level / 2.0, df), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class Evidence:
    """Estimates with one-sided standard errors and degrees of freedom, on a test scale.

    Arrays of one shape; ``df_low``/``df_high`` may be ``inf`` (normal).  NaN anywhere in a row
    makes every derived number of that row NaN.
    """

    estimate: Floats
    se_low: Floats
    se_high: Floats
    df_low: Floats
    df_high: Floats

    def __post_init__(self) -> None:
        shape = np.shape(self.estimate)
        for name in ("se_low", "se_high", "df_low", "df_high"):
            if np.shape(getattr(self, name)) != shape:
                raise ValueError(f"Evidence: {name}: expected shape {shape}, got "
                                 f"{np.shape(getattr(self, name))}")

    def interval(self, confidence: float) -> tuple[Floats, Floats]:
        """The two-sided interval at ``confidence``."""
        checks.check_confidence(confidence)
        return (self.estimate - _quantile(confidence, self.df_low) * self.se_low,
                self.estimate + _quantile(confidence, self.df_high) * self.se_high)

    def p_value(self, null: ArrayLike = 0.0) -> Floats:
        """Two-sided p-value of ``null``, from the side of the interval that faces it."""
        null = np.broadcast_to(np.asarray(null, dtype=np.float64), np.shape(self.estimate))
        above = self.estimate >= null
        se = np.where(above, self.se_low, self.se_high)
        df = np.where(above, self.df_low, self.df_high)
        return _two_sided(np.abs(self.estimate - null), se, df)

    def p_equivalence(self, lower: float, upper: float) -> Floats:
        """The TOST p-value of ``lower < θ < upper``."""
        low = _one_sided(self.estimate - lower, self.se_low, self.df_low)
        high = _one_sided(upper - self.estimate, self.se_high, self.df_high)
        return np.maximum(low, high)


def _one_sided(distance: Floats, se: Floats, df: Floats) -> Floats:
    """``P(T ≥ distance / se)``; a zero ``se`` gives 0 for a positive distance, else 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(se > 0, distance / np.where(se > 0, se, 1.0),
                         np.where(distance > 0, np.inf, -np.inf))
    out = np.asarray(sps.t.sf(ratio, df), dtype=np.float64)
    return np.where(np.isnan(distance) | np.isnan(se) | np.isnan(df), np.nan, out)


def _two_sided(distance: Floats, se: Floats, df: Floats) -> Floats:
    p = 2.0 * _one_sided(distance, se, df)
    p = np.where(distance == 0, 1.0, p)
    return np.where(np.isnan(distance) | np.isnan(se), np.nan, np.minimum(p, 1.0))


def from_interval(value: ArrayLike, low: ArrayLike, high: ArrayLike, *, confidence: float,
                  df: float = math.inf) -> Evidence:
    """Evidence from a closed-form interval at ``confidence``: each half over ``t`` (``df``).

    An estimate outside its own interval (a percentile interval can miss it) enters with the
    interval's symmetric half-width on both sides.
    """
    checks.check_confidence(confidence)
    v, lo, hi = (np.asarray(x, dtype=np.float64) for x in (value, low, high))
    z = float(sps.t.ppf(0.5 + confidence / 2.0, df))
    inside = (lo <= v) & (v <= hi)
    half = (hi - lo) / 2.0
    se_low = np.where(inside, v - lo, half) / z
    se_high = np.where(inside, hi - v, half) / z
    dfs = np.full(v.shape, df)
    return Evidence(v, se_low, se_high, dfs, dfs.copy())


def log_ratio_interval(value: ArrayLike, low: ArrayLike, high: ArrayLike, *,
                       confidence: float) -> tuple[Floats, Floats, Floats]:
    """A ratio's ``(value, low, high)`` on the log scale (Katz's log interval is symmetric there).

    A ratio of 0 (the numerator group has no success: Katz's lower limit 0) enters at Katz's
    continuity-corrected count ½: log estimate ``log(high) − z·√2`` and standard error ``√2``
    (the ``1/½`` term; the other terms are below ``1/20`` for groups of 20 or more rows).
    """
    v, lo, hi = (np.asarray(x, dtype=np.float64) for x in (value, low, high))
    z = float(sps.norm.ppf(0.5 + confidence / 2.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_hi = np.log(hi)
        zero = (v == 0) & np.isfinite(log_hi)
        log_v = np.where(zero, log_hi - z * ZERO_SE, np.log(v))
        log_lo = np.where(zero, log_hi - 2 * z * ZERO_SE, np.log(lo))
    bad = ~(v > 0) & ~zero
    return (np.where(bad, np.nan, log_v), np.where(bad, np.nan, log_lo),
            np.where(bad, np.nan, log_hi))


def far_end(low: ArrayLike, high: ArrayLike, null: ArrayLike = 0.0) -> Floats:
    """The end of ``[low, high]`` farther from ``null`` (NaN if either end is)."""
    lo, hi = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    centre = np.asarray(null, dtype=np.float64)
    out = np.where(np.abs(lo - centre) > np.abs(hi - centre), lo, hi)
    return np.where(np.isnan(lo) | np.isnan(hi), np.nan, out)


@dataclass(frozen=True, slots=True)
class GapClaims:
    """A metric's claims on its own scale: value, interval, the p-value of no gap, the TOST
    p-value at its margin, ``bound`` (the far end of the ``1 − 2·alpha`` interval) and
    ``reach``, the smallest margin parity could be shown within (:func:`reach_of`)."""

    value: Floats
    ci_low: Floats
    ci_high: Floats
    p_value: Floats
    p_equivalence: Floats
    bound: Floats
    reach: Floats


def reach_of(evidence: Evidence, *, alpha: float) -> Floats:
    """The smallest margin ``±m`` the evidence could show parity within: the half-width of its
    ``1 − 2·alpha`` interval (a TOST at level ``alpha`` alone, before any family), on the test
    scale.  Even an estimate of exactly no gap with this spread has that interval, so a margin
    at or below it can never be shown at this size: the limit is the data's, not the gap's."""
    low, high = evidence.interval(1.0 - 2.0 * alpha)
    return (high - low) / 2.0


def gap_claims(metric: str, evidence: Evidence, *, confidence: float, alpha: float,
               margins: Margins, level: float | None = None) -> GapClaims:
    """The claims of a difference or of disparate impact (log-scale ``evidence``, reported as
    ratios); equalized odds is :func:`max_abs_claims`.  ``bound`` is the far end of the
    ``1 − 2·level`` interval (``level`` default ``alpha``; a family's
    :func:`family_level` makes it the bound its equivalence decisions use)."""
    scale = scale_of(metric)
    if scale == "max_abs":
        raise ValueError(f"gap_claims: {metric}: expected a signed metric; equalized odds is "
                         "max_abs_claims of its components")
    _check_alpha(alpha)
    low, high = evidence.interval(confidence)
    eq_low, eq_high = evidence.interval(1.0 - 2.0 * (alpha if level is None else level))
    lower, upper = margins.bounds(metric)
    out = GapClaims(evidence.estimate, low, high, evidence.p_value(0.0),
                    evidence.p_equivalence(lower, upper), far_end(eq_low, eq_high),
                    reach_of(evidence, alpha=alpha))
    if scale == "log_ratio":  # the reach as a ratio r: parity within [1/r, r]
        return GapClaims(np.exp(out.value), np.exp(out.ci_low), np.exp(out.ci_high),
                         out.p_value, out.p_equivalence, np.exp(out.bound), np.exp(out.reach))
    # a difference of two rates (or of two distances from parity) lies in [-1, 1]: so do its
    # interval and the gap it cannot exclude (a K = 2 t-interval otherwise reaches past 1)
    return GapClaims(out.value, np.clip(out.ci_low, -1.0, 1.0), np.clip(out.ci_high, -1.0, 1.0),
                     out.p_value, out.p_equivalence, np.clip(out.bound, -1.0, 1.0),
                     np.minimum(out.reach, 1.0))


def max_abs_claims(tpr: Evidence, fpr: Evidence, *, confidence: float, alpha: float,
                   margins: Margins, level: float | None = None) -> GapClaims:
    """Equalized odds' claims from its signed components (module docstring); ``level`` as in
    :func:`gap_claims`."""
    _check_alpha(alpha)
    component = 1.0 - (1.0 - confidence) / 2.0
    bounds = [_abs_bounds(*e.interval(component)) for e in (tpr, fpr)]
    eq = [_abs_bounds(*e.interval(1.0 - 2.0 * (alpha if level is None else level)))
          for e in (tpr, fpr)]
    lower, upper = -margins.difference, margins.difference  # each component's margin
    value = np.maximum(np.abs(tpr.estimate), np.abs(fpr.estimate))
    p = np.minimum(1.0, 2.0 * np.minimum(tpr.p_value(), fpr.p_value()))
    p_eq = np.maximum(tpr.p_equivalence(lower, upper), fpr.p_equivalence(lower, upper))
    reach = np.maximum(reach_of(tpr, alpha=alpha), reach_of(fpr, alpha=alpha))  # both inside
    return GapClaims(value, np.maximum(bounds[0][0], bounds[1][0]),
                     np.maximum(bounds[0][1], bounds[1][1]), p, p_eq,
                     np.maximum(eq[0][1], eq[1][1]), np.minimum(reach, 1.0))


def family_level(p_values: ArrayLike, *, alpha: float) -> float:
    """The one-sided level at which Benjamini-Hochberg at ``alpha`` decides a family: a p-value
    is rejected exactly when it is at most ``alpha·max(R, 1)/m`` (``R`` rejections of ``m``
    finite p-values; ``alpha`` for an empty family).

    The far end of each row's ``1 − 2·level`` interval is then the gap its family's decision
    cannot exclude: below the margin exactly for the rows declared ``parity``.
    """
    _check_alpha(alpha)
    p = np.asarray(p_values, dtype=np.float64)
    p = np.sort(p[np.isfinite(p)])
    m = p.size
    if m == 0:
        return float(alpha)
    below = np.flatnonzero(p <= alpha * np.arange(1, m + 1) / m)
    rejected = int(below[-1]) + 1 if below.size else 0
    return float(alpha * max(rejected, 1) / m)


def _abs_bounds(low: Floats, high: Floats) -> tuple[Floats, Floats]:
    """The interval of ``|g|`` implied by an interval of ``g``."""
    straddles = (low <= 0.0) & (high >= 0.0)
    lower = np.where(straddles, 0.0, np.minimum(np.abs(low), np.abs(high)))
    return np.where(np.isnan(low), np.nan, lower), np.maximum(np.abs(low), np.abs(high))


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 0.5:
        raise ValueError(f"alpha: expected a number in (0, 0.5), got {describe(alpha)}")


def gap_verdicts(*, informative: ArrayLike, gap: ArrayLike, parity: ArrayLike) -> NDArray[
        np.object_]:
    """Each row's :class:`Verdict`: ``uninformative`` unless ``informative``, else ``gap``
    where ``gap`` (a difference shown), else ``parity`` where ``parity``, else
    ``inconclusive``."""
    ok, g, p = (np.asarray(x, dtype=bool) for x in (informative, gap, parity))
    out = np.full(ok.shape, Verdict.INCONCLUSIVE.value, dtype=object)
    out[p] = Verdict.PARITY.value
    out[g] = Verdict.GAP.value
    out[~ok] = Verdict.UNINFORMATIVE.value
    return out


def effect_verdicts(ci_low: ArrayLike, ci_high: ArrayLike, *, significant: ArrayLike,
                    equivalent: ArrayLike, informative: ArrayLike) -> NDArray[np.object_]:
    """Each effect's :class:`EffectVerdict` (module docstring), elementwise: ``uninformative``
    unless ``informative`` (the effect is defined and both strategies' decisions are
    informative) and the interval is defined, else ``reduced``/``increased`` where
    ``significant`` (the test of ``Δ = 0`` in its family; the direction from the interval,
    wholly below or above 0), else ``no_change`` where ``equivalent`` (the equivalence test in
    its family), else ``inconclusive``."""
    low = np.asarray(ci_low, dtype=np.float64)
    high = np.asarray(ci_high, dtype=np.float64)
    sig = np.asarray(significant, dtype=bool)
    usable = np.asarray(informative, dtype=bool) & np.isfinite(low) & np.isfinite(high)
    out = np.where(np.asarray(equivalent, dtype=bool), EffectVerdict.NO_CHANGE.value,
                   EffectVerdict.INCONCLUSIVE.value).astype(object)
    out[sig & (high < 0)] = EffectVerdict.REDUCED.value
    out[sig & (low > 0)] = EffectVerdict.INCREASED.value
    out[~usable] = EffectVerdict.UNINFORMATIVE.value
    return out


def interval_evidence(metric: str, value: ArrayLike, low: ArrayLike, high: ArrayLike, *,
                      confidence: float) -> Evidence:
    """One fit's evidence for a signed metric from its closed-form interval at ``confidence``
    (disparate impact on the log scale): :func:`from_interval` with ``ν = ∞``."""
    if scale_of(metric) == "log_ratio":
        value, low, high = log_ratio_interval(value, low, high, confidence=confidence)
    return from_interval(value, low, high, confidence=confidence)
