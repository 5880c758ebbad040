"""A decision log counted on a Dask cluster: each shard emits its counts, one reduction per range.

The sharded form of :func:`faircode.evaluate.streamed.audit_log` over the map-reduce of
:mod:`faircode.grid.dask_reduce`: every shard of a Parquet log (whole row groups) is read,
interpreted and counted on a worker (:func:`_count_shard`), which returns its cells, its row
counts per step and its aggregated per-unit and per-score records split into ``N_BUCKETS`` key
ranges.  One reducer per range pools that range's records from every shard: the units'
histogram comes back (small); a score range stays on its worker until the statistics read it,
range by range in key order, each range in parts of about ``budget`` bytes (32 MiB) cut between
scores, so the driver holds one part at a time however long the log or however uneven the
ranges.  So no process -- the driver included -- holds the log, its units or its scores whole,
and the tally is the one :class:`~faircode.stats.accumulate.TallyBuilder` counts from the same
rows (``tests/test_dask_reduce.py``: identical files for 1, 2 and 4 workers and for the
streamed path).

Design decisions
----------------
* **Ranges fixed before the map.**  Unit keys are ``splitmix64`` of the ids
  (:func:`faircode.stats.records.unit_keys`), uniform, so their ranges are equal parts of the
  64-bit space; score ranges are quantiles of the first row group's scores.  The ranges decide
  only where records meet, never a number.
* Calibration bins with repeated units need a second map (the bins are quantiles of every score),
  as in the streamed path.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from faircode.audit.column_kinds import FirstOfKind
from faircode.audit.logs import LogReader, LogRecord
from faircode.grid.dask_reduce import (
    SHARD_ROWS,
    Shard,
    map_shards,
    pick_buckets,
    reduce_buckets,
    table_shards,
)
from faircode.stats.accumulate import (
    SpilledScores,
    records_units,
    side_histograms,
    side_types,
)
from faircode.stats.packed_units import Run
from faircode.stats.records import (
    BUDGET,
    Records,
    bucket_bounds,
    float_keys,
    slice_starts,
    unit_keys,
)
from faircode.stats.score_table import CountBins
from faircode.stats.tally import Tally, joint_groups
from faircode.stats.units import UnitHistogram, merge

__all__ = ["N_BUCKETS", "dask_log_tally"]

N_BUCKETS = 16
"""Key ranges of the reduction (reducers per kind of record)."""
_CELLS = 4


@dataclass(frozen=True, slots=True)
class ShardCounts:
    """What one shard emits: its cells, step counts, and records per key range."""

    cells: np.ndarray
    counts: dict[str, int]
    units: tuple[Records, ...]
    scores: tuple[Records, ...]
    kinds: dict[str, FirstOfKind]


def _split(records: Records, bounds: np.ndarray) -> tuple[Records, ...]:
    bucket = np.searchsorted(bounds, records.key, side="right")
    return tuple(records.take(bucket == b) for b in range(bounds.size + 1))


def _unit_bounds() -> np.ndarray:
    return (np.arange(1, N_BUCKETS, dtype=np.uint64) << np.uint64(60)).astype(np.uint64)


def _count_shard(reader: LogReader, shard: Shard, score_bounds: np.ndarray,
                 bins: CountBins | None) -> ShardCounts:
    """Count one shard (a task): phase 1, or with ``bins`` the units over the bins."""
    counts: dict[str, int] = {}
    guard = reader.new_guard()
    n_groups = 1 << len(reader.manifest.protected_attributes)
    cells = np.zeros(n_groups * _CELLS, dtype=np.int64)
    units: list[Records] = []
    scores: list[Records] = []
    for part in reader.shard(shard.file, shard.row_groups, shard.start, counts, guard):
        group = joint_groups(part.masks)
        y = part.y.astype(np.int64)
        slot = group * _CELLS + 2 * y + part.decision
        if bins is None:
            cells += np.bincount(slot, minlength=cells.size)
            if part.units is not None:
                units.append(Records.of(unit_keys(part.units), slot))
            if part.score is not None:
                scores.append(Records.of(float_keys(part.score), group * 2 + y))
        else:
            assert part.units is not None and part.score is not None
            bin_slot = (group * bins.n_bins + bins.index(part.score)) * 2 + y
            units.append(Records.of(unit_keys(part.units), bin_slot))
    pooled_units = _split(Records.concat(units), _unit_bounds()) if units else ()
    pooled_scores = _split(Records.concat(scores), score_bounds) if scores else ()
    return ShardCounts(cells, counts, pooled_units, pooled_scores, guard.kinds)


def _pick_units(counts: ShardCounts, bucket: int) -> Records:
    return counts.units[bucket]


def _pick_scores(counts: ShardCounts, bucket: int) -> Records:
    return counts.scores[bucket]


def _meta(counts: ShardCounts) -> tuple[np.ndarray, dict[str, int], dict[str, FirstOfKind]]:
    return counts.cells, counts.counts, counts.kinds


def _reduce_units(n_slots: int, *parts: Records) -> UnitHistogram:
    return records_units(iter([Records.concat(list(parts))]), n_slots)


def _reduce_sides(n_attributes: int, n_bins: int, *parts: Records) -> list[list[Run]]:
    return side_types(iter([Records.concat(list(parts))]), n_attributes=n_attributes,
                      n_bins=n_bins)


def _reduce_scores(*parts: Records) -> Records:
    return Records.concat(list(parts))


def _starts(records: Records, budget: int) -> np.ndarray:
    return slice_starts(records.key, budget)


def _score_bounds(reader: LogReader) -> np.ndarray:
    """Score key ranges from the log's first row group (empty without a score)."""
    system = reader.manifest.system
    assert system is not None
    if system.score is None:
        return np.zeros(0, dtype=np.uint64)
    file, _, _ = reader.table.row_groups()[0]
    first = next(reader.table.row_group_chunks(file, [0], 0, [system.score.column]))
    values = first.frame[system.score.column].to_numpy(dtype=np.float64, na_value=np.nan)
    return bucket_bounds(float_keys(values[np.isfinite(values)]), N_BUCKETS)


