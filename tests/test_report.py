"""Tests of faircode.report: summary, benchmark-wide BH, residual floor, tables, figures, HTML."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faircode.core.digests import folder_digests
from faircode.core.errors import FaircodeError
from faircode.evaluate.tables import COUNTERFACTUAL_COLUMNS, PERFORMANCE_COLUMNS
from faircode.pipeline.cli import main
from faircode.pipeline.stages import report as report_stage
from faircode.report.analysis import (
    benchmark_q_values,
    load_results,
    resolve_metric,
    summarise,
)
from faircode.report.build import write_report
from faircode.stats.metrics import FAIRNESS_COLUMNS, INTERSECTIONAL_COLUMNS

STRATEGIES = ("baseline", "unawareness", "unawareness_proxy_removal", "in_processing",
              "post_processing")
MODELS = ("logistic_regression", "random_forest", "gradient_boosting")
DP, DI, EO = "demographic_parity_diff", "disparate_impact_ratio", "equal_opportunity_diff"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-quic", "--host-resolver-rules=MAP * ~NOTFOUND")


# ------------------------------------------------------------------------------ synthetic results


def _fairness_rows(audit: str, attributes: tuple[str, ...]) -> list[dict[str, object]]:
    rows = []
    for a, attr in enumerate(attributes):
        for s, strategy in enumerate(STRATEGIES):
            for m, model in enumerate(MODELS):
                dp = (-0.20, -0.15, -0.10, -0.05, -0.02)[s] + 0.01 * m + 0.005 * a
                p = 0.001 if abs(dp) > 0.08 else 0.3
                for metric, value in ((DP, dp), (DI, 1 + dp), (EO, dp / 2)):
                    rows.append({  # the audit's own q: 2p stands in for its BH adjustment
                        "audit": audit, "strategy": strategy, "model": model,
                        "protected_attribute": attr, "metric": metric, "value": value,
                        "ci_low": value - 0.03, "ci_high": value + 0.03, "p_value": p,
                        "q_value": 2 * p, "significant": 2 * p < 0.05,
                        "n_disadvantaged": 100, "n_advantaged": 100,
                        "small_sample_warning": False, "note": ""})
    return rows


def write_audit_folder(root: Path, audit: str, attributes: tuple[str, ...]) -> Path:
    """Write a hand-made ``<root>/<audit>/`` with today's four CSVs and a run.json."""
    folder = root / audit
    folder.mkdir(parents=True)
    pd.DataFrame(_fairness_rows(audit, attributes), columns=FAIRNESS_COLUMNS).to_csv(
        folder / "fairness.csv", index=False)
    perf = [{"audit": audit, "strategy": s, "model": m, "metric": k, "value": 0.8 - 0.01 * i,
             "ci_low": 0.75 - 0.01 * i, "ci_high": 0.85 - 0.01 * i, "n": 200, "note": ""}
            for i, s in enumerate(STRATEGIES) for m in MODELS for k in ("accuracy", "auc", "f1")]
    pd.DataFrame(perf, columns=PERFORMANCE_COLUMNS).to_csv(folder / "performance.csv",
                                                           index=False)
    inter = []
    if len(attributes) > 1:
        inter = [{"audit": audit, "strategy": s, "model": m, "attribute_a": attributes[0],
                  "attribute_b": attributes[1], "gap": -0.1, "ci_low": -0.2, "ci_high": 0.0,
                  "p_value": 0.04, "note": ""} for s in STRATEGIES for m in MODELS]
    pd.DataFrame(inter, columns=INTERSECTIONAL_COLUMNS).to_csv(folder / "intersectional.csv",
                                                               index=False)
    flips = [{"audit": audit, "strategy": s, "model": m, "axis": axis, "kind": kind,
              "columns": "c", "flip_rate": 0.1 * (i + 1) / 5, "ci_low": 0.0, "ci_high": 0.3,
              "n_changed": 50, "note": ""}
             for i, s in enumerate(STRATEGIES) for m in MODELS
             for axis, kind in (("swap", "explicit"), ("proxy_swap", "proxy"))]
    pd.DataFrame(flips, columns=COUNTERFACTUAL_COLUMNS).to_csv(folder / "counterfactual.csv",
                                                               index=False)
    run = {"audit": audit, "manifest_sha256": "m" * 64,
           "dataset": {"path": f"data/raw/{audit}.csv", "sha256": "d" * 64},
           "config": {"alpha": 0.05, "confidence": 0.95, "n_resamples": 200},
           "seeds": {"master": 42}, "rows": {"train": 800, "test": 200},
           "git_commit": "c" * 40, "git_dirty": False, "versions": {"python": "3.11"},
           "cells": []}
    effect_rows(audit, attributes).to_csv(folder / "effects.csv", index=False)
    (folder / "run.json").write_text(json.dumps({**run, "files": folder_digests(folder)}))
    return folder


