"""The parity gap conditional on covariates: a logistic regression's average marginal effect.

Strata compare the groups at equal levels of a few categorical factors; a lender's stated
criteria include continuous ones (payment-to-income, loan-to-value) that make no strata.  The
adjusted gap compares the groups *conditional on* such covariates: a logistic regression of the
oriented decision (1 = favourable) on an intercept, the disadvantaged indicator ``d`` and the
covariates ``Z``,

    logit P(ŷ = 1 | d, z) = β₀ + β_d d + z'γ,

reported on the scale of every other gap as the **average marginal effect** of ``d``: over the
rows, the mean difference of the fitted favourable probability with ``d`` set to 1 and to 0,

    AME = (1/n) Σ_i [Λ(β₀ + β_d + z_i'γ) − Λ(β₀ + z_i'γ)],

so a negative value means the disadvantaged group is worse off *at equal covariates*, as the
model sees them.  It says nothing causal: it is a comparison conditional on the covariates, and
"conditional on" is the only reading faircode gives it (never "explained by").

Design decisions
----------------
* **Fit**: Newton–Raphson on the log-likelihood (numpy, at most :data:`MAX_ITERATIONS` steps,
  step-halving when a step lowers the likelihood), from β = 0, until the log-likelihood settles.
  A covariate level whose rows all share one decision (quasi-separation: HMDA's test rows hold
  two applicants with the worst mortgage history, both approved) has no finite coefficient; the
  fit stops where the likelihood settles, as R's ``glm`` and statsmodels do, and those rows add
  nothing to the average marginal effect.  Covariate columns constant on
  the rows, or linearly dependent on earlier ones, are dropped first (QR rank), so an absent
  category level does not make the fit singular; the intercept and ``d`` are never dropped.
* **Interval and test**: the delta method, ``Var(AME) = g' H⁻¹ g`` with ``g = ∂AME/∂β``
  (``(1/n) Σ_i [λ_i¹ x_i¹ − λ_i⁰ x_i⁰]``, ``λ = Λ(1 − Λ)``) and ``H`` the observed information;
  ``AME ± z·√Var`` clipped to [−1, 1] and the two-sided normal p-value of ``AME/√Var``, so the
  interval excludes 0 exactly when ``p < 1 − confidence``.  The same numbers as statsmodels'
  ``Logit(...).fit().get_margeff(at="overall", dummy=True)`` (``tests/test_adjusted.py``).
* **Not estimable** (NaN with a note, never an error): a group absent (``insufficient_data``),
  every decision the same (``zero_variance``), the group separating the decisions (its
  coefficient past :data:`SEPARATION`: ``separation``), or a fit that does not settle
  (``no_convergence``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as scipy_stats
from scipy.special import expit

from faircode.core import checks
from faircode.stats import resampling

__all__ = ["ADJUSTED_CI_METHOD", "MAX_ITERATIONS", "SEPARATION", "AdjustedGap", "adjusted_gap"]

ADJUSTED_CI_METHOD = "logistic_ame_delta"
"""The ``ci_method`` of an adjusted gap's interval."""
MAX_ITERATIONS = 100
"""Newton steps before a fit is declared not converged."""
_TOLERANCE = 1e-12
"""Convergence: a step's change of the log-likelihood, relative to it."""
SEPARATION = 15.0
"""A group coefficient beyond this (an odds ratio past e^15) is the group separating the
decisions: no estimate."""


@dataclass(frozen=True, slots=True)
class AdjustedGap:
    """The gap conditional on covariates: average marginal effect, interval, test, counts."""

    value: float
    ci_low: float
    ci_high: float
    p_value: float
    raw_gap: float
    """The plain parity gap of the same rows."""
    n_disadvantaged: int
    n_advantaged: int
    terms: int
    """Covariate columns in the fit (after dropping constant and dependent ones)."""
    note: str = ""

    def __post_init__(self) -> None:
        if math.isnan(self.value) != math.isnan(self.p_value):
            raise ValueError("AdjustedGap: value and p_value must be both NaN or both numbers")
        if self.terms < 0:
            raise ValueError(f"AdjustedGap: terms: expected >= 0, got {self.terms}")


def _independent(x: NDArray[np.float64], fixed: int) -> NDArray[np.float64]:
    """``x`` without the columns after the first ``fixed`` that are constant or linearly
    dependent on the columns kept before them (greedy, in order, on the Gram matrix: a column
    is kept when its residual after projection keeps more than 1e-9 of its centred norm)."""
    gram = x.T @ x
    centred = (x - x.mean(axis=0)) if len(x) else x
    scale = (centred**2).sum(axis=0)
    keep = list(range(fixed))
    for j in range(fixed, x.shape[1]):
        if scale[j] <= 0:
            continue
        k = np.asarray(keep)
        residual = gram[j, j] - gram[j, k] @ np.linalg.lstsq(gram[np.ix_(k, k)], gram[k, j],
                                                              rcond=None)[0]
        if residual > 1e-9 * scale[j]:
            keep.append(j)
    return x[:, keep]


