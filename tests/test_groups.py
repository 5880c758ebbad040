"""Tests of faircode.stats.groups: per-group confusion counts, rates, Wilson intervals, tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import _skip_or_fail
from statsmodels.stats.proportion import proportion_confint

from faircode.stats import clusters, resampling
from faircode.stats.groups import (
    GROUP_COLUMNS,
    RATES,
    design_effects,
    format_group_table,
    group_rates,
    group_table,
    wide_group_table,
)

# group a: TN 2, FP 1, FN 1, TP 2; group b: TN 1, FP 3 (no label-1 row)
Y = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0, 0])
YHAT = np.array([0, 0, 1, 0, 1, 1, 0, 1, 1, 1])
A = np.array([True] * 6 + [False] * 4)
GROUPS = {"a": A, "b": ~A}


def _rates(result, name):  # type: ignore[no-untyped-def]
    group = next(g for g in result if g.group == name)
    return {r.metric: r for r in group.rates}, group


def test_hand_computed_counts_and_rates() -> None:
    """Group a's counts (2, 1, 1, 2) give the eight rates computed by hand."""
    rates, group = _rates(group_rates(Y, YHAT, GROUPS), "a")
    assert group.counts == (2, 1, 1, 2) and group.n == 6
    expected = {"base_rate": 3 / 6, "selection_rate": 3 / 6, "tpr": 2 / 3, "fpr": 1 / 3,
                "fnr": 1 / 3, "ppv": 2 / 3, "npv": 2 / 3, "accuracy": 4 / 6}
    for metric, value in expected.items():
        assert rates[metric].value == pytest.approx(value)
    assert (rates["fpr"].numerator, rates["fpr"].denominator) == (1, 3)
    assert (rates["npv"].numerator, rates["npv"].denominator) == (2, 3)


def test_rate_with_empty_denominator_is_nan_with_a_note_never_zero() -> None:
    """Group b has no label-1 row: TPR and FNR are NaN with a note; PPV 0/3 is a real 0."""
    rates, group = _rates(group_rates(Y, YHAT, GROUPS), "b")
    assert group.counts == (1, 3, 0, 0)
    for metric in ("tpr", "fnr"):
        assert np.isnan(rates[metric].value) and np.isnan(rates[metric].ci_low)
        assert rates[metric].note == "undefined_no_label_1"
    assert rates["ppv"].value == 0.0 and rates["ppv"].note == "small_sample"
    assert rates["npv"].value == 1.0 and rates["fpr"].value == pytest.approx(0.75)


def test_empty_group_has_every_rate_undefined() -> None:
    """A group without rows has n 0 and every rate NaN, each with the note of its denominator."""
    rates, group = _rates(group_rates(Y, YHAT, {"none": np.zeros(10, dtype=bool)}), "none")
    assert group.n == 0
    assert all(np.isnan(r.value) for r in rates.values())
    assert {r.metric: r.note for r in rates.values()} == {
        "base_rate": "undefined_empty_group", "selection_rate": "undefined_empty_group",
        "tpr": "undefined_no_label_1", "fpr": "undefined_no_label_0",
        "fnr": "undefined_no_label_1", "ppv": "undefined_no_decision_1",
        "npv": "undefined_no_decision_0", "accuracy": "undefined_empty_group"}


def test_wilson_interval_matches_statsmodels(rng: np.random.Generator) -> None:
    """Every rate's interval equals statsmodels' proportion_confint(method="wilson")."""
    y, yhat = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    labels = rng.choice(np.array(["x", "y", "z"]), 300)
    for g in group_rates(y, yhat, labels, confidence=0.9):
        for r in g.rates:
            low, high = proportion_confint(r.numerator, r.denominator, alpha=0.1, method="wilson")
            assert (r.ci_low, r.ci_high) == (pytest.approx(low), pytest.approx(high))


def test_label_array_gives_the_same_groups_as_masks() -> None:
    """One label per row (missing labels in no group) equals the masks by name."""
    labels = np.array(["a"] * 6 + ["b"] * 3 + [None], dtype=object)
    by_label = group_table(Y, YHAT, labels, protected_attribute="x", row_set="r")
    masks = {"a": A, "b": np.array([False] * 6 + [True] * 3 + [False])}
    by_mask = group_table(Y, YHAT, masks, protected_attribute="x", row_set="r")
    pd.testing.assert_frame_equal(by_label, by_mask)


def test_long_table_columns_and_order() -> None:
    """The long table has GROUP_COLUMNS, one row per group x rate, counts repeated per row."""
    table = group_table(Y, YHAT, GROUPS, protected_attribute="sex", row_set="deployed")
    assert tuple(table.columns) == GROUP_COLUMNS
    assert list(table["metric"]) == list(RATES) * 2 and list(table["group"][::8]) == ["a", "b"]
    assert (table[table["group"] == "a"][["TN", "FP", "FN", "TP"]] == [2, 1, 1, 2]).all().all()
    assert (table["design_effect"] == 1.0).all()


def test_wide_table_and_markdown() -> None:
    """The wide view has one row per group; the Markdown row shows counts and rate [low, high]."""
    table = group_table(Y, YHAT, GROUPS, protected_attribute="sex", row_set="deployed")
    wide = wide_group_table(table)
    assert list(wide["group"]) == ["a", "b"] and wide.loc[0, "fpr"] == pytest.approx(1 / 3)
    note = str(wide.loc[1, "note"])
    assert note.startswith("base_rate:small_sample;") and "tpr:undefined_no_label_1" in note
    text = format_group_table(table, metrics=("fpr", "tpr"))
    low, _ = resampling.wilson_interval(1, 3, confidence=0.95)
    assert f"| deployed | sex | a | 6 | 2 | 1 | 1 | 2 | 0.333 [{float(low):.3f}, " in text
    assert text.splitlines()[-1].endswith("| undefined |")