COMPARISONS = (("unawareness", "baseline"), ("unawareness_proxy_removal", "baseline"),
               ("in_processing", "baseline"), ("post_processing", "baseline"),
               ("in_processing", "unawareness_proxy_removal"),
               ("post_processing", "unawareness_proxy_removal"))


def effect_rows(audit: str, attributes: tuple[str, ...]) -> pd.DataFrame:
    """Hand-made effects.csv rows: |gap| differences of the synthetic gaps, CIs of ±0.02."""
    gaps = {(r["strategy"], r["model"], r["protected_attribute"], r["metric"]): r["value"]
            for r in _fairness_rows(audit, attributes)}
    rows = []
    for a, b in COMPARISONS:
        for model in MODELS:
            for attr in attributes:
                for metric in (DP, DI, EO, "tpr_gap", "accuracy", "balanced_accuracy"):
                    parity = 1.0 if metric == DI else 0.0
                    cost = metric in ("accuracy", "balanced_accuracy")
                    key = (model, attr, DP if metric == "tpr_gap" or cost else metric)
                    value = ({"accuracy": -0.01, "balanced_accuracy": -0.04}[metric] if cost else
                             abs(gaps[(a, *key)] - parity) - abs(gaps[(b, *key)] - parity))
                    p = 0.001 if abs(value) > 0.03 else 0.5
                    rows.append({"audit": audit, "strategy": a, "reference": b,
                                 "model": model, "protected_attribute": attr,
                                 "metric": metric, "value": value, "ci_low": value - 0.02,
                                 "ci_high": value + 0.02, "ci_method": "paired_signed_box",
                                 "p_value": p, "q_value": 2 * p, "note": ""})
    return pd.DataFrame(rows)


def edit_fairness(folder: Path, *, where: dict[str, str], **changes: object) -> None:
    """Change (or add) columns of the fairness rows of ``folder`` that match ``where``."""
    frame = pd.read_csv(folder / "fairness.csv")
    match = np.logical_and.reduce([frame[k] == v for k, v in where.items()])
    assert match.any()
    for column, value in changes.items():  # a new column is NaN elsewhere
        frame[column] = frame[column].astype(object) if column in frame else \
            pd.Series(np.nan, index=frame.index, dtype=object)
        frame.loc[match, column] = value
    frame.to_csv(folder / "fairness.csv", index=False)
    record_files(folder)


def record_files(folder: Path) -> None:
    """Record ``folder``'s files in its run.json as the writer does (every reader checks that a
    results folder holds exactly them): for a hand-made folder edited or added to after it was
    written."""
    run = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**run, "files": folder_digests(folder)}))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Return a results folder with two hand-made audits and one unavailable one."""
    root = tmp_path / "results"
    write_audit_folder(root, "audit_a", ("sex", "age"))
    write_audit_folder(root, "audit_b", ("race",))
    (root / "audit_c").mkdir()
    (root / "audit_c" / "unavailable.json").write_text(json.dumps(
        {"audit": "audit_c", "reason": "licence forbids redistribution",
         "instructions": "Request the file from the data owner."}))
    return root


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Return a results folder after one full ``write_report`` (shared, read-only)."""
    root = tmp_path_factory.mktemp("rendered") / "results"
    write_audit_folder(root, "audit_a", ("sex", "age"))
    write_audit_folder(root, "audit_b", ("race",))
    edit_fairness(root / "audit_b", where={"strategy": "post_processing",
                                          "model": "gradient_boosting", "metric": DP},
                  value=np.nan, ci_low=np.nan, ci_high=np.nan, p_value=np.nan,
                  q_value=np.nan, note="insufficient_data")
    edit_fairness(root / "audit_b", where={"strategy": "in_processing",
                                          "model": "random_forest", "metric": DP},
                  value=0.0, ci_low=0.0, ci_high=0.0, p_value=1.0, q_value=1.0,
                  note="degenerate_decisions")
    write_report(root, provenance={"git_commit": "e" * 40})
    return root


