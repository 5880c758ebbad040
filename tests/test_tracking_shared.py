"""Tests of the sync's child sharing (faircode.record._shared) in real embedded SQLite stores.

A state is written by ``test_tracking.write_results`` (two audits, 40 children); a sweep value is
a copy whose every ``run.json`` records another ``decision_threshold`` and params digest, and
whose changed audit has new values in one attribute's fairness rows, and whose ``summary.csv``
has a new benchmark-wide q in every row (as a real value moves it for every audit).  The keys
expected to be logged under the new parent are read from the rows changed, not from the code
under test.
(Over HTTP: ``test_tracking.test_changed_threshold_adds_one_parent``.)
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from test_tracking import AUDITS, _csv_expectation, write_results

from faircode.core.digests import folder_digests
from faircode.record.child import ChildRun, child_digest
from faircode.record.tracking import SyncReport, TrackingError, sync_results

pytestmark = pytest.mark.integration

TOTAL = 40  # children of write_results' two audits


@pytest.fixture(scope="module", autouse=True)
def quiet_mlflow() -> Iterator[None]:
    """Set what ``faircode track`` sets: no run URL printed per run, no progress bar."""
    with pytest.MonkeyPatch.context() as patch:
        for key in ("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "MLFLOW_DISABLE_TELEMETRY"):
            patch.setenv(key, "true")
        patch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        yield


@dataclass(frozen=True)
class Store:
    """A fresh SQLite store and artifact root, and a client of it."""

    root: Path
    uri: str
    artifacts: str
    client: object

    def sync(self, results: Path, experiment: str, **options: object) -> SyncReport:
        return sync_results(results, tracking_uri=self.uri, experiment=experiment,
                            artifact_location=self.artifacts, **options)

    def children(self, parent_id: str) -> list:
        experiment = self.client.get_run(parent_id).info.experiment_id
        return self.client.search_runs([experiment], f"tags.`mlflow.parentRunId` = "
                                       f"'{parent_id}'", max_results=1000)

    def index(self, parent_id: str) -> dict[str, dict[str, str]]:
        folder = self.root / f"read-{parent_id}"
        folder.mkdir(exist_ok=True)
        path = self.client.download_artifacts(parent_id, "children.json", str(folder))
        return json.loads(Path(path).read_text())

    def by_key(self, parent_id: str) -> dict[str, str]:
        """Key -> run id of the children logged under a parent."""
        return {c.data.tags["faircode.child_key"]: c.info.run_id
                for c in self.children(parent_id)}


def _store(root: Path) -> Store:
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{root / 'mlflow.db'}"
    return Store(root, uri, (root / "artifacts").as_uri(), MlflowClient(tracking_uri=uri))


def sweep(results: Path, out: Path, *, threshold: float, change: str | None = None,
          attribute: str = "age") -> tuple[Path, set[str]]:
    """A copy of ``results`` as another sweep value (module docstring): (the copy, the keys of
    the children whose numbers it changes)."""
    shutil.copytree(results, out)
    changed: set[str] = set()
    for audit in AUDITS:
        folder = out / audit
        if audit == change:
            frame = pd.read_csv(folder / "fairness.csv", dtype=str, keep_default_na=False)
            rows = frame["protected_attribute"] == attribute
            frame.loc[rows, "value"] = [repr(0.5 + i / 1024) for i in range(int(rows.sum()))]
            frame.to_csv(folder / "fairness.csv", index=False)
            changed = {"|".join(("fairness", audit, *cell)) for cell in frame.loc[
                rows, ["strategy", "model", "protected_attribute"]].itertuples(index=False)}
        run = json.loads((folder / "run.json").read_text())
        run["config"]["decision_threshold"] = threshold
        run["state"] = {**run["state"],
                        "params_sha256": hashlib.sha256(repr(threshold).encode()).hexdigest()}
        run["files"] = folder_digests(folder)  # a state written so, not a damage
        (folder / "run.json").write_text(json.dumps(run, indent=2))
    # one audit's new p-values move the benchmark-wide q of every audit (the report's family)
    summary = pd.read_csv(out / "summary.csv", dtype=str, keep_default_na=False)
    summary["q_benchmark"] = [repr(i / (2 * len(summary))) for i in range(len(summary))]
    summary.to_csv(out / "summary.csv", index=False)
    return out, changed


@dataclass(frozen=True)
class Sweep:
    """State A (logged in full) and B (one audit's age rows changed: every age cell is
    informative, so each logs its new numbers) in experiment ``share``."""

    store: Store
    a: Path
    b: Path
    changed: set[str]
    first: SyncReport
    second: SyncReport


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Sweep:
    """Sync A, then B, into a fresh store."""
    store = _store(tmp_path_factory.mktemp("shared"))
    a = write_results(store.root / "a", seed=21)
    first = store.sync(a, "share")
    b, changed = sweep(a, store.root / "b", threshold=0.4, change=AUDITS[1])
    return Sweep(store, a, b, changed, first, store.sync(b, "share"))


def test_a_first_state_logs_and_indexes_every_child(swept: Sweep) -> None:
    """With no earlier state every child is logged, and children.json lists each at its run."""
    store, first = swept.store, swept.first
    assert (first.status, first.children_logged, first.children_shared) == ("logged", TOTAL, 0)
    here = store.by_key(first.parent_run_id)
    index = store.index(first.parent_run_id)
    assert len(here) == TOTAL and {k: e["run_id"] for k, e in index.items()} == here
    tags = store.client.get_run(first.parent_run_id).data.tags
    assert (tags["faircode.children_index"], tags["faircode.children_shared"],
            tags["faircode.children_logged"]) == ("children.json", "0", str(TOTAL))
    assert "faircode.base_run_id" not in tags


def test_a_sweep_value_logs_only_the_children_whose_numbers_differ(swept: Sweep) -> None:
    """B's parent holds exactly the children of the changed rows; the rest are shared with A
    (the benchmark-wide q moved for every row of summary.csv, and is no child's number)."""
    second = swept.second
    assert len(swept.changed) == 4
    assert set(swept.store.by_key(second.parent_run_id)) == swept.changed
    assert (second.status, second.children_logged, second.children_shared,
            second.children_total) == ("logged", 4, TOTAL - 4, TOTAL)
    assert second.base_run_id == swept.first.parent_run_id


def test_the_index_points_shared_keys_at_the_earlier_states_runs(swept: Sweep) -> None:
    """B's children.json lists every key: a shared one at A's child, a changed one at B's own,
    each with the digest its run is tagged with."""
    store = swept.store
    index = store.index(swept.second.parent_run_id)
    mine, earlier = store.by_key(swept.second.parent_run_id), store.by_key(
        swept.first.parent_run_id)
    assert set(index) == set(earlier)
    assert {k: e["run_id"] for k, e in index.items()} == {
        k: mine.get(k, run_id) for k, run_id in earlier.items()}
    for entry in index.values():
        held = store.client.get_run(entry["run_id"]).data.tags["faircode.child_digest"]
        assert held == entry["digest"]


def test_a_logged_child_holds_the_new_states_numbers(swept: Sweep) -> None:
    """A child logged under B has B's CSV numbers and B's threshold as param."""
    for child in swept.store.children(swept.second.parent_run_id):
        assert child.data.metrics == _csv_expectation(swept.b, child)
        assert child.data.params["decision_threshold"] == "0.4"


def test_the_parent_says_what_it_shares(swept: Sweep) -> None:
    """B's parent records its base and counts, and its note says what it holds."""
    tags = swept.store.client.get_run(swept.second.parent_run_id).data.tags
    assert (tags["faircode.base_run_id"], tags["faircode.children_shared"],
            tags["faircode.children_logged"]) == (swept.first.parent_run_id, "36", "4")
    assert (f"4 child runs logged here; 36 identical to parent "
            f"{swept.store.client.get_run(swept.first.parent_run_id).info.run_name} "
            f"({swept.first.parent_run_id})'s, not logged again: children.json lists every "
            "child's run.") in tags["mlflow.note.content"]


def test_the_first_screen_opens_on_children_logged_under_the_parent(swept: Sweep) -> None:
    """The experiment's shared view finds B's children of the changed audit, not 0 runs."""
    from faircode.record.first_screen import TAG

    store = swept.store
    experiment = swept.second.experiment_id
    view = json.loads(store.client.get_experiment(experiment).tags[TAG])
    found = store.client.search_runs([experiment], view["searchFilter"])
    assert f"tags.audit = '{AUDITS[1]}'" in view["searchFilter"]
    assert sorted(r.info.run_id for r in found) == sorted(store.by_key(
        swept.second.parent_run_id).values())


def test_a_resync_of_a_sharing_state_is_unchanged(swept: Sweep) -> None:
    """Syncing B again logs nothing and adds no run."""
    store = swept.store
    before = len(store.client.search_runs([swept.second.experiment_id], max_results=1000))
    again = store.sync(swept.b, "share")
    assert (again.status, again.parent_run_id, again.children_logged) == (
        "unchanged", swept.second.parent_run_id, 0)
    assert len(store.client.search_runs([swept.second.experiment_id],
                                        max_results=1000)) == before


def test_share_children_false_logs_every_child(swept: Sweep) -> None:
    """A full log puts every child under the new parent, whatever an earlier state holds."""
    store = swept.store
    store.sync(swept.a, "share-off")
    full = store.sync(swept.b, "share-off", share_children=False)
    assert (full.children_logged, full.children_shared, full.base_run_id) == (TOTAL, 0, "")
    here = store.by_key(full.parent_run_id)
    assert len(here) == TOTAL
    assert {k: e["run_id"] for k, e in store.index(full.parent_run_id).items()} == here


def test_a_state_with_every_number_equal_shares_every_child(swept: Sweep) -> None:
    """A sweep value changing no number logs no child; its first screen shows the shared runs."""
    from faircode.record.first_screen import TAG

    store = swept.store
    first = store.sync(swept.a, "share-all")
    same, changed = sweep(swept.a, store.root / "same", threshold=0.45)
    done = store.sync(same, "share-all")
    assert not changed and (done.children_logged, done.children_shared) == (0, TOTAL)
    assert store.children(done.parent_run_id) == []
    assert store.index(done.parent_run_id) == store.index(first.parent_run_id)
    view = json.loads(store.client.get_experiment(done.experiment_id).tags[TAG])
    found = store.client.search_runs([done.experiment_id], view["searchFilter"])
    assert found and {r.data.tags["mlflow.parentRunId"] for r in found} == {first.parent_run_id}


def test_a_shared_run_deleted_since_is_logged_again(swept: Sweep) -> None:
    """A child of the base deleted before the sync is logged under the new parent, not
    referenced."""
    store = swept.store
    first = store.sync(swept.a, "share-gone")
    key, gone = sorted(k for k in store.by_key(first.parent_run_id).items()
                       if k[0] not in swept.changed)[0]
    store.client.delete_run(gone)
    done = store.sync(swept.b, "share-gone")
    assert set(store.by_key(done.parent_run_id)) == swept.changed | {key}
    assert done.children_shared == TOTAL - 5
    assert store.index(done.parent_run_id)[key]["run_id"] != gone


def test_a_half_written_state_is_completed_against_its_recorded_base(
        swept: Sweep, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync of B dying after two children is completed against A -- the base recorded on B,
    not a state logged since -- with the same shared set and no duplicate."""
    from faircode.record import _shared

    store = swept.store
    first = store.sync(swept.a, "share-crash")
    monkeypatch.setattr(_shared, "FINISH_CHUNK", 1)  # a child a transaction
    original = _shared.log_new_children  # one child whole per call (a transaction)
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 2:
            raise ConnectionError("connection reset by peer")
        return original(*args, **kwargs)

    monkeypatch.setattr(_shared, "log_new_children", dying)
    with pytest.raises(TrackingError, match="connection reset"):
        store.sync(swept.b, "share-crash")
    monkeypatch.setattr(_shared, "log_new_children", original)
    other, _ = sweep(swept.a, store.root / "other", threshold=0.3, change=AUDITS[0],
                     attribute="age")
    assert store.sync(other, "share-crash").base_run_id == first.parent_run_id
    done = store.sync(swept.b, "share-crash")
    assert (done.status, done.children_logged, done.children_shared, done.base_run_id) == (
        "completed", 2, TOTAL - 4, first.parent_run_id)
    children = store.children(done.parent_run_id)
    assert sorted(c.data.tags["faircode.child_key"] for c in children) == sorted(swept.changed)
    assert {c.info.status for c in children} == {"FINISHED"}
    earlier = store.by_key(first.parent_run_id)
    index = store.index(done.parent_run_id)
    assert len(index) == TOTAL and all(index[k]["run_id"] == earlier[k] for k in earlier
                                       if k not in swept.changed)


def _child(**changes: object) -> ChildRun:
    base = {"key": "fairness|a|baseline|lr|sex", "audit": "a", "name": "a S0 LR sex",
            "tags": {"table": "fairness", "state.params_sha256": "b" * 64, "informative": "true"},
            "params": {"decision_threshold": "0.5"}, "metrics": {"dp": 0.1, "dp.lo": -0.02}}
    return ChildRun(**{**base, **changes})  # type: ignore[arg-type]


def test_the_digest_ignores_state_tags_and_params() -> None:
    """Identical numbers under another state identity and another config have one digest."""
    other = _child(tags={"table": "fairness", "state.params_sha256": "c" * 64,
                         "state.git_commit": "d" * 40, "informative": "true"},
                   params={"decision_threshold": "0.4", "seed": "7"})
    assert child_digest(other) == child_digest(_child())


def test_the_digest_changes_with_one_metric_or_tag() -> None:
    """A metric's last digit, a new metric or a non-state tag makes another digest."""
    digest = child_digest(_child())
    assert child_digest(_child(metrics={"dp": 0.10000000000000002, "dp.lo": -0.02})) != digest
    assert child_digest(_child(metrics={"dp": 0.1, "dp.lo": -0.02, "dp.hi": 0.2})) != digest
    assert child_digest(_child(tags={"table": "fairness", "informative": "false"})) != digest
