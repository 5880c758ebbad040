"""Tests of the report's deployed-system views: inputs, the two tables, the figure, the page."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_report import record_files, render, write_audit_folder

from faircode.core.digests import folder_digests
from faircode.evaluate.tables import COUNTERFACTUAL_COLUMNS, PERFORMANCE_COLUMNS
from faircode.report.analysis import benchmark_family, benchmark_q_values
from faircode.report.build import write_report
from faircode.report.deployed import signed_gaps
from faircode.report.inputs import load_results
from faircode.stats.calibration import calibration_table
from faircode.stats.groups import GROUP_COLUMNS, group_table
from faircode.stats.metrics import FAIRNESS_COLUMNS, INTERSECTIONAL_COLUMNS

AUDIT = "tool_audit"
STRATEGIES = ("baseline", "unawareness", "unawareness_proxy_removal", "in_processing",
              "post_processing")
MODELS = ("logistic_regression", "random_forest", "gradient_boosting")
DP = "demographic_parity_diff"
# the deployed system on the test rows (oriented, favourable 0): race shaped like COMPAS
TOOL_TEST = {
    ("race", DP): (-0.210, -0.240, -0.180, 0.001),
    ("race", "tpr_gap"): (-0.213, -0.240, -0.190, 0.001),
    ("race", "fpr_gap"): (-0.197, -0.230, -0.160, 0.001),
    ("sex", DP): (0.020, -0.010, 0.050, 0.400),
    ("sex", "tpr_gap"): (0.006, -0.030, 0.040, 0.700),
    ("sex", "fpr_gap"): (-0.015, -0.050, 0.020, 0.500),
}
# ProPublica's truth tables (all rows) and the datasheet's sex counts: (TN, FP, FN, TP)
COUNTS = {("race", "African-American"): (990, 805, 532, 1369),
          ("race", "Caucasian"): (1139, 349, 461, 505),
          ("sex", "Female"): (498, 275, 160, 286), ("sex", "Male"): (1631, 879, 833, 1588)}


def _fair_row(strategy: str, model: str, attr: str, metric: str, value: float, low: float,
              high: float, p: float) -> dict[str, object]:
    return {"audit": AUDIT, "strategy": strategy, "model": model, "protected_attribute": attr,
            "metric": metric, "value": value, "ci_low": low, "ci_high": high, "p_value": p,
            "q_value": min(1.0, 2 * p), "significant": 2 * p < 0.05, "n_disadvantaged": 100,
            "n_advantaged": 100, "small_sample_warning": False, "note": ""}


def _fairness(tool: dict[tuple[str, str], tuple[float, float, float, float]]) -> pd.DataFrame:
    rows = []
    for s, strategy in enumerate(STRATEGIES):
        for m, model in enumerate(MODELS):
            for attr in ("race", "sex"):
                dp = -0.10 + 0.02 * s + 0.005 * m
                for metric, value in ((DP, dp), ("tpr_gap", 0.9 * dp), ("fpr_gap", 0.8 * dp)):
                    rows.append(_fair_row(strategy, model, attr, metric, value, value - 0.03,
                                          value + 0.03, 0.001 if abs(value) > 0.05 else 0.3))
    for (attr, metric), (value, low, high, p) in tool.items():
        rows.append(_fair_row("deployed", "tool", attr, metric, value, low, high, p))
    return pd.DataFrame(rows, columns=list(FAIRNESS_COLUMNS))


def _groups() -> pd.DataFrame:
    """groups.csv: the tool on every row (the counts above) and on the test rows, and S0 LR."""
    parts = []
    for attr in ("race", "sex"):
        names = [g for a, g in COUNTS if a == attr]
        y, yhat, group = [], [], []
        for name in names:
            tn, fp, fn, tp = COUNTS[(attr, name)]
            y += [0] * (tn + fp) + [1] * (fn + tp)
            yhat += [0] * tn + [1] * fp + [0] * fn + [1] * tp
            group += [name] * (tn + fp + fn + tp)
        masks = {n: np.asarray(group) == n for n in names}
        for strategy, model, row_set, take in (("deployed", "tool", "all", slice(None)),
                                               ("deployed", "tool", "test", slice(0, None, 5)),
                                               ("baseline", "logistic_regression", "test",
                                                slice(1, None, 5))):
            table = group_table(np.asarray(y)[take], np.asarray(yhat)[take],
                                {n: m[take] for n, m in masks.items()},
                                protected_attribute=attr, row_set=row_set)
            parts.append(table.assign(audit=AUDIT, strategy=strategy, model=model))
    return pd.concat(parts, ignore_index=True)[["audit", "strategy", "model", *GROUP_COLUMNS]]


def _calibration(rng: np.random.Generator) -> pd.DataFrame:
    """calibration.csv: synthetic deciles for the tool (all rows), probabilities for S0 LR."""
    n = 800
    parts = []
    for attr, names in (("race", ("African-American", "Caucasian")), ("sex", ("Female", "Male"))):
        group = rng.choice(names, size=n)
        decile = rng.integers(1, 11, size=n)
        y = (rng.random(n) < decile / 11 + 0.04 * (group == names[0])).astype(int)
        parts.append(calibration_table(y, decile, group, scale="ordinal",
                                       protected_attribute=attr, row_set="all").assign(
            audit=AUDIT, strategy="deployed", model="tool"))
        prob = rng.random(n // 4)
        yp = (rng.random(n // 4) < prob).astype(int)
        parts.append(calibration_table(yp, prob, group[: n // 4], scale="probability",
                                       protected_attribute=attr, row_set="test", n_bins=5).assign(
            audit=AUDIT, strategy="baseline", model="logistic_regression"))
    frame = pd.concat(parts, ignore_index=True)
    return frame[["audit", "strategy", "model", *[c for c in frame.columns
                                                   if c not in ("audit", "strategy", "model")]]]


def _calibration_gap() -> pd.DataFrame:
    rows = [("deployed", "tool", "test", "race", 0.020, -0.010, 0.050, 0.12),
            ("deployed", "tool", "all", "race", 0.021, -0.005, 0.045, 0.11),
            ("deployed", "tool", "all", "sex", -0.099, -0.127, -0.070, 0.0005),
            ("deployed", "tool", "test", "sex", -0.090, -0.150, -0.030, 0.004)]
    rows += [(s, m, "test", a, 0.010, -0.030, 0.050, 0.5) for s in STRATEGIES[:4]
             for m in MODELS for a in ("race", "sex")]
    frame = pd.DataFrame(rows, columns=["strategy", "model", "row_set", "protected_attribute",
                                        "value", "ci_low", "ci_high", "p_value"])
    frame.insert(0, "audit", AUDIT)
    q = np.minimum(1.0, 2 * frame["p_value"])  # 2p stands in for the audit's BH adjustment
    return frame.assign(q_value=q, significant=q < 0.05, score_gap=0.0, bins_compared=10,
                        bins_dropped=0, n_disadvantaged=100, n_advantaged=100, note="")


def write_deployed_audit(root: Path, *, favourable: int = 0) -> Path:
    """Write ``<root>/tool_audit/``: grid and deployed rows, every optional table, run.json."""
    folder = root / AUDIT
    (folder / "deployed").mkdir(parents=True)
    _fairness(TOOL_TEST).to_csv(folder / "fairness.csv", index=False)
    cells = [(s, m) for s in STRATEGIES for m in MODELS] + [("deployed", "tool")]
    perf = pd.DataFrame([{"audit": AUDIT, "strategy": s, "model": m, "metric": k, "value": 0.7,
                          "ci_low": 0.65, "ci_high": 0.75, "n": 200, "note": ""}
                         for s, m in cells for k in ("accuracy", "auc")],
                        columns=PERFORMANCE_COLUMNS)
    perf.to_csv(folder / "performance.csv", index=False)
    inter = pd.DataFrame([{"audit": AUDIT, "strategy": s, "model": m, "attribute_a": "race",
                           "attribute_b": "sex", "gap": -0.1, "ci_low": -0.2, "ci_high": 0.0,
                           "p_value": 0.04, "note": ""} for s, m in cells],
                         columns=INTERSECTIONAL_COLUMNS)
    inter.to_csv(folder / "intersectional.csv", index=False)
    pd.DataFrame([{"audit": AUDIT, "strategy": s, "model": m, "axis": "swap", "kind": "explicit",
                   "columns": "race", "flip_rate": 0.1, "ci_low": 0.0, "ci_high": 0.2,
                   "n_changed": 50, "note": ""} for s, m in cells[:-1]],
                 columns=COUNTERFACTUAL_COLUMNS).to_csv(folder / "counterfactual.csv",
                                                        index=False)
    tool_all = _fairness({k: (v[0] * 1.01, v[1], v[2], v[3]) for k, v in TOOL_TEST.items()})
    tool_all[tool_all["strategy"] == "deployed"].to_csv(folder / "deployed" / "fairness.csv",
                                                        index=False)
    perf[perf["strategy"] == "deployed"].to_csv(folder / "deployed" / "performance.csv",
                                                index=False)
    inter[inter["strategy"] == "deployed"].to_csv(folder / "deployed" / "intersectional.csv",
                                                  index=False)
    _groups().to_csv(folder / "groups.csv", index=False)
    _calibration(np.random.default_rng(7)).to_csv(folder / "calibration.csv", index=False)
    _calibration_gap().to_csv(folder / "calibration_gap.csv", index=False)
    run = {"audit": AUDIT, "manifest_sha256": "m" * 64,
           "dataset": {"path": "data/raw/tool.csv", "sha256": "d" * 64},
           "config": {"alpha": 0.05, "confidence": 0.95, "n_resamples": 200},
           "seeds": {"master": 42}, "rows": {"train": 800, "test": 200},
           "git_commit": "c" * 40, "git_dirty": False, "versions": {"python": "3.11"},
           "cells": [], "target": {"favourable": favourable},
           "system": {"name": "tool", "title": "The tool"}}
    (folder / "run.json").write_text(json.dumps({**run, "files": folder_digests(folder)}))
    return folder


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder with the deployed audit and one audit without a system, rendered."""
    root = tmp_path_factory.mktemp("deployed") / "results"
    write_deployed_audit(root)
    write_audit_folder(root, "audit_a", ("sex", "age"))
    write_report(root, provenance={"git_commit": "e" * 40})
    return root


