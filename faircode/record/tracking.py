"""MLflow tracking: sync the results on disk into an MLflow store, once per pipeline state.

:func:`sync_results` reads ``<results>/<audit>/`` folders exactly as the grid wrote them
(four CSVs and ``run.json``, or ``unavailable.json``) and the report's outputs beside them, and
logs one **parent run** for the whole state and one **child run** per audit x strategy x model x
protected attribute, per intersectional pair and per counterfactual axis x channel -- under the
parent, unless an earlier state logged the same numbers: then the parent's ``children.json``
points at that run.  The names, metric keys and the experiment's legend are
:mod:`faircode.record.names`'.

Design decisions
----------------
* **The only modules that import mlflow, lazily** (this one, its store calls
  :mod:`faircode.record._store`, its parent run :mod:`faircode.record._parent` and its children
  :mod:`faircode.record._shared`).
  ``import faircode`` never loads mlflow; it is imported inside the functions that talk to a
  store.
* **Reads what is on disk, never re-runs anything** (the reading is :mod:`faircode.record.runs`).
  Tables are read as text and every numeric (or ``True``/``False``) column becomes a metric with
  a short key (``dp``, ``dp.lo``, ``dp.q_audit``, ``acc``; an unknown row or column keeps its
  name); other non-empty text cells become tags.  A number is logged as ``float(cell)``: the
  CSVs hold shortest exact reprs, so a logged value equals the CSV's.  **An empty or non-finite
  cell is not logged** (MLflow would show ``NaN`` as a number; its table shows the cell empty).
* **One identity.**  The parent is tagged with the state its results were produced from --
  ``state.git_commit``, ``state.code_sha256``, ``state.inputs_dirty``, ``state.params_sha256``,
  read from the ``run.json`` files, the same values ``report.html`` prints -- never the commit
  or ``dvc.lock`` of the moment of the sync (the lock that records a state is written after its
  stages run; the freeze record holds it).  Audits from different states make the differing
  fields ``mixed`` and ``state.states`` their count; each child carries its own audit's state.
* **Named by what it is.**  A parent is named by its freeze (the caller finds the record whose
  results match), its DVC experiment, or its swept params and digests; a state frozen after it
  was logged is renamed by the next sync.  The experiment's description is the legend of the
  keys and says which q the report's stars use.
* **The runs table, not the GenAI overview.**  The experiment is tagged
  ``mlflow.experimentKind=custom_model_development``, but MLflow 3.17 ignores that tag for the
  view an experiment opens on: the sidebar's workflow toggle decides (a browser setting, default
  GenAI, whose overview shows no run).  No tag or server option changes it (checked in the UI
  bundle and in the real UI: ``bench/mlflow_ui.py``), so :func:`runs_url` -- the address
  ``faircode track`` prints -- carries ``workflowType=machine_learning``.
* **Idempotent by content.**  The state's digest is sha256 over the config, every file of every
  audit folder (``run.json`` without its ``seconds`` timings and ``jobs`` worker count, which
  differ between runs of the same state and change no number) and the report's outputs.  The
  parent carries it as tag ``faircode.digest``; a second sync of the same state finds it and
  logs nothing.  Whether DVC runs or skips the command, a state is logged once.
* **A new state logs only the children whose numbers changed** (:mod:`faircode.record._shared`).
  A sweep value leaves most audits' tables byte-identical (1,066 children of the paper state,
  306 of them changed by a ``models.decision_threshold`` value), and a child costs ~0.1 s.  Each
  child is tagged with the digest of its numbers (``faircode.child_digest``:
  :func:`faircode.record.child.child_digest`, its key, metrics and tags without ``state.*``
  and without params); a new parent logs the children whose key and digest its **base** -- the
  experiment's most recently started complete parent with an index -- does not list, and shares
  the others.  Every parent's artifact ``children.json`` lists each child key of its state at
  the run holding its numbers, and its tags and note say how many it shares with which parent.
  A shared child keeps its own parent's ``mlflow.parentRunId`` and ``faircode.parent_digest``
  and the params of the state that logged it (the numbers are the same; the config differs);
  ``share_children=False`` logs every child.
* **A crash never duplicates.**  A parent is tagged ``faircode.sync_state=incomplete`` when
  created and ``complete`` as its last write (after its ``children.json``); a child is
  ``FINISHED`` only after all its writes.  A later sync of that state keeps the finished
  children of the incomplete parent, deletes the unfinished ones, logs the missing ones --
  sharing against the base recorded on the parent at creation (``faircode.base_run_id``), so the
  same set as the crashed sync -- and completes the parent.
* **Concurrent syncs of one state log it once** (:mod:`faircode.record._claim`): only the sync
  holding the state's claim searches, creates and logs -- a file lock beside a SQLite store (which
  also serialises a new file's schema creation), a lease on a lock experiment (unique name) for a
  server -- and the others wait, then find the state complete.  A claimant killed mid-sync loses
  the claim (the kernel drops its file lock; its lease is taken over), and the next sync completes
  the state as above.  A complete parent's duplicate children (left by syncs before the claim
  existed) are deleted by the next sync of that state, one finished child per key kept.
* **Fast by batching.**  Against the embedded SQLite store every 25 children are one
  transaction of bulk inserts into MLflow's own tables, whatever their metric count
  (:func:`faircode.record._store.log_new_children`): the runs with all their tags, their audit's
  raw dataset as input (MLflow's dataset column of the child rows), their params, metrics and
  ``FINISHED`` status -- a child exists exactly when all of it is in.  Against a server a child
  costs four calls: create with all its tags, ``log_inputs``, ``log_batch`` in chunks, then
  terminate.  The parent has every audit's dataset as input, and the report, its tables,
  figures and summary as artifacts (``report/``).
* **The embedded SQLite store is switched to WAL journaling** (``PRAGMA journal_mode=WAL``, a
  documented, persistent property of the file; ``sqlite_wal=False`` leaves the file alone).
  MLflow commits several transactions per call, and in SQLite's default rollback-journal mode
  each commit costs several fsyncs (~20 ms each measured here); in WAL mode one fsync of the
  log, with the same durability at the default ``synchronous=FULL``.  WAL needs every process
  using the file on one host (no network filesystem), which is the embedded store's use.
  During a sync the connections also commit without an fsync each (``synchronous=NORMAL``,
  :func:`faircode.record._store.quick_commits`): a commit survives a crash of the process,
  and what a power loss rolls back is completed by the next sync (``bench/tracking.py
  --results results --fsync-each`` for the ratio).
* **Children are logged sequentially on SQLite** (one file, writes serialise; threads measured no
  faster; a crash leaves no child half-written) **and by a bounded thread pool against a
  server**, whose request handling overlaps.
* **Failures are one line.**  Anything the store or server does wrong becomes a
  :class:`TrackingError` whose message says why and how to re-sync; results on disk are only
  read, so they are intact.  Malformed results are a :class:`ResultsError` (bad input).
* The tracking URI, experiment name, DVC and git details are explicit arguments: this module
  reads no environment variable and discovers no project root.  The CLI and the ``track`` stage
  gather them (the default store is ``sqlite:///<project root>/mlflow.db``, absolute, so a DVC
  experiment run in a temporary copy logs into the project's store).
* MLflow's dataset digest column holds at most 36 characters: a dataset input's digest is the
  first 36 hex digits of the raw file's sha256; the full sha256 is the input's ``sha256`` tag and
  the child's ``dataset_sha256`` tag.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from faircode.record._claim import check_sqlite_store, claim_state, sqlite_path, store_lock
from faircode.record._parent import SyncContext, create_parent, name_frozen
from faircode.record._shared import (
    INDEX,
    INDEX_TAG,
    Sharing,
    dedupe_children,
    find_base,
    finished_children,
    log_children,
    record_sharing,
    recorded_sharing,
    share_with,
    shared_children,
    write_index,
)
from faircode.record._store import (
    TrackingError,
    check_server,
    dataset_input,
    ensure_experiment,
    log_batched,
    quick_commits,
    quiet_loggers,
    search_all,
    switch_to_wal,
)
from faircode.record.first_screen import SHARE_KEY, share_first_screen
from faircode.record.kinds import collect_children  # every task kind's children
from faircode.record.runs import (
    ChildRun,
    ResultsError,
    audit_folders,
    child_digest,
    datasets,
    recorded_config,
    report_files,
    results_digest,
)

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

__all__ = [
    "DEFAULT_EXPERIMENT",
    "ChildRun",
    "ResultsError",
    "SyncContext",
    "SyncReport",
    "TrackingError",
    "collect_children",
    "default_tracking_uri",
    "results_digest",
    "runs_url",
    "sync_results",
]

DEFAULT_EXPERIMENT = "faircode"
_HTTP_WORKERS = 2
SyncStatus = Literal["logged", "completed", "unchanged"]


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What a sync did: ``status`` is ``logged``, ``completed`` (a crashed one) or ``unchanged``.

    ``children_logged`` counts the children this sync logged; ``children_shared`` those of the
    parent it logged or completed that are not logged again, identical to the children of the
    parent ``base_run_id`` (0 and empty for an unchanged sync).
    """

    status: SyncStatus
    digest: str
    experiment_id: str
    parent_run_id: str
    children_logged: int
    children_total: int
    skipped: Mapping[str, str]
    seconds: float
    children_shared: int = 0
    base_run_id: str = ""


