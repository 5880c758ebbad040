"""Tests for faircode.record.tracking against a real ``mlflow server`` on 127.0.0.1 (one per
session).

The results are synthetic but shaped exactly like the grid's (benchmark's *_COLUMNS, run.json),
plus what other changes add (a ``tpr_gap`` row, a ``future_statistic`` column, a
``degenerate_decisions`` note, an ``unavailable.json``), so the sync is shown to log them without
knowing them.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow_server import free_port, mlflow_server

from faircode.core.digests import folder_digests
from faircode.evaluate.tables import COUNTERFACTUAL_COLUMNS, PERFORMANCE_COLUMNS
from faircode.pipeline import cli
from faircode.record._store import switch_to_wal
from faircode.record.names import DESIGN_COLUMNS, metric_key, readable
from faircode.record.tracking import (
    SyncContext,
    TrackingError,
    results_digest,
    runs_url,
    sync_results,
)
from faircode.stats.metrics import FAIRNESS_COLUMNS, INTERSECTIONAL_COLUMNS

pytestmark = pytest.mark.integration

AUDITS = ("alpha_lending", "beta_insurance")
STRATEGIES = ("baseline", "reweighing")
MODELS = ("logistic_regression", "random_forest")
ATTRIBUTES = ("age", "sex")
AXES = ("gender",)
KINDS = ("explicit", "proxy")
METRICS = ("demographic_parity_diff", "equal_opportunity_diff", "tpr_gap")
# per audit: a child per cell x attribute, per cell x pair, per cell x axis x channel
CHILDREN_PER_AUDIT = len(STRATEGIES) * len(MODELS) * (len(ATTRIBUTES) + 1 + len(AXES) * len(KINDS))


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    """An ``mlflow server`` for the session (:func:`mlflow_server.mlflow_server`)."""
    with mlflow_server("faircode-mlflow-") as url:
        yield url


@pytest.fixture(scope="session", autouse=True)
def quiet_mlflow() -> Iterator[None]:
    """Set what ``faircode track`` sets: no run URL printed (and fetched) per terminated run, no
    progress bar for an artifact read."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        patch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        patch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        yield


@pytest.fixture(scope="session")
def client(server: str):
    """An MlflowClient of the session's server."""
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=server)


HEADER = 13  # characters of a metric key the runs table's column header shows
STATE = {"git_commit": "c0ffee" + "0" * 34, "code_sha256": "a" * 64, "inputs_dirty": False,
         "params_sha256": "b" * 64}


