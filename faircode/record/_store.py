"""The MLflow store calls a sync makes (no logic about what is logged: see
:mod:`faircode.record.tracking`).

Batched logging (``log_batch`` in chunks of MLflow's limits), new child runs created whole --
tags, dataset input, params, metrics, ``FINISHED`` -- in one store transaction
(:func:`log_new_children`), a dataset input built from a
raw file's path and sha256, the experiment created (or updated) with its kind tag and legend, paged
search, the embedded SQLite store's switch to WAL journaling, a server's health check and MLflow's
own loggers silenced while a sync runs.
mlflow is imported inside the functions.
"""

from __future__ import annotations

import logging
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.record.names import legend
from faircode.record.runs import sanitise

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

__all__ = ["EXPERIMENT_KIND", "QUIET_LOGGERS", "NewChild", "TrackingError", "check_server",
           "dataset_input", "ensure_experiment", "flatten", "log_batched", "log_new_children",
           "quick_commits", "quiet_loggers", "search_all", "switch_to_wal"]

EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
"""The experiment tag MLflow 3.x's kind selector reads.  MLflow 3.17 ignores it for the landing
view (its sidebar's workflow toggle, default GenAI, decides): the runs table's address carries
``workflowType=machine_learning`` (:func:`faircode.record.tracking.runs_url`)."""
_BATCH_METRICS, _BATCH_PARAMS_TAGS = 1000, 100


class TrackingError(Exception):
    """The tracking store or server failed; the message is one line saying why and what to do."""


def flatten(value: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    for key, item in value.items():
        if isinstance(item, Mapping):
            yield from flatten(item, f"{prefix}{key}.")
        else:
            yield sanitise(f"{prefix}{key}"), str(item)[:6000]


def check_server(uri: str, timeout: float) -> None:
    if not uri.startswith(("http://", "https://")):
        return
    try:
        with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout) as answer:
            answer.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise TrackingError(f"server {uri} unreachable: {reason}") from None


def switch_to_wal(uri: str) -> None:
    """Put a ``sqlite:///<path>`` store in WAL journaling mode (persistent; a no-op when it is)."""
    if not uri.startswith("sqlite:///") or "?" in uri:
        return
    path = Path(uri.removeprefix("sqlite:///"))
    if path.name in ("", ":memory:"):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        connection = sqlite3.connect(path, timeout=20)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise TrackingError(f"store {uri}: cannot open the SQLite file: {exc}") from None


@contextmanager
def quick_commits(uri: str) -> Iterator[None]:
    """While syncing into a ``sqlite:///`` store: its connections commit without an fsync each
    (``PRAGMA synchronous=NORMAL``; the store is in WAL mode, :func:`switch_to_wal`).

    In WAL mode a commit then only appends to the log (fsynced at checkpoints): it survives a
    crash of the process, and a power loss can roll back the last commits but never damages
    the file (SQLite's documented guarantee).  A sync whose last writes were rolled back is
    completed by the next one (its parent is ``incomplete`` until its last write).  Each
    MLflow call is a transaction, and an fsync each (~13 ms here) was most of a sync's time.
    A listener on SQLAlchemy's ``connect`` event sets it on every SQLite connection opened
    meanwhile (MLflow opens its own); other URIs are left alone.
    """
    if not uri.startswith("sqlite:///"):
        yield
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def normal(connection: Any, _record: Any) -> None:
        if isinstance(connection, sqlite3.Connection):
            connection.execute("PRAGMA synchronous=NORMAL")

    event.listen(Engine, "connect", normal)
    try:
        yield
    finally:
        event.remove(Engine, "connect", normal)


