"""Tests of faircode.evaluate.effects: effects.csv, and its K-replicate estimate at K > 1."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faircode.audit.data import load_audit
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.cells import ModelFamily, Strategy
from faircode.core.config import BenchmarkConfig, StatsConfig, VerdictsConfig
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate import effects as fx
from faircode.evaluate.claims import effect_columns
from faircode.evaluate.combine import EFFECTS_STABILITY_COLUMNS, combine_effects
from faircode.evaluate.tables import AuditResults
from faircode.evaluate.write import write_audit
from faircode.grid.predictions import AuditPredictions
from faircode.pipeline.run import evaluate, fit
from faircode.provenance.state import provenance
from faircode.stats.paired import (
    EFFECT_METRICS,
    paired_effects,
)

SMALL = {"mitigation.max_iter": 2, "stats.n_resamples": 40, "stats.n_permutations": 40}
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def insurance(audit_repo: Any) -> PreparedAudit:
    """The prepared insurance audit (1,335 rows, two attributes)."""
    return prepare(load_audit(audit_repo.manifests["insurance_denial"]))


@pytest.fixture(scope="module")
def one(insurance: PreparedAudit) -> AuditResults:
    """Insurance fitted and evaluated with one seed on one worker."""
    config = BenchmarkConfig(jobs=1).with_params(SMALL)
    return evaluate(insurance, fit(insurance, config=config), config=config)


@pytest.fixture(scope="module")
def fitted_two(insurance: PreparedAudit) -> tuple[AuditPredictions, AuditResults]:
    """Insurance fitted and evaluated with two split-mode seeds on one worker."""
    config = BenchmarkConfig(jobs=1).with_params({
        "run.seeds": 2, "run.seed_mode": "split", **SMALL
    })
    predictions = fit(insurance, config=config)
    return predictions, evaluate(insurance, predictions, config=config)


@pytest.fixture(scope="module")
def two(fitted_two: tuple[AuditPredictions, AuditResults]) -> AuditResults:
    """The K = 2 split-mode results."""
    return fitted_two[1]


def _stats() -> StatsConfig:
    return BenchmarkConfig().with_params(SMALL).stats


def test_effects_have_every_comparison_model_attribute_and_metric(one: AuditResults) -> None:
    """6 comparisons x 3 families x 2 attributes x 10 metrics rows, in that order, with the
    published columns."""
    table = one.effects
    assert table is not None and tuple(table.columns) == effect_columns()
    assert len(table) == len(fx.COMPARISONS) * 3 * 2 * len(EFFECT_METRICS)
    pairs = list(dict.fromkeys(zip(table["strategy"], table["reference"], strict=True)))
    assert pairs == [(c.strategy.value, c.reference.value) for c in fx.COMPARISONS]
    assert list(table["metric"][: len(EFFECT_METRICS)]) == list(EFFECT_METRICS)


def test_fairness_effects_are_differences_of_fairness_csv_distances(one: AuditResults) -> None:
    """Δ = |gap_A − parity| − |gap_B − parity| of fairness.csv's values in the same run, bit for
    bit, and gap_strategy/gap_reference are those values."""
    assert one.effects is not None
    fair = one.fairness.set_index(["strategy", "model", "protected_attribute", "metric"])["value"]
    rows = one.effects[~one.effects["metric"].isin(["accuracy", "balanced_accuracy"])]
    checked = 0
    for r in rows.itertuples():
        a = fair[(r.strategy, r.model, r.protected_attribute, r.metric)]
        b = fair[(r.reference, r.model, r.protected_attribute, r.metric)]
        parity = 1.0 if r.metric == "disparate_impact_ratio" else 0.0
        if np.isnan(a) or np.isnan(b):
            assert np.isnan(r.value)
            continue
        assert r.value == abs(a - parity) - abs(b - parity)
        assert (r.gap_strategy, r.gap_reference) == (a, b)
        checked += 1
    assert checked > 200


def test_accuracy_effects_are_differences_of_performance_csv_values(one: AuditResults) -> None:
    """Δ accuracy and Δ balanced accuracy equal performance.csv's A − B, bit for bit."""
    assert one.effects is not None
    whole = one.performance["protected_attribute"].fillna("") == ""
    perf = one.performance[whole].set_index(
        ["strategy", "model", "metric"])["value"]
    rows = one.effects[one.effects["metric"].isin(["accuracy", "balanced_accuracy"])]
    for r in rows.itertuples():
        assert r.value == perf[(r.strategy, r.model, r.metric)] - perf[(r.reference, r.model,
                                                                         r.metric)]


