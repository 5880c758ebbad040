"""Tests of the strategy and metric tables (faircode.core.cells, faircode.core.metrics) and of the
seed keys they own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from faircode.core.cells import (
    COMPARISONS,
    FIT_PARTS,
    STRATEGY_CODES,
    STRATEGY_TABLE,
    Against,
    ModelFamily,
    Strategy,
    StrategyInfo,
    applies,
    not_applicable_reason,
    position,
    strategy_info,
)
from faircode.core.metrics import (
    ALL,
    FAIRNESS_METRICS,
    METRIC_CODES,
    METRIC_TABLE,
    TP,
    Y1,
    Metric,
    MetricInfo,
    metric_info,
    metrics_of,
    no_gap,
    table_of,
)
from faircode.core.seeds import NAMED, child_seed, name_stream
from faircode.grid.strategies import READS
from faircode.pipeline.stages import PARTS
from faircode.stats import _metric_defs as defs


def test_strategy_codes_and_numbers_are_unique() -> None:
    """Every strategy has one record, in enum order, with its own code and number."""
    assert [s.strategy for s in STRATEGY_TABLE] == list(Strategy)
    assert len({s.code for s in STRATEGY_TABLE}) == len({s.number for s in STRATEGY_TABLE}) \
        == len(STRATEGY_TABLE)
    assert list(STRATEGY_CODES.values())[:5] == ["S0", "S1", "S2", "S3", "S4"]


def test_seed_keys_of_strategies_are_their_former_positions() -> None:
    """A cell's seed key is its strategy's key: S0-S4 keep the grid index they had (so no
    number moved), any later strategy takes its name's key, above every explicit one."""
    for k, strategy in enumerate(list(Strategy)[:5]):
        for m, family in enumerate(ModelFamily):
            assert position(strategy, family) == (k, m)
    for s in STRATEGY_TABLE:
        key = s.number if s.stream is not None else name_stream(s.strategy.value)
        assert position(s.strategy, ModelFamily.RANDOM_FOREST) == (key, 1)
        assert s.stream is None or s.stream == s.number < NAMED


def test_fit_parts_cover_the_grid_once_and_read_one_set_of_keys() -> None:
    """Each strategy is fitted by exactly one part; a part's strategies read the same keys."""
    assert PARTS is FIT_PARTS
    assert list(PARTS)[:3] == ["unmitigated", "in_processing", "post_processing"]
    fitted = [s for members in PARTS.values() for s in members]
    assert sorted(fitted) == sorted(Strategy) and len(fitted) == len(Strategy)
    for members in PARTS.values():
        assert len({READS[s] for s in members}) == 1


def test_comparisons_keep_their_order_and_former_seed_keys() -> None:
    """S1-S4 vs S0, then S3, S4 vs S2, with streams 0-5 (their former positions); any other
    comparison has a name-derived key."""
    got = [(c.code, c.stream) for c in COMPARISONS if c.stream < NAMED]
    assert all(c.stream == name_stream(f"{c.strategy}-{c.reference}") for c in COMPARISONS
               if c.stream >= NAMED)
    assert got == [("S1-S0", 0), ("S2-S0", 1), ("S3-S0", 2), ("S4-S0", 3), ("S3-S2", 4),
                   ("S4-S2", 5)]


def test_a_new_comparison_takes_a_key_from_its_names() -> None:
    """A comparison without an explicit stream is keyed by its strategies' names, above every
    explicit key."""
    key = name_stream("post_processing-in_processing")
    assert key >= NAMED and key not in {c.stream for c in COMPARISONS}


def test_strategy_records_refuse_bad_values() -> None:
    """A bad colour, a cutoff without a score or an out-of-range stream is one clear error."""
    base = STRATEGY_TABLE[0]
    with pytest.raises(ValueError, match="colour"):
        dataclasses.replace(base, colour="black")
    with pytest.raises(ValueError, match="cutoff"):
        dataclasses.replace(base, score=False)
    with pytest.raises(ValueError, match="stream"):
        Against(Strategy.BASELINE, NAMED)
    with pytest.raises(ValueError, match="strategy: expected one of"):
        strategy_info("no_such_strategy")
    assert isinstance(strategy_info("baseline"), StrategyInfo)


def test_metric_codes_and_stream_keys_are_unique() -> None:
    """One record per metric, in enum order; the binary metrics are the fairness metrics;
    distinct names, codes and seed keys."""
    assert [m.metric for m in METRIC_TABLE] == list(Metric)
    assert FAIRNESS_METRICS == metrics_of("binary") == tuple(m.name for m in METRIC_TABLE
                                                             if "binary" in m.kinds)
    for kind in ("regression", "multiclass", "ranking"):
        assert [m.name for m in table_of(kind)] == list(metrics_of(kind))
    assert {m.name: m.code for m in METRIC_TABLE if m.code != m.name} == METRIC_CODES
    for field in ("name", "code", "key"):
        values = [getattr(m, field) for m in METRIC_TABLE]
        assert len(set(values)) == len(values), field


def test_stream_keys_of_metrics_are_their_former_positions() -> None:
    """The eight metrics of the first table keep seed keys 0-7, their positions when keys were
    positions; any other takes its name's key."""
    assert [m.key for m in METRIC_TABLE if m.stream is not None] == list(range(8))
    assert all(m.key == name_stream(m.name) for m in METRIC_TABLE if m.stream is None)


