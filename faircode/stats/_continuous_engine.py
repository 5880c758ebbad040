"""The engine of :mod:`faircode.stats.continuous`: weighted statistics of rows sorted once.

Private.  A draw (a bootstrap resample, a permutation) is a pair of row weights, one per group;
every per-group statistic -- a weighted mean, quantile or distribution function -- is computed
for a block of draws at once from the rows sorted by value once, and the KS distance of the pair
from their distribution functions.  Blocks hold at most :data:`BLOCK_CELLS` weights, a fixed
number for a given number of rows, so no number depends on the machine.  The design decisions
are :mod:`faircode.stats.continuous`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.stats import clusters

__all__ = ["BLOCK_CELLS", "LEVELS", "Components", "Design", "Sample", "Weights", "blocks",
           "bootstrap_weights", "components", "design_of", "draw", "permuted_weights", "sample",
           "weighted_quantile"]

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Bools = NDArray[np.bool_]
Components = dict[str, "tuple[Floats, Floats] | Floats"]
"""Per-group statistics by name (``(disadvantaged, advantaged)``, one value per draw) and
``ks``, the pair's distance."""
Weights = Callable[[int, np.random.Generator], Floats]
"""``weights(k, rng)``: ``k`` draws of row weights, ``(k, n)`` (a bootstrap: the rows' counts,
split by group) or ``(2, k, n)`` (a permutation: each group's 0/1 weights)."""

LEVELS: dict[str, float] = {"q10": 0.1, "q50": 0.5, "q90": 0.9}
"""The per-group quantiles, by component name."""
BLOCK_CELLS = 1_500_000
"""Draw weights held at once (draws x rows: 12 MB of float64 per array)."""


def weighted_quantile(sorted_values: Floats, cumulative: Floats, level: float) -> Floats:
    """The ``level`` quantile (numpy's linear interpolation) of each row's weighted sample.

    ``sorted_values`` ``(n,)`` ascending; ``cumulative`` ``(k, n)`` the running sums of each
    row's non-negative integer weights (a weight is how many times the row is drawn).  Order
    statistic ``j`` of a sample is the first value whose running weight exceeds ``j``; the
    quantile interpolates between order statistics ``⌊h⌋`` and ``⌊h⌋ + 1``, ``h = (N − 1)·level``.
    A row without weight is NaN.
    """
    total = cumulative[:, -1]
    h = (total - 1.0) * level
    low = np.floor(h)
    frac = h - low
    high = np.minimum(low + 1.0, total - 1.0)
    last = sorted_values.size - 1
    at_low = np.minimum((cumulative <= low[:, None]).sum(axis=1), last)
    at_high = np.minimum((cumulative <= high[:, None]).sum(axis=1), last)
    out = sorted_values[at_low] + frac * (sorted_values[at_high] - sorted_values[at_low])
    return np.where(total > 0, out, np.nan)


@dataclass(frozen=True, slots=True)
class Design:
    """How rows are resampled and exchanged: ``unit`` per row (``0..U-1``), the bootstrap
    ``strata`` (the unit ids of each group pattern: only disadvantaged, only advantaged, both),
    the exchangeable ``part`` of each row (a unit's rows of one group) and each part's label
    (``part_disadvantaged``), ``mixed`` the units split into parts, ``clustered`` whether some
    unit has several rows."""

    unit: Ints
    strata: tuple[Ints, ...]
    part: Ints
    part_disadvantaged: Bools
    mixed: int
    clustered: bool


def design_of(disadvantaged: Bools, units: ArrayLike | None) -> Design:
    """The :class:`Design` of rows with group ``disadvantaged`` and optional unit ids (without
    units, or one row per unit, every row is its own unit and part)."""
    n = disadvantaged.size
    unit = clusters.repeated_units(units, n)
    if unit is None:
        rows = np.arange(n, dtype=np.int64)
        return Design(rows, (rows[disadvantaged], rows[~disadvantaged]), rows,
                      disadvantaged.copy(), 0, False)
    count = int(unit.max()) + 1
    has_d = np.bincount(unit, weights=disadvantaged, minlength=count) > 0
    has_a = np.bincount(unit, weights=~disadvantaged, minlength=count) > 0
    ids = np.arange(count, dtype=np.int64)
    strata = tuple(ids[m] for m in (has_d & ~has_a, has_a & ~has_d, has_d & has_a)
                   if m.any())
    part_key = unit * 2 + (~disadvantaged).astype(np.int64)
    keys, part = np.unique(part_key, return_inverse=True)
    return Design(unit, strata, part.reshape(-1).astype(np.int64), keys % 2 == 0,
                  int((has_d & has_a).sum()), True)


@dataclass(frozen=True, slots=True)
class Sample:
    """The rows sorted by value once: values, group, residuals, tie-block ends, design."""

    value: Floats
    disadvantaged: Bools
    residual: Floats | None
    ends: Ints
    design: Design


