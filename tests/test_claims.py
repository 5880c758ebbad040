"""Tests of faircode.evaluate.claims: verdicts, families and the K-replicate fold of the tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from faircode.core.config import VerdictsConfig
from faircode.evaluate.claims import effect_claims_table, fairness_columns, gap_claims_table
from faircode.evaluate.combine import combine_effects, combine_gaps
from faircode.stats import _metric_defs as defs
from faircode.stats.metrics import FAIRNESS_COLUMNS, INTERSECTIONAL_COLUMNS

DP = "demographic_parity_diff"
VERDICTS = VerdictsConfig()
NO_PAIRS = pd.DataFrame(columns=list(INTERSECTIONAL_COLUMNS))


def _counts(n: int, rate: float) -> np.ndarray:
    pos = round(rate * n)
    return np.array([n // 2 - pos // 2, pos // 2, n - n // 2 - (pos - pos // 2), pos - pos // 2])


def _row(strategy: str, n: int, rate_d: float, rate_a: float, *, p: float = 0.5,
         note: str = "") -> dict[str, object]:
    """A demographic-parity row of one fit with its Newcombe interval from the counts."""
    d, a = _counts(n, rate_d), _counts(n, rate_a)
    low, high = defs.closed_form_interval(DP, d, a, confidence=0.95)
    return {"audit": "toy", "strategy": strategy, "model": "logistic_regression",
            "protected_attribute": "sex", "metric": DP,
            "value": float(defs.metric_values(DP, d, a)), "ci_low": float(low),
            "ci_high": float(high), "ci_method": "newcombe_hybrid_score", "p_value": p,
            "note": note}


def _claims(rows: list[dict[str, object]]) -> pd.DataFrame:
    table = pd.DataFrame(rows).reindex(columns=list(FAIRNESS_COLUMNS))
    return gap_claims_table(table, NO_PAIRS, combined=None, confidence=0.95, alpha=0.05,
                            verdicts=VERDICTS)[0]


def test_known_answers_parity_inconclusive_uninformative() -> None:
    """No gap on 20,000 rows per group is parity; the same on 40 rows is inconclusive, naming a
    gap it cannot exclude beyond the margin; a degenerate cell is uninformative."""
    out = _claims([_row("baseline", 20_000, 0.4, 0.4), _row("unawareness", 40, 0.4, 0.4),
                   _row("in_processing", 20_000, 0.4, 0.4, note="degenerate_decisions")])
    assert list(out["verdict"]) == ["parity", "inconclusive", "uninformative"]
    assert abs(out["gap_bound"].iloc[1]) > 0.05 and abs(out["gap_bound"].iloc[0]) < 0.05
    assert tuple(out.columns) == fairness_columns(False)


def test_a_gap_needs_the_family_and_an_interval_excluding_no_gap() -> None:
    """q < alpha with an interval reaching 0 is no gap; a clear gap with p = 0.001 is."""
    out = _claims([_row("baseline", 500, 0.3, 0.6, p=0.001),
                   _row("unawareness", 40, 0.45, 0.4, p=0.001)])
    assert out["significant"].tolist() == [True, True]
    assert out["verdict"].tolist() == ["gap", "inconclusive"]


def test_uninformative_rows_enter_no_family() -> None:
    """A degenerate row's p of 0.0001 is no test: its q is NaN and the others' q is BH over
    themselves alone."""
    out = _claims([_row("baseline", 500, 0.3, 0.6, p=0.01),
                   _row("unawareness", 500, 0.3, 0.6, p=0.02),
                   _row("in_processing", 500, 0.3, 0.6, p=0.0001, note="degenerate_decisions")])
    assert np.isnan(out["q_value"].iloc[2]) and np.isnan(out["equivalence_q_value"].iloc[2])
    assert out["q_value"].iloc[:2].tolist() == pytest.approx([0.02, 0.02])


def test_parity_exactly_where_the_bound_lies_inside_the_margin(
        rng: np.random.Generator) -> None:
    """Over many cells of one audit (one equivalence family), a non-gap verdict is parity
    exactly when |gap_bound| < the margin: the bound is the family's decision in numbers."""
    rows = [_row(f"s{i}", int(rng.integers(200, 30_000)), 0.4 + rng.normal(0, 0.03), 0.4)
            for i in range(150)]
    for i, row in enumerate(rows):  # one cell per strategy name: keys stay distinct
        row["model"] = f"m{i}"
    out = _claims(rows)
    open_ = out[out["verdict"] != "gap"]
    assert (open_["verdict"] == "parity").any() and (open_["verdict"] == "inconclusive").any()
    np.testing.assert_array_equal(open_["verdict"] == "parity",
                                  open_["gap_bound"].abs() < VERDICTS.margin)