def default_tracking_uri(project_root: Path) -> str:
    """The embedded store ``sqlite:///<absolute project root>/mlflow.db``."""
    return f"sqlite:///{(Path(project_root).resolve() / 'mlflow.db').as_posix()}"


def runs_url(server: str, experiment_id: str) -> str:
    """The MLflow UI's runs table of an experiment (the "Model training" view, not GenAI),
    opened on the first screen of the latest sync (:mod:`faircode.record.first_screen`)."""
    return (f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs?workflowType="
            f"machine_learning&viewStateShareKey={SHARE_KEY}")


def sync_results(
    results: Path,
    *,
    tracking_uri: str,
    experiment: str = DEFAULT_EXPERIMENT,
    config: Mapping[str, Any] | None = None,
    context: SyncContext | None = None,
    artifact_location: str | None = None,
    health_timeout: float = 5.0,
    workers: int | None = None,
    sqlite_wal: bool = True,
    child_inputs: bool = True,
    fsync_each: bool = False,
    share_children: bool = True,
) -> SyncReport:
    """Log the results on disk as one parent run and its children, unless already logged.

    Parameters
    ----------
    results
        Folder of ``<audit>/`` result folders.
    tracking_uri
        MLflow store or server (``sqlite:///...``, ``http://host:port``).
    experiment
        Experiment name; created tagged ``mlflow.experimentKind=custom_model_development``.
    config
        The whole typed config of the pipeline state (the parent's params; part of the digest).
    context
        Git and DVC details for the parent's tags.
    artifact_location
        Artifact root of a newly created experiment (absolute; the default store's caller passes
        ``<project root>/mlartifacts``).
    health_timeout
        Seconds to wait for an HTTP server's ``/health`` before giving up.
    workers
        Threads logging child runs concurrently; ``None``: 2 against an HTTP server (whose
        request handling overlaps), 1 otherwise (the embedded SQLite store serialises writes,
        and threads measured no faster).  A failure leaves at most ``workers`` unfinished
        children on a server (none on the embedded SQLite store, which writes each
        :data:`faircode.record._shared.FINISH_CHUNK` children whole), which the next sync
        replaces.
    sqlite_wal
        Switch a ``sqlite:///`` store to WAL journaling first (see the module docstring).
    child_inputs
        Log each child's audit dataset as its input (MLflow's dataset column of the child rows);
        ``False`` saves one store call per child (``bench/tracking.py --no-child-inputs``).
    fsync_each
        SQLite: an fsync per commit, SQLite's default (``bench/tracking.py --fsync-each``);
        by default the sync's commits are not fsynced one by one (module docstring).
    share_children
        Log under a new parent only the children whose numbers differ from those of the
        experiment's latest indexed state (the others are shared: module docstring); ``False``
        logs every child under it (and completes a half-written parent so).

    Raises
    ------
    ResultsError
        The results folder does not hold what the grid writes.
    TrackingError
        The store or server failed; nothing on disk was changed.
    """
    if workers is None:
        workers = _HTTP_WORKERS if tracking_uri.startswith(("http://", "https://")) else 1
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers: expected an integer >= 1 or None, got {workers!r}")
    started = time.perf_counter()
    results = Path(results)
    check_sqlite_store(tracking_uri)  # a user's own database is refused before it is touched
    digest = results_digest(results, config=config)
    children, skipped = collect_children(results)
    with quiet_loggers():  # a failure is our one line, not MLflow's own log of it
        return _sync_store(results, digest, children, skipped, tracking_uri=tracking_uri,
                           experiment=experiment, config=config, context=context,
                           artifact_location=artifact_location, health_timeout=health_timeout,
                           workers=workers, sqlite_wal=sqlite_wal, child_inputs=child_inputs,
                           fsync_each=fsync_each, share_children=share_children,
                           started=started)


