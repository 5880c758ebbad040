"""Frozen states: records, refusals, and the cell-by-cell comparison behind ``verify``."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from faircode.core.config import config_record, load_params
from faircode.core.digests import folder_digests
from faircode.provenance.state import code_digest, params_digest
from faircode.record.freeze import (
    FreezeError,
    check_committed,
    compare_results,
    environment,
    environment_differences,
    freeze,
    list_freezes,
    load_freeze,
    matching_freeze,
    restore_tags,
    verify,
)

FAIRNESS = (
    "audit,strategy,model,protected_attribute,metric,value,ci_low,ci_high\n"
    "german,baseline,logistic_regression,age,demographic_parity,-0.125,-0.25,0.0\n"
    "german,baseline,logistic_regression,age,disparate_impact,0.8,0.6,1.0\n"
)


def _results(folder: Path, fairness: str = FAIRNESS, seconds: float = 1.0,
             state: dict | None = None) -> Path:
    (folder / "german").mkdir(parents=True)
    (folder / "german" / "fairness.csv").write_text(fairness)
    run = {"audit": "german", "config": {"n_resamples": 100}, "git_commit": "abc",
           "state": state or {"git_commit": "abc", "code_sha256": "0" * 64,
                              "inputs_dirty": False, "params_sha256": "1" * 64},
           "cells": [{"strategy": "baseline", "seconds": {"fit": seconds}}]}
    (folder / "german" / "run.json").write_text(json.dumps(run))
    return _record_files(folder)


def _record_files(folder: Path) -> Path:
    """Record ``german``'s files in its run.json, as the writer does (readers check them)."""
    path = folder / "german" / "run.json"
    run = json.loads(path.read_text())
    path.write_text(json.dumps({**run, "files": folder_digests(folder / "german")}))
    return folder


def _state_of(root: Path, **changes: object) -> dict:
    """The state a clean run at ``root`` records (its code and params.yaml digests)."""
    config = config_record(load_params(root / "params.yaml").config)
    return {"git_commit": "abc", "code_sha256": code_digest(root), "inputs_dirty": False,
            "params_sha256": params_digest(config), **changes}


def test_identical_folders_have_no_drift(tmp_path: Path) -> None:
    """Two byte-identical results folders compare as identical, file by file."""
    a, b = _results(tmp_path / "a"), _results(tmp_path / "b")
    drift, identical, files = compare_results(a, b)
    assert (drift, identical, files) == ([], 2, 2)


def test_one_changed_number_is_named_with_both_values(tmp_path: Path) -> None:
    """A single edited number is reported as exactly that cell, frozen and new value, |diff|."""
    a = _results(tmp_path / "a")
    b = _results(tmp_path / "b", FAIRNESS.replace("0.8,0.6", "0.75,0.6"))
    drift, identical, files = compare_results(a, b)
    assert identical == 1 and files == 2
    assert len(drift) == 1
    cell = drift[0]
    assert cell.file == "results/german/fairness.csv"
    assert cell.column == "value"
    assert "disparate_impact" in cell.row and "row 3" in cell.row
    assert (cell.frozen, cell.new) == ("0.8", "0.75")
    assert cell.difference == pytest.approx(0.05)
    assert "frozen 0.8, now 0.75 (|diff| 0.05)" in cell.describe()


def test_run_json_timings_are_not_drift(tmp_path: Path) -> None:
    """Wall-clock seconds and the re-run's commit differ between runs and are not compared."""
    a = _results(tmp_path / "a", seconds=1.0)
    b = _results(tmp_path / "b", seconds=7.5)
    drift, identical, _ = compare_results(a, b)
    assert drift == [] and identical == 2


def test_run_json_config_change_is_drift(tmp_path: Path) -> None:
    """A changed non-volatile run.json value is reported with its key path."""
    a = _results(tmp_path / "a")
    b = _results(tmp_path / "b")
    run = json.loads((b / "german" / "run.json").read_text())
    run["config"]["n_resamples"] = 200
    (b / "german" / "run.json").write_text(json.dumps(run))
    drift, _, _ = compare_results(a, b)
    assert [(d.column, d.frozen, d.new) for d in drift] == [("config.n_resamples", "100", "200")]