def _row(markdown: str, stub: tuple[str, ...], section: str = "logistic_regression") -> list[str]:
    """The cells of the Markdown table row ``stub`` in ``section`` (first section if '')."""
    lines = markdown.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"| **{section}**")) \
        if section else 0
    prefix = "| " + " | ".join(stub) + " |"
    line = next(x for x in lines[start + 1:] if x.startswith(prefix))
    return [c.strip() for c in line.strip("|").split("|")][len(stub):]


# ------------------------------------------------------------------------------ inputs


def test_deployed_rows_are_split_off_the_grid_tables(rendered: Path) -> None:
    """The grid tables hold S0-S4 only; the system's rows and optional tables are apart."""
    inputs = load_results(rendered)
    assert "deployed" not in set(inputs.fairness["strategy"])
    assert "deployed" not in set(inputs.performance["strategy"])
    assert "tool" not in set(inputs.fairness["model"])
    d = inputs.deployed
    assert d.systems == {AUDIT: "tool"} and d.favourable == {AUDIT: 0}
    assert d.titles == {AUDIT: "The tool"}
    assert len(d.fairness) == 6 and len(d.fairness_all) == 6 and len(d.performance_all) == 2
    assert set(d.groups["row_set"]) == {"all", "test"} and not d.calibration.empty


