"""Tests of the DVC views: the metrics and plot files of faircode.evaluate.summary, dvc.yaml's
plot definitions, and the documented ``dvc exp show`` patterns in a temporary git + DVC repository.

The repository holds the real dvc.yaml, params.yaml and .dvc/plots templates and, for every audit
of params.yaml, a metrics file of the real shape (every cell, every attribute of its manifest, the
deployed system where declared) written by :func:`summary` from hand-made tables: ``dvc exp show``
reads params, metrics and the deps of dvc.yaml without running a stage.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import copy_pipeline

from faircode.audit.manifest import discover_manifests, load_manifest
from faircode.core.cells import STRATEGY_TABLE, grid_cells
from faircode.evaluate.headline_keys import HEADLINE_KEYS, headline_record
from faircode.evaluate.summary import (
    headline,
    strategy_plot,
    summary,
    unavailable_headline,
    unavailable_summary,
)
from faircode.evaluate.tables import AuditResults
from faircode.pipeline.dvc_page import PAGE, VEGA_LITE, page

REPO = Path(__file__).resolve().parent.parent
DOCS = (REPO / "docs" / "pipeline.md", REPO / "README.md")
COLUMNS = 120
"""The terminal width the table views must fit."""


def _results(cells: list[tuple[str, str]], attributes: tuple[str, ...]) -> AuditResults:
    """Tables with a parity row (value k/100 for the k-th row) and a ratio row per cell and
    attribute, and an accuracy and an AUC row per cell."""
    fairness, performance = [], []
    for strategy, model in cells:
        for attribute in attributes:
            k = len(fairness) // 2 + 1
            fairness.append({"strategy": strategy, "model": model, "protected_attribute": attribute,
                             "metric": "demographic_parity_diff", "value": k / 100,
                             "ci_low": k / 100 - 0.05, "ci_high": k / 100 + 0.05,
                             "q_value": k / 1000, "significant": True})
            fairness.append({**fairness[-1], "metric": "disparate_impact_ratio", "value": 0.9})
        performance.append({"strategy": strategy, "model": model, "protected_attribute": "",
                            "metric": "accuracy", "value": 0.8})
        performance.append({**performance[-1], "metric": "auc", "value": 0.7})
    return AuditResults(fairness=pd.DataFrame(fairness), performance=pd.DataFrame(performance),
                        intersectional=pd.DataFrame(), counterfactual=pd.DataFrame(), cells=(),
                        rule=None)


def test_summary_keys_each_row_set_by_audit_code_and_family() -> None:
    """The metrics carry accuracy and, per attribute, the parity difference, its interval, its q
    and its verdict, keyed ``<audit>.<code>.<family>``; other metrics are left out."""
    results = _results([("baseline", "logistic_regression"), ("in_processing", "random_forest")],
                       ("race", "sex"))
    results.fairness["verdict"] = "gap"
    got = summary(results, audit="toy")
    assert got["toy"]["S0"]["LR"] == {
        "accuracy": 0.8, "dp_diff": {"race": 0.01, "sex": 0.02},
        "dp_lo": {"race": 0.01 - 0.05, "sex": 0.02 - 0.05},
        "dp_hi": {"race": 0.01 + 0.05, "sex": 0.02 + 0.05},
        "dp_q": {"race": 0.001, "sex": 0.002}, "dp_verdict": {"race": "gap", "sex": "gap"}}
    assert got["toy"]["S3"]["RF"]["dp_diff"] == {"race": 0.03, "sex": 0.04}
    assert list(got["toy"]) == ["S0", "S3"]


def test_summary_keys_a_deployed_system_by_its_name() -> None:
    """A deployed system's row set is ``<audit>.deployed.<system name>``."""
    results = _results([("deployed", "compas_tool")], ("race",))
    assert list(summary(results, audit="toy")["toy"]) == ["deployed"]
    assert summary(results, audit="toy")["toy"]["deployed"]["compas_tool"]["dp_diff"] == {
        "race": 0.01}


def test_summary_writes_an_undefined_value_as_null() -> None:
    """A NaN parity difference (a degenerate cell) is JSON null, not a number."""
    results = _results([("baseline", "gradient_boosting")], ("age",))
    results.fairness.loc[0, "value"] = float("nan")
    written = json.loads(json.dumps(summary(results, audit="toy")))
    assert written["toy"]["S0"]["GB"]["dp_diff"] == {"age": None}


