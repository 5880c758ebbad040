"""Exact conditional p-values of the count metrics, and the Monte-Carlo size where units repeat.

Every group-rate metric of the benchmark compares two groups' rates of a *success* (the
numerator cells of its record in :data:`faircode.core.metrics.METRIC_TABLE`) over a *subset* of
rows (its denominator cells): the selection rate over every row, TPR over the favourable-label
rows, precision over the favourable decisions, accuracy over every row.  Its permutation test
shuffles group labels within that subset (:func:`faircode.stats.resampling.permute_counts`), and
its statistic ``|rate_D − rate_A|`` depends on the shuffle only through the disadvantaged group's
success count ``X``.  Given the subset's margins -- ``n_D`` and ``n_A`` rows, ``k`` successes --
``X`` is hypergeometric, so the permutation distribution is known exactly and

    ``p = P(|T(X)| ≥ |t|) = Σ_x hypergeom(x; n_D + n_A, k, n_D) · [|T(x)| ≥ |t|]``

is the limit of the Monte-Carlo ``(1 + hits)/(1 + P)`` as ``P → ∞`` (Fisher's exact test with
the statistic's own ordering): no resampling, no floor of ``1/(P + 1)``.

Design decisions
----------------
* **The same statistic, the same ties.**  ``T(x)`` is evaluated by the metric's own vectorised
  statistic (:mod:`faircode.stats._metric_defs`) on the counts each ``x`` gives, and a value
  counts as extreme when ``|T(x)| ≥ |t|·(1 − TIE_RTOL)``, exactly as
  :func:`~faircode.stats.resampling.permutation_p_value` counts a permuted draw: the exact p is
  what that function's p converges to.  Disparate impact tests demographic parity's null
  (its ``same_null``; the ratio is monotone in ``X`` given the margins) and reports that p.
* **Equalized odds**, ``max(|T_1|, |T_2|)`` over two disjoint subsets (``y = 1`` and ``y = 0``)
  shuffled independently, has ``P(max ≥ t) = 1 − (1 − p_1)(1 − p_2)`` with ``p_i = P(|T_i| ≥ t)``
  at the *observed maximum* ``t``: a product of two hypergeometric tails.
* **Tails in log space.**  The probabilities are summed as ``logsumexp`` of scipy's
  ``hypergeom.logpmf``, so a p-value of ``1e-200`` is as accurate as one of ``0.3``; a p below
  the smallest normal double is returned as that double (:data:`P_FLOOR`), never 0.
* **Only where rows are independent.**  With repeated units the exchangeable pieces are units,
  whose count vectors differ, and no closed form exists: those tests stay Monte-Carlo
  (:func:`faircode.stats.clusters.cluster_permute_counts`) with ``P`` from
  :func:`monte_carlo_draws`, large enough for the Benjamini-Hochberg family the test is in.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special
from scipy import stats as sps

from faircode.core.errors import describe
from faircode.stats import _metric_defs as defs
from faircode.stats.resampling import TIE_RTOL

__all__ = ["P_FLOOR", "exact_p_value", "monte_carlo_draws", "rate_tail", "smallest_q"]

P_FLOOR: float = float(np.finfo(np.float64).tiny)
"""The smallest p-value returned (a tail below it underflows a double): never 0."""


def _support(n_d: int, n_a: int, k: int) -> NDArray[np.int64]:
    return np.arange(max(0, k - n_a), min(n_d, k) + 1, dtype=np.int64)


def _counts_at(x: NDArray[np.int64], total: int, subset: tuple[int, ...],
               success: tuple[int, ...]) -> NDArray[np.int64]:
    """Counts ``(len(x), 4)`` with ``x`` successes and ``total − x`` failures in ``subset``
    (the first success cell and the first other cell of it): the rates any placement gives."""
    out = np.zeros((x.size, 4), dtype=np.int64)
    out[:, success[0]] = x
    failures = [c for c in subset if c not in success]
    if failures:
        out[:, failures[0]] = total - x
    return out


def rate_tail(subset: tuple[int, ...], success: tuple[int, ...], counts_d: ArrayLike,
              counts_a: ArrayLike, *, threshold: float, statistic: object) -> float:
    """``P(|T(X)| ≥ threshold)`` with ``X`` hypergeometric given the subset's margins.

    ``subset`` and ``success`` are cell tuples, ``statistic`` a vectorised function of the two
    groups' ``(..., 4)`` counts (the metric's ``|difference|``); NaN when a group has no row
    in the subset.
    """
    d, a = np.asarray(counts_d, np.int64), np.asarray(counts_a, np.int64)
    n_d, n_a = int(d[list(subset)].sum()), int(a[list(subset)].sum())
    if n_d == 0 or n_a == 0:
        return math.nan
    k = int(d[list(success)].sum() + a[list(success)].sum())
    x = _support(n_d, n_a, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.abs(statistic(_counts_at(x, n_d, subset, success),  # type: ignore[operator]
                                  _counts_at(k - x, n_a, subset, success)))
    extreme = values >= threshold
    if not extreme.any():
        return 0.0
    logs = sps.hypergeom.logpmf(x[extreme], n_d + n_a, k, n_d)
    return float(min(1.0, math.exp(special.logsumexp(logs))))


def exact_p_value(metric: str, counts_d: ArrayLike, counts_a: ArrayLike) -> float:
    """The exact conditional p-value of ``metric``'s null (module docstring): of its own
    statistic, or for a metric with a ``same_null`` twin, of the twin's (pass the twin's name to
    get the p it reports).  NaN where the statistic is undefined."""
    spec = defs.spec(metric)
    d, a = np.asarray(counts_d, np.int64), np.asarray(counts_a, np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = float(np.abs(spec.statistic(d, a)))
    if not math.isfinite(observed):
        return math.nan
    threshold = observed * (1.0 - TIE_RTOL)
    parts = [defs.SPECS[c] for c in spec.components] or [spec]
    tails = [rate_tail(p.subsets[0], p.success, d, a, threshold=threshold,
                       statistic=p.statistic) for p in parts]
    if any(math.isnan(t) for t in tails):
        return math.nan
    # P(max >= t) = 1 - prod(1 - p_i): the parts are shuffled independently (log1p keeps a
    # tail of 1e-200 exact)
    p = -math.expm1(sum(math.log1p(-t) if t < 1.0 else -math.inf for t in tails))
    return float(min(1.0, max(P_FLOOR, p)))


def monte_carlo_draws(configured: int, *, tests: int, alpha: float) -> int:
    """The draws ``P`` of a Monte-Carlo test in a Benjamini-Hochberg family of ``tests``: at
    least ``configured`` and enough that the smallest attainable q, ``tests / (P + 1)`` (the
    test alone at its floor ``1/(P + 1)``), is at most ``alpha / 2``."""
    for name, value in (("configured", configured), ("tests", tests)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ValueError(f"monte_carlo_draws: {name}: expected a positive int, got "
                             f"{describe(value)}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise ValueError(f"monte_carlo_draws: alpha: expected a number in (0, 1), got "
                         f"{describe(alpha)}")
    return max(int(configured), math.ceil(2.0 * tests / alpha) - 1)


def smallest_q(draws: int, *, tests: int) -> float:
    """The smallest q a Monte-Carlo test of ``draws`` draws can reach in a family of ``tests``
    (alone at its floor): ``min(1, tests / (draws + 1))``."""
    return min(1.0, tests / (draws + 1))