def test_missing_favourable_is_a_one_line_error(tmp_path: Path) -> None:
    """A system without target.favourable in run.json (and no manifest) cannot be oriented."""
    folder = write_deployed_audit(tmp_path)
    run = json.loads((folder / "run.json").read_text())
    del run["target"]
    (folder / "run.json").write_text(json.dumps(run))
    with pytest.raises(Exception, match=r"^tool_audit/run.json: target.favourable: expected 0 "
                                        r"or 1 \(the coding of the deployed system's table\), "
                                        r"got None \(NoneType\)$"):
        load_results(tmp_path)


# ------------------------------------------------------------------------------ statistics


def test_benchmark_family_adds_the_deployed_and_calibration_tests() -> None:
    """BH over grid p (.01, .5), deployed p .03 and gap p .04: q .04, .5, .0533, .0533."""
    grid = pd.DataFrame({"audit": "a", "strategy": "baseline", "model": "m",
                         "protected_attribute": "x", "metric": [DP, "tpr_gap"],
                         "p_value": [0.01, 0.5]})
    tool = grid.iloc[:1].assign(strategy="deployed", p_value=0.03)
    gap = pd.DataFrame({"p_value": [0.04]})
    inter = pd.DataFrame({"p_value": pd.Series([], dtype=float)})
    q = benchmark_family(grid, inter, deployed=tool, calibration_gap=gap)
    np.testing.assert_allclose(q.fairness, [0.04, 0.5])
    np.testing.assert_allclose(q.deployed, [0.16 / 3])
    np.testing.assert_allclose(q.calibration_gap, [0.16 / 3])


