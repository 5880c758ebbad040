"""A parent's children: the ones logged under it and the ones it shares with an earlier state.

A sweep value changes a few audits' numbers; the other audits' tables are byte-identical to those
of a state already logged.  A new state's parent logs only the children whose numbers
(:func:`faircode.record.child.child_digest`, tagged ``faircode.child_digest`` on every child)
differ from those of its **base**, the most recently started complete parent of the experiment
that has an index, and references the others.  Every parent's artifact ``children.json`` (its
**index**, tagged ``faircode.children_index``) maps each child key of its state to
``{"run_id": ..., "digest": ...}`` of the run holding those numbers: a child logged under it or
one it shares -- which may have been logged under the base's base: an index points at the run,
never at another index.  mlflow is imported inside the functions.

Design decisions
----------------
* **The base is chosen once, when the parent is created**, and recorded on it
  (``faircode.base_run_id``, ``faircode.children_shared``, ``faircode.children_logged`` and a
  paragraph of its note).  A half-written parent is completed against the base it records, so
  the next sync recomputes the same shared set: a state logged since is never its base.
* **A shared entry is checked before it is referenced**: a run of the base's index deleted since
  (one search of the deleted runs per 100 entries) is logged again, never referenced; the
  parent's counts and note say what it holds.  The index lists only finished children with
  their digests, so the live runs are not searched (that loads all their metrics: 6.4 s for a
  sweep value's 760).
* **An unreadable index costs time, never correctness**: no base, every child logged.
* A child is the child of one parent (``mlflow.parentRunId``, ``faircode.parent_digest``): a
  shared one keeps its own parent's, so filtering by a state's digest lists the children logged
  under it; one cell across sweep values is ``tags.`faircode.child_key` = '<key>'``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faircode.record._store import NewChild, log_batched, log_new_children, search_all
from faircode.record.child import ChildRun

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

__all__ = ["BASE_TAG", "DIGEST_TAG", "FINISH_CHUNK", "INDEX", "INDEX_TAG", "LOGGED_TAG",
           "SHARED_TAG", "Sharing", "dedupe_children", "find_base", "finished_children",
           "log_children", "read_index", "record_sharing", "recorded_sharing", "share_with",
           "shared_children", "write_index"]

INDEX = "children.json"
"""The parent's artifact listing every child key's run (``{key: {"run_id", "digest"}}``)."""
INDEX_TAG = "faircode.children_index"
"""Set (to :data:`INDEX`) on a parent whose index is written; only such a parent is a base."""
BASE_TAG = "faircode.base_run_id"
SHARED_TAG = "faircode.children_shared"
LOGGED_TAG = "faircode.children_logged"
DIGEST_TAG = "faircode.child_digest"
_NOTE = "\n\nChildren: "  # the note's paragraph on what the parent holds starts so
_CHUNK = 100  # run ids per search
FINISH_CHUNK = 25
"""Children logged per store call (:func:`faircode.record._store.log_new_children`; on SQLite
one transaction): the children of one transaction share the index pages their keys touch."""


@dataclass(frozen=True, slots=True)
class Sharing:
    """What a parent shares: its base (run id and name; empty without one) and, per shared child
    key, the run holding its numbers."""

    base_run_id: str = ""
    base_name: str = ""
    shared: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.shared and not self.base_run_id:
            raise ValueError("Sharing: shared children without a base run id")

    def tags(self, total: int) -> dict[str, str]:
        """The parent's counts (and base) for a state of ``total`` children."""
        tags = {SHARED_TAG: str(len(self.shared)), LOGGED_TAG: str(total - len(self.shared))}
        return {**tags, BASE_TAG: self.base_run_id} if self.base_run_id else tags

    def note(self, total: int) -> str:
        """The parent note's paragraph on what it holds (appended to its note)."""
        text = f"{total - len(self.shared)} child runs logged here"
        if self.base_run_id:
            text += (f"; {len(self.shared)} identical to parent {self.base_name or '?'} "
                     f"({self.base_run_id})'s, not logged again")
        return f"{_NOTE}{text}: {INDEX} lists every child's run."

    def without(self, keys: Iterable[str]) -> Sharing:
        """The same base, ``keys`` (children logged under the parent) no longer shared."""
        drop = set(keys)
        return Sharing(self.base_run_id, self.base_name,
                       {k: v for k, v in self.shared.items() if k not in drop})