def _numbers(tree: object) -> list[float]:
    """Every number in a parsed JSON value (booleans are no numbers)."""
    if isinstance(tree, dict):
        return [n for v in tree.values() for n in _numbers(v)]
    if isinstance(tree, list):
        return [n for v in tree for n in _numbers(v)]
    return [tree] if isinstance(tree, int | float) and not isinstance(tree, bool) else []


def test_no_metrics_json_holds_a_number_for_an_uninformative_cell() -> None:
    """Rendered as DVC reads them, the headline, the full metrics and the strategy-plot data
    hold no number of a cell whose verdict is uninformative: its value, interval and q are null,
    its verdict says why, and the headline's family mean leaves it out."""
    cells = [("baseline", m) for m in ("logistic_regression", "random_forest",
                                       "gradient_boosting")]
    cells += [("in_processing", m) for m in ("logistic_regression", "random_forest",
                                             "gradient_boosting")]
    results = _results(cells, ("race",))
    fairness = results.fairness
    fairness["verdict"] = "inconclusive"
    dp = fairness["metric"] == "demographic_parity_diff"
    dead = dp & ((fairness["strategy"] == "in_processing") | (
        fairness["model"] == "random_forest"))
    fairness.loc[dead, "verdict"] = "uninformative"
    fairness.loc[dead, "value"] = 0.999  # a number no view may show
    views = {"headline": headline(results), "full": summary(results, audit="toy"),
             "plot": strategy_plot(results, audit="toy")}
    written = {k: json.loads(json.dumps(v)) for k, v in views.items()}
    assert 0.999 not in [n for v in written.values() for n in _numbers(v)]
    assert written["headline"]["gap"]["S3"] is None
    assert written["headline"]["gap"]["S0"] == round((0.01 + 0.03) / 2, 3)  # LR and GB only
    rf = written["full"]["toy"]["S0"]["RF"]
    assert (rf["dp_diff"], rf["dp_lo"], rf["dp_hi"], rf["dp_q"], rf["dp_verdict"]) == (
        {"race": None}, {"race": None}, {"race": None}, {"race": None},
        {"race": "uninformative"})
    for point in written["plot"]:
        if point["verdict"] == "uninformative":
            assert [point[k] for k in ("dp_diff", "ci_low", "ci_high", "q_value")] == [None] * 4


def _flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_headline_is_the_first_attribute_mean_over_families() -> None:
    """The headline's gap.S<k> is the mean over the families of the first attribute's parity
    difference (hand-computed from the k/100 values), rounded to 3 decimals."""
    cells = [(s.value, m.value) for s, m in grid_cells()]
    results = _results(cells, ("race", "sex"))
    got = headline(results)
    # row k (1-based) per (cell, attribute): race of cell c is row 2c+1 -> value (2c+1)/100
    want = {s.code: round(sum((2 * (3 * k + f) + 1) / 100 for f in range(3)) / 3, 3)
            for k, s in enumerate(STRATEGY_TABLE)}
    assert got == {"attr": "race", "gap": want}


def test_headline_is_the_family_mean_of_fairness_csvs_one_number() -> None:
    """A headline value is the mean over the families of fairness.csv's value -- at K > 1 the
    K-replicate estimate every view shows -- never another table's number (stability.csv's
    columns are not read)."""
    cells = [("baseline", m) for m in ("logistic_regression", "random_forest")]
    results = _results(cells, ("age",))
    gaps = (results.fairness["metric"] == "demographic_parity_diff") & (
        results.fairness["protected_attribute"] == "age")
    results.fairness.loc[gaps, "value"] = np.where(
        results.fairness.loc[gaps, "model"] == "logistic_regression", 0.2, 0.4)
    results.stability = pd.DataFrame([
        {"strategy": "baseline", "model": m, "protected_attribute": "age",
         "metric": "demographic_parity_diff", "value": 9.0, "rep0_value": 9.0}
        for m in ("logistic_regression", "random_forest")])
    assert headline(results)["gap"]["S0"] == 0.3