def test_hand_computed_design_effect_deflates_the_interval() -> None:
    """Units (2, 0, 1 label-1 rows of 2, 2, 1): deff 2.24 / 1.2; Wilson at x/deff, n/deff."""
    y = np.array([1, 1, 0, 0, 1])
    yhat = np.array([1, 1, 0, 1, 0])
    units = np.array([7, 7, 8, 8, 9])
    (group,) = group_rates(y, yhat, {"g": np.ones(5, dtype=bool)}, units=units)
    base = group.rate("base_rate")
    deff = 2.24 / 1.2
    assert base.design_effect == pytest.approx(deff)
    low, high = resampling.wilson_interval(3 / deff, 5 / deff, confidence=0.95)
    assert (base.ci_low, base.ci_high) == (pytest.approx(float(low)), pytest.approx(float(high)))


def test_one_row_per_unit_is_the_row_table() -> None:
    """Distinct unit ids change nothing: design effect 1.0 and the row intervals, bit for bit."""
    units = np.arange(10) + 100
    with_units = group_table(Y, YHAT, GROUPS, protected_attribute="x", row_set="r", units=units)
    rows = group_table(Y, YHAT, GROUPS, protected_attribute="x", row_set="r")
    pd.testing.assert_frame_equal(with_units, rows)
    x_u, m_u = np.array([1.0, 0.0, 1.0, 0.0]), np.ones(4)
    assert float(design_effects(x_u, m_u)) == 1.0


def test_design_effect_agrees_with_cluster_bootstrap(rng: np.random.Generator) -> None:
    """The closed form equals the cluster/row bootstrap variance ratio (the slow reference)."""
    sizes = rng.integers(1, 5, 400)
    unit = np.repeat(np.arange(400), sizes)
    y = (rng.random(unit.size) < rng.beta(2, 3, 400)[unit]).astype(np.int64)
    yhat = np.zeros_like(y)
    (group,) = group_rates(y, yhat, {"g": np.ones(y.size, dtype=bool)}, units=unit)
    types = clusters.unit_types(clusters.unit_counts(y, yhat, np.zeros(y.size, np.int64), unit,
                                                     n_groups=1))
    boot = clusters.cluster_bootstrap_counts(types, n_resamples=8000, rng=rng)[:, 0]
    row = resampling.bootstrap_counts(types.pooled()[0], n_resamples=8000, rng=rng)
    rate = lambda c: (c[:, 2] + c[:, 3]) / c.sum(axis=1)  # noqa: E731
    reference = clusters.design_effect(rate(boot), rate(row))
    assert group.rate("base_rate").design_effect == pytest.approx(reference, rel=0.08)
    assert reference > 1.3


def test_bad_inputs_raise_one_line() -> None:
    """A non-binary label, a mask of the wrong length or dtype is a ValueError naming it."""
    with pytest.raises(ValueError, match=r"^y_pred\[2\]: expected 0 or 1, got 2"):
        group_rates(Y, np.array([0, 1, 2, 0, 0, 0, 0, 0, 0, 0]), GROUPS)
    with pytest.raises(ValueError, match=r"^groups\['a'\]: expected 10 rows, got 3"):
        group_rates(Y, YHAT, {"a": np.ones(3, dtype=bool)})
    with pytest.raises(ValueError, match=r"^groups\['a'\]: expected a 1-D boolean mask"):
        group_rates(Y, YHAT, {"a": np.ones(10)})


# ------------------------------------------------------------------ ProPublica's truth tables

@pytest.fixture(scope="module")
def compas_two_years(mirror_extra: Path) -> pd.DataFrame:
    """The raw COMPAS two-year file: only race, the tool's band and the outcome are read."""
    path = mirror_extra / "compas_two_years" / "compas-scores-two-years.csv"
    if not path.is_file():
        _skip_or_fail(f"no {path}")
    return pd.read_csv(path, usecols=["race", "score_text", "two_year_recid"])


def test_all_rows_reproduce_propublica_truth_tables(compas_two_years: pd.DataFrame) -> None:
    """All 7,214 rows, flagged = not Low, give ProPublica's Black and White tables count for count
    (TN 990, FP 805, FN 532, TP 1369; TN 1139, FP 349, FN 461, TP 505)."""
    d = compas_two_years
    assert len(d) == 7214
    race = d["race"].to_numpy()
    masks = {"African-American": race == "African-American", "Caucasian": race == "Caucasian"}
    flagged = (d["score_text"] != "Low").to_numpy().astype(int)
    result = {g.group: g for g in group_rates(d["two_year_recid"].to_numpy(), flagged, masks)}
    assert result["African-American"].counts == (990, 805, 532, 1369)
    assert result["Caucasian"].counts == (1139, 349, 461, 505)
    assert result["African-American"].rate("fpr").value == pytest.approx(0.4485, abs=5e-5)
    assert result["African-American"].rate("fnr").value == pytest.approx(0.2799, abs=5e-5)
    assert result["Caucasian"].rate("fpr").value == pytest.approx(0.2345, abs=5e-5)
    assert result["Caucasian"].rate("fnr").value == pytest.approx(0.4772, abs=5e-5)