def _replicated(values: np.ndarray, half: float) -> list[pd.DataFrame]:
    """K replicate fairness tables of one DP row per cell: ``values[k, cell]`` ± ``half``."""
    out = []
    for k in range(values.shape[0]):
        out.append(pd.DataFrame({
            "audit": "toy", "strategy": "baseline", "model": [f"m{c}" for c in
                                                              range(values.shape[1])],
            "protected_attribute": "sex", "metric": DP, "value": values[k],
            "ci_low": values[k] - half, "ci_high": values[k] + half,
            "ci_method": "newcombe_hybrid_score", "p_value": 0.5, "q_value": 0.5,
            "significant": False, "note": ""}))
    return out


def test_replicates_fold_into_fairness_csv_and_keep_replicate_zero(
        rng: np.random.Generator) -> None:
    """At K = 5 fairness.csv's value, interval and p are the combination's, rep0_* replicate
    0's own, and a deployed system's row (no replicates) keeps its numbers as its rep0_*."""
    values = rng.normal(0.05, 0.02, (5, 4))
    tables = _replicated(values, 0.03)
    combined = combine_gaps(tables, audit="toy", seed_mode="split", fraction=0.2,
                            confidence=0.95, alpha=0.05, verdicts=VERDICTS)
    deployed = {**tables[0].iloc[0].to_dict(), "strategy": "deployed", "model": "tool",
                "value": -0.2, "ci_low": -0.25, "ci_high": -0.15, "p_value": 0.001}
    main = pd.concat([tables[0], pd.DataFrame([deployed])], ignore_index=True).reindex(
        columns=list(FAIRNESS_COLUMNS))
    out, _ = gap_claims_table(main, NO_PAIRS, combined=combined, confidence=0.95, alpha=0.05,
                              verdicts=VERDICTS)
    assert tuple(out.columns) == fairness_columns(True)
    np.testing.assert_array_equal(out["value"].iloc[:4], combined["value"])
    np.testing.assert_array_equal(out["ci_low"].iloc[:4], combined["ci_low"])
    np.testing.assert_array_equal(out["rep0_value"].iloc[:4], values[0])
    assert set(out["ci_method"].iloc[:4]) == {"random_effects_t"}
    system = out.iloc[4]
    assert (system["value"], system["rep0_value"], system["verdict"]) == (-0.2, -0.2, "gap")


