"""End-to-end tests of the grid (faircode.grid.fit) and `faircode run` on real mirrored data."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faircode.audit.data import AuditData, load_audit
from faircode.audit.decision import DecisionRule
from faircode.core.cells import Strategy, grid_cells, strategy_info
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.claims import fairness_columns
from faircode.evaluate.tables import PERFORMANCE_COLUMNS
from faircode.evaluate.write import read_timings
from faircode.pipeline.cli import main
from faircode.pipeline.run import evaluate, fit, run_audit
from faircode.stats.metrics import FAIRNESS_METRICS
from faircode.stats.operating import DEGENERATE_NOTE

SMALL = {"stats.n_resamples": 60, "stats.n_permutations": 60}


@pytest.fixture(scope="module")
def insurance(audit_repo) -> AuditData:  # type: ignore[no-untyped-def]
    """The prepared insurance audit (1,340 rows, two attributes)."""
    return load_audit(audit_repo.manifests["insurance_denial"])


# slow (minutes); tests/test_scheduler.py keeps the two-worker identity in the default suite
@pytest.mark.slow
def test_results_are_bit_identical_for_one_and_two_workers(insurance: AuditData) -> None:
    """Child seeds are keyed by grid position, so the worker count cannot change any number."""
    one = run_audit(insurance, config=BenchmarkConfig(jobs=1).with_params(SMALL))
    two = run_audit(insurance, config=BenchmarkConfig(jobs=2).with_params(SMALL))
    for table in ("fairness", "performance", "intersectional", "counterfactual"):
        pd.testing.assert_frame_equal(getattr(one, table), getattr(two, table), check_exact=True)
    assert len(one.fairness) == len(grid_cells()) * 2 * len(FAIRNESS_METRICS)
    assert len(one.intersectional) == len(grid_cells())  # one attribute pair (age, gender) per cell


def test_unsupported_constraint_skips_post_processing_and_says_so(insurance: AuditData) -> None:
    """With error-rate parity, the post-processing cells (S4, S5: ThresholdOptimizer has no such
    constraint) are skipped (recorded), S0-S3 still run."""
    results = run_audit(insurance, config=BenchmarkConfig(jobs=2).with_params({
        "mitigation.constraint": "error_rate_parity", "mitigation.max_iter": 10, **SMALL
    }))
    skipped = [c for c in results.cells if c.skipped]
    post = ["post_processing", "relaxed_post_processing"]
    assert [c.strategy.value for c in skipped] == [s for s in post for _ in range(3)]
    assert all("error_rate_parity" in c.skipped for c in skipped)
    assert set(results.fairness["strategy"]) == {s.value for s in Strategy} - set(post)


def test_run_writes_complete_consistent_tables_for_german_credit(
    audit_repo, tmp_path: Path, mirror: Path,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`faircode run` writes every table with the documented columns, valid p/q and provenance."""
    out = tmp_path / "results"
    code = main(["run", "german_credit_lending", "--audits", str(audit_repo.audits),
                 "--out", str(out), "--n-resamples", "80", "--n-permutations", "80",
                 "--jobs", "2"])
    assert code == 0
    folder = out / "german_credit_lending"
    fairness = pd.read_csv(folder / "fairness.csv", keep_default_na=False, na_values=[""])
    assert tuple(fairness.columns) == fairness_columns(replicated=False)
    assert set(fairness["verdict"]) <= {"gap", "parity", "inconclusive", "uninformative"}
    assert len(fairness) == len(grid_cells()) * len(FAIRNESS_METRICS)
    defined = fairness["value"].notna()
    p, q = fairness["p_value"], fairness["q_value"]
    assert ((p[defined] > 0) & (p[defined] <= 1)).all()
    assert (q[defined] >= p[defined] - 1e-12).all()
    assert (fairness["significant"] == (q.fillna(1.0) < 0.05)).all()
    assert ((fairness["ci_low"] <= fairness["ci_high"]) | ~defined).all()
    # the test split: 20 % of 1,000 rows, stratified; age < 30 is the disadvantaged group
    whole = fairness[fairness["metric"].isin(["demographic_parity_diff", "disparate_impact_ratio",
                                              "accuracy_equality_diff"])]
    assert set(whole["n_disadvantaged"] + whole["n_advantaged"]) == {200}
    performance = pd.read_csv(folder / "performance.csv")
    assert tuple(performance.columns) == PERFORMANCE_COLUMNS
    # accuracy, AUC, F1 + selection rate, balanced accuracy, baseline + 2 group rates for age
    assert len(performance) == len(grid_cells()) * 8
    s4_auc = performance.query("strategy == 'post_processing' and metric == 'auc'")
    assert s4_auc["value"].isna().all()  # S4 gives decisions only
    run = json.loads((folder / "run.json").read_text())
    raw = mirror / "german_credit_lending" / "credit_customers.csv"
    assert run["dataset"]["sha256"] == hashlib.sha256(raw.read_bytes()).hexdigest()
    assert run["seeds"]["master"] == 42
    assert run["config"]["n_resamples"] == 80
    assert len(run["cells"]) == len(grid_cells())
    assert not any("seconds" in c for c in run["cells"])  # beside the folder, not in it
    timings = read_timings(folder)
    assert all("fit" in c["seconds"] for c in timings["cells"]) and timings["seconds"]
    assert set(run["versions"]) >= {"numpy", "pandas", "scikit-learn", "fairlearn"}
    assert run["decision"] == {"rule": "threshold", "threshold": 0.5,
                               "source": "config decision_threshold"}
    listed = [f"{c['strategy']} {c['model']}" for c in run["cells"] if c["decision"]["degenerate"]]
    summary = capsys.readouterr().out.split("degenerate decisions")[1]
    line = next(x for x in summary.splitlines() if "german_credit_lending:" in x)
    assert line.count("(selection rate") == len(listed)


