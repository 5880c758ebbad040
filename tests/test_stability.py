"""Tests of faircode.evaluate.stability: training replicates across seeds, their summary table."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from faircode.audit.data import load_audit
from faircode.audit.decision import DecisionRule
from faircode.audit.prepared import PreparedAudit, prepare, replicate_split
from faircode.core.cells import ModelFamily, Strategy, grid_cells
from faircode.core.config import BenchmarkConfig, VerdictsConfig, params_from_mapping
from faircode.core.errors import ConfigError, DataError
from faircode.core.seeds import Stream, child_seed, replicate_seed
from faircode.evaluate.combine import combine_gaps
from faircode.evaluate.stability import (
    STABILITY_COLUMNS,
    score_replicate,
)
from faircode.evaluate.tables import AuditResults
from faircode.evaluate.write import write_audit
from faircode.grid.fit import fit_replicate
from faircode.grid.predictions import AuditPredictions, load_predictions, save_predictions
from faircode.pipeline.cli import main
from faircode.pipeline.run import evaluate, fit
from faircode.provenance.state import provenance
from faircode.stats.metrics import FAIRNESS_METRICS, fairness_metrics, orient

SMALL = {"mitigation.max_iter": 2, "stats.n_resamples": 40, "stats.n_permutations": 40}
TABLES = ("fairness", "performance", "intersectional", "counterfactual")


@pytest.fixture(scope="module")
def insurance(audit_repo: Any) -> PreparedAudit:
    """The prepared insurance audit (1,335 rows, two attributes)."""
    return prepare(load_audit(audit_repo.manifests["insurance_denial"]))


@pytest.fixture(scope="module")
def german(audit_repo: Any) -> PreparedAudit:
    """The prepared German credit audit (1,000 rows, one attribute)."""
    return prepare(load_audit(audit_repo.manifests["german_credit_lending"]))


@pytest.fixture(scope="module")
def single(insurance: PreparedAudit) -> AuditPredictions:
    """Insurance fitted with one seed (today's grid) on one worker."""
    return fit(insurance, config=BenchmarkConfig(jobs=1).with_params(SMALL))


@pytest.fixture(scope="module")
def three(insurance: PreparedAudit) -> tuple[AuditPredictions, AuditResults]:
    """Insurance fitted and evaluated with three model-mode seeds on one worker."""
    config = BenchmarkConfig(jobs=1).with_params({"run.seeds": 3, **SMALL})
    predictions = fit(insurance, config=config)
    return predictions, evaluate(insurance, predictions, config=config)


def test_replicate_zero_is_the_grid_fit_and_later_seeds_derive_from_the_master() -> None:
    """Replicate 0 uses the master seed; replicate k the first word of SeedSequence(master,
    spawn_key=(REPLICATE, k)), all distinct."""
    assert replicate_seed(42, 0) == 42
    seeds = [replicate_seed(42, k) for k in range(1, 6)]
    expected = [int(np.random.SeedSequence(42, spawn_key=(6, k)).generate_state(1)[0])
                for k in range(1, 6)]
    assert seeds == expected and int(Stream.REPLICATE) == 6
    assert len({42, *seeds}) == 6


def test_one_seed_writes_exactly_the_files_and_records_of_before(
    insurance: PreparedAudit, single: AuditPredictions, tmp_path: Path
) -> None:
    """With K = 1 no replicate is fitted, stored or summarised, and run.json has no seed keys."""
    config = BenchmarkConfig(jobs=1).with_params(SMALL)
    predictions = single
    assert predictions.replicates == () and predictions.seeds == 1
    save_predictions(predictions, tmp_path / "p", test_index=insurance.test_index,
                     train_index=insurance.train_index)
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        "cells.json", "counterfactual.parquet", "test.parquet", "tolerances.parquet",
        "train.parquet"]
    assert "replicates" not in json.loads((tmp_path / "p" / "cells.json").read_text())
    results = evaluate(insurance, predictions, config=config)
    assert results.stability is None and results.replicates is None
    folder = write_audit(insurance, results, config=config, out_dir=tmp_path / "r",
                         provenance_record=provenance())
    assert sorted(p.name for p in folder.iterdir()) == [
        "calibration.csv", "calibration_gap.csv", "counterfactual.csv", "curves.csv",
        "effects.csv", "fairness.csv", "frontier.csv", "groups.csv", "intersectional.csv",
        "matched.csv", "performance.csv", "ranking.csv", "ranking_topk.csv", "run.json"]
    run = json.loads((folder / "run.json").read_text())
    assert "seeds" not in run["config"] and "seed_mode" not in run["config"]
    assert "replicates" not in run["seeds"] and "6=" not in run["seeds"]["scheme"]


