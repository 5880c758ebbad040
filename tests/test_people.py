"""Tests of decisions made by people: a system whose decision is the recorded outcome, strata, and
the two audits (résumé callbacks, Boston mortgage denials) against their published numbers."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import AUDITS, _skip_or_fail

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.outputs import SystemOutputs
from faircode.audit.prepared import load_prepared, prepare, save_prepared
from faircode.audit.strata import covariate_frame, stratum_codes, stratum_levels
from faircode.core.config import BenchmarkConfig, DegenerateConfig, StatsConfig
from faircode.core.errors import ManifestError
from faircode.core.metrics import DECISION_METRICS, FAIRNESS_METRICS, NOT_APPLICABLE
from faircode.evaluate.deployed import (
    score_outputs,
    score_system_all_rows,
    score_system_test_rows,
)
from faircode.evaluate.tables import assemble
from faircode.evaluate.write import write_audit
from faircode.pipeline.cli import main
from faircode.report.build import write_report
from faircode.report.tables import NOT_APPLICABLE_TEXT, _Footnotes, estimate_cell
from faircode.stats.adjusted import adjusted_gap
from faircode.stats.groups import group_rates
from faircode.stats.metrics import orient
from faircode.stats.stratified import heterogeneity, stratified_gap, stratum_counts

STATS = StatsConfig(n_resamples=50, n_permutations=200)
DEGENERATE = DegenerateConfig()


def toy_csv(n: int = 240) -> str:
    """Seeded rows: group a/b, a stratum s1/s2, a feature x, and a people's decision yes/no."""
    rng = np.random.default_rng(2024)
    group = np.where(np.arange(n) % 2 == 0, "a", "b")
    stratum = np.where(rng.random(n) < 0.5, "s1", "s2")
    rate = 0.2 + 0.3 * (stratum == "s2") - 0.1 * (group == "a")
    decided = np.where(rng.random(n) < rate, "yes", "no")
    x = rng.normal(size=n).round(3)
    frame = pd.DataFrame({"group": group, "stratum": stratum, "x": x, "decided": decided})
    return frame.to_csv(index=False)


DOC: dict[str, Any] = {
    "name": "toy",
    "dataset": {"path": "../../data/raw/toy/toy.csv"},
    "test_size": 0.25,
    "target": {"column": "decided", "method": "equals", "value": "yes"},
    "protected_attributes": [{"name": "grp", "type": "categorical", "column": "group",
                              "disadvantaged_values": ["a"], "advantaged_values": ["b"]}],
    "core_features": ["x"],
    "strata": [{"name": "level", "columns": ["stratum"]}],
    "decision": {"rule": "base_rate"},
    "system": {"name": "people", "title": "The people", "decision": "outcome"},
}


def write(root: Path, document: dict[str, Any] | None = None) -> Path:
    """Write the toy CSV and manifest under ``root``; return the manifest's path."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    raw = root / "data" / "raw" / "toy" / "toy.csv"  # where fetch may write it
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(toy_csv())
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document or DOC, sort_keys=False))
    return path


# ------------------------------------------------------------------------------ the manifest


def test_decision_outcome_declares_a_system_without_columns(tmp_path: Path) -> None:
    """``decision: outcome`` is the target's column, reads nothing more and has no score."""
    m = load_manifest(write(tmp_path))
    assert m.system is not None and m.system.outcome
    assert m.system.decision.column == "decided" and m.system_columns == ()
    assert m.system.decision.describe() == "the recorded outcome (decided)"
    assert m.read_columns == ("group", "x", "decided", "stratum")


@pytest.mark.parametrize(("system", "message"), [
    ({"name": "people", "decision": "outcome", "score": {"column": "x", "scale": "ordinal"}},
     "system.score: expected no score for a decision that is the recorded outcome, got "
     "{'column': 'x', 'scale': 'ordinal'} (dict)"),
    ({"name": "people", "decision": "label"},
     "system.decision: expected a mapping with a column and a rule, or 'outcome' (the decision "
     "is the recorded outcome), got 'label' (str)"),
])
def test_a_bad_outcome_system_is_one_line(tmp_path: Path, system: dict[str, Any],
                                          message: str) -> None:
    """A score beside an outcome decision, or an unknown word, is refused naming the key."""
    document = copy.deepcopy(DOC)
    document["system"] = system
    path = write(tmp_path, document)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert str(info.value) == f"{path}: {message}"