def test_benchmark_family_without_a_system_is_the_grid_family() -> None:
    """With no deployed row and no gap the q-values are benchmark_q_values' exactly."""
    grid = pd.DataFrame({"audit": "a", "strategy": "baseline", "model": "m",
                         "protected_attribute": "x", "metric": [DP, "tpr_gap", "fpr_gap"],
                         "p_value": [0.01, 0.5, 0.02]})
    inter = pd.DataFrame({"p_value": [0.03]})
    q = benchmark_family(grid, inter, deployed=grid.iloc[0:0],
                         calibration_gap=pd.DataFrame({"p_value": pd.Series([], dtype=float)}))
    q_fair, q_inter = benchmark_q_values(grid, inter)
    assert q.fairness.tolist() == q_fair.tolist()
    assert q.intersectional.equals(q_inter)


@pytest.mark.parametrize(("favourable", "expected"), [
    (1, {"parity gap": (DP, 1.0), "FPR gap": ("fpr_gap", 1.0), "FNR gap": ("tpr_gap", -1.0)}),
    (0, {"parity gap": (DP, -1.0), "FPR gap": ("tpr_gap", -1.0), "FNR gap": ("fpr_gap", 1.0)}),
])
def test_label_coded_gaps_come_from_the_oriented_rows(
    favourable: int, expected: dict[str, tuple[str, float]]
) -> None:
    """FPR/FNR in the label coding are fairness.csv's fpr_gap/tpr_gap re-signed by favourable."""
    assert signed_gaps(favourable) == expected


# ------------------------------------------------------------------------------ tables


def test_deployed_table_shows_the_tool_in_label_coding(rendered: Path) -> None:
    """favourable 0: parity = -DP, FPR gap = -tpr_gap, FNR gap = fpr_gap, each starred."""
    md = (rendered / "deployed_table.md").read_text()
    assert _row(md, (AUDIT, "race", "parity gap"))[-1] == "0.210 [0.180, 0.240]*"
    assert _row(md, (AUDIT, "race", "FPR gap"))[-1] == "0.213 [0.190, 0.240]*"
    assert _row(md, (AUDIT, "race", "FNR gap"))[-1] == "-0.197 [-0.230, -0.160]*"
    assert _row(md, (AUDIT, "race", "calibration gap"))[-1] == "0.020 [-0.010, 0.050]"
    assert _row(md, (AUDIT, "sex", "calibration gap"))[-1] == "-0.090 [-0.150, -0.030]*"


def test_deployed_table_puts_s0_to_s4_beside_the_tool(rendered: Path) -> None:
    """S0 LR's DP -0.100 reads as parity gap 0.100; its tpr_gap -0.090 as FPR gap 0.090."""
    md = (rendered / "deployed_table.md").read_text()
    header = next(x for x in md.splitlines() if x.startswith("| audit"))
    assert header == "| audit | attribute | gap | S0 | S1 | S2 | S3 | S4 | deployed |"
    parity = _row(md, (AUDIT, "race", "parity gap"))
    assert parity[0] == "0.100 [0.070, 0.130]*"
    assert _row(md, (AUDIT, "race", "FPR gap"))[0] == "0.090 [0.060, 0.120]*"
    assert _row(md, (AUDIT, "race", "FNR gap"))[0] == "-0.080 [-0.110, -0.050]*"
    assert _row(md, (AUDIT, "race", "calibration gap"))[:4] == ["0.010 [-0.030, 0.050]"] * 4


