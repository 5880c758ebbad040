"""FA*IR's ranked group fairness test (Zehlike et al. 2017) with its adjusted significance.

A prefix of length ``j`` *fairly represents* the protected group at minimal proportion ``p`` and
significance ``alpha`` when ``F(tau_j; j, p) > alpha`` -- ``F`` the binomial CDF, ``tau_j`` the
protected rows among the first ``j`` (the paper's Definition 3.1) -- i.e. when ``tau_j >= m(j)``
(:func:`fair_table`).  The ranking passes when every tested prefix of its top ``k`` does.
Testing ``k`` prefixes rejects a fair ranking (each position protected with probability ``p``,
independently) more often than ``alpha``, so the test is made at the *adjusted* ``alpha_c``: the
paper's procedure computes the probability that a fair ranking fails some prefix
(:func:`fail_probability`, exactly, by dynamic programming over the count of protected rows)
and searches ``alpha_c`` so that it is ``alpha`` -- here the largest ``alpha_c`` (bisection on
its log, from Bonferroni's ``alpha / k``, which always qualifies) whose failure probability is
at most ``alpha`` (:func:`adjusted_alpha`).  With ties only the prefixes that end a tie block
are determined and tested, and the failure probability is that of exactly those tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core import checks
from faircode.core.errors import describe
from faircode.stats._ranked import Ranking, protected_mask, ranking

__all__ = ["FAIR_MAX_K", "FairTest", "adjusted_alpha", "fail_probability", "fair_of",
           "fair_table", "fair_test"]

Ints = NDArray[np.int64]

FAIR_MAX_K = 1000
"""The most prefixes FA*IR tests: a test of the top of a ranking (the paper's rankings are of
tens to a few hundred; its library accepts up to 400).  A strict ranking is tested on its top
1,000; a tied one (a decile score) on every determined prefix of its top ``k``."""
def fair_table(k: int, p: float, alpha: float) -> Ints:
    """``m(j)`` for ``j = 1..k``: the fewest protected rows among the first ``j`` for which
    ``F(m; j, p) > alpha`` (Definition 3.1's fair representation)."""
    _check_fair(k, p, alpha)
    j = np.arange(1, k + 1)
    m = sps.binom.ppf(alpha, j, p)
    m = np.where(sps.binom.cdf(m, j, p) <= alpha, m + 1, m)
    return np.maximum(m, 0).astype(np.int64)


def _check_fair(k: int, p: float, alpha: float) -> None:
    checks.check_positive_int("k", k)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: expected a proportion in (0, 1), got {describe(p)}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha: expected a number in (0, 1), got {describe(alpha)}")


def fail_probability(m: ArrayLike, p: float, *, tested: ArrayLike | None = None) -> float:
    """The probability that a fair ranking -- each position protected with probability ``p``,
    independently -- has fewer than ``m[j-1]`` protected rows among its first ``j`` at some
    tested ``j`` (``tested``: a mask over ``1..k``; default every prefix).  Exact: the
    distribution of the protected count, position by position, with the failed counts
    removed; counts more than 12 standard deviations above the mean are dropped (below
    ``1e-30``)."""
    needed = np.asarray(m, dtype=np.int64)
    k = needed.size
    test = np.ones(k, dtype=bool) if tested is None else np.asarray(tested, dtype=bool)
    if test.shape != needed.shape:
        raise ValueError(f"tested: expected {k} values, got {test.size}")
    dist = np.zeros(k + 2)
    dist[0] = 1.0
    low = high = 0
    q = 1.0 - p
    for j in range(1, k + 1):
        seg = dist[low:high + 1].copy()
        dist[low:high + 2] = 0.0
        dist[low:high + 1] += seg * q
        dist[low + 1:high + 2] += seg * p
        high = min(high + 1, j, int(j * p + 12.0 * math.sqrt(j * p * q) + 12.0))
        dist[high + 1:high + 3] = 0.0
        if test[j - 1] and needed[j - 1] > low:
            dist[low:needed[j - 1]] = 0.0
            low = int(needed[j - 1])
            if low > high:
                return 1.0
    return float(min(1.0, max(0.0, 1.0 - dist[low:high + 1].sum())))


def adjusted_alpha(k: int, p: float, alpha: float, *, tested: ArrayLike | None = None,
                   tolerance: float = 1e-3) -> tuple[float, float]:
    """``(α_c, its failure probability)``: the largest ``α_c`` (to a relative ``tolerance``)
    whose :func:`fair_table` fails a fair ranking with probability at most ``alpha`` over the
    tested prefixes (module docstring)."""
    _check_fair(k, p, alpha)
    test = np.ones(k, dtype=bool) if tested is None else np.asarray(tested, dtype=bool)
    low = alpha / max(int(test.sum()), 1)  # Bonferroni: always at most alpha
    fail = fail_probability(fair_table(k, p, alpha), p, tested=test)
    if fail <= alpha:
        return alpha, fail
    fail_low = fail_probability(fair_table(k, p, low), p, tested=test)
    high = alpha
    while math.log(high / low) > tolerance:
        middle = math.sqrt(low * high)
        found = fail_probability(fair_table(k, p, middle), p, tested=test)
        if found <= alpha:
            low, fail_low = middle, found
        else:
            high = middle
    return low, fail_low


@dataclass(frozen=True, slots=True)
class FairTest:
    """FA*IR's ranked group fairness test of the top ``k`` (module docstring)."""

    k: int
    p: float
    alpha: float
    alpha_adjusted: float
    fail_probability: float
    """The probability that a fair ranking fails at ``alpha_adjusted`` (at most ``alpha``)."""
    tested: int
    """The prefixes tested (those that end a tie block)."""
    passes: bool
    """No tested prefix fails (vacuously true with none tested)."""
    first_fail: int
    """The first failing prefix's length (0: none)."""
    needed: int
    observed: int
    """At the first failing prefix (else at ``k``): the protected rows needed and present."""


def fair_test(score: ArrayLike, protected: ArrayLike, *, k: int, higher_first: bool,
              alpha: float) -> FairTest:
    """FA*IR's test of the determined prefixes of the first ``k`` rows (at most
    :data:`FAIR_MAX_K` of them), at the protected share ``p`` of all ranked rows and the adjusted
    significance (module docstring); with no prefix determined (a tie block longer than ``k``)
    nothing is tested (``tested`` 0, ``alpha_adjusted`` NaN)."""
    r = ranking(score, higher_first=higher_first)
    return fair_of(r, protected_mask(protected, r.n), k=k, alpha=alpha)


def fair_of(r: Ranking, mask: NDArray[np.bool_], *, k: int, alpha: float) -> FairTest:
    p = float(mask.mean())
    k = int(min(max(k, 1), r.n))
    ends = r.ends[r.ends <= k]
    if ends.size > FAIR_MAX_K:  # at most FAIR_MAX_K determined prefixes: the top of the ranking
        k = int(ends[FAIR_MAX_K - 1])
        ends = ends[:FAIR_MAX_K]
    if not 0.0 < p < 1.0 or not ends.size:  # one group only, or no prefix determined
        return FairTest(k, p, alpha, float("nan"), float("nan"), 0, True, 0, 0, 0)
    tested = np.zeros(k, dtype=bool)
    tested[ends - 1] = True
    alpha_c, fail = _adjusted(k, p, alpha, tested.tobytes())
    m = fair_table(k, p, alpha_c)
    counts = np.cumsum(mask[r.order][:k])
    failed = np.flatnonzero(tested & (counts < m))
    at = int(failed[0]) if failed.size else k - 1
    return FairTest(k, p, alpha, alpha_c, fail, int(tested.sum()), not failed.size,
                    at + 1 if failed.size else 0, int(m[at]), int(counts[at]))


@lru_cache(maxsize=256)
def _adjusted(k: int, p: float, alpha: float, tested: bytes) -> tuple[float, float]:
    """:func:`adjusted_alpha`, cached: the grid's cells rank the same rows."""
    return adjusted_alpha(k, p, alpha, tested=np.frombuffer(tested, dtype=bool))