def test_compas_counterfactual_flip_rates_by_channel(audit_repo) -> None:  # type: ignore[no-untyped-def]
    """Race edits flip S0 decisions, never S1/S2 (race is not their feature); proxies differ."""
    data = load_audit(audit_repo.manifests["compas"])
    results = run_audit(data, config=BenchmarkConfig(jobs=2).with_params({
        "mitigation.max_iter": 10, **SMALL
    }))
    cf = results.counterfactual
    explicit = cf[cf["kind"] == "explicit"]
    assert (explicit["n_changed"] > 0).all()
    by_strategy = explicit.groupby("strategy")["flip_rate"]
    assert by_strategy.min()["unawareness"] == 0.0 == by_strategy.max()["unawareness"]
    assert by_strategy.max()["unawareness_proxy_removal"] == 0.0
    assert by_strategy.min()["baseline"] > 0.1
    proxy = cf[cf["kind"] == "proxy"].set_index(["strategy", "model"])["flip_rate"]
    assert (proxy.loc["unawareness_proxy_removal"] == 0.0).all()  # CustodyStatus is not core
    assert proxy.loc["unawareness"].max() > 0.1
    # an edit of the race column reaches S4 through its sensitive feature
    assert explicit.query("strategy == 'post_processing'")["flip_rate"].min() > 0
    n_test = len(data.test_index)
    assert ((cf["n_changed"] + cf["n_unchanged"]) == n_test).all()