def find_base(client: MlflowClient, experiment_id: str, digest: str) -> Any | None:
    """The most recently started complete parent with an index, of another state than
    ``digest``; None when there is none."""
    found = client.search_runs(
        [experiment_id], f"tags.`{INDEX_TAG}` = '{INDEX}' and tags.`faircode.sync_state` = "
        f"'complete' and tags.`faircode.digest` != '{digest}'", max_results=1,
        order_by=["attributes.start_time DESC"])
    return found[0] if found else None


def share_with(client: MlflowClient, experiment_id: str, base: Any | None,
               children: Sequence[ChildRun], digests: Mapping[str, str]) -> Sharing:
    """Share every child whose key and digest ``base``'s index lists with a run that still holds
    those numbers (module docstring); no base or no readable index: share nothing."""
    if base is None:
        return Sharing()
    index = read_index(client, base.info.run_id)
    if index is None:
        return Sharing()
    wanted = {c.key: index[c.key]["run_id"] for c in children
              if c.key in index and index[c.key]["digest"] == digests[c.key]}
    held = _holding(client, experiment_id, {run_id: digests[key] for key, run_id in wanted.items()})
    return Sharing(str(base.info.run_id), str(base.info.run_name or ""),
                   {key: run_id for key, run_id in wanted.items() if run_id in held})


def recorded_sharing(client: MlflowClient, experiment_id: str, parent: Any,
                     children: Sequence[ChildRun], digests: Mapping[str, str]) -> Sharing:
    """The sharing of a half-written ``parent``: against the base it records, if still there."""
    from mlflow.exceptions import MlflowException

    base_id = parent.data.tags.get(BASE_TAG)
    if not base_id:
        return Sharing()
    try:
        base = client.get_run(base_id)
    except MlflowException:  # gone for good: nothing to share with
        return Sharing()
    if base.info.lifecycle_stage != "active" or base.info.experiment_id != experiment_id:
        return Sharing()
    return share_with(client, experiment_id, base, children, digests)


def record_sharing(client: MlflowClient, parent: Any, sharing: Sharing, total: int) -> None:
    """Make a half-written ``parent``'s counts, base and note say ``sharing`` (when they do not:
    a shared run deleted since its creation, or a full log asked for)."""
    tags = parent.data.tags
    wanted = sharing.tags(total)
    if all(tags.get(k) == v for k, v in wanted.items()) and (BASE_TAG in wanted) == (
            BASE_TAG in tags):
        return
    parent_id = parent.info.run_id
    if BASE_TAG in tags and BASE_TAG not in wanted:
        client.delete_tag(parent_id, BASE_TAG)
    note = tags.get("mlflow.note.content", "").split(_NOTE)[0] + sharing.note(total)
    log_batched(client, parent_id, params={}, metrics={},
                tags={**wanted, "mlflow.note.content": note})


def _holding(client: MlflowClient, experiment_id: str, wanted: Mapping[str, str]) -> set[str]:
    """The run ids of ``wanted`` (run id -> child digest) not deleted since the base's index
    listed them (a search of the experiment's deleted runs among them: MLflow's search loads
    every found run's metrics, 6.4 s for the 760 active runs of a sweep value against 0.08 s
    for the deleted ones).  A run removed for good by ``mlflow gc`` is not seen; its entry
    dangles as it would had it been removed after this sync."""
    from mlflow.entities import ViewType

    ids = sorted(wanted)
    deleted: set[str] = set()
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        quoted = ", ".join(f"'{run_id}'" for run_id in chunk)
        deleted.update(run.info.run_id for run in client.search_runs(
            [experiment_id], f"attributes.run_id IN ({quoted})",
            run_view_type=ViewType.DELETED_ONLY, max_results=len(chunk)))
    return set(ids) - deleted


