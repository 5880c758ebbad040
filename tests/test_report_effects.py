"""Tests of faircode.report.effects: the effects' family, marks from verdicts, the paired floor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_report import DP, _table_row, effect_rows, record_files, write_audit_folder

from faircode.report.analysis import floor_counts
from faircode.report.build import write_report
from faircode.report.effects import (
    effect_q_benchmark,
    effect_verdicts_of,
    gap_verdicts_of,
    residual_floor,
    shown_effects,
    shown_gaps,
    training_variance_note,
)
from faircode.report.inputs import load_results


def test_effects_family_counts_tpr_gap_once() -> None:
    """BH over (0.01, 0.02, 0.04) gives (0.03, 0.03, 0.04); tpr_gap takes equal opportunity's q."""
    effects = pd.DataFrame({
        "audit": ["a", "a", "a", "b"], "strategy": "in_processing", "reference": "baseline",
        "model": "random_forest", "protected_attribute": "age",
        "metric": ["equal_opportunity_diff", "tpr_gap", "accuracy", "accuracy"],
        "p_value": [0.02, 0.02, 0.01, 0.04]})
    assert effect_q_benchmark(effects).tolist() == pytest.approx([0.03, 0.03, 0.03, 0.04])


def test_a_verdict_column_is_shown_as_written() -> None:
    """Rows with a verdict keep it, and the star is exactly verdict gap."""
    rows = pd.DataFrame({"metric": DP, "value": [-0.2, 0.01, 0.02], "ci_low": [-0.3, -0.02, -0.1],
                         "ci_high": [-0.1, 0.03, 0.2], "q_value": [0.001, 0.9, 0.9],
                         "verdict": ["gap", "parity", "inconclusive"], "note": ""})
    shown = shown_gaps(rows, metric=DP, alpha=0.05)
    assert shown["verdict"].tolist() == ["gap", "parity", "inconclusive"]
    assert shown["mark"].tolist() == [True, False, False]


def test_rows_written_before_verdicts_never_claim_parity() -> None:
    """Without a verdict column: gap where q < alpha and the interval excludes no gap,
    uninformative where degenerate, else inconclusive -- never parity."""
    rows = pd.DataFrame({"metric": [DP, DP, DP, "disparate_impact_ratio"],
                         "value": [-0.2, 0.0, -0.2, 1.4], "ci_low": [-0.3, -0.01, -0.3, 1.1],
                         "ci_high": [-0.1, 0.01, 0.05, 1.7], "q_value": [0.001, 0.9, 0.01, 0.01],
                         "note": ["", "", "degenerate_decisions", ""]})
    assert list(gap_verdicts_of(rows, alpha=0.05)) == ["gap", "inconclusive", "uninformative",
                                                        "gap"]
    effects = rows.assign(metric=DP, value=[-0.2, 0.0, 0.3, 0.3], ci_low=[-0.3, -0.1, 0.1, -0.1])
    assert list(effect_verdicts_of(effects, alpha=0.05)) == [
        "reduced", "inconclusive", "uninformative", "inconclusive"]


def _effects_inputs(tmp_path: Path, *, seeds: int = 1) -> Path:
    root = tmp_path / "results"
    write_audit_folder(root, "audit_a", ("sex",))
    if seeds > 1:
        run = json.loads((root / "audit_a" / "run.json").read_text())
        run["config"]["seeds"] = seeds
        (root / "audit_a" / "run.json").write_text(json.dumps(run))
    return root


def test_residual_floor_is_the_paired_effect_against_s2(tmp_path: Path) -> None:
    """The floor's rows are effects.csv's S3/S4 vs S2 rows of the metric, value and interval as
    written, distinguishable = the star; floor_counts counts them."""
    inputs = load_results(_effects_inputs(tmp_path))
    floor = residual_floor(shown_effects(inputs, alpha=0.05), metric=DP)
    written = effect_rows("audit_a", ("sex",))
    want = written[(written["reference"] == "unawareness_proxy_removal")
                   & (written["metric"] == DP)].reset_index(drop=True)
    assert len(floor) == 6 and floor["strategy"].tolist() == want["strategy"].tolist()
    np.testing.assert_array_equal(floor["difference"], want["value"])
    np.testing.assert_array_equal(floor["low"], want["ci_low"])
    # S3/S4 minus S2 here: (-0.05 + 0.01m) - (-0.10 + 0.01m) = -0.05, far from 0, p 0.001
    assert floor["difference"].to_numpy() == pytest.approx([-0.05] * 3 + [-0.08] * 3)
    assert floor["distinguishable"].all()
    counts = floor_counts(floor).set_index("model")
    assert (counts["audits_not_distinguishable"] == 0).all()


