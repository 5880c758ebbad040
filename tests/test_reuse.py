"""Tests of faircode.evaluate.reuse: the content address of an evaluate step's inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from faircode.audit.manifest import Manifest, load_manifest
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.reuse import CODE, KEY, inputs_key, refresh_record, reusable

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


def key(name: str, inputs: list[Path], **changes: object) -> str:
    config = BenchmarkConfig(**{"jobs": 1, **changes})  # type: ignore[arg-type]
    return inputs_key(manifest(name), config=config, inputs=inputs,
                      versions=VERSIONS)


def test_the_default_threshold_reaches_only_an_audit_without_a_decision_block(
    inputs: list[Path],
) -> None:
    """A new models.decision_threshold changes German credit's key (threshold rule) and not
    bank marketing's (its manifest declares base_rate)."""
    assert key("german_credit_lending", inputs) != key("german_credit_lending", inputs,
                                                       decision_threshold=0.4)
    assert key("bank_marketing", inputs) == key("bank_marketing", inputs,
                                                decision_threshold=0.4)


@pytest.mark.parametrize("changes", [{"n_resamples": 10}, {"curve_thresholds": (0.5,)},
                                     {"degenerate_min_selection_rate": 0.02}])
def test_every_section_the_step_reads_is_in_the_key(inputs: list[Path], changes: dict) -> None:
    """stats, curves and degenerate values each change the key."""
    assert key("bank_marketing", inputs) != key("bank_marketing", inputs, **changes)


def test_a_changed_input_byte_or_a_worker_count_changes_the_key_or_not(
    inputs: list[Path],
) -> None:
    """One changed byte of a prediction file is a new key; the worker count is not."""
    before = key("bank_marketing", inputs)
    assert key("bank_marketing", inputs, jobs=2) == before
    (inputs[1] / "a.parquet").write_bytes(b"rowz")
    assert key("bank_marketing", inputs) != before


def test_code_is_the_evaluate_stages_declared_deps() -> None:
    """CODE names exactly the faircode deps dvc.yaml declares for evaluate."""
    stage = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["evaluate"]["do"]
    deps = {d.removeprefix("faircode/") for d in stage["deps"] if d.startswith("faircode")}
    assert set(CODE) == deps


def write_results(folder: Path, run: dict) -> None:
    folder.mkdir(parents=True)
    for table in ("fairness", "performance", "intersectional", "counterfactual", "curves"):
        (folder / f"{table}.csv").write_text("a\n")
    (folder / "run.json").write_text(json.dumps(run))


def test_reusable_needs_the_key_and_every_table(tmp_path: Path) -> None:
    """A folder is reusable only when run.json records the key and the tables exist."""
    folder = tmp_path / "results" / "x"
    write_results(folder, {KEY: "k", "config": {"curve_thresholds": [0.5]}})
    assert reusable(folder, key="k") is not None
    assert reusable(folder, key="other") is None
    assert reusable(folder, key="k", outputs=[tmp_path / "missing.json"]) is None
    (folder / "curves.csv").unlink()
    assert reusable(folder, key="k") is None


def test_refresh_rewrites_config_and_provenance_only(tmp_path: Path) -> None:
    """The refreshed run.json keeps every other key (in order) and leaves no staging folder."""
    folder = tmp_path / "results" / "x"
    write_results(folder, {"audit": "x", "config": {"decision_threshold": 0.5},
                           "git_commit": "old", "cells": [1]})
    run = json.loads((folder / "run.json").read_text())
    config = BenchmarkConfig(jobs=1, decision_threshold=0.4)
    refresh_record(folder, run, config=config, provenance_record={"git_commit": "new"})
    record = json.loads((folder / "run.json").read_text())
    assert list(record) == ["audit", "config", "git_commit", "cells"]
    assert record["config"] == config.as_dict() and record["git_commit"] == "new"
    assert record["cells"] == [1]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["x"]