def test_a_strategy_paired_with_itself_has_no_effect(insurance: PreparedAudit,
                                                     one: AuditResults) -> None:
    """With S3's cells replaced by S2's decisions, every defined S3-S2 effect is 0 with the
    interval [0, 0], both tests' p = 1, and equivalence shown at every level ([0, 0] lies
    inside ±δ: the smallest p, 1 / (B + 1))."""
    s2 = {c.family: c for c in one.cells if c.strategy == Strategy.UNAWARENESS_PROXY_REMOVAL}
    cells = [dataclasses.replace(s2[c.family], strategy=Strategy.IN_PROCESSING)
             if c.strategy == Strategy.IN_PROCESSING else c for c in one.cells]
    table = fx.score_effects(insurance, cells, seed=7, stats=_stats()).table
    rows = table[(table["strategy"] == "in_processing")
                 & (table["reference"] == "unawareness_proxy_removal")]
    defined = rows[rows["value"].notna()]
    assert len(defined) >= 50
    assert (defined["value"] == 0).all() and (defined["ci_low"] == 0).all()
    assert (defined["ci_high"] == 0).all() and (defined["p_value"] == 1).all()
    assert (defined["swap_p_value"] == 1).all() and not defined["significant"].any()
    assert (defined["equivalence_p_value"] == 1 / (SMALL["stats.n_resamples"] + 1)).all()


def test_rows_are_the_engine_at_the_comparison_model_attribute_seed(
    insurance: PreparedAudit, one: AuditResults
) -> None:
    """S4-S2 random forest on the second attribute is paired_effects on the two cells'
    oriented decisions at child_seed(master, EFFECTS, 5, 1, 1)."""
    assert one.effects is not None
    cells = {(c.strategy, c.family): c for c in one.cells}
    a = cells[(Strategy.POST_PROCESSING, ModelFamily.RANDOM_FOREST)].decided
    b = cells[(Strategy.UNAWARENESS_PROXY_REMOVAL, ModelFamily.RANDOM_FOREST)].decided
    assert a is not None and b is not None
    name = insurance.manifest.protected_attributes[1].name
    mask = insurance.disadvantaged[name][insurance.test_index]
    want = paired_effects(a.y_fav, a.yhat_fav, b.yhat_fav, mask, n_resamples=40,
                          n_permutations=40, seed=child_seed(
                              insurance.manifest.random_state, Stream.EFFECTS, 5, 1, 1))
    got = one.effects[(one.effects["strategy"] == "post_processing")
                      & (one.effects["reference"] == "unawareness_proxy_removal")
                      & (one.effects["model"] == "random_forest")
                      & (one.effects["protected_attribute"] == name)]
    assert list(got["value"]) == [e.value for e in want]
    assert list(got["ci_low"]) == [e.ci_low for e in want]
    assert list(got["p_value"]) == [e.p_value for e in want]
    assert list(got["swap_p_value"]) == [e.swap_p_value for e in want]
    assert list(got["ci_method"]) == [e.ci_method for e in want]


def _family_rows(p: list[float], **columns: Any) -> pd.DataFrame:
    """Four effect rows of one comparison with the given p-values (intervals below 0)."""
    return pd.DataFrame({
        "strategy": "in_processing", "reference": "baseline", "model": "random_forest",
        "protected_attribute": "age",
        "metric": ["demographic_parity_diff", "equal_opportunity_diff", "tpr_gap", "accuracy"],
        "value": -0.1, "ci_low": -0.2, "ci_high": -0.01, "p_value": p,
        "equivalence_p_value": p, "swap_p_value": p, "note": "", **columns})


def test_tpr_gap_enters_each_family_once_through_equal_opportunity() -> None:
    """BH over the non-tpr_gap p-values (0.01, 0.04, 0.03 -> q 0.03, 0.04, 0.04), in each of
    the three families; tpr_gap takes equal opportunity's q and is not counted in m."""
    out = fx.effect_q_values(_family_rows([0.01, 0.04, 0.04, 0.03]), alpha=0.035)
    for column in ("q_value", "equivalence_q_value", "swap_q_value"):
        assert list(out[column]) == pytest.approx([0.03, 0.04, 0.04, 0.04]), column
    assert list(out["significant"]) == [True, False, False, False]
    assert list(out["verdict"]) == ["reduced", "inconclusive", "inconclusive", "inconclusive"]


