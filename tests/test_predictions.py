"""Tests for the fit/evaluate split: the prepared and predictions stores round-trip exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faircode.audit.data import load_audit
from faircode.audit.decision import Cutoff
from faircode.audit.prepared import load_prepared, prepare, save_prepared
from faircode.core.cells import ModelFamily, Strategy
from faircode.core.config import BenchmarkConfig
from faircode.core.errors import DataError
from faircode.grid.predictions import CellPredictions, load_predictions, save_predictions
from faircode.pipeline.run import evaluate, fit, run_audit

TABLES = ("fairness", "performance", "intersectional", "counterfactual")


@pytest.fixture(scope="module")
def compas_config() -> BenchmarkConfig:
    return BenchmarkConfig(jobs=2).with_params({
        "mitigation.max_iter": 2, "stats.n_resamples": 30, "stats.n_permutations": 30
    })


def test_fit_save_load_evaluate_equals_run_audit(
    audit_repo, tmp_path: Path, compas_config: BenchmarkConfig  # type: ignore[no-untyped-def]
) -> None:
    """Fitting, storing, reloading and evaluating gives exactly run_audit's tables (compas,
    whose counterfactual sets exercise every store)."""
    data = load_audit(audit_repo.manifests["compas"])
    expected = run_audit(data, config=compas_config)
    save_prepared(prepare(data), tmp_path / "prepared")
    prepared = load_prepared(tmp_path / "prepared", manifest=data.manifest)
    predictions = fit(prepared, config=compas_config)
    save_predictions(predictions, tmp_path / "predictions", test_index=prepared.test_index,
                     train_index=prepared.train_index)
    loaded = load_predictions(tmp_path / "predictions")
    got = evaluate(load_prepared(tmp_path / "prepared", manifest=data.manifest), loaded,
                         config=compas_config)
    assert len(expected.counterfactual) > 0
    for table in TABLES:
        pd.testing.assert_frame_equal(getattr(got, table), getattr(expected, table),
                                      check_exact=True)


def test_prepared_store_round_trips_every_field(audit_repo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Features, labels, masks, split and counterfactual sets come back unchanged."""
    data = load_audit(audit_repo.manifests["compas"])
    original = prepare(data)
    save_prepared(original, tmp_path)
    back = load_prepared(tmp_path, manifest=data.manifest)
    pd.testing.assert_frame_equal(back.X, original.X, check_exact=True)
    assert np.array_equal(back.y, original.y) and back.y.dtype == np.int8
    assert np.array_equal(back.test_index, data.test_index)
    assert np.array_equal(back.train_index, data.train_index)
    assert list(back.disadvantaged) == list(original.disadvantaged)
    for name, mask in original.disadvantaged.items():
        assert np.array_equal(back.disadvantaged[name], mask)
    assert [(p.axis, p.kind, p.columns) for p in back.perturbed] == [
        (p.axis, p.kind, p.columns) for p in original.perturbed]
    for a, b in zip(back.perturbed, original.perturbed, strict=True):
        pd.testing.assert_frame_equal(a.X, b.X.reset_index(drop=True), check_exact=True)
        assert np.array_equal(a.changed, b.changed) and np.array_equal(a.sensitive, b.sensitive)
    assert (back.steps, back.sha256) == (data.steps, data.sha256)
    assert back.nominal == original.nominal == tuple(
        c for c in data.X.columns if data.encoder.kinds[c] == "categorical") and back.nominal


def test_a_store_without_its_nominal_columns_asks_for_prepare(  # type: ignore[no-untyped-def]
        audit_repo, tmp_path: Path) -> None:
    """A store of an older faircode (meta.json without nominal) is refused, naming the file
    and key: under one-hot encoding it would silently encode nothing."""
    import json

    data = load_audit(audit_repo.manifests["insurance_denial"])
    save_prepared(prepare(data), tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    del meta["nominal"]
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataError, match=r"meta.json: nominal: expected .* re-run prepare"):
        load_prepared(tmp_path, manifest=data.manifest)


def test_threshold_applies_to_scores_but_not_to_randomised_decisions() -> None:
    """S0-S2 decide at the cutoff at evaluate time (> or >= as it says); a stored S3/S4 decision
    is kept whatever the cutoff."""
    score = np.array([0.2, 0.5, 0.7])
    s0 = CellPredictions(Strategy.BASELINE, ModelFamily.RANDOM_FOREST, test_score=score)
    assert s0.decisions(Cutoff(0.5, inclusive=False))[0].tolist() == [0, 0, 1]
    assert s0.decisions(Cutoff(0.5, inclusive=True))[0].tolist() == [0, 1, 1]
    assert s0.decisions(Cutoff(0.1, inclusive=False))[0].tolist() == [1, 1, 1]
    drawn = np.array([1, 0, 0], dtype=np.int8)
    s3 = CellPredictions(Strategy.IN_PROCESSING, ModelFamily.RANDOM_FOREST, test_score=score,
                         test_decision=drawn)
    assert s3.decisions(Cutoff(0.1, inclusive=False))[0].tolist() == [1, 0, 0]


