"""Counting a row set chunk by chunk into a :class:`~faircode.stats.tally.Tally`, in bounded memory.

:class:`TallyBuilder` takes a row set in chunks of any size and order (a decision log read
10⁶ rows at a time, one shard of a Dask reduction) and ends with the tally the in-memory path
(:func:`faircode.stats.tally.tally_rows`) gives on all rows at once.  The cells are added; what
needs every row of a unit, or every row of a score value, is kept as aggregated records
(:class:`~faircode.stats.records.Records`) in a
:class:`~faircode.stats.records.RecordStore`, which spills them to disk past its budget.

Design decisions
----------------
* **Memory the same for every chunk**: the builders map large arrays and hand free pages back
  after each chunk and each record part (:mod:`faircode.core.memory`).
* **The same collapse in the end**: a unit's vector is complete only when all its records are
  in, which they are inside one part of the store's key-ordered output; its histogram and the
  score table's blocks are then what :mod:`faircode.stats.units` and
  :mod:`faircode.stats.score_table` build from rows.  :func:`records_units`,
  :func:`side_types` and :class:`SpilledScores` are shared with the Dask reduction
  (:mod:`faircode.evaluate.sharded`), whose buckets are key ranges too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.memory import map_large_arrays, release_free_memory
from faircode.stats import packed_units
from faircode.stats.records import BUDGET, Records, RecordStore, float_keys, key_floats, unit_keys
from faircode.stats.score_table import Block, ScoreTable
from faircode.stats.tally import Tally, joint_groups
from faircode.stats.units import (
    CountedTypes,
    SparseAccumulator,
    UnitHistogram,
    densify,
    sparse_types,
)

__all__ = [
    "BUDGET",
    "SpilledScores",
    "TallyBuilder",
    "UnitBinBuilder",
    "records_units",
    "side_histograms",
    "side_types",
]

_CELLS = 4


def _units_of(part: Records) -> NDArray[np.int64]:
    """Consecutive unit ids ``0..U-1`` of key-ordered records."""
    return np.concatenate([[0], np.cumsum(part.key[1:] != part.key[:-1])]).astype(np.int64)


def records_units(parts: Iterator[Records], n_slots: int, *,
                  budget: int = BUDGET) -> UnitHistogram:
    """The unit histogram of key-ordered records (each unit's records in one part)."""
    pooled = SparseAccumulator()
    for part in parts:
        if part.key.size:
            pooled.add(sparse_types(_units_of(part), part.slot, part.count))
        release_free_memory()
    return densify(pooled.result(), n_slots)


def side_types(parts: Iterator[Records], *, n_attributes: int, n_bins: int,
               budget: int | None = None,
               folder: Path | None = None) -> list[list[packed_units.Run]]:
    """Per attribute and side (disadvantaged, advantaged), the units' packed types over
    ``2 * bin + label`` as sorted runs, from key-ordered records over joint group x bin x
    label; each side's pooled words past ``budget`` bytes (when given) spilled to ``folder``."""
    width = 2 * n_bins
    pooled = [packed_units.PackedAccumulator(width, budget=budget, folder=folder)
              for _ in range(2 * n_attributes)]
    for part in parts:
        if part.key.size == 0:
            continue
        group, local = part.slot // width, part.slot % width
        for a in range(n_attributes):
            side = 1 - ((group >> a) & 1)
            for s in (0, 1):
                mine = Records.of(part.key[side == s], local[side == s], part.count[side == s])
                if mine.key.size:
                    pooled[2 * a + s].add(packed_units.pack_entries(
                        _units_of(mine), mine.slot, mine.count, width))
        release_free_memory()
    return [p.runs() for p in pooled]


def side_histograms(types: Sequence[list[list[packed_units.Run]]], n_bins: int, *,
                    folder: Path | None = None) -> tuple[CountedTypes, ...]:
    """The side histograms of disjoint unit sets' :func:`side_types` (one list per set), each
    held in memory up to :data:`~faircode.stats.packed_units.HELD_BYTES` of packed words,
    beyond it in a temporary file in ``folder``."""
    return tuple(packed_units.merge_runs([r for t in types for r in t[i]], 2 * n_bins,
                                         budget=packed_units.HELD_BYTES, folder=folder)
                 for i in range(len(types[0]) if types else 0))


class SpilledScores(ScoreTable):
    """A score table read from key-ordered records, re-read from ``opener`` for every pass."""

    def __init__(self, opener: Callable[[], Iterator[Records]], n_slots: int) -> None:
        self._opener = opener
        self._n_slots = n_slots

    @property
    def n_slots(self) -> int:  # type: ignore[override]
        return self._n_slots

    def blocks(self) -> Iterator[Block]:
        for part in self._opener():
            if part.key.size == 0:
                continue
            change = part.key[1:] != part.key[:-1]
            start = np.flatnonzero(np.concatenate([[True], change]))
            value = np.concatenate([[0], np.cumsum(change)])
            counts = np.zeros((start.size, self._n_slots), dtype=np.int64)
            counts[value, part.slot] = part.count
            yield key_floats(part.key[start]), counts


class TallyBuilder:
    """Counts chunks of one row set into a :class:`~faircode.stats.tally.Tally` (phase 1).

    ``units``: the rows carry integer unit ids; ``scores``: they carry a score.  Call
    :meth:`add` per chunk, then :meth:`finish`; with repeated units and a score, the calibration
    bins' unit histogram needs a second pass over the rows (:class:`UnitBinBuilder`).  Use as a
    context manager (or call :meth:`close`) so spilled records are removed.
    """

    def __init__(self, attributes: Sequence[str], *, units: bool, scores: bool,
                 budget: int = BUDGET, folder: Path | None = None) -> None:
        map_large_arrays()
        self.attributes = tuple(attributes)
        self.n_groups = 1 << len(self.attributes)
        self.cells = np.zeros(self.n_groups * _CELLS, dtype=np.int64)
        self.units = RecordStore(budget=budget, folder=folder) if units else None
        self.scores = RecordStore(budget=budget, folder=folder) if scores else None
        self.budget = budget

    def __enter__(self) -> TallyBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, y: ArrayLike, decision: ArrayLike, masks: Sequence[ArrayLike], *,
            units: ArrayLike | None = None, score: ArrayLike | None = None) -> None:
        """Count one chunk (arrays one entry per row, as :func:`~faircode.stats.tally.tally_rows`
        takes them)."""
        yv = checks.as_binary("y_true", y)
        group = joint_groups(masks)
        slot = group * _CELLS + 2 * yv + checks.as_binary("y_pred", decision)
        self.cells += np.bincount(slot, minlength=self.cells.size)
        if self.units is not None:
            if units is None:
                raise ValueError("units: expected unit ids in every chunk")
            self.units.add(Records.of(unit_keys(units), slot))
        del slot  # a chunk's arrays are the peak of a streamed audit: none kept past its use
        if self.scores is not None:
            if score is None:
                raise ValueError("score: expected scores in every chunk")
            self.scores.add(Records.of(float_keys(score), group * 2 + yv))
        release_free_memory()

    def finish(self) -> Tally:
        """The tally of every chunk added (scores are read from the store when used)."""
        hist = None
        if self.units is not None:
            hist = records_units(self.units.ordered(), self.n_groups * _CELLS,
                                 budget=self.budget)
            hist = hist if hist.repeated() else None
        table: ScoreTable | None = None
        if self.scores is not None:
            table = SpilledScores(self.scores.ordered, self.n_groups * 2)
        return Tally(self.attributes, self.cells.reshape(self.n_groups, _CELLS), hist, table)

    def close(self) -> None:
        """Remove spilled records."""
        for store in (self.units, self.scores):
            if store is not None:
                store.close()