def test_significant_needs_the_interval_to_exclude_zero() -> None:
    """q below alpha with an interval reaching 0 is not significant (at another confidence
    than 1 - alpha a test could disagree with the interval shown; the interval wins)."""
    out = fx.effect_q_values(_family_rows([0.001] * 4, ci_high=[0.01, -0.01, -0.01, 0.0]),
                             alpha=0.05)
    assert list(out["significant"]) == [False, True, True, False]


def test_verdicts_follow_the_tests_and_the_notes() -> None:
    """Significant and below 0: reduced; equivalent only: no_change; a degenerate note or an
    undefined value: uninformative."""
    rows = _family_rows([0.001, 0.5, 0.5, 0.5], equivalence_p_value=[0.5, 0.001, 0.001, 0.5],
                        note=["", "", "degenerate_decisions", ""],
                        value=[-0.1, -0.01, -0.01, np.nan])
    assert list(fx.effect_q_values(rows, alpha=0.05)["verdict"]) == [
        "reduced", "no_change", "uninformative", "uninformative"]


@settings(max_examples=25)
@given(st.lists(st.integers(0, 25), min_size=16, max_size=16), st.integers(0, 2**16),
       st.sampled_from([0.9, 0.95, 0.99]))
def test_significant_is_never_true_with_an_interval_containing_zero(
    cells: list[int], seed: int, confidence: float
) -> None:
    """Over random paired tables, effects.csv's rules (engine rows, their family's q) never
    call an effect significant whose interval contains 0."""
    joint = np.array(cells, dtype=np.int64).reshape(2, 8)
    joint[:, 0] += 1
    index = np.concatenate([np.repeat(np.arange(8) + 8 * g, joint[g]) for g in (0, 1)])
    y, a, b, dis = (index >> 2) & 1, (index >> 1) & 1, index & 1, index < 8
    rows = pd.DataFrame([{"strategy": "s", "reference": "r", "model": "m",
                          "protected_attribute": "p", "metric": e.metric, "value": e.value,
                          "ci_low": e.ci_low, "ci_high": e.ci_high, "p_value": e.p_value,
                          "equivalence_p_value": e.equivalence_p_value,
                          "swap_p_value": e.swap_p_value, "note": e.note}
                         for e in paired_effects(y, a, b, dis, seed=seed, n_resamples=50,
                                                 n_permutations=10, confidence=confidence)])
    out = fx.effect_q_values(rows, alpha=0.05)
    contains = (out["ci_low"] <= 0) & (out["ci_high"] >= 0)
    assert not (out["significant"] & contains).any()
    assert set(out.loc[contains, "verdict"]) <= {"no_change", "inconclusive", "uninformative"}


def test_skipped_and_degenerate_cells_give_nan_rows_with_a_note(
    insurance: PreparedAudit, one: AuditResults
) -> None:
    """A skipped S3 forest makes its comparisons NaN with note not_run; a degenerate S2 forest
    makes every comparison against S2 NaN with degenerate_decisions; sizes are still given."""
    cells = []
    for c in one.cells:
        if (c.strategy, c.family) == (Strategy.IN_PROCESSING, ModelFamily.RANDOM_FOREST):
            c = dataclasses.replace(c, skipped="failed to fit", decided=None)
        elif (c.strategy, c.family) == (Strategy.UNAWARENESS_PROXY_REMOVAL,
                                        ModelFamily.RANDOM_FOREST):
            c = dataclasses.replace(c, degenerate=True)
        cells.append(c)
    table = fx.score_effects(insurance, cells, seed=7, stats=_stats()).table
    forest = table[table["model"] == "random_forest"]
    s3_s0 = forest[(forest["strategy"] == "in_processing") & (forest["reference"] == "baseline")]
    vs_s2 = forest[forest["reference"] == "unawareness_proxy_removal"]
    assert s3_s0["value"].isna().all() and set(s3_s0["note"]) == {fx.NOT_RUN_NOTE}
    assert vs_s2["value"].isna().all()
    assert set(vs_s2[vs_s2["strategy"] == "post_processing"]["note"]) == {
        "degenerate_decisions"}
    assert s3_s0["p_value"].isna().all() and not s3_s0["significant"].any()
    assert (s3_s0["n_disadvantaged"] + s3_s0["n_advantaged"] == len(insurance.test_index)).all()


