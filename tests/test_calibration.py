"""Tests of faircode.stats.calibration: score bins, calibration by group, the gap, its CI, test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import _skip_or_fail

from faircode.stats.calibration import (
    CALIBRATION_COLUMNS,
    calibration_gap,
    calibration_table,
    score_bins,
)
from faircode.stats.calibration_regression import calibration_regression

# deciles 1-3; D: 1/2, 2/3, 1/1 label-1 rows per bin; A: 1/3, 0/1, 1/2
S = np.array([1, 1, 2, 2, 2, 3, 1, 1, 1, 2, 3, 3])
Y = np.array([0, 1, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0])
D = np.array([True] * 6 + [False] * 6)
# MH weights n_D n_A / (n_D + n_A) = 6/5, 3/4, 2/3; differences 1/6, 2/3, 1/2
GAP = 62 / 157


def _gap(y, s, d, **kw):  # type: ignore[no-untyped-def]
    kw = {"scale": "ordinal", "seed": 7, "n_resamples": 500, "n_permutations": 500, **kw}
    return calibration_gap(y, s, d, **kw)


def _table(y, s, groups, **kw):  # type: ignore[no-untyped-def]
    return calibration_table(y, s, groups, protected_attribute="race", row_set="deployed", **kw)


def test_ordinal_bins_and_rates_by_hand() -> None:
    """One bin per decile value; per group the rows, label-1 rows and rates computed by hand."""
    table = _table(Y, S, {"D": D, "A": ~D}, scale="ordinal")
    assert tuple(table.columns) == CALIBRATION_COLUMNS
    assert list(table["bin"]) == ["1", "2", "3"] * 2
    assert list(table["n"]) == [2, 3, 1, 3, 1, 2]
    assert list(table["positives"]) == [1, 2, 1, 1, 0, 1]
    assert table["observed_rate"].to_numpy() == pytest.approx([1 / 2, 2 / 3, 1, 1 / 3, 0, 1 / 2])
    assert list(table["mean_score"]) == [1.0, 2.0, 3.0] * 2


def test_empty_bin_is_nan_with_a_note() -> None:
    """A group without rows in a shared bin has n 0, NaN rate and note empty_bin."""
    table = _table(Y[:-2], S[:-2], {"D": D[:-2], "A": ~D[:-2]}, scale="ordinal")
    last = table.iloc[-1]
    assert (last["group"], last["bin"], last["n"], last["note"]) == ("A", "3", 0, "empty_bin")
    assert np.isnan(last["observed_rate"]) and np.isnan(last["ci_low"])


def test_quantile_and_uniform_edges() -> None:
    """Quantile edges split at the pooled median; uniform edges are fixed; last bin closed."""
    s = np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95])
    q = score_bins(s, scale="probability", binning="quantile", n_bins=2)
    assert q.low == (0.05, 0.5) and q.high == (0.5, 0.95)
    assert list(q.index) == [0] * 5 + [1] * 5 and q.labels == ("[0.05, 0.5)", "[0.5, 0.95]")
    u = score_bins(np.array([0.0, 0.25, 0.5, 0.99, 1.0]), scale="probability",
                   binning="uniform", n_bins=4)
    assert list(u.index) == [0, 1, 2, 3, 3] and u.high[-1] == 1.0


def test_tied_quantile_edges_are_merged_and_noted() -> None:
    """Six zeros in eight scores collapse four quantile bins into two, noted."""
    bins = score_bins(np.array([0, 0, 0, 0, 0, 0, 0.2, 0.4]), scale="probability", n_bins=4)
    assert bins.n_bins == 2 and bins.note == "tied_edges_merged:2"
    assert list(bins.index) == [0] * 6 + [1, 1]


def test_gap_by_hand() -> None:
    """The MH-weighted within-decile difference is 62/157; an ordinal scale has score_gap 0."""
    gap = _gap(Y, S, D)
    assert gap.value == pytest.approx(GAP) and gap.score_gap == 0.0
    assert (gap.bins_compared, gap.bins_dropped) == (3, 0)
    assert (gap.n_disadvantaged, gap.n_advantaged) == (6, 6)


def test_bins_without_both_groups_are_dropped_from_the_gap() -> None:
    """Without A's decile-3 rows the gap is over deciles 1-2 only: 42/117."""
    gap = _gap(Y[:-2], S[:-2], D[:-2])
    assert gap.value == pytest.approx(42 / 117)
    assert (gap.bins_compared, gap.bins_dropped) == (2, 1)