def test_effects_are_shown_as_effects_csv_writes_them(tmp_path: Path) -> None:
    """At K > 1 effects.csv carries the K-replicate estimates: the shown rows are its rows,
    effects_stability.csv is not read, and the star is the verdict's."""
    root = _effects_inputs(tmp_path, seeds=5)
    effects = effect_rows("audit_a", ("sex",))
    effects.assign(value=effects["value"] + 1.0).to_csv(
        root / "audit_a" / "effects_stability.csv", index=False)  # never read
    record_files(root / "audit_a")
    shown = shown_effects(load_results(root), alpha=0.05)
    np.testing.assert_allclose(shown["value"], effects["value"])
    np.testing.assert_allclose(shown["ci_low"], effects["ci_low"])
    assert shown["mark"].tolist() == list(np.isin(shown["verdict"], ["reduced", "increased"]))


def test_paper_table_at_k5_shows_fairness_csv_and_its_verdict_marks(tmp_path: Path) -> None:
    """At K = 5 the paper table prints fairness.csv's value and interval (the K-replicate
    estimate) with its verdict's mark ('=' for parity), and the caption says K = 5."""
    root = _effects_inputs(tmp_path, seeds=5)
    where = {"strategy": "baseline", "model": "logistic_regression", "metric": DP}
    fairness = pd.read_csv(root / "audit_a" / "fairness.csv")
    match = np.logical_and.reduce([fairness[k] == v for k, v in where.items()])
    fairness["verdict"] = np.where(fairness["q_value"] < 0.05, "gap", "inconclusive")
    fairness.loc[match, ["value", "ci_low", "ci_high", "verdict"]] = [-0.012, -0.03, 0.01,
                                                                      "parity"]
    fairness.to_csv(root / "audit_a" / "fairness.csv", index=False)
    record_files(root / "audit_a")
    write_report(root)
    text = (root / "paper_table.md").read_text()
    assert _table_row(text, "audit_a", "sex", "logistic_regression")[2] == \
        "-0.012 [-0.030, 0.010]="
    assert "K = 5 training replicates" in text


def test_one_replicate_says_training_variance_is_not_included(tmp_path: Path) -> None:
    """Every caption of a K = 1 report says training variance is not included."""
    root = _effects_inputs(tmp_path)
    assert "training variance not included" in training_variance_note(load_results(root))
    write_report(root)
    for name in ("paper_table.md", "effects_table.md", "residual_floor_table.md"):
        assert "training variance not included" in (root / name).read_text(), name
    assert "training variance not included" in (root / "report.html").read_text()


def test_effects_table_shows_delta_parity_accuracy_and_balanced_accuracy(
        tmp_path: Path) -> None:
    """audit_a / sex / LR: Δ |DP| of S3-S2 reads -0.050 [-0.070, -0.030]*, Δ accuracy
    -0.010 [-0.030, 0.010] (no star: p 0.5) and Δ balanced accuracy -0.040 [-0.060, -0.020]*."""
    root = _effects_inputs(tmp_path)
    write_report(root)
    lines = (root / "effects_table.md").read_text().splitlines()
    header = next(x for x in lines if x.startswith("| audit"))
    assert [c.strip() for c in header.strip("|").split(" | ")][3:] == [
        "S1-S0", "S2-S0", "S3-S0", "S4-S0", "S3-S2", "S4-S2"]
    rows = [[c.strip() for c in x.strip("|").split(" | ")] for x in lines
            if x.startswith("| audit_a | sex")]
    parity, accuracy, balanced = rows[0], rows[1], rows[2]
    assert parity[2] == f"Δ \\|{DP}\\|" and parity[7] == "-0.050 [-0.070, -0.030]*"
    assert accuracy[2] == "Δ accuracy" and accuracy[7] == "-0.010 [-0.030, 0.010]"
    assert balanced[2] == "Δ balanced accuracy" and balanced[7] == "-0.040 [-0.060, -0.020]*"
