"""A slow, independent reference for :mod:`faircode.stats.continuous` and
:mod:`faircode.stats.continuous_strata`: one resample at a time, rows drawn by index, statistics
from numpy and scipy directly (``np.quantile``, ``scipy.stats.ks_2samp``).

It shares no code with the fast engine (which draws row weights and computes weighted
statistics on rows sorted once); the tests compare the two on the same data, values exactly and
p-values and intervals within Monte Carlo error.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps


def values(x: np.ndarray, d: np.ndarray, truth: np.ndarray | None = None) -> dict[str, float]:
    """Every metric of ``x`` between ``d`` and the other rows, from their definitions."""
    xd, xa = x[d], x[~d]
    out = {"mean_difference": xd.mean() - xa.mean(), "mean_ratio": xd.mean() / xa.mean(),
           "q10_gap": np.quantile(xd, 0.1) - np.quantile(xa, 0.1),
           "q50_gap": np.quantile(xd, 0.5) - np.quantile(xa, 0.5),
           "q90_gap": np.quantile(xd, 0.9) - np.quantile(xa, 0.9),
           "ks_distance": sps.ks_2samp(xd, xa).statistic}
    if truth is not None:
        error = truth - x
        mae_d, mae_a = np.abs(error[d]).mean(), np.abs(error[~d]).mean()
        out.update(mae_gap=mae_d - mae_a, bounded_group_loss=max(mae_d, mae_a),
                   residual_gap=error[d].mean() - error[~d].mean())
    return {k: float(v) for k, v in out.items()}


def permutation_p(x: np.ndarray, d: np.ndarray, metric: str, *, permutations: int,
                  rng: np.random.Generator, units: np.ndarray | None = None) -> float:
    """The two-sided permutation p-value of ``metric``: labels shuffled among rows, or among
    units (the attribute constant within each) when ``units`` are given."""
    observed = abs(values(x, d)[metric])
    hits = 0
    for _ in range(permutations):
        if units is None:
            shuffled = rng.permutation(d)
        else:
            ids = np.unique(units)
            label = {u: bool(d[units == u][0]) for u in ids}
            permuted = dict(zip(ids, rng.permutation([label[u] for u in ids]), strict=True))
            shuffled = np.array([permuted[u] for u in units])
        hits += abs(values(x, shuffled)[metric]) >= observed * (1 - 1e-9)
    return (1 + hits) / (1 + permutations)


def bootstrap_interval(x: np.ndarray, d: np.ndarray, metric: str, *, resamples: int,
                       rng: np.random.Generator, units: np.ndarray | None = None
                       ) -> tuple[float, float]:
    """The 95 % percentile interval of ``metric``: each group's rows (or units) drawn with
    replacement at its own size."""
    draws = []
    for _ in range(resamples):
        if units is None:
            rows = np.concatenate([rng.choice(np.flatnonzero(g), g.sum()) for g in (d, ~d)])
        else:
            picked = []
            for group in (True, False):
                ids = np.unique(units[d == group])
                for u in rng.choice(ids, ids.size):
                    picked.append(np.flatnonzero(units == u))
            rows = np.concatenate(picked)
        draws.append(values(x[rows], d[rows])[metric])
    low, high = np.quantile(draws, [0.025, 0.975])
    return float(low), float(high)


def strata_gap(x: np.ndarray, d: np.ndarray, strata: np.ndarray) -> float:
    """The Mantel-Haenszel-weighted mean gap within strata, stratum by stratum."""
    num = den = 0.0
    for k in np.unique(strata):
        rows = strata == k
        n_d, n_a = int((rows & d).sum()), int((rows & ~d).sum())
        if n_d and n_a:
            w = n_d * n_a / (n_d + n_a)
            num += w * (x[rows & d].mean() - x[rows & ~d].mean())
            den += w
    return num / den


def strata_permutation_p(x: np.ndarray, d: np.ndarray, strata: np.ndarray, *,
                         permutations: int, rng: np.random.Generator) -> float:
    """The within-strata permutation p-value of :func:`strata_gap`."""
    observed = abs(strata_gap(x, d, strata))
    hits = 0
    for _ in range(permutations):
        shuffled = d.copy()
        for k in np.unique(strata):
            rows = np.flatnonzero(strata == k)
            shuffled[rows] = rng.permutation(d[rows])
        hits += abs(strata_gap(x, shuffled, strata)) >= observed * (1 - 1e-9)
    return (1 + hits) / (1 + permutations)
