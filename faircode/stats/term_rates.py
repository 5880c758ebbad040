"""Per-subgroup error rates against the background: Dixon et al.'s per-term comparison, exact.

For subgroups (the sentences holding an identity term) and one error rate (false positives
among label-0 rows, false negatives among label-1 rows) :func:`subgroup_rates` returns each
subgroup's rate, the background's (every other eligible row), their difference, an exact test and
the minimum detectable difference.  It takes plain arrays: which rows are eligible, which are
errors, which belong to the subgroup, and (optionally) each row's stratum.

Design decisions
----------------
* **Intervals**: Clopper–Pearson at Kish's effective counts.  With strata that repeat (a template
  frame holds a term's sentence for every name), a rate's design effect is the linearised
  cluster variance of a ratio estimator over its binomial variance
  (:func:`faircode.stats.groups.design_effects`), and its counts are divided by ``max(1,
  deff)`` -- the flip rates' rule (:mod:`faircode.stats.flips`).  Deterministic.
* **Test**: the exact conditional test stratified by frame.  Within each stratum the subgroup's
  rows are exchangeable with the others under "the term changes nothing", so the subgroup's
  error count there is hypergeometric given the stratum's rows and errors, and the total ``T``
  is the sum of independent hypergeometrics -- its distribution is computed exactly by
  convolution (the exact conditional version of the Cochran–Mantel–Haenszel test; one stratum:
  Fisher's exact test, ``scipy.stats.fisher_exact``).  Two-sided as Fisher's: the probability of
  every total no more likely than the observed one, ``p = Σ P(T = t') over P(t') <= P(t)``
  (within a relative 1e-9, so floating-point ties count).  No resampling: nothing here needs
  a seed.  Comparing within frames is what makes the test valid when the term is not spread
  evenly across frames.
* **Minimum detectable difference**: :func:`faircode.stats.power.minimum_detectable_gap` of a
  rate difference at the two groups' effective sizes (counts divided by each one's design
  effect and rounded), with the background's rate as the base; NaN with its reason below 20
  effective rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special
from scipy import stats as sps

from faircode.core.checks import as_mask, check_confidence, check_lengths
from faircode.core.metrics import Metric
from faircode.stats import clusters
from faircode.stats.groups import design_effects
from faircode.stats.power import minimum_detectable_gap

__all__ = ["SubgroupRate", "clopper_pearson", "stratified_exact_p", "subgroup_rates"]

_TIE = 1e-9


@dataclass(frozen=True, slots=True)
class SubgroupRate:
    """One subgroup's error rate against the background's (see the module docstring)."""

    n: int
    errors: int
    rate: float
    ci_low: float
    ci_high: float
    design_effect: float
    background_n: int
    background_errors: int
    background_rate: float
    background_ci_low: float
    background_ci_high: float
    background_design_effect: float
    difference: float
    p_value: float
    mde: float
    mde_note: str
    note: str = ""


def clopper_pearson(x: float, n: float, *, confidence: float) -> tuple[float, float]:
    """Clopper–Pearson's beta-quantile interval of ``x / n``, for fractional (effective) counts
    too; ``(nan, nan)`` when ``n`` is 0."""
    if n <= 0:
        return math.nan, math.nan
    alpha = 1.0 - confidence
    low = 0.0 if x <= 0 else float(sps.beta.ppf(alpha / 2, x, n - x + 1))
    high = 1.0 if x >= n else float(sps.beta.ppf(1 - alpha / 2, x + 1, n - x))
    return low, high


def _hypergeom_pmf(total: int, good: int, drawn: int, k: NDArray[np.int64]
                   ) -> NDArray[np.float64]:
    """``P(X = k)`` of ``Hypergeom(total, good, drawn)`` from log-gamma (no scipy overhead)."""
    lg = special.gammaln

    def log_choose(n: float, r: NDArray[np.float64] | float) -> NDArray[np.float64]:
        return np.asarray(lg(n + 1) - lg(np.asarray(r) + 1) - lg(n - np.asarray(r) + 1))

    kf = k.astype(np.float64)
    logp = (log_choose(good, kf) + log_choose(total - good, drawn - kf)
            - log_choose(total, float(drawn)))
    pmf = np.exp(logp)
    return pmf / pmf.sum()


def stratified_exact_p(stratum_rows: ArrayLike, stratum_errors: ArrayLike,
                       member_rows: ArrayLike, observed: int) -> float:
    """Two-sided exact p of ``observed`` subgroup errors, the sum over strata of independent
    ``Hypergeom(rows, errors, members)`` (arrays, one entry per stratum)."""
    rows = np.asarray(stratum_rows, dtype=np.int64)
    errors = np.asarray(stratum_errors, dtype=np.int64)
    members = np.asarray(member_rows, dtype=np.int64)
    low = np.maximum(0, members - (rows - errors))
    high = np.minimum(members, errors)
    offset = int(low.sum())
    pmf = np.ones(1)
    for i in np.flatnonzero(high > low):
        support = np.arange(low[i], high[i] + 1)
        pmf = np.convolve(pmf, _hypergeom_pmf(int(rows[i]), int(errors[i]), int(members[i]),
                                              support))
    at = observed - offset
    if not 0 <= at < pmf.size:
        raise ValueError(f"observed: expected a count in [{offset}, {offset + pmf.size - 1}], "
                         f"got {observed}")
    return float(min(1.0, pmf[pmf <= pmf[at] * (1 + _TIE)].sum()))


def _deff(errors: NDArray[np.float64], rows: NDArray[np.float64]) -> float:
    """The rate's design effect from its per-stratum errors and rows (1.0 when no stratum holds
    more than one row)."""
    if rows.sum() == 0 or rows.max() <= 1:
        return 1.0
    return float(design_effects(errors[:, None], rows[:, None])[0])


def subgroup_rates(
    errors: ArrayLike,
    eligible: ArrayLike,
    members: Sequence[ArrayLike],
    *,
    strata: ArrayLike | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
) -> tuple[SubgroupRate, ...]:
    """The error rate of each subgroup of ``members`` among the ``eligible`` rows against the
    rest's (one :class:`SubgroupRate` per mask, in order).

    ``errors``, ``eligible`` and every member are boolean masks of one length (an error counts
    only where eligible); ``strata`` an optional stratum id per row (the test's strata and the
    design effects' clusters; without it, or when no stratum repeats, rows are independent and
    the test is Fisher's).
    """
    err, ok = as_mask("errors", errors), as_mask("eligible", eligible)
    masks = [as_mask(f"members[{i}]", m) for i, m in enumerate(members)]
    check_lengths(errors=err, eligible=ok, **{f"members_{i}": m for i, m in enumerate(masks)})
    check_confidence(confidence)
    ids = None if strata is None else clusters.repeated_units(strata, err.size)
    stratum = (np.zeros(err.size, dtype=np.int64) if ids is None else ids)[ok]
    n_strata = int(stratum.max()) + 1 if stratum.size else 1
    wrong = err[ok].astype(np.float64)
    rows_s = np.bincount(stratum, minlength=n_strata).astype(np.int64)
    errors_s = np.bincount(stratum, weights=wrong, minlength=n_strata).astype(np.float64)
    rates = [_one(wrong, stratum, mask[ok], rows_s, errors_s, repeated=ids is not None,
                  confidence=confidence) for mask in masks]
    return _with_mde(rates, alpha=alpha, power=power)


def _one(err: NDArray[np.float64], stratum: NDArray[np.int64], member: NDArray[np.bool_],
         rows_s: NDArray[np.int64], errors_s: NDArray[np.float64], *, repeated: bool,
         confidence: float) -> SubgroupRate:
    n_strata = rows_s.size
    m_rows = np.bincount(stratum[member], minlength=n_strata).astype(np.int64)
    m_errors = np.bincount(stratum[member], weights=err[member],
                           minlength=n_strata).astype(np.float64)
    n, x = int(m_rows.sum()), int(np.rint(m_errors.sum()))
    n_bg, x_bg = int(rows_s.sum()) - n, int(np.rint(errors_s.sum())) - x
    rate = x / n if n else math.nan
    rate_bg = x_bg / n_bg if n_bg else math.nan
    if repeated:
        deff = _deff(m_errors, m_rows.astype(np.float64))
        deff_bg = _deff(errors_s - m_errors, (rows_s - m_rows).astype(np.float64))
    else:
        deff = deff_bg = 1.0
    f, f_bg = clusters.deflation(deff), clusters.deflation(deff_bg)
    low, high = clopper_pearson(x / f, n / f, confidence=confidence)
    low_bg, high_bg = clopper_pearson(x_bg / f_bg, n_bg / f_bg, confidence=confidence)
    if n == 0 or n_bg == 0:
        return SubgroupRate(n, x, rate, low, high, deff, n_bg, x_bg, rate_bg, low_bg, high_bg,
                            deff_bg, math.nan, math.nan, math.nan, "empty_group",
                            "empty_group" if n == 0 else "empty_background")
    p = stratified_exact_p(rows_s, np.rint(errors_s).astype(np.int64), m_rows, x)
    return SubgroupRate(n, x, rate, low, high, deff, n_bg, x_bg, rate_bg, low_bg, high_bg,
                        deff_bg, rate - rate_bg, p, math.nan, "")


def _with_mde(rates: list[SubgroupRate], *, alpha: float, power: float
              ) -> tuple[SubgroupRate, ...]:
    """Every defined comparison's MDE in one call, at the effective sizes (rounded)."""
    chosen = [i for i, r in enumerate(rates) if r.mde_note != "empty_group"]
    if not chosen:
        return tuple(rates)
    counts_d, counts_a = [], []
    for i in chosen:
        r = rates[i]
        f = clusters.deflation(r.design_effect)
        f_bg = clusters.deflation(r.background_design_effect)
        counts_d.append(np.rint(np.array([r.n - r.errors, r.errors, 0, 0]) / f))
        counts_a.append(np.rint(np.array([r.background_n - r.background_errors,
                                          r.background_errors, 0, 0]) / f_bg))
    mde, why = minimum_detectable_gap(Metric.FPR_GAP.value, np.asarray(counts_d, dtype=np.int64),
                                      np.asarray(counts_a, dtype=np.int64), alpha=alpha,
                                      power=power)
    out = list(rates)
    for k, i in enumerate(chosen):
        out[i] = replace(rates[i], mde=float(mde[k]), mde_note=str(why[k]))
    return tuple(out)