def test_a_cell_without_a_score_is_n_a_with_its_reason(rendered: Path) -> None:
    """S4 has no calibration gap: n/a with a footnote saying it has no score."""
    md = (rendered / "deployed_table.md").read_text()
    cell = _row(md, (AUDIT, "race", "calibration gap"))[4]
    assert cell.startswith("n/a<sup>")
    letter = cell.split("<sup>")[1].split("</sup>")[0]
    assert (f"<sup>{letter}</sup> no calibration gap: the cell has no score (post-processing "
            "decides without one)") in md


def test_favourable_one_reads_the_rows_unchanged(tmp_path: Path) -> None:
    """With favourable 1 the parity and FPR gaps are DP and fpr_gap as written, FNR -tpr_gap."""
    write_deployed_audit(tmp_path / "results", favourable=1)
    write_report(tmp_path / "results")
    md = (tmp_path / "results" / "deployed_table.md").read_text()
    assert _row(md, (AUDIT, "race", "parity gap"))[-1] == "-0.210 [-0.240, -0.180]*"
    assert _row(md, (AUDIT, "race", "FPR gap"))[-1] == "-0.197 [-0.230, -0.160]*"
    assert _row(md, (AUDIT, "race", "FNR gap"))[-1] == "0.213 [0.190, 0.240]*"


def test_replication_table_reproduces_the_published_counts(rendered: Path) -> None:
    """Every row: ProPublica's counts and the datasheet's Wilson FPR, FNR and PPV intervals."""
    md = (rendered / "replication_table.md").read_text()
    assert _row(md, (AUDIT, "race", "African-American"), section="") == [
        "3,696", "990", "805", "532", "1,369", "0.448 [0.426, 0.472]", "0.280 [0.260, 0.300]",
        "0.630 [0.609, 0.650]"]
    assert _row(md, (AUDIT, "race", "Caucasian"), section="") == [
        "2,454", "1,139", "349", "461", "505", "0.235 [0.214, 0.257]", "0.477 [0.446, 0.509]",
        "0.591 [0.558, 0.624]"]
    assert _row(md, (AUDIT, "sex", "Female"), section="")[5:] == [
        "0.356 [0.323, 0.390]", "0.359 [0.316, 0.404]", "0.510 [0.469, 0.551]"]


def test_orientation_table_shows_the_label_coding_beside_the_favourable_one(
        rendered: Path) -> None:
    """favourable 0, every row: the label coding's FPR gap is -tpr_gap (COMPAS-like +0.215,
    ProPublica's orientation) beside fairness.csv's fpr_gap (-0.199), each named in words."""
    md = (rendered / "orientation_table.md").read_text()
    label, favourable = "label coding (as published)", "favourable orientation (fairness.csv)"
    assert _row(md, (AUDIT, "race", label, "FPR gap: decided 1 among label 0"),
                section="") == ["0.215 [0.190, 0.240]*"]
    assert _row(md, (AUDIT, "race", label, "FNR gap: decided 0 among label 1"),
                section="") == ["-0.199 [-0.230, -0.160]*"]
    assert _row(md, (AUDIT, "race", favourable,
                     "fpr_gap: decided favourable among label unfavourable"),
                section="") == ["-0.199 [-0.230, -0.160]*"]
    assert "ProPublica's FPR for COMPAS: rated Medium or High among those not re-arrested" in md


def test_orientation_table_with_favourable_one_has_one_fpr_gap(tmp_path: Path) -> None:
    """With label 1 favourable both orientations agree: the two FPR gaps are one number."""
    write_deployed_audit(tmp_path / "results", favourable=1)
    write_report(tmp_path / "results")
    md = (tmp_path / "results" / "orientation_table.md").read_text()
    first = _row(md, (AUDIT, "race", "label coding (as published)",
                      "FPR gap: decided 1 among label 0"), section="")
    assert first == _row(md, (AUDIT, "race", "favourable orientation (fairness.csv)",
                              "fpr_gap: decided favourable among label unfavourable"),
                         section="") == ["-0.199 [-0.230, -0.160]*"]


def test_deployed_tables_are_written_as_markdown_and_latex(rendered: Path) -> None:
    """Every deployed table has a .md and an ASCII .tex with balanced tabulars."""
    for name in ("deployed_table", "replication_table", "orientation_table"):
        tex = (rendered / f"{name}.tex").read_text()
        assert tex.isascii() and tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}")
        assert (rendered / f"{name}.md").is_file()


