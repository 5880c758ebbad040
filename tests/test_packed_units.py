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
    hold,
    merge_packed,
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
    for got in (pooled.result(), merge_packed([packed(p) for p in parts], 20)):
        assert got.bits == 16
        assert np.array_equal(vectors(got), want.vectors)
        assert np.array_equal(got.multiplicity, want.multiplicity)


def test_spilled_types_read_back_block_by_block(rng: np.random.Generator,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the budget the words go to a file; its blocks, read twice, are the vectors."""
    monkeypatch.setattr(packed_units, "BLOCK_BYTES", 8 * 20 * 7)  # 7 types a block
    types = packed(dense_units(rng, 500, 20, 9))
    assert hold(types, budget=types.words.nbytes) is types
    spilled = hold(types, budget=types.words.nbytes - 1)
    assert isinstance(spilled, SpilledTypes)
    assert len(list(spilled.blocks())) == -(-types.n_types // 7)
    for _ in range(2):
        assert np.array_equal(vectors(spilled), vectors(types))
    assert spilled.n_units == types.n_units == 500
    spilled.close()


def group_counts(rng: np.random.Generator, n_bins: int) -> tuple[BinCounts, BinCounts]:
    """One group's counts with its units' parts over ``2 * bin + label``: dense, and packed
    and spilled."""
    dense = dense_units(rng, 600, 2 * n_bins, 4)
    total = dense.sum(axis=0)
    rows = np.stack([total[0::2], total[1::2]], axis=1)
    spilled = hold(packed(dense), budget=1)
    assert isinstance(spilled, SpilledTypes)
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
