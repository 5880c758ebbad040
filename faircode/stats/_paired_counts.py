"""The paired table: each group's counts of (y, ŷ_A, ŷ_B), its draws, and the effects' parts.

Private to :mod:`faircode.stats.paired` (which states the design).  One group's rows fall in 8
joint cells, index ``4·y + 2·ŷ_A + ŷ_B`` (:data:`JOINT_CELLS`); arrays of joint counts have shape
``(..., 2, 8)`` (disadvantaged group first), and with repeated units each unit carries such an
array.  A's confusion counts (cell ``2·y + ŷ_A``, :data:`faircode.stats.resampling.CELLS`) are the
table summed over ``ŷ_B``, B's summed over ``ŷ_A``; exchanging the two strategies permutes the
cells. Every effect is a function of each strategy's signed *components* (:func:`components`),
built from the definitions of :mod:`faircode.stats._metric_defs`, through its :func:`distance`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.metrics import no_gap
from faircode.stats import _metric_defs as defs
from faircode.stats import clusters, resampling
from faircode.stats._metric_defs import FAIRNESS_METRICS

__all__ = [
    "EFFECT_METRICS",
    "JOINT_CELLS",
    "PERFORMANCE_EFFECTS",
    "bootstrap_joint",
    "component_draws",
    "components",
    "delta_draws",
    "distance",
    "effect_shape",
    "joint_counts",
    "joint_unit_counts",
    "marginal_counts",
    "own_value",
    "swap_counts",
    "swap_draws",
    "why_undefined",
]

PERFORMANCE_EFFECTS: tuple[str, ...] = ("accuracy", "balanced_accuracy")
EFFECT_METRICS: tuple[str, ...] = FAIRNESS_METRICS + PERFORMANCE_EFFECTS
"""Effects in result order: every fairness metric, then accuracy and balanced accuracy."""

JOINT_CELLS: tuple[str, ...] = tuple(f"y{y}a{a}b{b}" for y in (0, 1) for a in (0, 1)
                                     for b in (0, 1))
"""The 8 joint cells of one group, index ``4·y + 2·ŷ_A + ŷ_B``."""

Floats = NDArray[np.float64]

_A_CELL = np.array([(i >> 2) * 2 + ((i >> 1) & 1) for i in range(8)])  # 2y + a
_B_CELL = np.array([(i >> 2) * 2 + (i & 1) for i in range(8)])  # 2y + b
_SWAP = np.array([(i & 4) | ((i & 1) << 1) | ((i >> 1) & 1) for i in range(8)])
_DISCORDANT = ((1, 2), (5, 6))  # (y, 0, 1) and (y, 1, 0) for y = 0, 1


def joint_counts(
    y_true: ArrayLike, y_pred_a: ArrayLike, y_pred_b: ArrayLike, disadvantaged: ArrayLike
) -> NDArray[np.int64]:
    """Validate the four arrays and count each group's joint cells, shape ``(2, 8)`` (D, A)."""
    y = checks.as_binary("y_true", y_true)
    a = checks.as_binary("y_pred_a", y_pred_a)
    b = checks.as_binary("y_pred_b", y_pred_b)
    mask = checks.as_mask("disadvantaged", disadvantaged)
    checks.check_lengths(y_true=y, y_pred_a=a, y_pred_b=b, disadvantaged=mask)
    index = 8 * np.where(mask, 0, 1) + 4 * y.astype(np.int64) + 2 * a + b
    return np.bincount(index, minlength=16).astype(np.int64).reshape(2, 8)