# ------------------------------------------------------------------------------ figure, page


def test_calibration_figure_is_written_at_column_width(rendered: Path) -> None:
    """The calibration-by-group figure exists as PNG and PDF, 3.3 in wide at 300 dpi."""
    from PIL import Image

    png = rendered / "figures" / f"{AUDIT}_calibration_by_group.png"
    assert (rendered / "figures" / f"{AUDIT}_calibration_by_group.pdf").is_file()
    with Image.open(png) as image:
        assert image.size[0] == 990


def test_figure_and_tables_are_deterministic(rendered: Path, tmp_path: Path) -> None:
    """Rendering the same results twice gives byte-identical figure and table files."""
    copy = tmp_path / "results"
    shutil.copytree(rendered, copy)
    write_report(copy, provenance={"git_commit": "e" * 40})
    for name in (f"figures/{AUDIT}_calibration_by_group.png",
                 f"figures/{AUDIT}_calibration_by_group.pdf", "deployed_table.md",
                 "report.html"):
        assert (copy / name).read_bytes() == (rendered / name).read_bytes(), name


def test_page_has_the_deployed_section_with_both_tables_and_the_figure(rendered: Path) -> None:
    """report.html folds the deployed section with its three tables, and the calibration figure
    under its audit's figures (not among the benchmark-wide ones)."""
    page = (rendered / "report.html").read_text()
    section = page.split("<h3>Deployed systems", 1)[1].split("</details>", 1)[0]
    assert 'id="deployed_table"' in section and 'id="replication_table"' in section
    assert 'id="orientation_table"' in section
    own = page.split(f"<h3>{AUDIT}: ", 1)[1].split("</details>", 1)[0]
    assert f"figures/{AUDIT}_calibration_by_group.png" in own
    benchmark = page.split("<h2>Residual floor", 1)[1].split("<h2>", 1)[0]
    assert "calibration_by_group" not in benchmark


def test_report_with_a_system_renders_in_chromium(rendered: Path, tmp_path: Path) -> None:
    """Headless Chromium loads every figure and all nine tables (the margin table among them)
    and requests nothing."""
    page = tmp_path / "report.html"
    shutil.copy(rendered / "report.html", page)
    check, requests = render(page, tmp_path)
    images = check["images"]
    assert isinstance(images, list)
    assert len(images) == len(list((rendered / "figures").glob("*.png")))
    assert all(i["complete"] and i["width"] > 0 for i in images)
    assert check["tables"] == 9 and check["resources"] == [] and requests == []


def _outputs(folder: Path) -> dict[str, str]:
    """sha256 of every file the report wrote (everything but the audit's own folder and the
    figure-reuse record, whose keys hash every input CSV by design)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*"))
            if p.is_file() and p.relative_to(folder).parts[0] != "audit_a"
            and p.relative_to(folder) != Path("figures/inputs.json")}


def test_audit_without_a_system_renders_exactly_as_before(tmp_path: Path) -> None:
    """Grid-only calibration tables beside an audit without a system change no byte (both have
    groups.csv, which the page reads for the test base rate)."""
    plain, extra = tmp_path / "plain", tmp_path / "extra"
    grid = _groups()
    for root in (plain, extra):
        write_audit_folder(root, "audit_a", ("sex", "age"))
        grid[grid["strategy"] != "deployed"].assign(audit="audit_a").to_csv(
            root / "audit_a" / "groups.csv", index=False)
    bins = _calibration(np.random.default_rng(7))
    bins[bins["strategy"] != "deployed"].assign(audit="audit_a").to_csv(
        extra / "audit_a" / "calibration.csv", index=False)
    gaps = _calibration_gap()
    gaps[gaps["strategy"] != "deployed"].assign(audit="audit_a").to_csv(
        extra / "audit_a" / "calibration_gap.csv", index=False)
    for root in (plain, extra):
        record_files(root / "audit_a")
        write_report(root, provenance={"git_commit": "e" * 40})
    assert _outputs(extra) == _outputs(plain) and len(_outputs(plain)) > 20
    assert "Deployed systems" not in (extra / "report.html").read_text()
    assert not (extra / "deployed_table.md").exists()
