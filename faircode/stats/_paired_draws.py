"""The paired bootstrap of two strategies on the same rows: its input, its draws.

Private to :mod:`faircode.stats.paired` (which states the design and re-exports
:func:`paired_draws`, :class:`PairedDraws` and :class:`Comparison`).  One comparison's rows are
counted once into each group's joint table of ``(y, ŷ_A, ŷ_B)`` (or, with repeated units, into
unit types); every draw resamples that table (stream ``child_seed(seed, 0)``), so both
strategies and every metric are scored on the same resampled rows.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.core.seeds import child_seed
from faircode.stats import clusters
from faircode.stats._paired_counts import (
    EFFECT_METRICS,
    bootstrap_joint,
    component_draws,
    components,
    delta_draws,
    distance,
    joint_counts,
    joint_unit_counts,
    marginal_counts,
)

__all__ = ["Comparison", "PairedDraws", "bootstrap_draws", "check_count", "paired_draws",
           "prepare"]

Floats = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PairedDraws:
    """One comparison's paired bootstrap: estimates and draws of every effect's components.

    ``estimate_a``/``estimate_b`` have shape ``(M, 2)`` and ``draws_a``/``draws_b``
    ``(M, 2, B)``, rows in :data:`EFFECT_METRICS` order (:func:`components`; NaN where unused or
    undefined); ``n_units`` is the smaller group's number of units (rows), the size the interval
    is expanded for.  The arrays are made read-only.
    """

    estimate_a: Floats
    estimate_b: Floats
    draws_a: Floats
    draws_b: Floats
    n_units: int

    def __post_init__(self) -> None:
        m = len(EFFECT_METRICS)
        if self.estimate_a.shape != (m, 2) or self.estimate_b.shape != (m, 2):
            raise ValueError(f"PairedDraws: estimates: expected shape ({m}, 2), got "
                             f"{self.estimate_a.shape} and {self.estimate_b.shape}")
        if (self.draws_a.ndim != 3 or self.draws_a.shape[:2] != (m, 2)
                or self.draws_b.shape != self.draws_a.shape):
            raise ValueError(f"PairedDraws: draws: expected two arrays of shape ({m}, 2, B), "
                             f"got {self.draws_a.shape} and {self.draws_b.shape}")
        check_count("PairedDraws", "n_units", self.n_units)
        for array in (self.estimate_a, self.estimate_b, self.draws_a, self.draws_b):
            array.setflags(write=False)

    @property
    def n_resamples(self) -> int:
        """Number of draws ``B``."""
        return int(self.draws_a.shape[2])

    @property
    def value(self) -> Floats:
        """Every effect's estimate ``Δ``, shape ``(M,)``."""
        return distance(self.estimate_a) - distance(self.estimate_b)

    @property
    def delta(self) -> Floats:
        """Every effect's paired bootstrap draws of ``Δ``, shape ``(M, B)``."""
        return delta_draws(self.draws_a, self.draws_b)

    def interval(self, *, confidence: float) -> tuple[Floats, Floats]:
        """Every effect's interval ``(low, high)``, shape ``(M,)`` (:func:`effect_tests`)."""
        from faircode.stats._paired_interval import effect_tests  # the interval's module

        tests = effect_tests([self], confidence=confidence)
        return tests.low[0], tests.high[0]


def check_count(where: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{where}: {name}: expected a non-negative int, got {describe(value)}")


@dataclass(frozen=True, slots=True)
class Comparison:
    """One comparison's input: labels and both strategies' decisions on the same rows (oriented,
    1 = favourable), the disadvantaged mask, its seed and, with repeated units, a unit per row."""

    y_true: ArrayLike
    y_pred_a: ArrayLike
    y_pred_b: ArrayLike
    disadvantaged: ArrayLike
    seed: int | np.random.SeedSequence
    units: ArrayLike | None = None


def prepare(c: Comparison) -> tuple[NDArray[np.int64], clusters.UnitTypes | None]:
    """Joint counts ``(2, 8)`` and, when some unit repeats, the units' joint count types."""
    joint = joint_counts(c.y_true, c.y_pred_a, c.y_pred_b, c.disadvantaged)
    inverse = clusters.repeated_units(c.units, int(joint.sum()))
    if inverse is None:
        return joint, None
    return joint, clusters.unit_types(
        joint_unit_counts(c.y_true, c.y_pred_a, c.y_pred_b, c.disadvantaged, inverse))


def bootstrap_draws(joint: NDArray[np.int64], types: clusters.UnitTypes | None, n_resamples: int,
                  seed: int | np.random.SeedSequence) -> PairedDraws:
    """The paired bootstrap from ``child_seed(seed, 0)`` (rows, or units with ``types``)."""
    rng = np.random.default_rng(child_seed(seed, 0))
    draws_a, draws_b = component_draws(bootstrap_joint(joint, types, n_resamples, rng))
    counts_a, counts_b = marginal_counts(joint)
    if types is None:
        n_units = int(joint.sum(axis=1).min())
    else:
        n_units = min(int(types.multiplicity[types.counts[:, g].sum(axis=1) > 0].sum())
                      for g in (0, 1))
    return PairedDraws(components(counts_a), components(counts_b), draws_a, draws_b, n_units)


def paired_draws(
    y_true: ArrayLike,
    y_pred_a: ArrayLike,
    y_pred_b: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    seed: int | np.random.SeedSequence,
    units: ArrayLike | None = None,
    n_resamples: int = 2000,
) -> PairedDraws:
    """Return the paired bootstrap of A (``y_pred_a``) against B (``y_pred_b``) on the same rows.

    Labels and both decision vectors must be oriented (1 = favourable); ``units`` as in
    :func:`faircode.stats.paired.paired_effects`, whose draws (and interval) these are for the
    same arguments.
    """
    checks.check_positive_int("n_resamples", n_resamples)
    joint, types = prepare(Comparison(y_true, y_pred_a, y_pred_b, disadvantaged, seed, units))
    return bootstrap_draws(joint, types, n_resamples, seed)