def dataset_input(audit: str, path: str, sha256: str) -> Any:
    import warnings

    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import Dataset, DatasetInput, InputTag

    with warnings.catch_warnings():  # two local-file source classes match a path; either is right
        warnings.simplefilter("ignore", UserWarning)
        source = resolve_dataset_source(path or f"{audit}.raw")
    dataset = MetaDataset(source, name=audit, digest=sha256[:36])  # type: ignore[abstract]
    return DatasetInput(Dataset(**dataset.to_dict()), tags=[
        InputTag("mlflow.data.context", "raw"), InputTag("sha256", sha256)])


def log_batched(client: MlflowClient, run_id: str, *, params: Mapping[str, str],
         metrics: Mapping[str, float], tags: Mapping[str, str] | None = None) -> None:
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    small = [Param(k, v) for k, v in params.items()] + [
        RunTag(k, v) for k, v in (tags or {}).items()]
    big = [Metric(k, v, now, 0) for k, v in metrics.items()]
    while small or big:
        chunk_small, small = small[:_BATCH_PARAMS_TAGS], small[_BATCH_PARAMS_TAGS:]
        chunk_big, big = big[:_BATCH_METRICS], big[_BATCH_METRICS:]
        client.log_batch(run_id,
                         metrics=chunk_big,
                         params=[p for p in chunk_small if isinstance(p, Param)],
                         tags=[t for t in chunk_small if isinstance(t, RunTag)])


@dataclass(frozen=True, slots=True)
class NewChild:
    """A child run to log: its name, tags, params and metrics, and its dataset input (a
    :func:`dataset_input`; None for none)."""

    name: str
    tags: Mapping[str, str]
    params: Mapping[str, str]
    metrics: Mapping[str, float]
    dataset: Any | None = None


def log_new_children(client: MlflowClient, experiment_id: str, children: Sequence[NewChild]
                     ) -> list[str]:
    """Create each child run with its tags, dataset input, params and metrics, ``FINISHED``;
    the new run ids, in order.

    Against the embedded SQLite store (MLflow's ``SqlAlchemyStore``) it is **one transaction**
    of bulk inserts into MLflow's own tables through MLflow's own table models -- the runs, their
    tags, params, metrics, latest metrics (one value per key at step 0, so the latest is the
    value) and dataset inputs: a child exists exactly when all of it is in, ``FINISHED``, and a
    failure writes nothing of any child.  Keys, values and datasets pass MLflow's own batch and
    dataset validation and NaN handling first; a run is what ``create_run`` makes of it (its
    name tag, user ``unknown``, artifact URI under the experiment's, ``LOCAL``... as MLflow
    writes them), a dataset already in the experiment is reused as ``log_inputs`` reuses it.
    MLflow's own calls cost a sweep value's sync most of its time: ``create_run`` reads the
    experiment and the run back (~13 ms a child), ``log_inputs`` looks the run up again
    (~5 ms), ``log_batch`` builds two ORM objects per metric through SQLAlchemy's unit of work
    and ``set_terminated`` loads them back; here a chunk of children is a handful of
    ``executemany`` statements sharing the index pages their keys touch.  The tables are those
    of the ``mlflow`` pinned in ``requirements.lock``; ``tests/test_tracking_store.py`` reads
    children written so and a twin logged through MLflow's client back through the client
    (runs, tags, inputs, metric history, search) and finds them equal.  Any other store (a
    server): per child ``create_run``, ``log_inputs``, ``log_batch`` in chunks, then
    ``set_terminated``.
    """
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    if isinstance(store, SqlAlchemyStore):
        return _bulk_log(store, experiment_id, children) if children else []
    ids = []
    for child in children:
        run_id = str(client.create_run(experiment_id, run_name=child.name,
                                       tags=dict(child.tags)).info.run_id)
        if child.dataset is not None:
            client.log_inputs(run_id, datasets=[child.dataset])
        log_batched(client, run_id, params=child.params, metrics=child.metrics)
        client.set_terminated(run_id, "FINISHED")
        ids.append(run_id)
    return ids