def _sync_store(results: Path, digest: str, children: list[ChildRun],
                skipped: Mapping[str, str], *, tracking_uri: str, experiment: str,
                config: Mapping[str, Any] | None, context: SyncContext | None,
                artifact_location: str | None, health_timeout: float, workers: int,
                sqlite_wal: bool, child_inputs: bool, fsync_each: bool,
                share_children: bool, started: float) -> SyncReport:
    """The store part of :func:`sync_results`: every failure one :class:`TrackingError`."""
    try:
        check_server(tracking_uri, health_timeout)
        quick = tracking_uri if sqlite_wal and not fsync_each else ""
        with store_lock(tracking_uri), quick_commits(quick):
            # SQLite: one sync (and schema creation) at a time, commits without an fsync each
            if sqlite_wal:
                switch_to_wal(tracking_uri)
            import mlflow
            from mlflow.tracking import MlflowClient

            try:
                client = MlflowClient(tracking_uri=tracking_uri)
                return _sync(client, results, digest, children, skipped, experiment=experiment,
                             config=recorded_config(results) if config is None else config,
                             context=context or SyncContext(),
                             artifact_location=artifact_location, started=started,
                             workers=workers, lease=sqlite_path(tracking_uri) is None,
                             child_inputs=child_inputs, share_children=share_children)
            except mlflow.exceptions.MlflowException as exc:
                raise TrackingError(_one_line(exc)) from None
    except TrackingError:
        raise
    except Exception as exc:  # a store driver or HTTP error: still one line, results intact
        raise TrackingError(f"{type(exc).__name__}: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(getattr(exc, "message", exc)).split())
    return text[:300] + ("..." if len(text) > 300 else "")


def _sync(client: MlflowClient, results: Path, digest: str, children: list[ChildRun],
          skipped: Mapping[str, str], *, experiment: str, config: Mapping[str, Any],
          context: SyncContext, artifact_location: str | None, started: float,
          workers: int, lease: bool, child_inputs: bool, share_children: bool) -> SyncReport:
    experiment_id = ensure_experiment(client, experiment, artifact_location)

    def complete() -> tuple[str, set[str]] | None:  # the parent, the keys logged under it
        found = search_all(client, experiment_id, f"tags.`faircode.digest` = '{digest}' and "
                        "tags.`faircode.sync_state` = 'complete'")
        parent = next((r for r in found if "mlflow.parentRunId" not in r.data.tags), None)
        return None if parent is None else (
            parent.info.run_id, dedupe_children(client, experiment_id, parent.info.run_id))

    found = complete()
    if found is None:  # claim it; the holder logs, the others wait and find it complete
        with claim_state(client, experiment=experiment, digest=digest, enabled=lease,
                         done=lambda: complete() is not None) as claim:
            done = None if not claim.held else _log_state(
                client, results, digest, children, skipped, experiment_id=experiment_id,
                config=config, context=context, started=started, workers=workers,
                check=claim.check, child_inputs=child_inputs, share_children=share_children)
            if done is not None:
                report, shared = done
                share_first_screen(client, experiment_id, children, digest=digest,
                                   shared=shared)
                return report
            found = complete()
    parent_id = found[0] if found else ""
    shared = shared_children(client, parent_id, children, found[1]) if found else {}
    share_first_screen(client, experiment_id, children, digest=digest, shared=shared)
    if parent_id and context.freeze_name:
        name_frozen(client, parent_id, context.freeze_name)
    return SyncReport("unchanged", digest, experiment_id, parent_id, 0, len(children),
                      dict(skipped), time.perf_counter() - started)


def _the_parent(client: MlflowClient, experiment_id: str, digest: str) -> Any | None:
    """The state's one parent (a complete one first), deleting any other with its children."""
    parents = [r for r in search_all(client, experiment_id, f"tags.`faircode.digest` = '{digest}'")
               if "mlflow.parentRunId" not in r.data.tags]
    complete = [r for r in parents if r.data.tags.get("faircode.sync_state") == "complete"]
    keep = complete[0] if complete else (parents[0] if parents else None)
    for extra in parents:  # a concurrent or crashed duplicate: never leave two of one state
        if extra is not keep:
            for child in search_all(client, experiment_id,
                                 f"tags.`mlflow.parentRunId` = '{extra.info.run_id}'"):
                client.delete_run(child.info.run_id)
            client.delete_run(extra.info.run_id)
    return keep


def _log_state(client: MlflowClient, results: Path, digest: str, children: list[ChildRun],
               skipped: Mapping[str, str], *, experiment_id: str, config: Mapping[str, Any],
               context: SyncContext, started: float, workers: int, check: Callable[[], None],
               child_inputs: bool, share_children: bool
               ) -> tuple[SyncReport, dict[str, str]] | None:
    """Log (or complete) the state's parent and the children it does not share; the caller
    holds the claim.  (The report, key -> run id of the shared children); None: the state was
    complete already."""
    from mlflow.entities import RunStatus

    keep = _the_parent(client, experiment_id, digest)
    if keep is not None and keep.data.tags.get("faircode.sync_state") == "complete":
        return None
    digests = {c.key: child_digest(c) for c in children}
    inputs = {a: dataset_input(a, p, sha) for a, (p, sha) in datasets(results).items()}
    if keep is not None:  # a half-written parent: completed against the base it records
        parent_id, done = keep.info.run_id, finished_children(client, experiment_id,
                                                              keep.info.run_id)
        sharing = (recorded_sharing(client, experiment_id, keep, children, digests)
                   if share_children else Sharing()).without(done)
        record_sharing(client, keep, sharing, len(children))
    else:
        done = {}
        base = find_base(client, experiment_id, digest) if share_children else None
        sharing = share_with(client, experiment_id, base, children, digests)
        parent_id = create_parent(client, experiment_id, results, digest, children, skipped,
                                   config=config, context=context,
                                   inputs=list(inputs.values()), sharing=sharing)
    todo = [c for c in children if c.key not in done and c.key not in sharing.shared]
    here = {**done, **log_children(client, todo, experiment_id=experiment_id,
                                    parent_id=parent_id, digest=digest, digests=digests,
                                    inputs=inputs if child_inputs else {}, workers=workers,
                                    check=check)}
    write_index(client, parent_id, {c.key: {"run_id": here.get(c.key) or sharing.shared[c.key],
                                            "digest": digests[c.key]} for c in children})
    for folder in audit_folders(results):
        client.log_artifacts(parent_id, str(folder), f"results/{folder.name}")
    for path in report_files(results):  # the report, its tables, figures and summary
        where = path.parent.relative_to(results).as_posix()
        client.log_artifact(parent_id, str(path), "report" if where == "." else f"report/{where}")
    log_batched(client, parent_id, params={}, metrics={},
                tags={INDEX_TAG: INDEX, "faircode.sync_state": "complete"})
    client.set_terminated(parent_id, RunStatus.to_string(RunStatus.FINISHED))
    return SyncReport("completed" if keep is not None else "logged", digest, experiment_id,
                      parent_id, len(todo), len(children), dict(skipped),
                      time.perf_counter() - started, children_shared=len(sharing.shared),
                      base_run_id=sharing.base_run_id), dict(sharing.shared)
