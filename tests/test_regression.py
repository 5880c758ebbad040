"""Tests of the regression task kind end to end on a toy audit: the manifest and its one-line
errors, the rows, the S0-S3 grid (S4 n/a with its reason), the tables and verdicts, the results
folder, the report, MLflow children, ``faircode run``/``validate``/``audit --prediction`` and
the pipeline's fit store."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from faircode.audit.kinds import load_any_manifest, manifest_task_kind
from faircode.audit.manifest import discover_manifests, load_manifest, manifest_kind
from faircode.audit.regression_data import POSITION, load_regression_audit
from faircode.audit.regression_manifest import RegressionManifest, load_regression_manifest
from faircode.core.cells import STRATEGY_TABLE, applies, not_applicable_reason
from faircode.core.config import BenchmarkConfig
from faircode.core.errors import DataError, ManifestError
from faircode.core.kinds import REGRESSION
from faircode.core.layout import folder_kind, table_path
from faircode.core.metrics import metric_info
from faircode.evaluate.regression import GAP_COLUMNS, evaluate_regression
from faircode.evaluate.regression_kind import run_regression
from faircode.grid.regression import (
    fit_regression_grid,
    load_regression_predictions,
    save_regression_predictions,
)
from faircode.pipeline.cli import main
from faircode.record.regression_runs import regression_children
from faircode.report.regression_section import SECTION

CONFIG = BenchmarkConfig().with_params({"stats.n_resamples": 60, "stats.n_permutations": 60,
                                        "mitigation.max_iter": 5, "run.jobs": 1})


def toy_csv(n: int = 300) -> str:
    """Seeded rows: a sex, a level (a stratum), two features, a job (a proxy) and a positive
    outcome the women earn about 15 % less of."""
    rng = np.random.default_rng(2026)
    sex = np.where(rng.random(n) < 0.45, "female", "male")
    level = rng.integers(0, 3, n)
    x1 = rng.normal(size=n).round(3)
    job = np.where(rng.random(n) < 0.5 + 0.2 * (sex == "female"), "office", "plant")
    log_pay = 2.0 + 0.2 * level + 0.1 * x1 - 0.15 * (sex == "female") + rng.normal(0, 0.3, n)
    return pd.DataFrame({"sex": sex, "level": level, "x1": x1, "x2": rng.normal(size=n).round(3),
                         "job": job, "pay": np.exp(log_pay).round(2)}).to_csv(index=False)


DOC: dict[str, Any] = {
    "task": "regression",
    "name": "toy",
    "dataset": {"path": "../../data/raw/toy/toy.csv", "row_id": "position"},
    "test_size": 0.3,
    "target": {"column": "pay", "transform": "log", "units": "coins", "margin": {"units": 0.05}},
    "protected_attributes": [{"name": "sex", "type": "categorical", "column": "sex",
                              "disadvantaged_values": ["female"],
                              "advantaged_values": ["male"]}],
    "core_features": ["level", "x1", "x2"],
    "proxy_features": ["job"],
    "strata": [{"name": "level", "columns": ["level"]}],
    "system": {"name": "payers", "decision": "outcome"},
}


def write(root: Path, document: dict[str, Any] | None = None, csv: str | None = None) -> Path:
    """The toy CSV and manifest under ``root`` (a repository-like folder); the manifest."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    raw = root / "data" / "raw" / "toy" / "toy.csv"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(csv if csv is not None else toy_csv())
    document = copy.deepcopy(document or DOC)
    if document["dataset"].get("row_id") == "position":  # a position needs the bytes pinned
        document["dataset"]["sha256"] = hashlib.sha256(raw.read_bytes()).hexdigest()
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy audit's manifest in a repository-like folder."""
    return write(tmp_path_factory.mktemp("repo"))