def test_score_gap_reports_within_bin_score_differences() -> None:
    """In one probability bin D's mean score 0.4 and A's 0.2 give score_gap 0.2."""
    s = np.array([0.3, 0.5, 0.1, 0.3])
    gap = _gap(np.array([0, 1, 0, 1]), s, np.array([True, True, False, False]),
               scale="probability", n_bins=1)
    assert gap.score_gap == pytest.approx(0.2) and gap.value == pytest.approx(0.0)


def _deciles(rng: np.random.Generator, n: int, shift: float) -> tuple[np.ndarray, ...]:
    """D skews to high deciles; P(y = 1 | s) = s / 11 for A and s / 11 + shift for D."""
    d = rng.random(n) < 0.5
    s = np.where(d, rng.choice(np.arange(1, 11), n, p=np.arange(1, 11) / 55),
                 rng.choice(np.arange(1, 11), n, p=np.arange(10, 0, -1) / 55))
    y = (rng.random(n) < s / 11 + np.where(d, shift, 0.0)).astype(int)
    return y, s, d


def test_calibrated_score_gives_gap_near_zero_and_large_p(rng: np.random.Generator) -> None:
    """Equal P(y | score) in both groups (different score mixes): gap ~ 0, p not small."""
    y, s, d = _deciles(rng, 20_000, 0.0)
    gap = _gap(y, s, d, n_resamples=1000, n_permutations=1000)
    assert abs(gap.value) < 0.015 and gap.ci_low < 0 < gap.ci_high and gap.p_value > 0.05


def test_over_prediction_for_one_group_gives_the_signed_gap(rng: np.random.Generator) -> None:
    """A score over-predicting D by 0.08 at every decile gives gap -0.08, CI around it, p small."""
    y, s, d = _deciles(rng, 20_000, -0.08)
    gap = _gap(y, s, d, n_resamples=1000, n_permutations=1000)
    assert gap.value == pytest.approx(-0.08, abs=0.015)
    assert gap.ci_low < -0.08 < gap.ci_high and gap.p_value < 0.01


def test_calibrated_probability_gap_is_its_score_gap(rng: np.random.Generator) -> None:
    """Calibrated probabilities, different group mixes: the gap is the within-bin score gap."""
    n = 20_000
    d = rng.random(n) < 0.5
    s = np.where(d, rng.beta(3, 2, n), rng.beta(2, 3, n))
    y = (rng.random(n) < s).astype(int)
    gap = _gap(y, s, d, scale="probability", n_bins=10)
    assert gap.ci_low < gap.score_gap < gap.ci_high and gap.score_gap > 0
    finer = _gap(y, s, d, scale="probability", n_bins=40)
    assert 0 < finer.score_gap < gap.score_gap / 2


def _row_gap(y: np.ndarray, b: np.ndarray, d: np.ndarray) -> float:
    """The gap from rows with pandas (the slow reference)."""
    frame = pd.DataFrame({"y": y, "b": b, "d": d})
    rates = frame.groupby(["b", "d"])["y"].agg(["mean", "size"]).unstack("d").dropna()
    n_d, n_a = rates["size"][True], rates["size"][False]
    weight = n_d * n_a / (n_d + n_a)
    return float(((rates["mean"][True] - rates["mean"][False]) * weight).sum() / weight.sum())


def test_permutation_and_bootstrap_agree_with_row_level_references(
    rng: np.random.Generator,
) -> None:
    """Count-level p and bootstrap spread equal row-level shuffles and resamples (slow ref.)."""
    y, s, d = _deciles(rng, 600, -0.12)
    fast = _gap(y, s, d, n_resamples=4000, n_permutations=4000)
    assert fast.value == pytest.approx(_row_gap(y, s, d))
    observed, hits, spread = abs(fast.value), 0, []
    for _ in range(1000):
        shuffled = d.copy()
        for value in np.unique(s):
            where = np.flatnonzero(s == value)
            shuffled[where] = rng.permutation(d[where])
        hits += abs(_row_gap(y, s, shuffled)) >= observed * (1 - 1e-9)
        i_d = rng.choice(np.flatnonzero(d), d.sum())
        i_a = rng.choice(np.flatnonzero(~d), (~d).sum())
        i = np.concatenate([i_d, i_a])
        spread.append(_row_gap(y[i], s[i], d[i]))
    assert fast.p_value == pytest.approx((1 + hits) / 1001, abs=0.03)
    boot = _gap(y, s, d, n_resamples=4000, n_permutations=10)
    width = (boot.ci_high - boot.ci_low) / (np.quantile(spread, 0.975) - np.quantile(spread, 0.025))
    assert width == pytest.approx(1.0, abs=0.12)


