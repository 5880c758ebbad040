"""Cluster (unit-level) resampling on confusion counts.

When rows repeat a unit (a person, a patient),
rows are not independent: these resample and permute whole units, still at a cost independent
of the number of rows.  Every unit contributes its per-group confusion counts, an array
``(G, 4)``; identical arrays are collapsed into "unit types" with multiplicities (few in
practice), and a resample is a multinomial (bootstrap) or multivariate-hypergeometric
(permutation) draw over the types.

* Bootstrap strata: units are resampled within strata of their *group pattern* (the set of
  groups they have rows in: only group 0, only group 1, ..., then each mixed pattern), each at
  its own number of units — the unit analogue of resampling each group at its own size.
  A stratum whose types are all single rows is drawn exactly as
  :func:`.stats.bootstrap_counts` draws (one multinomial over its pooled cells, same calls on
  ``rng``), so with one row per unit the cluster bootstrap is bit-identical to the row bootstrap.
* Permutation: within each metric stratum (a set of cells, as in :func:`.stats.permute_counts`) the
  exchangeable pieces are the units' *per-group parts* restricted to the stratum's cells; the
  disadvantaged group keeps its number of parts and receives a uniformly drawn set of them.
  When the attribute is constant within every unit a part is a whole unit, so group labels are
  exchanged between units.  A unit whose attribute varies (e.g. an age band across encounters)
  is split into its per-group parts, which are exchanged as if they were separate units: its
  dependence across groups is ignored, which :func:`cluster_permutation_note` reports.  With
  single-row parts a stratum is drawn exactly as :func:`.stats.permute_counts` draws.

Moved out of :mod:`faircode.stats.resampling` unchanged (names and behaviour as before).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core.checks import as_binary, check_lengths, check_positive_int
from faircode.core.errors import describe
from faircode.stats.resampling import draw_blocks

__all__ = [
    "MIXED_UNITS_NOTE",
    "UnitTypes",
    "cluster_bootstrap_counts",
    "cluster_permutation_note",
    "cluster_permute_counts",
    "deflation",
    "design_effect",
    "repeated_units",
    "unit_counts",
    "unit_types",
]

MIXED_UNITS_NOTE = "attribute_varies_within_units"
"""Note prefix for a cluster permutation test in which some units were split by group."""


@dataclass(frozen=True, slots=True)
class UnitTypes:
    """Distinct per-unit confusion-count arrays and how many units share each.

    ``counts`` has shape ``(T, G, 4)`` (type, group, cell in :data:`CELLS` order; any number
    ``C`` of cells per group is accepted, e.g. the paired engine's 8 joint cells);
    ``multiplicity`` ``(T,)`` is the number of units of each type (>= 1); ``pattern`` ``(T,)``
    is the bitmask of the groups a type has rows in (bit ``g`` set iff ``counts[t, g].sum() > 0``).
    """

    counts: NDArray[np.int64]
    multiplicity: NDArray[np.int64]
    pattern: NDArray[np.int64]

    def __post_init__(self) -> None:
        c, m, p = self.counts, self.multiplicity, self.pattern
        if c.ndim != 3 or c.shape[2] < 1:
            raise ValueError(f"UnitTypes: counts: expected shape (T, G, C), got {c.shape}")
        if m.shape != (c.shape[0],) or p.shape != (c.shape[0],):
            raise ValueError("UnitTypes: multiplicity and pattern: expected shape (T,)")
        if (c < 0).any() or (m < 1).any() or (c.sum(axis=(1, 2)) < 1).any():
            raise ValueError("UnitTypes: expected non-negative counts, non-empty types, m >= 1")

    @property
    def n_groups(self) -> int:
        """Number of groups ``G``."""
        return int(self.counts.shape[1])

    @property
    def n_units(self) -> int:
        """Number of units (sum of multiplicities)."""
        return int(self.multiplicity.sum())

    def pooled(self) -> NDArray[np.int64]:
        """Return the observed per-group counts ``(G, 4)`` (every unit summed)."""
        return np.asarray(np.einsum("t,tgc->gc", self.multiplicity, self.counts), dtype=np.int64)

    def mixed_units(self) -> int:
        """Return the number of units with rows in more than one group."""
        several = (self.counts.sum(axis=2) > 0).sum(axis=1) > 1
        return int(self.multiplicity[several].sum())


def unit_counts(
    y_true: ArrayLike, y_pred: ArrayLike, group: ArrayLike, unit: ArrayLike, *, n_groups: int
) -> NDArray[np.int64]:
    """Return every unit's per-group confusion counts, shape ``(U, G, 4)``, in one O(n) pass.

    ``group`` is an int per row in ``[0, n_groups)``, or ``-1`` for a row in no compared group
    (left out); ``unit`` is any per-row id (units are ordered as ``np.unique`` sorts them).
    """
    check_positive_int("n_groups", n_groups)
    y = as_binary("y_true", y_true)
    yhat = as_binary("y_pred", y_pred)
    g = np.asarray(group)
    if g.ndim != 1 or not np.issubdtype(g.dtype, np.integer):
        raise ValueError(f"group: expected a 1-D int array, got ndim={g.ndim} dtype {g.dtype}")
    u = np.asarray(unit)
    check_lengths(y_true=y, y_pred=yhat, group=g, unit=u)
    if ((g < -1) | (g >= n_groups)).any():
        raise ValueError(f"group: expected values in [-1, {n_groups}), got {describe(g.min())}")
    _, inverse = np.unique(u, return_inverse=True)
    n_units = int(inverse.max()) + 1 if u.size else 0
    keep = g >= 0
    flat = (inverse.reshape(-1)[keep] * n_groups + g[keep]) * 4 + 2 * y[keep] + yhat[keep]
    counts = np.bincount(flat.astype(np.int64), minlength=n_units * n_groups * 4)
    return counts.astype(np.int64).reshape(n_units, n_groups, 4)


def unit_types(counts: ArrayLike) -> UnitTypes:
    """Collapse per-unit counts ``(U, G, C)`` into distinct types; all-zero units are dropped."""
    array = np.asarray(counts, dtype=np.int64)
    if array.ndim != 3 or array.shape[2] < 1:
        raise ValueError(f"unit_types: counts: expected shape (U, G, C), got {array.shape}")
    n_groups, n_cells = array.shape[1], array.shape[2]
    flat = array.reshape(array.shape[0], -1)
    flat = flat[flat.sum(axis=1) > 0]
    if flat.shape[0] == 0:
        empty = np.zeros(0, dtype=np.int64)
        return UnitTypes(np.zeros((0, n_groups, n_cells), dtype=np.int64), empty, empty.copy())
    distinct, multiplicity = _unique_rows(flat)
    typed = distinct.reshape(-1, n_groups, n_cells).astype(np.int64)
    has_rows = typed.sum(axis=2) > 0
    pattern = (has_rows * (1 << np.arange(n_groups, dtype=np.int64))).sum(axis=1)
    return UnitTypes(typed, multiplicity.astype(np.int64), pattern.astype(np.int64))


def _unique_rows(flat: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``np.unique(flat, axis=0, return_counts=True)`` of non-negative rows, faster.

    Each row is packed into one int64 in base ``max + 1`` (first column most significant), whose
    integer order is the rows' lexicographic order, so the result is identical; rows too wide to
    pack fall back to ``np.unique(axis=0)``.
    """
    base = int(flat.max()) + 1
    if flat.shape[1] * np.log2(base) >= 62:
        return np.unique(flat, axis=0, return_counts=True)
    weights = base ** np.arange(flat.shape[1] - 1, -1, -1, dtype=np.int64)
    _, first, multiplicity = np.unique(flat @ weights, return_index=True, return_counts=True)
    return flat[first], multiplicity


def _pattern_order(patterns: NDArray[np.int64]) -> list[int]:
    """Single-group patterns first in group order, then mixed patterns ascending."""
    unique = sorted({int(p) for p in patterns})
    return sorted(unique, key=lambda p: (bin(p).count("1") > 1, p))


def cluster_bootstrap_counts(
    types: UnitTypes, *, n_resamples: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Draw ``n_resamples`` cluster-bootstrap resamples of per-group counts, shape ``(B, G, C)``.

    Units are drawn with replacement within each group-pattern stratum at the stratum's number
    of units (a multinomial over its types weighted by multiplicity); a resample's counts are the
    sum of the drawn units' counts.  ``out[:, g]`` has the shape and meaning of
    :func:`.stats.bootstrap_counts` for group ``g``; with one row per unit it is the same draw.
    """
    check_positive_int("n_resamples", n_resamples)
    out = np.zeros((n_resamples, types.n_groups, types.counts.shape[2]), dtype=np.int64)
    for pattern in _pattern_order(types.pattern):
        chosen = types.pattern == pattern
        counts, weight = types.counts[chosen], types.multiplicity[chosen]
        n = int(weight.sum())
        if (counts.sum(axis=(1, 2)) == 1).all():  # single rows: exactly bootstrap_counts' draw
            group = int(pattern).bit_length() - 1
            pooled = np.einsum("t,tc->c", weight, counts[:, group])
            out[:, group] += rng.multinomial(n, pooled / n, size=n_resamples)
            continue
        out += np.concatenate([
            np.tensordot(rng.multinomial(n, weight / n, size=k), counts, axes=(1, 0))
            for k in draw_blocks(n_resamples, weight.size)]).astype(np.int64)
    return out


def cluster_permute_counts(
    types: UnitTypes,
    *,
    strata: Sequence[Sequence[int]],
    n_permutations: int,
    rng: np.random.Generator,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Draw unit-level group-label permutations as counts, two ``(P, 4)`` arrays (group 0, 1).

    ``types`` must have two groups (0 = disadvantaged, 1 = advantaged).  Within each stratum (a
    set of cell indices, as in :func:`.stats.permute_counts`) the units' per-group parts that
    have rows in the stratum exchange labels: group 0 keeps its number of parts and receives a
    multivariate-hypergeometric draw of the distinct restricted parts.  Cells outside every
    stratum keep their observed counts.  See :func:`cluster_permutation_note`.
    """
    if types.n_groups != 2:
        raise ValueError(
            f"cluster_permute_counts: types: expected 2 groups, got {types.n_groups}"
        )
    check_positive_int("n_permutations", n_permutations)
    pooled_groups = types.pooled()
    counts_d, counts_a = pooled_groups[0], pooled_groups[1]
    pooled = counts_d + counts_a
    out_d = np.tile(counts_d, (n_permutations, 1))
    out_a = np.tile(counts_a, (n_permutations, 1))
    parts = np.concatenate([types.counts[:, 0], types.counts[:, 1]])  # (2T, 4)
    label = np.repeat(np.array([0, 1]), types.counts.shape[0])
    weight = np.concatenate([types.multiplicity, types.multiplicity])
    for stratum in strata:
        index = np.asarray(stratum, dtype=np.intp)
        restricted = parts[:, index]
        relevant = restricted.sum(axis=1) > 0
        if (restricted[relevant].sum(axis=1) == 1).all():  # single rows: permute_counts' draw
            draws = rng.multivariate_hypergeometric(
                pooled[index], int(counts_d[index].sum()), size=n_permutations
            )
            out_d[:, index] = draws
            out_a[:, index] = pooled[index] - draws
            continue
        distinct, inverse = np.unique(restricted[relevant], axis=0, return_inverse=True)
        colors = np.bincount(inverse.reshape(-1), weights=weight[relevant]).astype(np.int64)
        n_d = int(weight[relevant & (label == 0)].sum())
        draws = np.concatenate([rng.multivariate_hypergeometric(colors, n_d, size=k) @ distinct
                                for k in draw_blocks(n_permutations, colors.size)])
        out_d[:, index] = draws
        out_a[:, index] = pooled[index] - draws
    return out_d, out_a


def cluster_permutation_note(types: UnitTypes) -> str:
    """Return ``""`` when the attribute is constant within every unit, else a note naming how many
    units were split into per-group parts, e.g. ``attribute_varies_within_units:12``."""
    mixed = types.mixed_units()
    return f"{MIXED_UNITS_NOTE}:{mixed}" if mixed else ""


def design_effect(cluster_samples: ArrayLike, row_samples: ArrayLike) -> float:
    """Return var(cluster resamples) / var(row resamples) of one statistic's finite resamples.

    NaN when either side has fewer than two finite resamples or the row variance is 0.
    """
    cluster = np.asarray(cluster_samples, dtype=np.float64)
    row = np.asarray(row_samples, dtype=np.float64)
    cluster, row = cluster[np.isfinite(cluster)], row[np.isfinite(row)]
    if cluster.size < 2 or row.size < 2:
        return float("nan")
    row_var = float(row.var(ddof=1))
    if row_var == 0.0:
        return float("nan")
    return float(cluster.var(ddof=1)) / row_var


def repeated_units(units: ArrayLike | None, n_rows: int) -> NDArray[np.int64] | None:
    """Return ``units`` as an id array when some unit has several rows, else ``None``.

    ``None`` (no unit declared) and one row per unit both mean "rows are independent": the
    callers then take their row-level path unchanged, so such numbers stay bit-identical.
    """
    if units is None:
        return None
    u = np.asarray(units)
    if u.ndim != 1 or u.shape[0] != n_rows:
        raise ValueError(f"units: expected a 1-D array of {n_rows} ids, got shape {u.shape}")
    _, inverse = np.unique(u, return_inverse=True)
    inverse = inverse.reshape(-1).astype(np.int64)
    return inverse if inverse.size and int(inverse.max()) + 1 < inverse.size else None


def deflation(deff: float) -> float:
    """The factor counts are divided by for effective sizes: ``deff`` if finite and > 1, else 1.

    A design effect below 1 (resampling noise when units barely repeat) never narrows an
    interval, and an undefined one (NaN: no row variance) leaves the counts as they are.
    """
    return float(deff) if np.isfinite(deff) and deff > 1.0 else 1.0