def _table_row(markdown: str, audit: str, attribute: str, section: str) -> list[str]:
    lines = markdown.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"| **{section}**"))
    for line in lines[start + 1:]:
        if line.startswith("| **"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if cells[:2] == [audit, attribute]:
            return cells
    raise AssertionError(f"no row {audit} / {attribute} in section {section}")


# ------------------------------------------------------------------------------ statistics


def _fairness_frame(rows: list[tuple[str, str, float, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"audit": a, "strategy": "baseline", "model": "logistic_regression",
                          "protected_attribute": "sex", "metric": m, "p_value": p, "note": n}
                         for a, m, p, n in rows])


def test_benchmark_q_values_match_hand_computed_bh() -> None:
    """One BH family over both audits: DI takes DP's q, NaN p is no test, intersectional joins."""
    fairness = _fairness_frame([("A", DP, 0.01, ""), ("A", DI, 0.02, ""), ("A", EO, 0.04, ""),
                                ("B", DP, 0.03, ""), ("B", EO, np.nan, "insufficient_data")])
    inter = pd.DataFrame({"p_value": [0.20]})
    q_fair, q_inter = benchmark_q_values(fairness, inter)
    # m = 4 tests {0.01, 0.04, 0.03, 0.20}: raw k-th q = p * 4 / k = 0.04, 0.06, 0.0533, 0.2;
    # the running minimum from the top gives 0.04, 0.0533, 0.0533, 0.2.
    np.testing.assert_allclose(q_fair.to_numpy(), [0.04, 0.04, 0.16 / 3, 0.16 / 3, np.nan])
    np.testing.assert_allclose(q_inter["q_benchmark"].to_numpy(), [0.20])


def test_benchmark_q_values_add_interaction_tests_when_present() -> None:
    """An ``interaction_p_value`` column joins the family, so m grows from 2 to 3."""
    fairness = _fairness_frame([("A", DP, 0.01, ""), ("B", DP, 0.02, "")])
    inter = pd.DataFrame({"p_value": [np.nan], "interaction_p_value": [0.03]})
    q_fair, q_inter = benchmark_q_values(fairness, inter)
    np.testing.assert_allclose(q_fair.to_numpy(), [0.03, 0.03])
    np.testing.assert_allclose(q_inter["interaction_q_benchmark"].to_numpy(), [0.03])


def test_summarise_matches_hand_computed_aggregates() -> None:
    """Mean/min/max over families with a value; raw, per-audit and benchmark-wide counts; the
    missing family named."""
    fairness = pd.DataFrame({
        "audit": "A", "strategy": "baseline", "protected_attribute": "sex", "metric": DP,
        "model": list(MODELS), "value": [-0.10, -0.20, np.nan],
        "p_value": [0.01, 0.04, np.nan], "q_value": [0.02, 0.04, np.nan],
        "note": ["", "", "insufficient_data"]})
    out = summarise(fairness, q_benchmark=pd.Series([0.04, 0.06, np.nan]), alpha=0.05)
    row = out.iloc[0]
    assert (row["n_models"], row["n_estimated"]) == (3, 2)
    assert row["mean"] == pytest.approx(-0.15)
    assert (row["min"], row["max"]) == (pytest.approx(-0.20), pytest.approx(-0.10))
    assert (row["n_significant_raw"], row["n_significant"],
            row["n_significant_benchmark"]) == (2, 2, 1)
    assert row["note"] == "gradient_boosting: insufficient_data"


def test_summarise_leaves_uninformative_cells_out_of_the_mean() -> None:
    """A degenerate_decisions cell is counted as uninformative, never averaged in as 0."""
    fairness = pd.DataFrame({
        "audit": "A", "strategy": "baseline", "protected_attribute": "sex", "metric": DP,
        "model": list(MODELS[:2]), "value": [-0.10, 0.0], "p_value": [0.5, 1.0],
        "q_value": [0.5, 1.0], "note": ["", "degenerate_decisions"]})
    row = summarise(fairness, q_benchmark=pd.Series([0.5, 1.0]), alpha=0.05).iloc[0]
    assert row["mean"] == pytest.approx(-0.10) and row["n_uninformative"] == 1


def test_resolve_metric_matches_a_unique_prefix_and_rejects_unknown_names() -> None:
    """demographic_parity resolves to demographic_parity_diff; a typo names the choices."""
    assert resolve_metric("demographic_parity", [DP, DI]) == DP
    with pytest.raises(FaircodeError, match=r"--metric: expected one of .*got 'dp' \(str\)"):
        resolve_metric("dp", [DP, DI])


# ------------------------------------------------------------------------------ outputs


def test_write_report_writes_every_output(rendered: Path) -> None:
    """summary, four tables (md+tex), PNG+PDF figures and report.html exist."""
    for name in ("summary.csv", "paper_table.md", "paper_table.tex", "performance_table.md",
                 "counterfactual_table.tex", "residual_floor_table.md", "report.html"):
        assert (rendered / name).is_file(), name
    pngs = sorted(p.stem for p in (rendered / "figures").glob("*.png"))
    assert pngs == sorted(p.stem for p in (rendered / "figures").glob("*.pdf"))
    assert {f"heatmap_{DP}", f"residual_floor_{DP}", f"audit_a_{DP}_by_strategy",
            f"audit_b_tradeoff_{DP}"} <= set(pngs)
    assert not (rendered / "plots").exists()  # DVC's plot data is the evaluate stage's


def test_figures_drawn_on_two_workers_are_the_bytes_of_one(rendered: Path,
                                                           tmp_path: Path) -> None:
    """The report drawn (and its page's images encoded) on two forked workers writes every
    figure, the record of figures/ and report.html byte for byte as the one drawn in one
    process (the shared fixture)."""
    again = tmp_path / "results"
    shutil.copytree(rendered, again, ignore=shutil.ignore_patterns("figures", "report.html"))
    write_report(again, provenance={"git_commit": "e" * 40}, workers=2)
    names = sorted(p.name for p in (rendered / "figures").iterdir())
    assert names == sorted(p.name for p in (again / "figures").iterdir()) and len(names) > 10
    for name in names:
        assert (again / "figures" / name).read_bytes() == (
            rendered / "figures" / name).read_bytes(), name
    assert (again / "report.html").read_bytes() == (rendered / "report.html").read_bytes()


def test_the_report_page_is_the_same_bytes_with_or_without_a_previous_one(
        rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """write_report over its own output encodes nothing and writes the page it replaces; over
    a page whose images all differ it encodes every figure and still writes those bytes."""
    from faircode.report import page_images as pages
    from faircode.report.page_images import SHA_ATTRIBUTE, inline_png

    encoded: list[Path] = []
    monkeypatch.setattr(pages, "inline_png", lambda path: encoded.append(path) or inline_png(path))
    again = tmp_path / "results"
    shutil.copytree(rendered, again)
    page = (again / "report.html").read_bytes()
    write_report(again, provenance={"git_commit": "e" * 40})
    assert encoded == [] and (again / "report.html").read_bytes() == page
    (again / "report.html").write_text(page.decode().replace(SHA_ATTRIBUTE + '="', SHA_ATTRIBUTE
                                                             + '="0'), encoding="utf-8")
    write_report(again, provenance={"git_commit": "e" * 40})
    assert len(encoded) == len(set(encoded)) == len(list((again / "figures").glob("*.png")))
    assert (again / "report.html").read_bytes() == page


def test_figures_are_drawn_at_column_width(rendered: Path) -> None:
    """Every PNG is 3.3 inches wide at 300 dpi (990 px), never scaled from a screen figure."""
    from PIL import Image

    for png in (rendered / "figures").glob("*.png"):
        with Image.open(png) as image:
            assert image.size[0] == 990, png.name


def test_paper_table_cell_shows_gap_interval_and_benchmark_significance(rendered: Path) -> None:
    """audit_a / sex / S0 / LR reads -0.200 [-0.230, -0.170]* in the Markdown table."""
    row = _table_row((rendered / "paper_table.md").read_text(), "audit_a", "sex",
                     "logistic_regression")
    assert row[2] == "-0.200 [-0.230, -0.170]*"
    assert row[4] == "-0.100 [-0.130, -0.070]*"
    assert row[5] == "-0.050 [-0.080, -0.020]"


def test_undefined_cells_are_n_a_or_uninformative_with_a_footnote(rendered: Path) -> None:
    """insufficient_data is n/a and degenerate decisions 'uninformative', each footnoted."""
    text = (rendered / "paper_table.md").read_text()
    rf = _table_row(text, "audit_b", "race", "random_forest")
    gb = _table_row(text, "audit_b", "race", "gradient_boosting")
    uninformative = re.fullmatch(r"uninformative<sup>(\w+)</sup>", rf[5])
    na = re.fullmatch(r"n/a<sup>(\w+)</sup>", gb[6])
    assert uninformative and na
    assert f"<sup>{na.group(1)}</sup> insufficient data" in text
    assert f"<sup>{uninformative.group(1)}</sup> uninformative: degenerate" in text


def test_optional_columns_are_shown_when_present(results: Path) -> None:
    """An extra column such as tpr_gap reaches the page; powered = False no longer footnotes a
    cell (its verdict is its mark: the power flag never supports "no gap")."""
    where = {"strategy": "baseline", "model": "logistic_regression",
             "protected_attribute": "sex", "metric": DP}
    edit_fairness(results / "audit_a", where=where, powered=False, mde=0.4, tpr_gap=0.123456)
    write_report(results)
    text = (results / "paper_table.md").read_text()
    assert _table_row(text, "audit_a", "sex", "logistic_regression")[2] == \
        "-0.200 [-0.230, -0.170]*"
    assert "not powered" not in text
    page = (results / "report.html").read_text()
    assert "<th>tpr_gap</th>" in page and "0.1235" in page


def test_changing_one_result_changes_the_table_cell_and_the_summary(results: Path) -> None:
    """Editing one fairness value moves its paper-table cell, its summary.csv row and its
    summary_families.csv mean."""
    write_report(results)
    where = {"strategy": "baseline", "model": "logistic_regression",
             "protected_attribute": "sex", "metric": DP}
    edit_fairness(results / "audit_a", where=where, value=-0.5)
    write_report(results)
    row = _table_row((results / "paper_table.md").read_text(), "audit_a", "sex",
                     "logistic_regression")
    assert row[2] == "-0.500 [-0.230, -0.170]*"
    rows = pd.read_csv(results / "summary.csv")
    assert rows.loc[(rows[list(where)] == pd.Series(where)).all(axis=1), "value"].item() == -0.5
    summary = pd.read_csv(results / "summary_families.csv")
    cell = summary[(summary["audit"] == "audit_a") & (summary["strategy"] == "baseline")
                   & (summary["protected_attribute"] == "sex") & (summary["metric"] == DP)]
    # families: -0.5 (edited), -0.19, -0.18
    assert cell["mean"].item() == pytest.approx((-0.5 - 0.19 - 0.18) / 3)
    assert cell["min"].item() == pytest.approx(-0.5)


def test_unavailable_audits_are_listed_with_reason_and_instructions(
    results: Path, fresh_repo: Path
) -> None:
    """unavailable.json and manifests without results appear in the table and the page."""
    write_report(results, audits_dir=fresh_repo / "audits")
    inputs = load_results(results, audits_dir=fresh_repo / "audits")
    names = {u.audit for u in inputs.unavailable}
    assert {"audit_c", "compas", "tenant_screening"} <= names
    page = (results / "report.html").read_text()
    assert "licence forbids redistribution" in page
    assert "Request the file from the data owner." in page
    tenant = next(u for u in inputs.unavailable if u.audit == "tenant_screening")
    assert tenant.instructions and tenant.instructions[:40] in page
    text = (results / "paper_table.md").read_text()
    assert re.search(r"\| compas \| race \| n/a<sup>\w+</sup> \|", text)


def test_the_pipelines_unavailable_note_is_read(results: Path) -> None:
    """The note the pipeline's stages write ({audit, available, message}) becomes the reason
    "dataset unavailable" with the message's how-to-obtain text as instructions."""
    from faircode.pipeline.stages import write_unavailable

    folder = results / "tenant_screening"
    write_unavailable(folder, audit="tenant_screening", message=(
        "tenant_screening: dataset unavailable: Export the NIJ file as CSV."))
    tenant = next(u for u in load_results(results).unavailable if u.audit == "tenant_screening")
    assert (tenant.reason, tenant.instructions) == ("dataset unavailable",
                                                    "Export the NIJ file as CSV.")


def test_model_option_restricts_tables_to_one_family(results: Path) -> None:
    """--model keeps one section; an unknown family is a one-line error, exit 2."""
    assert main(["report", "--results", str(results), "--audits", str(results / "none"),
                 "--model", "random_forest"]) == 0
    text = (results / "paper_table.md").read_text()
    assert "**random_forest**" in text and "logistic_regression" not in text
    assert main(["report", "--results", str(results), "--audits", str(results / "none"),
                 "--model", "svm"]) == 2


def test_latex_table_compiles_with_booktabs(rendered: Path, tmp_path: Path) -> None:
    """The .tex fragments compile in a booktabs document (structure checked without pdflatex)."""
    for name in ("paper_table", "performance_table", "counterfactual_table",
                 "residual_floor_table", "effects_table"):
        tex = (rendered / f"{name}.tex").read_text()
        assert tex.isascii()
        assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}")
        assert tex.count(r"\toprule") == tex.count(r"\bottomrule") == 3
        pdflatex = shutil.which("pdflatex")
        if pdflatex is None:
            continue
        doc = tmp_path / f"{name}-doc.tex"
        doc.write_text("\\documentclass[twocolumn]{article}\n\\usepackage{booktabs}\n"
                       f"\\begin{{document}}\n{tex}\\end{{document}}\n")
        run = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error",
                              doc.name], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stdout[-2000:]
        assert "Overfull" not in run.stdout