def write_results(out: Path, *, seed: int, threshold: float = 0.5) -> Path:
    """Write two synthetic audits' results, one unavailable audit and the report's outputs
    (a summary with a per-model benchmark-wide q, a page, a table, a figure) under ``out``."""
    rng = np.random.default_rng(seed)
    bench = []
    for audit in AUDITS:
        folder = out / audit
        folder.mkdir(parents=True)
        fair, perf, inter, cf = [], [], [], []
        for s in STRATEGIES:
            for m in MODELS:
                cell = {"audit": audit, "strategy": s, "model": m}
                for a in ATTRIBUTES:
                    for metric in METRICS:
                        low, high = sorted(rng.normal(0, 0.1, 2))
                        note = "degenerate_decisions" if (s, m, a) == (
                            "reweighing", "logistic_regression", "sex") else ""
                        bench.append({**cell, "protected_attribute": a, "metric": metric,
                                      "q_benchmark": rng.uniform()})
                        fair.append({**cell, "protected_attribute": a, "metric": metric,
                                     "value": (low + high) / 2, "ci_low": low, "ci_high": high,
                                     "p_value": rng.uniform(), "q_value": rng.uniform(),
                                     "significant": bool(rng.uniform() < 0.3),
                                     "n_disadvantaged": int(rng.integers(20, 200)),
                                     "n_advantaged": int(rng.integers(20, 200)),
                                     "small_sample_warning": False, "note": note,
                                     "ci_method": "newcombe_hybrid_score",
                                     "mde": rng.uniform(0, 0.2), "powered": True,
                                     "mde_note": "", "design_effect": 1.0,
                                     "future_statistic": rng.uniform(0, 0.2)})
                fair[-1]["p_value"] = float("nan")  # an undefined p-value stays an empty cell
                for metric in ("accuracy", "auc", "f1"):
                    perf.append({**cell, "protected_attribute": "", "metric": metric,
                                 "value": rng.uniform(0.6, 0.8), "ci_low": 0.55,
                                 "ci_high": 0.85, "n": 200, "note": ""})
                for a in ATTRIBUTES:  # per-group rows belong to their attribute's child only
                    perf.append({**cell, "protected_attribute": a,
                                 "metric": "selection_rate_disadvantaged",
                                 "value": rng.uniform(0.1, 0.9), "ci_low": "", "ci_high": "",
                                 "n": 100, "note": ""})
                inter.append({**cell, "attribute_a": "age", "attribute_b": "sex",
                              **{c: rng.uniform() for c in INTERSECTIONAL_COLUMNS[5:-1]},
                              "interaction_significant": True, "mde_note": "", "note": ""})
                for axis in AXES:
                    for kind in KINDS:
                        cf.append({**cell, "axis": axis, "kind": kind, "columns": "sex",
                                   **{c: rng.uniform() for c in COUNTERFACTUAL_COLUMNS[6:-1]},
                                   "note": ""})
        for name, rows, columns in (
            ("fairness", fair, (*FAIRNESS_COLUMNS, "future_statistic")),
            ("performance", perf, PERFORMANCE_COLUMNS),
            ("intersectional", inter, INTERSECTIONAL_COLUMNS),
            ("counterfactual", cf, COUNTERFACTUAL_COLUMNS),
        ):
            pd.DataFrame(rows, columns=list(columns)).to_csv(folder / f"{name}.csv", index=False)
        sha = hashlib.sha256(audit.encode()).hexdigest()
        run = {"audit": audit, "manifest_sha256": hashlib.sha256(b"m" + audit.encode()).hexdigest(),
               "dataset": {"path": f"data/raw/{audit}/raw.csv", "sha256": sha},
               "seeds": {"master": 42}, "state": STATE,
               "config": {"constraint": "demographic_parity", "eps": 0.01, "max_iter": 50,
                          "decision_threshold": threshold, "n_resamples": 100,
                          "n_permutations": 100, "confidence": 0.95, "alpha": 0.05, "jobs": 2},
               "cells": [{"strategy": "baseline", "seconds": {"fit": rng.uniform()}}],
               "files": folder_digests(folder)}
        (folder / "run.json").write_text(json.dumps(run, indent=2))
    gone = out / "gamma_hiring"
    gone.mkdir()
    (gone / "unavailable.json").write_text(json.dumps(
        {"audit": "gamma_hiring", "available": False, "message": "no verified copy of raw.csv"}))
    pd.DataFrame(bench).to_csv(out / "summary.csv", index=False)
    (out / "report.html").write_text("<!DOCTYPE html><p>report</p>\n")
    (out / "paper_table.md").write_text("| audit |\n|:--|\n")
    (out / "figures").mkdir()
    (out / "figures" / "heatmap.png").write_bytes(b"\x89PNG fake")
    return out


def _files(results: Path) -> dict[str, bytes]:
    return {str(p.relative_to(results)): p.read_bytes() for p in results.rglob("*") if p.is_file()}


def _children(client, parent_id: str) -> list:
    return client.search_runs([client.get_run(parent_id).info.experiment_id],
                              f"tags.`mlflow.parentRunId` = '{parent_id}'", max_results=1000)


def _index(client, parent_id: str, where: Path) -> dict[str, dict[str, str]]:
    """A parent's children.json artifact, read back through the store."""
    folder = where / f"index-{parent_id}"
    folder.mkdir()
    return json.loads(Path(client.download_artifacts(parent_id, "children.json",
                                                     str(folder))).read_text())