def test_every_headline_has_the_same_keys() -> None:
    """A headline with data and one without have exactly HEADLINE_KEYS, so `dvc metrics show`
    prints one line per audit, no column of another audit's."""
    results = _results([(s.value, m.value) for s, m in grid_cells()], ("age",))
    assert sorted(_flat(headline(results))) == sorted(HEADLINE_KEYS)
    assert sorted(_flat(unavailable_headline())) == sorted(HEADLINE_KEYS)
    assert set(_flat(unavailable_headline()).values()) == {None}


def test_strategy_plot_names_audit_attribute_strategy_and_family() -> None:
    """Each plot record names ``<audit>: <attribute>``, the strategy with its title and the
    family, with the interval and the per-audit decision."""
    records = strategy_plot(_results([("unawareness_proxy_removal", "gradient_boosting"),
                                      ("deployed", "compas_tool")], ("race",)), audit="toy")
    assert records == [
        {"attribute": "toy: race", "attribute_index": 0,
         "strategy": "S2 unawareness + proxy removal", "family": "GB",
         "dp_diff": 0.01, "ci_low": -0.04, "ci_high": 0.060000000000000005, "q_value": 0.001,
         "significant": True, "verdict": None},
        {"attribute": "toy: race", "attribute_index": 0, "strategy": "deployed compas_tool",
         "family": "deployed",
         "dp_diff": 0.02, "ci_low": 0.02 - 0.05, "ci_high": 0.07, "q_value": 0.002,
         "significant": True, "verdict": None},
    ]


def test_dvc_plots_are_ignored_by_git() -> None:
    """``dvc plots show``'s output folder dvc_plots/ is in .gitignore."""
    assert "/dvc_plots/" in (REPO / ".gitignore").read_text().splitlines()


def test_report_depends_on_the_manifest_folder_of_each_audit_of_params() -> None:
    """The report stage lists ``audits/<name>`` for each audit of params.yaml's lists (it
    reads their manifests; here, every manifest folder) and never the folder ``audits`` itself,
    whose name is also a param."""
    deps = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["report"]["deps"]
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    assert "audits" not in deps
    assert sorted(d for d in deps if d.startswith("audits/")) == sorted(
        f"audits/{a}" for a in [*params["audits"], *params["text_audits"],
                                *params.get("regression_audits", []),
                                *params.get("multiclass_audits", [])]) == sorted(
        f"audits/{p.parent.name}" for p in discover_manifests(REPO / "audits", kind=None))


def test_one_threshold_curve_plot_per_audit_titled_by_it() -> None:
    """dvc.yaml's top-level plots draw one threshold curve per audit of params.yaml, its title
    naming the audit."""
    plots = yaml.safe_load((REPO / "dvc.yaml").read_text())["plots"]
    audits = yaml.safe_load((REPO / "params.yaml").read_text())["audits"]
    curves = {name: body for entry in plots if isinstance(entry, dict)
              for name, body in entry.items() if name.endswith(" threshold curve")}
    assert sorted(curves) == sorted(f"{a} threshold curve" for a in audits)
    for audit in audits:
        body = curves[f"{audit} threshold curve"]
        assert body["title"].startswith(f"{audit}: ")
        assert list(body["y"]) == [f"results/curves/{audit}.csv"]


def _documented() -> list[list[str]]:
    """The ``dvc exp show`` commands of docs/pipeline.md and README.md, as argument lists."""
    return [shlex.split(line.removeprefix(".venv/bin/"), comments=True) for doc in DOCS
            for line in doc.read_text().splitlines()
            if line.removeprefix(".venv/bin/").startswith("dvc exp show ")]