@pytest.mark.parametrize(("strata", "message"), [
    ([{"name": "level", "columns": ["group"]}],
     "strata[0].columns[0]: expected a column that is not a protected attribute's column, got "
     "'group' (str)"),
    ([{"name": "level", "columns": ["decided"]}],
     "strata[0].columns[0]: expected a column other than the target column, got 'decided' (str)"),
    ([{"name": "level", "columns": ["stratum"]}, {"name": "level", "columns": ["x"]}],
     "strata[1].name: expected a name not used by another stratum, got 'level' (str)"),
    ([], "strata: expected a non-empty list of {name, columns}, got [] (list)"),
    ([{"name": "level", "columns": ["x"], "estimator": "probit"}],
     "strata[0].estimator: expected one of mantel_haenszel, logistic_regression, got 'probit' "
     "(str)"),
])
def test_bad_strata_are_one_line(tmp_path: Path, strata: list[Any], message: str) -> None:
    """A stratum on the attribute or the target, a repeated name, an empty list: refused."""
    document = copy.deepcopy(DOC)
    document["strata"] = strata
    path = write(tmp_path, document)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert str(info.value) == f"{path}: {message}"


def test_strata_with_a_unit_are_refused(tmp_path: Path) -> None:
    """The stratified gap is row-level: a manifest with dataset.unit declares no strata."""
    document = copy.deepcopy(DOC)
    document["dataset"]["unit"] = "x"
    document["core_features"] = ["stratum"]
    document["strata"] = [{"name": "level", "columns": ["stratum"]}]
    path = write(tmp_path, document)
    with pytest.raises(ManifestError, match=r"strata: expected no strata in an audit with "
                                            r"dataset.unit"):
        load_manifest(path)


def test_a_regression_stratum_is_declared_by_its_estimator(tmp_path: Path) -> None:
    """``estimator: logistic_regression`` makes the columns covariates; the default is strata."""
    document = copy.deepcopy(DOC)
    document["strata"] = [{"name": "level", "columns": ["stratum"]},
                          {"name": "given", "columns": ["x", "stratum"],
                           "estimator": "logistic_regression"}]
    m = load_manifest(write(tmp_path, document))
    assert [(s.estimator, s.regression) for s in m.strata] == \
        [("mantel_haenszel", False), ("logistic_regression", True)]


# ------------------------------------------------------------------------------ the data


def test_the_outcome_system_decides_the_label(tmp_path: Path) -> None:
    """The system's decision is the kept rows' label, bit for bit, and says so."""
    data = load_audit(load_manifest(write(tmp_path)))
    assert data.system is not None and data.system.outcome
    assert np.array_equal(data.system.decision, data.y)
    assert data.system.rule == "the recorded outcome (decided equals 'yes')"


def test_stratum_codes_number_the_combinations_in_sorted_order() -> None:
    """Codes follow the sorted text of the value combinations; a missing value is its own."""
    frame = pd.DataFrame({"a": ["y", "x", "y", None], "b": [1, 2, 1, 2]})
    assert stratum_codes(frame, ["a", "b"]).tolist() == [1, 0, 1, 2]
    assert stratum_codes(frame, ["b"]).tolist() == [0, 1, 0, 1]


def test_stratum_levels_name_each_code() -> None:
    """Each code's level names its columns' values in code order, a missing value as one."""
    frame = pd.DataFrame({"a": ["y", "x", "y", None], "b": [1, 2, 1, 2]})
    assert stratum_levels(frame, ["a", "b"]) == ("a=x, b=2", "a=y, b=1", "a=(missing), b=2")


def test_covariates_are_numbers_and_one_indicator_per_level_but_the_first() -> None:
    """A numeric column as it is (missing: 0 and an indicator); a categorical one indicator per
    level after its first, in the categories' own order (missing last)."""
    frame = pd.DataFrame({"r": [0.5, np.nan, 2.0, 1.0],
                          "c": pd.Categorical(["lo", "hi", None, "hi"], ["lo", "mid", "hi"])})
    design = covariate_frame(frame, ["r", "c"])
    assert list(design.columns) == ["r", "r=(missing)", "c=hi", "c=(missing)"]
    assert design.to_numpy().tolist() == [[0.5, 0, 0, 0], [0, 1, 1, 0], [2, 0, 0, 1],
                                          [1, 0, 1, 0]]