class UnitBinBuilder:
    """Phase 2: the units' histogram over joint group x calibration bin x label."""

    def __init__(self, tally: Tally, *, budget: int = BUDGET, folder: Path | None = None) -> None:
        if tally.bins is None:
            raise ValueError("tally: expected calibration bins")
        self.tally, self.bins = tally, tally.bins
        self.n_slots = tally.n_groups * self.bins.n_bins * 2
        self.store = RecordStore(budget=budget, folder=folder)
        self.budget, self.folder = budget, folder

    def add(self, y: ArrayLike, masks: Sequence[ArrayLike], *, units: ArrayLike,
            score: ArrayLike) -> None:
        """Count one chunk of the same rows again."""
        yv = checks.as_binary("y_true", y)
        group = joint_groups(masks)
        slot = (group * self.bins.n_bins + self.bins.index(score)) * 2 + yv
        self.store.add(Records.of(unit_keys(units), slot))
        release_free_memory()

    def finish(self) -> Tally:
        """The tally with its ``unit_bins``: per attribute and side, the units over the bins."""
        try:
            types = side_types(self.store.ordered(), n_attributes=len(self.tally.attributes),
                               n_bins=self.bins.n_bins, budget=packed_units.HELD_BYTES,
                               folder=self.folder)
        finally:
            self.store.close()
        return replace(self.tally, unit_bins=side_histograms([types], self.bins.n_bins,
                                                             folder=self.folder))

