"""Tests of the matched-violation comparison (faircode.evaluate.matched), the frontier
(faircode.evaluate.frontier) and the claim's headline sentence (faircode.report.matched)."""

from __future__ import annotations

import pandas as pd
import pytest

from faircode.audit.data import load_audit
from faircode.audit.decision import resolve_rule
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.cells import ModelFamily, Strategy
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.frontier import distance_interval, frontier_table
from faircode.evaluate.matched import match_point, matched_table
from faircode.evaluate.score import score_cell
from faircode.grid import strategies
from faircode.grid.fit import fit_cell
from faircode.report.matched import claim_sentence

S3, S4, S5 = Strategy.IN_PROCESSING, Strategy.POST_PROCESSING, Strategy.RELAXED_POST_PROCESSING
CURVE = {"tolerances": (0.0, 0.01, 0.02, 0.05), "violations": (0.0, 0.009, 0.019, 0.036)}


def test_a_target_between_two_points_is_their_linear_mixture() -> None:
    """A violation between two points' gets the weight that interpolates it, and the tolerance
    between theirs."""
    m = match_point(CURVE["violations"], 0.0161, **CURVE)
    assert (m.lower, m.where) == (1, "interpolated")
    assert m.weight == pytest.approx((0.0161 - 0.009) / 0.010)
    assert m.tolerance == pytest.approx(0.01 + m.weight * 0.01)
    assert m.violation == pytest.approx(0.0161)


@pytest.mark.parametrize(("target", "expected"), [
    (0.0, (0, 0.0, "at_point")), (0.019, (2, 0.0, "at_point")), (0.2, (3, 0.0, "above_curve")),
    (-0.1, (0, 0.0, "below_curve"))])
def test_a_target_on_a_point_or_beyond_the_curve_takes_that_point(
        target: float, expected: tuple[int, float, str]) -> None:
    """On a point: that point; beyond either end: the nearest end, and ``where`` says so."""
    m = match_point(CURVE["violations"], target, **CURVE)
    assert (m.lower, m.weight, m.where) == expected


def test_a_fixed_tolerance_is_matched_on_the_tolerance_scale() -> None:
    """S4's comparison is read at ε = 0 on the tolerances, whatever the violations are."""
    m = match_point(CURVE["tolerances"], 0.0, **CURVE)
    assert (m.lower, m.weight, m.tolerance, m.where) == (0, 0.0, 0.0, "at_point")


def test_distance_from_parity_of_an_interval() -> None:
    """|gap| with the interval of |·|: [0, max |end|] across 0, else the ends' absolute values."""
    assert distance_interval(-0.1, -0.2, 0.05) == (0.1, 0.0, 0.2)
    assert distance_interval(-0.1, -0.2, -0.05) == (0.1, 0.05, 0.2)


@pytest.fixture(scope="module")
def german_cells(audit_repo) -> tuple[PreparedAudit, list, list, BenchmarkConfig]:  # type: ignore[no-untyped-def]
    """German credit's S3, S4 and S5 logistic-regression cells, fitted and scored (S5 with
    S4's base model as its only candidate)."""
    data = prepare(load_audit(audit_repo.manifests["german_credit_lending"]))
    config = BenchmarkConfig(jobs=1).with_params({
        "mitigation.max_iter": 10, "stats.n_resamples": 200, "stats.n_permutations": 200})
    patch = pytest.MonkeyPatch()
    patch.setattr(strategies, "CANDIDATES", (Strategy.UNAWARENESS_PROXY_REMOVAL,))
    try:
        cells = [fit_cell(data, s, ModelFamily.LOGISTIC_REGRESSION, mitigation=config.mitigation,
                          seed=data.manifest.random_state, train=data.train_index,
                          test=data.test_index, perturbed=None, keep_train_scores=True)
                 for s in (S3, S4, S5)]
    finally:
        patch.undo()
    rule = resolve_rule(data.manifest.decision, default_threshold=0.5)
    results = [score_cell(data, c, rule=rule, stats=config.stats, degenerate=config.degenerate)
               for c in cells]
    return data, cells, results, config


def test_matched_table_reads_the_curve_at_s3s_violation_and_s4s_tolerance(german_cells) -> None:  # type: ignore[no-untyped-def]
    """S5 against S3 is read at S3's own training violation, S5 against S4 at ε = 0 -- with S4's
    base model a difference of exactly 0 and no difference shown; every row has its verdict,
    and the table is the same on a second call (seeds by name)."""
    data, cells, results, config = german_cells
    table = matched_table(data, results, cells, stats=config.stats)
    s3 = table[(table["reference"] == S3.value)]
    assert list(s3["metric"]) == ["accuracy", "balanced_accuracy"]
    assert (s3["reference_violation"] == cells[0].violations[0]).all()
    assert (s3["strategy_violation"] - cells[0].violations[0]).abs().max() < 1e-12
    assert set(s3["match"]) <= {"interpolated", "at_point"}
    s4 = table[table["reference"] == S4.value]
    assert (s4["tolerance"] == 0.0).all() and (s4["value"] == 0.0).all()
    assert set(s4["verdict"]) == {"no_difference"}
    assert table["verdict"].notna().all() and table["q_value"].notna().all()
    pd.testing.assert_frame_equal(table, matched_table(data, results, cells, stats=config.stats))