def test_replicates_keep_replicate_zero_under_its_name_and_show_the_k_estimate(
    insurance: PreparedAudit, single: AuditPredictions,
    three: tuple[AuditPredictions, AuditResults],
) -> None:
    """A K = 3 run: performance and counterfactual tables equal the K = 1 run's exactly;
    fairness.csv's rep0_* are the K = 1 value, interval and p; its value, interval and
    verdict are stability.csv's K-replicate estimate; replicate 0 of stability_replicates.csv
    is the K = 1 table."""
    one = evaluate(insurance, single, config=BenchmarkConfig(jobs=1).with_params(SMALL))
    _, results = three
    for table in ("performance", "counterfactual"):
        pd.testing.assert_frame_equal(getattr(results, table), getattr(one, table),
                                      check_exact=True)
    fair, base = results.fairness, one.fairness
    for rep0, column in (("rep0_value", "value"), ("rep0_ci_low", "ci_low"),
                         ("rep0_ci_high", "ci_high"), ("rep0_p_value", "p_value")):
        np.testing.assert_array_equal(fair[rep0], base[column])
    assert results.replicates is not None and results.stability is not None
    stability = results.stability
    for column in ("value", "ci_low", "ci_high", "p_value", "q_value", "verdict"):
        np.testing.assert_array_equal(fair[column], stability[column])
    zero = results.replicates[results.replicates["replicate"] == 0].reset_index(drop=True)
    for column in ("value", "ci_low", "ci_high", "p_value", "q_value", "significant"):
        pd.testing.assert_series_equal(zero[column], base[column], check_exact=True)
    np.testing.assert_array_equal(stability["rep0_value"], base["value"].to_numpy())


def test_replicate_zero_refit_reproduces_the_grid_cell(
    insurance: PreparedAudit, three: tuple[AuditPredictions, AuditResults]
) -> None:
    """fit_replicate(..., 0, ...) gives the grid's own predictions of a cell, bit for bit."""
    predictions, _ = three
    config = BenchmarkConfig(jobs=1).with_params({"run.seeds": 3, **SMALL})
    for strategy in (Strategy.BASELINE, Strategy.IN_PROCESSING, Strategy.POST_PROCESSING):
        family = ModelFamily.RANDOM_FOREST
        zero = fit_replicate(insurance, strategy, family, 0, config.mitigation,
                             config.replicates.seed_mode)
        cell = next(c for c in predictions.cells if (c.strategy, c.family) == (strategy, family))
        for name in ("test_score", "test_decision"):
            got, want = getattr(zero.cell, name), getattr(cell, name)
            assert (got is None) == (want is None)
            if want is not None:
                np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(zero.test_index, insurance.test_index)


def test_model_mode_refits_with_new_seeds_on_the_same_split(
    three: tuple[AuditPredictions, AuditResults], insurance: PreparedAudit
) -> None:
    """Model-mode replicates keep the prepared test rows, and a random forest's scores differ
    between replicates 0, 1 and 2 (its seed is really used)."""
    predictions, _ = three
    rf = [(r.replicate, r) for r in predictions.replicates
          if (r.cell.strategy, r.cell.family) == (Strategy.BASELINE, ModelFamily.RANDOM_FOREST)]
    assert [k for k, _ in rf] == [1, 2]
    zero = next(c for c in predictions.cells
                if (c.strategy, c.family) == (Strategy.BASELINE, ModelFamily.RANDOM_FOREST))
    scores = [zero.test_score, *(r.cell.test_score for _, r in rf)]
    for _, r in rf:
        np.testing.assert_array_equal(r.test_index, insurance.test_index)
    assert not np.array_equal(scores[0], scores[1])
    assert not np.array_equal(scores[1], scores[2])
    assert not np.array_equal(scores[0], scores[2])


def test_split_mode_draws_a_new_stratified_split_per_replicate(german: PreparedAudit) -> None:
    """Split mode: replicate 0 keeps the prepared split; replicates 1, 2 draw distinct splits
    of the same size and label share; model mode never moves it."""
    zero = replicate_split(german, replicate=0, mode="split")
    np.testing.assert_array_equal(zero[1], german.test_index)
    np.testing.assert_array_equal(replicate_split(german, replicate=1, mode="model")[1],
                                  german.test_index)
    one = replicate_split(german, replicate=1, mode="split")
    two = replicate_split(german, replicate=2, mode="split")
    for train, test in (one, two):
        assert len(test) == len(german.test_index)
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(german.y)))
        assert german.y[test].sum() == german.y[german.test_index].sum()  # stratified on y
    assert not np.array_equal(one[1], german.test_index)
    assert not np.array_equal(one[1], two[1])