def test_the_store_keeps_the_strata_and_the_outcome_flag(tmp_path: Path) -> None:
    """save/load_prepared round-trips the stratum codes and ``outcome``."""
    m = load_manifest(write(tmp_path))
    prepared = prepare(load_audit(m))
    save_prepared(prepared, tmp_path / "store")
    back = load_prepared(tmp_path / "store", manifest=m)
    assert back.system is not None and back.system.outcome
    assert list(back.strata) == ["level"]
    assert np.array_equal(back.strata["level"], prepared.strata["level"])
    assert back.stratum_levels == {"level": ("stratum=s1", "stratum=s2")}


def test_the_store_keeps_the_covariates_of_a_regression_stratum(tmp_path: Path) -> None:
    """A regression stratum's design round-trips bit for bit, terms in order."""
    document = copy.deepcopy(DOC)
    document["strata"] = [{"name": "given", "columns": ["x", "stratum"],
                           "estimator": "logistic_regression"}]
    m = load_manifest(write(tmp_path, document))
    prepared = prepare(load_audit(m))
    save_prepared(prepared, tmp_path / "store")
    back = load_prepared(tmp_path / "store", manifest=m)
    assert back.strata == {} and list(back.covariates) == ["given"]
    assert list(back.covariates["given"].columns) == ["x", "stratum=s2"]
    pd.testing.assert_frame_equal(back.covariates["given"], prepared.covariates["given"])


# ------------------------------------------------------------------------------ scoring


def _scored(tmp_path: Path) -> Any:
    data = prepare(load_audit(load_manifest(write(tmp_path))))
    result = score_system_all_rows(data, stats=STATS, degenerate=DEGENERATE)
    assert result is not None
    return data, result


def test_error_rates_of_a_decision_only_system_are_not_applicable(tmp_path: Path) -> None:
    """Every fairness metric but parity and disparate impact is NaN with the note, never 0."""
    _, result = _scored(tmp_path)
    fairness = result.fairness
    scored = fairness[fairness["metric"].isin(DECISION_METRICS)]
    blank = fairness[~fairness["metric"].isin(DECISION_METRICS)]
    assert len(blank) == len(FAIRNESS_METRICS) - len(DECISION_METRICS)
    assert blank["value"].isna().all() and blank["p_value"].isna().all()
    assert (blank["note"] == NOT_APPLICABLE).all() and not (blank["value"] == 0).any()
    assert blank["q_value"].isna().all() and (blank["mde_note"] == NOT_APPLICABLE).all()
    assert scored["value"].notna().all() and scored["q_value"].notna().all()
    assert set(scored["note"].fillna("")) <= {"", "parity_not_reachable"}  # a small toy


def test_the_parity_gap_of_people_is_their_decision_rates(tmp_path: Path) -> None:
    """The parity gap is the groups' decision-rate difference on every row."""
    data, result = _scored(tmp_path)
    dis = data.disadvantaged["grp"]
    row = result.fairness[result.fairness["metric"] == "demographic_parity_diff"].iloc[0]
    assert row["value"] == pytest.approx(data.y[dis].mean() - data.y[~dis].mean())


def test_accuracy_and_per_group_error_rates_are_not_applicable(tmp_path: Path) -> None:
    """accuracy, AUC, F1, balanced accuracy and the majority baseline; per-group TPR ... NPV
    and accuracy: NaN with the note; the selection and base rates are kept."""
    _, result = _scored(tmp_path)
    perf = result.performance.set_index("metric")
    for metric in ("accuracy", "auc", "f1", "balanced_accuracy", "majority_baseline_accuracy"):
        assert math.isnan(perf.loc[metric, "value"]) and NOT_APPLICABLE in perf.loc[metric, "note"]
    assert perf.loc["selection_rate", "value"] > 0
    groups = result.groups
    blank = groups[groups["metric"].isin(["tpr", "fpr", "fnr", "ppv", "npv", "accuracy"])]
    kept = groups[groups["metric"].isin(["base_rate", "selection_rate"])]
    assert blank["value"].isna().all() and (blank["note"].str.contains(NOT_APPLICABLE)).all()
    assert kept["value"].notna().all()


