"""Tests for bench/peer.py's manifest reduction to the seed system's (Fair-Code 2.0.0) spec.

The seed's keys below are copied by hand from its faircode/manifest.py (Manifest.from_dict and the
RowFilter, TargetSpec and ProtectedAttribute dataclasses), independently of the script's tables.
No test needs the seed's venv or the network.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from faircode.audit.manifest import discover_manifests

ROOT = Path(__file__).resolve().parents[1]
RAW = Path("/data/raw/example.csv")
DEFAULT_AUDITS = ("german_credit_lending", "insurance_denial", "compas")
# audits whose manifests say what the seed spec cannot: first_by filter, threshold/quantile 0.7
# targets, or a non-default dataset.read (separator, header, names)
INEXPRESSIBLE = ("bank_marketing", "communities_crime", "credit_default",
                 "healthcare_readmission", "student_performance")

SEED_TOP = {"name", "title", "dataset", "random_state", "test_size", "row_filters", "target",
            "protected_attributes", "core_features", "proxy_features"}
SEED_FILTER = {"column", "isin", "not_isin", "equals", "not_equals", "notna"}
SEED_TARGET = {"column", "method", "value", "values"}
SEED_ATTRIBUTE = {"name", "type", "column", "disadvantaged_values", "advantaged_values",
                  "threshold", "disadvantaged"}


def _load_script() -> Any:
    spec = importlib.util.spec_from_file_location("bench_peer", ROOT / "bench" / "peer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_peer"] = module
    spec.loader.exec_module(module)
    return module


peer = _load_script()


def _manifest(audit: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "audits" / audit / "audit.yaml").read_text())


def _shipped() -> list[str]:
    """The shipped binary manifests (a text, regression or multi-class audit's manifest has no
    seed counterpart: the seed spec audits yes/no decisions)."""
    return [p.parent.name for p in discover_manifests(ROOT / "audits")]


@pytest.mark.parametrize("audit", DEFAULT_AUDITS)
def test_default_audits_keep_only_seed_keys(audit: str) -> None:
    """A reduced default manifest holds no key the seed spec does not know, at any level."""
    reduced = peer.reduce_manifest(_manifest(audit), RAW)
    assert set(reduced) <= SEED_TOP
    assert set(reduced["dataset"]) == {"path"}
    assert set(reduced["target"]) <= SEED_TARGET
    for row_filter in reduced.get("row_filters", []):
        assert set(row_filter) <= SEED_FILTER
    for attribute in reduced["protected_attributes"]:
        assert set(attribute) <= SEED_ATTRIBUTE


@pytest.mark.parametrize("audit", DEFAULT_AUDITS)
def test_dataset_path_is_the_raw_file(audit: str) -> None:
    """The reduced manifest's dataset.path is the raw file given, as a string."""
    assert peer.reduce_manifest(_manifest(audit), RAW)["dataset"]["path"] == str(RAW)


@pytest.mark.parametrize("audit", DEFAULT_AUDITS)
def test_seed_required_keys_present(audit: str) -> None:
    """Every key the seed reads without a default is present, with its method's extra field."""
    reduced = peer.reduce_manifest(_manifest(audit), RAW)
    assert {"name", "dataset", "target", "protected_attributes", "core_features"} <= set(reduced)
    target = reduced["target"]
    extra = {"binary": set(), "equals": {"value"}, "isin": {"values"}, "above_median": set()}
    assert set(target) == {"column", "method"} | extra[target["method"]]
    assert all({"name", "type", "column"} <= set(a) for a in reduced["protected_attributes"])


@pytest.mark.parametrize("audit", DEFAULT_AUDITS)
def test_audited_definition_unchanged(audit: str) -> None:
    """Filters, attributes, features, seed and split size are those of the shipped manifest."""
    original = _manifest(audit)
    reduced = peer.reduce_manifest(original, RAW)
    for key in ("name", "random_state", "test_size", "protected_attributes", "core_features",
                "proxy_features"):
        assert reduced.get(key) == original.get(key), key
    assert reduced["row_filters"][:-1] == original.get("row_filters", [])
    assert {k: v for k, v in original["target"].items() if k != "favourable"} == reduced["target"]


@pytest.mark.parametrize("audit", DEFAULT_AUDITS)
def test_missing_target_rows_are_filtered_for_the_seed(audit: str) -> None:
    """The seed copy ends with a notna filter on the target column (faircode drops those rows)."""
    original = _manifest(audit)
    reduced = peer.reduce_manifest(original, RAW)
    assert reduced["row_filters"][-1] == {"column": original["target"]["column"], "notna": True}


def test_reduction_leaves_input_unchanged() -> None:
    """reduce_manifest does not modify the mapping it is given."""
    original = _manifest("compas")
    before = copy.deepcopy(original)
    peer.reduce_manifest(original, RAW)
    assert original == before


