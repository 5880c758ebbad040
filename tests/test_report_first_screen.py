"""Tests of the report's first screen: the headline, the legend, one significance, the layout."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_report import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    DP,
    MODELS,
    STRATEGIES,
    edit_fairness,
    record_files,
    write_audit_folder,
)

from faircode.core.cells import STRATEGY_TITLES, strategy_code
from faircode.report.build import write_report

ALPHA = 0.05
S0_LR_SEX = {"strategy": "baseline", "model": "logistic_regression",
             "protected_attribute": "sex", "metric": DP}
S3_LR_SEX = {**S0_LR_SEX, "strategy": "in_processing"}


def _lead(folder: Path) -> str:
    """The finding in full (folded under the first screen's short lead)."""
    found = re.search(r'<p id="finding">(.*?)</p>', (folder / "report.html").read_text(), re.S)
    assert found, "no finding on the page"
    return found.group(1)


def _short(folder: Path) -> tuple[str, list[str]]:
    """The first screen's lead sentence and its counts."""
    page = (folder / "report.html").read_text()
    found = re.search(r'<p class="lead" id="lead">(.*?)</p>(?:<ul class="counts" '
                      r'id="counts">(.*?)</ul>)?', page, re.S)
    assert found, "no lead on the page"
    return found.group(1), re.findall(r"<li>(.*?)</li>", found.group(2) or "")


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two audits where the two BH families disagree on two cells, rendered once."""
    root = tmp_path_factory.mktemp("families") / "results"
    write_audit_folder(root, "audit_a", ("sex", "age"))
    write_audit_folder(root, "audit_b", ("race",))
    # p = 0.001 passes the benchmark-wide family, but the audit's own q says no: no star
    edit_fairness(root / "audit_a", where=S0_LR_SEX, q_value=0.2, significant=False)
    # p = 0.04 is no benchmark-wide finding, but the audit's own q = 0.01 is: a star
    edit_fairness(root / "audit_a", where=S3_LR_SEX, p_value=0.04, q_value=0.01,
                  significant=True)
    write_report(root, provenance={"git_commit": "e" * 40})
    return root


def _stars(markdown: str) -> dict[tuple[str, str, str, str], bool]:
    """(audit, attribute, model, strategy code) -> starred, for every cell of a paper table."""
    cells: dict[tuple[str, str, str, str], bool] = {}
    model = ""
    for line in markdown.splitlines():
        section = re.match(r"\| \*\*(\w+)\*\*", line)
        if section:
            model = section.group(1)
            continue
        parts = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if model and len(parts) == 2 + len(STRATEGIES) and parts[0].startswith("audit_"):
            for code, cell in zip(map(strategy_code, STRATEGIES), parts[2:], strict=True):
                cells[(parts[0], parts[1], model, code)] = bool(re.search(r"\]\*", cell))
    return cells


def test_every_star_in_the_paper_table_has_the_audits_own_q_below_alpha(families: Path) -> None:
    """A cell is starred exactly when fairness.csv's q_value < alpha (K = 1), whatever the
    benchmark-wide q says."""
    stars = _stars((families / "paper_table.md").read_text())
    # (audit_a: 2 attributes, audit_b: 1) x 3 families x the fixture's strategies (S0-S4)
    assert len(stars) == (2 + 1) * 3 * len(STRATEGIES)
    fairness = pd.concat([pd.read_csv(p) for p in sorted(families.glob("audit_*/fairness.csv"))])
    fairness = fairness[fairness["metric"] == DP]
    codes = {s: f"S{i}" for i, s in enumerate(fairness["strategy"].drop_duplicates())}
    for row in fairness.itertuples():
        key = (row.audit, row.protected_attribute, row.model, codes[row.strategy])
        if row.note != row.note or row.note == "":  # informative cells only
            assert stars[key] == (row.q_value < ALPHA), key
    assert not stars[("audit_a", "sex", "logistic_regression", "S0")]
    assert stars[("audit_a", "sex", "logistic_regression", "S3")]


def test_summary_csv_carries_both_families_and_the_star_follows_q_value(families: Path) -> None:
    """summary.csv: star implies significant (q_value < alpha); q_benchmark disagrees on the
    edited S0 cell (p = 0.001), so the robustness column is really the other family."""
    summary = pd.read_csv(families / "summary.csv")
    assert not (summary["star"] & ~summary["significant"]).any()
    row = summary[(summary[list(S0_LR_SEX)] == pd.Series(S0_LR_SEX)).all(axis=1)
                  & (summary["audit"] == "audit_a")].iloc[0]
    assert (row["q_value"], bool(row["significant"]), bool(row["star"])) == (0.2, False, False)
    assert row["q_benchmark"] < ALPHA and bool(row["significant_benchmark"])


def test_page_says_which_family_the_stars_use(families: Path) -> None:
    """The legend names the audit's own BH q as the stars' family, q_benchmark as robustness."""
    legend = (families / "report.html").read_text().split('<aside id="legend">', 1)[1]
    legend = legend.split("</aside>", 1)[0]
    assert "the audit&#x27;s own Benjamini-Hochberg q &lt; 0.05" in legend
    assert "q_benchmark, a robustness check, never a star" in legend


def test_legend_names_s0_to_s4_and_the_sign_convention(families: Path) -> None:
    """S0-S4 appear with their titles, the sign convention is stated, no literal S_m."""
    page = (families / "report.html").read_text()
    legend = page.split('<aside id="legend">', 1)[1].split("</aside>", 1)[0]
    for code, title in STRATEGY_TITLES.items():
        assert f"<b>{code}</b> {title.replace('+', '+')}" in legend.replace("&#x2B;", "+"), code
    assert "<b>Sign convention</b>" in legend and "negative" in legend
    assert "S_m" not in page


def test_headline_changes_when_a_result_changes(tmp_path: Path) -> None:
    """Making audit_b's S0 gap not significant turns "2 of 2" into "1 of 2" and names it as
    inconclusive, never as parity."""
    root = tmp_path / "results"
    write_audit_folder(root, "audit_a", ("sex", "age"))
    write_audit_folder(root, "audit_b", ("race",))
    write_report(root)
    before = _lead(root)
    assert before.startswith(f"2 audits with results: S0 (baseline) leaves a {DP} gap on the "
                             "first protected attribute in 2 of 2 (a gap shown in at least "
                             "one model family): against the disadvantaged group in 2, "
                             "favouring it in 0.")
    edit_fairness(root / "audit_b", where={"strategy": "baseline", "metric": DP},
                  q_value=0.6, significant=False)
    write_report(root)
    after = _lead(root)
    assert f"{DP} gap on the first protected attribute in 1 of 2 " in after
    assert "S0 shows no gap on the first attribute in audit_b (inconclusive)" in after
    assert "audit_b (inconclusive)" not in before and "audit_b (parity" not in after


def test_headline_names_what_each_mitigation_buys(families: Path) -> None:
    """The lead counts per strategy the audits where the gap is reduced in every family, where
    a gap remains (S3: audit_a sex LR starred) and where neither a gap nor parity is shown."""
    lead = _lead(families)
    assert (f"S3 ({STRATEGY_TITLES['S3']}) reduces it in every model family in 2 of 2; parity "
            "within \u00b10.05 is shown in 0 (family: all equivalence tests); a gap remains in 1 "
            "(against the disadvantaged group in 1, favouring it in 0); in the other 1 neither "
            "a gap nor parity is shown") in lead
    assert (f"S4 ({STRATEGY_TITLES['S4']}) reduces it in every model family in 2 of 2; parity "
            "within \u00b10.05 is shown in 0 (family: all equivalence tests); in the other 2 "
            "neither") in lead
    assert "median \u0394 accuracy \u22120.01 on 2 threshold audits" in lead  # every effect


def test_headline_states_parity_and_the_gap_not_excluded_from_verdicts(tmp_path: Path) -> None:
    """With verdicts: S4 parity in every family of audit_a, inconclusive in audit_b with a
    gap bound of -0.12: "parity ... is shown in 1; in the other 1 a gap of up to 0.12 cannot
    be excluded"; costs in balanced accuracy for a base_rate audit, majority-class beside."""
    root = tmp_path / "results"
    for audit in ("audit_a", "audit_b"):
        folder = write_audit_folder(root, audit, ("sex",))
        fairness = pd.read_csv(folder / "fairness.csv")
        fairness["verdict"] = np.where(fairness["q_value"] < ALPHA, "gap", "inconclusive")
        fairness["gap_bound"] = fairness["value"] - 0.05
        s4 = fairness["strategy"] == "post_processing"
        fairness.loc[s4, "verdict"] = "parity" if audit == "audit_a" else "inconclusive"
        fairness.loc[s4, "gap_bound"] = -0.12
        fairness.to_csv(folder / "fairness.csv", index=False)
    run = json.loads((root / "audit_b" / "run.json").read_text())
    run["decision"] = {"rule": "base_rate"}
    (root / "audit_b" / "run.json").write_text(json.dumps(run))
    effects = pd.read_csv(root / "audit_b" / "effects.csv")
    extra = effects[effects["metric"] == "accuracy"].assign(metric="balanced_accuracy",
                                                            value=-0.05)
    effects = effects[effects["metric"] != "balanced_accuracy"]  # the fixture's own
    pd.concat([effects, extra]).to_csv(root / "audit_b" / "effects.csv", index=False)
    perf = pd.read_csv(root / "audit_b" / "performance.csv")
    major = perf[perf["metric"] == "accuracy"].assign(metric="majority_baseline_accuracy",
                                                      value=0.88)
    pd.concat([perf, major]).to_csv(root / "audit_b" / "performance.csv", index=False)
    for folder in (root / "audit_a", root / "audit_b"):
        record_files(folder)  # the edited folders as their writer records them
    write_report(root)
    lead = _lead(root)
    assert ("parity within \u00b10.05 is shown in 1 (family: all equivalence tests); in the "
            "other 1 a gap of up to 0.12 cannot be excluded") in lead
    assert ("cost: median \u0394 balanced accuracy \u22120.05 on 1 base_rate audit, "
            "majority-class accuracy 0.88 and median \u0394 accuracy \u22120.01 on 1 threshold "
            "audit") in lead


def _chromium(page: Path, out: Path, *, width: int = 1280) -> dict[str, Any]:
    """The render check's layout at ``width`` x 1000, and a screenshot
    ``out/first_screen.png``."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    common = [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={out / 'profile'}",
              f"--window-size={width},1000", "--hide-scrollbars", "--virtual-time-budget=5000"]
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    subprocess.run([*common, f"--screenshot={out / 'first_screen.png'}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    assert found, "the page's load handler did not run"
    layout = json.loads(found.group(1).replace("&quot;", '"'))["layout"]
    assert isinstance(layout, dict)
    return layout


def test_headline_and_legend_are_on_the_first_screen_before_any_table(
    families: Path, tmp_path: Path
) -> None:
    """At 1280 x 1000 the headline's sentences (``#lead``) and the legend end above 1,000 px and
    precede the first table; the screenshot of that screen is written to the test's folder.

    The per-audit lines under the lead are not bounded: at 13 audits they run past the first
    screen (bench/report_first_screen.py measures a real page)."""
    from PIL import Image

    layout = _chromium(families / "report.html", tmp_path)
    assert layout["viewport"] == 1280
    assert layout["lead"]["bottom"] <= 1000 and layout["legend"]["bottom"] <= 1000
    assert layout["lead"]["top"] < 300  # the headline opens the page, under the title
    assert layout["heatmap"]["top"] < 1000  # the heatmap starts on the first screen
    assert layout["before_first_table"] == {"headline": True, "legend": True}
    assert layout["width"] <= 1280  # nothing forces a horizontal scroll
    with Image.open(tmp_path / "first_screen.png") as shot:
        assert shot.size == (1280, 1000)
        pixels = np.asarray(shot.convert("L"))
    assert (pixels < 128).mean() > 0.01  # text was drawn, not a blank page


def test_page_is_short_and_small(families: Path) -> None:
    """Every table above the provenance is folded and the file is well under 1 MB (issue 24:
    2.3 MB and 31 screens before)."""
    page = (families / "report.html").read_text().split("<h2>Provenance</h2>", 1)[0]
    assert (families / "report.html").stat().st_size < 1_000_000
    assert page.count("<details") >= 5
    tables = [m.start() for m in re.finditer(r"<table", page)]
    folds = [(m.start(), page.index("</details>", m.start()))
             for m in re.finditer(r"<details", page)]
    assert tables and all(any(a < t < b for a, b in folds) for t in tables)
    assert set(MODELS) <= set(pd.read_csv(families / "summary.csv")["model"])


def test_an_audit_without_effects_gets_verdicts_but_no_n_a_numbers(tmp_path: Path) -> None:
    """Without effects.csv the per-audit line keeps each strategy's verdict and prints no
    Δ numbers, never "n/a"."""
    root = tmp_path / "results"
    write_audit_folder(root, "audit_b", ("race",)).joinpath("effects.csv").unlink()
    record_files(root / "audit_b")  # a folder written without effects.csv
    write_report(root)
    page = (root / "report.html").read_text()
    top = page.split('<section id="headline">', 1)[1].split("</section>", 1)[0]
    top = re.sub(r'<aside id="legend">.*?</aside>', "", top, flags=re.S)  # says what n/a is
    assert "n/a" not in top
    assert "S4: inconclusive" in top
    assert "S1: a gap remains against the disadvantaged group (3 of 3)" in top


def test_every_star_has_the_audits_own_q_below_alpha_in_mlflow(families: Path) -> None:
    """The MLflow child of each paper-table cell logs dp.q_audit: below alpha exactly where
    the paper table stars the cell (the same family in both views); the benchmark-wide q of
    the edited cell is summary.csv's (the parent's artifact), not a child metric."""
    from faircode.record.kinds import collect_children

    stars = _stars((families / "paper_table.md").read_text())
    children, _ = collect_children(families)
    logged = {(c.audit, c.tags["attribute"], c.tags["model"], c.tags["strategy_code"]):
              c.metrics for c in children if c.tags["table"] == "fairness"}
    checked = 0
    for key, starred in stars.items():
        if starred:
            assert logged[key]["dp.q_audit"] < ALPHA, key
            checked += 1
    assert checked >= 1
    edited = logged[("audit_a", "sex", "logistic_regression", "S0")]
    assert edited["dp.q_audit"] == 0.2 and "dp.q_bench" not in edited
    summary = pd.read_csv(families / "summary.csv")  # the benchmark-wide q: the parent's table
    row = summary[(summary["audit"] == "audit_a") & (summary["protected_attribute"] == "sex")
                  & (summary["model"] == "logistic_regression")
                  & (summary["strategy"] == "baseline") & (summary["metric"] == DP)]
    assert len(row) == 1 and row["q_benchmark"].iat[0] < ALPHA


ATTRIBUTES = ("sex", "age", "race", "religion", "disability")
"""Five audits of these five attributes: a 25-row heatmap (the committed state's has 26)."""


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five audits of five attributes each (a 25-row heatmap, about the committed state's),
    rendered once without the per-audit figures (below the first screen; half a minute)."""
    root = tmp_path_factory.mktemp("many") / "results"
    for i in range(5):
        write_audit_folder(root, f"audit_{i}", ATTRIBUTES)
    _first_screen_report(root)
    return root


def _first_screen_report(root: Path) -> None:
    """``write_report`` without the per-audit figures (they are below the first screen)."""
    from faircode.report import figures, threshold_curves

    with pytest.MonkeyPatch.context() as patch:
        for name in ("by_strategy", "tradeoff"):
            patch.setattr(figures, name, lambda *args: None)
        patch.setattr(threshold_curves, "curve_drawings", lambda ctx, out: [])
        write_report(root, provenance={"git_commit": "e" * 40})


def test_the_whole_heatmap_lead_and_legend_fit_the_first_screen_at_1400(
        many: Path, tmp_path: Path) -> None:
    """At 1400 x 1000 the whole heatmap of 25 rows (the image, not only its top), the lead
    with its counts and the legend end within the first 1,000 px, side by side, and nothing
    forces a horizontal scroll."""
    layout = _chromium(many / "report.html", tmp_path, width=1400)
    image = layout["heatmap_image"]
    assert image is not None and 0 < image["top"] < 300 and image["bottom"] <= 1000
    assert image["bottom"] - image["top"] > 500  # shown whole, not as a thumbnail
    for part in ("lead", "counts", "legend"):
        assert layout[part]["bottom"] <= 1000, part
    assert layout["width"] <= 1400


def test_the_lead_is_a_sentence_then_the_counts_in_80_words(many: Path) -> None:
    """The lead is the finding in one sentence, then a short list: one item per mitigated
    strategy (S4 first), and the audits without an S0 gap; at most 80 words in all, the full
    sentences folded below."""
    sentence, counts = _short(many)
    words = len(" ".join([sentence, *counts]).split())
    assert words <= 80, (words, sentence, counts)
    assert sentence.startswith(f"S0 leaves a {DP} gap on the first protected attribute in ")
    assert [c.split(":", 1)[0] for c in counts][:4] == ["S4", "S3", "S2", "S1"]
    assert "in 5 of 5 audits" in sentence
    page = (many / "report.html").read_text()
    assert "<summary><h3>The finding in full</h3></summary>" in page


def test_the_legend_names_every_mark(families: Path) -> None:
    """Every mark a gap carries on the page is in the legend: *, (*), =, no mark, n/a."""
    legend = (families / "report.html").read_text().split('<aside id="legend">', 1)[1]
    marks = re.findall(r"<li><b>(.*?)</b>", legend.split("</aside>", 1)[0].split(
        'class="marks"', 1)[1])
    assert marks == ["*", "(*)", "=", "no mark", "n/a, grey"]


def _heat_colours(root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    """The heatmap's colours of the gaps -0.5, -0.1, 0.1, 0.5 for the results at ``root``."""
    from faircode.report import figures
    from faircode.report.build import _context
    from faircode.report.inputs import load_results

    drawn: list[Any] = []
    monkeypatch.setattr(figures, "_save", lambda fig, *a, **k: drawn.append(fig))
    ctx = _context(load_results(root), metric=DP, models=MODELS, alpha=ALPHA, confidence=0.95)
    figures.heatmap(ctx, tmp_path)
    image = drawn[0].axes[0].images[0]
    return image.to_rgba(np.array([-0.5, -0.1, 0.1, 0.5])).tolist()


def test_the_heatmap_colour_scale_is_the_same_in_every_report(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Two reports whose largest gaps differ (0.9 in the second) colour the same gap alike: the
    scale is fixed at ±1, never the run's largest gap."""
    root = tmp_path / "results"
    write_audit_folder(root, "audit_a", ("sex",))
    write_audit_folder(root, "audit_b", ("race",))
    before = _heat_colours(root, monkeypatch, tmp_path)
    edit_fairness(root / "audit_b", where={"strategy": "baseline", "metric": DP}, value=-0.9)
    assert _heat_colours(root, monkeypatch, tmp_path) == before


def test_provenance_says_when_the_params_are_not_the_params_files(families: Path,
                                                                  tmp_path: Path) -> None:
    """A state whose params digest differs from the params file's says so on the page and names
    each parameter with both values; the package versions are one wrapped line."""
    import shutil

    from faircode.provenance.state import params_digest

    root = tmp_path / "results"
    shutil.copytree(families, root)
    run = json.loads((root / "audit_a" / "run.json").read_text())
    run["config"] = {**run.get("config", {}), "n_resamples": 200}
    run["state"] = {"git_commit": "e" * 40, "code_sha256": "c" * 64, "inputs_dirty": False,
                    "params_sha256": params_digest(run["config"])}
    for audit in ("audit_a", "audit_b"):  # one state: a quick run at B = 200
        record = json.loads((root / audit / "run.json").read_text())
        (root / audit / "run.json").write_text(json.dumps(
            {**record, "config": run["config"], "state": run["state"]}))
        record_files(root / audit)
    config = {**run["config"], "n_resamples": 2000}
    differs = {"path": "params.yaml", "sha256": params_digest(config), "config": config}
    write_report(root, provenance={"params_file": differs})
    page = (root / "report.html").read_text().split("<h2>Provenance</h2>", 1)[1]
    assert "<b>not those of params.yaml</b>" in page
    assert "n_resamples 200 (params.yaml: 2000)" in page
    assert "clean (every input as committed), but run with other parameters" in page
    assert 'class="versions wrap"' in page and "<pre>" not in page
    same = {"path": "params.yaml", "sha256": run["state"]["params_sha256"],
            "config": run.get("config", {})}
    write_report(root, provenance={"params_file": same})
    page = (root / "report.html").read_text().split("<h2>Provenance</h2>", 1)[1]
    assert "<dd class=\"params\" data-differ=\"false\">those of params.yaml</dd>" in page


def test_the_residual_floor_figure_has_an_axis_every_eight_rows(
        monkeypatch: pytest.MonkeyPatch, many: Path, tmp_path: Path) -> None:
    """The residual-floor figure of 25 audit x attribute rows is four panels of at most eight
    rows, each with its own labelled x axis."""
    from faircode.report import figures
    from faircode.report.build import _context
    from faircode.report.inputs import load_results

    drawn: list[Any] = []
    monkeypatch.setattr(figures, "_save", lambda fig, *a, **k: drawn.append(fig))
    ctx = _context(load_results(many), metric=DP, models=MODELS, alpha=ALPHA, confidence=0.95)
    figures.floor_figure(ctx, pd.read_csv(many / "residual_floor.csv"), tmp_path)
    (fig,) = drawn
    rows = [len(ax.get_yticks()) for ax in fig.axes]
    assert rows == [8, 8, 8, 1]
    for ax in fig.axes:
        assert any(t.get_text() for t in ax.get_xticklabels())