def test_a_k_replicate_effect_is_never_significant_with_an_interval_reaching_zero(
        rng: np.random.Generator) -> None:
    """Over random five-replicate effect tables (any spread, any family size), effects.csv's
    significant implies its interval excludes 0, and its verdict is reduced or increased
    exactly where significant."""
    for trial in range(30):
        cells = int(rng.integers(5, 60))
        centre = rng.normal(0, 0.05, cells)
        values = centre + rng.normal(0, rng.uniform(0.001, 0.05), (5, cells))
        half = rng.uniform(0.005, 0.08)
        tables = [pd.DataFrame({
            "audit": "toy", "strategy": "in_processing", "reference": "baseline",
            "model": [f"m{c}" for c in range(cells)], "protected_attribute": "sex",
            "metric": DP, "value": values[k], "ci_low": values[k] - half,
            "ci_high": values[k] + half, "ci_method": "paired", "p_value": 0.5,
            "q_value": 0.5, "significant": False, "note": ""}) for k in range(5)]
        combined = combine_effects(tables, audit="toy", seed_mode="split", fraction=0.2,
                                   confidence=0.95, alpha=float(rng.choice([0.05, 0.1])),
                                   verdicts=VERDICTS)
        out = effect_claims_table(tables[0], combined=combined, confidence=0.95, alpha=0.05,
                                  verdicts=VERDICTS)
        excludes = (out["ci_low"] > 0) | (out["ci_high"] < 0)
        assert not (out["significant"] & ~excludes).any(), trial
        np.testing.assert_array_equal(out["significant"],
                                      out["verdict"].isin(["reduced", "increased"]))


def _plain(strategy: str, metric: str, value: float, half: float, *, model: str = "m",
           p: float = 0.5) -> dict[str, object]:
    """A row of one fit with a symmetric 95 % interval ``value ± half``."""
    return {"audit": "toy", "strategy": strategy, "model": model, "protected_attribute": "sex",
            "metric": metric, "value": value, "ci_low": value - half, "ci_high": value + half,
            "ci_method": "newcombe_hybrid_score", "p_value": p, "note": ""}


def test_the_claims_family_holds_the_pre_specified_metric_alone() -> None:
    """Ten parity gaps of the claims metric at TOST p 0.01 each, beside sixty rows of another
    metric far from parity: in the family of the claims they are parity, in the audit-wide
    family (the conservative view) inconclusive; the other metric's rows have no claim q."""
    half = 1.96 * 0.05 / sps.norm.ppf(0.99)  # TOST p = 0.01 at value 0
    rows = [_plain("baseline", DP, 0.0, half, model=f"m{i}") for i in range(10)]
    rows += [_plain("baseline", "accuracy_equality_diff", 0.3, 0.05, model=f"m{i}")
             for i in range(60)]
    out = _claims(rows)
    claims, other = out.iloc[:10], out.iloc[10:]
    assert claims["claim_q_value"].tolist() == pytest.approx([0.01] * 10, rel=1e-3)
    assert (claims["equivalence_q_value"] > 0.05).all()
    assert set(claims["verdict"]) == {"parity"}
    assert set(claims["conservative_verdict"]) == {"inconclusive"}
    assert other["claim_q_value"].isna().all()
    assert (other["verdict"] == other["conservative_verdict"]).all()
    assert (claims["gap_bound"].abs() < VERDICTS.margin).all()


def test_another_claims_metric_moves_the_family() -> None:
    """verdicts.claims names the family: with accuracy equality as the claims the parity
    gaps above are no claims and stay inconclusive."""
    half = 1.96 * 0.05 / sps.norm.ppf(0.99)
    rows = [_plain("baseline", DP, 0.0, half, model=f"m{i}") for i in range(10)]
    rows += [_plain("baseline", "accuracy_equality_diff", 0.3, 0.05, model=f"m{i}")
             for i in range(60)]
    table = pd.DataFrame(rows).reindex(columns=list(FAIRNESS_COLUMNS))
    out = gap_claims_table(table, NO_PAIRS, combined=None, confidence=0.95, alpha=0.05,
                           verdicts=VerdictsConfig(claims="accuracy_equality"))[0]
    assert out["claim_q_value"].iloc[:10].isna().all()
    assert set(out["verdict"].iloc[:10]) == {"inconclusive"}