def test_stage_reads_the_report_section_of_params(results: Path, tmp_path: Path) -> None:
    """params.yaml report.metric selects the metric; an unknown key exits 2."""
    params = tmp_path / "params.yaml"
    params.write_text("report:\n  metric: equal_opportunity\n")
    args = ["--params", str(params), "--results", str(results), "--audits", str(tmp_path)]
    assert report_stage.main(args) == 0
    assert EO in (results / "paper_table.md").read_text().splitlines()[0]
    params.write_text("report:\n  metrc: x\n")
    assert report_stage.main(args) == 2


# ------------------------------------------------------------------------------ the rendered page


def page_requests(net_log: Path) -> list[str]:
    """URLs the page itself asked for over a network (browser housekeeping excluded)."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for event in log["events"]:
        params = event.get("params", {})
        if event["type"] != start or "url" not in params:
            continue
        local = params["url"].split(":", 1)[0] in ("file", "data", "blob", "about", "chrome")
        if not local and params.get("initiator") != "not an origin":
            urls.append(params["url"])
    return urls


def render(page: Path, workdir: Path) -> tuple[dict[str, object], list[str]]:
    """Render ``page`` in headless Chromium: the in-page check record and the page's requests.

    Also writes ``<page stem>.png`` (a screenshot) next to the page.
    """
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing; CI must install chromium")
        pytest.skip(f"{CHROMIUM} is not installed")
    net_log = workdir / "net-log.json"
    common = [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={workdir / 'profile'}",
              "--virtual-time-budget=10000"]
    dom = subprocess.run([*common, f"--log-net-log={net_log}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=180, check=True).stdout
    subprocess.run([*common, "--window-size=1280,2400",
                    f"--screenshot={page.with_suffix('.png')}", page.as_uri()],
                   capture_output=True, timeout=180, check=True)
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    assert found, "the page's load handler did not run"
    return json.loads(found.group(1)), page_requests(net_log)


def test_report_renders_in_chromium_with_every_figure_and_no_request(
    rendered: Path, tmp_path: Path
) -> None:
    """Headless Chromium loads every inline figure, shows the tables, requests nothing."""
    page = tmp_path / "report.html"
    shutil.copy(rendered / "report.html", page)
    check, requests = render(page, tmp_path)
    images = check["images"]
    assert isinstance(images, list)
    assert len(images) == len(list((rendered / "figures").glob("*.png")))
    for image in images:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, image
    assert check["tables"] == 6  # paper, margins, effects, residual floor, performance, flips
    assert check["resources"] == [] and requests == []
    assert page.with_suffix(".png").stat().st_size > 0


def test_wide_tables_scroll_in_their_own_box(rendered: Path, tmp_path: Path) -> None:
    """With every fold open the page is no wider than the window: the every-row tables (over
    2,000 px of columns) scroll inside their box, and no table overflows outside one."""
    page = tmp_path / "report.html"
    shutil.copy(rendered / "report.html", page)
    check, _ = render(page, tmp_path)
    layout = check["layout"]
    assert isinstance(layout, dict)
    assert layout["open_width"] <= layout["viewport"] and layout["unboxed_wide_tables"] == 0


def test_plain_tables_start_with_the_rows_cell_and_plurals_agree(rendered: Path,
                                                               tmp_path: Path) -> None:
    """Every plain table sits in a scrolled box and starts with the sticky key column (the
    row's cell, e.g. S0 LR sex); a one-audit report says "1 audit", not "1 audits"."""
    text = (rendered / "report.html").read_text()
    tables = re.findall(r'<div class="scroll"><table class="plain"><thead><tr>(.*?)</tr>', text)
    assert tables and text.count('<table class="plain">') == len(tables)
    assert all(t.startswith("<th class=key>") for t in tables)
    assert '<td class="key">S0 LR sex</td>' in text
    assert "2 audits with results" in text
    one = tmp_path / "one"
    write_audit_folder(one, "audit_a", ("sex",))
    write_report(one)
    assert "1 audit with results" in (one / "report.html").read_text()


def test_chromium_check_sees_an_external_request(tmp_path: Path) -> None:
    """The request check is not vacuous: a page with a remote image is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><img src="http://example.invalid/x.png">'
                    '<pre id="render-check">{}</pre></body></html>')
    _, requests = render(page, tmp_path)
    assert requests == ["http://example.invalid/x.png"]


def test_stability_section_appears_only_with_stability_csv(results: Path) -> None:
    """report.html shows a training-variance row of the report metric where an audit has
    stability.csv, and no such section where none has."""
    write_report(results)
    assert "Training variance across seeds" not in (results / "report.html").read_text()
    from faircode.evaluate.stability import STABILITY_COLUMNS

    row = {c: "" for c in STABILITY_COLUMNS}
    row.update(audit="audit_a", strategy="in_processing", model="random_forest",
               protected_attribute="sex", metric=DP, seeds=10, seed_mode="model",
               rep0_value=0.0391, value=0.0342, sd_between=0.0365, min=-0.0044,
               max=0.0680, n_defined=10, share_significant=0.2, sign_flips=True,
               sd_within=0.055, ci_low=-0.1067, ci_high=0.1573, verdict="inconclusive",
               n_informative=10, n_degenerate=0)
    other = {**row, "metric": DI, "sd_between": 0.9876}
    pd.DataFrame([row, other], columns=list(STABILITY_COLUMNS)).to_csv(
        results / "audit_a" / "stability.csv", index=False)
    record_files(results / "audit_a")
    write_report(results)
    page = (results / "report.html").read_text()
    section = page.split("Training variance across seeds", 1)[1].split("<h2>", 1)[0]
    assert '<td class="key">audit_a S3 RF sex</td><td>0.0342</td>' in section  # the estimate
    assert "<td>inconclusive</td>" in section and "<td>0.0391</td>" in section
    assert "0.0365" in section and "0.9876" not in section  # the report metric only


def test_heatmap_scale_separates_large_gaps_and_never_saturates() -> None:
    """The heatmap's signed square-root scale ends at the largest |gap|: S0-sized gaps of 0.5
    and 0.85 get colours over a tenth of the scale apart (a linear ±0.2 scale gave both its end),
    a gap of 0.01 is still off-white, and the sign picks the side."""
    from faircode.report.figures import heat_norm

    norm = heat_norm(0.86)
    assert float(norm(0.86)) == 1.0 and float(norm(-0.86)) == 0.0 and float(norm(0.0)) == 0.5
    assert float(norm(0.85)) - float(norm(0.5)) > 0.1
    assert 0.55 < float(norm(0.01)) < 0.6 and float(norm(-0.01)) < 0.5