def test_one_seed_writes_effects_csv_and_says_training_variance_is_not_included(
    insurance: PreparedAudit, one: AuditResults, tmp_path: Path
) -> None:
    """K = 1 writes effects.csv (no effects_stability.csv) and run.json says training variance
    is not included."""
    import json

    folder = write_audit(insurance, one, config=BenchmarkConfig(jobs=1).with_params(SMALL),
                         out_dir=tmp_path, provenance_record=provenance())
    assert (folder / "effects.csv").is_file() and not (folder / "effects_stability.csv").exists()
    run = json.loads((folder / "run.json").read_text())
    assert run["training_variance"]["included"] is False
    assert "not included" in run["training_variance"]["note"]
    assert run["seeds"]["effects"] == "SeedSequence(master, spawn_key=(8, comparison, model, " \
                                      "attribute))"
    written = pd.read_csv(folder / "effects.csv", dtype={"note": str}, keep_default_na=False,
                          na_values={c: ["nan", ""] for c in one.effects.columns if c != "note"})
    pd.testing.assert_frame_equal(written, one.effects,
                                  check_dtype=False, check_exact=True)


def test_replicates_carry_the_k_replicate_estimate_in_effects_csv(
    one: AuditResults, two: AuditResults
) -> None:
    """At K = 2 effects.csv's value, interval and p are effects_stability.csv's K-replicate
    estimate, and replicate 0's own numbers (the K = 1 run's, bit for bit) are rep0_*."""
    assert two.effects is not None and two.effects_stability is not None
    table = two.effects_stability
    assert tuple(table.columns) == EFFECTS_STABILITY_COLUMNS
    assert set(table["seeds"]) == {2} and set(table["seed_mode"]) == {"split"}
    for rep0, column in (("rep0_value", "value"), ("rep0_ci_low", "ci_low"),
                         ("rep0_ci_high", "ci_high"), ("rep0_p_value", "p_value")):
        np.testing.assert_array_equal(two.effects[rep0], one.effects[column])
    np.testing.assert_array_equal(two.effects["value"], table["value"])
    np.testing.assert_array_equal(two.effects["ci_low"], table["ci_low"])
    np.testing.assert_array_equal(two.effects["verdict"], table["verdict"])
    assert set(two.effects["ci_method"].dropna()) <= {"random_effects_t"}


def test_combination_is_the_mean_of_each_replicates_own_effect_with_its_interval(
    insurance: PreparedAudit, two: AuditResults
) -> None:
    """Every defined effect of the K = 2 run is the mean of its two replicates' effects
    (effects_replicates.csv), with the interval mean ± t_ν·√(s_b²/2 + f·w̄) of their own
    intervals' halves, f the test share of the audit's rows."""
    from scipy import stats as sps

    rows = two.effect_replicates
    assert rows is not None and set(rows["replicate"]) == {0, 1}
    keys = ["strategy", "reference", "model", "protected_attribute", "metric"]
    both = rows[rows["replicate"] == 0].merge(rows[rows["replicate"] == 1], on=keys,
                                              suffixes=("_0", "_1"))
    out = both.merge(two.effects, on=keys)
    defined = out[out[["value_0", "value_1", "ci_low_0", "ci_low_1"]].notna().all(axis=1)
                  & ~out["note"].fillna("").str.contains("degenerate")]
    assert len(defined) > 20
    z = sps.norm.ppf(0.975)
    f = len(insurance.test_index) / len(insurance.y)
    mean = (defined["value_0"] + defined["value_1"]) / 2
    between = (defined["value_0"] - defined["value_1"]) ** 2 / 2
    w_low = (((defined["value_0"] - defined["ci_low_0"]) / z) ** 2
             + ((defined["value_1"] - defined["ci_low_1"]) / z) ** 2) / 2
    total = between / 2 + f * w_low
    nu = np.where(between > 0, total / (between / 2), np.inf)
    np.testing.assert_allclose(defined["value"], mean, rtol=1e-12)
    np.testing.assert_allclose(defined["ci_low"],  # an effect lies in [-1, 1]: so does its interval
                               np.clip(mean - sps.t.ppf(0.975, nu) * np.sqrt(total), -1, 1),
                               rtol=1e-9)