def test_predictions_store_keeps_train_scores_and_skips(tmp_path: Path) -> None:
    """Training scores and a skipped cell's reason survive the store; S4 has no score."""
    cells = (
        CellPredictions(Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION,
                        test_score=np.array([0.25, 0.75]), train_score=np.array([0.1, 0.2, 0.9]),
                        counterfactual_score=(np.array([0.5, 0.125]),),
                        counterfactual_decision=(None,), seconds={"fit": 1.0}),
        CellPredictions(Strategy.POST_PROCESSING, ModelFamily.LOGISTIC_REGRESSION,
                        test_decision=np.array([1, 0], dtype=np.int8),
                        counterfactual_score=(None,),
                        counterfactual_decision=(np.array([0, 0], dtype=np.int8),)),
        CellPredictions(Strategy.POST_PROCESSING, ModelFamily.RANDOM_FOREST, skipped="no"),
    )
    from faircode.grid.predictions import AuditPredictions

    save_predictions(AuditPredictions("a", cells, {"eps": 0.01}), tmp_path,
                     test_index=np.array([1, 3]), train_index=np.array([0, 2, 4]))
    back = load_predictions(tmp_path)
    assert back.cells[0].train_score.tolist() == [0.1, 0.2, 0.9]  # type: ignore[union-attr]
    assert back.cells[0].counterfactual_score[0].tolist() == [0.5, 0.125]  # type: ignore[union-attr]
    assert back.cells[0].test_decision is None
    assert back.cells[1].test_score is None and back.cells[1].train_score is None
    assert back.cells[1].counterfactual_decision[0].tolist() == [0, 0]  # type: ignore[union-attr]
    assert back.cells[2].skipped == "no" and back.config == {"eps": 0.01}
    assert pd.read_parquet(tmp_path / "test.parquet")["row"].tolist() == [1, 3, 1, 3]


def test_a_tolerance_curve_and_the_violations_survive_the_store(tmp_path: Path) -> None:
    """An S5 cell's curve (decisions per tolerance), violations and base come back from the
    store, a replicate's too; a store without a curve writes no tolerances.parquet."""
    from faircode.grid.predictions import AuditPredictions, ReplicatePredictions

    curve = (np.array([1, 0], dtype=np.int8), np.array([1, 1], dtype=np.int8))
    s5 = CellPredictions(Strategy.RELAXED_POST_PROCESSING, ModelFamily.RANDOM_FOREST,
                         test_decision=curve[0], violations=(0.0, 0.01), tolerances=(0.0, 0.02),
                         curve_decision=curve, base="baseline")
    s3 = CellPredictions(Strategy.IN_PROCESSING, ModelFamily.RANDOM_FOREST,
                         test_score=np.array([0.4, 0.6]), test_decision=np.array([0, 1], np.int8),
                         violations=(0.016,))
    again = CellPredictions(Strategy.RELAXED_POST_PROCESSING, ModelFamily.RANDOM_FOREST,
                            test_decision=np.array([0], np.int8), violations=(0.0, 0.02),
                            tolerances=(0.0, 0.02), curve_decision=(np.array([0], np.int8),
                                                                     np.array([1], np.int8)))
    predictions = AuditPredictions("a", (s3, s5), {}, seeds=2, replicates=(
        ReplicatePredictions(1, again, np.array([2])),))
    save_predictions(predictions, tmp_path / "s", test_index=np.array([1, 3]),
                     train_index=np.array([0, 2]))
    back = load_predictions(tmp_path / "s")
    assert back.cells[0].violations == (0.016,) and back.cells[0].tolerances == ()
    got = back.cells[1]
    assert (got.tolerances, got.violations, got.base) == ((0.0, 0.02), (0.0, 0.01), "baseline")
    assert [d.tolist() for d in got.curve_decision] == [[1, 0], [1, 1]]
    rep = back.replicates[0].cell
    assert [d.tolist() for d in rep.curve_decision] == [[0], [1]] and rep.violations == (0.0, 0.02)
    save_predictions(AuditPredictions("a", (s3,), {}), tmp_path / "s",
                     test_index=np.array([1, 3]), train_index=np.array([0, 2]))
    assert not (tmp_path / "s" / "tolerances.parquet").exists()


def test_the_store_holds_no_timings_and_its_timings_file_gives_them_back(tmp_path: Path) -> None:
    """Two fits of the same predictions that took other times write the same store bytes (no
    seconds in it, the kernels that computed them instead); the timings file beside the store
    gives each cell's seconds back, and without it there are none."""
    import dataclasses

    from faircode.grid.predictions import AuditPredictions, timings_path

    cell = CellPredictions(Strategy.BASELINE, ModelFamily.LOGISTIC_REGRESSION,
                           test_score=np.array([0.25, 0.75]), train_score=np.array([0.5]),
                           seconds={"fit": 1.5, "predict": 0.25})
    kernels = {"blas_kernels": ["openblas Haswell"], "numpy_dispatch": ["X86_V3"]}
    first = AuditPredictions("a", (cell,), {}, numerics=kernels)
    second = dataclasses.replace(first, cells=(dataclasses.replace(cell, seconds={"fit": 9.0}),))
    for name, predictions in (("one", first), ("two", second)):
        save_predictions(predictions, tmp_path / name, test_index=np.array([1, 2]),
                         train_index=np.array([0]), timings=timings_path(tmp_path / name))
    files = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert files == ["cells.json", "counterfactual.parquet", "test.parquet", "train.parquet"]
    for name in files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    back = load_predictions(tmp_path / "one", timings=tmp_path / "one.seconds.json")
    assert back.cells[0].seconds == {"fit": 1.5, "predict": 0.25} and back.numerics == kernels
    assert load_predictions(tmp_path / "one").cells[0].seconds == {}
