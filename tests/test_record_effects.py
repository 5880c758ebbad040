"""Tests of faircode.record.runs' effect metrics: effects.csv on the strategy's child runs."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from test_report import record_files
from test_tracking import write_results

from faircode.record.kinds import collect_children
from faircode.record.runs import ChildRun


def _write_effects(results: Path) -> None:
    """Two effect rows of alpha_lending's reweighing forest on age: one defined, one not."""
    rows = [{"audit": "alpha_lending", "strategy": "reweighing", "reference": "baseline",
             "model": "random_forest", "protected_attribute": "age", "metric": metric,
             "value": value, "ci_low": low, "ci_high": low + 0.26, "ci_method": "paired_signed_box",
             "p_value": p, "q_value": p, "significant": p == 0.002,
             "verdict": "reduced" if p == 0.002 else "uninformative", "note": note}
            for metric, value, low, p, note in (
                ("demographic_parity_diff", -0.125, -0.25, 0.002, ""),
                ("disparate_impact_ratio", float("nan"), float("nan"), float("nan"),
                 "undefined_advantaged_rate_zero"))]
    pd.DataFrame(rows).to_csv(results / "alpha_lending" / "effects.csv", index=False)
    pooled = [{**{k: rows[0][k] for k in ("audit", "strategy", "reference", "model",
                                          "protected_attribute", "metric")},
               "seeds": 5, "seed_mode": "split", "mean": -0.1, "combined_ci_low": float("nan"),
               "sign_flips": True, "note": ""}]
    pd.DataFrame(pooled).to_csv(results / "alpha_lending" / "effects_stability.csv", index=False)
    record_files(results / "alpha_lending")


def _run(results: Path, strategy: str, model: str, attribute: str) -> ChildRun:
    children, _ = collect_children(results)
    return next(c for c in children if c.tags["table"] == "fairness"
                and (c.audit, c.tags["strategy"], c.tags["model"], c.tags["attribute"])
                == ("alpha_lending", strategy, model, attribute))


def _child(results: Path, strategy: str, model: str, attribute: str) -> dict[str, float]:
    return dict(_run(results, strategy, model, attribute).metrics)


def test_effects_are_metrics_of_the_strategys_child_and_nan_is_not_logged(tmp_path: Path) -> None:
    """The reweighing forest's age child gets effect_vs_S0.<metric> with effects.csv's columns
    in the short codes of the other metrics (dp, .lo, .q_audit); nothing of the undefined effect
    and nothing of effects_stability.csv (its numbers are effects.csv's at K > 1)."""
    results = write_results(tmp_path / "results", seed=1)
    _write_effects(results)
    metrics = _child(results, "reweighing", "random_forest", "age")
    effect = {k: v for k, v in metrics.items() if k.startswith("effect_vs_")}
    dp = "effect_vs_S0.dp"
    assert effect == {dp: -0.125, f"{dp}.lo": -0.25, f"{dp}.hi": -0.25 + 0.26,
                      f"{dp}.p": 0.002, f"{dp}.q_audit": 0.002, f"{dp}.sig_audit": 1.0}
    assert all(math.isfinite(v) for v in effect.values())


def test_an_effects_verdict_is_a_tag_of_the_strategys_child(tmp_path: Path) -> None:
    """effects.csv's verdict of a defined effect is the tag effect_vs_S0.dp.verdict."""
    results = write_results(tmp_path / "results", seed=1)
    _write_effects(results)
    tags = _run(results, "reweighing", "random_forest", "age").tags
    assert tags["effect_vs_S0.dp.verdict"] == "reduced" and "effect_vs_S0.di.verdict" not in tags


def test_other_children_get_no_effect_metrics(tmp_path: Path) -> None:
    """The reference's child and another attribute's child hold no effect metric."""
    results = write_results(tmp_path / "results", seed=1)
    _write_effects(results)
    for strategy, attribute in (("baseline", "age"), ("reweighing", "sex")):
        metrics = _child(results, strategy, "random_forest", attribute)
        assert not any(k.startswith("effect_vs_") for k in metrics)


