"""A ranking with ties: rows ordered best first, tie blocks, and what a row's place means.

Private to :mod:`faircode.stats.ranking` and :mod:`faircode.stats.fair_prefix`: the ordering
(:func:`ranking`), each row's expected exposure under Singh & Joachims' position bias
(:func:`row_exposure`), a group's expected share of the top ``k`` (:func:`top_shares`) and each
position's local share of a group (:func:`local_shares`).  Rows of equal score form a *tie
block*; no order within a block is claimed, so every number is its expectation over the orders
of each block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe

__all__ = ["Ranking", "discount_sums", "local_shares", "protected_mask", "ranking",
           "row_exposure", "top_shares"]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Ranking:
    """Rows ordered best first, and where each tie block ends.

    ``order[i]`` is the row at position ``i + 1``; ``ends`` the number of rows through each
    block (increasing, the last ``n``); ``starts`` each block's first position (0-based).
    """

    order: Ints
    ends: Ints

    @property
    def n(self) -> int:
        """The rows ranked."""
        return int(self.order.size)

    @property
    def starts(self) -> Ints:
        """Each block's first 0-based position."""
        return np.concatenate([[0], self.ends[:-1]]).astype(np.int64)


def ranking(score: ArrayLike, *, higher_first: bool = True) -> Ranking:
    """The ranking of the rows by ``score`` (descending when ``higher_first``); NaN scores
    are an error."""
    values = np.asarray(score, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"score: expected a non-empty 1-D array, got shape {values.shape}")
    if not np.isfinite(values).all():
        bad = values[~np.isfinite(values)][0]
        raise ValueError(f"score: expected finite numbers, got {describe(float(bad))}")
    key = -values if higher_first else values
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    ends = np.flatnonzero(np.diff(ordered) != 0) + 1
    return Ranking(order.astype(np.int64), np.concatenate([ends, [values.size]]).astype(np.int64))


def protected_mask(protected: ArrayLike, n: int) -> NDArray[np.bool_]:
    mask = checks.as_mask("protected", np.asarray(protected))
    if mask.size != n:
        raise ValueError(f"protected: expected {n} values (the ranked rows), got {mask.size}")
    return mask


@lru_cache(maxsize=64)
def discount_sums(n: int) -> Floats:
    """``D[m] = Σ_{j ≤ m} 1 / log2(1 + j)`` for ``m = 0..n``."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, n + 2)))])


def row_exposure(r: Ranking) -> Floats:
    """Each row's expected exposure (in row order): its block's mean ``1 / log2(1 + j)``."""
    d = discount_sums(r.n)
    starts = r.starts
    mean = (d[r.ends] - d[starts]) / (r.ends - starts)
    out = np.empty(r.n)
    out[r.order] = np.repeat(mean, r.ends - starts)
    return out


def top_shares(r: Ranking, protected: ArrayLike, ks: ArrayLike) -> Floats:
    """The protected group's expected share among the first ``k`` rows, for each ``k`` of
    ``ks`` (integers in ``1..n``)."""
    mask = protected_mask(protected, r.n)
    k = np.asarray(ks, dtype=np.int64)
    if k.size and (k.min() < 1 or k.max() > r.n):
        raise ValueError(f"ks: expected integers in 1..{r.n}, got {describe(int(k.min()))}..."
                         f"{int(k.max())}")
    through = np.concatenate([[0], np.cumsum(mask[r.order])[r.ends - 1]])
    return np.interp(k, np.concatenate([[0], r.ends]), through) / k


def local_shares(r: Ranking, protected: NDArray[np.bool_]) -> Floats:
    """Per position, the share of the protected rows among its neighbours -- the
    ``w = max(25, round(√n))`` positions either side (fewer at the ends) -- or, in a tie block of
    at least ``2w + 1`` rows, the block's share (module docstring)."""
    w = max(25, round(math.sqrt(r.n)))
    flags = protected[r.order].astype(np.float64)
    total = np.concatenate([[0.0], np.cumsum(flags)])
    at = np.arange(r.n)
    low, high = np.maximum(at - w, 0), np.minimum(at + w + 1, r.n)
    share = (total[high] - total[low]) / (high - low)
    sizes = r.ends - r.starts
    block = np.repeat((total[r.ends] - total[r.starts]) / sizes, sizes)
    return np.where(np.repeat(sizes >= 2 * w + 1, sizes), block, share)