def test_replicate_zero_effects_are_computed_once(insurance: PreparedAudit,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A K = 3 evaluate computes the effects of replicates 0, 1 and 2 once each."""
    config = BenchmarkConfig(jobs=1).with_params({"run.seeds": 3, **SMALL})
    predictions = fit(insurance, config=config)
    calls: list[int] = []
    real = fx.score_effects

    def counting(*args: Any, **kwargs: Any) -> fx.ReplicateEffects:
        calls.append(kwargs.get("replicate", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(fx, "score_effects", counting)
    evaluate(insurance, predictions, config=config)
    assert sorted(calls) == [0, 1, 2]


def test_combine_effects_matches_hand_computed_summaries() -> None:
    """Three replicates of one effect, one degenerate (left out): mean, SD, min, max, share
    significant, sign flips and the notes, by hand; with two of three informative the row is
    informative (needs ⌈0.6·3⌉ = 2)."""
    def table(value: float, note: str, significant: bool) -> pd.DataFrame:
        return pd.DataFrame({
            "audit": "toy", "strategy": "in_processing", "reference": "baseline",
            "model": "random_forest", "protected_attribute": "age",
            "metric": ["demographic_parity_diff"], "value": [value], "ci_low": [value - 0.04],
            "ci_high": [value + 0.04], "significant": [significant], "note": [note]})

    tables = [table(-0.10, "", True), table(0.30, "degenerate_decisions", False),
              table(0.02, "", False)]
    out = combine_effects(tables, audit="toy", seed_mode="model", fraction=1.0,
                          confidence=0.95, alpha=0.05, verdicts=VerdictsConfig()).iloc[0]
    assert out["value"] == pytest.approx(-0.04)
    assert out["sd_between"] == pytest.approx(0.12 / np.sqrt(2))
    assert (out["min"], out["max"], out["rep0_value"]) == (-0.10, 0.02, -0.10)
    assert (out["n_informative"], out["n_required"], out["n_degenerate"]) == (2, 2, 1)
    assert out["share_significant"] == pytest.approx(1 / 3) and bool(out["sign_flips"])
    assert out["note"] == "degenerate_replicates:1" and np.isfinite(out["p_value"])


def test_too_few_informative_replicates_make_an_effect_uninformative() -> None:
    """Two of five replicates informative (three degenerate): below ⌈0.6·5⌉ = 3, the row's
    p-values are NaN and its note says degenerate_decisions."""
    def table(value: float, note: str) -> pd.DataFrame:
        return pd.DataFrame({
            "audit": "toy", "strategy": "in_processing", "reference": "baseline",
            "model": "random_forest", "protected_attribute": "age",
            "metric": ["demographic_parity_diff"], "value": [value], "ci_low": [value - 0.01],
            "ci_high": [value + 0.01], "significant": [False], "note": [note]})

    tables = [table(-0.1, ""), table(-0.1, "degenerate_decisions"), table(-0.12, ""),
              *(table(0.0, "degenerate_decisions") for _ in range(2))]
    out = combine_effects(tables, audit="toy", seed_mode="split", fraction=0.2,
                          confidence=0.95, alpha=0.05, verdicts=VerdictsConfig()).iloc[0]
    assert (out["n_informative"], out["n_required"]) == (2, 3)
    assert np.isnan(out["p_value"]) and np.isnan(out["equivalence_p_value"])
    assert out["note"].split(";")[-1] == "degenerate_decisions"


@pytest.mark.slow
def test_one_seed_tables_are_the_committed_ones(audit_repo: Any, tmp_path: Path) -> None:
    """german_credit_lending at the committed params and K = 1: the four CSVs equal
    results/german_credit_lending/ byte for byte (this issue only adds files)."""
    data = prepare(load_audit(audit_repo.manifests["german_credit_lending"]))
    config = BenchmarkConfig(jobs=2)
    results = evaluate(data, fit(data, config=config), config=config)
    folder = write_audit(data, results, config=config, out_dir=tmp_path,
                         provenance_record=provenance())
    for table in ("fairness", "performance", "intersectional", "counterfactual"):
        committed = REPO / "results" / "german_credit_lending" / f"{table}.csv"
        assert (folder / f"{table}.csv").read_bytes() == committed.read_bytes()