def test_children_say_whether_training_variance_is_included(tmp_path: Path) -> None:
    """run.json's training_variance becomes every child's tag: "not included" at K = 1."""
    import json

    results = write_results(tmp_path / "results", seed=1)
    run_json = results / "alpha_lending" / "run.json"
    run = json.loads(run_json.read_text())
    run["training_variance"] = {"included": False, "replicates": 1, "note": "..."}
    run_json.write_text(json.dumps(run))
    children, _ = collect_children(results)
    tags = {c.tags.get("training_variance") for c in children if c.audit == "alpha_lending"}
    assert tags == {"not included (run.seeds 1)"}


def test_cost_swap_test_and_verdict_reach_the_child(tmp_path: Path) -> None:
    """effects.csv's Δ balanced accuracy, the swap test's columns and the verdict go to the
    strategy's child: effect_vs_S0.bacc, .swap_p/.swap_q, and the tag ….dp.verdict."""
    results = write_results(tmp_path / "results", seed=1)
    base = {"audit": "alpha_lending", "strategy": "reweighing", "reference": "baseline",
            "model": "random_forest", "protected_attribute": "age", "ci_method": "x",
            "note": ""}
    rows = [{**base, "metric": "demographic_parity_diff", "value": -0.1, "swap_p_value": 0.01,
             "swap_q_value": 0.02, "verdict": "reduced"},
            {**base, "metric": "balanced_accuracy", "value": -0.03, "swap_p_value": 0.2,
             "swap_q_value": 0.3, "verdict": "inconclusive"}]
    pd.DataFrame(rows).to_csv(results / "alpha_lending" / "effects.csv", index=False)
    (results / "alpha_lending" / "effects_stability.csv").unlink(missing_ok=True)
    record_files(results / "alpha_lending")  # the folder as its writer records it
    children, _ = collect_children(results)
    child = next(c for c in children if c.tags["table"] == "fairness"
                 and (c.tags["strategy"], c.tags["model"], c.tags["attribute"])
                 == ("reweighing", "random_forest", "age"))
    assert child.metrics["effect_vs_S0.bacc"] == -0.03
    assert (child.metrics["effect_vs_S0.dp.swap_p"], child.metrics["effect_vs_S0.dp.swap_q"]) \
        == (0.01, 0.02)
    assert child.tags["effect_vs_S0.dp.verdict"] == "reduced"
    assert child.tags["effect_vs_S0.bacc.verdict"] == "inconclusive"


def test_an_uninformative_cell_is_tagged_not_valued_and_q_reads_short(tmp_path: Path) -> None:
    """A fairness row whose verdict is uninformative logs no value, interval or test on its
    child -- its verdict tag says why, its group sizes stay -- and a q-value of 2.124e-08 is
    logged as 2.12e-08, so MLflow's runs table shows its exponent."""
    results = write_results(tmp_path / "results", seed=1)
    path = results / "alpha_lending" / "fairness.csv"
    fairness = pd.read_csv(path)
    fairness["verdict"] = "inconclusive"
    dead = ((fairness["strategy"] == "baseline") & (fairness["model"] == "random_forest")
            & (fairness["protected_attribute"] == "age"))
    fairness.loc[dead, "verdict"] = "uninformative"
    live = ((fairness["strategy"] == "baseline") & (fairness["model"] == "logistic_regression")
            & (fairness["protected_attribute"] == "age")
            & (fairness["metric"] == "demographic_parity_diff"))
    fairness.loc[live, "q_value"] = 2.12417292e-08
    fairness.to_csv(path, index=False)
    record_files(results / "alpha_lending")
    dead_run = _run(results, "baseline", "random_forest", "age")
    assert not any(k == "dp" or (k.startswith("dp.") and k not in ("dp.n_dis", "dp.n_adv"))
                   for k in dead_run.metrics)
    assert {"dp.n_dis", "dp.n_adv"} <= set(dead_run.metrics)
    assert dead_run.tags["fairness.demographic_parity_diff.verdict"] == "uninformative"
    assert _child(results, "baseline", "logistic_regression", "age")["dp.q_audit"] == 2.12e-08
