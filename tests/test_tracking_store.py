"""Tests of how children's numbers reach MLflow's store (faircode.record._store.finish_children).

Against the embedded SQLite store the params, metrics and FINISHED status of a batch of children are
one bulk transaction into MLflow's own tables; the reference is MLflow's own way, ``log_batch`` then
``set_terminated``, on a twin run of the same store.  Everything is read back through MLflow's
public client: the run, every metric's history, searches by metric and param.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from faircode.record._store import finish_children, log_batched

pytestmark = pytest.mark.integration

PARAMS = {"audit": "compas", "strategy": "baseline", "decision_threshold": "0.5",
          "note": "x" * 500}
METRICS = {"dp": -0.1234567890123456, "dp.lo": -0.2, "dp.hi": 1e-17, "dp.p": 0.0,
           "n": 6172.0, "acc_eq.sig_audit": 1.0, "huge": 1.5e300, "odd key/with:chars_.-": 3.0,
           **{f"effect_vs_S0.m{i}.lo": i / 7 for i in range(400)}}


@pytest.fixture()
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    yield MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


def _twins(client: object, more: int = 0) -> tuple[str, str, str, list[str]]:
    """An experiment, two runs of the same tags and ``more`` further runs."""
    experiment = client.create_experiment("store", artifact_location=None)
    tags = {"faircode.child_key": "fairness|compas|baseline|lr|race", "mlflow.parentRunId": "p"}
    a = client.create_run(experiment, run_name="a", tags=tags).info.run_id
    b = client.create_run(experiment, run_name="b", tags=tags).info.run_id
    others = [client.create_run(experiment, run_name=f"c{i}").info.run_id for i in range(more)]
    return experiment, a, b, others


def _untouched(client: object, run_id: str) -> bool:
    run = client.get_run(run_id)
    return (run.info.status, run.data.params, run.data.metrics) == ("RUNNING", {}, {})


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the names of the MlflowClient write calls made from here on."""
    from mlflow.tracking import MlflowClient

    seen: list[str] = []
    for name in ("log_batch", "set_terminated", "update_run"):
        original = getattr(MlflowClient, name)

        def spy(self, *args, _name=name, _original=original, **kwargs):
            seen.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(MlflowClient, name, spy)
    return seen


def test_bulk_written_children_read_back_as_log_batch_writes_them(
        client, monkeypatch: pytest.MonkeyPatch) -> None:
    """One transaction of three children: the twin of ``a`` and two others, each its own."""
    experiment, a, b, others = _twins(client, more=2)
    log_batched(client, a, params=PARAMS, metrics=METRICS)  # MLflow's own way, the reference
    client.set_terminated(a, "FINISHED")
    own = {run_id: ({"i": str(i)}, {"m": float(i), "dp": -float(i)})
           for i, run_id in enumerate(others)}
    calls = _calls(monkeypatch)
    finish_children(client, [(b, PARAMS, METRICS), *((r, *own[r]) for r in others)])
    assert calls == []  # no log_batch, no set_terminated: the one transaction
    ra, rb = client.get_run(a), client.get_run(b)
    assert (ra.info.status, rb.info.status) == ("FINISHED", "FINISHED")
    assert rb.info.end_time is not None and rb.info.end_time >= rb.info.start_time
    assert rb.data.params == ra.data.params == PARAMS
    assert rb.data.metrics == ra.data.metrics == METRICS
    for run_id, (params, metrics) in own.items():
        run = client.get_run(run_id)
        assert (run.info.status, run.data.params, run.data.metrics) == (
            "FINISHED", params, metrics)
    for key in ("dp", "huge", "odd key/with:chars_.-", "effect_vs_S0.m399.lo"):
        history = [[(m.value, m.step) for m in client.get_metric_history(run, key)]
                   for run in (a, b)]
        assert history[0] == history[1] == [(METRICS[key], 0)]
    for query, wanted in (("metrics.`dp.lo` < -0.1", {a, b}), ("metrics.n = 6172", {a, b}),
                          ("params.strategy = 'baseline'", {a, b}),
                          ("metrics.`effect_vs_S0.m7.lo` = 1", {a, b}),
                          ("metrics.dp = -1", {others[1]})):
        found = {r.info.run_id for r in client.search_runs([experiment], query)}
        assert found == wanted, query


def test_a_nan_metric_is_stored_as_mlflow_stores_it(client) -> None:
    """MLflow keeps NaN as is_nan (and ±inf clipped): the bulk path uses its own rule."""
    _, a, b, _ = _twins(client)
    odd = {"nan": float("nan"), "inf": float("inf"), "minus_inf": float("-inf")}
    log_batched(client, a, params={}, metrics=odd)
    client.set_terminated(a, "FINISHED")
    finish_children(client, [(b, {}, odd)])
    ma, mb = client.get_run(a).data.metrics, client.get_run(b).data.metrics
    assert math.isnan(ma["nan"]) and math.isnan(mb["nan"])
    assert {k: v for k, v in ma.items() if k != "nan"} == {
        k: v for k, v in mb.items() if k != "nan"}


@pytest.mark.parametrize("params, metrics", [
    ({"a": "1"}, {"bad\x00key": 1.0}),                 # a key MLflow refuses
    ({"a": "1"}, {"m": "not a number"}),               # a value MLflow refuses
])
def test_what_mlflow_refuses_writes_nothing(client, params, metrics) -> None:
    """MLflow's batch validation runs first; no run of the batch keeps a number, all RUNNING."""
    from mlflow.exceptions import MlflowException

    _, a, b, _ = _twins(client)
    with pytest.raises(MlflowException):
        finish_children(client, [(a, {"ok": "1"}, {"ok": 1.0}), (b, params, metrics)])
    assert _untouched(client, a) and _untouched(client, b)


def test_a_deleted_run_fails_its_whole_transaction(client) -> None:
    """The transaction finishes every run of the batch or is rolled back whole."""
    from mlflow.exceptions import MlflowException

    _, a, b, _ = _twins(client)
    client.delete_run(b)
    with pytest.raises(MlflowException, match="expected 2 distinct active runs"):
        finish_children(client, [(a, {"a": "1"}, {"m": 1.0}), (b, {"a": "1"}, {"m": 1.0})])
    assert _untouched(client, a) and _untouched(client, b)


def test_a_run_twice_in_one_batch_is_refused(client) -> None:
    from mlflow.exceptions import MlflowException

    _, a, _, _ = _twins(client)
    with pytest.raises(MlflowException, match="expected 2 distinct"):
        finish_children(client, [(a, {}, {"m": 1.0}), (a, {}, {"n": 1.0})])
    assert _untouched(client, a)