def _parents(client, experiment_id: str, digest: str) -> list:
    return client.search_runs([experiment_id], f"tags.`faircode.digest` = '{digest}' and "
                              "tags.`faircode.sync_state` != ''", max_results=1000)


@pytest.fixture(scope="module")
def synced(server: str, tmp_path_factory: pytest.TempPathFactory):
    """The first sync of the two audits over HTTP: (results folder, report)."""
    results = write_results(tmp_path_factory.mktemp("state") / "results", seed=1)
    report = sync_results(results, tracking_uri=server, experiment="faircode-test",
                          context=SyncContext(dvc_exp_name="exp-one"))
    return results, report


def _csv_expectation(results: Path, run) -> dict[str, float]:
    """The metrics a child must hold, read from the CSVs with the csv module (an empty cell is
    not logged; the benchmark-wide q of summary.csv is the parent's, never a child's)."""
    tags = run.data.tags
    table = tags["table"]
    keys = {"fairness": ("protected_attribute",), "intersectional": ("attribute_a", "attribute_b"),
            "counterfactual": ("axis", "kind")}[table]
    wanted = {"audit": tags["audit"], "strategy": tags["strategy"], "model": tags["model"],
              **{k: tags[k] for k in keys}}
    sources = [(table, wanted)]
    if table == "fairness":
        sources.append(("performance", {k: wanted[k] for k in ("audit", "strategy", "model")}))
    expected: dict[str, float] = {}
    for name, match in sources:
        with (results / tags["audit"] / f"{name}.csv").open() as handle:
            for row in csv.DictReader(handle):
                if any(row[k] != v for k, v in match.items()):
                    continue
                if name == "performance" and row["protected_attribute"] not in (
                        "", tags["attribute"]):
                    continue
                metric = row.get("metric")
                tagged = "degenerate_decisions" in row.get("note", "")  # no value, its sizes
                for column, cell in row.items():
                    if column in (*match, "metric", "note", "columns", "protected_attribute",
                                  *keys) or (tagged and column not in DESIGN_COLUMNS):
                        continue
                    key = metric_key(name, metric, column)
                    if cell in ("True", "False"):
                        expected[key] = float(cell == "True")
                    elif column not in ("kind", "ci_method", "mde_note") and cell:  # text: tags
                        expected[key] = readable(column, float(cell))  # p, q: 3 digits
    return expected


def test_sync_logs_one_child_per_key(client, synced) -> None:
    """The parent gets exactly one child per audit x cell x attribute / pair / axis x channel."""
    _, report = synced
    children = _children(client, report.parent_run_id)
    assert len(children) == CHILDREN_PER_AUDIT * len(AUDITS) == 40
    assert len({c.data.tags["faircode.child_key"] for c in children}) == 40
    assert {c.info.status for c in children} == {"FINISHED"}


def test_every_metric_equals_the_csv(client, synced) -> None:
    """Every child's metrics are exactly the non-empty CSV cells (p- and q-values to 3
    significant digits; of an uninformative row its sizes only), nothing more, no NaN."""
    results, report = synced
    for child in _children(client, report.parent_run_id):
        expected = _csv_expectation(results, child)
        got = child.data.metrics
        assert set(got) == set(expected), child.info.run_name
        assert got == expected, child.info.run_name
        assert not any(math.isnan(v) for v in got.values())


def test_an_empty_cell_is_not_logged(client, synced) -> None:
    """The one empty p-value cell (each audit's last fairness row) is absent, not NaN."""
    _, report = synced
    last = [c for c in _children(client, report.parent_run_id)
            if c.data.tags.get("table") == "fairness" and c.data.tags["strategy"] == "reweighing"
            and c.data.tags["model"] == MODELS[1] and c.data.tags["attribute"] == "sex"]
    assert len(last) == len(AUDITS)
    for child in last:
        assert "tpr_gap.p" not in child.data.metrics and "tpr_gap" in child.data.metrics


