"""Tests of the count-level summary (faircode.stats.tally, units, score_table, accumulate): the
counts of a row set, built at once or chunk by chunk with spilled records, and the exact score
statistics against independent references."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from faircode.stats import clusters, packed_units
from faircode.stats.accumulate import TallyBuilder, UnitBinBuilder
from faircode.stats.groups import design_effects
from faircode.stats.records import Records, RecordStore, float_keys, key_floats
from faircode.stats.resampling import delong_auc
from faircode.stats.score_table import (
    auc_from_table,
    bin_sums,
    count_bins,
    linear_quantiles,
    table_from_rows,
)
from faircode.stats.tally import Tally, tally_rows
from faircode.stats.units import ratio_design_effects


def rows(rng: np.random.Generator, n: int = 3000, units: int = 900) -> dict[str, np.ndarray]:
    """A row set with two attributes, repeated units and scores with ties."""
    return {"y": rng.integers(0, 2, n), "yhat": rng.integers(0, 2, n),
            "a": rng.random(n) < 0.3, "b": rng.random(n) < 0.6,
            "unit": rng.integers(0, units, n), "score": np.round(rng.random(n), 2)}


def tally_of(r: dict[str, np.ndarray]) -> Tally:
    return tally_rows(("a", "b"), r["y"], r["yhat"], [r["a"], r["b"]], units=r["unit"],
                      score=r["score"], scale="probability")


Blocks = list[tuple[np.ndarray, np.ndarray]]


def built(r: dict[str, np.ndarray], chunks: list[slice], budget: int) -> tuple[Tally, Blocks]:
    """The tally of ``r`` counted over ``chunks`` (in that order) with a spill ``budget``, and
    its score blocks (read before the spilled records are removed)."""
    with TallyBuilder(("a", "b"), units=True, scores=True, budget=budget) as builder:
        for part in chunks:
            builder.add(r["y"][part], r["yhat"][part], [r["a"][part], r["b"][part]],
                        units=r["unit"][part], score=r["score"][part])
        tally = builder.finish().with_bins(scale="probability")
        second = UnitBinBuilder(tally, budget=budget)
        for part in chunks:
            second.add(r["y"][part], [r["a"][part], r["b"][part]], units=r["unit"][part],
                       score=r["score"][part])
        tally = second.finish()
        scores = list(tally.scores.blocks()) if tally.scores else []
    return tally, scores


def same_tally(a: Tally, b: Tally, b_scores: Blocks) -> None:
    assert np.array_equal(a.cells, b.cells)
    assert a.unit_bins is not None and b.unit_bins is not None
    assert len(a.unit_bins) == len(b.unit_bins) == 4
    for x, y in ((a.units, b.units), *zip(a.unit_bins, b.unit_bins, strict=True)):
        assert x is not None and y is not None
        assert np.array_equal(np.concatenate(list(x.blocks())), np.concatenate(list(y.blocks())))
        assert np.array_equal(x.multiplicity, y.multiplicity)
    assert a.scores is not None and a.bins is not None and b.bins is not None
    ((values, counts),) = list(a.scores.blocks())
    assert np.array_equal(values, np.concatenate([v for v, _ in b_scores]))
    assert np.array_equal(counts, np.concatenate([c for _, c in b_scores]))
    assert np.array_equal(a.bins.points, b.bins.points) and a.bins.labels == b.bins.labels


@pytest.mark.parametrize(("budget", "types"), [(2**30, None), (2000, None), (2000, 0)],
                         ids=["in memory", "spilled", "spilled, and each side's types"])
def test_chunked_counts_equal_the_counts_of_all_rows(rng: np.random.Generator,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     budget: int, types: int | None) -> None:
    """Counting in shuffled chunks (one of a single row), spilled or not, gives the same tally
    (with the side types pooled a part at a time, each spilled as a run and pooled in blocks
    of 3 types)."""
    if types is not None:
        monkeypatch.setattr(packed_units, "HELD_BYTES", types)
        monkeypatch.setattr(packed_units, "MERGE_TYPES", 1)
        monkeypatch.setattr(packed_units, "BLOCK_BYTES", 8 * 3 * 20)
    r = rows(rng)
    cuts = [0, 1, 2, 500, 1700, 2999, 3000]
    chunks = [slice(a, b) for a, b in itertools.pairwise(cuts)]
    chunks = [chunks[i] for i in rng.permutation(len(chunks))]
    other, scores = built(r, chunks, budget)
    same_tally(tally_of(r), other, scores)


def test_a_group_absent_from_some_chunks_changes_nothing(rng: np.random.Generator) -> None:
    """Rows sorted so that the disadvantaged group of ``a`` appears only in the last chunk."""
    r = rows(rng)
    order = np.argsort(r["a"], kind="stable")
    r = {k: v[order] for k, v in r.items()}
    first = int((~r["a"]).sum())
    other, scores = built(r, [slice(0, first // 2), slice(first // 2, first),
                              slice(first, len(order))], 2**30)
    same_tally(tally_of(r), other, scores)


def test_projected_histogram_equals_the_engines_unit_types(rng: np.random.Generator) -> None:
    """One attribute's oriented two-group types are what clusters.unit_types gives on rows."""
    r = rows(rng)
    tally = tally_of(r)
    fold = tally.group_fold(1, favourable=0)
    types = tally.types(fold, 2)
    y, yhat = 1 - r["y"], 1 - r["yhat"]  # favourable 0: both oriented
    group = np.where(r["b"], 0, 1)
    _, inverse = np.unique(r["unit"], return_inverse=True)
    expected = clusters.unit_types(clusters.unit_counts(y, yhat, group, inverse, n_groups=2))
    assert types is not None
    assert np.array_equal(types.counts, expected.counts)
    assert np.array_equal(types.multiplicity, expected.multiplicity)
    assert np.array_equal(types.pattern, expected.pattern)


