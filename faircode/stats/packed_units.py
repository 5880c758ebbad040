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
* **Beyond a budget the words are spilled** (:func:`hold`) to an unnamed temporary file (gone
  when closed or collected) and read back block by block; only the multiplicities (8 bytes a
  type, what the multinomial draws need) stay in memory.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
from numpy.typing import NDArray

__all__ = ["BLOCK_BYTES", "PackedAccumulator", "PackedTypes", "SpilledTypes", "hold",
           "merge_packed", "pack_entries"]

Ints = NDArray[np.int64]
Words = NDArray[np.uint64]

BLOCK_BYTES = 4 * 2**20
"""Bytes of dense ``int64`` rows made at once from packed types."""
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
    """Packed types of disjoint unit sets added one at a time, pooled when they double."""

    def __init__(self, n_slots: int) -> None:
        self.n_slots = n_slots
        self._merged = _empty(n_slots)
        self._pending: list[PackedTypes] = []
        self._rows = 0

    def add(self, types: PackedTypes) -> None:
        self._pending.append(types)
        self._rows += types.n_types
        if self._rows > max(1 << 16, self._merged.n_types):  # at most log merges per type
            self._merged = self.result()
            self._pending, self._rows = [], 0

    def result(self) -> PackedTypes:
        return merge_packed([self._merged, *self._pending], self.n_slots)


class SpilledTypes:
    """Packed types whose words are in a temporary file, read back block by block."""

    def __init__(self, types: PackedTypes, folder: Path | None = None) -> None:
        self.multiplicity = types.multiplicity
        self.n_slots, self.bits = types.n_slots, types.bits
        self._width = types.words.shape[1]
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="faircode-types-", dir=folder)
        types.words.tofile(self._file)
        self._file.flush()

    @property
    def n_units(self) -> int:
        """Units counted (sum of multiplicities)."""
        return int(self.multiplicity.sum())

    def blocks(self) -> Iterator[Ints]:
        """The dense vectors, consecutive blocks of rows in canonical order."""
        step = _block_rows(self.n_slots)
        for start in range(0, self.multiplicity.size, step):
            self._file.seek(start * self._width * 8)  # each block: several passes may interleave
            words = np.fromfile(self._file, dtype=np.uint64, count=step * self._width)
            yield unpack(words.reshape(-1, self._width), self.n_slots, self.bits)

    def close(self) -> None:
        """Remove the file (the types are gone)."""
        self._file.close()


def hold(types: PackedTypes, *, budget: int,
         folder: Path | None = None) -> PackedTypes | SpilledTypes:
    """``types`` kept in memory when their words fit ``budget`` bytes, else spilled."""
    return types if types.words.nbytes <= budget else SpilledTypes(types, folder)