def _bulk_log(store: Any, experiment_id: str, children: Sequence[NewChild]) -> list[str]:
    """:func:`log_new_children`'s transaction on a ``SqlAlchemyStore``."""
    import uuid

    from mlflow.entities import LifecycleStage, RunStatus, SourceType
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking.dbmodels.models import (
        SqlLatestMetric,
        SqlMetric,
        SqlParam,
        SqlRun,
        SqlTag,
    )
    from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME, MLFLOW_USER
    from mlflow.utils.uri import append_to_uri_path
    from sqlalchemy import insert

    experiment = store.get_experiment(experiment_id)
    if experiment.lifecycle_stage != LifecycleStage.ACTIVE:
        raise MlflowException(f"experiment {experiment_id}: expected an active experiment, "
                              f"found {experiment.lifecycle_stage}")
    now = int(time.time() * 1000)
    ids = [uuid.uuid4().hex for _ in children]
    runs: list[dict[str, Any]] = []
    tables: dict[Any, list[dict[str, Any]]] = {SqlTag: [], SqlParam: [], SqlMetric: []}
    for run_id, child in zip(ids, children, strict=True):
        tags, params, metrics = _checked(store, child, now)
        if tags.get(MLFLOW_RUN_NAME, child.name) != child.name:
            raise MlflowException(f"child {child.name!r}: its tag {MLFLOW_RUN_NAME} says "
                                  f"{tags[MLFLOW_RUN_NAME]!r}")
        tags.setdefault(MLFLOW_RUN_NAME, child.name)
        runs.append({"run_uuid": run_id, "name": child.name, "experiment_id": experiment_id,
                     "artifact_uri": append_to_uri_path(experiment.artifact_location, run_id,
                                                        store.ARTIFACTS_FOLDER_NAME),
                     "source_type": SourceType.to_string(SourceType.UNKNOWN),
                     "source_name": "", "entry_point_name": "", "source_version": "",
                     "user_id": tags.get(MLFLOW_USER, "unknown"),
                     "status": RunStatus.to_string(RunStatus.FINISHED), "start_time": now,
                     "end_time": now, "deleted_time": None,
                     "lifecycle_stage": LifecycleStage.ACTIVE})
        tables[SqlTag] += [{"run_uuid": run_id, "key": k, "value": v} for k, v in tags.items()]
        tables[SqlParam] += [{"run_uuid": run_id, "key": k, "value": v}
                             for k, v in params.items()]
        tables[SqlMetric] += [{"run_uuid": run_id, **row} for row in metrics]
    with store.ManagedSessionMaker(read_only=False) as session:
        session.execute(insert(SqlRun.__table__), runs)
        for table, rows in tables.items():
            if rows:
                session.execute(insert(table.__table__), rows)
        if tables[SqlMetric]:
            session.execute(insert(SqlLatestMetric.__table__), tables[SqlMetric])
        _insert_inputs(session, experiment_id, [
            (run_id, child.dataset) for run_id, child in zip(ids, children, strict=True)
            if child.dataset is not None])
    return ids


