"""The cheap twin of bench/multiclass_ranking.py: the same simulations, few replicates, loose
bounds (the bench's own figures, at 2,000 and more, are quoted in docs/statistics.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "multiclass_ranking.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_multiclass_ranking", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_multiclass_ranking"] = module
    spec.loader.exec_module(module)
    return module


def test_multiclass_tests_hold_their_size_and_intervals_cover(bench: ModuleType) -> None:
    """300 null tables of BankWages' shape: the joint and per-class tests reject near 5 %,
    the share gaps' and shares' intervals cover near 95 %."""
    found = bench.multiclass_null(300, sizes=(216, 258))
    assert 0.015 <= found["joint"] <= 0.095
    assert all(0.01 <= p <= 0.1 for p in found["per_class"])
    assert min(found["gap_coverage"]) >= 0.9 and min(found["share_coverage"]) >= 0.9


def test_ranking_tests_hold_their_size_and_intervals_cover(bench: ModuleType) -> None:
    """40 simulated rankings of 200 rows: the exposure test's size, the exposure interval's and
    the band's coverage, loosely."""
    found = bench.ranking_settings(40, n=200, resamples=100, setting=30)
    assert found["exposure_size"] <= 0.15
    assert found["exposure_coverage"] >= 0.8 and found["band_coverage"] >= 0.8


def test_fair_rejects_fair_rankings_at_its_exact_failure_probability(bench: ModuleType) -> None:
    """4,000 fair rankings of 60 positions: FA*IR at the adjusted alpha rejects at the failure
    probability it was adjusted to (at most alpha)."""
    found = bench.fair_size(4000, k=60, p=0.3, setting=40)
    assert 0.03 <= found["exact"] <= 0.05
    assert abs(found["size"] - found["exact"]) < 0.012