def dask_log_tally(client: Any, reader: LogReader, *, scale: str | None,
                   shard_rows: int | None = None, budget: int = BUDGET) -> tuple[Tally, LogRecord]:
    """The log's tally counted on ``client``'s workers, and its record (steps, sha256);
    shards of about ``shard_rows`` rows (whole row groups; default :data:`SHARD_ROWS`), score
    records read in parts of about ``budget`` bytes."""
    manifest = reader.manifest
    attributes = tuple(a.name for a in manifest.protected_attributes)
    n_groups = 1 << len(attributes)
    rows = SHARD_ROWS if shard_rows is None else shard_rows
    shards = table_shards(reader.table, rows=rows)
    if not shards:
        reader.check_totals()
    bounds = _score_bounds(reader)
    futures = map_shards(client, _count_shard, reader, shards, bounds, None)
    metas = client.gather([client.submit(_meta, f, pure=False) for f in futures])
    guard = reader.new_guard()
    for meta in metas:  # in the shards' order: the first kind of a column is the log's
        guard.absorb(meta[2])
    cells = np.sum([m[0] for m in metas], axis=0)
    counts: dict[str, int] = {}
    for _, part, _ in metas:
        for name, n in part.items():
            counts[name] = counts.get(name, 0) + n
    record = reader.record
    record.absorb(counts)
    reader.check_totals()
    unit_parts = (pick_buckets(client, futures, _pick_units, N_BUCKETS)
                  if manifest.unit is not None else [])
    score_parts = (pick_buckets(client, futures, _pick_scores, bounds.size + 1)
                   if scale is not None else [])
    del futures  # each shard's result is freed once picked; its parts live until reduced
    hist = None
    if unit_parts:
        reduced = reduce_buckets(client, unit_parts, _reduce_units, n_groups * _CELLS)
        hist = merge(client.gather(reduced), n_groups * _CELLS)
        hist = hist if hist.repeated() else None
    table = None
    if score_parts:
        buckets = reduce_buckets(client, score_parts, _reduce_scores)
        cuts = client.gather([client.submit(_starts, b, budget, pure=False) for b in buckets])

        def opener() -> Iterator[Records]:  # a range's parts, one at a time
            for bucket, starts in zip(buckets, cuts, strict=True):
                parts = [client.submit(Records.part, bucket, int(a), int(b), pure=False)
                         for a, b in pairwise(starts)]
                for part in parts:
                    yield part.result()

        table = SpilledScores(opener, n_groups * 2)
    tally = Tally(attributes, cells.reshape(n_groups, _CELLS), hist, table)
    if scale is None:
        return tally, record
    tally = tally.with_bins(scale=scale)
    if tally.units is not None:
        assert tally.bins is not None
        second = map_shards(client, _count_shard, reader, shards, bounds, tally.bins)
        side_parts = pick_buckets(client, second, _pick_units, N_BUCKETS)
        del second
        reduced = reduce_buckets(client, side_parts, _reduce_sides, len(attributes),
                                 tally.bins.n_bins)
        tally = Tally(tally.attributes, tally.cells, tally.units, tally.scores, tally.bins,
                      side_histograms(client.gather(reduced), tally.bins.n_bins))
    return tally, record