def _repo(root: Path) -> dict[str, str]:
    """Build the temporary repository at ``root``; return the environment to run dvc in."""
    for name in ("params.yaml", ".gitignore", ".dvcignore", ".dvc/config"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    copy_pipeline(REPO, root)
    shutil.copytree(REPO / ".dvc" / "plots", root / ".dvc" / "plots")
    metrics = root / "results" / "metrics"
    metrics.mkdir(parents=True)
    for audit in yaml.safe_load((REPO / "params.yaml").read_text())["audits"]:
        manifest = load_manifest(REPO / "audits" / audit / "audit.yaml")
        cells = [(s.value, m.value) for s, m in grid_cells()]
        if manifest.system is not None:
            cells.append(("deployed", manifest.system.name))
        attributes = tuple(a.name for a in manifest.protected_attributes)
        results = _results(cells, attributes)
        missing = audit == "ai_fair_recruitment"
        (metrics / f"{audit}.json").write_text(json.dumps(
            unavailable_headline() if missing else headline(results)))
        (metrics / "full").mkdir(exist_ok=True)
        (metrics / "full" / f"{audit}.json").write_text(json.dumps(
            unavailable_summary(audit) if missing else summary(results, audit=audit)))
        (metrics / f"{audit}-strategies.json").write_text(json.dumps(
            [] if missing else strategy_plot(results, audit=audit)))
    for audit in yaml.safe_load((REPO / "params.yaml").read_text()).get("regression_audits",
                                                                          []):
        (metrics / f"{audit}.json").write_text(json.dumps(headline_record(
            "ethnicity", {"S0": -0.312, "S1": -0.3, "S2": -0.25})))
    for audit in yaml.safe_load((REPO / "params.yaml").read_text()).get("multiclass_audits",
                                                                          []):
        (metrics / f"{audit}.json").write_text(json.dumps(headline_record(
            "minority", {"S0": 0.178, "S1": 0.16, "S2": 0.15})))
        (metrics / "full" / f"{audit}.json").write_text(json.dumps({audit: {}}))
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "views"]):
        subprocess.run(args, cwd=root, env=env, check=True, capture_output=True)
    return env


@pytest.fixture(scope="module")
def views_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A committed git + DVC repository with the pipeline files and every audit's metrics."""
    root = tmp_path_factory.mktemp("views")
    return root, _repo(root)