def _checked(store: Any, child: NewChild, now: int
             ) -> tuple[dict[str, str], dict[str, str], list[dict[str, Any]]]:
    """A child's tags, params and metric rows after MLflow's own validation and NaN rule."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.validation import (
        _validate_batch_log_data,
        _validate_dataset_inputs,
        _validate_param_keys_unique,
    )

    metrics, params, tags = _validate_batch_log_data(
        [Metric(k, v, now, 0) for k, v in child.metrics.items()],
        [Param(k, v) for k, v in child.params.items()],
        [RunTag(k, v) for k, v in child.tags.items()])
    _validate_param_keys_unique(params)
    if child.dataset is not None:
        _validate_dataset_inputs([child.dataset])
    rows = []
    for metric in metrics:
        is_nan, value = store.sanitize_metric_value(metric.value)
        rows.append({"key": metric.key, "value": value, "timestamp": now, "step": 0,
                     "is_nan": is_nan})
    return ({t.key: t.value for t in tags}, {p.key: p.value for p in params}, rows)


def _insert_inputs(session: Any, experiment_id: str, inputs: Sequence[tuple[str, Any]]) -> None:
    """Each run's dataset input: the experiment's dataset of that name and digest (created when
    it has none, as ``log_inputs`` does), an input edge to the run and the edge's tags."""
    import uuid

    from mlflow.store.tracking.dbmodels.models import SqlDataset, SqlInput, SqlInputTag
    from sqlalchemy import insert, select

    if not inputs:
        return
    wanted = {(d.dataset.name, d.dataset.digest): d.dataset for _, d in inputs}
    found = session.execute(select(SqlDataset.name, SqlDataset.digest, SqlDataset.dataset_uuid)
                            .where(SqlDataset.experiment_id == experiment_id,
                                   SqlDataset.name.in_({n for n, _ in wanted}),
                                   SqlDataset.digest.in_({d for _, d in wanted}))).all()
    uuids = {(name, digest): dataset_uuid for name, digest, dataset_uuid in found}
    new = [{"dataset_uuid": uuids.setdefault(key, uuid.uuid4().hex),
            "experiment_id": experiment_id, "name": d.name, "digest": d.digest,
            "dataset_source_type": d.source_type, "dataset_source": d.source,
            "dataset_schema": d.schema, "dataset_profile": d.profile}
           for key, d in wanted.items() if key not in uuids]
    if new:
        session.execute(insert(SqlDataset.__table__), new)
    edges, edge_tags = [], []
    for run_id, dataset_input in inputs:
        edge = uuid.uuid4().hex
        edges.append({"input_uuid": edge, "source_type": "DATASET", "destination_type": "RUN",
                      "source_id": uuids[(dataset_input.dataset.name,
                                          dataset_input.dataset.digest)],
                      "destination_id": run_id})
        edge_tags += [{"input_uuid": edge, "name": t.key, "value": t.value}
                      for t in dataset_input.tags]
    session.execute(insert(SqlInput.__table__), edges)
    if edge_tags:
        session.execute(insert(SqlInputTag.__table__), edge_tags)


def ensure_experiment(client: MlflowClient, name: str, artifact_location: str | None) -> str:
    """The experiment's id, created if absent; its kind tag and legend kept up to date."""
    wanted = dict([EXPERIMENT_KIND, ("mlflow.note.content", legend())])
    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            return str(client.create_experiment(name, artifact_location=artifact_location,
                                                tags=wanted))
        except Exception as exc:  # a concurrent sync created it first: use that one
            if getattr(exc, "error_code", None) != "RESOURCE_ALREADY_EXISTS":
                raise
            found = client.get_experiment_by_name(name)
            if found is None:
                raise
    for key, value in wanted.items():
        if found.tags.get(key) != value:
            client.set_experiment_tag(found.experiment_id, key, value)
    return str(found.experiment_id)


def search_all(client: MlflowClient, experiment_id: str, filter_string: str) -> list[Any]:
    runs: list[Any] = []
    token = None
    while True:
        page = client.search_runs([experiment_id], filter_string, max_results=1000,
                                  order_by=["attributes.start_time ASC"], page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            return runs


QUIET_LOGGERS = ("mlflow", "alembic", "sqlalchemy")
"""Loggers silenced while a sync runs: MLflow logs each store error it also raises (67 lines for
one locked SQLite file, then the exception faircode words in one line), and its INFO lines
about schema migrations; the sync's outcome is the line ``faircode track`` prints."""


@contextmanager
def quiet_loggers() -> Iterator[None]:
    """Raise :data:`QUIET_LOGGERS` above CRITICAL for the duration; restore them after.

    MLflow configures its logger when first imported, so it is imported first.
    """
    try:
        import mlflow  # noqa: F401 - for its logging configuration, before it is overridden
    except ImportError:  # reported by the sync as a tracking failure
        pass
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
