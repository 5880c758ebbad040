"""Unit types packed into words: a log's distinct unit vectors in a few bytes each, read in blocks.

The calibration gap's unit bootstrap draws from the units' distinct vectors over the score bins
(:attr:`faircode.stats.tally.Tally.unit_bins`), and a log's distinct vectors grow with it (rare
long units are each their own type: 254,000 at 10⁷ rows, 844,000 at 10⁸).  As dense ``int64``
rows (``8 * n_slots`` bytes a type) they would make the streamed audit's peak grow with the
log.  Here a type is its vector packed into 64-bit words, counted and pooled in that form, and
the histogram is handed on as a :class:`~faircode.stats.units.CountedTypes`: read block by
block.

Design decisions
----------------
* **Packed words sort like the vectors.**  Every slot gets the same number of bits (4, 8, 16,
  32 or 64: enough for the largest count), slots fill each word from its high bits, and no slot
  straddles two words; so the words compared as unsigned integers, word after word, order the
  vectors lexicographically -- the canonical order of :mod:`faircode.stats.units` -- and two
  vectors are equal exactly when their words are.  Grouping and sorting are one ``lexsort`` over
  a few columns; 20 slots of counts below 16 take 16 bytes, not 160.
* **Dense only block by block** (:meth:`PackedTypes.blocks`): the consumers sum over the types
  (the design effects' integer sums, the bootstrap's ``draws @ types``) in integers, which gives
  the same numbers whatever the blocks.
* **Memory the same however many types**: a side's pooled words are held in memory up to
  :data:`HELD_BYTES`; beyond, the pooled types are spilled as a sorted *run* to an unnamed
  temporary file (gone when closed or collected) and pooling starts afresh
  (:class:`PackedAccumulator`).  :func:`merge_runs` pools runs block by block -- from each
  run the next block, out every type up to the least of the blocks' last types, which no row
  still unread can equal -- into one more file.  Only the multiplicities (8 bytes a type, what
  the multinomial draws need) stay in memory.  Held whole, the sides' words and their copies
  while pooled grew with the log's distinct types and, past 10⁸ rows, set the streamed audit's
  peak (docs/operations.md).
* **The same types, however pooled**: a run is sorted and has no type twice, so the block merge
  gives, type for type and in the same order, what :func:`merge_packed` gives on the runs at
  once (``tests/test_packed_units.py``); the draws made from them are the same.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import NDArray

__all__ = ["BLOCK_BYTES", "HELD_BYTES", "PackedAccumulator", "PackedTypes", "Run", "SpilledTypes",
           "merge_packed", "merge_runs", "pack_entries"]

Ints = NDArray[np.int64]
Words = NDArray[np.uint64]

BLOCK_BYTES = 4 * 2**20
"""Bytes of dense ``int64`` rows made at once from packed types."""
MERGE_TYPES = 1 << 16
"""Types added at least before they are pooled."""
HELD_BYTES = 2 * 2**20
"""Bytes of one side's packed words held in memory, while pooled and once pooled (module
docstring)."""
_BITS = (4, 8, 16, 32, 64)


def _slot_bits(largest: int) -> int:
    """The bits per slot that hold counts up to ``largest``."""
    need = max(1, int(largest).bit_length())
    return next(b for b in _BITS if b >= need)


def _layout(n_slots: int, bits: int) -> tuple[Ints, Words, int]:
    """Each slot's word and shift, and the words per type."""
    per = 64 // bits
    slot = np.arange(n_slots)
    shift = (bits * (per - 1 - slot % per)).astype(np.uint64)
    return slot // per, shift, -(-n_slots // per)