def test_new_rows_and_columns_are_logged(client, synced) -> None:
    """A metric row and a column the sync has no short code for arrive under their own names."""
    _, report = synced
    child = next(c for c in _children(client, report.parent_run_id)
                 if c.data.tags["table"] == "fairness" and c.data.tags["informative"] == "true")
    assert {"tpr_gap", "tpr_gap.future_statistic", "tpr_gap.n_adv"} <= set(child.data.metrics)


def test_metric_keys_are_short_and_name_their_q_family(client, synced) -> None:
    """A fairness child's keys are the short codes: value, interval, per-audit q (the
    benchmark-wide q is not a child's number: the parent's report/summary.csv holds it)."""
    _, report = synced
    child = next(c for c in _children(client, report.parent_run_id)
                 if c.data.tags["table"] == "fairness" and c.data.tags["strategy"] == "baseline")
    keys = set(child.data.metrics)
    assert {"dp", "dp.lo", "dp.hi", "dp.p", "dp.q_audit", "dp.sig_audit", "dp.mde", "dp.deff",
            "eopp", "eopp.q_audit", "acc", "acc.lo", "auc", "f1", "sel_dis"} <= keys
    assert not [k for k in keys if k.startswith("demographic_parity")]
    assert not [k for k in keys if "q_bench" in k or "sig_bench" in k]
    shown = [k[:HEADER] for k in keys if not k.endswith(".future_statistic")]
    assert len(set(shown)) == len(shown)  # the runs table's cut headers still differ


def test_child_tags_params_and_name(client, synced) -> None:
    """A fairness child has a short sortable name, its identity as params and tags, the sha256
    tags and the config params."""
    _, report = synced
    child = next(c for c in _children(client, report.parent_run_id)
                 if c.data.tags.get("attribute") == "sex" and c.data.tags["audit"] == AUDITS[1]
                 and c.data.tags["strategy"] == "baseline" and c.data.tags["model"] == MODELS[0])
    tags, params = child.data.tags, child.data.params
    assert child.info.run_name == f"{AUDITS[1]} S0 LR sex"
    identity = {"audit": AUDITS[1], "strategy": "baseline", "strategy_code": "S0",
                "model": MODELS[0], "attribute": "sex", "table": "fairness"}
    assert {k: params[k] for k in identity} == identity
    assert {k: tags[k] for k in identity} == identity
    assert tags["dataset_sha256"] == hashlib.sha256(AUDITS[1].encode()).hexdigest()
    assert tags["manifest_sha256"] == hashlib.sha256(b"m" + AUDITS[1].encode()).hexdigest()
    assert tags["informative"] == "true"
    assert params["decision_threshold"] == "0.5" and params["seed"] == "42"
    assert params["n_resamples"] == "100" and params["constraint"] == "demographic_parity"


def test_pair_and_axis_children_are_named_by_what_they_hold(client, synced) -> None:
    """An intersectional child is named by its pair, a counterfactual one by its axis and
    channel; an unknown strategy keeps its name."""
    _, report = synced
    names = {c.info.run_name for c in _children(client, report.parent_run_id)
             if c.data.tags["audit"] == AUDITS[0] and c.data.tags["model"] == MODELS[1]}
    assert {f"{AUDITS[0]} S0 RF age & sex", f"{AUDITS[0]} reweighing RF flip gender (proxy)",
            f"{AUDITS[0]} S0 RF age"} <= names


def test_degenerate_cell_is_uninformative(client, synced) -> None:
    """A cell noted degenerate_decisions is tagged informative=false and described so."""
    _, report = synced
    flagged = [c for c in _children(client, report.parent_run_id)
               if c.data.tags["informative"] == "false"]
    assert len(flagged) == len(AUDITS)
    assert all(c.data.tags["mlflow.note.content"].startswith("uninformative") for c in flagged)
    assert {c.data.tags["attribute"] for c in flagged} == {"sex"}