def test_one_row_per_unit_has_no_unit_histogram(rng: np.random.Generator) -> None:
    """Rows that are their own units are the row-level path (no histogram, as repeated_units)."""
    r = rows(rng, n=50)
    tally = tally_rows(("a",), r["y"], r["yhat"], [r["a"]], units=np.arange(50))
    assert tally.units is None


def test_exact_auc_is_the_mann_whitney_count(rng: np.random.Generator) -> None:
    """AUC = U / (m n) with ties counted half (pairwise count), and DeLong's value to 1 ulp."""
    s, y = np.round(rng.random(200), 1), rng.integers(0, 2, 200)
    pos, neg = s[y == 1], s[y == 0]
    u = sum(Fraction(int(p > q)) + Fraction(int(p == q), 2) for p in pos for q in neg)
    auc, variance = auc_from_table(table_from_rows(s, y, 2), np.array([0, 1]))
    assert auc == float(u / (pos.size * neg.size))
    row_auc, row_var = delong_auc(y, s)
    assert auc == pytest.approx(row_auc, rel=1e-15) and variance == pytest.approx(row_var,
                                                                                  rel=1e-14)


def test_quantile_edges_are_numpys_bit_for_bit(rng: np.random.Generator) -> None:
    """The table's linear quantiles equal np.quantile on the rows (ties, one row, n=2)."""
    q = np.linspace(0, 1, 11)
    for n in (1, 2, 3, 17, 1000):
        s = np.round(rng.random(n), int(rng.integers(1, 4)))
        table = table_from_rows(s, np.zeros(n, dtype=np.int64), 1)
        assert np.array_equal(linear_quantiles(table, q), np.quantile(s, q))


def test_bin_score_sums_are_exactly_rounded(rng: np.random.Generator) -> None:
    """Each bin's score sum is math.fsum of its scores (the correctly rounded sum)."""
    s = rng.random(5000) ** 3
    table = table_from_rows(s, np.zeros(s.size, dtype=np.int64), 1)
    bins = count_bins(table, scale="probability")
    _, sums = bin_sums(table, bins, np.ones((1, 1), dtype=np.int64))
    index = bins.index(s)
    for b in range(bins.n_bins):
        assert sums[b, 0] == math.fsum(s[index == b])


def test_exact_design_effects_agree_with_the_float_formula(rng: np.random.Generator) -> None:
    """The integer form of the ratio design effect equals Σ(x − p m)² / (M p (1 − p))."""
    m = rng.integers(0, 5, (400, 3))
    x = rng.binomial(m, 0.4)
    exact = ratio_design_effects(x, m, np.ones(400, dtype=np.int64))
    np.testing.assert_allclose(exact, design_effects(x, m), rtol=1e-12)