@pytest.fixture(scope="module")
def written(toy: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy audit run end to end (fit, evaluate, write) once."""
    from faircode.provenance.state import provenance

    return run_regression(toy, config=CONFIG, out_dir=tmp_path_factory.mktemp("results"),
                          provenance_record=provenance())


def test_task_regression_selects_the_regression_kind(toy: Path) -> None:
    """``task: regression`` is the regression kind's manifest: its own loader, not the grid's,
    and no grid audit of the audits folder."""
    assert manifest_kind(toy) == "regression"
    assert manifest_task_kind(toy) is REGRESSION
    assert isinstance(load_any_manifest(toy), RegressionManifest)
    assert discover_manifests(toy.parent.parent) == []
    with pytest.raises(ManifestError, match=r"task: expected one of binary, multiclass \(the "
                                            r"grid's manifests and the multi-class ones; a "
                                            r"task: regression audit runs"):
        load_manifest(toy)


@pytest.mark.parametrize(("change", "message"), [
    ({"target": {"column": "pay", "units": "coins"}},
     r"target\.margin: expected a value \(required key\)"),
    ({"target": {"column": "pay", "units": "coins", "margin": {"units": 1, "sd": 0.1}}},
     r"target\.margin: expected exactly one of units"),
    ({"target": {"column": "pay", "units": "coins", "margin": {"sd": -1}}},
     r"target\.margin\.sd: expected a positive number, got -1 \(int\)"),
    ({"target": {"column": "pay", "units": "coins", "margin": {"sd": 0.1}, "transform": "sqrt"}},
     r"target\.transform: expected one of none, log, got 'sqrt' \(str\)"),
    ({"system": {"name": "tool", "decision": {"column": "job", "equals": "office"}}},
     r"system\.decision: expected outcome"),
    ({"task": "regresion"}, r"kind \(or a tabular manifest's task\): expected one of"),
    ({"dataset": {"path": "../../data/raw/toy/toy\0.csv"}},
     r"dataset\.path: expected a path without a NUL character"),
    ({"protected_attributes": [{"name": "sex", "type": "categorical", "column": "sex",
                                "disadvantaged_values": ["female\u200b"]}]},
     r"protected_attributes\[0\]\.disadvantaged_values\[0\]: .*U\+200B ZERO WIDTH SPACE"),
])
def test_bad_regression_manifests_are_one_line(tmp_path: Path, change: dict[str, Any],
                                               message: str) -> None:
    """A bad target, margin, transform, system or task is one line naming its key path."""
    path = write(tmp_path, {**copy.deepcopy(DOC), **change})
    with pytest.raises(Exception, match=message) as info:
        load_any_manifest(path)
    assert "\n" not in str(info.value)


def test_a_log_outcome_must_be_positive(tmp_path: Path) -> None:
    """A zero under ``transform: log`` is one line naming the row and the value."""
    frame = pd.read_csv(pd.io.common.StringIO(toy_csv()))
    frame.loc[5, "pay"] = 0
    path = write(tmp_path, csv=frame.to_csv(index=False))
    with pytest.raises(DataError, match=r"line 7: expected a positive number \(transform: log\), "
                                        r"got 0"):
        load_regression_audit(load_regression_manifest(path))


def test_a_look_alike_group_value_is_one_line(tmp_path: Path) -> None:
    """A Cyrillic ``е`` in ``fеmale`` would be in no group (its rows dropped, the gap moved):
    one line naming the row, the column and the character, as in a binary audit."""
    frame = pd.read_csv(pd.io.common.StringIO(toy_csv()))
    row = int(np.flatnonzero(frame["sex"] == "female")[0])
    frame.loc[row, "sex"] = "f\u0435male"
    path = write(tmp_path, csv=frame.to_csv(index=False))
    with pytest.raises(DataError, match=rf"line {row + 2}: column 'sex' \(protected_attributes"
                                        r"\[0\]\): expected 'female' exactly .* U\+0435 "
                                        r"CYRILLIC SMALL LETTER IE") as info:
        load_regression_audit(load_regression_manifest(path))
    assert "\n" not in str(info.value)


def test_the_rows_margin_and_split(toy: Path) -> None:
    """The analysed outcome is the log, the margin the declared units, the split keeps both
    groups, the strata are coded and the keys are the rows' positions."""
    data = load_regression_audit(load_regression_manifest(toy), key=POSITION)
    assert np.allclose(np.exp(data.y), data.raw_y)
    assert data.margin == 0.05
    assert data.train_index.size + data.test_index.size == data.y.size == 300
    assert data.disadvantaged["sex"][data.test_index].any()
    assert set(np.unique(data.strata["level"])) == {0, 1, 2}
    assert data.keys is not None and list(data.keys[:3]) == ["0", "1", "2"]


def test_a_replicate_without_one_group_is_uninformative_not_a_crash(toy: Path) -> None:
    """K = 3 with replicate 2's test rows cut to the advantaged rows (a split drawn without a
    rare group): replicate 2's rows have no number and say which group is missing, and each
    cell's combined row is replicates 0 and 1's (``replicates:2``), never a gap of an empty
    group nor a combination that counts the missing replicate."""
    import dataclasses

    config = CONFIG.with_params({"run.seeds": 3, "run.seed_mode": "split"})
    data = load_regression_audit(load_regression_manifest(toy))
    fitted = fit_regression_grid(data, mitigation=config.mitigation,
                                 replicates=config.replicates)
    male = ~data.disadvantaged["sex"]
    cells = tuple(c if c.replicate < 2 else dataclasses.replace(
        c, rows=c.rows[male[c.rows]], prediction=c.prediction[male[c.rows]])
        for c in fitted.cells)
    results = evaluate_regression(data, dataclasses.replace(fitted, cells=cells),
                                  stats=config.stats, verdicts=config.verdicts,
                                  replicates=config.replicates)
    assert results.replicates is not None
    absent = results.replicates[results.replicates["replicate"] == 2]
    level = absent["metric"].map(lambda m: metric_info(m).scale == "level")
    assert absent["value"].isna().all() and len(absent[~level])
    assert set(absent.loc[~level, "verdict"]) == {"uninformative"}  # a level: no verdict
    assert absent["note"].str.contains("no disadvantaged row among these").all()
    combined = results.gaps[(results.gaps["strategy"] == "baseline")
                            & results.gaps["value"].notna()]
    assert len(combined) and combined["note"].str.endswith("replicates:2").all()
    groups = results.groups[(results.groups["replicate"] == 2)
                            & (results.groups["group"] == "disadvantaged")]
    assert (groups["n"] == 0).all()


def test_the_grid_fits_s0_to_s3_and_stores_its_predictions(toy: Path, tmp_path: Path) -> None:
    """S0-S3 x three families on the test rows; the store reads back what was fitted, and
    refuses predictions of another raw file."""
    data = load_regression_audit(load_regression_manifest(toy))
    fitted = fit_regression_grid(data, mitigation=CONFIG.mitigation,
                                 replicates=CONFIG.replicates)
    assert [c.strategy.value for c in fitted.cells[::3]] == [
        "baseline", "unawareness", "unawareness_proxy_removal", "in_processing"]
    assert {c.model for c in fitted.cells} == {"linear_regression", "random_forest",
                                               "gradient_boosting"}
    assert all(np.isfinite(c.prediction).all() and c.rows.size == data.test_index.size
               for c in fitted.cells)
    save_regression_predictions(fitted, tmp_path / "fit")
    back = load_regression_predictions(tmp_path / "fit", sha256=data.sha256)
    assert all(np.array_equal(a.prediction, b.prediction) for a, b in
               zip(fitted.cells, back.cells, strict=True))
    with pytest.raises(DataError, match="dataset_sha256: expected"):
        load_regression_predictions(tmp_path / "fit", sha256="0" * 64)


def test_the_tables_say_s4_is_not_applicable_with_its_reason(written: Path) -> None:
    """S4's rows hold no number, verdict not_applicable and the strategy table's reason;
    strategies.csv says which apply."""
    gaps = pd.read_csv(table_path(written, "regression_gaps"))
    assert tuple(gaps.columns) == GAP_COLUMNS
    s4 = gaps[gaps["strategy"] == "post_processing"]
    assert len(s4) and s4["value"].isna().all() and (s4["verdict"] == "not_applicable").all()
    assert s4["note"].str.endswith(not_applicable_reason("post_processing", "regression")).all()
    strategies = pd.read_csv(table_path(written, "strategies"))
    said = dict(zip(strategies["strategy"], strategies["applies"], strict=True))
    assert said == {info.strategy.value: applies(info.strategy.value, "regression")
                    for info in STRATEGY_TABLE}
    assert [said[s] for s in ("baseline", "in_processing", "post_processing")] == [
        True, True, False]


def test_the_observed_outcome_and_every_cell_have_verdicts(written: Path) -> None:
    """The observed outcome's mean gap is the groups' mean log difference, in log units; every
    gap has a verdict of the four, the worst group's error none (a level)."""
    gaps = pd.read_csv(table_path(written, "regression_gaps"))
    groups = pd.read_csv(table_path(written, "regression_groups"))
    observed = gaps[(gaps["strategy"] == "observed") & (gaps["metric"] == "mean_difference")]
    means = groups[groups["strategy"] == "observed"].set_index("group")["mean"]
    assert observed["value"].iat[0] == pytest.approx(means["disadvantaged"]
                                                     - means["advantaged"])
    assert observed["value_units"].iat[0] == "log(coins)"
    assert observed["model"].iat[0] == "payers"
    gap_rows = gaps[(gaps["verdict"] != "not_applicable")
                    & (gaps["metric"] != "bounded_group_loss")]
    assert set(gap_rows["verdict"]) <= {"gap", "parity", "inconclusive", "uninformative"}
    level = gaps[(gaps["metric"] == "bounded_group_loss") & (gaps["verdict"] != "not_applicable")]
    assert len(level) and level["verdict"].isna().all() and (level["mde_note"] == "level").all()
    assert groups.loc[groups["strategy"] == "observed", "raw_mean"].notna().all()


def test_the_gap_within_strata_is_beside_the_raw_gap(written: Path) -> None:
    """regression_strata.csv: the observed outcome's and each cell's gap within the level,
    the raw gap beside it."""
    strata = pd.read_csv(table_path(written, "regression_strata"))
    observed = strata[strata["strategy"] == "observed"].iloc[0]
    gaps = pd.read_csv(table_path(written, "regression_gaps"))
    raw = gaps[(gaps["strategy"] == "observed") & (gaps["metric"] == "mean_difference")]
    assert observed["raw_gap"] == pytest.approx(raw["value"].iat[0])
    assert observed["stratum"] == "level" and observed["strata_compared"] == 3


def test_run_json_records_the_kind_and_every_file(written: Path) -> None:
    """The folder is a regression run: run.json's kind, margin, units and files."""
    run = json.loads((written / "run.json").read_text())
    assert folder_kind(written) == "regression" == run["kind"]
    assert run["target"]["margin"] == {"declared": "0.05 (outcome units)", "resolved": 0.05}
    assert set(run["files"]) == {"regression_gaps.csv", "regression_groups.csv",
                                 "regression_strata.csv", "strategies.csv"}
    headline = json.loads((written.parent / "metrics" / "toy.json").read_text())
    assert set(headline) == {"attr", "gap"} and headline["attr"] == "sex"
    gaps = pd.read_csv(table_path(written, "regression_gaps"))
    s0 = gaps[(gaps["strategy"] == "baseline") & (gaps["protected_attribute"] == "sex")
              & (gaps["metric"] == "mean_difference") & (gaps["verdict"] != "uninformative")]
    assert headline["gap"]["S0"] == round(float(s0["value"].mean()), 3)
    assert headline["gap"]["S4"] is None and headline["gap"]["S5"] is None


def test_the_report_section_and_mlflow_children(written: Path, tmp_path: Path) -> None:
    """The report names the audit in one headline sentence with its units and writes its
    tables; MLflow gets one child per row set x attribute, S4 none."""
    inputs = SECTION.load([written])
    sentence = SECTION.headline(inputs)
    assert sentence.startswith("Regression audits") and "toy sex" in sentence
    assert "log(coins)" in sentence
    markdown, latex = SECTION.tables(inputs, tmp_path)
    assert "the observed outcome" in markdown.read_text() and "tabular" in latex.read_text()
    children = regression_children(written)
    assert len(children) == 1 + 12
    assert {c.tags["units"] for c in children} == {"log(coins)"}
    assert "mean_diff.q_audit" in children[0].metrics


def test_k_replicates_combine_into_one_row_per_cell(toy: Path) -> None:
    """At K = 2 a cell's row is its replicates' combination (random_effects_t) and every
    replicate's rows are kept apart."""
    config = CONFIG.with_params({"run.seeds": 2, "run.seed_mode": "split"})
    data = load_regression_audit(load_regression_manifest(toy))
    fitted = fit_regression_grid(data, mitigation=config.mitigation,
                                 replicates=config.replicates)
    results = evaluate_regression(data, fitted, stats=config.stats, verdicts=config.verdicts,
                                  replicates=config.replicates)
    cells = results.gaps[results.gaps["strategy"] == "baseline"]
    assert set(cells["ci_method"]) <= {"random_effects_t", "random_effects_t_log"}
    assert results.replicates is not None
    assert set(results.replicates["replicate"]) == {0, 1}


def test_faircode_validate_and_run_a_regression_audit(toy: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """validate prints the groups' means in both units; run writes the folder and prints the
    observed gap with its verdict."""
    assert main(["validate", str(toy)]) == 0
    out = capsys.readouterr().out
    assert "analysed as log(coins)" in out and "coins)" in out
    assert main(["run", str(toy), "--out", str(tmp_path / "out"), "--n-resamples", "40",
                 "--n-permutations", "40", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "toy: wrote" in out and "observed payers sex: mean gap" in out
    assert (tmp_path / "out" / "toy" / "regression_gaps.csv").is_file()


def test_faircode_audit_scores_a_prediction_file(toy: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """--prediction: a model's numbers joined on the row position, held-out rows, beside the
    observed outcome; a missing held-out row is one line."""
    data = load_regression_audit(load_regression_manifest(toy))
    predictions = tmp_path / "pred.csv"
    pd.DataFrame({"row": np.arange(data.y.size), "guess": data.y + 0.1}).to_csv(predictions,
                                                                                index=False)
    args = ["audit", str(toy), "--predictions", str(predictions), "--key", "row",
            "--prediction", "guess", "--name", "mine", "--out", str(tmp_path / "ext"),
            "--n-resamples", "40", "--n-permutations", "40"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"mine on {data.test_index.size:,} held-out rows" in out
    gaps = pd.read_csv(tmp_path / "ext" / "toy" / "regression_gaps.csv")
    mine = gaps[(gaps["strategy"] == "deployed") & (gaps["metric"] == "residual_gap")]
    assert mine["value"].iat[0] == pytest.approx(0.0, abs=1e-9)  # the same shift for everyone
    pd.DataFrame({"row": data.train_index, "guess": 1.0}).to_csv(predictions, index=False)
    assert main(args) == 2
    assert "expected a row for each of the" in capsys.readouterr().err
