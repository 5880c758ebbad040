"""Tests of packed unit types (faircode.stats.packed_units): the canonical histogram of
:func:`faircode.stats.units.collapse`, in memory or spilled to a file, and the calibration
statistics drawn from them block by block equal to those of the dense histogram."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from faircode.stats import packed_units
from faircode.stats.calibration import BinCounts, calibration_from_counts, gap_from_counts
from faircode.stats.packed_units import (
    PackedAccumulator,
    PackedTypes,
    SpilledTypes,
    merge_packed,
    merge_runs,
    pack_entries,
)
from faircode.stats.score_table import CountBins
from faircode.stats.units import UnitHistogram, collapse


def dense_units(rng: np.random.Generator, n_units: int, n_slots: int, top: int) -> np.ndarray:
    """Per-unit count vectors: none all zero, a third of them one repeated type."""
    dense = rng.integers(0, top + 1, size=(n_units, n_slots)) * (rng.random((n_units, n_slots))
                                                                 < 0.3)
    dense[dense.sum(axis=1) == 0, 0] = 1
    dense[: n_units // 3] = dense[0]
    return dense


def packed(dense: np.ndarray) -> PackedTypes:
    unit, slot = np.nonzero(dense)
    return pack_entries(unit, slot, dense[unit, slot], dense.shape[1])


def vectors(types: PackedTypes | SpilledTypes | UnitHistogram) -> np.ndarray:
    return np.concatenate(list(types.blocks()))


@pytest.mark.parametrize(("n_slots", "top"), [(20, 3), (20, 200), (7, 70_000), (3, 2**40)])
def test_packed_types_are_the_canonical_histogram(rng: np.random.Generator, n_slots: int,
                                                  top: int) -> None:
    """Packing, at any bits per slot, gives collapse's vectors in its order and multiplicities."""
    dense = dense_units(rng, 400, n_slots, top)
    want = collapse(dense, np.ones(dense.shape[0], dtype=np.int64))
    got = packed(dense)
    assert np.array_equal(vectors(got), want.vectors)
    assert np.array_equal(got.multiplicity, want.multiplicity)


def test_merged_parts_of_other_widths_equal_the_histogram_of_all(
        rng: np.random.Generator) -> None:
    """Disjoint unit sets counted at 4, 8 and 16 bits and pooled give the histogram of all."""
    parts = [dense_units(rng, 300, 20, top) for top in (3, 100, 5000, 2)]
    pooled = PackedAccumulator(20)
    for part in parts:
        pooled.add(packed(part))
    everything = np.concatenate(parts)
    want = collapse(everything, np.ones(everything.shape[0], dtype=np.int64))
    for got in (merge_runs(pooled.runs(), 20, budget=2**30),
                merge_packed([packed(p) for p in parts], 20)):
        assert got.bits == 16
        assert np.array_equal(vectors(got), want.vectors)
        assert np.array_equal(got.multiplicity, want.multiplicity)