def test_float_keys_keep_order_and_round_trip(rng: np.random.Generator) -> None:
    """Score keys sort as their floats do (negative, -0.0 = 0.0, positive) and map back."""
    v = np.concatenate([rng.normal(size=100), [-0.0, 0.0, 1.0, -1e-300]])
    k = float_keys(v)
    assert np.array_equal(np.argsort(k, kind="stable"), np.argsort(v + 0.0, kind="stable"))
    assert np.array_equal(key_floats(k), v + 0.0)


def test_a_store_reads_the_same_records_twice_after_spilling(rng: np.random.Generator) -> None:
    """Spilled records come back aggregated, in key order, on every pass."""
    store = RecordStore(budget=512)
    keys = rng.integers(0, 2**63, 500).astype(np.uint64)
    for part in np.array_split(np.concatenate([keys, keys[:100]]), 9):
        store.add(Records.of(part, np.zeros(part.size, dtype=np.int64)))
    passes = [Records.concat(list(store.ordered())) for _ in range(2)]
    store.close()
    expected = Records.of(np.concatenate([keys, keys[:100]]), np.zeros(600, dtype=np.int64))
    for got in passes:
        assert np.array_equal(got.key, expected.key) and np.array_equal(got.count,
                                                                         expected.count)
    assert store.spilled_bytes > 0


def test_a_store_spills_when_a_part_like_the_last_would_not_fit_beside_it() -> None:
    """Parts of 30 % of the budget: two are held (a third is made beside 60 %), and the third
    spills them (a fourth would be made beside 90 %); one part of 60 % spills at once, so a log
    of one chunk and one of many are counted beside the same records held."""
    def part(start: int, n: int) -> Records:
        return Records.of(np.arange(start, start + n, dtype=np.uint64), np.zeros(n, np.int64))

    record = part(0, 1).nbytes
    store = RecordStore(budget=100 * record)
    store.add(part(0, 30))
    store.add(part(30, 30))
    assert store.spilled_bytes == 0
    store.add(part(60, 30))
    assert store.spilled_bytes > 0
    alone = RecordStore(budget=100 * record)
    alone.add(part(0, 60))
    assert alone.spilled_bytes > 0
    assert [k for r in alone.ordered() for k in r.key.tolist()] == list(range(60))
    store.close()
    alone.close()


def store_passes(parts: list[Records], budget: int,
                 piece: int | None = None) -> tuple[list[list[Records]], bool]:
    """Two passes over a store of ``parts``, and whether a bucket was split again."""
    store = RecordStore(budget=budget, piece=piece)
    for part in parts:
        store.add(part)
    try:
        passes = [list(store.ordered()) for _ in range(2)]
        split = store._dir is not None and any(store._dir.glob("*.split"))
    finally:
        store.close()
    return passes, split


@pytest.mark.parametrize("keys", [600, 1], ids=["many keys", "one key"])
def test_buckets_read_in_small_pieces_equal_the_records_held_in_memory(
        rng: np.random.Generator, keys: int) -> None:
    """At a 480-byte budget and 60-byte pieces (3 records) every bucket is split again by its
    own keys (one key: aggregated piece by piece), and both passes give exactly the records of
    the in-memory path -- in key order, a key never cut across parts, a part at most a piece's
    3 records or one key's."""
    key = rng.integers(0, 2**64, keys, dtype=np.uint64)[rng.integers(0, keys, 4000)]
    slot = rng.integers(0, 8, 4000)
    parts = [Records.of(key[c], slot[c]) for c in np.array_split(np.arange(4000), 40)]
    (held, _), split = store_passes(parts, budget=2**30)
    assert len(held) == 1 and not split
    passes, split = store_passes(parts, budget=480, piece=60)
    assert split == (keys > 1)
    for got in passes:
        for a, b in itertools.pairwise(got):
            assert a.key[-1] < b.key[0]
        assert all(p.key.size <= 3 or p.key[0] == p.key[-1] for p in got)
        pooled = [np.concatenate([getattr(p, f) for p in got]) for f in ("key", "slot", "count")]
        assert all(np.array_equal(x, getattr(held[0], f))
                   for x, f in zip(pooled, ("key", "slot", "count"), strict=True))
