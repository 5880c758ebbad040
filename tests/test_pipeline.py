"""Integration tests of the DVC pipeline (dvc.yaml) in a temporary git repository.

Two small audits (german_credit_lending, insurance_denial) at small B/P and a two-iteration
ExponentiatedGradient budget; the stages run the repository's own faircode (copied in), and
the data comes from the mirror.  Without a mirror the module is skipped locally and fails in
CI (``CI=true``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import PIPELINE_FILES, copy_pipeline, mirror_dirs

from faircode.core.cells import STRATEGY_CODES
from faircode.grid.bagging import BAGGED_PART
from faircode.pipeline.pipeline_command import bag_stage, fit_parts
from faircode.pipeline.stages import PARTS

pytestmark = pytest.mark.integration

AUDITS = ("german_credit_lending", "insurance_denial")
PARAMS = {
    "audits": list(AUDITS),
    "mitigation": {"constraint": "demographic_parity", "eps": 0.01, "max_iter": 2,
                   "tolerances": [0, 0.02]},
    "models": {"decision_threshold": 0.5, "encoding": "label"},
    "stats": {"n_resamples": 50, "n_permutations": 50, "confidence": 0.95, "alpha": 0.05},
    "degenerate": {"min_selection_rate": 0.01, "max_selection_rate": 0.99,
                   "balanced_accuracy_margin": 0.02},
    "verdicts": {"margin": 0.05, "ratio_margin": [0.8, 1.25], "min_informative_share": 0.6},
    "curves": {"thresholds": [0.3, 0.5, 0.7]},
    "arbitrariness": {"bags": 3, "all_families_below": 10000, "consistency_level": 0.8,
                      "accuracy_tolerance": 0.01},
    "run": {"jobs": 2, "seeds": 1, "seed_mode": "model"},
    "report": {"metric": "demographic_parity", "model": None},
}
REPO = Path(__file__).resolve().parent.parent
RUNNING = re.compile(r"Running stage '([^']+)'")
UPSTREAM = "upstream/dvc.yaml:"  # how DVC names the data stages (their own file)


def _env(root: Path, mirror: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(root)
    env["FAIRCODE_DATA_MIRROR"] = mirror
    env["PYTHONWARNINGS"] = "ignore"
    return env


class Repo:
    """A temporary git + DVC repository with the pipeline and two audits."""

    def __init__(self, root: Path, mirror: str) -> None:
        self.root, self.env = root, _env(root, mirror)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(args), cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=900)
        if check and done.returncode != 0:
            raise AssertionError(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def dvc(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "dvc", *args, check=check)

    def ran(self, *args: str) -> set[str]:
        """Run ``dvc repro``/``dvc exp run`` and return the stages DVC says it ran."""
        return set(RUNNING.findall(self.dvc(*args).stdout))

    def write_params(self, **changes: dict) -> None:
        params = {k: (dict(v) if isinstance(v, dict) else v) for k, v in PARAMS.items()}
        for section, values in changes.items():
            params[section] = {**params[section], **values}
        (self.root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    def restore(self) -> None:
        self.run("git", "checkout", "--", ".")


def _pipeline_for(root: Path) -> None:
    """Write the pipeline files for ``root``'s params.yaml (``faircode pipeline``: two audits, no
    text audit), then drop the MLflow ``track`` stage (tests/test_tracking.py tests it against a
    real server; here it would only add an MLflow start-up to every repro; check-params checks
    the audit lists, which this leaves as written)."""
    from faircode.pipeline.pipeline_command import write_pipeline

    assert write_pipeline(root)[0] == list(PIPELINE_FILES)
    pipeline = yaml.safe_load((root / "dvc.yaml").read_text())
    del pipeline["stages"]["track"]
    (root / "dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))


AUDIT_PATH = re.compile(r"(?:audits|data/prepared|data/predictions|data/text|data/raw|results|"
                        r"results/curves|results/metrics|results/metrics/full)/([a-z0-9_]+?)"
                        r"(?:-strategies\.json|\.json|\.csv|/[a-z_]+)?")
# (data/text/<audit>/payloads, .../systems and .../scores: a text audit's inputs of evaluate)


def _entry_audit(entry: str | dict) -> str | None:
    """The audit a dvc.yaml dep/out entry belongs to (None: code, shared by every audit)."""
    path = entry if isinstance(entry, str) else next(iter(entry))
    found = AUDIT_PATH.fullmatch(path)
    return found.group(1) if found else None


def test_evaluate_stage_lists_each_audit_of_params_once() -> None:
    """The one evaluate stage of the real dvc.yaml lists, for exactly params.yaml's audits,
    each audit's manifest, prepared data and every prediction part as deps, its three outputs,
    its headline metric and its strategy plot, for exactly its text audits each one's
    manifest, payloads, trained systems and scores and its results folder, for exactly its
    regression audits each one's manifest, raw file and fit, results folder, full view and
    headline metric, and for exactly its multi-class audits each one's manifest and raw file,
    results folder, full view and headline metric; besides them only faircode code."""
    stage = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["evaluate"]
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    audits, text = params["audits"], params["text_audits"]
    regression = params.get("regression_audits", [])
    multi = params.get("multiclass_audits") or []
    expected = {
        "deps": [p for a in audits for p in (f"audits/{a}", f"data/prepared/{a}", *(
            f"data/predictions/{a}/{part}" for part in (*PARTS, BAGGED_PART)))] + [
            p for a in text for p in (f"audits/{a}", f"data/text/{a}/payloads",
                                      f"data/text/{a}/systems", f"data/text/{a}/scores")] + [
            p for a in regression for p in (f"audits/{a}", f"data/raw/{a}",
                                            f"data/predictions/{a}/regression")] + [
            p for a in multi for p in (f"audits/{a}", f"data/raw/{a}")],
        "outs": [p for a in audits for p in (f"results/{a}", f"results/curves/{a}.csv",
                                             f"results/metrics/full/{a}.json")] + [
            f"results/{a}" for a in text] + [
            p for a in (*regression, *multi)
            for p in (f"results/{a}", f"results/metrics/full/{a}.json")],
        "metrics": [f"results/metrics/{a}.json" for a in (*audits, *regression, *multi)],
        "plots": [f"results/metrics/{a}-strategies.json" for a in audits]}
    for field, paths in expected.items():
        listed = [e if isinstance(e, str) else next(iter(e)) for e in stage[field]]
        assert [p for p in listed if not p.startswith("faircode/")] == paths, field
        assert all(_entry_audit(p) in (*audits, *text, *regression, *multi) for p in paths), field
    assert stage["cmd"] == ("python -m faircode.pipeline.stages.evaluate data/prepared "
                            "data/predictions data/text results")


def test_the_committed_pipeline_files_are_what_faircode_pipeline_writes() -> None:
    """dvc.yaml and upstream/dvc.yaml are, character for character, what `faircode pipeline`
    writes for the committed params.yaml (a change to the lists or to the generator is a
    rewrite of both files, committed with it)."""
    from faircode.pipeline.pipeline_command import write_pipeline

    assert write_pipeline(REPO, check=True)[0] == []


def test_report_and_track_depend_on_every_audit_of_params() -> None:
    """The real dvc.yaml's report and track stages list results/<audit> for exactly the audits
    of params.yaml (a new audit that is not listed would never reach the report)."""
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    audits = [*params["audits"], *params.get("text_audits", []),
              *params.get("regression_audits", []), *params.get("multiclass_audits", [])]
    for stage in ("report", "track"):
        deps = [d for d in pipeline["stages"][stage]["deps"] if str(d).startswith("results/")]
        assert sorted(d for d in deps if d != "results/summary.csv") == sorted(
            f"results/{a}" for a in audits), stage


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """A committed repository on which `dvc repro` has run once."""
    mirrors = mirror_dirs()
    if not mirrors:
        if os.environ.get("CI") == "true":
            pytest.fail("no data mirror in CI (set FAIRCODE_DATA_MIRROR)")
        pytest.skip("no data mirror (set FAIRCODE_DATA_MIRROR)")
    root = tmp_path_factory.mktemp("pipeline")
    shutil.copytree(REPO / "faircode", root / "faircode",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in AUDITS:
        shutil.copytree(REPO / "audits" / name, root / "audits" / name)
    for name in (".dvcignore", ".gitignore", "pyproject.toml", ".dvc/config"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    copy_pipeline(REPO, root)
    shutil.copytree(REPO / ".dvc" / "plots", root / ".dvc" / "plots")
    found = Repo(root, os.pathsep.join(str(m) for m in mirrors))
    found.write_params()
    _pipeline_for(root)
    found.run("git", "init", "-q")
    found.run("git", "config", "user.email", "pipeline-test@example.org")
    found.run("git", "config", "user.name", "pipeline test")
    found.dvc("config", "--local", "remote.local.url", str(root.parent / "remote"))
    found.run("git", "add", "-A")
    found.run("git", "commit", "-qm", "pipeline")
    found.dvc("repro")
    found.run("git", "add", "-A")
    found.run("git", "commit", "-qm", "results")
    return found


def test_repro_writes_results_metrics_and_plots(repo: Repo) -> None:
    """`dvc repro` writes the four tables, curves.csv, the ranking view, the bagged ensembles'
    and the set of models' tables, run.json, a metrics summary and plot data per audit."""
    for audit in AUDITS:
        folder = repo.root / "results" / audit
        assert sorted(p.name for p in folder.iterdir()) == [
            "arbitrariness.csv", "calibration.csv", "calibration_gap.csv", "counterfactual.csv",
            "curves.csv", "effects.csv", "fairness.csv", "frontier.csv", "groups.csv",
            "intersectional.csv", "matched.csv", "multiplicity.csv", "multiplicity_models.csv",
            "performance.csv", "ranking.csv", "ranking_topk.csv", "run.json",
            "self_consistency.csv"]
        run = json.loads((folder / "run.json").read_text())
        assert run["config"]["n_resamples"] == 50 and run["config"]["max_iter"] == 2
        assert (repo.root / "results" / "curves" / f"{audit}.csv").is_file()
        full = json.loads((repo.root / "results" / "metrics" / "full" /
                           f"{audit}.json").read_text())
        assert list(full[audit]) == list(STRATEGY_CODES.values())
        assert 0 <= full[audit]["S0"]["LR"]["accuracy"] <= 1
        metrics = json.loads((repo.root / "results" / "metrics" / f"{audit}.json").read_text())
        assert list(metrics) == ["attr", "gap"] and list(metrics["gap"]) == list(
            STRATEGY_CODES.values())
    shown = json.loads(repo.dvc("metrics", "show", "--json").stdout)
    assert "results/metrics/german_credit_lending.json" in json.dumps(shown)


