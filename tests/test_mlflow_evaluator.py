"""Tests of the faircode MLflow evaluator: registered under the ``mlflow.model_evaluator`` entry
point, it logs a classifier's gaps, intervals, q-values and verdicts (the short keys of
``faircode track``), the tables and a figure into the user's own run -- in a SQLite store and in
a real ``mlflow server`` on 127.0.0.1, both started by the test."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlflow_server import mlflow_server

import faircode
from faircode.core.config import BenchmarkConfig

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parent.parent
CONFIG = {"sensitive_features": ["sex", "age<30"], "n_resamples": 100, "n_permutations": 100}
EXPECTED = ("sex.dp", "sex.dp.lo", "sex.dp.hi", "sex.dp.q_audit", "sex.dp.verdict",
            "sex.dp.mde", "sex.tpr_gap", "age.dp", "age.dp.q_audit", "acc", "acc.lo", "bacc")


def _entry_point() -> str:
    """``faircode.pipeline.mlflow_evaluator:FaircodeEvaluator``, as pyproject.toml declares it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return str(project["entry-points"]["mlflow.model_evaluator"]["faircode"])


@pytest.fixture(scope="module", autouse=True)
def registered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The entry point as the installed metadata holds it; where the editable install predates
    it, a distribution's metadata declaring pyproject.toml's entry point on sys.path (what
    ``pip install -e .`` writes), so MLflow finds the evaluator the way a user's would."""
    found = [e for e in importlib.metadata.entry_points(group="mlflow.model_evaluator")
             if e.name == "faircode"]
    if found:
        yield
        return
    root = tmp_path_factory.mktemp("metadata")
    info = root / "faircode_evaluator-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: faircode-evaluator\n"
                                   "Version: 0\n")
    (info / "entry_points.txt").write_text(
        f"[mlflow.model_evaluator]\nfaircode = {_entry_point()}\n")
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="module", autouse=True)
def quiet() -> Iterator[None]:
    """No run URL printed, no telemetry, no artifact progress bar."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        patch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        patch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        yield


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, Any]:
    """A lending table (sex 1 = female, age, income; label y) and a logistic regression fitted
    on its first half."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(7)
    n = 1200
    frame = pd.DataFrame({"sex": rng.integers(0, 2, n), "age": rng.integers(18, 70, n),
                          "income": rng.normal(0, 1, n)})
    logit = 1.2 * frame["income"] - 0.8 * frame["sex"] + 0.02 * (frame["age"] - 40)
    frame["y"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    model = LogisticRegression().fit(frame.iloc[:600][["sex", "age", "income"]],
                                     frame.iloc[:600]["y"])
    return frame.iloc[600:].reset_index(drop=True), model


def _experiment(uri: str) -> None:
    """The user's experiment in the store at ``uri``; a SQLite store's artifacts beside its
    file (MLflow's default would be ./mlruns of the working directory)."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    where = None
    if uri.startswith("sqlite:///"):
        where = (Path(uri.removeprefix("sqlite:///")).parent / "artifacts").as_uri()
    if mlflow.get_experiment_by_name("user-experiment") is None:
        mlflow.create_experiment("user-experiment", artifact_location=where)
    mlflow.set_experiment("user-experiment")


def _evaluate(uri: str, data: tuple[pd.DataFrame, Any], *, listed: bool) -> tuple[str, Any]:
    """``mlflow.models.evaluate`` with the faircode evaluator inside the user's own run: named
    alone (its config flat) or ``listed`` (MLflow then wants the config under its name)."""
    import mlflow

    frame, model = data
    _experiment(uri)
    how: dict[str, Any] = ({"evaluators": ["faircode"], "evaluator_config": {"faircode": CONFIG}}
                           if listed else {"evaluators": "faircode", "evaluator_config": CONFIG})
    with mlflow.start_run() as run:
        mlflow.log_param("user_param", 1)
        result = mlflow.models.evaluate(
            lambda x: model.predict(x[["sex", "age", "income"]]), frame, targets="y",
            model_type="classifier", **how)
    return run.info.run_id, result


def _check_run(uri: str, run_id: str, result: Any, data: tuple[pd.DataFrame, Any]) -> None:
    """The user's run holds its own param and faircode's metrics, tags and artifacts, and the
    metrics are faircode.audit_decisions' numbers on the same decisions."""
    from mlflow.tracking import MlflowClient

    frame, model = data
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert run.data.params["user_param"] == "1"
    metrics = run.data.metrics
    assert set(EXPECTED) <= set(metrics)
    assert {k: result.metrics[k] for k in EXPECTED} == {k: metrics[k] for k in EXPECTED}
    verdict = run.data.tags["faircode.sex.dp.verdict"]
    assert verdict in ("gap", "parity", "inconclusive")
    own = frame.assign(decision=model.predict(frame[["sex", "age", "income"]]))
    want = faircode.audit_decisions(
        own, group=["sex", "age<30"], label="y", decision="decision",
        config=BenchmarkConfig().with_params({"stats.n_resamples": 100,
                                              "stats.n_permutations": 100})).fairness
    row = want[(want["protected_attribute"] == "sex")
               & (want["metric"] == "demographic_parity_diff")].iloc[0]
    assert metrics["sex.dp"] == pytest.approx(row["value"], abs=1e-12)
    assert (metrics["sex.dp.lo"], metrics["sex.dp.hi"]) == pytest.approx(
        (row["ci_low"], row["ci_high"]), abs=1e-12)
    assert metrics["sex.dp.q_audit"] == pytest.approx(row["q_value"], abs=1e-12)
    assert verdict == row["verdict"]
    files = {a.path for a in client.list_artifacts(run_id, "faircode")}
    assert {"faircode/fairness.csv", "faircode/performance.csv", "faircode/groups.csv",
            "faircode/gaps.png"} <= files


def test_pyproject_registers_the_evaluator_entry_point() -> None:
    """pyproject.toml names the evaluator class under ``mlflow.model_evaluator``, and MLflow's
    registry lists it."""
    from mlflow.models.evaluation import list_evaluators

    from faircode.pipeline.mlflow_evaluator import FaircodeEvaluator

    module, _, name = _entry_point().partition(":")
    assert getattr(importlib.import_module(module), name) is FaircodeEvaluator
    assert "faircode" in list_evaluators()


def test_the_evaluator_logs_into_the_users_run_in_a_sqlite_store(
        tmp_path: Path, data: tuple[pd.DataFrame, Any]) -> None:
    """In a SQLite tracking store: the expected metric keys, verdict tags, tables and figure."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_id, result = _evaluate(uri, data, listed=True)
    _check_run(uri, run_id, result, data)


@pytest.fixture
def server() -> Iterator[str]:
    """An ``mlflow server`` for one test (:func:`mlflow_server.mlflow_server`)."""
    with mlflow_server("faircode-evaluator-") as url:
        yield url


@pytest.mark.slow
def test_the_evaluator_logs_into_a_real_mlflow_server(
        server: str, data: tuple[pd.DataFrame, Any]) -> None:
    """Through a real ``mlflow server``: the same keys, tags and artifacts in the user's run (its
    twin in the default suite: the SQLite store; the server's start is half a minute)."""
    run_id, result = _evaluate(server, data, listed=False)
    _check_run(server, run_id, result, data)


def test_a_sensitive_feature_the_data_lacks_is_one_line(
        tmp_path: Path, data: tuple[pd.DataFrame, Any]) -> None:
    """A sensitive feature that is no column of the evaluation data names the column."""
    import mlflow

    from faircode.core.errors import ConfigError

    frame, model = data
    _experiment(f"sqlite:///{tmp_path / 'mlflow.db'}")
    with mlflow.start_run(), pytest.raises(ConfigError, match="got 'gender'"):
        mlflow.models.evaluate(
            lambda x: model.predict(x[["sex", "age", "income"]]), frame, targets="y",
            model_type="classifier", evaluators="faircode",
            evaluator_config={"sensitive_features": ["gender=F"]})
