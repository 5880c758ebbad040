"""The mean gap of a continuous outcome within strata: is it explained by legitimate factors?

The continuous counterpart of :mod:`faircode.stats.stratified` (the Mantel–Haenszel gap of
decisions).  Within each stratum ``k`` (an education level, an occupation, their combinations)
the disadvantaged group's mean ``m_dk`` is compared with the advantaged group's ``m_ak``; the
strata's differences are pooled with the Mantel–Haenszel weights of the decisions' gap,
``w_k = n_dk n_ak / N_k``:

    Δ_strata = Σ_k w_k (m_dk − m_ak) / Σ_k w_k

(with one stratum, the plain mean gap; with equal group sizes everywhere, the strata's
differences weighted by their size).  Beside it the raw gap of the same rows, so a reader sees how
much of the gap the declared factors account for.

Design decisions
----------------
* **Interval**: the percentile bootstrap, rows resampled within each stratum x group cell at its
  own size, so every resample has the observed strata and group sizes and the same weights.
* **Test**: a permutation test within strata (group labels exchanged within each stratum, every
  stratum keeping its size and group sizes), statistic ``|Δ_strata|``, ``p = (1 + #{|Δ*| ≥
  |Δ|}) / (1 + P)``.  Beside it ``wald_p_value``: the normal test of the stratified variance
  ``Σ_k w_k² (s²_dk/n_dk + s²_ak/n_ak) / (Σ_k w_k)²`` (``ddof = 1``; a cell of one row adds
  nothing), a closed-form check of the same null.
* **Strata with one group** carry no comparison (``w_k = 0``): they are counted in ``strata`` and
  not in ``strata_compared``; the note says ``strata_without_both_groups:<n>``.  No stratum with
  both groups gives NaN and ``insufficient_data``.
* The stratified gap is row-level (the manifest refuses strata with ``dataset.unit``).
* Seeds: the bootstrap draws from ``child_seed(seed, 0)``, the permutations from
  ``child_seed(seed, 1)``; blocks of resamples of a fixed size for a given number of rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps

from faircode.core import checks
from faircode.core.seeds import child_seed
from faircode.stats import resampling

__all__ = ["STRATA_CI_METHOD", "StrataGap", "strata_mean_gap"]

STRATA_CI_METHOD = "stratified_percentile_bootstrap"
"""The ``ci_method`` of a within-strata gap's interval."""

Floats = NDArray[np.float64]
_BLOCK_CELLS = 1_500_000


@dataclass(frozen=True, slots=True)
class StrataGap:
    """The mean gap within strata of one attribute: estimate, interval, tests, sizes, note."""

    value: float
    ci_low: float
    ci_high: float
    p_value: float
    wald_p_value: float
    raw_gap: float
    """The plain mean gap of the same rows (every stratum, no weights)."""
    strata: int
    strata_compared: int
    n_disadvantaged: int
    n_advantaged: int
    note: str = ""


def _pooled(sums_d: Floats, n_d: Floats, sums_a: Floats, n_a: Floats) -> Floats:
    """``Δ_strata`` of per-stratum sums and sizes, shape ``(..., K)``."""
    total = n_d + n_a
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(total > 0, n_d * n_a / np.where(total > 0, total, 1.0), 0.0)
        diff = np.where(w > 0, sums_d / np.where(n_d > 0, n_d, 1.0)
                        - sums_a / np.where(n_a > 0, n_a, 1.0), 0.0)
        return (w * diff).sum(axis=-1) / w.sum(axis=-1)


def _cell_sums(weights: Floats, values: Floats, starts: NDArray[np.int64]) -> tuple[Floats, Floats]:
    """Per-block sums of ``weights * values`` and of ``weights`` (rows sorted by block)."""
    return (np.add.reduceat(weights * values, starts, axis=1),
            np.add.reduceat(weights, starts, axis=1))