def test_dataset_inputs_carry_the_sha256(client, synced) -> None:
    """The parent has each audit's raw dataset as input (digest, sha256 tag); each child has its
    own audit's (MLflow's dataset column) and names it by tag."""
    _, report = synced
    parent = client.get_run(report.parent_run_id)
    given = {d.dataset.name: d for d in parent.inputs.dataset_inputs}
    assert set(given) == set(AUDITS)
    for audit, dataset_input in given.items():
        sha = hashlib.sha256(audit.encode()).hexdigest()
        assert dataset_input.dataset.digest == sha[:36]
        assert {t.key: t.value for t in dataset_input.tags}["sha256"] == sha
    for child in _children(client, report.parent_run_id):
        audit = child.data.tags["audit"]
        sha = {t.key: t.value for t in given[audit].tags}["sha256"]
        assert child.data.tags["dataset_sha256"] == sha
        inputs = client.get_run(child.info.run_id).inputs.dataset_inputs
        assert [(d.dataset.name, d.dataset.digest) for d in inputs] == [(audit, sha[:36])]


def test_parent_carries_the_results_state(client, synced) -> None:
    """The parent's state.* tags are the run.json state, and no commit or lock of the sync."""
    _, report = synced
    tags = client.get_run(report.parent_run_id).data.tags
    assert {k: tags[f"state.{k}"] for k in STATE} == {**STATE, "inputs_dirty": "false"}
    assert not {"git_commit", "git_dirty", "dvc_locks", "params_sha256"} & set(tags)
    child = _children(client, report.parent_run_id)[0]
    assert child.data.tags["state.code_sha256"] == STATE["code_sha256"]


