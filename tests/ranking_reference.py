"""Slow, obviously-correct reference for :mod:`faircode.stats.ranking`.

Shares no code with it.  A ranking with ties is judged by brute force over every order of its
tie blocks (each block's orders enumerated with :func:`itertools.permutations`, so the inputs are
tiny); FA*IR's table comes from the binomial CDF by a scan, its failure probability from every
0/1 sequence of length ``k``, and a resample's statistics from the resampled rows themselves.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats


def _orders(score: np.ndarray, *, higher_first: bool) -> list[list[int]]:
    """Every order of the rows consistent with the score (ties in any order)."""
    levels = sorted(set(score.tolist()), reverse=higher_first)
    blocks = [[i for i in range(score.size) if score[i] == v] for v in levels]
    return [list(itertools.chain.from_iterable(combo)) for combo in
            itertools.product(*(itertools.permutations(b) for b in blocks))]


def top_share(score: np.ndarray, protected: np.ndarray, k: int, *, higher_first: bool) -> float:
    """The mean over every order of the protected share among the first ``k``."""
    orders = _orders(score, higher_first=higher_first)
    return float(np.mean([protected[o[:k]].mean() for o in orders]))


def exposures(score: np.ndarray, protected: np.ndarray, *, higher_first: bool
              ) -> tuple[float, float]:
    """The mean over every order of each group's mean ``1 / log2(1 + position)``."""
    mine, other = [], []
    for order in _orders(score, higher_first=higher_first):
        v = np.empty(score.size)
        v[order] = 1.0 / np.log2(np.arange(2, score.size + 2))
        mine.append(v[protected].mean())
        other.append(v[~protected].mean())
    return float(np.mean(mine)), float(np.mean(other))


def resampled(score: np.ndarray, protected: np.ndarray, counts: np.ndarray, ks: np.ndarray, *,
              higher_first: bool, chance: np.ndarray) -> tuple[np.ndarray, float]:
    """One resample (``counts`` copies of each row): the shares at ``ks`` (the copies' own
    groups), and the exposure ratio with each copy counted in the protected group with its
    row's ``chance`` (its local share), the copies' ties resolved by their expectation (written
    out per block)."""
    rows = np.repeat(np.arange(score.size), counts)
    s, g, c = score[rows], protected[rows], chance[rows]
    key = -s if higher_first else s
    order = np.argsort(key, kind="stable")
    s, g, c, key = s[order], g[order], c[order], key[order]
    n = s.size
    v = 1.0 / np.log2(np.arange(2, n + 2))
    exposure = np.empty(n)
    expected = np.empty(n)  # expected protected count through each position
    start = 0
    below = 0.0
    while start < n:
        end = start
        while end < n and key[end] == key[start]:
            end += 1
        exposure[start:end] = v[start:end].mean()
        share = g[start:end].mean()
        expected[start:end] = below + share * np.arange(1, end - start + 1)
        below += g[start:end].sum()
        start = end
    shares = expected[ks - 1] / ks
    ratio = ((exposure * c).sum() / c.sum()) / ((exposure * (1 - c)).sum() / (1 - c).sum())
    return shares, float(ratio)


def fair_table(k: int, p: float, alpha: float) -> list[int]:
    """``m(j)``: the smallest ``m`` with ``F(m; j, p) > alpha``, by a scan."""
    out = []
    for j in range(1, k + 1):
        m = 0
        while stats.binom.cdf(m, j, p) <= alpha:
            m += 1
        out.append(m)
    return out


def fail_probability(m: list[int], p: float, tested: list[bool] | None = None) -> float:
    """The probability that a Bernoulli(p) sequence fails a tested prefix, by enumeration."""
    k = len(m)
    tested = tested or [True] * k
    total = 0.0
    for seq in itertools.product((0, 1), repeat=k):
        counts = np.cumsum(seq)
        if any(t and c < need for t, c, need in zip(tested, counts, m, strict=True)):
            ones = sum(seq)
            total += p ** ones * (1 - p) ** (k - ones)
    return total


def adjusted_alpha_scan(k: int, p: float, alpha: float) -> float:
    """The largest failure probability at most ``alpha`` over every distinct table: one per
    breakpoint ``F(m; j, p)`` of the binomial CDFs, every 0/1 sequence judged once."""
    sequences = np.array(list(itertools.product((0, 1), repeat=k)))
    counts = np.cumsum(sequences, axis=1)
    ones = sequences.sum(axis=1)
    weight = p ** ones * (1 - p) ** (k - ones)
    breakpoints = sorted({float(stats.binom.cdf(m, j, p)) for j in range(1, k + 1)
                          for m in range(j + 1)} | {alpha})
    best = 0.0
    for b in breakpoints:
        if b > alpha:
            break
        m = np.array(fair_table(k, p, b))
        fail = float(weight[(counts < m).any(axis=1)].sum())
        if fail <= alpha:
            best = max(best, fail)
    return best
