"""Self-consistency: how often the models a dataset could have given agree on one person.

Cooper et al. ("Arbitrariness and social prediction: the confounding role of variance in fair
classification", AAAI 2024) train ``B`` models on bootstrap replicates of the training rows and
measure, for each test row ``x``, its **self-consistency**: the probability that two models
trained on two independent draws of the training data decide ``x`` alike.  With ``k`` of the
``B`` members deciding 1, the unbiased estimate of that probability is

    ``SC(x) = 1 − 2·k·(B − k) / (B·(B − 1))``

(the share of the ``B·(B − 1)`` ordered pairs of distinct members that agree): 1 when every
member agrees, about 0.5 when they split evenly (exactly ``(B − 2)/(2(B − 1))`` at ``B/2``, a
little below 0.5).  A decision is **arbitrary** where ``SC(x)`` is below the declared level
``κ`` (``arbitrariness.consistency_level``), and the ensemble **abstains** there; elsewhere it
decides by majority vote (:func:`ensemble`).

Design decisions
----------------
* **The level is above 0.5**, so a tied vote (``k = B/2``, only with an even ``B``) is always
  arbitrary and the majority is never undefined where the ensemble decides.
* **The share of arbitrary decisions per group** (:func:`arbitrary_shares`) has the Wilson
  interval of the groups' table (:mod:`faircode.stats.groups`), at effective counts where some
  unit repeats (the closed-form design effect of a ratio estimator over the group's units), so
  it needs no seed.  It is a property of the *training procedure* on this dataset as much as of
  the rows: the interval holds the test rows' sampling noise given the ``B`` members, not the
  Monte-Carlo noise of a finite ``B`` (each ``SC(x)`` is unbiased for its own probability, so a
  share of ``SC(x) < κ`` is slightly biased towards the level's side at small ``B``).
* Votes are 0/1 decisions at the cell's own operating point; how a member decided (its cutoff)
  is the caller's (:mod:`faircode.evaluate.arbitrariness`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.errors import describe
from faircode.stats import clusters, resampling
from faircode.stats.groups import design_effects

__all__ = ["ArbitraryShare", "Ensemble", "arbitrary_shares", "ensemble", "self_consistency"]

Floats = NDArray[np.float64]


def _votes(votes: ArrayLike) -> NDArray[np.int64]:
    """``votes`` as a ``(B, n)`` 0/1 integer array with ``B >= 2``."""
    v = np.asarray(votes)
    if v.ndim != 2 or v.shape[0] < 2 or not np.isin(v, (0, 1)).all():
        raise ValueError(f"votes: expected a (members, rows) array of 0/1 with at least two "
                         f"members, got {describe(votes)}")
    return v.astype(np.int64)


def self_consistency(votes: ArrayLike) -> Floats:
    """Each row's self-consistency ``1 − 2·k·(B − k) / (B·(B − 1))`` from the ``(B, n)`` 0/1
    ``votes`` of ``B`` members (module docstring)."""
    v = _votes(votes)
    b = v.shape[0]
    k = v.sum(axis=0)
    return 1.0 - 2.0 * k * (b - k) / (b * (b - 1.0))


@dataclass(frozen=True, slots=True)
class Ensemble:
    """An ensemble's decisions on its rows: each row's votes for 1 (``k`` of ``members``), its
    self-consistency, the majority decision (1 where ``k > B/2``) and whether it abstains
    (self-consistency below the level)."""

    members: int
    votes_for: NDArray[np.int64]
    self_consistency: Floats
    decision: NDArray[np.int8]
    abstain: NDArray[np.bool_]

    @property
    def kept(self) -> NDArray[np.bool_]:
        """The rows the ensemble decides (does not abstain on)."""
        return ~self.abstain


def ensemble(votes: ArrayLike, *, level: float) -> Ensemble:
    """The ensemble of ``votes`` (``(B, n)``, 0/1) abstaining where self-consistency is below
    ``level`` (in (0.5, 1]: a tied vote always abstains)."""
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.5 < level <= 1.0:
        raise ValueError(f"level: expected a number in (0.5, 1], got {describe(level)}")
    v = _votes(votes)
    k = v.sum(axis=0)
    sc = self_consistency(v)
    return Ensemble(v.shape[0], k, sc, (2 * k > v.shape[0]).astype(np.int8), sc < level)


@dataclass(frozen=True, slots=True)
class ArbitraryShare:
    """One group's share of arbitrary decisions (self-consistency below the level), its Wilson
    interval (at effective counts with repeated units), and its rows' mean self-consistency."""

    group: str
    n: int
    arbitrary: int
    share: float
    ci_low: float
    ci_high: float
    design_effect: float
    mean_self_consistency: float


def arbitrary_shares(
    sc: ArrayLike,
    disadvantaged: ArrayLike,
    *,
    level: float,
    units: ArrayLike | None = None,
    confidence: float = 0.95,
) -> tuple[ArbitraryShare, ArbitraryShare]:
    """The disadvantaged and the advantaged group's share of rows whose self-consistency ``sc``
    is below ``level``, each with its interval (module docstring); ``units`` one id per row."""
    checks.check_confidence(confidence)
    values = np.asarray(sc, dtype=np.float64)
    mask = checks.as_binary("disadvantaged", disadvantaged).astype(bool)
    checks.check_lengths(sc=values, disadvantaged=mask)
    arbitrary = (values < level).astype(np.int64)
    inverse = clusters.repeated_units(units, values.size)
    out = []
    for name, member in (("disadvantaged", mask), ("advantaged", ~mask)):
        n, x = int(member.sum()), int(arbitrary[member].sum())
        deff = 1.0
        if inverse is not None and n:
            unit = inverse[member]
            x_u = np.bincount(unit, weights=arbitrary[member])
            m_u = np.bincount(unit).astype(np.float64)
            deff = float(design_effects(x_u[:, None], m_u[:, None])[0])
        factor = clusters.deflation(deff)
        low, high = resampling.wilson_interval(np.array([x / factor]), np.array([n / factor]),
                                               confidence=confidence)
        share = x / n if n else float("nan")
        out.append(ArbitraryShare(name, n, x, share, float(low[0]), float(high[0]), deff,
                                  float(values[member].mean()) if n else float("nan")))
    return out[0], out[1]
