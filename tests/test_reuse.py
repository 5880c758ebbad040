"""Tests of faircode.evaluate.reuse: the content address of an evaluate step's inputs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from faircode.audit.manifest import Manifest, load_manifest
from faircode.core.config import BenchmarkConfig, config_record
from faircode.evaluate.reuse import (
    CODE,
    KEY,
    folder_digests,
    inputs_key,
    refresh_record,
    reusable,
    reuse_enabled,
)

REPO = Path(__file__).resolve().parents[1]
VERSIONS = {"numpy": "1"}


@pytest.fixture
def inputs(tmp_path: Path) -> list[Path]:
    """A prepared folder and one prediction part with a file each."""
    folders = [tmp_path / "prepared", tmp_path / "part"]
    for folder in folders:
        folder.mkdir()
        (folder / "a.parquet").write_bytes(b"rows")
    return folders


def manifest(name: str) -> Manifest:
    return load_manifest(REPO / "audits" / name / "audit.yaml")


def key(name: str, inputs: list[Path], changes: dict[str, object] | None = None) -> str:
    config = BenchmarkConfig().with_params({"run.jobs": 1, **(changes or {})})
    return inputs_key(manifest(name), config=config, inputs=inputs,
                      versions=VERSIONS)


def test_the_default_threshold_reaches_only_an_audit_without_a_decision_block(
    inputs: list[Path],
) -> None:
    """A new models.decision_threshold changes German credit's key (threshold rule) and not
    bank marketing's (its manifest declares base_rate)."""
    assert key("german_credit_lending", inputs) != key("german_credit_lending", inputs,
                                                       {"models.decision_threshold": 0.4})
    assert key("bank_marketing", inputs) == key("bank_marketing", inputs,
                                                {"models.decision_threshold": 0.4})


@pytest.mark.parametrize("changes", [{"stats.n_resamples": 10}, {"curves.thresholds": (0.5,)},
                                     {"degenerate.min_selection_rate": 0.02}])
def test_every_section_the_step_reads_is_in_the_key(inputs: list[Path], changes: dict) -> None:
    """stats, curves and degenerate values each change the key."""
    assert key("bank_marketing", inputs) != key("bank_marketing", inputs, changes)


def test_a_changed_input_byte_or_a_worker_count_changes_the_key_or_not(
    inputs: list[Path],
) -> None:
    """One changed byte of a prediction file is a new key; the worker count is not."""
    before = key("bank_marketing", inputs)
    assert key("bank_marketing", inputs, {"run.jobs": 2}) == before
    (inputs[1] / "a.parquet").write_bytes(b"rowz")
    assert key("bank_marketing", inputs) != before


def test_code_is_the_evaluate_stages_declared_deps() -> None:
    """CODE names exactly the faircode deps dvc.yaml declares for evaluate."""
    stage = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["evaluate"]
    deps = {d.removeprefix("faircode/") for d in stage["deps"] if d.startswith("faircode")}
    assert set(CODE) == deps


def write_results(folder: Path, run: dict) -> None:
    """Five one-line tables and a run.json recording ``run`` plus their digests as ``files``."""
    folder.mkdir(parents=True)
    for table in ("fairness", "performance", "intersectional", "counterfactual", "curves"):
        (folder / f"{table}.csv").write_text("a\n")
    (folder / "run.json").write_text(json.dumps({**run, "files": folder_digests(folder)}))


def test_folder_digests_are_every_file_but_run_json_by_relative_path(tmp_path: Path) -> None:
    """Nested files count under their relative path; run.json never does."""
    (tmp_path / "deployed").mkdir()
    (tmp_path / "deployed" / "groups.csv").write_text("g\n")
    (tmp_path / "fairness.csv").write_text("f\n")
    (tmp_path / "run.json").write_text("{}")
    assert folder_digests(tmp_path) == {"deployed/groups.csv": hashlib.sha256(b"g\n").hexdigest(),
                                        "fairness.csv": hashlib.sha256(b"f\n").hexdigest()}


def test_reusable_needs_the_key_and_exactly_the_recorded_files(tmp_path: Path) -> None:
    """A folder is reusable only when run.json records the key and the folder holds exactly
    the files it records, byte for byte, and the stage's other outputs exist."""
    folder = tmp_path / "results" / "x"
    write_results(folder, {KEY: "k", "config": {}})
    assert reusable(folder, key="k") is not None
    assert reusable(folder, key="other") is None
    assert reusable(folder, key="k", outputs=[tmp_path / "missing.json"]) is None
    (folder / "curves.csv").unlink()
    assert reusable(folder, key="k") is None


def test_a_leftover_or_edited_file_is_a_miss(tmp_path: Path) -> None:
    """A file another run left (a K = 2 stability.csv beside restored K = 1 tables) or one
    edited table makes the folder not reusable; without a files record nothing is reusable."""
    folder = tmp_path / "results" / "x"
    write_results(folder, {KEY: "k", "config": {}})
    (folder / "stability.csv").write_text("left over\n")
    assert reusable(folder, key="k") is None
    (folder / "stability.csv").unlink()
    (folder / "fairness.csv").write_text("b\n")
    assert reusable(folder, key="k") is None
    (folder / "fairness.csv").write_text("a\n")
    assert reusable(folder, key="k") is not None
    (folder / "run.json").write_text(json.dumps({KEY: "k", "config": {}}))
    assert reusable(folder, key="k") is None


def test_reuse_is_off_only_under_faircode_reuse_0() -> None:
    """FAIRCODE_REUSE=0 (verify) turns reuse off; unset or any other value leaves it on."""
    assert reuse_enabled({}) and reuse_enabled({"FAIRCODE_REUSE": "1"})
    assert not reuse_enabled({"FAIRCODE_REUSE": "0"})


def test_refresh_rewrites_config_and_provenance_only(tmp_path: Path) -> None:
    """The refreshed run.json keeps every other key (in order) and leaves no staging folder."""
    folder = tmp_path / "results" / "x"
    write_results(folder, {"audit": "x", "config": {"decision_threshold": 0.5},
                           "git_commit": "old", "cells": [1]})
    run = json.loads((folder / "run.json").read_text())
    config = BenchmarkConfig().with_params({"run.jobs": 1, "models.decision_threshold": 0.4})
    refresh_record(folder, run, config=config, provenance_record={"git_commit": "new"})
    record = json.loads((folder / "run.json").read_text())
    assert list(record) == ["audit", "config", "git_commit", "cells", "files"]
    assert record["config"] == config_record(config) and record["git_commit"] == "new"
    assert record["cells"] == [1]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["x"]