def test_split_mode_with_units_never_puts_a_unit_on_both_sides(german: PreparedAudit) -> None:
    """With a unit (pairs of rows here) the replicate's split is by unit, as prepare's is."""
    paired = dataclasses.replace(german, unit=np.arange(len(german.y)) // 2)
    train, test = replicate_split(paired, replicate=3, mode="split")
    assert np.intersect1d(paired.unit[train], paired.unit[test]).size == 0
    assert len(test) > 0 and len(train) + len(test) == len(german.y)


# slow (minutes); tests/test_scheduler.py keeps the K = 1 identity across workers
@pytest.mark.slow
def test_three_seeds_are_bit_identical_for_one_and_two_workers(
    insurance: PreparedAudit, three: tuple[AuditPredictions, AuditResults]
) -> None:
    """Seeds are keyed by (replicate, grid position): two workers give the same stability
    and per-replicate tables as one, bit for bit."""
    config = BenchmarkConfig(jobs=2).with_params({"run.seeds": 3, **SMALL})
    two = evaluate(insurance, fit(insurance, config=config), config=config)
    _, one = three
    assert one.stability is not None and two.stability is not None
    pd.testing.assert_frame_equal(two.stability, one.stability, check_exact=True)
    pd.testing.assert_frame_equal(two.replicates, one.replicates, check_exact=True)


def test_store_round_trips_replicates_in_split_mode(
    german: PreparedAudit, tmp_path: Path
) -> None:
    """Saving and loading a split-mode K = 2 fit and evaluating it equals the in-memory run."""
    config = BenchmarkConfig(jobs=2).with_params({
        "run.seeds": 2, "run.seed_mode": "split", **SMALL
    })
    predictions = fit(german, config=config)
    save_predictions(predictions, tmp_path, test_index=german.test_index,
                     train_index=german.train_index)
    assert (tmp_path / "replicates.parquet").is_file()
    loaded = load_predictions(tmp_path)
    assert (loaded.seeds, loaded.seed_mode, len(loaded.replicates)) == (2, "split",
                                                                        len(grid_cells()))
    for a, b in zip(loaded.replicates, predictions.replicates, strict=True):
        np.testing.assert_array_equal(a.test_index, b.test_index)
    want = evaluate(german, predictions, config=config)
    got = evaluate(german, loaded, config=config)
    pd.testing.assert_frame_equal(got.stability, want.stability, check_exact=True)
    assert not np.array_equal(predictions.replicates[0].test_index, german.test_index)


def test_evaluating_predictions_of_another_seed_count_is_refused(
    three: tuple[AuditPredictions, AuditResults], insurance: PreparedAudit
) -> None:
    """Predictions fitted with 3 seeds cannot be evaluated under a config of 2 (re-run fit)."""
    predictions, _ = three
    with pytest.raises(DataError, match=r"run.seeds/run.seed_mode: expected 2/model .*got "
                                        r"3/model; re-run fit"):
        evaluate(insurance, predictions, config=BenchmarkConfig(jobs=1).with_params({
            "run.seeds": 2, **SMALL
        }))


def test_a_replicates_rows_are_the_metrics_of_its_own_decisions_at_its_seed(
    three: tuple[AuditPredictions, AuditResults], insurance: PreparedAudit
) -> None:
    """Replicate 1's rows of a cell equal faircode.stats.metrics.fairness_metrics of that
    replicate's oriented decisions at the row's seed child_seed(r_1, FAIRNESS, s, m, a)."""
    predictions, _ = three
    config = BenchmarkConfig(jobs=1).with_params({"run.seeds": 3, **SMALL})
    cells = [r for r in predictions.replicates if r.replicate == 1]
    rule = DecisionRule("threshold", threshold=config.models.decision_threshold)
    scores = score_replicate(insurance, cells, replicate=1, rule=rule, stats=config.stats,
                             degenerate=config.degenerate)
    s, m, a = 0, 1, 1  # baseline, random_forest, second attribute
    cell = cells[s * 3 + m].cell
    test = insurance.test_index
    y_fav, yhat_fav = orient(insurance.y[test], (cell.test_score > 0.5).astype(np.int8),
                             favourable=insurance.manifest.target.favourable)
    name = insurance.manifest.protected_attributes[a].name
    mask = insurance.disadvantaged[name][test]
    seed = child_seed(replicate_seed(insurance.manifest.random_state, 1), Stream.FAIRNESS,
                      s, m, a)
    want = fairness_metrics(y_fav, yhat_fav, mask, n_permutations=40, seed=seed,
                            n_resamples=40)
    rows = scores.fairness[(scores.fairness["strategy"] == "baseline")
                           & (scores.fairness["model"] == "random_forest")
                           & (scores.fairness["protected_attribute"] == name)]
    assert list(rows["metric"]) == list(FAIRNESS_METRICS)
    for (_, row), result in zip(rows.iterrows(), want, strict=True):
        np.testing.assert_array_equal([row["value"], row["ci_low"], row["ci_high"],
                                       row["p_value"]],
                                      [result.value, result.ci_low, result.ci_high,
                                       result.p_value])


def _tables(values: list[list[float]], notes: list[list[str]], metrics: list[str], *,
            half: float = 0.05, significant: list[list[bool]] | None = None
            ) -> list[pd.DataFrame]:
    """Hand-made replicate fairness tables: ``values[k][row]``, interval ± ``half``."""
    out = []
    for k in range(len(values)):
        value = np.asarray(values[k], dtype=float)
        out.append(pd.DataFrame({
            "audit": "toy", "strategy": "baseline", "model": "random_forest",
            "protected_attribute": "age", "metric": metrics, "value": value,
            "ci_low": value - half, "ci_high": value + half, "p_value": 0.5, "q_value": 0.5,
            "significant": significant[k] if significant else False, "note": notes[k]}))
    return out


def _combine(tables: list[pd.DataFrame], *, fraction: float = 1.0,
             share: float = 0.6) -> pd.DataFrame:
    return combine_gaps(tables, audit="toy", seed_mode="model", fraction=fraction,
                        confidence=0.95, alpha=0.05,
                        verdicts=VerdictsConfig(min_informative_share=share))


def test_combination_matches_hand_computed_summaries() -> None:
    """Three replicates: the K-estimate, between SD, min, max, share significant, sign flips,
    defined and degenerate counts, and the notes, by hand (a degenerate replicate left out of
    the estimate)."""
    metrics = ["demographic_parity_diff", "disparate_impact_ratio", "equalized_odds_diff",
               "tpr_gap", "fpr_gap"]
    values = [[0.10, 0.9, 0.2, np.nan, 0.1], [-0.20, 0.8, 0.1, 0.05, 0.02],
              [0.04, 0.7, 0.3, 0.15, 0.05]]
    significant = [[True, False, True, False, False], [False, False, True, False, False],
                   [True, False, False, False, False]]
    notes = [["", "", "tpr_gap", "insufficient_data", ""],
             ["degenerate_decisions"] * 5, ["", "", "tpr_gap", "", ""]]
    table = _combine(_tables(values, notes, metrics, significant=significant), share=0.5)
    assert tuple(table.columns) == STABILITY_COLUMNS
    dp, di, eo, tpr, fpr = (table.iloc[i] for i in range(5))
    assert dp["value"] == pytest.approx(0.07)  # replicates 0 and 2: replicate 1 degenerate
    assert dp["sd_between"] == pytest.approx(np.sqrt(0.0018))
    assert (dp["min"], dp["max"], dp["rep0_value"]) == (0.04, 0.10, 0.10)
    assert dp["share_significant"] == pytest.approx(2 / 3) and not dp["sign_flips"]
    assert di["value"] == pytest.approx(np.sqrt(0.9 * 0.7))  # geometric mean
    assert tpr["n_defined"] == 2 and tpr["n_informative"] == 1 and np.isnan(tpr["value"])
    assert tpr["note"] == "degenerate_replicates:1;undefined_replicates:1;degenerate_decisions"
    assert np.isnan(eo["value"]) and fpr["value"] == pytest.approx(0.075)
    assert list(table["n_degenerate"]) == [1] * 5 and set(table["seeds"]) == {3}
    assert "degenerate_replicates:1" in dp["note"]


def test_the_interval_is_the_dataset_aware_random_effects_form() -> None:
    """Four replicates, interval ± 0.05 at 95 % (w = (0.05/z)²), f = 0.2:
    value ± t_ν·√(s_b²/4 + 0.2·w) with ν = 3·V / (s_b²/4)."""
    from scipy import stats as sps

    values = [[0.10], [0.12], [0.08], [0.14]]
    row = _combine(_tables(values, [[""]] * 4, ["demographic_parity_diff"]),
                   fraction=0.2).iloc[0]
    w = (0.05 / sps.norm.ppf(0.975)) ** 2
    between = np.var([0.10, 0.12, 0.08, 0.14], ddof=1)
    total = between / 4 + 0.2 * w
    nu = 3 * total / (between / 4)
    assert row["value"] == pytest.approx(0.11)
    assert row["ci_high"] == pytest.approx(0.11 + sps.t.ppf(0.975, nu) * np.sqrt(total))
    assert (row["df_low"], row["df_high"]) == pytest.approx((nu, nu))
    assert row["p_value"] == pytest.approx(2 * sps.t.sf(0.11 / np.sqrt(total), nu))
    assert row["ci_method"] == "random_effects_t" and row["sampling_fraction"] == 0.2


def test_equalized_odds_is_combined_through_its_signed_components() -> None:
    """The K-estimate of equalized odds is max(|tpr gap|, |fpr gap|) of the combined signed
    components, and its note names the larger one."""
    metrics = ["tpr_gap", "fpr_gap", "equalized_odds_diff"]
    values = [[-0.10, 0.02, 0.10], [-0.12, -0.01, 0.12], [-0.08, 0.05, 0.08]]
    table = _combine(_tables(values, [["", "", "tpr_gap"]] * 3, metrics))
    tpr, fpr, eo = (table.iloc[i] for i in range(3))
    assert eo["value"] == pytest.approx(max(abs(tpr["value"]), abs(fpr["value"])))
    assert eo["ci_method"] == "random_effects_t_max_abs" and eo["note"] == "tpr_gap"
    assert eo["ci_low"] <= eo["value"] <= eo["ci_high"]


def test_compas_s3_like_cells_are_uninformative_whatever_their_interval() -> None:
    """Two of five replicates informative, three degenerate (compas S3 LR in v0.3): below
    ⌈0.6·5⌉ = 3, the row is uninformative (note degenerate_decisions, no p-value), however
    narrow its interval around 0."""
    values = [[0.001], [0.02], [-0.017], [-0.004], [0.003]]
    notes = [[""], ["degenerate_decisions"], [""], ["degenerate_decisions"],
             ["degenerate_decisions"]]
    row = _combine(_tables(values, notes, ["demographic_parity_diff"], half=0.01)).iloc[0]
    assert (row["n_informative"], row["n_required"], row["n_degenerate"]) == (2, 3, 3)
    assert np.isnan(row["p_value"]) and np.isnan(row["equivalence_p_value"])
    assert row["note"].split(";")[-1] == "degenerate_decisions"


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"seeds": 0}, "run.seeds: expected an integer >= 1, got 0 (int)"),
        ({"seeds": 2.5}, "run.seeds: expected an integer, got 2.5 (float)"),
        ({"seed_mode": "splits"}, "run.seed_mode: expected one of model, split, got 'splits' "
                                  "(str)"),
    ],
)
def test_bad_params_are_one_line_naming_the_key(run: dict, message: str) -> None:
    """A bad run.seeds / run.seed_mode in params.yaml names its key path, value and type."""
    with pytest.raises(ConfigError) as info:
        params_from_mapping({"run": run})
    assert str(info.value) == f"params.yaml: {message}"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "0"], "faircode run: --seeds: expected an integer >= 1, got 0 (int)"),
        (["--seed-mode", "data"], "faircode run: --seed-mode: expected one of model, split, got "
                                  "'data' (str)"),
    ],
)
def test_bad_seed_flags_exit_2_with_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`faircode run --seeds 0` / `--seed-mode data`: exit 2 and one line naming the flag."""
    code = main(["run", "german_credit_lending", "--out", str(tmp_path), *argv])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [message]


def test_bad_seeds_in_params_file_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`faircode run --params` with run.seeds: 0 exits 2 with the params file's key path."""
    params = tmp_path / "params.yaml"
    params.write_text("run:\n  seeds: 0\n")
    assert main(["run", "--params", str(params), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"{params}: run.seeds: expected an integer >= 1, got 0 (int)"]


def test_stability_csv_and_run_record_are_written_with_seeds(
    insurance: PreparedAudit, three: tuple[AuditPredictions, AuditResults], tmp_path: Path
) -> None:
    """K = 3: stability.csv (one row per fairness row) and run.json's replicate record with
    the three master seeds."""
    _, results = three
    config = BenchmarkConfig(jobs=1).with_params({"run.seeds": 3, **SMALL})
    folder = write_audit(insurance, results, config=config, out_dir=tmp_path,
                         provenance_record=provenance())
    table = pd.read_csv(folder / "stability.csv")
    assert tuple(table.columns) == STABILITY_COLUMNS and len(table) == len(results.fairness)
    run = json.loads((folder / "run.json").read_text())
    record = run["seeds"]["replicates"]
    assert record["seeds"] == 3 and record["mode"] == "model"
    assert record["masters"] == [42, replicate_seed(42, 1), replicate_seed(42, 2)]
    assert run["config"]["seeds"] == 3
