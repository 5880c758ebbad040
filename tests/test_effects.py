"""Tests of faircode.evaluate.effects: effects.csv and its combination over replicates."""

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
from faircode.core.config import BenchmarkConfig, StatsConfig
from faircode.core.provenance import provenance
from faircode.core.seeds import Stream, child_seed, replicate_seed
from faircode.evaluate import effects as fx
from faircode.evaluate.tables import AuditResults
from faircode.evaluate.write import write_audit
from faircode.grid.predictions import AuditPredictions
from faircode.pipeline.run import evaluate, fit
from faircode.stats.paired import (
    EFFECT_METRICS,
    combine_replicates,
    paired_draws,
    paired_effects,
)

SMALL = {"max_iter": 2, "n_resamples": 40, "n_permutations": 40}
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def insurance(audit_repo: Any) -> PreparedAudit:
    """The prepared insurance audit (1,335 rows, two attributes)."""
    return prepare(load_audit(audit_repo.manifests["insurance_denial"]))


@pytest.fixture(scope="module")
def one(insurance: PreparedAudit) -> AuditResults:
    """Insurance fitted and evaluated with one seed on one worker."""
    config = BenchmarkConfig(jobs=1, **SMALL)
    return evaluate(insurance, fit(insurance, config=config), config=config)


@pytest.fixture(scope="module")
def fitted_two(insurance: PreparedAudit) -> tuple[AuditPredictions, AuditResults]:
    """Insurance fitted and evaluated with two split-mode seeds on one worker."""
    config = BenchmarkConfig(jobs=1, seeds=2, seed_mode="split", **SMALL)
    predictions = fit(insurance, config=config)
    return predictions, evaluate(insurance, predictions, config=config)


@pytest.fixture(scope="module")
def two(fitted_two: tuple[AuditPredictions, AuditResults]) -> AuditResults:
    """The K = 2 split-mode results."""
    return fitted_two[1]


def _stats() -> StatsConfig:
    return BenchmarkConfig(**SMALL).stats


def test_effects_have_every_comparison_model_attribute_and_metric(one: AuditResults) -> None:
    """6 comparisons x 3 families x 2 attributes x 10 metrics rows, in that order, with the
    published columns."""
    table = one.effects
    assert table is not None and tuple(table.columns) == fx.EFFECT_COLUMNS
    assert len(table) == 6 * 3 * 2 * len(EFFECT_METRICS)
    pairs = list(dict.fromkeys(zip(table["strategy"], table["reference"], strict=True)))
    assert pairs == [(a.value, b.value) for a, b in fx.COMPARISONS]
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
    assert (defined["equivalence_p_value"] == 1 / (SMALL["n_resamples"] + 1)).all()


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

    folder = write_audit(insurance, one, config=BenchmarkConfig(jobs=1, **SMALL),
                         out_dir=tmp_path, provenance_record=provenance())
    assert (folder / "effects.csv").is_file() and not (folder / "effects_stability.csv").exists()
    run = json.loads((folder / "run.json").read_text())
    assert run["training_variance"]["included"] is False
    assert "not included" in run["training_variance"]["note"]
    assert run["seeds"]["effects"] == "SeedSequence(master, spawn_key=(8, comparison, model, " \
                                      "attribute))"
    written = pd.read_csv(folder / "effects.csv", dtype={"note": str}, keep_default_na=False,
                          na_values={c: ["nan", ""] for c in fx.EFFECT_COLUMNS if c != "note"})
    pd.testing.assert_frame_equal(written, one.effects,
                                  check_dtype=False, check_exact=True)


def test_replicates_keep_effects_csv_and_add_the_combination(
    one: AuditResults, two: AuditResults
) -> None:
    """effects.csv of a K = 2 run is the K = 1 one bit for bit; effects_stability.csv has its
    rows, 2 seeds and replicate 0's values."""
    assert two.effects is not None and two.effects_stability is not None
    pd.testing.assert_frame_equal(two.effects, one.effects, check_exact=True)
    table = two.effects_stability
    assert tuple(table.columns) == fx.EFFECTS_STABILITY_COLUMNS
    np.testing.assert_array_equal(table["value_replicate0"], one.effects["value"])
    assert set(table["seeds"]) == {2} and set(table["seed_mode"]) == {"split"}


