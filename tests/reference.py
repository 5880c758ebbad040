"""Slow, obviously-correct row-level reference for the resampling engine.

Everything here works on rows: a bootstrap resample draws row indices with replacement within
each group; a permutation shuffles the group labels of the rows in a stratum.  Metrics are
written straight from their definitions as means over boolean row selections.  It shares no code
with :mod:`faircode.stats.resampling` or :mod:`faircode.stats.metrics`, and it is deliberately a
Python loop over
resamples — it is the yardstick the fast engine is tested and benchmarked against.

Conventions shared with the engine (so they can be compared): labels are already oriented
(1 = favourable); a rate over an empty selection is NaN; the disparate-impact ratio is NaN when
the advantaged rate is 0; equalized odds is ``max(|TPR gap|, |FPR gap|)``; the percentile
interval ignores NaN resamples; the permutation statistic is ``|value|``, and disparate impact and
``tpr_gap`` are tested by demographic parity's and equal opportunity's permutations (same null);
``|T*|`` ties ``|T|`` within a relative 1e-9.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

STRATA: dict[str, tuple[str, ...]] = {
    "demographic_parity_diff": ("all",),
    "disparate_impact_ratio": ("all",),
    "equal_opportunity_diff": ("y1",),
    "equalized_odds_diff": ("y1", "y0"),
    "predictive_parity_diff": ("yhat1",),
    "accuracy_equality_diff": ("all",),
    "tpr_gap": ("y1",),
    "fpr_gap": ("y0",),
}
SAME_NULL = {
    "disparate_impact_ratio": "demographic_parity_diff",
    "tpr_gap": "equal_opportunity_diff",
}


def _mean(values: NDArray[np.bool_]) -> float:
    return float(values.mean()) if values.size else float("nan")


def _rates(y: NDArray[np.int64], yhat: NDArray[np.int64]) -> dict[str, float]:
    """Per-group rates of one group's rows, each over its own row subset."""
    return {
        "positive": _mean(yhat == 1),
        "tpr": _mean(yhat[y == 1] == 1),
        "fpr": _mean(yhat[y == 0] == 1),
        "precision": _mean(y[yhat == 1] == 1),
        "accuracy": _mean(y == yhat),
    }


def reference_metric(
    metric: str, y: NDArray[np.int64], yhat: NDArray[np.int64], dis: NDArray[np.bool_]
) -> float:
    """Return ``metric`` (disadvantaged minus advantaged) computed directly from rows."""
    d, a = _rates(y[dis], yhat[dis]), _rates(y[~dis], yhat[~dis])
    if metric == "demographic_parity_diff":
        return d["positive"] - a["positive"]
    if metric == "disparate_impact_ratio":
        if not a["positive"] > 0:
            return float("nan")
        return d["positive"] / a["positive"]
    if metric in ("equal_opportunity_diff", "tpr_gap"):
        return d["tpr"] - a["tpr"]
    if metric == "fpr_gap":
        return d["fpr"] - a["fpr"]
    if metric == "equalized_odds_diff":
        tgap, fgap = d["tpr"] - a["tpr"], d["fpr"] - a["fpr"]
        if np.isnan(tgap) or np.isnan(fgap):
            return float("nan")
        return max(abs(tgap), abs(fgap))
    if metric == "predictive_parity_diff":
        return d["precision"] - a["precision"]
    if metric == "accuracy_equality_diff":
        return d["accuracy"] - a["accuracy"]
    raise ValueError(metric)


def reference_statistic(
    metric: str, y: NDArray[np.int64], yhat: NDArray[np.int64], dis: NDArray[np.bool_]
) -> float:
    """Return the permutation test statistic ``|T|`` behind ``metric``'s p-value, from rows."""
    return abs(reference_metric(SAME_NULL.get(metric, metric), y, yhat, dis))


