"""Tests of how child runs reach MLflow's store (faircode.record._store.log_new_children).

Against the embedded SQLite store a batch of children -- runs, tags, dataset inputs, params,
metrics, FINISHED -- is one bulk transaction into MLflow's own tables; the reference is MLflow's
own way, ``create_run``, ``log_inputs``, ``log_batch`` and ``set_terminated``, for a twin in the
same experiment.  Everything is read back through MLflow's public client: the run, its inputs,
every metric's history, searches by metric, param and tag.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from faircode.record._store import NewChild, dataset_input, log_batched, log_new_children

pytestmark = pytest.mark.integration

PARAMS = {"audit": "compas", "strategy": "baseline", "decision_threshold": "0.5",
          "note": "x" * 500}
METRICS = {"dp": -0.1234567890123456, "dp.lo": -0.2, "dp.hi": 1e-17, "dp.p": 0.0,
           "n": 6172.0, "acc_eq.sig_audit": 1.0, "huge": 1.5e300, "odd key/with:chars_.-": 3.0,
           **{f"effect_vs_S0.m{i}.lo": i / 7 for i in range(400)}}
TAGS = {"faircode.child_key": "fairness|compas|baseline|lr|race", "mlflow.parentRunId": "p",
        "table": "fairness", "long": "y" * 5000}
SHA = "ab" * 32


@pytest.fixture()
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    yield MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


def _reference(client: object, experiment: str, child: NewChild) -> str:
    """The child logged by MLflow's own calls."""
    run_id = client.create_run(experiment, run_name=child.name, tags=dict(child.tags)).info.run_id
    if child.dataset is not None:
        client.log_inputs(run_id, datasets=[child.dataset])
    log_batched(client, run_id, params=child.params, metrics=child.metrics)
    client.set_terminated(run_id, "FINISHED")
    return str(run_id)


def _seen(client: object, run_id: str) -> dict[str, object]:
    """What MLflow's client reads of a run, its own id taken out of its artifact URI."""
    run = client.get_run(run_id)
    info = run.info
    return {"name": info.run_name, "status": info.status, "user": info.user_id,
            "stage": info.lifecycle_stage, "experiment": info.experiment_id,
            "artifacts": info.artifact_uri.replace(run_id, "<id>"),
            "ended": info.end_time is not None and info.end_time >= info.start_time,
            "tags": run.data.tags, "params": run.data.params, "metrics": run.data.metrics,
            "inputs": [(d.dataset.name, d.dataset.digest, d.dataset.source_type,
                        d.dataset.source, d.dataset.schema, d.dataset.profile,
                        sorted((t.key, t.value) for t in d.tags))
                       for d in run.inputs.dataset_inputs]}


def _runs(client: object, experiment: str) -> set[str]:
    return {r.info.run_id for r in client.search_runs([experiment])}


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the names of the MlflowClient write calls made from here on."""
    from mlflow.tracking import MlflowClient

    seen: list[str] = []
    for name in ("create_run", "log_inputs", "log_batch", "set_terminated", "update_run"):
        original = getattr(MlflowClient, name)

        def spy(self, *args, _name=name, _original=original, **kwargs):
            seen.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(MlflowClient, name, spy)
    return seen


def test_bulk_written_children_read_back_as_mlflow_writes_them(
        client, monkeypatch: pytest.MonkeyPatch) -> None:
    """One transaction of three children: the twin of a reference child and two others."""
    experiment = client.create_experiment("store")
    data = dataset_input("compas", "/data/compas.csv", SHA)
    child = NewChild("compas S0 LR race", TAGS, PARAMS, METRICS, data)
    a = _reference(client, experiment, child)
    others = [NewChild(f"c{i}", {"i": str(i)}, {"i": str(i)}, {"m": float(i), "dp": -float(i)})
              for i in range(2)]
    calls = _calls(monkeypatch)
    b, *rest = log_new_children(client, experiment, [child, *others])
    assert calls == []  # no create_run, log_inputs, log_batch or set_terminated: one transaction
    assert len({a, b, *rest}) == 4
    assert _seen(client, b) == _seen(client, a)
    assert _seen(client, b)["inputs"] == [("compas", SHA[:36], "local", _seen(
        client, a)["inputs"][0][3], None, None, [("mlflow.data.context", "raw"), ("sha256", SHA)])]
    for run_id, other in zip(rest, others, strict=True):
        seen = _seen(client, run_id)
        assert (seen["name"], seen["status"], seen["params"], seen["metrics"], seen["inputs"]) \
            == (other.name, "FINISHED", other.params, other.metrics, [])
        assert seen["tags"] == {**other.tags, "mlflow.runName": other.name}
    for key in ("dp", "huge", "odd key/with:chars_.-", "effect_vs_S0.m399.lo"):
        history = [[(m.value, m.step) for m in client.get_metric_history(run, key)]
                   for run in (a, b)]
        assert history[0] == history[1] == [(METRICS[key], 0)]
    for query, wanted in (("metrics.`dp.lo` < -0.1", {a, b}), ("metrics.n = 6172", {a, b}),
                          ("params.strategy = 'baseline'", {a, b}),
                          ("metrics.`effect_vs_S0.m7.lo` = 1", {a, b}),
                          ("tags.`mlflow.parentRunId` = 'p'", {a, b}),
                          ("attributes.run_name = 'c1'", {rest[1]}),
                          ("metrics.dp = -1", {rest[1]})):
        found = {r.info.run_id for r in client.search_runs([experiment], query)}
        assert found == wanted, query


def test_a_dataset_is_stored_once_per_experiment(client, tmp_path: Path) -> None:
    """As ``log_inputs`` does: children of one audit, in one batch or in two, share the
    experiment's one dataset row of that name and digest; another experiment has its own."""
    first, second = client.create_experiment("one"), client.create_experiment("two")
    data = dataset_input("compas", "/data/compas.csv", SHA)
    other = dataset_input("german", "/data/german.csv", "cd" * 32)
    batch = [NewChild(f"r{i}", {}, {}, {"m": 1.0}, d) for i, d in enumerate((data, data, other))]
    log_new_children(client, first, batch)
    log_new_children(client, first, batch[:1])
    _reference(client, second, batch[0])
    log_new_children(client, second, batch[:2])
    with sqlite3.connect(tmp_path / "mlflow.db") as db:
        rows = db.execute("SELECT experiment_id, name, COUNT(*) FROM datasets "
                          "GROUP BY experiment_id, name ORDER BY 1, 2").fetchall()
        edges = db.execute("SELECT COUNT(*) FROM inputs WHERE destination_type = 'RUN'").fetchone()
    assert rows == [(int(first), "compas", 1), (int(first), "german", 1),
                    (int(second), "compas", 1)]
    assert edges == (7,)


