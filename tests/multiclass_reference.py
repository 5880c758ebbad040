"""Slow, obviously-correct reference for :mod:`faircode.stats.multiclass`.

Shares no code with it: tables are enumerated with :func:`itertools.product`, probabilities are
exact fractions of binomial coefficients (:func:`math.comb`), the statistic is scipy's
``chi2_contingency(correction=False)`` and intervals are written from their formulas (Wilson;
Newcombe's hybrid score interval, method 10).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from scipy import stats


def statistic(table: np.ndarray) -> float:
    """Pearson's X² over the classes with rows (scipy)."""
    kept = table[:, table.sum(axis=0) > 0]
    return float(stats.chi2_contingency(kept, correction=False)[0])


def exact_p(table: np.ndarray, *, mid: bool = False) -> float:
    """The exact conditional p-value (``mid``: the mid-p, ties counted half): every first row
    with the margins, by brute force."""
    kept = table[:, table.sum(axis=0) > 0]
    columns = kept.sum(axis=0)
    n_d, n = int(kept[0].sum()), int(kept.sum())
    observed = statistic(kept)
    total = Fraction(0)
    hit = Fraction(0)
    for first in itertools.product(*(range(int(c) + 1) for c in columns)):
        if sum(first) != n_d:
            continue
        weight = Fraction(math.prod(math.comb(int(c), x) for c, x in zip(columns, first,
                                                                           strict=True)),
                          math.comb(n, n_d))
        total += weight
        candidate = np.stack([first, columns - np.array(first)])
        found = statistic(candidate)
        tie = 1e-9 * max(1.0, observed)
        if abs(found - observed) <= tie:
            hit += weight / 2 if mid else weight
        elif found > observed:
            hit += weight
    assert total == 1
    return float(hit)


def wilson(x: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's score interval of ``x / n``."""
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(x1: int, n1: int, x2: int, n2: int, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of ``x1/n1 - x2/n2``."""
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson(x1, n1, z)
    l2, u2 = wilson(x2, n2, z)
    d = p1 - p2
    return (d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
            d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))