def marginal_counts(joint: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """A's and B's confusion counts ``(..., 4)`` from joint counts ``(..., 8)``."""
    c = np.asarray(joint, dtype=np.int64)
    shape = (*c.shape[:-1], 4)
    out_a, out_b = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    for cell in range(8):
        out_a[..., _A_CELL[cell]] += c[..., cell]
        out_b[..., _B_CELL[cell]] += c[..., cell]
    return out_a, out_b


def joint_unit_counts(
    y_true: ArrayLike, y_pred_a: ArrayLike, y_pred_b: ArrayLike, disadvantaged: ArrayLike,
    inverse: NDArray[np.int64],
) -> NDArray[np.int64]:
    """Every unit's joint counts ``(U, 2, 8)`` from validated arrays and unit ids ``0..U-1``."""
    y = checks.as_binary("y_true", y_true).astype(np.int64)
    a = checks.as_binary("y_pred_a", y_pred_a).astype(np.int64)
    b = checks.as_binary("y_pred_b", y_pred_b).astype(np.int64)
    group = np.where(checks.as_mask("disadvantaged", disadvantaged), 0, 1)
    n_units = int(inverse.max()) + 1 if inverse.size else 0
    flat = (inverse * 2 + group) * 8 + 4 * y + 2 * a + b
    return np.bincount(flat, minlength=16 * n_units).astype(np.int64).reshape(n_units, 2, 8)


def swap_counts(joint: ArrayLike) -> NDArray[np.int64]:
    """Exchange the two strategies' decisions in joint counts ``(..., 8)``."""
    return np.asarray(joint, dtype=np.int64)[..., _SWAP]


def _swap_rows(joint: NDArray[np.int64], n_permutations: int, rng: np.random.Generator
               ) -> NDArray[np.int64]:
    """Swap draws of single rows: each discordant row lands in ``(1, 0)`` with probability 1/2."""
    out = np.repeat(joint[None], n_permutations, axis=0)
    discordant = np.stack([joint[..., i] + joint[..., j] for i, j in _DISCORDANT], axis=-1)
    to_a = rng.binomial(discordant, 0.5, size=(n_permutations, *discordant.shape))
    for y, (i, j) in enumerate(_DISCORDANT):
        out[..., j], out[..., i] = to_a[..., y], discordant[..., y] - to_a[..., y]
    return out


def swap_draws(
    joint: ArrayLike, *, n_permutations: int, rng: np.random.Generator,
    types: clusters.UnitTypes | None = None,
) -> NDArray[np.int64]:
    """Draw swap permutations of joint counts, shape ``(P, ..., 2, 8)``.

    Every row (every unit, with ``types``) has its A and B decisions exchanged with probability
    1/2, so it ends up as itself or as its swap image with probability 1/2 each, whatever it
    was.  Rows: a binomial number of each group's discordant rows of each label ends in
    ``(ŷ_A, ŷ_B) = (1, 0)``.  Units: single-row units are drawn as rows (the same call on
    ``rng``, so with one row per unit this is the row draw bit for bit); the multi-row units of a
    type and of its swap image form one pool, a binomial number of which end as the type.
    """
    checks.check_positive_int("n_permutations", n_permutations)
    if types is None:
        return _swap_rows(np.asarray(joint, np.int64), n_permutations, rng)
    single = types.counts.sum(axis=(1, 2)) == 1
    rows = np.einsum("t,tgc->gc", types.multiplicity[single], types.counts[single])
    out = _swap_rows(rows.astype(np.int64), n_permutations, rng)
    counts, weight = types.counts[~single], types.multiplicity[~single]
    movable = (swap_counts(counts) != counts).any(axis=(1, 2))
    out += np.einsum("t,tgc->gc", weight[~movable], counts[~movable])  # symmetric: unchanged
    if movable.any():
        flat = counts[movable].reshape(int(movable.sum()), -1)
        images = swap_counts(counts[movable]).reshape(flat.shape)
        distinct, inverse = np.unique(np.concatenate([flat, images]), axis=0, return_inverse=True)
        pool = np.minimum(*inverse.reshape(2, -1))  # a type and its image share one pool
        keys, pool = np.unique(pool, return_inverse=True)
        sizes = np.bincount(pool, weights=weight[movable]).astype(np.int64)
        first = distinct[keys].reshape(-1, *counts.shape[1:])
        second = swap_counts(first)
        out += np.einsum("k,kgc->gc", sizes, second)
        out += np.concatenate([
            np.tensordot(rng.binomial(sizes, 0.5, size=(k, sizes.size)), first - second,
                         axes=(1, 0)) for k in resampling.draw_blocks(n_permutations, sizes.size)
        ]).astype(np.int64)
    return out


def bootstrap_joint(joint: NDArray[np.int64], types: clusters.UnitTypes | None,
                    n_resamples: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Joint count draws ``(B, 2, 8)``: each group's rows at its size, or units (module doc)."""
    if types is not None:
        return clusters.cluster_bootstrap_counts(types, n_resamples=n_resamples, rng=rng)
    return np.stack([resampling.bootstrap_counts(joint[g], n_resamples=n_resamples, rng=rng)
                     for g in (0, 1)], axis=1)


def effect_shape(metric: str) -> str:
    """How ``Δ`` is made of the components: ``abs``, ``max_abs`` (equalized odds), ``linear``."""
    if metric in PERFORMANCE_EFFECTS:
        return "linear"
    return "max_abs" if defs.SPECS[metric].components else "abs"


def components(counts: ArrayLike) -> Floats:
    """Signed components of every effect from (D, A) confusion counts ``(..., 2, 4)``.

    Shape ``(..., M, 2)`` in :data:`EFFECT_METRICS` order: the gap minus parity (equalized odds:
    the TPR gap and the FPR gap), overall accuracy and balanced accuracy; unused slots are NaN.
    """
    c = np.asarray(counts, dtype=np.int64)
    d, a, pooled = c[..., 0, :], c[..., 1, :], c.sum(axis=-2)
    out = np.full((*c.shape[:-2], len(EFFECT_METRICS), 2), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        for k, metric in enumerate(FAIRNESS_METRICS):
            parts = defs.SPECS[metric].components
            if parts:  # a magnitude: its signed components
                for j, part in enumerate(parts):
                    out[..., k, j] = defs.metric_values(part, d, a)
            else:
                out[..., k, 0] = defs.metric_values(metric, d, a) - no_gap(metric)
        out[..., -2, 0] = defs.accuracy(pooled)
        # (TPR + TNR) / 2 as faircode.stats.operating computes it: performance.csv's value
        tnr = defs.ratio(pooled[..., defs.TN], pooled[..., defs.TN] + pooled[..., defs.FP])
        out[..., -1, 0] = (defs.tpr(pooled) + tnr) / 2.0
    return out


def distance(comps: ArrayLike) -> Floats:
    """Distance from parity (fairness) or the value (performance) of components ``(..., M, 2)``."""
    c = np.asarray(comps, dtype=np.float64)
    out = np.abs(c[..., 0])
    for k, metric in enumerate(EFFECT_METRICS):
        if effect_shape(metric) == "max_abs":
            out[..., k] = np.maximum(out[..., k], np.abs(c[..., k, 1]))
        elif effect_shape(metric) == "linear":
            out[..., k] = c[..., k, 0]
    return out


def delta_draws(draws_a: ArrayLike, draws_b: ArrayLike) -> Floats:
    """``Δ`` of component draws ``(..., M, 2, B)``: shape ``(..., M, B)``."""
    a = np.moveaxis(np.asarray(draws_a, np.float64), -1, 0)
    b = np.moveaxis(np.asarray(draws_b, np.float64), -1, 0)
    return np.moveaxis(distance(a) - distance(b), 0, -1)


def component_draws(joint_draws: NDArray[np.int64]) -> tuple[Floats, Floats]:
    """A's and B's component draws ``(M, 2, B)`` from joint count draws ``(B, 2, 8)``."""
    counts_a, counts_b = marginal_counts(joint_draws)
    return (np.moveaxis(components(counts_a), 0, -1),
            np.moveaxis(components(counts_b), 0, -1))


def own_value(metric: str, counts: NDArray[np.int64]) -> float:
    """A strategy's own value of ``metric`` from its (D, A) confusion counts ``(2, 4)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric in PERFORMANCE_EFFECTS:
            return float(components(counts)[EFFECT_METRICS.index(metric), 0])
        return float(defs.metric_values(metric, counts[0], counts[1]))


def why_undefined(metric: str, counts_a: NDArray[np.int64], counts_b: NDArray[np.int64]) -> str:
    """``insufficient_data`` (an empty subset) or, for disparate impact, the zero-rate note."""
    if metric in PERFORMANCE_EFFECTS:
        return "insufficient_data"
    spec = defs.SPECS[metric]
    empty = any(int(c[g][list(s)].sum()) == 0 for c in (counts_a, counts_b) for g in (0, 1)
                for s in spec.subsets)
    return "insufficient_data" if empty else "undefined_advantaged_rate_zero"