def _blocks(n: int, total: int) -> list[int]:
    size = max(1, _BLOCK_CELLS // max(n, 1))
    return [min(size, total - start) for start in range(0, total, size)]


def strata_mean_gap(
    values: ArrayLike,
    disadvantaged: ArrayLike,
    strata: ArrayLike,
    *,
    n_resamples: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int | np.random.SeedSequence,
) -> StrataGap:
    """The mean gap of ``values`` within ``strata`` (integer codes), module docstring."""
    checks.check_positive_int("n_resamples", n_resamples)
    checks.check_positive_int("n_permutations", n_permutations)
    checks.check_confidence(confidence)
    v = np.asarray(values, dtype=np.float64)
    mask = checks.as_mask("disadvantaged", disadvantaged)
    codes = np.asarray(strata)
    if codes.ndim != 1 or not np.issubdtype(codes.dtype, np.integer) or (codes < 0).any():
        raise ValueError("strata: expected a 1-D array of non-negative integer codes")
    if v.ndim != 1 or not np.isfinite(v).all():
        raise ValueError("values: expected a 1-D array of finite numbers")
    checks.check_lengths(values=v, disadvantaged=mask, strata=codes)
    order = np.lexsort((~mask, codes))  # by stratum, the disadvantaged rows first in each
    v, mask, codes = v[order], mask[order], codes[order]
    k = int(codes.max()) + 1 if codes.size else 0
    n_d, n_a, sum_d, sum_a = (np.bincount(codes, weights=w, minlength=k).astype(np.float64)
                              for w in (mask, ~mask, v * mask, v * ~mask))
    raw = (v[mask].mean() - v[~mask].mean()) if mask.any() and (~mask).any() else math.nan
    present = int(((n_d + n_a) > 0).sum())
    compared = int(((n_d > 0) & (n_a > 0)).sum())
    notes = [f"strata_without_both_groups:{present - compared}"] if present > compared else []
    both = (n_d > 0) & (n_a > 0)
    nd_used, na_used = int(n_d[both].sum()), int(n_a[both].sum())
    nan = float("nan")
    if compared == 0:
        return StrataGap(nan, nan, nan, nan, nan, float(raw), present, 0, nd_used, na_used,
                         ";".join(["insufficient_data", *notes]))
    value = float(_pooled(sum_d, n_d, sum_a, n_a))
    boot = _bootstrap(v, mask, codes, n_resamples, np.random.default_rng(child_seed(seed, 0)))
    null = _permuted(v, mask, codes, n_permutations, np.random.default_rng(child_seed(seed, 1)))
    low, high = resampling.percentile_interval(boot, confidence=confidence)
    return StrataGap(value, low, high, resampling.permutation_p_value(value, null),
                     _wald_p(v, mask, codes, value), float(raw), present, compared, nd_used,
                     na_used, ";".join(notes))


def _bootstrap(v: Floats, mask: NDArray[np.bool_], codes: NDArray[np.int64], total: int,
               rng: np.random.Generator) -> Floats:
    """``Δ_strata`` of ``total`` resamples within stratum x group cells."""
    cell = codes * 2 + (~mask)
    starts = np.flatnonzero(np.append(True, cell[1:] != cell[:-1]))
    sizes = np.diff(np.append(starts, cell.size))
    kind = cell[starts]
    out = []
    for k in _blocks(v.size, total):
        weights = np.concatenate([rng.multinomial(size, np.full(size, 1.0 / size), size=k)
                                  for size in sizes], axis=1).astype(np.float64)
        sums, counts = _cell_sums(weights, v, starts)
        s = np.zeros((k, int(codes.max()) + 1, 2))
        n = np.zeros_like(s)
        s[:, kind // 2, kind % 2], n[:, kind // 2, kind % 2] = sums, counts
        out.append(_pooled(s[..., 0], n[..., 0], s[..., 1], n[..., 1]))
    return np.concatenate(out)


def _permuted(v: Floats, mask: NDArray[np.bool_], codes: NDArray[np.int64], total: int,
              rng: np.random.Generator) -> Floats:
    """``Δ_strata`` of ``total`` relabellings within strata (rows sorted by stratum with the
    disadvantaged rows first: a random order within each stratum hands its first ``n_dk``
    places the disadvantaged label)."""
    starts = np.flatnonzero(np.append(True, codes[1:] != codes[:-1]))
    out = []
    for k in _blocks(v.size, total):
        order = np.argsort(rng.random((k, v.size)) + codes[None, :], axis=1)
        labels = np.empty((k, v.size), dtype=np.float64)
        np.put_along_axis(labels, order, np.broadcast_to(mask, (k, v.size)).astype(np.float64),
                          axis=1)
        sums_d, n_d = _cell_sums(labels, v, starts)
        sums, n = _cell_sums(np.ones((1, v.size)), v, starts)
        out.append(_pooled(sums_d, n_d, sums - sums_d, n - n_d))
    return np.concatenate(out)


def _wald_p(v: Floats, mask: NDArray[np.bool_], codes: NDArray[np.int64], value: float) -> float:
    """The normal test of ``Δ_strata = 0`` with the stratified variance (module docstring)."""
    k = int(codes.max()) + 1
    parts = []
    for group in (mask, ~mask):
        n = np.bincount(codes[group], minlength=k).astype(np.float64)
        s1 = np.bincount(codes[group], weights=v[group], minlength=k)
        s2 = np.bincount(codes[group], weights=v[group] ** 2, minlength=k)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = np.where(n > 1, (s2 - s1 ** 2 / np.where(n > 0, n, 1)) / np.maximum(n - 1, 1),
                           0.0)
        parts.append((n, np.where(n > 0, var / np.where(n > 0, n, 1), 0.0)))
    (n_d, e_d), (n_a, e_a) = parts
    total = n_d + n_a
    w = np.where((n_d > 0) & (n_a > 0), n_d * n_a / np.where(total > 0, total, 1), 0.0)
    variance = float((w ** 2 * (e_d + e_a)).sum() / w.sum() ** 2)
    if not variance > 0:
        return float("nan")
    return float(2.0 * sps.norm.sf(abs(value) / math.sqrt(variance)))
