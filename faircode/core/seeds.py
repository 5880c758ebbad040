"""Seeds: one master seed per audit, and a child stream per (kind of randomness, grid position).

Every stochastic step of faircode draws from ``SeedSequence(master, spawn_key=(stream, ...))``:
:class:`Stream` names the first key component (which kind of randomness the stream feeds), the
rest is the position in the grid (strategy, model, attribute, ...), never the execution order.
So a result is the same for any number of workers, backend, dispatch or completion order.

:func:`child_seed` derives a child :class:`~numpy.random.SeedSequence` by *appending* a key to
the parent's ``spawn_key`` without mutating it (unlike ``SeedSequence.spawn``).

A key that stands for a named thing of a table (a metric, a comparison of strategies) is that
thing's own key, never its position in the table: the things that existed before keys were
named keep their explicit small keys (their former positions, so no number changed), and every
thing added since takes :func:`name_stream` of its name, a key at or above :data:`NAMED` that no
explicit key can reach.  This module imports numpy only when a seed sequence is made, so the
tables that hold such keys (:mod:`faircode.core.cells`, :mod:`faircode.core.metrics`) stay
import-light.
"""

from __future__ import annotations

import hashlib
import numbers
from enum import IntEnum
from typing import TYPE_CHECKING

from faircode.core.errors import describe

if TYPE_CHECKING:
    import numpy as np

__all__ = ["NAMED", "Stream", "child_seed", "name_stream", "replicate_seed"]

NAMED = 1 << 32
"""The smallest key :func:`name_stream` gives; explicit keys of a table lie below it."""


class Stream(IntEnum):
    """First component of every child seed's spawn key: which kind of randomness it feeds."""

    FAIRNESS = 0
    PERFORMANCE = 1
    INTERSECTIONAL = 2
    COUNTERFACTUAL = 3
    PREDICTION = 4
    DECISIONS = 5
    REPLICATE = 6
    """A training replicate's own master seed: ``SeedSequence(master, spawn_key=(6, k))``."""
    CALIBRATION = 7
    """The calibration gap's bootstrap and permutation (:mod:`faircode.evaluate.detail`)."""
    EFFECTS = 8
    """Paired mitigation effects: ``(8, comparison, model, attribute)``, not a grid position."""
    STRATIFIED = 9
    """The gap within strata's permutation test: ``(9, s, m, attribute, stratum)``."""
    TEXT = 10
    """Text audits (:mod:`faircode.evaluate.text`): ``(10, table, key of the axis or term, ...)``,
    never a system's position, so every system is resampled with the same draws."""
    REGRESSION = 11
    """Regression audits (:mod:`faircode.evaluate.regression`): ``(11, s, m, attribute)`` of a
    grid cell in its replicate's master seed, ``(11, name_stream("observed"), attribute)`` of
    the observed outcome; the gap within strata's ``(11, name_stream("strata"), ...)``."""
    BAGS = 12
    """A bagged member of a cell's ensemble (:mod:`faircode.grid.bagging`): ``(12, strategy,
    model, member)`` draws its bootstrap of the training rows and its model's seed."""
    ARBITRARINESS = 13
    """The statistics of the ensembles and of the set of models (:mod:`faircode.evaluate.
    arbitrariness`): ``(13, name_stream(what), ...)``, each keyed by the name of what it feeds
    (the abstained ensembles' tests, the held-out split, the alternative's paired test)."""


def child_seed(seed: int | np.random.SeedSequence, *key: int) -> np.random.SeedSequence:
    """Return the child seed sequence of ``seed`` at ``key`` (appended to its spawn key).

    An ``int`` seed is treated as ``np.random.SeedSequence(seed)``.  The parent is not mutated,
    so ``child_seed(s, i, j)`` is the same stream however many times and in whatever order it is
    asked for; it equals ``SeedSequence(master, spawn_key=(i, j))`` for an int master.
    """
    for position, part in enumerate(key):
        if isinstance(part, bool) or not isinstance(part, numbers.Integral) or part < 0:
            raise ValueError(
                f"child_seed: key[{position}]: expected a non-negative int, got {describe(part)}"
            )
    import numpy as np  # here, not at import: the seed tables stay import-light

    extra = tuple(int(part) for part in key)
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(
            seed.entropy, spawn_key=tuple(seed.spawn_key) + extra, pool_size=seed.pool_size
        )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(
            f"child_seed: seed: expected a non-negative int or SeedSequence, got {describe(seed)}"
        )
    return np.random.SeedSequence(int(seed), spawn_key=extra)


def name_stream(name: str) -> int:
    """The stream key of a named thing: :data:`NAMED` plus the first 32 bits of the SHA-256 of
    ``name`` (UTF-8), so the same name gives the same key on every machine and run."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name_stream: name: expected a non-empty str, got {describe(name)}")
    return NAMED + int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")


def replicate_seed(master: int, replicate: int) -> int:
    """Replicate ``replicate``'s master seed: ``master`` for 0, else the first 32-bit word of
    ``SeedSequence(master, spawn_key=(Stream.REPLICATE, replicate))``."""
    if replicate == 0:
        return master
    return int(child_seed(master, Stream.REPLICATE, replicate).generate_state(1)[0])