def reference_bootstrap(
    metric: str,
    y: NDArray[np.int64],
    yhat: NDArray[np.int64],
    dis: NDArray[np.bool_],
    *,
    n_resamples: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Resample rows with replacement within each group and recompute ``metric`` each time."""
    idx_d, idx_a = np.flatnonzero(dis), np.flatnonzero(~dis)
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        take_d = rng.choice(idx_d, size=idx_d.size, replace=True) if idx_d.size else idx_d
        take_a = rng.choice(idx_a, size=idx_a.size, replace=True) if idx_a.size else idx_a
        rows = np.concatenate([take_d, take_a])
        group = np.concatenate([np.ones(take_d.size, bool), np.zeros(take_a.size, bool)])
        out[b] = reference_metric(metric, y[rows], yhat[rows], group)
    return out


def _stratum(name: str, y: NDArray[np.int64], yhat: NDArray[np.int64]) -> NDArray[np.bool_]:
    if name == "all":
        return np.ones(y.size, dtype=bool)
    if name == "y1":
        return y == 1
    if name == "y0":
        return y == 0
    return yhat == 1


def reference_permutation(
    metric: str,
    y: NDArray[np.int64],
    yhat: NDArray[np.int64],
    dis: NDArray[np.bool_],
    *,
    n_permutations: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Shuffle group labels among each stratum's rows and recompute ``|T|`` each time."""
    strata = [np.flatnonzero(_stratum(name, y, yhat)) for name in STRATA[SAME_NULL.get(metric,
                                                                                         metric)]]
    out = np.empty(n_permutations)
    for b in range(n_permutations):
        shuffled = dis.copy()
        for rows in strata:
            shuffled[rows] = rng.permutation(dis[rows])
        out[b] = reference_statistic(metric, y, yhat, shuffled)
    return out


def reference_p_value(observed: float, permuted: NDArray[np.float64]) -> float:
    """Two-sided permutation p-value ``(1 + #{|T*| >= |T|}) / (1 + P)``."""
    if np.isnan(observed):
        return float("nan")
    hits = sum(1 for t in permuted if t >= abs(observed) * (1 - 1e-9))
    return (1 + hits) / (1 + len(permuted))


def reference_interval(samples: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    """Percentile interval of the non-NaN resamples."""
    finite = np.sort(samples[np.isfinite(samples)])
    if finite.size == 0:
        return (float("nan"), float("nan"))
    tail = (1 - confidence) / 2
    return (float(np.quantile(finite, tail)), float(np.quantile(finite, 1 - tail)))


def reference_cluster_bootstrap(
    metric: str,
    y: NDArray[np.int64],
    yhat: NDArray[np.int64],
    dis: NDArray[np.bool_],
    unit: NDArray[np.int64],
    *,
    n_resamples: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Resample whole units (their rows) with replacement and recompute ``metric`` each time.

    Units are resampled within strata of the groups they have rows in (only disadvantaged, only
    advantaged, both), each at its own number of units — rows keep their own group label.
    """
    ids = np.unique(unit)
    rows_of = {int(u): np.flatnonzero(unit == u) for u in ids}
    strata: dict[tuple[bool, bool], list[int]] = {}
    for u, rows in rows_of.items():
        key = (bool(dis[rows].any()), bool((~dis[rows]).any()))
        strata.setdefault(key, []).append(u)
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        taken: list[NDArray[np.int64]] = []
        for members in strata.values():
            for u in rng.choice(members, size=len(members), replace=True):
                taken.append(rows_of[int(u)])
        rows = np.concatenate(taken)
        out[b] = reference_metric(metric, y[rows], yhat[rows], dis[rows])
    return out


def reference_distance(
    metric: str, y: NDArray[np.int64], yhat: NDArray[np.int64], dis: NDArray[np.bool_]
) -> float:
    """One strategy's distance from parity (``|value − 1|`` for the ratio), or its accuracy or
    balanced accuracy over all rows, straight from the rows."""
    if metric == "accuracy":
        return _mean(y == yhat)
    if metric == "balanced_accuracy":
        return (_mean(yhat[y == 1] == 1) + _mean(yhat[y == 0] == 0)) / 2
    value = reference_metric(metric, y, yhat, dis)
    if metric == "equalized_odds_diff":
        return value
    return abs(value - (1.0 if metric == "disparate_impact_ratio" else 0.0))


def reference_effect(
    metric: str, y: NDArray[np.int64], yhat_a: NDArray[np.int64], yhat_b: NDArray[np.int64],
    dis: NDArray[np.bool_],
) -> float:
    """The paired effect ``dist(A) − dist(B)`` on the same rows."""
    return reference_distance(metric, y, yhat_a, dis) - reference_distance(metric, y, yhat_b, dis)


def reference_paired_bootstrap(
    metric: str,
    y: NDArray[np.int64],
    yhat_a: NDArray[np.int64],
    yhat_b: NDArray[np.int64],
    dis: NDArray[np.bool_],
    *,
    n_resamples: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Resample row indices with replacement within each group; score A and B on the same
    resampled rows and recompute the effect each time."""
    idx_d, idx_a = np.flatnonzero(dis), np.flatnonzero(~dis)
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        rows = np.concatenate([rng.choice(idx_d, size=idx_d.size, replace=True),
                               rng.choice(idx_a, size=idx_a.size, replace=True)])
        out[b] = reference_effect(metric, y[rows], yhat_a[rows], yhat_b[rows], dis[rows])
    return out


def reference_paired_cluster_bootstrap(
    metric: str,
    y: NDArray[np.int64],
    yhat_a: NDArray[np.int64],
    yhat_b: NDArray[np.int64],
    dis: NDArray[np.bool_],
    unit: NDArray[np.int64],
    *,
    n_resamples: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Resample whole units within strata of the groups they have rows in (as
    :func:`reference_cluster_bootstrap`), scoring A and B on the same resampled rows."""
    ids = np.unique(unit)
    rows_of = {int(u): np.flatnonzero(unit == u) for u in ids}
    strata: dict[tuple[bool, bool], list[int]] = {}
    for u, rows in rows_of.items():
        strata.setdefault((bool(dis[rows].any()), bool((~dis[rows]).any())), []).append(u)
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        taken = [rows_of[int(u)] for members in strata.values()
                 for u in rng.choice(members, size=len(members), replace=True)]
        rows = np.concatenate(taken)
        out[b] = reference_effect(metric, y[rows], yhat_a[rows], yhat_b[rows], dis[rows])
    return out


def reference_swap(
    metric: str,
    y: NDArray[np.int64],
    yhat_a: NDArray[np.int64],
    yhat_b: NDArray[np.int64],
    dis: NDArray[np.bool_],
    unit: NDArray[np.int64],
    *,
    n_permutations: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Flip a fair coin per unit; where heads, exchange A's and B's decisions on all its rows;
    recompute the effect each time."""
    ids, inverse = np.unique(unit, return_inverse=True)
    out = np.empty(n_permutations)
    for b in range(n_permutations):
        heads = (rng.random(ids.size) < 0.5)[inverse]
        a, bb = np.where(heads, yhat_b, yhat_a), np.where(heads, yhat_a, yhat_b)
        out[b] = reference_effect(metric, y, a, bb, dis)
    return out