def test_a_decision_only_system_is_judged_on_its_selection_rate(tmp_path: Path) -> None:
    """Without a ground truth its balanced accuracy is undefined, yet it is not degenerate."""
    _, result = _scored(tmp_path)
    cell = result.cells[0]
    decision = dict(cell.decision)
    assert not cell.degenerate and decision["balanced_accuracy"] is None
    assert decision["rule"] == "given"


def test_the_gap_within_strata_is_the_stats_function_on_the_oriented_decisions(
        tmp_path: Path) -> None:
    """stratified.csv's row equals stratified_gap of the oriented decisions and stratum codes."""
    data, result = _scored(tmp_path)
    row = result.stratified.iloc[0]
    _, yhat = orient(data.y, data.y, favourable=1)
    gap = stratified_gap(yhat, data.disadvantaged["grp"], data.strata["level"],
                         n_permutations=STATS.n_permutations, seed=0)
    assert (row["stratum"], row["columns"], row["protected_attribute"]) == \
        ("level", "stratum", "grp")
    assert row["value"] == pytest.approx(gap.value) and row["ci_low"] == pytest.approx(gap.ci_low)
    assert row["raw_gap"] == pytest.approx(gap.raw_gap) and not math.isnan(row["q_value"])


def test_the_gap_within_strata_carries_its_heterogeneity(tmp_path: Path) -> None:
    """stratified.csv's Cochran's Q is :func:`heterogeneity` of the row set's stratum counts."""
    data, result = _scored(tmp_path)
    row = result.stratified.iloc[0]
    _, yhat = orient(data.y, data.y, favourable=1)
    h = heterogeneity(stratum_counts(yhat, data.disadvantaged["grp"], data.strata["level"]))
    assert (row["heterogeneity_q"], row["heterogeneity_df"], row["heterogeneity_p_value"]) == \
        pytest.approx((h.q, h.df, h.p_value))
    assert row["estimator"] == "mantel_haenszel"


def test_stratum_rates_count_each_level_as_the_pooled_gap_does(tmp_path: Path) -> None:
    """stratum_rates.csv holds each level's group counts (decision 1, label coding), rates and
    gap, and Mantel-Haenszel weight shares summing to 1 that pool the levels' gaps into the
    stratified gap."""
    data, result = _scored(tmp_path)
    levels = result.stratum_rates
    dis, y = data.disadvantaged["grp"], data.y
    codes = data.strata["level"]
    assert levels["level"].tolist() == ["stratum=s1", "stratum=s2"]
    for k, r in enumerate(levels.to_dict("records")):
        at = codes == k
        assert (r["n_disadvantaged"], r["decided_1_disadvantaged"]) == \
            (int((at & dis).sum()), int(y[at & dis].sum()))
        assert (r["n_advantaged"], r["decided_1_advantaged"]) == \
            (int((at & ~dis).sum()), int(y[at & ~dis].sum()))
        assert (r["disadvantaged"], r["advantaged"]) == ("a", "b")
    assert levels["weight"].sum() == pytest.approx(1.0)
    pooled = float((levels["weight"] * levels["gap"]).sum())
    assert pooled == pytest.approx(result.stratified.iloc[0]["value"])


def test_a_regression_stratum_gives_the_adjusted_gap(tmp_path: Path) -> None:
    """A logistic_regression stratum's row is :func:`adjusted_gap` of the oriented decisions on
    its covariates, with no strata, no CMH and no heterogeneity test."""
    document = copy.deepcopy(DOC)
    document["strata"].append({"name": "given", "columns": ["x", "stratum"],
                               "estimator": "logistic_regression"})
    data = prepare(load_audit(load_manifest(write(tmp_path, document))))
    result = score_system_all_rows(data, stats=STATS, degenerate=DEGENERATE)
    assert result is not None
    row = result.stratified.set_index("stratum").loc["given"]
    gap = adjusted_gap(data.y, data.disadvantaged["grp"], data.covariates["given"].to_numpy())
    assert (row["value"], row["ci_low"], row["p_value"]) == \
        pytest.approx((gap.value, gap.ci_low, gap.p_value))
    assert row["ci_method"] == "logistic_ame_delta" and row["columns"] == "x stratum"
    assert math.isnan(row["cmh_p_value"]) and math.isnan(row["heterogeneity_q"])
    assert list(result.stratum_rates["stratum"].unique()) == ["level"]