def test_spilled_types_read_back_block_by_block(rng: np.random.Generator,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the budget the words go to a file; its blocks, read twice, are the vectors."""
    monkeypatch.setattr(packed_units, "BLOCK_BYTES", 8 * 20 * 7)  # 7 types a block
    types = packed(dense_units(rng, 500, 20, 9))
    assert isinstance(merge_runs([types], 20, budget=types.words.nbytes), PackedTypes)
    spilled = merge_runs([types], 20, budget=types.words.nbytes - 1)
    assert isinstance(spilled, SpilledTypes)
    assert len(list(spilled.blocks())) == -(-types.n_types // 7)
    for _ in range(2):
        assert np.array_equal(vectors(spilled), vectors(types))
    assert spilled.n_units == types.n_units == 500
    spilled.close()


def unit_sets(rng: np.random.Generator, n_slots: int) -> list[np.ndarray]:
    """Disjoint unit sets at 4, 8 and 16 bits a slot, sharing some types (a third of each set
    is one type, and the first two sets share one more)."""
    sets = [dense_units(rng, n, n_slots, top) for n, top in ((700, 3), (900, 100), (300, 5000),
                                                              (800, 2))]
    sets[1][-50:] = sets[0][-1]
    return sets


@pytest.mark.parametrize("block_types", [1, 3, 64, 10_000])
def test_runs_pooled_block_by_block_are_the_types_pooled_at_once(
        rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, block_types: int) -> None:
    """Sorted runs (in memory and in files, at other widths) pooled through blocks of any size
    give merge_packed's types of all in order, with its multiplicities and width."""
    sets = unit_sets(rng, 20)
    runs = [packed(s) for s in sets]
    runs[1], runs[3] = SpilledTypes.of(runs[1]), SpilledTypes.of(runs[3])
    monkeypatch.setattr(packed_units, "BLOCK_BYTES", 8 * 5 * block_types * len(runs))
    want = merge_packed([packed(s) for s in sets], 20)
    got = merge_runs(runs, 20, budget=0)
    assert isinstance(got, SpilledTypes)
    assert got.bits == want.bits == 16
    assert np.array_equal(vectors(got), vectors(want))
    assert np.array_equal(got.multiplicity, want.multiplicity)
    everything = np.concatenate(sets)
    assert np.array_equal(vectors(got), collapse(everything, np.ones(everything.shape[0],
                                                                     dtype=np.int64)).vectors)


def test_pooled_types_past_the_budget_are_spilled_as_runs(rng: np.random.Generator) -> None:
    """Past its budget the accumulator spills sorted runs; pooled, they are the types of all."""
    sets = [dense_units(rng, 40_000, 20, 3) for _ in range(5)]
    pooled = PackedAccumulator(20, budget=2**18)
    for s in sets:
        pooled.add(packed(s))
    runs = pooled.runs()
    assert len(runs) >= 2 and all(isinstance(r, SpilledTypes) for r in runs[:-1])
    want = merge_packed([packed(s) for s in sets], 20)
    got = merge_runs(runs, 20, budget=2**18)
    assert np.array_equal(vectors(got), vectors(want))
    assert np.array_equal(got.multiplicity, want.multiplicity)
    assert np.array_equal(merge_runs(PackedAccumulator(20).runs(), 20, budget=0).multiplicity,
                          np.zeros(0))


def test_pooling_runs_holds_a_block_of_each_not_the_words(
        rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pooled block by block, runs of 3 MB of words take a small part of that while pooled
    (traced: the multiplicities, 8 bytes a type, and blocks of 64 KiB); pooled whole, more
    than twice it."""
    import tracemalloc

    monkeypatch.setattr(packed_units, "BLOCK_BYTES", 2**16)
    sets = [dense_units(rng, 60_000, 20, 9) for _ in range(4)]
    for s in sets:
        s[: s.shape[0] // 3] = rng.integers(0, 10, size=(s.shape[0] // 3, 20))  # distinct
    runs = [SpilledTypes.of(packed(s)) for s in sets]
    words = sum(packed(s).words.nbytes for s in sets)
    assert words > 3_000_000
    peaks = []
    for budget in (0, 2**40):
        ins = runs if budget == 0 else [packed(s) for s in sets]
        tracemalloc.start()
        got = merge_runs(ins, 20, budget=budget)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert got.n_units == 240_000
    held = 8 * got.n_types  # the multiplicities
    assert peaks[0] - held < words / 4 < words * 2 < peaks[1]


def group_counts(rng: np.random.Generator, n_bins: int) -> tuple[BinCounts, BinCounts]:
    """One group's counts with its units' parts over ``2 * bin + label``: dense, and packed
    and spilled."""
    dense = dense_units(rng, 600, 2 * n_bins, 4)
    total = dense.sum(axis=0)
    rows = np.stack([total[0::2], total[1::2]], axis=1)
    spilled = SpilledTypes.of(packed(dense))
    hist = collapse(dense, np.ones(dense.shape[0], dtype=np.int64))
    return BinCounts(rows, rows[:, 1] * 0.7, hist), BinCounts(rows, rows[:, 1] * 0.7, spilled)


def test_calibration_from_spilled_types_equals_the_dense_one(
        rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gap's unit bootstrap and the design effects, drawn from spilled types in blocks of
    7, are exactly those of the dense histograms (same draws, same order over the types)."""
    monkeypatch.setattr(packed_units, "BLOCK_BYTES", 8 * 10 * 7)
    k = 5
    edges = np.linspace(0.0, 1.0, k + 1)
    bins = CountBins("probability", edges, tuple(f"b{i}" for i in range(k)),
                     tuple(edges[:-1]), tuple(edges[1:]))
    dense_groups, spilled_groups = zip(*(group_counts(rng, k) for _ in range(2)), strict=True)
    for kw in ({"n_resamples": 50, "n_permutations": 20}, {"n_resamples": 1, "n_permutations": 1}):
        want = gap_from_counts(bins, *dense_groups, seed=3, **kw)
        got = gap_from_counts(bins, *spilled_groups, seed=3, **kw)
        assert repr(got) == repr(want)
    tables = [calibration_from_counts(bins, {"d": g[0], "a": g[1]}, protected_attribute="x",
                                      row_set="all") for g in (dense_groups, spilled_groups)]
    pd.testing.assert_frame_equal(tables[1], tables[0], check_exact=True)
    assert np.isfinite(tables[0]["design_effect"]).any()