def test_the_frontiers_first_curve_point_is_the_main_tables_s5_row(german_cells) -> None:  # type: ignore[no-untyped-def]
    """S5's ε = 0 point of frontier.csv is its main-table row (same decisions, same seed
    position), every tolerance has a row, and the strategies that enforce the constraint carry
    their training violation."""
    data, cells, results, config = german_cells
    frame = frontier_table(data, results, cells, constraint="demographic_parity",
                           stats=config.stats, degenerate=config.degenerate)
    s5 = frame[frame["strategy"] == S5.value]
    assert list(s5["tolerance"]) == list(cells[2].tolerances)
    first = data.manifest.protected_attributes[0].name
    main = next(r for r in results[2].fairness.records() if r["protected_attribute"] == first
                and r["metric"] == "demographic_parity_diff")
    assert s5["violation"].iloc[0] == abs(main["value"])
    accuracy = next(r for r in results[2].performance.records() if r["metric"] == "accuracy")
    assert s5["accuracy"].iloc[0] == accuracy["value"]
    assert frame.loc[frame["strategy"] == S3.value, "train_violation"].iloc[0] == \
        cells[0].violations[0]


def _row(audit: str, metric: str, verdict: str, *, reference: str = S3.value) -> dict:
    """A matched row whose numbers give ``verdict`` in the benchmark's family."""
    numbers = {"better": (0.05, 0.03, 0.07, 0.001, 1.0), "worse": (-0.05, -0.07, -0.03, 0.001, 1.0),
               "no_difference": (0.001, -0.005, 0.005, 0.8, 0.001),
               "inconclusive": (0.01, -0.03, 0.05, 0.6, 0.5)}[verdict]
    value, low, high, p, eq = numbers
    return {"audit": audit, "strategy": S5.value, "reference": reference,
            "model": "logistic_regression", "metric": metric, "value": value, "ci_low": low,
            "ci_high": high, "p_value": p, "equivalence_p_value": eq,
            "verdict": "better"}  # the audit's own verdict: never what the sentence counts


MATCHED = pd.DataFrame([
    _row("a", "accuracy", "better"), _row("a", "balanced_accuracy", "worse"),
    _row("b", "accuracy", "worse"), _row("b", "balanced_accuracy", "no_difference"),
    _row("c", "accuracy", "inconclusive"), _row("c", "balanced_accuracy", "better"),
    _row("a", "accuracy", "worse", reference=S4.value),
])


def _runs(rules: dict[str, str]) -> dict[str, dict]:
    return {a: {"decision": {"rule": r}, "config": {"cost_margin": 0.02}}
            for a, r in rules.items()}


def test_the_claim_is_counted_on_each_audits_objective() -> None:
    """Each cell counts once, on its audit's objective (balanced accuracy at base_rate), from
    the benchmark-wide verdicts; S4's comparison and the audits' own verdicts are not counted."""
    sentence = claim_sentence(MATCHED, _runs({"a": "threshold", "b": "base_rate",
                                              "c": "threshold"}), alpha=0.05)
    assert sentence == (
        "Relaxed post-processing of the most accurate model (S5, relaxed ThresholdOptimizer) "
        "matches or beats S3 at S3's own training violation in 2 of 3 cells (audit x model "
        "family, on each audit's objective: better in 1, no difference within \u00b10.02 in 1; "
        "benchmark-wide q < 0.05); S3 is better, shown, in 0; inconclusive in 1.")


def test_the_wrong_objective_gives_another_sentence() -> None:
    """Read on accuracy everywhere (audit b's rule taken as threshold), the same rows give a
    different count: the sentence follows the rule, not the row order."""
    right = claim_sentence(MATCHED, _runs({"a": "threshold", "b": "base_rate",
                                           "c": "threshold"}), alpha=0.05)
    wrong = claim_sentence(MATCHED, _runs({"a": "threshold", "b": "threshold",
                                           "c": "threshold"}), alpha=0.05)
    assert wrong != right
    assert "in 1 of 3 cells" in wrong and "S3 is better, shown, in 1" in wrong


def test_no_matched_rows_no_sentence() -> None:
    """Without matched comparisons (no S5 in the results) the headline gains nothing."""
    assert claim_sentence(pd.DataFrame(), {}, alpha=0.05) == ""