def test_the_system_on_the_test_rows_has_the_same_markers(tmp_path: Path) -> None:
    """Beside the grid (strategy deployed) the error rates are not applicable too."""
    data = prepare(load_audit(load_manifest(write(tmp_path))))
    cell = score_system_test_rows(data, stats=STATS, degenerate=DEGENERATE)
    assert cell is not None
    fpr = next(r for r in cell.fairness.records() if r["metric"] == "fpr_gap")
    assert math.isnan(fpr["value"]) and fpr["note"] == NOT_APPLICABLE


def test_the_report_shows_not_applicable_as_its_reason() -> None:
    """A not-applicable row renders as "n/a — decision is the outcome", with no footnote."""
    row = pd.Series({"value": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                     "note": NOT_APPLICABLE})
    cell = estimate_cell(row, value="value", fn=_Footnotes())
    assert cell.text == NOT_APPLICABLE_TEXT == "n/a \u2014 decision is the outcome"
    assert cell.notes == () and not cell.numeric


def _results(root: Path) -> Path:
    """A results folder of the toy audit without fitting: an S0 stand-in (a rule on ``x``,
    scored like any given decisions), the people's decision beside it on the test rows, and
    the people's decision on every row in deployed/."""
    data = prepare(load_audit(load_manifest(write(root))))
    rule = SystemOutputs("logistic_regression", "x > 0",
                         (data.X["x"].to_numpy() > 0).astype(np.int8), rule="x > 0")
    stand_in = score_outputs(data, rule, stats=STATS, degenerate=DEGENERATE, row_set="test",
                             strategy="baseline")
    cell = score_system_test_rows(data, stats=STATS, degenerate=DEGENERATE)
    assert cell is not None
    results = assemble("toy", [stand_in, cell], rule=None, alpha=STATS.alpha)
    results.deployed = score_system_all_rows(data, stats=STATS, degenerate=DEGENERATE)
    write_audit(data, results, config=BenchmarkConfig().with_params({
        "stats.n_resamples": 50, "stats.n_permutations": 200
    }),
                out_dir=root / "results", provenance_record={})
    return root / "results"


def test_the_report_shows_the_peoples_decision_and_what_it_cannot_say(tmp_path: Path) -> None:
    """The people's tables: per-group decision rates, the gap within the stratum, and every
    error rate as "n/a — decision is the outcome"; the headline's people line leads."""
    out = _results(tmp_path)
    assert (out / "toy" / "stratified.csv").is_file()
    assert (out / "toy" / "deployed" / "stratified.csv").is_file()
    write_report(out, audits_dir=tmp_path / "audits")
    gaps = (out / "people_gaps_table.md").read_text()
    assert "| toy | grp | FPR gap | n/a — decision is the outcome |" in gaps
    assert "| toy | grp | parity gap within level (stratum): Mantel-Haenszel |" in gaps
    assert "| toy | grp | heterogeneity across the level strata (Cochran's Q) | Q " in gaps
    strata = (out / "people_strata_table.md").read_text()
    levels = pd.read_csv(out / "toy" / "deployed" / "stratum_rates.csv")
    first = levels.iloc[0]
    assert (f"| grp | level | stratum=s1 | a: {first['decided_1_disadvantaged']} / "
            f"{first['n_disadvantaged']} |") in strata
    assert "n/a --- decision is the outcome" in (out / "people_gaps_table.tex").read_text()
    rates = (out / "people_groups_table.md").read_text()
    data = load_audit(load_manifest(tmp_path / "audits" / "toy" / "audit.yaml"))
    dis = data.disadvantaged["grp"]
    assert f"| toy | grp | a | {int(dis.sum())} | {int(data.y[dis].sum())} |" in rates
    page = (out / "report.html").read_text()
    assert "toy · grp · the people&#x27;s decision" in page
    assert "S0-S4 here are trained to predict these decisions" in page
    assert not (out / "replication_table.md").exists()  # no FP/FN to count for people