def test_one_identity_in_run_json_report_and_mlflow_parent(repo: Repo) -> None:
    """One `dvc repro` of a committed tree: every run.json, report.html and the MLflow parent
    (the track stage) show the same state -- the commit it ran at, the tree's code and params
    digests, clean inputs -- although dvc.lock and results/ changed while it ran."""
    from faircode.core.config import config_record, load_params
    from faircode.provenance.state import code_digest, params_digest

    expected = {"git_commit": repo.run("git", "rev-parse", "HEAD~1").stdout.strip(),
                "code_sha256": code_digest(repo.root), "inputs_dirty": False,
                "params_sha256": params_digest(
                    config_record(load_params(repo.root / "params.yaml").config))}
    for audit in AUDITS:
        run = json.loads((repo.root / "results" / audit / "run.json").read_text())
        assert run["state"] == expected, audit
    html = (repo.root / "results" / "report.html").read_text()
    shown = re.findall(r'<dl class="state" data-commit="(\w+)" data-code="(\w+)" '
                       r'data-params="(\w+)" data-dirty="(\w+)">', html)
    assert shown == [(expected["git_commit"], expected["code_sha256"],
                      expected["params_sha256"], "false")]
    store = f"sqlite:///{repo.root.parent / 'identity-mlflow.db'}"
    env = {**repo.env, "MLFLOW_TRACKING_URI": store}
    done = subprocess.run([sys.executable, "-m", "faircode.pipeline.stages.track", "--strict",
                           "results"], cwd=repo.root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name("faircode").experiment_id
    (parent,) = client.search_runs([experiment], "tags.`faircode.sync_state` = 'complete'")
    tags = parent.data.tags
    assert {k: tags[f"state.{k}"] for k in expected} == {**expected, "inputs_dirty": "false"}
    assert expected["code_sha256"][:7] in parent.info.run_name


def test_second_repro_reruns_nothing(repo: Repo) -> None:
    """A repro of an unchanged state runs only the always-run params check."""
    assert repo.ran("repro") == {"check-params"}


def test_faircode_run_bagged_writes_what_the_pipeline_wrote(repo: Repo, tmp_path: Path) -> None:
    """`faircode run --params params.yaml --bagged` (CI's drift check) writes the pipeline's
    folders: the grid's tables and the bag stage's arbitrariness and multiplicity tables (which
    a run without --bagged lacks: a drift), every number the same."""
    from faircode.core.layout import ARBITRARINESS_TABLES, table_file
    from faircode.record.compare import compare_results

    out = tmp_path / "results"
    repo.run(sys.executable, "-m", "faircode.pipeline.cli", "run", "--params", "params.yaml",
             "--bagged", "--quiet", "--out", str(out), AUDITS[0])
    committed = repo.root / "results" / AUDITS[0]
    for folder in (committed, out / AUDITS[0]):
        assert all((folder / table_file(t)).is_file() for t in ARBITRARINESS_TABLES), folder
    drift, identical, compared = compare_results(committed, out / AUDITS[0])
    assert drift == [] and identical == compared > 10


def test_audits_evaluated_side_by_side_write_what_one_at_a_time_writes(
        repo: Repo, tmp_path: Path) -> None:
    """The repro evaluated the two audits at the same time (run.jobs 2: one worker process
    each); the stage run with run.jobs 1 (both in one process, one after the other) into a
    fresh folder writes the same files byte for byte (run.json but its timings, worker count
    and the state's note of the edited params.yaml)."""
    from faircode.record.compare import compare_results

    out = tmp_path / "results"
    repo.write_params(run={"jobs": 1})
    try:
        repo.run(sys.executable, "-m", "faircode.pipeline.stages.evaluate", "data/prepared",
                 "data/predictions", "data/text", str(out))
    finally:
        repo.restore()
    for audit in AUDITS:
        drift, identical, compared = compare_results(repo.root / "results" / audit, out / audit)
        # the only difference: run.json's state names the edited params.yaml (run.jobs 1)
        assert {(d.file, d.column) for d in drift} == {
            ("results/run.json", "state.dirty_inputs"), ("results/run.json", "state.inputs_dirty")}
        assert identical == compared - 1 > 5, audit
        for view in (f"metrics/{audit}.json", f"metrics/full/{audit}.json",
                     f"metrics/{audit}-strategies.json", f"curves/{audit}.csv"):
            assert (out / view).read_bytes() == (repo.root / "results" / view).read_bytes()


def test_a_refit_of_unchanged_inputs_leaves_dvc_status_clean(repo: Repo) -> None:
    """Re-running a fit stage on unchanged inputs writes the same store bytes (its seconds go to
    the timings file beside it, which DVC does not track): both locks keep their bytes and
    `dvc status` lists nothing, the evaluate stage downstream included."""
    store = repo.root / "data" / "predictions" / "german_credit_lending" / "unmitigated"
    timings = store.with_name("unmitigated.seconds.json")
    locks = [repo.root / "dvc.lock", repo.root / "upstream" / "dvc.lock"]
    before, lock = timings.read_text(), [p.read_bytes() for p in locks]
    fit = f"{UPSTREAM}fit@german_credit_lending"
    assert repo.ran("repro", "--force", "--single-item", fit) == {fit}
    assert [p.read_bytes() for p in locks] == lock
    assert json.loads(repo.dvc("status", "--json").stdout) == {
        "check-params": ["always changed"]}
    assert timings.read_text() != before  # the seconds were measured again, outside DVC
    assert "seconds" not in json.loads((store / "cells.json").read_text())["cells"][0]


def test_a_re_evaluation_of_unchanged_inputs_leaves_dvc_status_clean(repo: Repo) -> None:
    """Re-computing the evaluate stage on unchanged inputs at one commit (no reuse: every
    number computed again) writes the same results bytes: the timings go beside each folder
    (``<audit>.seconds.json``), never into it, so the lock keeps its bytes and `dvc status`
    lists nothing.  (The first forced run and the report after it bring run.json's commit to
    the fixture's HEAD.)"""
    timings = repo.root / "results" / "german_credit_lending.seconds.json"
    lock = repo.root / "dvc.lock"
    repo.env["FAIRCODE_REUSE"] = "0"
    try:
        assert repo.ran("repro", "--force", "--single-item", "evaluate") == {"evaluate"}
        repo.ran("repro")
        before, first = json.loads(timings.read_text()), lock.read_bytes()
        assert repo.ran("repro", "--force", "--single-item", "evaluate") == {"evaluate"}
    finally:
        del repo.env["FAIRCODE_REUSE"]
    assert lock.read_bytes() == first
    assert json.loads(repo.dvc("status", "--json").stdout) == {
        "check-params": ["always changed"]}
    after = json.loads(timings.read_text())
    assert after["seconds"]["evaluate"] != before["seconds"]["evaluate"]  # measured again
    assert {c["strategy"] for c in after["cells"]} >= {"baseline", "post_processing"}
    run = json.loads((repo.root / "results" / "german_credit_lending" / "run.json").read_text())
    assert "seconds" not in run and all("seconds" not in c for c in run["cells"])


def test_threshold_change_reruns_evaluate_only_and_changes_results(repo: Repo) -> None:
    """A new decision threshold re-runs evaluate (not fit/prepare/fetch) and moves the numbers."""
    before = (repo.root / "results" / "german_credit_lending" / "fairness.csv").read_text()
    repo.write_params(models={"decision_threshold": 0.3})
    try:
        status = json.loads(repo.dvc("status", "--json").stdout)
        assert {s for s in status if s != "check-params"} == {"evaluate"}
        assert repo.ran("repro") == {"check-params", "evaluate", "report"}
        after = (repo.root / "results" / "german_credit_lending" / "fairness.csv").read_text()
        assert after != before
    finally:
        repo.restore()


def test_mitigation_change_reruns_fit_and_evaluate_not_prepare(repo: Repo) -> None:
    """An eps change marks only S3's fit stage changed (evaluate follows on its new
    predictions), a tolerances change only S5's, a constraint change every stage that reads it
    (S3-S5); never S0-S2's fit, fetch or prepare."""
    reading = {key: [f.stage for f in fit_parts()
                     if f"mitigation.{key}" in f.mitigation or "mitigation" in f.mitigation]
               for key in ("eps", "tolerances", "constraint")}
    assert reading == {"eps": ["fit-in-processing"],
                       "tolerances": ["fit-relaxed-post-processing"],
                       "constraint": ["fit-in-processing", "fit-post-processing",
                                      "fit-relaxed-post-processing"]}
    try:
        for key, value in (("eps", 0.05), ("tolerances", [0, 0.03]),
                           ("constraint", "equalized_odds")):
            repo.write_params(mitigation={key: value})
            status = json.loads(repo.dvc("status", "--json").stdout)
            assert {s for s in status if s != "check-params"} == {
                f"{UPSTREAM}{stage}@{a}" for stage in reading[key] for a in AUDITS}, key
            repo.restore()
        dag = repo.dvc("dag", "--dot", "evaluate").stdout
        assert "fit-relaxed-post-processing@german_credit_lending" in dag
    finally:
        repo.restore()


def test_encoding_change_marks_every_fit_stage_and_evaluate_not_prepare(repo: Repo) -> None:
    """models.encoding is a param of the fit stages and the bag stage (how the models see
    nominal columns) and of evaluate: onehot marks exactly those changed, never fetch or
    prepare."""
    repo.write_params(models={"encoding": "onehot"})
    try:
        status = json.loads(repo.dvc("status", "--json").stdout)
        assert {s for s in status if s != "check-params"} == {"evaluate"} | {
            f"{UPSTREAM}{stage}@{a}" for a in AUDITS
            for stage in (*(f.stage for f in fit_parts()), bag_stage().stage)}
    finally:
        repo.restore()


# slow (minutes); test_one_cell_has_one_number_in_every_view keeps a K = 2 repro
@pytest.mark.slow
def test_seeds_change_reruns_fit_and_evaluate_and_writes_stability(repo: Repo) -> None:
    """run.seeds is a tracked param of fit and evaluate: K = 2 marks both changed, and the
    repro writes stability.csv; fairness.csv keeps the K = 1 numbers as its rep0_* columns."""
    import pandas as pd

    fairness = repo.root / "results" / "german_credit_lending" / "fairness.csv"
    before = pd.read_csv(fairness)
    repo.write_params(run={"seeds": 2})
    try:
        status = json.loads(repo.dvc("status", "--json").stdout)
        assert {s for s in status if s != "check-params"} == {"evaluate"} | {
            f"{UPSTREAM}{f.stage}@{a}" for f in fit_parts() for a in AUDITS}
        repo.dvc("repro")
        for audit in AUDITS:
            assert (repo.root / "results" / audit / "stability.csv").is_file()
            for part in PARTS:
                assert (repo.root / "data" / "predictions" / audit / part
                        / "replicates.parquet").is_file()
        after = pd.read_csv(fairness)
        for rep0, column in (("rep0_value", "value"), ("rep0_ci_low", "ci_low"),
                             ("rep0_p_value", "p_value")):
            pd.testing.assert_series_equal(after[rep0], before[column], check_names=False)
    finally:
        repo.restore()
        repo.dvc("repro")  # back to the committed state for the tests after this one


def _one_number_in_every_view(repo: Repo, store: Path, *, replicates: bool) -> None:
    """german_credit_lending's S0 random-forest age gap has one number, interval and verdict in
    fairness.csv, summary.csv, results/metrics/full/<audit>.json, the strategy plot, curves.csv
    and the threshold plot's data at the declared threshold, the paper table, report.html and
    the MLflow child the track stage logs (with ``replicates``, the K-replicate estimate: also
    stability.csv's, not replicate 0's)."""
    import pandas as pd
    from mlflow.tracking import MlflowClient

    from faircode.report.tables import num

    audit, where = "german_credit_lending", {"strategy": "baseline",
                                             "model": "random_forest",
                                             "protected_attribute": "age",
                                             "metric": "demographic_parity_diff"}
    results = repo.root / "results"

    def row(path: Path) -> pd.Series:
        frame = pd.read_csv(path)
        return frame[(frame[list(where)] == pd.Series(where)).all(axis=1)].iloc[0]

    cell = row(results / audit / "fairness.csv")
    value, low, high, verdict = (cell[c] for c in ("value", "ci_low", "ci_high", "verdict"))
    views = [results / "summary.csv"]
    if replicates:  # the forest's seed moves it: the K-replicate estimate is not replicate 0's
        assert cell["ci_method"] == "random_effects_t" and cell["rep0_value"] != value
        views.append(results / audit / "stability.csv")
    for path in views:
        other = row(path)
        assert (other["value"], other["ci_low"], other["ci_high"], other["verdict"]) == (
            value, low, high, verdict), path.name
    full = results / "metrics" / "full" / f"{audit}.json"
    metrics = json.loads(full.read_text())[audit]["S0"]
    assert {k: metrics["RF"][k]["age"] for k in ("dp_diff", "dp_lo", "dp_hi",
                                                 "dp_verdict")} == {
        "dp_diff": value, "dp_lo": low, "dp_hi": high, "dp_verdict": verdict}
    plot = json.loads((results / "metrics" / f"{audit}-strategies.json").read_text())
    point = next(p for p in plot if p["strategy"].startswith("S0 ") and p["family"] == "RF")
    assert (point["dp_diff"], point["ci_low"], point["ci_high"], point["verdict"]) == (
        value, low, high, verdict)
    curves = pd.read_csv(results / audit / "curves.csv")
    declared = curves[(curves[list(where)] == pd.Series(where)).all(axis=1)
                      & (curves["point"] == "declared")].iloc[0]
    assert (declared["value"], declared["ci_low"], declared["ci_high"]) == (
        value, low, high)  # the curve's point at the declared threshold is the cell
    if replicates:  # at K = 1 neither table has replicate 0's columns: the value is its own
        assert declared["rep0_value"] == cell["rep0_value"]
    drawn = pd.read_csv(results / "curves" / f"{audit}.csv")
    assert drawn.loc[drawn["threshold"] == declared["threshold"],
                     "S0 random_forest"].iloc[0] == value
    mark = {"gap": "\u2020" if float(value) > 0 else "*", "parity": "="}.get(verdict, "")
    shown = f"{num(value)} [{num(low)}, {num(high)}]{mark}"
    table = (results / "paper_table.md").read_text().split("**random_forest**", 1)[1]
    assert f"| {audit} | age | {shown} |" in table
    page = (results / "report.html").read_text().split('id="paper_table"', 1)[1].split(
        ">random_forest<", 1)[1]
    assert (f"{num(value)}" + (f'<span class="sig">{mark}</span>' if mark else "")
            + f'<br><span class="ci">[{num(low)}, {num(high)}]</span>') in page
    uri = f"sqlite:///{store}"
    done = subprocess.run([sys.executable, "-m", "faircode.pipeline.stages.track",
                           "--strict", "results"], cwd=repo.root,
                          env={**repo.env, "MLFLOW_TRACKING_URI": uri},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("faircode").experiment_id
    (child,) = client.search_runs([experiment], f"attributes.run_name = '{audit} S0 RF age'")
    logged = child.data
    assert (logged.metrics["dp"], logged.metrics["dp.lo"], logged.metrics["dp.hi"]) == (
        value, low, high)
    assert logged.tags["fairness.demographic_parity_diff.verdict"] == verdict
    if replicates:
        assert logged.metrics["dp.rep0"] == cell["rep0_value"]


def test_one_cell_has_one_number_in_every_view_at_k_1(repo: Repo, tmp_path: Path) -> None:
    """At the fixture's K = 1 a cell's number, interval and verdict are the same in every view
    (the default suite's twin of the K = 2 test below: no refit)."""
    _one_number_in_every_view(repo, tmp_path / "one-number.db", replicates=False)


# slow (a refit at K = 2, two minutes); the K = 1 test above keeps the views in the default suite
@pytest.mark.slow
def test_one_cell_has_one_number_in_every_view(repo: Repo, tmp_path: Path) -> None:
    """At K = 2 the cell's one number is stability.csv's K-replicate estimate in every view."""
    repo.write_params(run={"seeds": 2})
    try:
        repo.dvc("repro")
        _one_number_in_every_view(repo, tmp_path / "one-number.db", replicates=True)
    finally:
        repo.restore()
        repo.dvc("repro")  # back to the committed state for the tests after this one


def test_a_list_the_pipeline_files_were_not_written_for_stops_at_check_params(
        repo: Repo) -> None:
    """params.yaml's audits trimmed without `faircode pipeline`: the repro stops at check-params
    with one line naming that command, and nothing after it runs.  After the command, the repro
    re-runs the report alone (the audit left keeps its fits and tables; the report, now of it
    alone, follows data/audits.txt: DVC sees no change in the deps that left it)."""
    params = yaml.safe_load((repo.root / "params.yaml").read_text())
    (repo.root / "params.yaml").write_text(yaml.safe_dump({**params, "audits": [AUDITS[0]]},
                                                          sort_keys=False))
    try:
        done = repo.dvc("repro", check=False)
        assert done.returncode != 0
        lines = [line for line in done.stderr.splitlines() if line.startswith("dvc.yaml:")]
        assert lines == [
            "dvc.yaml: expected the stages of params.yaml's audits, got stages written for "
            f"another list (params.yaml only: none; dvc.yaml only: {AUDITS[1]}); run faircode "
            "pipeline to rewrite dvc.yaml and upstream/dvc.yaml from params.yaml, then commit "
            "them"], done.stderr
        assert RUNNING.findall(done.stdout) == ["check-params"]
        _pipeline_for(repo.root)
        assert repo.ran("repro") == {"check-params", "report"}
        table = (repo.root / "results" / "paper_table.md").read_text()
        assert f"| {AUDITS[0]} |" in table and AUDITS[1] not in table
    finally:
        repo.restore()
        repo.dvc("repro")  # back to the committed state for the tests after this one


def test_jobs_change_reruns_nothing(repo: Repo) -> None:
    """run.jobs changes no number, so it is not a tracked param: nothing but the check re-runs."""
    repo.write_params(run={"jobs": 1})
    try:
        assert json.loads(repo.dvc("status", "--json").stdout) == {
            "check-params": ["always changed"]}
    finally:
        repo.restore()


def test_backend_change_reruns_nothing(repo: Repo) -> None:
    """run.backend and run.scheduler change no number either: nothing but the check re-runs."""
    repo.write_params(run={"jobs": 2, "backend": "dask", "scheduler": "tcp://127.0.0.1:8786"})
    try:
        assert json.loads(repo.dvc("status", "--json").stdout) == {
            "check-params": ["always changed"]}
    finally:
        repo.restore()


def test_exp_run_sets_a_param_and_exp_show_lists_it(repo: Repo) -> None:
    """`dvc exp run -S` re-runs evaluate only and `dvc exp show --json` lists its param."""
    try:
        ran = repo.ran("exp", "run", "-n", "thr07", "-S", "models.decision_threshold=0.7")
        assert ran == {"check-params", "evaluate", "report"}
        shown = repo.dvc("exp", "show", "--json").stdout
        assert "thr07" in shown
        assert re.search(r'"decision_threshold":\s*0\.7', shown)
    finally:
        repo.restore()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"stats": {"n_resampels": 10}},
         "params.yaml: stats.n_resampels: expected a known key of stats"),
        ({"stats": {"n_resamples": "many"}},
         "params.yaml: stats.n_resamples: expected an integer, got 'many' (str)"),
    ],
)
def test_bad_params_stop_the_repro_with_one_line_naming_the_key(
    repo: Repo, changes: dict, message: str
) -> None:
    """An unknown key or a wrong type stops `dvc repro` with the one-line error naming the key."""
    repo.write_params(**changes)
    try:
        done = repo.dvc("repro", check=False)
        assert done.returncode != 0
        lines = [line for line in done.stderr.splitlines() if line.startswith("params.yaml:")]
        assert len(lines) == 1 and lines[0].startswith(message)
        assert not RUNNING.findall(done.stdout)[1:]  # nothing ran after the check
    finally:
        repo.restore()