def test_parent_name_tags_and_experiment_legend(client, synced) -> None:
    """The parent is named by its DVC experiment and code digest and tagged with DVC and the
    unavailable audits; the experiment is "custom model" and describes the keys."""
    _, report = synced
    parent = client.get_run(report.parent_run_id)
    assert parent.info.run_name == "exp-one · code aaaaaaa"
    tags = parent.data.tags
    assert tags["dvc_exp_name"] == "exp-one"
    assert tags["unavailable.gamma_hiring"] == "no verified copy of raw.csv"
    assert tags["faircode.sync_state"] == "complete"
    experiment = client.get_experiment(report.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    assert "q_audit is the Benjamini-Hochberg q within one audit" in experiment.tags[
        "mlflow.note.content"]


def test_first_screen_view_finds_the_first_audits_cells_of_this_state(client, synced) -> None:
    """The experiment's shared view (the address `faircode track` prints) filters to the first
    audit's first attribute in this state: MLflow's own search with its filter returns exactly
    those fairness children, and the view shows dp with its interval."""
    import json

    from faircode.record.first_screen import TAG

    results, report = synced
    view = json.loads(client.get_experiment(report.experiment_id).tags[TAG])
    found = client.search_runs([report.experiment_id], view["searchFilter"],
                               order_by=["tags.`mlflow.runName` ASC"])
    audit = sorted(p.parent.name for p in results.glob("*/fairness.csv"))[0]
    with (results / audit / "fairness.csv").open() as handle:
        attribute = next(csv.DictReader(handle))["protected_attribute"]
    want = sorted(c.info.run_name for c in _children(client, report.parent_run_id)
                  if c.data.tags["table"] == "fairness" and c.data.tags["audit"] == audit
                  and c.data.tags["attribute"] == attribute)
    assert [r.info.run_name for r in found] == want and want
    assert {"metrics.`dp`", "metrics.`dp.lo`", "metrics.`dp.hi`"} <= set(view["selectedColumns"])
    assert "viewStateShareKey=faircode" in runs_url("http://127.0.0.1:5000", "1")


def test_parent_holds_the_report_as_artifacts(client, synced, tmp_path) -> None:
    """The report page, its tables, summary and figures are the parent's report/ artifacts; the
    summary with its benchmark-wide q (q_benchmark) byte for byte."""
    results, report = synced
    listed = {f.path for f in client.list_artifacts(report.parent_run_id, "report")}
    assert {"report/report.html", "report/paper_table.md", "report/summary.csv",
            "report/figures"} <= listed
    figures = {f.path for f in client.list_artifacts(report.parent_run_id, "report/figures")}
    assert figures == {"report/figures/heatmap.png"}
    got = Path(client.download_artifacts(report.parent_run_id, "report/summary.csv", str(tmp_path)))
    assert got.read_bytes() == (results / "summary.csv").read_bytes()
    assert "q_benchmark" in got.read_text().splitlines()[0].split(",")


def test_a_parent_without_a_dvc_experiment_is_named_by_its_params(client, server,
                                                                  tmp_path) -> None:
    """Outside an experiment the parent's name is its swept params and digests."""
    results = write_results(tmp_path / "results", seed=6, threshold=0.3)
    done = sync_results(results, tracking_uri=server, experiment="faircode-names")
    assert client.get_run(done.parent_run_id).info.run_name == (
        "K=1 · thr 0.3 · eps 0.01 · DP · params bbbbbbb · code aaaaaaa")


def test_a_state_frozen_after_its_sync_is_renamed(client, server, tmp_path) -> None:
    """A second sync of a logged state, now frozen, names the parent by the freeze."""
    results = write_results(tmp_path / "results", seed=7)
    first = sync_results(results, tracking_uri=server, experiment="faircode-frozen")
    again = sync_results(results, tracking_uri=server, experiment="faircode-frozen",
                         context=SyncContext(freeze_name="v9-paper"))
    assert (again.status, again.parent_run_id) == ("unchanged", first.parent_run_id)
    parent = client.get_run(first.parent_run_id)
    assert parent.info.run_name == "v9-paper"
    assert parent.data.tags["faircode.freeze"] == "v9-paper"


def test_second_sync_adds_nothing(client, server, synced) -> None:
    """Syncing the same state again logs no run."""
    results, report = synced
    before = len(client.search_runs([report.experiment_id], max_results=1000))
    again = sync_results(results, tracking_uri=server, experiment="faircode-test")
    assert (again.status, again.parent_run_id) == ("unchanged", report.parent_run_id)
    assert len(client.search_runs([report.experiment_id], max_results=1000)) == before


def test_changed_threshold_adds_one_parent(client, server, synced, tmp_path) -> None:
    """A state with one number and the threshold changed adds one parent, under which only the
    child holding that number is logged; the other 39 are shared with the earlier state's."""
    results, report = synced
    changed = tmp_path / "results"
    shutil.copytree(results, changed)
    fairness = changed / AUDITS[0] / "fairness.csv"
    text = fairness.read_text().splitlines()
    cells = text[1].split(",")
    cells[5] = "0.123456789"
    fairness.write_text("\n".join([text[0], ",".join(cells), *text[2:]]) + "\n")
    run = json.loads((changed / AUDITS[0] / "run.json").read_text())
    run["config"]["decision_threshold"] = 0.3
    run["files"] = folder_digests(changed / AUDITS[0])  # a state written so, not a damage
    (changed / AUDITS[0] / "run.json").write_text(json.dumps(run))
    parents_before = client.search_runs([report.experiment_id], "tags.`faircode.sync_state` != ''")
    new = sync_results(changed, tracking_uri=server, experiment="faircode-test")
    parents = client.search_runs([report.experiment_id], "tags.`faircode.sync_state` != ''")
    assert new.status == "logged" and len(parents) == len(parents_before) + 1
    (first,) = _children(client, new.parent_run_id)
    assert first.info.run_name == f"{AUDITS[0]} S0 LR age"
    assert first.data.metrics["dp"] == 0.123456789
    assert first.data.params["decision_threshold"] == "0.3"
    assert (new.children_logged, new.children_shared, new.children_total) == (1, 39, 40)
    assert len(_index(client, new.parent_run_id, tmp_path)) == 40


def test_server_down_then_back(client, server, tmp_path, capsys) -> None:
    """Server down: results intact, one line, exit 3; server back: one sync logs it once."""
    results = write_results(tmp_path / "results", seed=3)
    before = _files(results)
    dead = f"http://127.0.0.1:{free_port()}"
    code = cli.main(["track", "--results", str(results), "--tracking-uri", dead,
                     "--experiment", "faircode-down"])
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("\n") == 1 and err.startswith("tracking failed:")
    assert f"faircode track --results {results} --tracking-uri {dead}" in err
    assert _files(results) == before
    assert cli.main(["track", "--results", str(results), "--tracking-uri", server,
                     "--experiment", "faircode-down"]) == 0
    assert cli.main(["track", "--results", str(results), "--tracking-uri", server,
                     "--experiment", "faircode-down"]) == 0
    experiment = client.get_experiment_by_name("faircode-down").experiment_id
    assert len(_parents(client, experiment, results_digest(results))) == 1
    assert len(client.search_runs([experiment], max_results=1000)) == 41


def test_half_written_parent_is_completed(client, server, tmp_path,
                                          monkeypatch) -> None:
    """A sync that dies mid-way is completed by the next one, with no duplicate child or parent."""
    from mlflow.tracking import MlflowClient

    results = write_results(tmp_path / "results", seed=4)
    original = MlflowClient.set_terminated
    calls = {"n": 0}
    lock = threading.Lock()

    def dying(self, run_id, *args, **kwargs):
        with lock:
            calls["n"] += 1
            if calls["n"] > 7:
                raise ConnectionError("connection reset by peer")
        return original(self, run_id, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "set_terminated", dying)
    with pytest.raises(TrackingError, match="connection reset"):
        sync_results(results, tracking_uri=server, experiment="faircode-crash")
    monkeypatch.setattr(MlflowClient, "set_terminated", original)
    experiment = client.get_experiment_by_name("faircode-crash").experiment_id
    runs = client.search_runs([experiment], max_results=1000)
    assert sum(r.info.status == "FINISHED" for r in runs) == 7  # the parent is still RUNNING
    assert len(runs) > 1 + 7  # at least one child was left RUNNING
    done = sync_results(results, tracking_uri=server, experiment="faircode-crash")
    assert (done.status, done.children_logged) == ("completed", 40 - 7)
    (parent,) = _parents(client, experiment, done.digest)
    children = _children(client, parent.info.run_id)
    assert len(children) == 40 and {c.info.status for c in children} == {"FINISHED"}
    assert len({c.data.tags["faircode.child_key"] for c in children}) == 40


def test_digest_ignores_timings_not_numbers(tmp_path) -> None:
    """Timings and worker count do not change the digest; a number or the config does."""
    results = write_results(tmp_path / "results", seed=5)
    digest = results_digest(results)
    run_json = results / AUDITS[0] / "run.json"
    run = json.loads(run_json.read_text())
    run["seconds"] = {"evaluate": 99.0}  # a record from before the timings moved beside it
    run["config"]["jobs"] = 64
    run_json.write_text(json.dumps(run))
    assert results_digest(results) == digest
    assert results_digest(results, config={"models": {"decision_threshold": 0.3}}) != digest
    performance = results / AUDITS[1] / "performance.csv"
    performance.write_text(performance.read_text().replace("0.55", "0.56", 1))
    assert results_digest(results) != digest


def test_sqlite_store_is_switched_to_wal(tmp_path) -> None:
    """A sqlite:/// store's file is put in WAL journaling mode, which persists in the file."""
    path = tmp_path / "sub" / "mlflow.db"
    switch_to_wal(f"sqlite:///{path}")
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_missing_results_is_exit_2(tmp_path, capsys) -> None:
    """A results folder that does not exist is one line and exit code 2, before any tracking."""
    code = cli.main(["track", "--results", str(tmp_path / "nope"), "--tracking-uri",
                     "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no such directory" in err


def test_import_does_not_load_mlflow() -> None:
    """Importing faircode.record.tracking and the CLI loads no mlflow module."""
    code = ("import sys, faircode.record.tracking, faircode.pipeline.cli, "
            "faircode.pipeline.stages.track\n"
            "print(any(m.split('.')[0] == 'mlflow' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert out.stdout.strip() == "False"
