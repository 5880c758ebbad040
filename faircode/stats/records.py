"""Aggregated ``(key, slot) -> rows`` records, and a store that spills them to disk by key range.

A row set's units and score values are counted as records ``(key, slot) -> rows``
(:class:`Records`): keyed by the unit (:func:`unit_keys`) or by the score value in an
order-preserving 64-bit key (:func:`float_keys`).  :class:`RecordStore` takes them in parts and
gives them back aggregated, in key order, in parts of bounded size (:meth:`RecordStore.ordered`).

Design decisions
----------------
* **Bounded memory by spilling, part by part.**  Parts are held in memory while another part
  of the size of the last would still fit in ``budget`` bytes (the next part is made while the
  held ones are alive, so a store never takes more than its budget, counting the part being
  made; holding up to the budget itself let a long log's second chunk be counted beside the
  first's records, 24 MB a store at 10⁶ rows, which a one-chunk log never is); past it, the
  held parts and every part added later are written, one at a time, to
  ``2^8`` bucket files by key range (the ranges taken from a sample of ``2^16`` of the keys
  held when the budget is first passed) in a private temporary folder -- never pooled in
  memory first.  A part is sorted by key, so its buckets are consecutive slices of it.
* **No folder outlives its process**: :meth:`RecordStore.close` removes it, and a process
  ended outright (SIGKILL, out of memory) leaves a folder whose mark the next spilling store
  finds unlocked and removes (:mod:`faircode.core.owned`).
* **Buckets read in pieces of bounded size.**  A bucket file of at most ``piece`` bytes is read
  whole and aggregated; a larger one is split again, piece by piece, into up to 16 files by its
  own keys (each lacks at least one of the bucket's keys, so splitting ends), kept for the next
  pass.  So the resident memory does not grow with the number of rows, units or distinct
  scores; the disk holds at most one record per (unit, slot) and (score, slot) per part added.
* **Unit keys are mixed** (``splitmix64``, a bijection of 64-bit integers), so sequential ids
  spread over the buckets and no two units share a key.  Text ids are keyed by the caller (the
  log reader hashes them: :func:`faircode.audit.logs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from faircode.core import checks
from faircode.core.owned import Owned

__all__ = [
    "BUDGET",
    "SPILL_PREFIX",
    "RecordStore",
    "Records",
    "bucket_bounds",
    "float_keys",
    "key_floats",
    "slice_starts",
    "unit_keys",
]

SPILL_PREFIX = "faircode-spill-"
"""A store's spill folder: ``<folder or tmp>/faircode-spill-XXXX``, swept by the next store
that spills once its owner is gone (:mod:`faircode.core.owned`)."""
BUDGET = 32 * 2**20
"""Default bytes of records held in memory (per store) before they spill to disk."""
N_BUCKETS = 256
_SPLIT = 16
_SAMPLE = 1 << 16
_RECORD = np.dtype([("k", "<u8"), ("s", "<i4"), ("c", "<i8")])
_SIGN = np.uint64(1 << 63)


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
        if k.size == 0:
            return cls(k, s, np.zeros(0, np.int64))
        order = np.lexsort((s, k))
        k, s = k[order], s[order]
        c = None if count is None else np.asarray(count, np.int64)[order]
        del order  # a chunk's records are the peak of a streamed audit: no temporary kept
        start = np.flatnonzero(np.concatenate([[True], (k[1:] != k[:-1]) | (s[1:] != s[:-1])]))
        rows = np.diff(start, append=k.size) if c is None else np.add.reduceat(c, start)
        return cls(k[start], s[start], rows)

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
    """Records added in parts, held in memory up to ``budget`` bytes, beyond it spilled part by
    part by key range; spilled buckets are read back in pieces of at most ``piece`` bytes
    (default an eighth of the budget)."""

    def __init__(self, *, budget: int = BUDGET, piece: int | None = None,
                 folder: Path | None = None) -> None:
        checks.check_positive_int("budget", budget)
        self.budget = budget
        self.piece = max(_RECORD.itemsize, budget // 8) if piece is None else piece
        checks.check_positive_int("piece", self.piece)
        self._parent = folder
        self._parts: list[Records] = []
        self._held = 0
        self._bounds: NDArray[np.uint64] | None = None
        self._dir: Path | None = None
        self._owned: Owned | None = None
        self.spilled_bytes = 0

    def add(self, records: Records) -> None:
        """Keep ``records`` (already aggregated), spilling when another part of their size
        would not fit in the budget beside them (module docstring)."""
        if records.key.size == 0:
            return
        self._parts.append(records)
        self._held += records.nbytes
        if self._dir is not None or self._held + records.nbytes > self.budget:
            self._spill()

    def _spill(self) -> None:
        if self._dir is None:
            step = max(1, sum(p.key.size for p in self._parts) // _SAMPLE)
            self._bounds = bucket_bounds(np.concatenate([p.key[::step] for p in self._parts]))
            self._owned = Owned(SPILL_PREFIX, self._parent)
            self._dir = self._owned.path
        assert self._bounds is not None
        while self._parts:  # one part at a time, each freed once written
            part = self._parts.pop(0)
            _write_buckets(self._dir, part, self._bounds)
            self.spilled_bytes += part.key.size * _RECORD.itemsize
        self._held = 0

    def ordered(self) -> Iterator[Records]:
        """Every record, aggregated, in ascending key order, as parts of at most about the
        budget (a key's records never split across parts).  May be called again."""
        if self._dir is None:
            merged = Records.concat(self._parts) if self._parts else Records.of([], [])
            yield from _slices(merged, self.budget)
            return
        assert self._bounds is not None
        for b in range(self._bounds.size + 1):
            yield from _read_bucket(self._dir / f"{b}.bin", self.piece)

    def close(self) -> None:
        """Remove the spill folder (records are gone)."""
        if self._owned is not None:
            self._owned.remove()
            self._owned, self._dir = None, None
        self._parts, self._held = [], 0


def _write_buckets(folder: Path, records: Records, bounds: NDArray[np.uint64]) -> None:
    """Append key-ordered ``records`` to the bucket files: bucket ``b`` holds the keys of at
    least ``b`` boundaries, a consecutive slice of the records."""
    cuts = np.concatenate([[0], np.searchsorted(records.key, bounds, side="left"),
                           [records.key.size]])
    for b, (start, stop) in enumerate(pairwise(cuts)):
        if stop > start:
            with open(folder / f"{b}.bin", "ab") as handle:
                records.part(int(start), int(stop)).to_array().tofile(handle)


def _raw_pieces(path: Path, per: int) -> Iterator[NDArray[np.void]]:
    with open(path, "rb") as handle:
        while True:
            piece = np.fromfile(handle, dtype=_RECORD, count=per)
            if piece.size == 0:
                return
            yield piece


def _split_bounds(path: Path, per: int) -> NDArray[np.uint64]:
    """Boundaries splitting a bucket file into ranges that each lack one of its keys: from the
    distinct keys of its first ``per`` records, or when they are one key, the middle of the
    file's key range (none when the file holds one key)."""
    first = np.unique(np.fromfile(path, dtype=_RECORD, count=per)["k"])
    if first.size > 1:
        return bucket_bounds(first, _SPLIT)
    low = high = first[0]
    for piece in _raw_pieces(path, per):
        low, high = min(low, piece["k"].min()), max(high, piece["k"].max())
    if low == high:
        return np.zeros(0, dtype=np.uint64)
    return np.array([low + (high - low) // np.uint64(2) + np.uint64(1)], dtype=np.uint64)


def _read_bucket(path: Path, piece: int) -> Iterator[Records]:
    """A bucket file's records in key order; a file larger than ``piece`` bytes is split, piece
    by piece, by its own keys, into a sub-folder read the same way (kept, so a second pass reads
    it too)."""
    sub = path.with_suffix(".split")
    if sub.is_dir():
        bounds = np.load(sub / "bounds.npy")
        for b in range(bounds.size + 1):
            yield from _read_bucket(sub / f"{b}.bin", piece)
        return
    size = path.stat().st_size if path.exists() else 0
    if size <= piece:
        if size:
            yield Records.from_array(np.fromfile(path, dtype=_RECORD))
        return
    per = max(1, piece // _RECORD.itemsize)
    bounds = _split_bounds(path, per)
    if bounds.size == 0:  # one key: at most one record per slot, aggregated piece by piece
        merged = Records.of([], [])
        for raw in _raw_pieces(path, per):
            merged = Records.concat([merged, Records.from_array(raw)])
        yield merged
        return
    sub.mkdir()
    for raw in _raw_pieces(path, per):
        _write_buckets(sub, Records.from_array(raw), bounds)
    np.save(sub / "bounds.npy", bounds)
    path.unlink()
    yield from _read_bucket(path, piece)


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