def _show(repo: tuple[Path, dict[str, str]], *args: str) -> list[str]:
    """Run ``dvc exp show --csv`` with ``args``; return its header (fails on a non-zero exit)."""
    root, env = repo
    done = subprocess.run([sys.executable, "-m", "dvc", "exp", "show", "--csv", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return next(csv.reader(io.StringIO(done.stdout)))


def test_exp_show_has_no_two_columns_of_one_name(views_repo: tuple[Path, dict[str, str]]) -> None:
    """No metric, param and dep column share a name, so no --drop can crash on one, and every
    metric column is named by its audit's key (no ``<file>:`` prefix)."""
    header = _show(views_repo)
    assert [name for name, n in Counter(header).items() if n > 1] == []
    assert "results/metrics/compas.json:gap.S3" in header and "audits" in header
    assert not [name for name in header if name.startswith("results/metrics/full/")]
    assert _show(views_repo, "--drop", "audits").count("audits") == 0


def _dvc(repo: tuple[Path, dict[str, str]], *args: str) -> str:
    """``dvc ARGS`` in the repository, in a terminal of COLUMNS columns."""
    root, env = repo
    done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root,
                          env={**env, "COLUMNS": str(COLUMNS)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_metrics_show_is_one_line_per_audit_within_120_columns(
        views_repo: tuple[Path, dict[str, str]]) -> None:
    """`dvc metrics show` prints a header, the keys every audit's headline has whatever its task
    kind (HEADLINE_KEYS), and one line per audit of every kind, none wider than 120."""
    lines = _dvc(views_repo, "metrics", "show").splitlines()
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    regression = params.get("regression_audits", [])
    multi = params.get("multiclass_audits", [])
    assert len(lines) == 1 + len(params["audits"]) + len(regression) + len(multi)
    assert max(map(len, lines)) <= COLUMNS
    assert lines[0].split() == ["Path", *HEADLINE_KEYS]


@pytest.mark.parametrize("command", _documented(), ids=lambda c: " ".join(c[3:]))
def test_documented_exp_show_pattern_runs(command: list[str],
                                          views_repo: tuple[Path, dict[str, str]]) -> None:
    """Each ``dvc exp show`` recipe of docs/pipeline.md and the README runs, keeps what its
    --keep names and drops what its --drop names."""
    header = _show(views_repo, *command[3:])
    keep = [command[i + 1] for i, a in enumerate(command) if a == "--keep"]
    drop = [command[i + 1] for i, a in enumerate(command) if a == "--drop"]
    assert "Experiment" in header or not keep
    for name in header:
        kept = bool(keep) and re.match("|".join(keep), name) is not None
        assert kept or not drop or not re.match("|".join(drop), name), name
    if keep:
        assert len(header) > len(keep)  # the patterns matched metric columns, not only headers


@pytest.mark.parametrize("command", [c for c in _documented() if "--csv" not in c],
                         ids=lambda c: " ".join(c[3:]))
def test_documented_table_recipe_fits_120_columns(command: list[str],
                                                  views_repo: tuple[Path, dict[str, str]]) -> None:
    """A table-view recipe prints every column it keeps (none dropped as "…") in lines no wider
    than 120 characters."""
    header = _show(views_repo, *command[3:])
    table = _dvc(views_repo, *command[1:])
    assert max(map(len, table.splitlines())) <= COLUMNS, table
    assert "…" not in table
    for name in header:
        assert name in table, name


def test_documented_recipes_exist() -> None:
    """docs/pipeline.md and the README document at least three exp show recipes, one of them
    with --keep."""
    commands = _documented()
    assert len(commands) >= 3 and any("--keep" in c for c in commands)


def test_strategy_plot_renders_in_dvc(views_repo: tuple[Path, dict[str, str]]) -> None:
    """``dvc plots show --json`` fills the strategy template for one audit without an error,
    with the audit's title and the categorical strategy axis."""
    root, env = views_repo
    plot = root / "results" / "metrics" / "compas-strategies.json"
    manifest = load_manifest(REPO / "audits" / "compas" / "audit.yaml")
    cells = [(s.value, m.value) for s, m in grid_cells()]
    plot.write_text(json.dumps(strategy_plot(
        _results(cells, tuple(a.name for a in manifest.protected_attributes)), audit="compas")))
    done = subprocess.run([sys.executable, "-m", "dvc", "plots", "show", "--json",
                           "results/metrics/compas-strategies.json"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    shown = json.loads(done.stdout)
    assert "errors" not in shown, shown
    spec = shown["data"]["results/metrics/compas-strategies.json"][0]["content"]
    assert spec["title"]["text"].startswith("compas: ")
    assert spec["spec"]["encoding"]["y"] == {**spec["spec"]["encoding"]["y"],
                                             "field": "strategy", "type": "nominal"}
    assert spec["spec"]["encoding"]["color"]["field"] == "family"


def test_the_plots_page_is_the_locked_vega_bundle() -> None:
    """.dvc/config names the offline page, and the committed page is what the locked
    vl-convert-python builds: Vega inlined, no script from elsewhere."""
    import vl_convert

    config = (REPO / ".dvc" / "config").read_text()
    assert re.search(r"html_template = plots/offline\.html", config)
    committed = (REPO / PAGE).read_text(encoding="utf-8")
    assert committed == page(vl_convert.javascript_bundle(vl_version=VEGA_LITE))
    assert not re.search(r"<script[^>]+src=", committed)
    assert "{plot_divs}" in committed and "{scripts}" not in committed


@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no chromium")
def test_plots_page_draws_offline_and_skips_an_audit_without_data(
        views_repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """`dvc plots show` of an audit with results and one without, opened in headless Chromium
    with every host unresolvable: one chart drawn, the other named as having no data."""
    root, env = views_repo
    out = tmp_path / "plots"
    subprocess.run([sys.executable, "-m", "dvc", "plots", "show", "-o", str(out),
                    "results/metrics/compas-strategies.json",
                    "results/metrics/ai_fair_recruitment-strategies.json"], cwd=root, env=env,
                   check=True, capture_output=True, timeout=120)
    dom = subprocess.run(
        ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
         "--dump-dom", (out / "index.html").as_uri()],
        capture_output=True, text=True, timeout=180).stdout
    assert dom.count('class="marks"') == 1
    note = re.search(r'<p id="no-data"[^>]*>(.*?)</p>', dom, re.S)
    assert note is not None and "ai_fair_recruitment strategies" in note.group(1)
    assert 'id="results_metrics_ai_fair_recruitment-strategies_json"' not in dom