def test_min_margin_is_the_narrow_half_width_and_too_wide_is_noted() -> None:
    """min_margin is the half-width of the 1 - 2 alpha interval (each side of the 95 %
    interval over its quantile); a cell of 40 rows cannot reach ±0.05 at any estimate and its
    inconclusive verdict says so; 20,000 rows can."""
    out = _claims([_row("baseline", 40, 0.4, 0.4), _row("unawareness", 20_000, 0.4, 0.4)])
    z = sps.norm.ppf(0.95) / sps.norm.ppf(0.975)
    expected = z * (out["ci_high"] - out["ci_low"]) / 2
    np.testing.assert_allclose(out["min_margin"], expected, rtol=1e-12)
    assert out["min_margin"].iloc[0] > 0.05 > out["min_margin"].iloc[1]
    assert "parity_not_reachable" in out["note"].iloc[0].split(";")
    assert "parity_not_reachable" not in str(out["note"].iloc[1])


def test_an_interval_exactly_as_wide_as_the_margin_cannot_reach_it() -> None:
    """A narrow interval whose half-width equals the margin fits no estimate inside it."""
    half = 0.05 * sps.norm.ppf(0.975) / sps.norm.ppf(0.95)
    out = _claims([_plain("baseline", DP, 0.0, half)])
    assert out["min_margin"].iloc[0] == pytest.approx(0.05, rel=1e-12)
    assert out["verdict"].iloc[0] == "inconclusive"
    assert "parity_not_reachable" in out["note"].iloc[0]


def test_k_replicate_disparate_impact_is_tested_on_the_log_ratio() -> None:
    """Five replicates with ratios 0.9965-1.0018, each interval ×/÷ 1.05: the K-replicate
    ratio is parity within [0.8, 1.25] (on the log scale: an estimate of log 1 ≈ 0, far from
    log 0.8 and log 1.25), never judged as a ratio of 1 against a margin around 0."""
    di = "disparate_impact_ratio"
    ratios = np.array([0.9965, 0.9990, 1.0000, 1.0007, 1.0018])
    tables = [pd.DataFrame({
        "audit": "toy", "strategy": "baseline", "model": ["m0"], "protected_attribute": "sex",
        "metric": di, "value": [r], "ci_low": [r / 1.05], "ci_high": [r * 1.05],
        "ci_method": "katz_log", "p_value": 0.9, "q_value": 0.9, "significant": False,
        "note": ""}) for r in ratios]
    combined = combine_gaps(tables, audit="toy", seed_mode="split", fraction=0.2,
                            confidence=0.95, alpha=0.05, verdicts=VERDICTS)
    main = tables[0].reindex(columns=list(FAIRNESS_COLUMNS))
    out, _ = gap_claims_table(main, NO_PAIRS, combined=combined, confidence=0.95, alpha=0.05,
                              verdicts=VERDICTS)
    assert out["value"].iloc[0] == pytest.approx(np.exp(np.log(ratios).mean()))
    assert out["verdict"].iloc[0] == "parity"
    assert combined["verdict"].iloc[0] == "" and out["equivalence_q_value"].iloc[0] < 1e-6


def test_draws_exactly_on_the_margin_are_not_inside_it() -> None:
    """An effect whose interval is the single point +0.05 (every draw on the margin) is not
    no_change, and a gap at exactly -0.05 with no spread is not parity: inside is strict."""
    effect = pd.DataFrame([{
        "audit": "toy", "strategy": "in_processing", "reference": "baseline",
        "model": "m", "protected_attribute": "sex", "metric": DP, "value": 0.05,
        "ci_low": 0.05, "ci_high": 0.05, "ci_method": "paired_expanded_percentile",
        "p_value": 1e-6, "q_value": 1e-6, "significant": True, "note": ""}])
    shown = effect_claims_table(effect, combined=None, confidence=0.95, alpha=0.05,
                                verdicts=VERDICTS)
    assert shown["equivalence_p_value"].iloc[0] == 1.0
    assert shown["verdict"].iloc[0] != "no_change"
    gap = _claims([_plain("baseline", DP, -0.05, 0.0)])
    assert gap["equivalence_p_value"].iloc[0] == 1.0 and gap["verdict"].iloc[0] != "parity"