def test_every_twin_is_a_metric_of_the_same_null() -> None:
    """A twin (same null; same value) is another metric, itself no twin, a rate over the same
    rows; a same-value twin also has the same rate and scale."""
    for m in METRIC_TABLE:
        for twin in (m.same_null, m.same_value):
            if twin is None:
                continue
            other = metric_info(twin)
            assert other.metric is not m.metric
            assert other.same_null is None and other.same_value is None
            assert other.denominator == m.denominator and other.kinds == m.kinds
            if m.cells:
                assert defs.SPECS[m.name].subsets == defs.SPECS[other.name].subsets
        if m.same_value is not None:
            assert m.same_null is m.same_value
            assert (m.numerator, m.scale) == (metric_info(m.same_value).numerator,
                                              metric_info(m.same_value).scale)
    assert defs.SAME_NULL == {"disparate_impact_ratio": "demographic_parity_diff",
                              "tpr_gap": "equal_opportunity_diff"}


def test_magnitudes_are_made_of_differences() -> None:
    """A magnitude names signed difference components of its own kinds; a binary one's spec's
    strata are theirs."""
    for m in METRIC_TABLE:
        if m.scale == "magnitude":
            assert m.components and not m.numerator
            assert all(metric_info(c).scale == "difference" and metric_info(c).kinds == m.kinds
                       for c in m.components)
            if m.cells:
                strata = tuple(metric_info(c).denominator for c in m.components)
                assert defs.SPECS[m.name].subsets == strata


def test_a_metric_of_another_kind_has_no_cells() -> None:
    """A multi-class or ranking metric names no confusion cells (its kind's statistics compute
    it) and is no binary table's: a binary one without cells is refused."""
    for m in METRIC_TABLE:
        assert m.cells == ("binary" in m.kinds)
        if not m.cells:
            assert not m.numerator and not m.denominator and m.name not in defs.SPECS
    assert metrics_of("multiclass") == ("class_share_gap", "class_max_gap")
    assert metrics_of("ranking") == ("exposure_ratio",)
    with pytest.raises(ValueError, match="numerator"):
        MetricInfo(Metric.CLASS_SHARE_GAP, "x", "x", "difference")


def test_a_new_metric_takes_its_key_from_its_name() -> None:
    """A record without an explicit stream is keyed by its name, above every explicit key, and
    its draws differ from every existing metric's."""
    new = MetricInfo(Metric.TPR_GAP, "x", "x", "difference", (TP,), Y1)
    assert new.key == name_stream("tpr_gap") >= NAMED
    assert new.key not in {m.key for m in METRIC_TABLE}
    draw = child_seed(7, new.key, 0).generate_state(2)
    for m in METRIC_TABLE:
        assert not np.array_equal(draw, child_seed(7, m.key, 0).generate_state(2))


def test_name_stream_is_stable() -> None:
    """The same name gives the same key on every run (SHA-256, not Python's hash)."""
    assert name_stream("demographic_parity_diff") == NAMED + 0x8937C814
    with pytest.raises(ValueError, match="name"):
        name_stream("")


def test_metric_records_refuse_bad_values() -> None:
    """A difference without cells, a numerator outside its denominator or an unknown scale is
    one clear error; an unknown name is refused naming the metrics."""
    with pytest.raises(ValueError, match="numerator"):
        MetricInfo(Metric.TPR_GAP, "x", "x", "difference")
    with pytest.raises(ValueError, match="numerator"):
        MetricInfo(Metric.TPR_GAP, "x", "x", "difference", ALL, Y1)
    with pytest.raises(ValueError, match="scale"):
        MetricInfo(Metric.TPR_GAP, "x", "x", "log", (TP,), Y1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="metric: expected one of demographic_parity_diff"):
        metric_info("accuracy")
    assert no_gap("disparate_impact_ratio") == 1.0 and no_gap("accuracy") == 0.0


def test_specs_follow_the_cells_of_the_table() -> None:
    """Each rate metric's value is its numerator over denominator cells, disadvantaged minus
    (or over) advantaged, hand-computed on one pair of count vectors."""
    d, a = np.array([10, 5, 3, 7]), np.array([20, 10, 2, 18])  # TN, FP, FN, TP
    expected = {
        "demographic_parity_diff": 12 / 25 - 28 / 50,
        "disparate_impact_ratio": (12 / 25) / (28 / 50),
        "equal_opportunity_diff": 7 / 10 - 18 / 20,
        "equalized_odds_diff": max(abs(7 / 10 - 18 / 20), abs(5 / 15 - 10 / 30)),
        "predictive_parity_diff": 7 / 12 - 18 / 28,
        "accuracy_equality_diff": 17 / 25 - 38 / 50,
        "tpr_gap": 7 / 10 - 18 / 20,
        "fpr_gap": 5 / 15 - 10 / 30,
    }
    for metric, value in expected.items():
        assert float(defs.metric_values(metric, d, a)) == pytest.approx(value, abs=1e-15)


def test_a_strategy_that_does_not_apply_says_why() -> None:
    """For the kinds with a grid of strategies, every strategy applies or gives the reason a
    reader sees in its place; a reason for a kind it applies to is refused."""
    for info in STRATEGY_TABLE:
        for kind in ("binary", "multiclass"):
            assert applies(info.strategy, kind) != bool(not_applicable_reason(info.strategy,
                                                                              kind))
    assert [s.code for s in STRATEGY_TABLE if applies(s.strategy, "multiclass")] == [
        "S0", "S1", "S2"]
    with pytest.raises(ValueError, match="not_applicable"):
        dataclasses.replace(STRATEGY_TABLE[0], not_applicable=(("binary", "no"),))