def _edit_first_value(path: Path) -> tuple[str, str]:
    """Add 0.001 to the first row's ``value`` of a results CSV and record the file's new sha256
    in its folder's run.json, as a writer of that number would (readers refuse a file unlike its
    record); return (row label, new value)."""
    import csv

    from faircode.core.digests import folder_digests

    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    column = rows[0].index("value")
    rows[1][column] = repr(float(rows[1][column]) + 0.001)
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    run = json.loads((path.parent / "run.json").read_text())
    (path.parent / "run.json").write_text(
        json.dumps({**run, "files": folder_digests(path.parent)}, indent=2) + "\n")
    return rows[1][rows[0].index("metric")], rows[1][column]


# slow (a verify re-runs the frozen commit's pipeline in a worktree, two to three minutes);
# tests/test_freeze.py keeps freeze's lock check and verify's named drift in the default suite
@pytest.mark.slow
def test_freeze_refuses_stale_results_and_verify_names_exactly_the_edited_number(
    repo: Repo,
) -> None:
    """With the real DVC: freeze refuses results that no longer match dvc.lock; a state whose
    committed number the code does not produce is frozen, and `faircode verify` re-runs the
    frozen commit in a worktree and names that cell -- and otherwise only the report outputs
    derived from it (exit 1)."""
    repo.dvc("repro")  # earlier tests' failed repros removed the params check's output
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "up to date", check=False)
    fairness = repo.root / "results" / "german_credit_lending" / "fairness.csv"
    metric, edited = _edit_first_value(fairness)
    repo.run("git", "commit", "-qam", "edit one committed number")
    cli = (sys.executable, "-m", "faircode.pipeline.cli")
    refused = repo.run(*cli, "freeze", "stale", check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "freeze stale: results do not match dvc.lock (dvc status lists "
        "evaluate, report); run dvc repro and commit"]
    repo.dvc("commit", "-f", "evaluate")
    assert repo.ran("repro") == {"check-params", "report"}  # the report shows the edit
    repo.run("git", "add", "-A")
    repo.run("git", "commit", "-qm", "record the edited number in dvc.lock")
    repo.run(*cli, "freeze", "t1")
    assert repo.run("git", "tag", "--list", "t1").stdout.strip() == "t1"
    done = repo.run(*cli, "verify", "t1", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    drift = [line for line in done.stdout.splitlines() if line.startswith("drift: ")]
    audit_folder = "drift: results/german_credit_lending/"
    in_results = [line for line in drift if line.startswith(audit_folder)]
    assert len(in_results) == 1, done.stdout
    assert in_results[0].startswith("drift: results/german_credit_lending/fairness.csv: row 2 (")
    assert f" {metric}): value: frozen {edited}, now " in in_results[0]
    derived = ("drift: results/summary.csv", "drift: results/summary_families.csv",
               "drift: results/paper_table",
               "drift: results/figures/", "drift: results/residual_floor")
    assert all(line.startswith(derived) for line in drift if line not in in_results), drift
    assert not [line for line in drift if "insurance_denial" in line]
    assert not [line for line in done.stdout.splitlines() if line.startswith("environment")]