def read_index(client: MlflowClient, run_id: str) -> dict[str, dict[str, str]] | None:
    """A parent's index; None when it has none or it is not one (a damaged or foreign file)."""
    from mlflow.exceptions import MlflowException

    with tempfile.TemporaryDirectory(prefix="faircode-index-") as folder:
        try:
            path = client.download_artifacts(run_id, INDEX, folder)
            index = json.loads(Path(path).read_text(encoding="utf-8"))
        except (MlflowException, OSError, ValueError):  # requests' errors are OSErrors
            return None
    if not isinstance(index, dict) or not all(
            isinstance(entry, dict) and isinstance(entry.get("run_id"), str)
            and isinstance(entry.get("digest"), str) for entry in index.values()):
        return None
    return index


def write_index(client: MlflowClient, parent_id: str, index: Mapping[str, Mapping[str, str]]
                ) -> None:
    """Log ``index`` as the parent's :data:`INDEX` (key-sorted JSON)."""
    client.log_text(parent_id, json.dumps(index, indent=1, sort_keys=True) + "\n", INDEX)


def finished_children(client: MlflowClient, experiment_id: str, parent_id: str
                      ) -> dict[str, str]:
    """Key -> run id of a half-written parent's finished children (one per key, earliest first);
    every other child of it (unfinished, or a second of one key) is deleted."""
    done: dict[str, str] = {}
    for child in search_all(client, experiment_id, f"tags.`mlflow.parentRunId` = '{parent_id}'"):
        key = child.data.tags.get("faircode.child_key")
        if child.info.status == "FINISHED" and key and key not in done:
            done[key] = child.info.run_id
        else:
            client.delete_run(child.info.run_id)
    return done


def dedupe_children(client: MlflowClient, experiment_id: str, parent_id: str) -> set[str]:
    """Delete all but one child per key of a complete parent (finished, earliest first); the
    keys of the children logged under it."""
    found = search_all(client, experiment_id, f"tags.`mlflow.parentRunId` = '{parent_id}'")
    kept: set[str] = set()
    for child in sorted(found, key=lambda r: (r.info.status != "FINISHED", r.info.start_time,
                                              r.info.run_id)):
        key = child.data.tags.get("faircode.child_key")
        if key in kept:
            client.delete_run(child.info.run_id)
        elif key:
            kept.add(key)
    return kept


def shared_children(client: MlflowClient, parent_id: str, children: Sequence[ChildRun],
                    here: set[str]) -> dict[str, str]:
    """Key -> run id of the children of a complete parent not logged under it (``here``: those
    logged), from its index; nothing to read when every child is logged under it."""
    if all(c.key in here for c in children):
        return {}
    index = read_index(client, parent_id) or {}
    return {c.key: index[c.key]["run_id"] for c in children
            if c.key not in here and c.key in index}


def log_children(client: MlflowClient, todo: list[ChildRun], *, experiment_id: str,
                  parent_id: str, digest: str, digests: Mapping[str, str],
                  inputs: Mapping[str, Any], workers: int, check: Callable[[], None]
                  ) -> dict[str, str]:
    """Log ``todo`` under the parent: sequentially, :data:`FINISH_CHUNK` children a store call
    (:func:`faircode.record._store.log_new_children`), or by ``workers`` threads one child each
    (a server); key -> run id of each."""

    def log(chunk: Sequence[ChildRun]) -> dict[str, str]:
        check()  # a holder that stalled past its lease stops here
        ids = log_new_children(client, experiment_id, [NewChild(
            child.name, {**child.tags, DIGEST_TAG: digests[child.key],
                         "faircode.parent_digest": digest, "mlflow.parentRunId": parent_id},
            child.params, child.metrics, inputs.get(child.audit)) for child in chunk])
        return {child.key: run_id for child, run_id in zip(chunk, ids, strict=True)}

    if workers == 1:
        return {key: run_id for at in range(0, len(todo), FINISH_CHUNK)
                for key, run_id in log(todo[at:at + FINISH_CHUNK]).items()}
    pool = ThreadPoolExecutor(max_workers=workers)
    try:  # the first failure cancels what has not started; started children may stay RUNNING
        futures = [pool.submit(log, [c]) for c in todo]
        return {key: run_id for future in futures for key, run_id in future.result().items()}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
