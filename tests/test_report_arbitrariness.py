"""Tests of the report's view of arbitrariness and multiplicity (faircode.report.arbitrariness):
the headline's sentence on the gap after abstention, its tables and figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faircode.core.cells import Strategy
from faircode.core.metrics import Metric
from faircode.report.arbitrariness import (
    abstention_figure,
    abstention_sentence,
    arbitrariness_table,
    multiplicity_figure,
    multiplicity_table,
    survival_counts,
)
from faircode.report.findings import AuditFinding, StrategyFinding
from faircode.report.inputs import ReportInputs
from faircode.report.tables import Context, to_markdown

S0, S2 = Strategy.BASELINE.value, Strategy.UNAWARENESS_PROXY_REMOVAL.value
DP = Metric.DEMOGRAPHIC_PARITY.value
MODELS = ("logistic_regression", "random_forest", "gradient_boosting")


def _finding(audit: str, attribute: str = "race") -> AuditFinding:
    return AuditFinding(audit, attribute, -0.1, StrategyFinding("S0", ("gap",)), ())


def _row(audit: str, model: str, single: str, survives: object, *, attribute: str = "race",
         strategy: str = S0, rate: float = 0.2) -> dict[str, object]:
    after = "gap" if survives is True else "inconclusive"
    return {"audit": audit, "strategy": strategy, "model": model, "protected_attribute": attribute,
            "metric": DP, "bags": 21, "consistency_level": 0.8, "abstention_rate": rate,
            "value": -0.08, "ci_low": -0.12, "ci_high": -0.04, "verdict": after, "note": "",
            "single_value": -0.1, "single_ci_low": -0.14, "single_ci_high": -0.06,
            "single_verdict": single, "survives": survives}


# a1: the gap survives in one family of two; a2: in its one gapped family (its second
# attribute's loss and S2's rows do not count); a3: no single model shows a gap; a4: it is gone
ROWS = pd.DataFrame([
    _row("a1", "logistic_regression", "gap", True),
    _row("a1", "random_forest", "gap", False, rate=0.35),
    _row("a2", "logistic_regression", "gap", True, rate=0.05),
    _row("a2", "random_forest", "inconclusive", pd.NA),
    _row("a2", "logistic_regression", "gap", False, attribute="sex"),
    _row("a3", "logistic_regression", "parity", pd.NA),
    _row("a4", "logistic_regression", "gap", False),
    _row("a4", "logistic_regression", "gap", True, strategy=S2),
])
ITEMS = tuple(_finding(a) for a in ("a1", "a2", "a3", "a4", "a5"))


def test_survival_is_counted_per_audit_over_every_gapped_family_of_its_first_attribute() -> None:
    """Four audits with ensembles, three with a single model's gap: it survives in every such
    family in one, in some in one, in none in one."""
    found = survival_counts(ITEMS, ROWS, metric=DP, models=MODELS)
    assert found is not None
    assert (found.bagged, found.shown, found.every, found.some) == (4, 3, 1, 1)
    assert found.abstention == (0.05, 0.35) and (found.bags, found.level) == (21, 0.8)


def test_the_sentence_says_in_how_many_audits_the_gap_survives_abstention() -> None:
    """The sentence of those counts, word for word."""
    assert abstention_sentence(ITEMS, ROWS, metric=DP, models=MODELS) == (
        "Abstaining where S0's 21 bagged models disagree (self-consistency below 0.8), the "
        f"{DP} gap on the first protected attribute survives in 1 of the 3 audits "
        "where a single S0 model of a bagged family shows it (in every such family; in some "
        "families only: 1; in none: 1); S0's ensembles abstain on 0.05\u20130.35 of the test "
        "rows.")


def test_the_wrong_rules_give_another_sentence() -> None:
    """On this input each wrong rule counts otherwise than "1 of 3, some only: 1": any family
    keeping the gap (2), every attribute's rows (0), S2's rows with S0's ("some only": 2)."""
    gapped = ROWS[ROWS["single_verdict"] == "gap"].assign(kept=lambda f: f["survives"] == True)  # noqa: E712
    first = gapped[gapped["protected_attribute"] == "race"]
    any_family = first[first["strategy"] == S0].groupby("audit")["kept"].any().sum()
    every_attribute = gapped[gapped["strategy"] == S0].groupby("audit")["kept"].all().sum()
    grouped = first.groupby("audit")["kept"]
    blind = int((grouped.any() & ~grouped.all()).sum())
    assert (any_family, every_attribute, blind) == (2, 0, 2)
    sentence = abstention_sentence(ITEMS, ROWS, metric=DP, models=MODELS)
    assert "survives in 1 of the 3" in sentence and "in some families only: 1;" in sentence