def test_combination_pools_each_replicates_own_paired_draws(
    insurance: PreparedAudit, fitted_two: tuple[AuditPredictions, AuditResults]
) -> None:
    """The combined interval of S3-S0 LR (first attribute) is the paired interval of replicate
    0's and replicate 1's draws (each from its own decisions, test rows and seed) pooled."""
    from faircode.evaluate.score import score_cell
    from faircode.evaluate.stability import _replicate_data

    predictions, two = fitted_two
    master = insurance.manifest.random_state
    view = _replicate_data(insurance, predictions.replicates[0].test_index)
    assert not np.array_equal(view.test_index, insurance.test_index)  # split mode
    later = [score_cell(view, r.cell, rule=two.rule, stats=_stats(),
                        degenerate=BenchmarkConfig().degenerate, master=replicate_seed(master, 1))
             for r in predictions.replicates if r.replicate == 1]
    name = insurance.manifest.protected_attributes[0].name
    pooled = []
    for data, seed, cells in ((insurance, master, two.cells),
                              (view, replicate_seed(master, 1), later)):
        by = {(c.strategy, c.family): c.decided for c in cells}
        a = by[(Strategy.IN_PROCESSING, ModelFamily.LOGISTIC_REGRESSION)]
        b = by[(Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION)]
        assert a is not None and b is not None
        pooled.append(paired_draws(a.y_fav, a.yhat_fav, b.yhat_fav,
                                   data.disadvantaged[name][data.test_index], n_resamples=40,
                                   seed=child_seed(seed, Stream.EFFECTS, 2, 0, 0)))
    combined = combine_replicates(pooled, confidence=0.95)
    low, high = [c.ci_low for c in combined], [c.ci_high for c in combined]
    assert two.effects_stability is not None
    table = two.effects_stability
    got = table[(table["strategy"] == "in_processing") & (table["reference"] == "baseline")
                & (table["model"] == "logistic_regression")
                & (table["protected_attribute"] == name)]
    np.testing.assert_array_equal(got["combined_ci_low"], low)
    np.testing.assert_array_equal(got["combined_ci_high"], high)
    values = np.stack([pooled[0].value, pooled[1].value])
    np.testing.assert_allclose(got["mean"], np.nanmean(values, axis=0), rtol=0, atol=1e-15)


def test_replicate_zero_effects_are_computed_once(insurance: PreparedAudit,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A K = 3 evaluate computes the effects of replicates 0, 1 and 2 once each."""
    config = BenchmarkConfig(jobs=1, seeds=3, **SMALL)
    predictions = fit(insurance, config=config)
    calls: list[int] = []
    real = fx.score_effects

    def counting(*args: Any, **kwargs: Any) -> fx.ReplicateEffects:
        calls.append(kwargs.get("replicate", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(fx, "score_effects", counting)
    evaluate(insurance, predictions, config=config)
    assert sorted(calls) == [0, 1, 2]


def test_combine_matches_hand_computed_summaries(rng: np.random.Generator) -> None:
    """Mean, SD, min, max, share significant, sign flips and the pooled interval of a block
    over three replicates, one of them degenerate (excluded), by hand."""
    n = 200
    y = (rng.random(n) < 0.5).astype(np.int64)
    dis = rng.random(n) < 0.4
    draws, tables = [], []
    for k in range(3):
        b = (rng.random(n) < 0.5).astype(np.int64)
        a = np.where(rng.random(n) < 0.7, b, 1 - b)
        d = paired_draws(y, a, b, dis, seed=k, n_resamples=30)
        degenerate = k == 1
        draws.append(None if degenerate else d)
        tables.append(pd.DataFrame({
            "audit": "toy", "strategy": "in_processing", "reference": "baseline",
            "model": "random_forest", "protected_attribute": "age", "metric": EFFECT_METRICS,
            "value": np.full(len(EFFECT_METRICS), np.nan) if degenerate else d.value,
            "ci_method": "paired_signed_box", "significant": [k == 0] * len(EFFECT_METRICS),
            "note": "degenerate_decisions" if degenerate else ""}))
    reps = [fx.ReplicateEffects(k, k, t, (dr,)) for k, (t, dr) in enumerate(
        zip(tables, draws, strict=True))]
    out = fx.combine(reps, seed_mode="model", confidence=0.9)
    used = [d for d in draws if d is not None]
    values = np.stack([d.value for d in used])
    combined = combine_replicates(used, confidence=0.9)
    low, high = [c.ci_low for c in combined], [c.ci_high for c in combined]
    dp = out.iloc[0]
    assert dp["mean"] == pytest.approx(values[:, 0].mean())
    assert dp["sd_between"] == pytest.approx(abs(values[0, 0] - values[1, 0]) / np.sqrt(2))
    assert (dp["min"], dp["max"]) == (values[:, 0].min(), values[:, 0].max())
    assert dp["n_defined"] == 2 and dp["share_significant"] == pytest.approx(1 / 3)
    assert bool(dp["sign_flips"]) == bool(values[:, 0].min() < 0 < values[:, 0].max())
    np.testing.assert_array_equal(out["combined_ci_low"], low)
    np.testing.assert_array_equal(out["combined_ci_high"], high)
    assert set(out["n_degenerate"]) == {1} and set(out["note"]) == {"degenerate_decisions"}


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