@pytest.mark.slow
@pytest.mark.integration
def test_a_grid_run_on_people_decisions_writes_every_stratified_row(tmp_path: Path) -> None:
    """faircode run fits S0-S4 to predict the people's decision: stratified.csv has the 15
    cells and the system, each with its gap within the stratum (about 70 s)."""
    write(tmp_path)
    out = tmp_path / "results"
    assert main(["run", "toy", "--audits", str(tmp_path / "audits"), "--out", str(out),
                 "--seeds", "1", "--jobs", "1", "--n-resamples", "30", "--n-permutations",
                 "30", "--quiet"]) == 0
    grid = pd.read_csv(out / "toy" / "stratified.csv")
    assert len(grid) == 16 and set(grid["strategy"]) >= {"baseline", "deployed"}
    assert grid["value"].notna().all()


# ------------------------------------------------------------------------------ the two audits


def _audit(name: str, mirror_extra: Path) -> Any:
    m = load_manifest(AUDITS / name / "audit.yaml")
    assert m.dataset.mirror is not None
    path = mirror_extra / m.dataset.mirror / m.dataset.path.name
    if not path.is_file():
        _skip_or_fail(f"no {path}")
    return load_audit(m, path=path)


def _counts(y: np.ndarray, cells: dict[str, np.ndarray]) -> dict[str, tuple[int, int]]:
    return {g.group: (g.rate("selection_rate").numerator, g.rate("selection_rate").denominator)
            for g in group_rates(y, y, cells)}


def test_resume_callbacks_reproduce_bertrand_mullainathan_tables(mirror_extra: Path) -> None:
    """Callbacks per race (Table 1: 9.65 % vs 6.45 %), by sex (Table 1) and by résumé quality
    (Table 4, panel A), count for count."""
    data = _audit("resume_callbacks", mirror_extra)
    raw, black = data.raw, data.disadvantaged["race"]
    female = (raw["gender"] == "female").to_numpy()
    high = (raw["quality"] == "high").to_numpy()
    cells = {"W": ~black, "B": black, "W female": ~black & female, "B female": black & female,
             "W male": ~black & ~female, "B male": black & ~female, "W low": ~black & ~high,
             "B low": black & ~high, "W high": ~black & high, "B high": black & high}
    found = _counts(data.y, cells)
    assert found == {"W": (235, 2435), "B": (157, 2435), "W female": (184, 1860),
                     "B female": (125, 1886), "W male": (51, 575), "B male": (32, 549),
                     "W low": (103, 1212), "B low": (75, 1212), "W high": (132, 1223),
                     "B high": (82, 1223)}
    published = {"W": 9.65, "B": 6.45, "W female": 9.89, "B female": 6.63, "W male": 8.87,
                 "B male": 5.83, "W low": 8.50, "B low": 6.19, "W high": 10.79, "B high": 6.70}
    assert {k: round(100 * x / n, 2) for k, (x, n) in found.items()} == published


def test_mortgage_denials_reproduce_the_textbook_rates_and_shrink_within_credit_history(
        mirror_extra: Path) -> None:
    """Denials 96 of 339 (28 %) vs 189 of 2,041 (9 %); the approval gap -0.191 shrinks to
    -0.143 within consumer credit and -0.104 within the full credit history."""
    data = _audit("mortgage_denials", mirror_extra)
    african = data.disadvantaged["race"]
    assert _counts(data.y, {"AA": african, "other": ~african}) == \
        {"AA": (96, 339), "other": (189, 2041)}
    _, approved = orient(data.y, data.y, favourable=0)
    within = {name: stratified_gap(approved, african, codes, n_permutations=200, seed=0)
              for name, codes in data.strata.items()}
    assert within["consumer_credit"].raw_gap == pytest.approx(243 / 339 - 1852 / 2041)
    assert within["consumer_credit"].value == pytest.approx(-0.1428, abs=5e-5)
    assert within["credit_history"].value == pytest.approx(-0.1041, abs=5e-5)
    assert (within["credit_history"].strata, within["credit_history"].strata_compared) == (40, 26)


def _deployed(name: str, mirror_extra: Path) -> Any:
    """The people's decision of a shipped audit scored on every row (P = 200)."""
    result = score_system_all_rows(prepare(_audit(name, mirror_extra)), stats=STATS,
                                   degenerate=DEGENERATE)
    assert result is not None
    return result