def _block_rows(n_slots: int) -> int:
    return max(1, BLOCK_BYTES // (8 * max(1, n_slots)))


def unpack(words: Words, n_slots: int, bits: int) -> Ints:
    """The dense ``(T, n_slots)`` vectors of packed rows."""
    word, shift, _ = _layout(n_slots, bits)
    mask = np.uint64((1 << bits) - 1)
    return ((words[:, word] >> shift) & mask).astype(np.int64)


def _pack_dense(dense: Ints, bits: int) -> Words:
    word, shift, n_words = _layout(dense.shape[1], bits)
    words = np.zeros((dense.shape[0], n_words), dtype=np.uint64)
    for w in range(n_words):
        mine = word == w
        words[:, w] = (dense[:, mine].astype(np.uint64) << shift[mine]).sum(axis=1,
                                                                            dtype=np.uint64)
    return words


@dataclass(frozen=True, slots=True)
class PackedTypes:
    """Distinct unit vectors over ``n_slots`` packed at ``bits`` per slot (``words``: ``(T, W)``,
    in canonical order, none all zero) and how many units share each."""

    words: Words
    multiplicity: Ints
    n_slots: int
    bits: int

    def __post_init__(self) -> None:
        w, m = self.words, self.multiplicity
        if w.ndim != 2 or m.shape != (w.shape[0],) or w.shape[1] != _layout(self.n_slots,
                                                                             self.bits)[2]:
            raise ValueError(f"PackedTypes: expected words (T, W) for {self.n_slots} slots of "
                             f"{self.bits} bits and multiplicity (T,), got {w.shape} and "
                             f"{m.shape}")

    @property
    def n_types(self) -> int:
        return int(self.multiplicity.size)

    @property
    def n_units(self) -> int:
        """Units counted (sum of multiplicities)."""
        return int(self.multiplicity.sum())

    def blocks(self) -> Iterator[Ints]:
        """The dense vectors, consecutive blocks of rows in canonical order."""
        step = _block_rows(self.n_slots)
        for start in range(0, self.n_types, step):
            yield unpack(self.words[start:start + step], self.n_slots, self.bits)

    def rows(self, start: int, stop: int) -> PackedTypes:
        """Types ``start`` to ``stop`` (a block of a run)."""
        return PackedTypes(self.words[start:stop], self.multiplicity[start:stop], self.n_slots,
                           self.bits)

    def widened(self, bits: int) -> PackedTypes:
        """The same types at ``bits`` (at least ``self.bits``) per slot."""
        if bits == self.bits:
            return self
        parts = [_pack_dense(dense, bits) for dense in self.blocks()]
        words = (np.concatenate(parts) if parts
                 else np.zeros((0, _layout(self.n_slots, bits)[2]), dtype=np.uint64))
        return PackedTypes(words, self.multiplicity, self.n_slots, bits)


def _empty(n_slots: int) -> PackedTypes:
    return PackedTypes(np.zeros((0, _layout(n_slots, 4)[2]), dtype=np.uint64),
                       np.zeros(0, dtype=np.int64), n_slots, 4)


def _grouped(words: Words, multiplicity: Ints, n_slots: int, bits: int) -> PackedTypes:
    """Equal rows pooled (multiplicities added), in canonical order."""
    if words.shape[0] == 0:
        return PackedTypes(words, multiplicity, n_slots, bits)
    order = np.lexsort(words.T[::-1])
    ordered = words[order]
    new = np.ones(ordered.shape[0], dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    weight = np.add.reduceat(multiplicity[order], starts)
    return PackedTypes(ordered[starts], weight.astype(np.int64), n_slots, bits)


def pack_entries(unit: Ints, slot: Ints, count: Ints, n_slots: int) -> PackedTypes:
    """The types of units given as entries (each ``(unit, slot)`` once, ``count > 0``,
    ``unit`` consecutive ids ``0..U-1``)."""
    if unit.size == 0:
        return _empty(n_slots)
    bits = _slot_bits(int(count.max()))
    word, shift, n_words = _layout(n_slots, bits)
    n = int(unit.max()) + 1
    words = np.zeros((n, n_words), dtype=np.uint64)
    np.bitwise_or.at(words, (unit, word[slot]), count.astype(np.uint64) << shift[slot])
    return _grouped(words, np.ones(n, dtype=np.int64), n_slots, bits)


def merge_packed(parts: list[PackedTypes], n_slots: int) -> PackedTypes:
    """The types of disjoint unit sets, pooled."""
    parts = [p for p in parts if p.n_types]
    if not parts:
        return _empty(n_slots)
    bits = max(p.bits for p in parts)
    wide = [p.widened(bits) for p in parts]
    return _grouped(np.concatenate([p.words for p in wide]),
                    np.concatenate([p.multiplicity for p in wide]), n_slots, bits)


class PackedAccumulator:
    """Packed types of disjoint unit sets added one at a time, pooled when they double; past
    ``budget`` bytes of words (when given) the pooled types are spilled as a run to ``folder``
    (module docstring)."""

    def __init__(self, n_slots: int, *, budget: int | None = None,
                 folder: Path | None = None) -> None:
        self.n_slots, self.budget, self.folder = n_slots, budget, folder
        self._merged = _empty(n_slots)
        self._pending: list[PackedTypes] = []
        self._rows = 0
        self._runs: list[Run] = []

    def add(self, types: PackedTypes) -> None:
        self._pending.append(types)
        self._rows += types.n_types
        if self._rows > max(MERGE_TYPES, self._merged.n_types):  # at most log merges a type
            self._merged = merge_packed([self._merged, *self._pending], self.n_slots)
            self._pending, self._rows = [], 0
            if self.budget is not None and self._merged.words.nbytes > self.budget:
                self._runs.append(SpilledTypes.of(self._merged, self.folder))
                self._merged = _empty(self.n_slots)

    def runs(self) -> list[Run]:
        """The types added, as sorted runs (:func:`merge_runs` pools them)."""
        last = merge_packed([self._merged, *self._pending], self.n_slots)
        return [*self._runs, last] if last.n_types else list(self._runs)


class SpilledTypes:
    """Packed types whose words are in a temporary file, read back block by block; written
    block by block (:meth:`append`) or at once (:meth:`of`)."""

    def __init__(self, n_slots: int, bits: int, folder: Path | None = None) -> None:
        self.n_slots, self.bits = n_slots, bits
        self._width = _layout(n_slots, bits)[2]
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="faircode-types-", dir=folder)
        self._multiplicity: list[Ints] = []

    @classmethod
    def of(cls, types: PackedTypes, folder: Path | None = None) -> SpilledTypes:
        """``types`` in a file."""
        spilled = cls(types.n_slots, types.bits, folder)
        spilled.append(types)
        return spilled

    def append(self, types: PackedTypes) -> None:
        """Write ``types`` (at this file's bits, each after every type before) at the end."""
        assert types.bits == self.bits and types.n_slots == self.n_slots
        self._file.seek(0, 2)
        types.words.tofile(self._file)
        self._file.flush()
        self._multiplicity.append(types.multiplicity)

    @property
    def multiplicity(self) -> Ints:
        """How many units share each type (joined once, after the last append)."""
        if len(self._multiplicity) != 1:
            self._multiplicity = [np.concatenate([np.zeros(0, dtype=np.int64),
                                                  *self._multiplicity])]
        return self._multiplicity[0]

    @property
    def n_types(self) -> int:
        return int(self.multiplicity.size)

    @property
    def n_units(self) -> int:
        """Units counted (sum of multiplicities)."""
        return int(self.multiplicity.sum())

    def rows(self, start: int, stop: int) -> PackedTypes:
        """Types ``start`` to ``stop``, read from the file."""
        start, stop = min(start, self.n_types), min(stop, self.n_types)
        self._file.seek(start * self._width * 8)  # each read: several passes may interleave
        words = np.fromfile(self._file, dtype=np.uint64, count=(stop - start) * self._width)
        return PackedTypes(words.reshape(-1, self._width), self.multiplicity[start:stop],
                           self.n_slots, self.bits)

    def blocks(self) -> Iterator[Ints]:
        """The dense vectors, consecutive blocks of rows in canonical order."""
        step = _block_rows(self.n_slots)
        for start in range(0, self.n_types, step):
            yield unpack(self.rows(start, start + step).words, self.n_slots, self.bits)

    def close(self) -> None:
        """Remove the file (the types are gone)."""
        self._file.close()


Run = PackedTypes | SpilledTypes
"""Types sorted in canonical order, none twice: in memory or in a file."""


def _at_most(words: Words, last: Words) -> int:
    """How many of the sorted rows ``words`` are at most ``last`` (lexicographically)."""
    below = np.ones(words.shape[0], dtype=bool)
    for w in reversed(range(words.shape[1])):
        below = (words[:, w] < last[w]) | ((words[:, w] == last[w]) & below)
    return int(below.sum())


def _merged_blocks(runs: list[Run], bits: int, step: int) -> Iterator[PackedTypes]:
    """The runs' types pooled, in canonical order, a block at a time (module docstring)."""
    read = [0] * len(runs)
    held = [_empty(runs[0].n_slots).widened(bits) for _ in runs]
    while True:
        for i, run in enumerate(runs):
            if held[i].n_types == 0 and read[i] < run.n_types:
                held[i] = run.rows(read[i], read[i] + step).widened(bits)
                read[i] += held[i].n_types
        live = [i for i in range(len(runs)) if held[i].n_types]
        if not live:
            return
        unread = [held[i].words[-1] for i in live if read[i] < runs[i].n_types]
        least = None  # no type past the least of these is out until its run's next block is in
        if unread:
            lasts = np.stack(unread)
            least = lasts[np.lexsort(lasts.T[::-1])[0]]
        out = []
        for i in live:
            n = held[i].n_types if least is None else _at_most(held[i].words, least)
            out.append(held[i].rows(0, n))
            held[i] = held[i].rows(n, held[i].n_types)
        yield _grouped(np.concatenate([o.words for o in out]),
                       np.concatenate([o.multiplicity for o in out]), runs[0].n_slots, bits)


def merge_runs(runs: list[Run], n_slots: int, *, budget: int,
               folder: Path | None = None) -> Run:
    """The types of sorted runs of disjoint unit sets, pooled: in memory when the runs are and
    their words fit ``budget`` bytes, else block by block into a file in ``folder``."""
    runs = [r for r in runs if r.n_types]
    if all(isinstance(r, PackedTypes) for r in runs) and sum(
            r.words.nbytes for r in runs if isinstance(r, PackedTypes)) <= budget:
        return merge_packed([r for r in runs if isinstance(r, PackedTypes)], n_slots)
    bits = max(r.bits for r in runs)
    out = SpilledTypes(n_slots, bits, folder)
    step = max(1, BLOCK_BYTES // (8 * _layout(n_slots, bits)[2] * len(runs)))
    for block in _merged_blocks(runs, bits, step):
        out.append(block)
    return out