def test_no_ensemble_no_sentence_and_no_gap_is_said() -> None:
    """Without bagged rows the headline has no sentence; with no single gap it says so."""
    assert abstention_sentence(ITEMS, ROWS.iloc[0:0], metric=DP, models=MODELS) == ""
    quiet = ROWS[ROWS["audit"] == "a3"]
    assert "is shown by no single S0 model of a bagged family in the 1 audit with" in (
        abstention_sentence(ITEMS, quiet, metric=DP, models=MODELS))
    read = ROWS.astype({"survives": object}).assign(
        survives=ROWS["survives"].map(lambda v: "" if v is pd.NA else str(v)))
    assert survival_counts(ITEMS, read, metric=DP, models=MODELS) == survival_counts(
        ITEMS, ROWS, metric=DP, models=MODELS)  # as read back from the CSV


def _context() -> Context:
    empty = pd.DataFrame()
    shares = pd.DataFrame([{"audit": "a1", "strategy": S0, "model": m,
                            "protected_attribute": "race", "group": g, "bags": 21,
                            "consistency_level": 0.8, "n": 100, "n_arbitrary": 20,
                            "share": 0.2, "ci_low": 0.13, "ci_high": 0.29}
                           for m in MODELS[:2] for g in ("disadvantaged", "advantaged")])
    multiplicity = pd.DataFrame([{
        "audit": "a1", "protected_attribute": "race", "metric": DP, "tolerance": 0.01,
        "n_models": 50, "n_set": 12, "gap_min": -0.2, "gap_max": -0.05, "value": -0.06,
        "ci_low": -0.1, "ci_high": -0.02, "q_value": 0.01, "accuracy_difference": -0.002,
        "accuracy_ci_low": -0.008, "accuracy_ci_high": 0.004, "equivalence_q_value": 0.01,
        "shown": True, "verdict": "shown", "note": ""}])
    rng = np.random.default_rng(0)
    models = pd.DataFrame({"audit": "a1", "protected_attribute": "race",
                           "model_id": [f"S0/logistic_regression/b{i}" for i in range(6)],
                           "strategy": S0, "model": "logistic_regression",
                           "member": [-1, 0, 1, 2, 3, 4], "accuracy": rng.uniform(0.7, 0.8, 6),
                           "gap": rng.uniform(-0.2, 0, 6),
                           "in_set": [True, True, False, True, True, False],
                           "role": ["incumbent", "", "", "alternative", "", ""]})
    inputs = ReportInputs(empty, empty, empty, empty, runs={"a1": {}},
                          self_consistency=shares, arbitrariness=ROWS[ROWS["audit"] == "a1"],
                          multiplicity=multiplicity, multiplicity_models=models)
    return Context(inputs=inputs, fairness=empty, metric=DP, models=MODELS, alpha=0.05,
                   confidence=0.95)


def test_the_tables_show_the_shares_both_gaps_and_the_alternative() -> None:
    """The arbitrariness table has a row per family with both groups' shares and the two gaps
    (a gap shown starred); the multiplicity table stars an alternative shown."""
    ctx = _context()
    table = arbitrariness_table(ctx)
    assert table is not None
    (code, rows), = table.sections
    assert code == "S0" and [r[0] for r in rows] == [("a1", "race", "logistic_regression",
                                                      "0.20"),
                                                     ("a1", "race", "random_forest", "0.35")]
    assert [c.text for c in rows[0][1]] == ["0.20", "0.20", "-0.100", "-0.080"]
    assert [c.mark for c in rows[1][1][2:]] == ["*", ""]
    shown = multiplicity_table(ctx)
    assert shown is not None
    (_, [(stub, cells)]), = shown.sections
    assert stub == ("a1", "race", "12 of 50", "-0.20 to -0.05")
    assert [c.mark for c in cells] == ["*", "="]
    assert "arbitrary, disadvantaged" in to_markdown(table)


def test_the_figures_are_drawn(tmp_path: Path) -> None:
    """The abstention figure across audits and the audit's multiplicity figure are written."""
    ctx = _context()
    across = abstention_figure(ctx, tmp_path)
    per_audit = multiplicity_figure(ctx, "a1", tmp_path)
    assert across is not None and across.png.is_file() and across.kind == "abstention"
    assert per_audit is not None and per_audit.pdf.is_file() and per_audit.audit == "a1"
