"""Counting a row set chunk by chunk into a :class:`~faircode.stats.tally.Tally`, in bounded memory.

:class:`TallyBuilder` takes a row set in chunks of any size and order (a decision log read
10⁶ rows at a time, one shard of a Dask reduction) and ends with the tally the in-memory path
(:func:`faircode.stats.tally.tally_rows`) gives on all rows at once.  The cells are added; what
needs every row of a unit, or every row of a score value, is kept as aggregated records
``(key, slot) -> rows`` (:class:`Records`): keyed by the unit, or by the score value in an
order-preserving 64-bit key.

Design decisions
----------------
* **Bounded memory by spilling.**  Records are aggregated per chunk and held in memory up to
  ``budget`` bytes; beyond it they are written to ``2^8`` bucket files by key range (the ranges
  taken from the keys seen so far) in a private temporary folder, and read back bucket by bucket
  in key order.  A bucket larger than the budget is split again by its own keys.  So the
  resident memory does not grow with the number of rows, units or distinct scores; the disk
  holds at most one aggregated record per (unit, slot) and (score, slot).
* **Large arrays are mapped, not carved from the heap** (:func:`map_large_arrays`, Linux glibc):
  by default glibc raises its mmap threshold to the largest block freed so far (up to 32 MiB),
  so the records' arrays of a few MiB to 32 MiB come from the heap, whose freed holes the
  process keeps: its resident memory crept up with every spill and every pass (the streamed
  audit's peak grew from 672 MiB at 10^7 rows to 877 at 10^8).  With a fixed 1 MiB threshold
  every array of at least that is its own mapping, returned when freed.
* **Unit keys are mixed** (``splitmix64``, a bijection of 64-bit integers), so sequential ids
  spread over the buckets and no two units share a key.  Text ids are keyed by the caller (the
  log reader hashes them: :func:`faircode.audit.logs`).
* **The same collapse in the end**: a unit's vector is complete only when all its records are
  in, which they are inside one bucket, in key order; its histogram and the score table's
  blocks are then what :mod:`faircode.stats.units` and :mod:`faircode.stats.score_table` build
  from rows.  :func:`records_units` and :class:`SpilledScores` are shared with the Dask
  reduction (:mod:`faircode.grid.dask_reduce`), whose buckets are the same ranges.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.stats import packed_units
from faircode.stats.score_table import Block, ScoreArray, ScoreTable
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
    "RecordStore",
    "Records",
    "SpilledScores",
    "TallyBuilder",
    "UnitBinBuilder",
    "float_keys",
    "key_floats",
    "map_large_arrays",
    "records_units",
    "side_histograms",
    "side_types",
    "slice_starts",
    "unit_keys",
]

BUDGET = 32 * 2**20
"""Default bytes of records held in memory (per store) before they spill to disk: aggregating
them takes a few times as much for a moment."""
N_BUCKETS = 256
_RECORD = np.dtype([("k", "<u8"), ("s", "<i4"), ("c", "<i8")])
_SIGN = np.uint64(1 << 63)
_CELLS = 4


def unit_keys(ids: ArrayLike) -> NDArray[np.uint64]:
    """The 64-bit key of integer unit ids: ``splitmix64`` of their bits (a bijection)."""
    x = np.asarray(ids)
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"units: expected integer ids, got dtype {x.dtype}")
    z = x.astype(np.int64).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def float_keys(values: ArrayLike) -> NDArray[np.uint64]:
    """Order-preserving 64-bit keys of finite floats (``-0.0`` is ``0.0``)."""
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
    return np.where(bits >> np.uint64(63) == 1, ~bits, bits | _SIGN)


def key_floats(keys: NDArray[np.uint64]) -> NDArray[np.float64]:
    """The floats of :func:`float_keys`."""
    positive = keys >> np.uint64(63) == 1
    return np.where(positive, keys & ~_SIGN, ~keys).view(np.float64)


@dataclass(frozen=True, slots=True)
class Records:
    """Aggregated ``(key, slot) -> rows`` records, sorted by key then slot, each pair once."""

    key: NDArray[np.uint64]
    slot: NDArray[np.int64]
    count: NDArray[np.int64]

    @classmethod
    def of(cls, key: ArrayLike, slot: ArrayLike, count: ArrayLike | None = None) -> Records:
        """Aggregate raw records (``count`` default 1 each)."""
        k = np.asarray(key, dtype=np.uint64)
        s = np.asarray(slot, dtype=np.int64)
        c = np.ones(k.size, dtype=np.int64) if count is None else np.asarray(count, np.int64)
        if k.size == 0:
            return cls(k, s, c)
        order = np.lexsort((s, k))
        k, s, c = k[order], s[order], c[order]
        start = np.flatnonzero(np.concatenate([[True], (k[1:] != k[:-1]) | (s[1:] != s[:-1])]))
        return cls(k[start], s[start], np.add.reduceat(c, start))

    @classmethod
    def concat(cls, parts: Sequence[Records]) -> Records:
        """The records of ``parts`` pooled and aggregated again."""
        if len(parts) == 1:
            return parts[0]
        return cls.of(np.concatenate([p.key for p in parts] or [np.zeros(0, np.uint64)]),
                      np.concatenate([p.slot for p in parts] or [np.zeros(0, np.int64)]),
                      np.concatenate([p.count for p in parts] or [np.zeros(0, np.int64)]))

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return int(self.key.nbytes + self.slot.nbytes + self.count.nbytes)

    def part(self, start: int, stop: int) -> Records:
        """The records ``start:stop`` (stays sorted and aggregated)."""
        return Records(self.key[start:stop], self.slot[start:stop], self.count[start:stop])

    def take(self, mask: NDArray[np.bool_]) -> Records:
        """The records where ``mask`` (stays sorted and aggregated)."""
        return Records(self.key[mask], self.slot[mask], self.count[mask])

    def to_array(self) -> NDArray[np.void]:
        """As packed structured records (the spill file's layout)."""
        out = np.empty(self.key.size, dtype=_RECORD)
        out["k"], out["s"], out["c"] = self.key, self.slot, self.count
        return out

    @classmethod
    def from_array(cls, array: NDArray[np.void]) -> Records:
        """From packed structured records (not yet aggregated)."""
        return cls.of(array["k"], array["s"].astype(np.int64), array["c"])


def bucket_bounds(keys: NDArray[np.uint64], n: int = N_BUCKETS) -> NDArray[np.uint64]:
    """``n - 1`` ascending boundaries splitting ``keys`` into ``n`` ranges of similar size."""
    ordered = np.sort(keys)
    picks = ordered[(np.arange(1, n) * ordered.size) // n] if ordered.size else ordered
    return np.unique(picks)


class RecordStore:
    """Records added in parts, held in memory up to ``budget`` bytes, spilled by key range."""

    def __init__(self, *, budget: int = BUDGET, folder: Path | None = None) -> None:
        checks.check_positive_int("budget", budget)
        self.budget = budget
        self._parent = folder
        self._parts: list[Records] = []
        self._held = 0
        self._bounds: NDArray[np.uint64] | None = None
        self._dir: Path | None = None
        self.spilled_bytes = 0

    def add(self, records: Records) -> None:
        """Keep ``records`` (already aggregated), spilling when over budget."""
        if records.key.size == 0:
            return
        self._parts.append(records)
        self._held += records.nbytes
        if self._held > self.budget:
            merged = Records.concat(self._parts)
            self._parts, self._held = [merged], merged.nbytes
            if self._held > self.budget // 2:
                self._spill()

    def _spill(self) -> None:
        merged = Records.concat(self._parts)
        if self._bounds is None:
            self._bounds = bucket_bounds(merged.key)
            self._dir = Path(tempfile.mkdtemp(prefix="faircode-spill-", dir=self._parent))
        assert self._dir is not None
        _write_buckets(self._dir, merged, self._bounds)
        self.spilled_bytes += merged.key.size * _RECORD.itemsize
        self._parts, self._held = [], 0

    def ordered(self) -> Iterator[Records]:
        """Every record, aggregated, in ascending key order, as parts of at most about the
        budget (a key's records never split across parts).  May be called again."""
        if self._dir is None:
            merged = Records.concat(self._parts) if self._parts else Records.of([], [])
            yield from _slices(merged, self.budget)
            return
        if self._parts:  # once spilled, everything is read from the buckets
            self._spill()
        assert self._bounds is not None
        for b in range(self._bounds.size + 1):
            yield from _read_bucket(self._dir / f"{b}.bin", self.budget)

    def close(self) -> None:
        """Remove the spill folder (records are gone)."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self._parts, self._held = [], 0


def _write_buckets(folder: Path, records: Records, bounds: NDArray[np.uint64]) -> None:
    bucket = np.searchsorted(bounds, records.key, side="right")
    array = records.to_array()
    order = np.argsort(bucket, kind="stable")
    starts = np.searchsorted(bucket[order], np.arange(bounds.size + 2))
    for b in range(bounds.size + 1):
        part = array[order[starts[b]:starts[b + 1]]]
        if part.size:
            with open(folder / f"{b}.bin", "ab") as handle:
                part.tofile(handle)


def _pieces(path: Path, per: int) -> Iterator[Records]:
    with open(path, "rb") as handle:
        while True:
            piece = np.fromfile(handle, dtype=_RECORD, count=per)
            if piece.size == 0:
                return
            yield Records.from_array(piece)


def _read_bucket(path: Path, budget: int) -> Iterator[Records]:
    """A bucket file's records in key order; a file larger than ``budget`` is split once, by
    its own keys, into a sub-folder read the same way (kept, so a second pass reads it too)."""
    sub = path.with_suffix(".split")
    if sub.is_dir():
        bounds = np.load(sub / "bounds.npy")
        for b in range(bounds.size + 1):
            yield from _read_bucket(sub / f"{b}.bin", budget)
        return
    size = path.stat().st_size if path.exists() else 0
    per = max(1, budget // (2 * _RECORD.itemsize))
    if size <= budget:
        stored = np.fromfile(path, dtype=_RECORD) if size else np.zeros(0, dtype=_RECORD)
        yield from _slices(Records.from_array(stored), budget)
        return
    first = np.fromfile(path, dtype=_RECORD, count=per)
    bounds = bucket_bounds(first["k"], 16)
    keys = np.unique(first["k"])
    if bounds.size == 0 or keys.size <= 1:  # (almost) one key: aggregate it piece by piece
        merged = Records.of([], [])
        for piece in _pieces(path, per):
            merged = Records.concat([merged, piece])
        yield from _slices(merged, budget)
        return
    sub.mkdir()
    for piece in _pieces(path, per):
        _write_buckets(sub, piece, bounds)
    np.save(sub / "bounds.npy", bounds)
    path.unlink()
    yield from _read_bucket(path, budget)


def slice_starts(key: NDArray[np.uint64], budget: int) -> NDArray[np.int64]:
    """Where the consecutive parts of about ``budget`` bytes of key-ordered records start, cut
    between keys (a key's records never split); the last entry is ``key.size``."""
    n = key.size
    per = max(1, budget // (4 * _RECORD.itemsize))
    starts = [0]
    while starts[-1] < n:
        stop = min(n, starts[-1] + per)
        while stop < n and key[stop] == key[stop - 1]:
            stop += 1
        starts.append(stop)
    return np.asarray(starts, dtype=np.int64)


def _slices(records: Records, budget: int) -> Iterator[Records]:
    """``records`` in consecutive parts of about ``budget`` bytes, cut between keys."""
    starts = slice_starts(records.key, budget)
    for start, stop in pairwise(starts):
        yield records.part(int(start), int(stop))


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
    return densify(pooled.result(), n_slots)


def side_types(parts: Iterator[Records], *, n_attributes: int,
               n_bins: int) -> list[packed_units.PackedTypes]:
    """Per attribute and side (disadvantaged, advantaged), the units' packed types over
    ``2 * bin + label``, from key-ordered records over joint group x bin x label."""
    width = 2 * n_bins
    pooled = [packed_units.PackedAccumulator(width) for _ in range(2 * n_attributes)]
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
    return [p.result() for p in pooled]


def side_histograms(types: Sequence[list[packed_units.PackedTypes]], n_bins: int, *,
                    budget: int = BUDGET, folder: Path | None = None) -> tuple[CountedTypes, ...]:
    """The side histograms of disjoint unit sets' :func:`side_types` (one list per set), each
    held in memory up to ``budget`` bytes of packed types, beyond it in a temporary file."""
    pooled = (packed_units.merge_packed([t[i] for t in types], 2 * n_bins)
              for i in range(len(types[0]) if types else 0))
    return tuple(packed_units.hold(p, budget=budget, folder=folder) for p in pooled)


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


_MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
_mapped = False


def map_large_arrays() -> None:
    """Allocate every block of at least 1 MiB as its own mapping, in this process, from now on
    (module docstring); a no-op where the C library is not glibc."""
    global _mapped
    if _mapped:
        return
    _mapped = True
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


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
        yv = checks.as_binary("y_true", y).astype(np.int64)
        yhat = checks.as_binary("y_pred", decision).astype(np.int64)
        group = joint_groups(masks)
        slot = group * _CELLS + 2 * yv + yhat
        self.cells += np.bincount(slot, minlength=self.cells.size)
        if self.units is not None:
            if units is None:
                raise ValueError("units: expected unit ids in every chunk")
            self.units.add(Records.of(unit_keys(units), slot))
        if self.scores is not None:
            if score is None:
                raise ValueError("score: expected scores in every chunk")
            self.scores.add(Records.of(float_keys(score), group * 2 + yv))

    def finish(self) -> Tally:
        """The tally of every chunk added (scores are read from the store when used)."""
        hist = None
        if self.units is not None:
            hist = records_units(self.units.ordered(), self.n_groups * _CELLS,
                                 budget=self.budget)
            hist = hist if hist.repeated() else None
        table: ScoreTable | None = None
        if self.scores is not None:
            store = self.scores
            table = _materialise(SpilledScores(store.ordered, self.n_groups * 2),
                                 spilled=store.spilled_bytes > 0)
        return Tally(self.attributes, self.cells.reshape(self.n_groups, _CELLS), hist, table)

    def close(self) -> None:
        """Remove spilled records."""
        for store in (self.units, self.scores):
            if store is not None:
                store.close()


def _materialise(table: SpilledScores, *, spilled: bool) -> ScoreTable:
    """A table held in memory as one block when it never spilled (it fits the budget)."""
    if spilled:
        return table
    blocks = list(table.blocks())
    if not blocks:
        return ScoreArray(np.zeros(0), np.zeros((0, table.n_slots), dtype=np.int64))
    return ScoreArray(np.concatenate([v for v, _ in blocks]),
                      np.concatenate([c for _, c in blocks]))


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
        yv = checks.as_binary("y_true", y).astype(np.int64)
        group = joint_groups(masks)
        slot = (group * self.bins.n_bins + self.bins.index(score)) * 2 + yv
        self.store.add(Records.of(unit_keys(units), slot))

    def finish(self) -> Tally:
        """The tally with its ``unit_bins``: per attribute and side, the units over the bins."""
        try:
            types = side_types(self.store.ordered(), n_attributes=len(self.tally.attributes),
                               n_bins=self.bins.n_bins)
        finally:
            self.store.close()
        return replace(self.tally, unit_bins=side_histograms([types], self.bins.n_bins,
                                                             budget=self.budget,
                                                             folder=self.folder))