def test_a_nan_metric_is_stored_as_mlflow_stores_it(client) -> None:
    """MLflow keeps NaN as is_nan (and ±inf clipped): the bulk path uses its own rule."""
    experiment = client.create_experiment("store")
    odd = NewChild("odd", {}, {}, {"nan": float("nan"), "inf": float("inf"),
                                  "minus_inf": float("-inf")})
    a = _reference(client, experiment, odd)
    (b,) = log_new_children(client, experiment, [odd])
    ma, mb = client.get_run(a).data.metrics, client.get_run(b).data.metrics
    assert math.isnan(ma["nan"]) and math.isnan(mb["nan"])
    assert {k: v for k, v in ma.items() if k != "nan"} == {
        k: v for k, v in mb.items() if k != "nan"}


@pytest.mark.parametrize("change", [
    {"metrics": {"bad\x00key": 1.0}},                      # a key MLflow refuses
    {"metrics": {"m": "not a number"}},                    # a value MLflow refuses
    {"params": {"k" * 300: "1"}},                          # a param key longer than allowed
    {"tags": {"mlflow.runName": "another name"}},          # two names for one run
    {"dataset": "an input without its dataset"},
])
def test_what_mlflow_refuses_writes_nothing(client, change) -> None:
    """Validation runs first: no run of the batch is created."""
    from mlflow.exceptions import MlflowException

    experiment = client.create_experiment("store")
    from mlflow.entities import DatasetInput

    fine = NewChild("fine", {"t": "1"}, {"ok": "1"}, {"ok": 1.0})
    if "dataset" in change:
        change = {"dataset": DatasetInput(None)}  # type: ignore[arg-type]
    bad = NewChild(**{"name": "bad", "tags": {}, "params": {}, "metrics": {}, **change})
    with pytest.raises(MlflowException):
        log_new_children(client, experiment, [fine, bad])
    assert _runs(client, experiment) == set()


def test_a_deleted_experiment_gets_no_runs(client) -> None:
    from mlflow.entities import ViewType
    from mlflow.exceptions import MlflowException

    experiment = client.create_experiment("store")
    client.delete_experiment(experiment)
    with pytest.raises(MlflowException, match="expected an active experiment"):
        log_new_children(client, experiment, [NewChild("a", {}, {}, {"m": 1.0})])
    assert client.search_runs([experiment], run_view_type=ViewType.ALL) == []


def test_a_failure_inside_the_transaction_rolls_it_back_whole(
        client, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last insert failing (the dataset edges) leaves none of the batch's runs."""
    from faircode.record import _store

    experiment = client.create_experiment("store")
    batch = [NewChild(f"r{i}", {"t": "1"}, {"p": "1"}, {"m": 1.0},
                      dataset_input("compas", "/data/compas.csv", SHA)) for i in range(3)]

    def broken(*_args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_store, "_insert_inputs", broken)
    with pytest.raises(Exception, match="disk I/O error"):
        log_new_children(client, experiment, batch)
    assert _runs(client, experiment) == set()