def test_mortgage_denials_report_heterogeneity_and_the_gap_conditional_on_stated_criteria(
        mirror_extra: Path) -> None:
    """stratified.csv: within consumer credit Cochran's Q 11.93 on 5 df (p 0.036); conditional
    on payment-to-income, loan-to-value and the three credit histories the approval gap is
    -0.066 [-0.103, -0.029] (a logistic regression's average marginal effect), beside the raw
    -0.191."""
    rows = _deployed("mortgage_denials", mirror_extra).stratified.set_index("stratum")
    within = rows.loc["consumer_credit"]
    assert (round(within["heterogeneity_q"], 2), within["heterogeneity_df"],
            round(within["heterogeneity_p_value"], 3)) == (11.93, 5, 0.036)
    stated = rows.loc["stated_criteria"]
    assert stated["columns"] == "pirat lvrat chist mhist phist"
    assert (round(stated["value"], 3), round(stated["ci_low"], 3), round(stated["ci_high"], 3)) \
        == (-0.066, -0.103, -0.029)
    assert stated["raw_gap"] == pytest.approx(243 / 339 - 1852 / 2041)


def test_resume_callbacks_strata_are_bertrand_mullainathan_cells(mirror_extra: Path) -> None:
    """stratum_rates.csv holds the race x résumé-quality and race x city cells of Tables 4A and
    1, count for count, the cells the gap within strata pools."""
    levels = _deployed("resume_callbacks", mirror_extra).stratum_rates
    race = levels[levels["protected_attribute"] == "race"].set_index("level")
    cells = {level: (r["decided_1_advantaged"], r["n_advantaged"], r["decided_1_disadvantaged"],
                     r["n_disadvantaged"]) for level, r in race.iterrows()}
    assert cells == {"quality=low": (103, 1212, 75, 1212), "quality=high": (132, 1223, 82, 1223),
                     "city=boston": (126, 1083, 84, 1083), "city=chicago": (109, 1352, 73, 1352)}
    assert set(race["disadvantaged"]) == {"afam"} and set(race["advantaged"]) == {"cauc"}


def test_toronto_arrests_reproduce_the_published_release_counts(mirror_extra: Path) -> None:
    """Released with a summons: 955 of 1,288 Black and 3,379 of 3,938 White arrestees (carData's
    Arrests, the Toronto Star's counts); the gap within each declared release criterion is a
    row of stratified.csv and every error rate is not applicable."""
    data = _audit("toronto_arrests", mirror_extra)
    black = data.disadvantaged["race"]
    assert _counts(data.y, {"Black": black, "White": ~black}) == \
        {"Black": (955, 1288), "White": (3379, 3938)}
    result = score_system_all_rows(prepare(data), stats=STATS, degenerate=DEGENERATE)
    assert result is not None
    race = result.stratified[result.stratified["protected_attribute"] == "race"]
    assert race["stratum"].tolist() == ["employment", "citizenship", "prior_checks",
                                        "release_criteria"]
    assert (race["value"] < 0).all() and (race["ci_high"] < 0).all()
    fpr = result.fairness[result.fairness["metric"] == "fpr_gap"]
    assert fpr["value"].isna().all() and (fpr["note"] == NOT_APPLICABLE).all()


def test_minneapolis_stops_reproduce_the_published_search_counts(mirror_extra: Path) -> None:
    """Person searched: 3,099 of 15,220 stops of Black and 954 of 11,703 of White people
    (carData's MplsStops, 2017); within precinct the gap of not being searched is -0.089; no
    label exists, so every error rate is n/a, never a number."""
    data = _audit("minneapolis_stops", mirror_extra)
    black = data.disadvantaged["race"]
    assert _counts(data.y, {"Black": black, "White": ~black}) == \
        {"Black": (3099, 15220), "White": (954, 11703)}
    result = score_system_all_rows(prepare(data), stats=STATS, degenerate=DEGENERATE)
    assert result is not None
    within = result.stratified.set_index("stratum").loc["precinct"]
    assert within["value"] == pytest.approx(-0.0891, abs=5e-5) and within["strata"] == 5
    blank = result.fairness[~result.fairness["metric"].isin(DECISION_METRICS)]
    assert blank["value"].isna().all() and (blank["note"] == NOT_APPLICABLE).all()
    perf = result.performance.set_index("metric")
    assert math.isnan(perf.loc["auc", "value"]) and math.isnan(perf.loc["accuracy", "value"])
