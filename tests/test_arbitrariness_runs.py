"""Tests of the MLflow children of the bagged ensembles and the set of models
(faircode.record.arbitrariness_runs)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from faircode.core.cells import Strategy
from faircode.core.metrics import Metric
from faircode.record.arbitrariness_runs import ensemble_children, multiplicity_children
from faircode.record.child import child_digest
from faircode.record.kinds import CHILDREN

S0 = Strategy.BASELINE.value
DP = Metric.DEMOGRAPHIC_PARITY.value
PARAMS, TAGS = {"alpha": "0.05"}, {"audit": "a1", "state.code_sha256": "abc"}


def _write(folder: Path) -> None:
    rows = [{"audit": "a1", "strategy": S0, "model": "logistic_regression",
             "protected_attribute": "race", "metric": metric, "bags": 21,
             "consistency_level": 0.8, "abstention_rate": 0.2, "n_kept": 80, "value": -0.08,
             "ci_low": -0.12, "ci_high": -0.04, "p_value": 0.0123456, "q_value": 0.02,
             "verdict": "gap", "note": "", "ensemble_value": -0.09, "single_value": -0.1,
             "single_ci_low": -0.14, "single_ci_high": -0.06, "single_verdict": "gap",
             "survives": True} for metric in (DP, "equalized_odds_diff")]
    pd.DataFrame(rows).to_csv(folder / "arbitrariness.csv", index=False)
    pd.DataFrame([{"audit": "a1", "strategy": S0, "model": "logistic_regression",
                   "protected_attribute": "race", "group": g, "share": s, "ci_low": s - 0.05,
                   "ci_high": s + 0.05, "design_effect": 1.0, "mean_self_consistency": 0.9}
                  for g, s in (("disadvantaged", 0.25), ("advantaged", 0.15))]).to_csv(
        folder / "self_consistency.csv", index=False)
    pd.DataFrame([{"audit": "a1", "protected_attribute": "race", "metric": DP,
                   "tolerance": 0.01, "n_models": 50, "n_set": 12, "gap_min": -0.2,
                   "gap_max": -0.05, "incumbent": "S0/logistic_regression/r0",
                   "alternative": "S2/random_forest/b3", "value": -0.06, "ci_low": float("nan"),
                   "ci_high": -0.02, "p_value": 0.001, "q_value": 0.002,
                   "accuracy_difference": -0.002, "equivalence_q_value": 0.01, "shown": True,
                   "verdict": "shown", "note": ""}]).to_csv(folder / "multiplicity.csv",
                                                             index=False)


def test_an_ensemble_child_holds_both_gaps_the_shares_and_the_verdicts(tmp_path: Path) -> None:
    """One child per strategy x model x attribute: each metric's gaps by short code, each
    group's share, the verdict tags; p rounded to 3 digits as every child's."""
    _write(tmp_path)
    (child,) = ensemble_children(tmp_path, audit="a1", params=PARAMS, tags=TAGS)
    assert child.name == "a1 S0 LR race (ensemble)"
    assert child.metrics["dp"] == -0.08 and child.metrics["dp.single"] == -0.1
    assert child.metrics["dp.p"] == 0.0123 and child.metrics["dp.ensemble"] == -0.09
    assert child.metrics["arbitrary.dis"] == 0.25 and child.metrics["arbitrary.adv.hi"] == 0.2
    assert child.metrics["abstention_rate"] == 0.2 and child.metrics["bags"] == 21
    assert child.tags["survives.dp"] == "True" and child.tags["single_verdict.dp"] == "gap"
    assert child.params["attribute"] == "race" and child.params["alpha"] == "0.05"


def test_a_multiplicity_child_per_attribute_logs_no_empty_cell(tmp_path: Path) -> None:
    """The set's child holds the test's numbers; the empty interval end is not logged."""
    _write(tmp_path)
    (child,) = multiplicity_children(tmp_path, audit="a1", params=PARAMS, tags=TAGS)
    assert child.metrics["gap_delta"] == -0.06 and "gap_delta.lo" not in child.metrics
    assert child.metrics["shown"] == 1.0 and child.metrics["n_set"] == 12
    assert child.tags["alternative"] == "S2/random_forest/b3"
    assert child.key == "multiplicity|a1|race"


def test_no_tables_no_children_and_the_digest_ignores_the_state(tmp_path: Path) -> None:
    """An audit without the bag stage's tables has no such child; a new state alone does not
    change a child's digest."""
    assert ensemble_children(tmp_path, audit="a1", params=PARAMS, tags=TAGS) == []
    assert multiplicity_children(tmp_path, audit="a1", params=PARAMS, tags=TAGS) == []
    _write(tmp_path)
    (one,) = ensemble_children(tmp_path, audit="a1", params=PARAMS, tags=TAGS)
    (two,) = ensemble_children(tmp_path, audit="a1", params=PARAMS,
                               tags={**TAGS, "state.code_sha256": "def"})
    assert child_digest(one) == child_digest(two)
    assert CHILDREN["binary"].endswith("arbitrariness_runs:binary_children")