def test_missing_and_extra_files_are_drift(tmp_path: Path) -> None:
    """A file on one side only is reported, each direction."""
    a, b = _results(tmp_path / "a"), _results(tmp_path / "b")
    (a / "german" / "extra.csv").write_text("x\n1\n")
    (b / "german" / "run.json").unlink()
    found = {(d.file, d.frozen, d.new) for d in compare_results(a, b)[0]}
    assert found == {("results/german/extra.csv", "present", "missing"),
                     ("results/german/run.json", "present", "missing")}


def test_shape_change_is_one_drift(tmp_path: Path) -> None:
    """A CSV with a different number of rows is reported once, as a shape change."""
    a = _results(tmp_path / "a")
    b = _results(tmp_path / "b", FAIRNESS.rsplit("\n", 2)[0] + "\n")
    drift, _, _ = compare_results(a, b)
    assert [d.column for d in drift] == ["shape"]
    assert drift[0].frozen.startswith("2 rows") and drift[0].new.startswith("1 rows")


def test_environment_differences_name_each_package() -> None:
    """Version differences are listed one line per package; faircode itself is ignored."""
    frozen = {"python": "3.11.7", "packages": {"numpy": "2.4.6", "pandas": "3.1.1",
                                               "faircode": "0.1.0"}}
    now = {"python": "3.11.7", "packages": {"numpy": "2.4.7", "scipy": "1.16.0",
                                            "faircode": "0.2.0"}}
    assert environment_differences(frozen, now) == [
        "numpy: frozen 2.4.6, now 2.4.7",
        "pandas: frozen 3.1.1, now absent",
        "scipy: frozen absent, now 1.16.0",
    ]
    assert environment_differences(environment(), environment()) == []


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed git repository with results and the two DVC locks (dvc stubbed by ``true``)."""
    return make_repo(tmp_path)


def make_repo(tmp_path: Path) -> Path:
    """The repository of the ``repo`` fixture, in ``tmp_path / "repo"``."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "test@example.org")
    _git(root, "config", "user.name", "test")
    (root / "params.yaml").write_text("stats:\n  n_resamples: 100\n")
    _results(root / "results", state=_state_of(root))
    (root / "dvc.lock").write_text("schema: '2.0'\n")
    (root / "upstream").mkdir()
    (root / "upstream" / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n")
    (root / "audits" / "german").mkdir(parents=True)
    (root / "audits" / "german" / "audit.yaml").write_text("name: german\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "state")
    return root


# A stand-in for `dvc status --json` that reports an up-to-date pipeline / a stale stage.
CLEAN_DVC = ("sh", "-c", "echo '{\"check-params\": [\"always changed\"]}'", "dvc")
STALE_DVC = ("sh", "-c", "echo '{\"evaluate@german\": [{\"changed outs\": {}}]}'", "dvc")


def test_freeze_records_commits_and_tags(repo: Path) -> None:
    """freeze writes the record with every digest and the results' state, commits it and adds an
    annotated tag."""
    head = _git(repo, "rev-parse", "HEAD").strip()
    path = freeze("v0.1-paper", root=repo, dvc=CLEAN_DVC)
    record = json.loads(path.read_text())
    assert record["git_commit"] == head
    assert record["state"] == _state_of(repo)
    assert set(record["results"]) == {"results/german/fairness.csv", "results/german/run.json"}
    assert record["manifests"].keys() == {"german"}
    assert record["params"] == {"stats": {"n_resamples": 100}}
    assert record["dvc_locks"] == {  # both locks, each its file's sha256
        name: hashlib.sha256((repo / name).read_bytes()).hexdigest()
        for name in ("dvc.lock", "upstream/dvc.lock")}
    assert _git(repo, "cat-file", "-t", "v0.1-paper").strip() == "tag"
    assert _git(repo, "status", "--porcelain") == ""
    assert load_freeze("v0.1-paper", root=repo)["git_commit"] == head
    assert [r["name"] for r in list_freezes(root=repo)] == ["v0.1-paper"]


def test_freeze_refuses_a_dirty_tree(repo: Path) -> None:
    """Uncommitted changes are refused with a one-line reason naming the first change."""
    (repo / "params.yaml").write_text("stats:\n  n_resamples: 5\n")
    with pytest.raises(FreezeError, match=r"not clean \(1 change\(s\), first: M params.yaml\)"):
        freeze("x", root=repo, dvc=CLEAN_DVC)


def test_freeze_refuses_results_that_do_not_match_the_lock(repo: Path) -> None:
    """Stages dvc status lists as changed are named in the refusal."""
    with pytest.raises(FreezeError, match=r"do not match dvc.lock .*evaluate@german"):
        freeze("x", root=repo, dvc=STALE_DVC)


def test_freeze_refuses_a_bad_or_taken_name(repo: Path) -> None:
    """A name that is no valid tag, or one used already, is refused."""
    with pytest.raises(FreezeError, match="git tag name"):
        freeze("no spaces", root=repo, dvc=CLEAN_DVC)
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    with pytest.raises(FreezeError, match="exists"):
        freeze("v1", root=repo, dvc=CLEAN_DVC)


def test_load_freeze_names_known_states(repo: Path) -> None:
    """Verifying an unknown name lists the frozen states that exist."""
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    with pytest.raises(FreezeError, match=r"known: v1"):
        load_freeze("v2", root=repo)


def test_verify_identical_rerun_passes(repo: Path) -> None:
    """A re-run that reproduces every file bit for bit reports no drift and cleans up."""
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    report = verify("v1", root=repo, command=("true",))
    assert report.identical and report.files == 2 and report.identical_files == 2
    assert report.environment == ()
    assert "faircode-verify" not in _git(repo, "worktree", "list")


def test_verify_names_the_drifting_cell(repo: Path) -> None:
    """A re-run that produces one different number reports exactly that cell and both values."""
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    rerun = ("sh", "-c", "sed -i 's/0.8,0.6/0.7995,0.6/' results/german/fairness.csv")
    report = verify("v1", root=repo, command=rerun)
    assert not report.identical
    assert [d.describe() for d in report.drift] == [
        "results/german/fairness.csv: row 3 (baseline logistic_regression age "
        "disparate_impact): value: frozen 0.8, now 0.7995 (|diff| 0.0005)"
    ]


def test_verify_reports_a_failed_rerun(repo: Path) -> None:
    """A pipeline that fails in the worktree is one line with its exit code."""
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    with pytest.raises(FreezeError, match=r"failed \(exit 3\): boom"):
        verify("v1", root=repo, command=("sh", "-c", "echo boom; exit 3"))


def test_verify_reports_environment_before_numbers(repo: Path) -> None:
    """A package version differing from the frozen one is reported in the verify report."""
    path = freeze("v1", root=repo, dvc=CLEAN_DVC)
    record = json.loads(path.read_text())
    record["environment"]["packages"]["numpy"] = "0.0.1"
    path.write_text(json.dumps(record))
    report = verify("v1", root=repo, command=("true",))
    assert any(line.startswith("numpy: frozen 0.0.1, now ") for line in report.environment)


def test_drift_check_passes_on_identical_and_names_an_edited_number(tmp_path: Path) -> None:
    """The CI drift check: a re-run equal to the committed results passes; one edited committed
    number is reported as exactly that cell."""
    rerun = _results(tmp_path / "rerun")  # what "the code" produces
    root = tmp_path / "repo"
    _results(root / "results")  # the committed results, identical at first
    copy = ("sh", "-c", 'mkdir -p "$2" && cp -r "$0"/. "$2"', str(rerun))
    assert check_committed(["german"], root=root, command=copy)[:2] == ([], 2)
    committed = root / "results" / "german" / "fairness.csv"
    committed.write_text(committed.read_text().replace("-0.125,-0.25", "-0.126,-0.25"))
    _record_files(root / "results")  # results true to their record, unlike what the code gives
    drift, files, _ = check_committed(["german"], root=root, command=copy)
    assert files == 2
    assert [d.describe() for d in drift] == [
        "results/german/fairness.csv: row 2 (baseline logistic_regression age "
        "demographic_parity): value: frozen -0.126, now -0.125 (|diff| 0.001)"
    ]


def test_drift_check_refuses_missing_committed_results(tmp_path: Path) -> None:
    """An audit with no committed results folder is an error, not a pass."""
    rerun = _results(tmp_path / "rerun")
    copy = ("sh", "-c", 'mkdir -p "$2" && cp -r "$0"/. "$2"', str(rerun))
    with pytest.raises(FreezeError, match="expected committed results"):
        check_committed(["german"], root=tmp_path, command=copy)


def test_the_rendered_report_page_is_not_compared(tmp_path: Path) -> None:
    """report.html renders compared files plus its generation provenance: not a drift."""
    a, b = _results(tmp_path / "a"), _results(tmp_path / "b")
    (a / "report.html").write_text("<p>commit abc</p>")
    (b / "report.html").write_text("<p>commit def</p>")
    assert compare_results(a, b) == ([], 2, 2)


def _restate(root: Path, **changes: object) -> None:
    """Rewrite the committed run.json's state with ``changes`` and commit it."""
    path = root / "results" / "german" / "run.json"
    run = json.loads(path.read_text())
    run["state"] = _state_of(root, **changes)
    path.write_text(json.dumps(run))
    _git(root, "commit", "-qam", "restate")


def test_freeze_refuses_results_from_dirty_inputs(repo: Path) -> None:
    """Results whose state says their inputs were uncommitted are refused, naming the change."""
    _restate(repo, inputs_dirty=True, dirty_inputs=["M params.yaml"])
    with pytest.raises(FreezeError, match=r"results/german/run.json: state.inputs_dirty: "
                                          r"expected false .*got True \(M params.yaml\)"):
        freeze("x", root=repo, dvc=CLEAN_DVC)


def test_freeze_refuses_results_of_other_code(repo: Path) -> None:
    """Results whose code digest is not HEAD's are refused, naming both digests."""
    _restate(repo, code_sha256="f" * 64)
    with pytest.raises(FreezeError, match=r"state.code_sha256: expected [0-9a-f]{12} \(the code "
                                          r"at HEAD\), got ffffffffffff"):
        freeze("x", root=repo, dvc=CLEAN_DVC)


def test_freeze_refuses_results_of_other_params(repo: Path) -> None:
    """Results whose params digest is not params.yaml's (a `faircode run --flag`) are refused."""
    (repo / "params.yaml").write_text("stats:\n  n_resamples: 200\n")
    _git(repo, "commit", "-qam", "other params")
    with pytest.raises(FreezeError, match=r"state.params_sha256: expected .*\(params.yaml\)"):
        freeze("x", root=repo, dvc=CLEAN_DVC)


def test_freeze_refuses_results_without_a_state(repo: Path) -> None:
    """A run.json written before states were recorded cannot be frozen."""
    path = repo / "results" / "german" / "run.json"
    run = json.loads(path.read_text())
    del run["state"]
    path.write_text(json.dumps(run))
    _git(repo, "commit", "-qam", "old record")
    with pytest.raises(FreezeError, match=r"state: expected the state .*got none"):
        freeze("x", root=repo, dvc=CLEAN_DVC)


def test_restore_tags_recreates_a_missing_tag_on_the_record_commit(repo: Path) -> None:
    """A deleted freeze tag is re-created on the commit that added the record; an existing one
    is left alone."""
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    added = _git(repo, "rev-parse", "v1^{commit}").strip()
    _git(repo, "tag", "-d", "v1")
    assert restore_tags(root=repo) == [f"v1: tagged {added[:12]} (the commit that added "
                                       "freezes/v1.json)"]
    assert _git(repo, "rev-parse", "v1^{commit}").strip() == added
    assert _git(repo, "cat-file", "-t", "v1").strip() == "tag"
    assert restore_tags(root=repo) == [f"v1: tag exists (on {added[:12]}); left alone"]


def test_matching_freeze_names_the_record_of_these_results(repo: Path) -> None:
    """The freeze whose results are the files on disk is found; a changed file matches none."""
    assert matching_freeze(repo, repo / "results") is None
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    assert matching_freeze(repo, repo / "results") == "v1"
    fairness = repo / "results" / "german" / "fairness.csv"
    fairness.write_text(fairness.read_text().replace("0.8", "0.7"))
    assert matching_freeze(repo, repo / "results") is None


def test_verify_reports_a_code_digest_unlike_the_record(repo: Path) -> None:
    """verify recomputes the frozen commit's code digest; one unlike the record's comes first."""
    path = freeze("v1", root=repo, dvc=CLEAN_DVC)
    record = json.loads(path.read_text())
    record["state"]["code_sha256"] = "e" * 64
    path.write_text(json.dumps(record))
    report = verify("v1", root=repo, command=("true",))
    assert report.environment[0].startswith("code: frozen code_sha256 eeeeeeeeeeee, now ")