def test_reduced_manifest_round_trips_through_yaml() -> None:
    """The reduced mapping is plain YAML data: safe_dump then safe_load gives it back."""
    reduced = peer.reduce_manifest(_manifest("compas"), RAW)
    assert yaml.safe_load(yaml.safe_dump(reduced, sort_keys=False)) == reduced


def test_compas_notes_name_every_dropped_key() -> None:
    """The notes for compas name favourable, unit, counterfactual_axes and the provenance keys."""
    notes = peer.reduction_notes(_manifest("compas"))
    dropped = {note.split(" dropped:")[0] for note in notes if " dropped:" in note}
    assert dropped == {"dataset.sha256", "dataset.source", "dataset.unit", "target.favourable",
                       "counterfactual_axes"}


def test_favourable_one_is_noted_as_the_seed_convention() -> None:
    """German credit's favourable 1 is noted as the seed's own convention, not a sign flip."""
    notes = peer.reduction_notes(_manifest("german_credit_lending"))
    assert "target.favourable 1 dropped: the seed's convention too" in notes
    assert not any("opposite sign" in note for note in notes)


@pytest.mark.parametrize("audit", INEXPRESSIBLE)
def test_inexpressible_shipped_manifest_raises(audit: str) -> None:
    """A shipped manifest the seed cannot audit alike raises one line naming file and key."""
    where = f"audits/{audit}/audit.yaml"
    with pytest.raises(peer.ReductionError, match=rf"^{where}: (dataset\.read|row_filters|target)"
                       ) as caught:
        peer.reduce_manifest(_manifest(audit), RAW, where=where)
    assert "\n" not in str(caught.value)


def test_every_other_shipped_manifest_reduces() -> None:
    """Every shipped manifest not listed as inexpressible reduces to the seed's top-level keys."""
    for audit in _shipped():
        if audit not in INEXPRESSIBLE:
            assert set(peer.reduce_manifest(_manifest(audit), RAW)) <= SEED_TOP, audit


def test_first_by_filter_raises() -> None:
    """A first_by row filter (one row per unit) has no seed equivalent and raises."""
    doc = _manifest("german_credit_lending")
    doc["row_filters"] = [{"column": "age", "first_by": "duration"}]
    with pytest.raises(peer.ReductionError, match=r"row_filters\[0\]\.first_by"):
        peer.reduce_manifest(doc, RAW)


def test_threshold_target_raises() -> None:
    """A threshold target has no seed equivalent and raises naming target.method."""
    doc = _manifest("german_credit_lending")
    doc["target"] = {"column": "duration", "method": "threshold", "threshold": 12,
                     "direction": "above"}
    with pytest.raises(peer.ReductionError, match=r"target\.method: expected .* got 'threshold'"):
        peer.reduce_manifest(doc, RAW)


def test_median_quantile_target_becomes_above_median() -> None:
    """A quantile 0.5 'above' target maps to the seed's above_median on the same column."""
    doc = _manifest("insurance_denial")
    doc["target"] = {"column": "claim", "method": "quantile", "quantile": 0.5,
                     "direction": "above"}
    assert peer.reduce_manifest(doc, RAW)["target"] == {"column": "claim",
                                                         "method": "above_median"}


def test_other_quantile_target_raises() -> None:
    """A quantile target other than 0.5 'above' raises."""
    doc = _manifest("insurance_denial")
    doc["target"] = {"column": "claim", "method": "quantile", "quantile": 0.5,
                     "direction": "at_least"}
    with pytest.raises(peer.ReductionError, match=r"target\.method"):
        peer.reduce_manifest(doc, RAW)


def test_default_read_options_are_dropped() -> None:
    """dataset.read options equal to pandas' defaults are dropped, not refused."""
    doc = _manifest("german_credit_lending")
    doc["dataset"]["read"] = {"separator": ",", "header": 0, "encoding": "utf-8", "missing": []}
    assert peer.reduce_manifest(doc, RAW)["dataset"] == {"path": str(RAW)}


def test_missing_markers_raise() -> None:
    """Extra missing-value markers change the audited values and raise."""
    doc = _manifest("german_credit_lending")
    doc["dataset"]["read"] = {"missing": ["?"]}
    with pytest.raises(peer.ReductionError, match=r"dataset\.read\.missing"):
        peer.reduce_manifest(doc, RAW)


def test_missing_peer_venv_is_one_line_exit_2(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Without <venv>/bin/faircode the script exits 2 with one line saying how to create it."""
    with pytest.raises(SystemExit) as caught:
        peer.main(["--peer-venv", str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert err.count("\n") == 1
    assert "pip install 'faircode[benchmark]==2.0.0'" in err
