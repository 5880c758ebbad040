"""The MLflow store calls a sync makes (no logic about what is logged: see
:mod:`faircode.record.tracking`).

Batched logging (``log_batch`` in chunks of MLflow's limits), new child runs' numbers written and
the runs finished in one store transaction (:func:`finish_children`), a dataset input built from a
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.record.names import legend
from faircode.record.runs import sanitise

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

__all__ = ["EXPERIMENT_KIND", "QUIET_LOGGERS", "Numbers", "TrackingError", "check_server",
           "dataset_input", "ensure_experiment", "finish_children", "flatten", "log_batched",
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


Numbers = tuple[str, Mapping[str, str], Mapping[str, float]]
"""A new child run's id, params and metrics (:func:`finish_children`)."""


def finish_children(client: MlflowClient, children: Sequence[Numbers]) -> None:
    """Write each child run's params and metrics, then mark it ``FINISHED`` (each run just
    created, holding no param or metric yet).

    Against the embedded SQLite store (MLflow's ``SqlAlchemyStore``) it is **one transaction**
    of bulk inserts into MLflow's own tables through MLflow's own table models -- the params,
    the metrics, their latest values (one value per key at step 0, so the latest is the value)
    -- and the runs' status and end time: a child is ``FINISHED`` exactly when its numbers are
    in, and a failure writes nothing of any of them.  Keys and values pass MLflow's own batch
    validation and NaN handling first.  MLflow's ``log_batch`` builds two ORM objects per metric
    through SQLAlchemy's unit of work, and then ``set_terminated`` loads them all back: of a
    sweep value's sync, 81 % was those two calls (``docs/pipeline.md``); here the children's
    metrics are two ``executemany`` statements, and the children of one transaction share the
    index pages their keys touch (a commit per child wrote them again each time).  The tables
    are those of the ``mlflow`` pinned in ``requirements.lock``;
    ``tests/test_tracking_store.py`` reads children written so and one written by ``log_batch``
    back through MLflow's client (runs, metric history, search) and finds them equal.  Any other
    store (a server): per child ``log_batch`` in chunks, then ``set_terminated``.
    """
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    if not isinstance(store, SqlAlchemyStore):
        for run_id, params, metrics in children:
            log_batched(client, run_id, params=params, metrics=metrics)
            client.set_terminated(run_id, "FINISHED")
        return
    if children:
        _bulk_finish(store, children)


def _bulk_finish(store: Any, children: Sequence[Numbers]) -> None:
    """:func:`finish_children`'s transaction on a ``SqlAlchemyStore``."""
    from mlflow.entities import LifecycleStage, Metric, Param, RunStatus
    from mlflow.exceptions import MlflowException
    from mlflow.store.tracking.dbmodels.models import (
        SqlLatestMetric,
        SqlMetric,
        SqlParam,
        SqlRun,
    )
    from mlflow.utils.validation import _validate_batch_log_data, _validate_param_keys_unique
    from sqlalchemy import insert, update

    ids = sorted({run_id for run_id, _, _ in children})
    if len(ids) != len(children):  # one run twice: refused before anything is written
        raise MlflowException(f"runs {', '.join(ids)}: expected {len(children)} distinct "
                              f"active runs to finish, got a run twice")
    now = int(time.time() * 1000)
    params_rows: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for run_id, params, metrics in children:
        checked, checked_params, _ = _validate_batch_log_data(
            [Metric(k, v, now, 0) for k, v in metrics.items()],
            [Param(k, v) for k, v in params.items()], [])
        _validate_param_keys_unique(checked_params)
        params_rows += [{"run_uuid": run_id, "key": p.key, "value": p.value}
                        for p in checked_params]
        for metric in checked:
            is_nan, value = store.sanitize_metric_value(metric.value)
            rows.append({"run_uuid": run_id, "key": metric.key, "value": value,
                         "timestamp": now, "step": 0, "is_nan": is_nan})
    with store.ManagedSessionMaker(read_only=False) as session:
        if params_rows:
            session.execute(insert(SqlParam), params_rows)
        if rows:
            session.execute(insert(SqlMetric), rows)
            session.execute(insert(SqlLatestMetric), rows)
        done = session.execute(
            update(SqlRun).where(SqlRun.run_uuid.in_(ids),
                                 SqlRun.lifecycle_stage == LifecycleStage.ACTIVE)
            .values(status=RunStatus.to_string(RunStatus.FINISHED), end_time=now))
        if done.rowcount != len(ids):  # rolled back: none written
            raise MlflowException(f"runs {', '.join(ids)}: expected {len(children)} distinct "
                                  f"active runs to finish, found {done.rowcount}")


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