def test_one_row_per_unit_changes_nothing() -> None:
    """Distinct unit ids give the row result exactly (no note, same CI and p)."""
    assert _gap(Y, S, D, units=np.arange(12)) == _gap(Y, S, D)


def test_repeated_units_widen_the_interval_and_note_the_test(rng: np.random.Generator) -> None:
    """Units of 8 rows sharing score and label: the unit bootstrap is wider; the note says the
    permutation treats rows as independent; the table's design effect exceeds 1."""
    y0, s0, d0 = _deciles(rng, 300, -0.05)
    y, s, d, unit = (np.repeat(a, 8) for a in (y0, s0, d0, np.arange(300)))
    rows = _gap(y, s, d)
    units = _gap(y, s, d, units=unit)
    assert units.value == rows.value and units.p_value == rows.p_value
    assert units.ci_high - units.ci_low > 2 * (rows.ci_high - rows.ci_low)
    assert units.note == "permutation_rows_independent"
    table = _table(y, s, {"D": d, "A": ~d}, scale="ordinal", units=unit)
    assert (table["design_effect"].dropna() > 7).all()


def test_logistic_check_separates_equal_and_shifted_curves(rng: np.random.Generator) -> None:
    """One curve: joint p not small; D shifted down: negative group coefficient, p small."""
    y, s, d = _deciles(rng, 8000, 0.0)
    same = calibration_regression(y, s, d, scale="ordinal")
    assert same.joint_p > 0.05 and same.n == 8000
    y, s, d = _deciles(rng, 8000, -0.08)
    shifted = calibration_regression(y, s, d, scale="ordinal")
    assert shifted.group_coef < 0 and shifted.group_p < 1e-4


def test_bad_scores_and_groups_raise() -> None:
    """A fractional decile, a probability above 1, overlapping groups, an unknown scale raise."""
    with pytest.raises(ValueError, match=r"^score\[1\]: expected a finite integer value"):
        _gap(Y, np.array([1, 1.5, *S[2:]]), D)
    with pytest.raises(ValueError, match=r"^score\[0\]: expected a probability in \[0, 1\]"):
        _gap(Y, np.array([1.2] + [0.5] * 11), D, scale="probability")
    with pytest.raises(ValueError, match=r"^advantaged: expected no row in both groups"):
        _gap(Y, S, D, advantaged=np.ones(12, dtype=bool))
    with pytest.raises(ValueError, match=r"^scale: expected one of ordinal, probability"):
        _gap(Y, S, D, scale="decile")


# ------------------------------------------------------------------- COMPAS deciles by race

@pytest.fixture(scope="module")
def compas_two_years(mirror_extra: Path) -> pd.DataFrame:
    """African-American and Caucasian rows of the raw file: race, decile and outcome only."""
    path = mirror_extra / "compas_two_years" / "compas-scores-two-years.csv"
    if not path.is_file():
        _skip_or_fail(f"no {path}")
    d = pd.read_csv(path, usecols=["race", "decile_score", "two_year_recid"])
    return d[d["race"].isin(["African-American", "Caucasian"])]


def test_compas_decile_bins_match_a_crosstab(compas_two_years: pd.DataFrame) -> None:
    """Per race and decile 1..10 the rows and re-arrests equal pandas' crosstab; the gap the
    row-level reference; decile 1 holds 398 African-American and 681 Caucasian defendants."""
    d = compas_two_years
    y, s = d["two_year_recid"].to_numpy(), d["decile_score"].to_numpy()
    aa = (d["race"] == "African-American").to_numpy()
    table = _table(y, s, {"African-American": aa, "Caucasian": ~aa}, scale="ordinal")
    counts = pd.crosstab(d["race"], d["decile_score"])
    recid = pd.crosstab(d["race"], d["decile_score"], values=d["two_year_recid"], aggfunc="sum")
    for race in ("African-American", "Caucasian"):
        part = table[table["group"] == race]
        assert list(part["bin"]) == [str(k) for k in range(1, 11)]
        assert list(part["n"]) == counts.loc[race].tolist()
        assert list(part["positives"]) == recid.loc[race].tolist()
    assert counts.loc["African-American", 1] == 398 and counts.loc["Caucasian", 1] == 681
    gap = _gap(y, s, aa)
    assert gap.value == pytest.approx(_row_gap(y, s, aa))