# slow (minutes); tests/test_scheduler.py keeps a failing audit in the default suite
@pytest.mark.slow
def test_one_failing_audit_loses_nothing_of_the_others(
    audit_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A crash in one audit is named, exits non-zero, and the other audits' results are written."""
    import faircode.pipeline.run

    # `faircode run` fits all audits, then evaluates each
    real = faircode.pipeline.run.evaluate

    def flaky(data: AuditData, *args: object, **kwargs: object) -> object:
        if data.manifest.name == "german_credit_lending":
            raise RuntimeError("simulated crash")
        return real(data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(faircode.pipeline.run, "evaluate", flaky)
    out = tmp_path / "results"
    code = main(["run", "german_credit_lending", "insurance_denial", "ai_fair_recruitment",
                 "--audits", str(audit_repo.audits), "--out", str(out),
                 "--n-resamples", "20", "--n-permutations", "20", "--jobs", "2"])
    captured = capsys.readouterr()
    assert code == 1
    assert "german_credit_lending: failed: RuntimeError: simulated crash" in captured.err
    assert "ai_fair_recruitment: dataset unavailable" in captured.err  # named: a failure too
    assert (out / "insurance_denial" / "fairness.csv").is_file()
    assert not (out / "german_credit_lending").exists()
    assert not list(out.glob(".*"))  # no half-written staging folder left behind
    assert np.isfinite(pd.read_csv(out / "insurance_denial" / "fairness.csv")["value"]).any()


def test_rewriting_results_replaces_the_folder_and_leaves_no_staging(
    insurance: AuditData, tmp_path: Path
) -> None:
    """A second write replaces the folder whole, leaves no temporary folder, keeps exact floats."""
    from faircode.evaluate.tables import AuditResults
    from faircode.evaluate.write import write_audit

    def results(value: float) -> AuditResults:
        frame = pd.DataFrame({"audit": ["insurance_denial"], "value": [value]})
        return AuditResults(frame, frame, frame, frame, cells=(),
                            rule=DecisionRule("threshold", threshold=0.5))

    config = BenchmarkConfig(jobs=1)
    write_audit(insurance, results(1.0), config=config, out_dir=tmp_path, provenance_record={})
    (tmp_path / "insurance_denial" / "stale.txt").write_text("from an older run")
    folder = write_audit(insurance, results(1 / 2001), config=config, out_dir=tmp_path,
                         provenance_record={})
    # the folder and its timings beside it (no number depends on them), no staging folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["insurance_denial",
                                                          "insurance_denial.seconds.json"]
    assert not (folder / "stale.txt").exists()
    # numbers round-trip exactly (a p-value of 1/(1+P) must not be rounded below its floor)
    assert pd.read_csv(folder / "fairness.csv")["value"].tolist() == [1 / 2001]
    run = json.loads((folder / "run.json").read_text())
    assert run["rows"]["train"] + run["rows"]["test"] == len(insurance.y)


def test_degenerate_cells_carry_the_note_on_every_fairness_row(insurance: AuditData) -> None:
    """With bounds no cell can meet, every cell is degenerate and each fairness row says so."""
    config = BenchmarkConfig(jobs=2).with_params({
        "mitigation.max_iter": 10, "degenerate.min_selection_rate": 0.98, **SMALL
    })
    results = run_audit(insurance, config=config)
    assert all(c.degenerate for c in results.cells)
    notes = results.fairness["note"].fillna("")
    assert notes.str.endswith(DEGENERATE_NOTE).all()
    # an existing note is kept beside it
    eodds = notes[results.fairness["metric"] == "equalized_odds_diff"]
    assert eodds.str.match(r"^(tpr|fpr)_gap;degenerate_decisions$").all()


# slow (a grid of the insurance audit, a minute); tests/test_strategies.py (S3 costs, S4
# balanced accuracy under base_rate) and tests/test_decision.py (the base_rate cutoff) keep it
@pytest.mark.slow
def test_base_rate_rule_moves_s0_s2_cutoffs_and_s3_s4_objectives(insurance: AuditData) -> None:
    """Under base_rate, S0-S2 cut at the training label rate; S3/S4 record balanced objectives."""
    manifest = dataclasses.replace(insurance.manifest, decision=DecisionRule("base_rate"))
    data = dataclasses.replace(insurance, manifest=manifest)
    results = run_audit(data, config=BenchmarkConfig(jobs=2).with_params({
        "mitigation.max_iter": 10, **SMALL
    }))
    p = float(insurance.y[insurance.train_index].mean())
    costs = f"error_rate(costs={{fp: {2 * p!r}, fn: {2 * (1 - p)!r}}})"
    objectives = {"in_processing": costs, "post_processing": "balanced_accuracy_score",
                  "relaxed_post_processing": "balanced_accuracy_score"}
    for cell in results.cells:
        decision = dict(cell.decision)
        if strategy_info(cell.strategy.value).cutoff:
            assert decision["cutoff"] == p and decision["inclusive"] is False
        else:
            assert "cutoff" not in decision
            # S5 adds which base model it post-processes ("; base model: ...")
            assert decision["objective"].split(";")[0] == objectives[cell.strategy.value]
    perf = results.performance
    rate = perf.query("strategy == 'baseline' and model == 'logistic_regression' "
                      "and metric == 'selection_rate'")["value"].iloc[0]
    assert 0 < rate < 1


@pytest.fixture(scope="module")
def insurance_fit(insurance: AuditData):  # type: ignore[no-untyped-def]
    """The insurance audit prepared and fitted once (predictions of every cell)."""
    from faircode.audit.prepared import prepare

    prepared = prepare(insurance)
    return prepared, fit(prepared, config=BenchmarkConfig(jobs=2).with_params(SMALL))


def test_one_row_per_unit_evaluates_bit_identically_to_no_unit(insurance_fit) -> None:  # type: ignore[no-untyped-def]
    """A unit column without repeats takes the row path: every table is equal bit for bit."""

    prepared, predictions = insurance_fit
    config = BenchmarkConfig(jobs=2).with_params(SMALL)
    plain = evaluate(dataclasses.replace(prepared, unit=None), predictions, config=config)
    units = np.arange(len(prepared.y), dtype=np.int64)[::-1].copy()
    with_unit = evaluate(dataclasses.replace(prepared, unit=units), predictions,
                               config=config)
    for table in ("fairness", "performance", "intersectional", "counterfactual"):
        pd.testing.assert_frame_equal(getattr(plain, table), getattr(with_unit, table),
                                      check_exact=True)
    assert set(plain.fairness["design_effect"]) == {1.0}


def test_repeated_units_change_p_values_and_record_design_effects(insurance_fit) -> None:  # type: ignore[no-untyped-def]
    """Pairs of test rows as one unit: unit-level tests, design effects, run.json summary."""
    from faircode.evaluate.write import design_effect_summary

    prepared, predictions = insurance_fit
    config = BenchmarkConfig(jobs=2).with_params(SMALL)
    units = np.arange(len(prepared.y), dtype=np.int64) // 2
    results = evaluate(dataclasses.replace(prepared, unit=units), predictions,
                             config=config)
    plain = evaluate(dataclasses.replace(prepared, unit=None), predictions, config=config)
    fairness = results.fairness
    pd.testing.assert_series_equal(fairness["value"], plain.fairness["value"])
    assert not np.array_equal(fairness["p_value"].to_numpy(), plain.fairness["p_value"].to_numpy(),
                              equal_nan=True)
    assert np.isfinite(fairness["design_effect"]).mean() > 0.9
    summary = design_effect_summary(results, unit="pair")
    assert set(summary["fairness"]) == set(FAIRNESS_METRICS)
    parity = fairness.loc[fairness["metric"] == "demographic_parity_diff", "design_effect"]
    assert summary["fairness"]["demographic_parity_diff"]["median"] == pytest.approx(
        float(np.median(parity)))


def test_mde_columns_equal_power_module_values(insurance_fit) -> None:  # type: ignore[no-untyped-def]
    """fairness.csv's mde/powered/mde_note equal power.detectable_gap on the row's counts."""
    from faircode.audit.decision import decision_cutoff, resolve_rule
    from faircode.stats.metrics import orient
    from faircode.stats.power import detectable_gap
    from faircode.stats.resampling import confusion_counts

    prepared, predictions = insurance_fit
    config = BenchmarkConfig(jobs=2).with_params(SMALL)
    results = evaluate(dataclasses.replace(prepared, unit=None), predictions, config=config)
    cell = next(c for c in predictions.cells if c.strategy.value == "baseline"
                and c.family.value == "logistic_regression")
    test = prepared.test_index
    rule = resolve_rule(prepared.manifest.decision,
                        default_threshold=config.models.decision_threshold)
    cutoff = decision_cutoff(rule, train_scores=cell.train_score,
                             train_labels=prepared.y[prepared.train_index])
    y_pred, _ = cell.decisions(cutoff)
    favourable = prepared.manifest.target.favourable
    y_fav, yhat_fav = orient(prepared.y[test], y_pred, favourable=favourable)
    attribute = prepared.manifest.protected_attributes[0].name
    mask = prepared.disadvantaged[attribute][test]
    counts_d = confusion_counts(y_fav[mask], yhat_fav[mask])
    counts_a = confusion_counts(y_fav[~mask], yhat_fav[~mask])
    rows = results.fairness.query("strategy == 'baseline' and model == 'logistic_regression' "
                                  "and protected_attribute == @attribute")
    assert len(rows) == len(FAIRNESS_METRICS)
    for _, row in rows.iterrows():
        expected = detectable_gap(row["metric"], counts_d, counts_a, value=row["value"],
                                  alpha=config.stats.alpha, power=config.stats.power)
        assert row["mde"] == pytest.approx(expected.mde, nan_ok=True), row["metric"]
        assert row["powered"] == expected.powered
        assert row["mde_note"] == expected.note
        value = np.log(row["value"]) if row["metric"] == "disparate_impact_ratio" else row["value"]
        assert row["powered"] == bool(abs(value) >= row["mde"])  # NaN mde: never powered
    inter = results.intersectional
    assert {"mde", "powered", "mde_note", "design_effect"} <= set(inter.columns)
    assert (inter["powered"] == (inter["gap"].abs() >= inter["mde"])).all()