def _log_likelihood(x: NDArray[np.float64], y: NDArray[np.float64],
                    beta: NDArray[np.float64]) -> float:
    eta = x @ beta
    return float((y * eta - np.logaddexp(0.0, eta)).sum())


def _fit(x: NDArray[np.float64], y: NDArray[np.float64]
         ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Maximum-likelihood coefficients and the inverse information; None without convergence.

    Converged when a step changes the log-likelihood by less than :data:`_TOLERANCE` relative
    to it.  Under quasi-separation by a covariate (a level whose rows all share one decision)
    that level's coefficient grows without bound while the likelihood settles: the fit stops
    there, as R's ``glm`` and statsmodels do, and the rows it separates add nothing to the
    average marginal effect.
    """
    beta = np.zeros(x.shape[1])
    current = _log_likelihood(x, y, beta)
    for _ in range(MAX_ITERATIONS):
        p = expit(x @ beta)
        information = (x * (p * (1 - p))[:, None]).T @ x
        try:
            step = np.linalg.solve(information, x.T @ (y - p))
        except np.linalg.LinAlgError:
            return None
        scale = 1.0
        while _log_likelihood(x, y, beta + scale * step) < current - 1e-12:
            scale /= 2.0
            if scale < 1e-8:
                return None
        beta = beta + scale * step
        previous, current = current, _log_likelihood(x, y, beta)
        if abs(current - previous) <= _TOLERANCE * (1.0 + abs(current)):
            p = expit(x @ beta)
            information = (x * (p * (1 - p))[:, None]).T @ x
            return beta, np.linalg.pinv(information, rcond=1e-15, hermitian=True)
    return None


def adjusted_gap(
    y_pred: ArrayLike,
    disadvantaged: ArrayLike,
    covariates: ArrayLike,
    *,
    confidence: float = 0.95,
) -> AdjustedGap:
    """The average marginal effect of the disadvantaged indicator on oriented decisions
    ``y_pred``, conditional on ``covariates`` (rows x columns, numeric; module docstring)."""
    checks.check_confidence(confidence)
    y = checks.as_binary("y_pred", y_pred).astype(np.float64)
    d = checks.as_mask("disadvantaged", disadvantaged)
    z = np.asarray(covariates, dtype=np.float64)
    z = z.reshape(len(z), -1) if z.ndim == 1 else z
    if z.ndim != 2 or not np.isfinite(z).all():
        raise ValueError("covariates: expected a 2-D array of finite numbers")
    checks.check_lengths(y_pred=y, disadvantaged=d, covariates=z)
    n_d, n_a = int(d.sum()), int((~d).sum())
    raw = float(y[d].mean() - y[~d].mean()) if n_d and n_a else float("nan")
    nan = float("nan")

    def undefined(note: str, terms: int = 0) -> AdjustedGap:
        return AdjustedGap(nan, nan, nan, nan, raw, n_d, n_a, terms, note)

    if not n_d or not n_a:
        return undefined("insufficient_data")
    if y.min() == y.max():
        return undefined("zero_variance")
    x = _independent(np.column_stack([np.ones(len(y)), d.astype(np.float64), z]), 2)
    if np.linalg.matrix_rank(x[:, :2]) < 2:
        return undefined("insufficient_data")
    terms = x.shape[1] - 2
    fitted = _fit(x, y)
    if fitted is None:
        return undefined("no_convergence", terms)
    beta, covariance = fitted
    if abs(beta[1]) > SEPARATION:
        return undefined("separation", terms)
    x1, x0 = x.copy(), x.copy()
    x1[:, 1], x0[:, 1] = 1.0, 0.0
    p1, p0 = expit(x1 @ beta), expit(x0 @ beta)
    ame = float((p1 - p0).mean())
    gradient = ((p1 * (1 - p1))[:, None] * x1 - (p0 * (1 - p0))[:, None] * x0).mean(axis=0)
    se = math.sqrt(max(float(gradient @ covariance @ gradient), 0.0))
    half = resampling.z_quantile(confidence) * se
    p_value = float(2 * scipy_stats.norm.sf(abs(ame) / se)) if se > 0 else \
        (1.0 if ame == 0 else 0.0)
    return AdjustedGap(ame, max(-1.0, ame - half), min(1.0, ame + half), p_value, raw, n_d, n_a,
                       terms)
