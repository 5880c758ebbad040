"""Tests of faircode.report.effects: the effects' family, stable stars, the paired floor."""

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
    residual_floor,
    shown_effects,
    stable_mark,
    training_variance_note,
)
from faircode.report.inputs import load_results

POOLED = ("seeds", "combined_ci_low", "combined_ci_high", "sign_flips", "n_defined",
          "n_degenerate")


def test_effects_family_counts_tpr_gap_once() -> None:
    """BH over (0.01, 0.02, 0.04) gives (0.03, 0.03, 0.04); tpr_gap takes equal opportunity's q."""
    effects = pd.DataFrame({
        "audit": ["a", "a", "a", "b"], "strategy": "in_processing", "reference": "baseline",
        "model": "random_forest", "protected_attribute": "age",
        "metric": ["equal_opportunity_diff", "tpr_gap", "accuracy", "accuracy"],
        "p_value": [0.02, 0.02, 0.01, 0.04]})
    assert effect_q_benchmark(effects).tolist() == pytest.approx([0.03, 0.03, 0.03, 0.04])


def _marks(rows: list[dict[str, object]], *, interval: bool = False) -> list[bool]:
    return stable_mark(pd.DataFrame(rows), alpha=0.05, null=0.0, interval=interval).tolist()


def test_one_replicate_stars_by_q_alone_for_gaps_and_q_and_interval_for_effects() -> None:
    """K = 1: a gap with q < alpha is starred whatever its interval; an effect needs its
    interval to exclude 0 as well."""
    rows = [{"q_value": 0.01, "ci_low": -0.1, "ci_high": 0.2},
            {"q_value": 0.01, "ci_low": 0.05, "ci_high": 0.2},
            {"q_value": 0.20, "ci_low": 0.05, "ci_high": 0.2}]
    assert _marks(rows) == [True, True, False]
    assert _marks(rows, interval=True) == [False, True, False]


def test_replicates_star_only_a_significant_sign_stable_complete_finding() -> None:
    """K = 5: starred only with q < alpha, the pooled interval excluding 0, no sign flip, all
    five replicates defined and none degenerate; a K = 1 row of the same frame by q alone."""
    base = {"q_value": 0.01, "ci_low": 0.1, "ci_high": 0.2, "seeds": 5,
            "combined_ci_low": 0.02, "combined_ci_high": 0.3, "sign_flips": False,
            "n_defined": 5, "n_degenerate": 0}
    rows = [base, {**base, "q_value": 0.2}, {**base, "combined_ci_low": -0.01},
            {**base, "sign_flips": True}, {**base, "n_defined": 4},
            {**base, "n_degenerate": 1}, {**base, "seeds": 1, "combined_ci_low": -1.0}]
    assert _marks(rows) == [True, False, False, False, False, False, True]


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


def test_replicates_replace_value_interval_and_star_by_the_pooled_ones(tmp_path: Path) -> None:
    """With effects_stability.csv a row shows the mean and the pooled interval, and a sign flip
    takes its star away."""
    root = _effects_inputs(tmp_path, seeds=5)
    effects = effect_rows("audit_a", ("sex",))
    pooled = effects.loc[:, ["audit", "strategy", "reference", "model", "protected_attribute",
                             "metric", "note"]].assign(
        seeds=5, seed_mode="split", value_replicate0=effects["value"],
        mean=effects["value"] + 0.001, sd_between=0.01, n_defined=5, share_significant=0.8,
        sign_flips=False, combined_ci_low=effects["ci_low"] - 0.01,
        combined_ci_high=effects["ci_high"] + 0.01, n_degenerate=0)
    flipped = (pooled["strategy"] == "post_processing") & (pooled["reference"] == "baseline")
    pooled.loc[flipped, "sign_flips"] = True
    pooled.to_csv(root / "audit_a" / "effects_stability.csv", index=False)
    record_files(root / "audit_a")
    shown = shown_effects(load_results(root), alpha=0.05)
    np.testing.assert_allclose(shown["value"], effects["value"] + 0.001)
    np.testing.assert_allclose(shown["ci_low"], effects["ci_low"] - 0.01)
    dp = shown[shown["metric"] == DP]
    assert not dp[(dp["strategy"] == "post_processing") & (dp["reference"] == "baseline")][
        "mark"].any()
    assert dp[(dp["strategy"] == "in_processing") & (dp["reference"] == "baseline")][
        "mark"].all()


def test_paper_table_at_k5_shows_the_mean_and_loses_an_unstable_star(tmp_path: Path) -> None:
    """A starred S0 gap whose sign flips across five replicates keeps its mean and pooled
    interval but loses its star; the caption says K = 5."""
    from faircode.evaluate.stability import STABILITY_COLUMNS

    root = _effects_inputs(tmp_path, seeds=5)
    fairness = pd.read_csv(root / "audit_a" / "fairness.csv")
    rows = fairness.loc[fairness["metric"] == DP, ["audit", "strategy", "model",
                                                   "protected_attribute", "metric", "note"]]
    stability = rows.assign(
        seeds=5, seed_mode="split", value_replicate0=0.0, mean=-0.123, sd_between=0.05,
        min=-0.3, max=0.1, n_defined=5, share_significant=0.6, sign_flips=True,
        sd_bootstrap=0.03, combined_ci_low=-0.25, combined_ci_high=-0.01, n_degenerate=0)
    stability.reindex(columns=list(STABILITY_COLUMNS)).to_csv(
        root / "audit_a" / "stability.csv", index=False)
    record_files(root / "audit_a")
    write_report(root)
    text = (root / "paper_table.md").read_text()
    assert _table_row(text, "audit_a", "sex", "logistic_regression")[2] == \
        "-0.123 [-0.250, -0.010]"
    assert "K = 5 training replicates" in text


def test_one_replicate_says_training_variance_is_not_included(tmp_path: Path) -> None:
    """Every caption of a K = 1 report says training variance is not included."""
    root = _effects_inputs(tmp_path)
    assert "training variance not included" in training_variance_note(load_results(root))
    write_report(root)
    for name in ("paper_table.md", "effects_table.md", "residual_floor_table.md"):
        assert "training variance not included" in (root / name).read_text(), name
    assert "training variance not included" in (root / "report.html").read_text()


def test_effects_table_shows_delta_parity_and_delta_accuracy(tmp_path: Path) -> None:
    """audit_a / sex / LR: Δ |DP| of S3-S2 reads -0.050 [-0.070, -0.030]* and Δ accuracy
    -0.010 [-0.030, 0.010] (no star: p 0.5)."""
    root = _effects_inputs(tmp_path)
    write_report(root)
    lines = (root / "effects_table.md").read_text().splitlines()
    header = next(x for x in lines if x.startswith("| audit"))
    assert [c.strip() for c in header.strip("|").split(" | ")][3:] == [
        "S1-S0", "S2-S0", "S3-S0", "S4-S0", "S3-S2", "S4-S2"]
    rows = [[c.strip() for c in x.strip("|").split(" | ")] for x in lines
            if x.startswith("| audit_a | sex")]
    parity, accuracy = rows[0], rows[1]
    assert parity[2] == f"Δ \\|{DP}\\|" and parity[7] == "-0.050 [-0.070, -0.030]*"
    assert accuracy[2] == "Δ accuracy" and accuracy[7] == "-0.010 [-0.030, 0.010]"