def _numbers(name: str, values: ArrayLike) -> Floats:
    """``values`` as a 1-D array of finite floats, else one ValueError line naming it."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or not np.isfinite(array).all():
        raise ValueError(f"{name}: expected a 1-D array of finite numbers, got shape "
                         f"{array.shape} with {int((~np.isfinite(array)).sum())} not finite")
    return array


def sample(values: ArrayLike, disadvantaged: ArrayLike, truth: ArrayLike | None,
           units: ArrayLike | None) -> Sample:
    """The rows of ``values`` (and ``truth − values``, the residuals) sorted by value."""
    v = _numbers("values", values)
    mask = checks.as_mask("disadvantaged", disadvantaged)
    checks.check_lengths(values=v, disadvantaged=mask)
    order = np.argsort(v, kind="stable")
    residual = None
    if truth is not None:
        t = _numbers("truth", truth)
        checks.check_lengths(values=v, truth=t)
        residual = (t - v)[order]
    unit = None if units is None else np.asarray(units)[order]
    sorted_values = v[order]
    ends = np.flatnonzero(np.append(sorted_values[1:] != sorted_values[:-1], True))
    return Sample(sorted_values, mask[order], residual, ends.astype(np.int64),
                  design_of(mask[order], unit))


def _group(s: Sample, w: Floats, wanted: set[str]) -> dict[str, Floats]:
    """Each wanted per-group statistic of the weighted samples ``w`` ``(k, n)``."""
    total = w.sum(axis=1)
    out: dict[str, Floats] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        if "mean" in wanted:
            out["mean"] = w @ s.value / total
        if s.residual is not None and "mae" in wanted:
            out["mae"] = w @ np.abs(s.residual) / total
        if s.residual is not None and "residual" in wanted:
            out["residual"] = w @ s.residual / total
    if any(name in wanted for name in LEVELS) or "cdf" in wanted:
        cumulative = np.cumsum(w, axis=1)
        for name, level in LEVELS.items():
            if name in wanted:
                out[name] = weighted_quantile(s.value, cumulative, level)
        if "cdf" in wanted:
            with np.errstate(invalid="ignore", divide="ignore"):
                out["cdf"] = cumulative[:, s.ends] / total[:, None]
    return out


def components(s: Sample, wd: Floats, wa: Floats, wanted: set[str]) -> Components:
    """The wanted statistics of both groups' weighted samples, and ``ks`` (their distance)."""
    per = wanted - {"ks"} | ({"cdf"} if "ks" in wanted else set())
    d, a = _group(s, wd, per), _group(s, wa, per)
    out: Components = {k: (d[k], a[k]) for k in d if k != "cdf"}
    if "ks" in wanted:
        out["ks"] = np.abs(d["cdf"] - a["cdf"]).max(axis=1)
    return out


def blocks(n: int, total: int) -> list[int]:
    """The sizes of the blocks ``total`` draws of ``n`` rows are computed in."""
    size = max(1, BLOCK_CELLS // max(n, 1))
    return [min(size, total - start) for start in range(0, total, size)]


def bootstrap_weights(unit: Ints, strata: Sequence[Ints], k: int,
                      rng: np.random.Generator) -> Floats:
    """``k`` bootstrap draws of row weights: the units of each stratum drawn with replacement
    at the stratum's size (each draw a uniform pick among them); a row weighs its unit's
    count."""
    n_units = int(unit.max()) + 1
    counts = np.zeros((k, n_units), dtype=np.float64)
    offset = (np.arange(k, dtype=np.int64) * n_units)[:, None]
    for ids in strata:
        if ids.size:
            picks = ids[rng.integers(0, ids.size, size=(k, ids.size))]
            counts += np.bincount((offset + picks).ravel(),
                                  minlength=k * n_units).reshape(k, n_units)
    return counts[:, unit]


def permuted_weights(design: Design, k: int, rng: np.random.Generator) -> Floats:
    """``k`` permutations of the parts' labels, as each group's 0/1 weights, ``(2, k, n)``."""
    labels = rng.permuted(np.tile(design.part_disadvantaged, (k, 1)), axis=1)
    wd = labels[:, design.part].astype(np.float64)
    return np.stack([wd, 1.0 - wd])


def draw(s: Sample, total: int, wanted: set[str], weights: Weights,
         rng: np.random.Generator) -> Components:
    """The wanted statistics over ``total`` draws of ``weights``, block by block."""
    found: dict[str, list[Floats]] = {}
    for k in blocks(s.value.size, total):
        w = weights(k, rng)
        wd, wa = (w[0], w[1]) if w.ndim == 3 else (w * s.disadvantaged, w * ~s.disadvantaged)
        for name, part in components(s, wd, wa, wanted).items():
            if isinstance(part, tuple):
                found.setdefault(f"{name}_d", []).append(part[0])
                found.setdefault(f"{name}_a", []).append(part[1])
            else:
                found.setdefault(name, []).append(part)
    joined = {name: np.concatenate(parts) for name, parts in found.items()}
    out: Components = {name: joined[name] for name in joined if name == "ks"}
    for name in {n[:-2] for n in joined if n.endswith(("_d", "_a"))}:
        out[name] = (joined[f"{name}_d"], joined[f"{name}_a"])
    return out
