"""Tests of a deployed system in the manifest (``system:``): parsing, loading, store, validate."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import AUDITS, _skip_or_fail

from faircode.audit.data import load_audit
from faircode.audit.manifest import SCORE_SCALES, Manifest, load_manifest
from faircode.audit.prepared import load_prepared, prepare, save_prepared
from faircode.core.errors import DataError, ManifestError
from faircode.pipeline.cli import main
from faircode.stats.calibration import SCALES
from faircode.stats.groups import group_rates

# rows 1-8 are kept (group a/b, outcome present); row 9 is filtered out (group c)
RAW = Path("data", "raw", "toy", "toy.csv")
"""The toy raw file, below the project (``data/raw/<audit>/``)."""
CSV = """id,group,age,x,tool,risk,p,outcome
1,a,25,u,High,9,0.9,hi
2,b,40,v,Low,2,0.2,lo
3,a,33,u,Medium,6,0.6,hi
4,b,22,w,Low,3,0.3,lo
5,a,61,v,Medium,5,0.5,lo
6,b,19,w,High,8,0.8,hi
7,a,45,u,Low,1,0.1,lo
8,b,38,v,Low,4,0.4,hi
9,c,50,u,High,7,0.7,hi
"""
FLAGGED = [1, 0, 1, 0, 1, 1, 0, 0]  # tool in {Medium, High} on the kept rows
SYSTEM: dict[str, Any] = {
    "name": "tool",
    "title": "The tool",
    "decision": {"column": "tool", "isin": ["Medium", "High"]},
    "score": {"column": "risk", "scale": "ordinal"},
}


def doc(**system: Any) -> dict[str, Any]:
    """A valid manifest document over :data:`CSV` with the system block ``system``."""
    return {
        "name": "toy",
        "dataset": {"path": "../../data/raw/toy/toy.csv"},
        "test_size": 0.25,
        "row_filters": [{"column": "group", "isin": ["a", "b"]}],
        "target": {"column": "outcome", "method": "equals", "value": "hi"},
        "protected_attributes": [{"name": "grp", "type": "categorical", "column": "group",
                                  "disadvantaged_values": ["a"], "advantaged_values": ["b"]}],
        "core_features": ["age"],
        "proxy_features": ["x"],
        "system": system or copy.deepcopy(SYSTEM),
    }


def write(root: Path, document: dict[str, Any], csv: str = CSV) -> Path:
    """Write ``csv`` and ``document`` as ``root/audits/toy/audit.yaml``; return its path."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "data" / "raw" / "toy").mkdir(parents=True, exist_ok=True)
    (root / "data" / "raw" / "toy" / "toy.csv").write_text(csv)
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def manifest(root: Path, csv: str = CSV, **system: Any) -> Manifest:
    """Write and load the toy manifest."""
    return load_manifest(write(root, doc(**system), csv))


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    """A mutation setting the dotted ``path`` of the system block (``None`` deletes it)."""
    def mutate(block: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = block
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return mutate


# ------------------------------------------------------------------------------ parsing


def test_system_block_becomes_typed_records(tmp_path: Path) -> None:
    """name, title, the decision rule and the score with its scale are parsed into records."""
    m = manifest(tmp_path)
    assert m.system is not None
    assert (m.system.name, m.system.title) == ("tool", "The tool")
    assert (m.system.decision.column, m.system.decision.method) == ("tool", "isin")
    assert m.system.decision.values == ("Medium", "High")
    assert m.system.score is not None and m.system.score.scale == "ordinal"
    assert m.system_columns == ("tool", "risk")


def test_system_columns_are_read_but_not_named_columns(tmp_path: Path) -> None:
    """The system's columns are in read_columns, never in named or feature columns."""
    m = manifest(tmp_path)
    assert {"tool", "risk"}.isdisjoint(m.named_columns)
    assert m.read_columns[-2:] == ("tool", "risk")


def test_manifest_without_system_is_unchanged(tmp_path: Path) -> None:
    """Without the block there is no system and read_columns equals named_columns."""
    document = doc()
    del document["system"]
    m = load_manifest(write(tmp_path, document))
    assert m.system is None and m.read_columns == m.named_columns


def test_threshold_decision_needs_and_keeps_a_direction(tmp_path: Path) -> None:
    """A threshold rule is read with its direction and described with its operator."""
    m = manifest(tmp_path, name="tool", decision={"column": "risk", "threshold": 4,
                                                  "direction": "above"})
    assert m.system is not None and m.system.decision.describe() == "risk > 4"


def test_score_scales_are_the_calibration_scales() -> None:
    """The manifest's score scales are exactly the scales stats.calibration bins."""
    assert SCORE_SCALES == SCALES


SYSTEM_ERRORS = [
    ("unknown key", _set("colour", "red"), "system.colour",
     "expected one of the keys name, title, decision, score, got 'colour' (str)"),
    ("no decision", _set("decision", None), "system.decision",
     "expected a value (required key), got nothing"),
    ("two rules", _set("decision.equals", "High"), "system.decision",
     "expected exactly one rule of isin, equals, threshold, binary, got ('isin', 'equals') "
     "(tuple)"),
    ("no rule", _set("decision.isin", None), "system.decision",
     "expected exactly one rule of isin, equals, threshold, binary, got () (tuple)"),
    ("empty isin", _set("decision.isin", []), "system.decision.isin",
     "expected a non-empty list, got [] (list)"),
    ("direction with isin", _set("decision.direction", "above"), "system.decision.direction",
     "expected a direction only with threshold, got 'above' (str)"),
    ("unknown decision key", _set("decision.rule", "x"), "system.decision.rule",
     "expected one of the keys column, isin, equals, threshold, binary, direction"),
    ("no decision column", _set("decision.column", None), "system.decision.column",
     "expected a value (required key), got nothing"),
    ("no scale", _set("score.scale", None), "system.score.scale",
     "expected a value (required key), got nothing"),
    ("bad scale", _set("score.scale", "logit"), "system.score.scale",
     "expected one of ordinal, probability, got 'logit' (str)"),
    ("unknown score key", _set("score.bins", 10), "system.score.bins",
     "expected one of the keys column, scale, got 'bins' (str)"),
    ("bad name", _set("name", "the tool"), "system.name",
     "expected a folder- and shell-safe name (a letter or digit, then letters, digits, '_', "
     "'.' or '-'; at most 100 characters), got 'the tool' (str)"),
    ("grid name", _set("name", "random_forest"), "system.name",
     "expected a name that is not a grid model family, got 'random_forest' (str)"),
    ("decision is a feature", _set("decision.column", "age"), "system.decision.column",
     "expected a column the audit does not use as a core feature, got 'age' (str)"),
    ("decision is a proxy", _set("decision.column", "x"), "system.decision.column",
     "expected a column the audit does not use as a proxy feature, got 'x' (str)"),
    ("score is the target", _set("score.column", "outcome"), "system.score.column",
     "expected a column the audit does not use as the target column, got 'outcome' (str)"),
    ("decision is protected", _set("decision.column", "group"), "system.decision.column",
     "expected a column the audit does not use as a protected attribute's column, "
     "got 'group' (str)"),
]


@pytest.mark.parametrize(("mutate", "key_path", "message"), [c[1:] for c in SYSTEM_ERRORS],
                         ids=[c[0] for c in SYSTEM_ERRORS])
def test_bad_system_block_is_one_line_naming_file_and_key_path(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], None], key_path: str, message: str
) -> None:
    """Each malformed system block is one ManifestError line: file, key path, expected, got."""
    block = copy.deepcopy(SYSTEM)
    mutate(block)
    path = write(tmp_path, doc(**block))
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: {key_path}: {message}")


def test_threshold_without_direction_is_refused(tmp_path: Path) -> None:
    """A threshold rule has no default direction (> and >= are different decisions)."""
    path = write(tmp_path, doc(name="t", decision={"column": "risk", "threshold": 4}))
    with pytest.raises(ManifestError, match=r"system\.decision\.direction: expected one of "
                                            r"above, at_least with threshold \(no default\)"):
        load_manifest(path)


def test_system_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    """``system: compas`` is a one-line error, not a crash."""
    document = doc()
    document["system"] = "compas"
    with pytest.raises(ManifestError, match=r": system: expected a mapping, got 'compas'"):
        load_manifest(write(tmp_path, document))


# ------------------------------------------------------------------------------ loading


def test_load_audit_carries_the_decision_and_score_of_kept_rows(tmp_path: Path) -> None:
    """The decision is int8 0/1 and the score float64, one per kept row, in row order."""
    system = load_audit(manifest(tmp_path)).system
    assert system is not None
    assert system.decision.tolist() == FLAGGED and system.decision.dtype == np.int8
    assert system.score is not None and system.score.dtype == np.float64
    assert system.score.tolist() == [9, 2, 6, 3, 5, 8, 1, 4]
    assert (system.name, system.scale, system.rule) == (
        "tool", "ordinal", "tool isin ['Medium', 'High']")


def test_system_columns_never_reach_x(tmp_path: Path) -> None:
    """X and the encoder hold the feature columns only; the tool's columns are in raw."""
    data = load_audit(manifest(tmp_path))
    assert list(data.X.columns) == ["group", "age", "x"] == list(data.encoder.columns)
    assert {"tool", "risk"} <= set(data.raw.columns)


def test_system_changes_no_row_and_no_split(tmp_path: Path) -> None:
    """With and without the block, the rows, labels, X and split are identical."""
    with_system = load_audit(manifest(tmp_path / "a"))
    document = doc()
    del document["system"]
    without = load_audit(load_manifest(write(tmp_path / "b", document)))
    assert with_system.y.tolist() == without.y.tolist()
    pd.testing.assert_frame_equal(with_system.X, without.X)
    assert with_system.test_index.tolist() == without.test_index.tolist()


@pytest.mark.parametrize(("rule", "expected"), [
    ({"threshold": 5, "direction": "above"}, [1, 0, 1, 0, 0, 1, 0, 0]),
    ({"threshold": 5, "direction": "at_least"}, [1, 0, 1, 0, 1, 1, 0, 0]),
    ({"equals": "High"}, [1, 0, 0, 0, 0, 1, 0, 0]),
], ids=["above", "at_least", "equals"])
def test_decision_rules_are_the_targets_rules(tmp_path: Path, rule: dict[str, Any],
                                              expected: list[int]) -> None:
    """threshold is > (above) or >= (at_least); equals compares text, as for a target."""
    column = "risk" if "threshold" in rule else "tool"
    m = manifest(tmp_path, name="t", decision={"column": column, **rule})
    system = load_audit(m).system
    assert system is not None and system.decision.tolist() == expected


def test_probability_score_is_read(tmp_path: Path) -> None:
    """A probability score in [0, 1] is carried as given."""
    m = manifest(tmp_path, name="t", decision={"column": "tool", "equals": "High"},
                 score={"column": "p", "scale": "probability"})
    system = load_audit(m).system
    assert system is not None and system.score is not None
    assert system.score.tolist() == [0.9, 0.2, 0.6, 0.3, 0.5, 0.8, 0.1, 0.4]


def _data_error(tmp_path: Path, csv: str = CSV, **system: Any) -> str:
    with pytest.raises(DataError) as info:
        load_audit(manifest(tmp_path, csv, **system))
    assert "\n" not in str(info.value)
    return str(info.value)


def test_missing_decision_column_names_the_key_path_and_closest(tmp_path: Path) -> None:
    """A decision column absent from the file is one line naming manifest, key path, column."""
    message = _data_error(tmp_path, name="t", decision={"column": "tol", "equals": "High"})
    path = tmp_path / "audits" / "toy" / "audit.yaml"
    assert message == (f"{path}: system.decision.column: expected a column of toy.csv, "
                       "got 'tol' (str); closest: tool")


def test_missing_score_column_names_the_key_path(tmp_path: Path) -> None:
    """A score column absent from the file is one line naming system.score.column."""
    message = _data_error(tmp_path, name="t", decision={"column": "tool", "equals": "High"},
                          score={"column": "decile", "scale": "ordinal"})
    assert ": system.score.column: expected a column of toy.csv, got 'decile' (str)" in message


def test_text_score_names_line_column_and_value(tmp_path: Path) -> None:
    """A score that is not a number is refused at its line, naming column and value."""
    message = _data_error(tmp_path, CSV.replace("a,45,u,Low,1,", "a,45,u,Low,low,"))
    assert message == (f"{tmp_path / RAW}: line 8: column 'risk' (system.score.column): "
                       "expected a numeric score, got 'low' (str)")


def test_fractional_ordinal_score_is_refused(tmp_path: Path) -> None:
    """An ordinal score must be an integer level (one calibration bin per value)."""
    message = _data_error(tmp_path, CSV.replace("b,40,v,Low,2,", "b,40,v,Low,2.5,"))
    assert message.endswith("line 3: column 'risk' (system.score.column): expected an integer "
                            "score (scale ordinal), got 2.5 (float)")


def test_probability_score_outside_the_unit_interval_is_refused(tmp_path: Path) -> None:
    """A probability score of 1.5 is refused at its line."""
    message = _data_error(tmp_path, CSV.replace(",0.6,hi", ",1.5,hi"), name="t",
                          decision={"column": "tool", "equals": "High"},
                          score={"column": "p", "scale": "probability"})
    assert message.endswith("line 4: column 'p' (system.score.column): expected a score in "
                            "[0, 1] (scale probability), got 1.5 (float)")


def test_missing_score_on_a_kept_row_is_refused(tmp_path: Path) -> None:
    """A kept row without a score is an error (the system does not choose the audit's rows)."""
    message = _data_error(tmp_path, CSV.replace("b,22,w,Low,3,", "b,22,w,Low,,"))
    assert message.endswith("line 5: column 'risk' (system.score.column): expected a score in "
                            "every row, got a missing value")


def test_missing_decision_on_a_kept_row_is_refused(tmp_path: Path) -> None:
    """A kept row without a decision value is an error naming its line."""
    message = _data_error(tmp_path, CSV.replace("a,61,v,Medium,", "a,61,v,,"))
    assert message.startswith(f"{tmp_path / RAW}: line 6: column 'tool' "
                              "(system.decision.column): expected a decision value in every row")


def test_output_missing_on_a_dropped_row_is_fine(tmp_path: Path) -> None:
    """Row 9 is filtered out: its missing score and decision are never checked."""
    data = load_audit(manifest(tmp_path, CSV.replace("9,c,50,u,High,7,", "9,c,50,u,,,")))
    assert data.system is not None and data.system.decision.tolist() == FLAGGED


def test_decision_rule_matching_no_row_is_refused_with_the_columns_values(
    tmp_path: Path
) -> None:
    """A rule no kept row matches (a case typo) is an error listing the column's values."""
    message = _data_error(tmp_path, name="t", decision={"column": "tool",
                                                        "isin": ["medium", "high"]})
    assert message == (
        f"{tmp_path / 'audits' / 'toy' / 'audit.yaml'}: system.decision: expected a rule "
        "matching some of the audit's 8 rows, got none for tool isin ['medium', 'high'] (the "
        "column's values: 'Low', 'High', 'Medium')")


def test_decision_rule_matching_every_row_is_a_warning(tmp_path: Path) -> None:
    """A tool that flags everyone is loaded, with a warning for validate to print."""
    data = load_audit(manifest(tmp_path, name="t", decision={
        "column": "risk", "threshold": 0, "direction": "above"}))
    assert data.system is not None and data.system.decision.tolist() == [1] * 8
    assert any("matches every one of the audit's 8 rows" in w for w in data.warnings)


def test_listed_value_matching_no_row_is_a_warning(tmp_path: Path) -> None:
    """isin [Medium, Hgh] still flags the Medium rows and warns about 'Hgh'."""
    data = load_audit(manifest(tmp_path, name="t", decision={"column": "tool",
                                                              "isin": ["Medium", "Hgh"]}))
    assert data.system is not None and data.system.decision.tolist() == [0, 0, 1, 0, 1, 0, 0, 0]
    assert data.warnings == (f"{tmp_path / 'audits' / 'toy' / 'audit.yaml'}: "
                             "system.decision.isin[1]: 'Hgh' (str) matches no row of the audit",)


def test_threshold_on_a_text_column_names_line_and_value(tmp_path: Path) -> None:
    """A threshold rule on the text column tool is refused at its first text value."""
    message = _data_error(tmp_path, name="t", decision={"column": "tool", "threshold": 1,
                                                        "direction": "above"})
    assert message.endswith("line 2: column 'tool' (system.decision.column): expected a number "
                            "for a threshold rule, got 'High' (str)")


# ------------------------------------------------------------------------- store and CLI


def test_prepared_store_round_trips_the_system(tmp_path: Path) -> None:
    """prepare keeps the outputs aligned with prepared rows; the parquet store restores them."""
    m = manifest(tmp_path)
    prepared = prepare(load_audit(m))
    save_prepared(prepared, tmp_path / "store")
    back = load_prepared(tmp_path / "store", manifest=m)
    assert back.system is not None and prepared.system is not None
    assert back.system.decision.tolist() == FLAGGED
    assert back.system.score is not None and back.system.score.tolist() == [9, 2, 6, 3, 5, 8,
                                                                               1, 4]
    assert (back.system.name, back.system.title, back.system.scale, back.system.rule) == (
        prepared.system.name, prepared.system.title, "ordinal", prepared.system.rule)
    stored = pd.read_parquet(tmp_path / "store" / "rows.parquet")
    assert stored["system_decision"].dtype == np.int8
    assert "tool" not in pd.read_parquet(tmp_path / "store" / "features.parquet").columns


def test_missing_decision_column_exits_2_via_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """faircode validate exits 2 with the one-line error when the decision column is absent."""
    path = write(tmp_path, doc(name="t", decision={"column": "verdict", "equals": 1}))
    code = main(["validate", "--audits", str(tmp_path / "audits")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == (f"{path}: system.decision.column: expected a column of toy.csv, "
                           "got 'verdict' (str)")


def test_validate_prints_the_systems_selection_rate_and_score_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate shows the system's rule, its selection rate over the kept rows, its scores."""
    write(tmp_path, doc())
    assert main(["validate", "--audits", str(tmp_path / "audits")]) == 0
    out = capsys.readouterr().out
    assert ("  system tool: decision 1 = tool isin ['Medium', 'High']: selection rate 0.5000 "
            "(4 of 8 rows)") in out
    assert "  system tool: score risk (ordinal) from 1 to 9" in out


# ------------------------------------------------------------------------------ COMPAS


def test_compas_two_years_declares_the_tool_as_its_system() -> None:
    """The audit's system is the COMPAS tool: flagged = Medium/High, the decile an ordinal score."""
    m = load_manifest(AUDITS / "compas_two_years" / "audit.yaml")
    assert m.system is not None and m.system.name == "compas_tool"
    assert m.system.decision.describe() == "score_text isin ['Medium', 'High']"
    assert m.system.score is not None
    assert (m.system.score.column, m.system.score.scale) == ("decile_score", "ordinal")
    assert set(m.system_columns).isdisjoint(m.feature_columns)


def test_compas_system_reproduces_propublicas_truth_tables(mirror_extra: Path) -> None:
    """The loaded system decision gives ProPublica's Black and White tables count for count."""
    path = mirror_extra / "compas_two_years" / "compas-scores-two-years.csv"
    if not path.is_file():
        _skip_or_fail(f"no {path}")
    data = load_audit(load_manifest(AUDITS / "compas_two_years" / "audit.yaml"), path=path)
    assert data.system is not None
    race = data.disadvantaged["race"]
    table = {g.group: g.counts for g in group_rates(
        data.y, data.system.decision, {"African-American": race, "Caucasian": ~race})}
    assert table == {"African-American": (990, 805, 532, 1369),
                     "Caucasian": (1139, 349, 461, 505)}
    assert "decile_score" not in data.X.columns and "score_text" not in data.X.columns


def test_take_selects_the_outputs_of_given_rows(tmp_path: Path) -> None:
    """take(test_index) gives the decision and score of exactly those rows, in that order."""
    data = load_audit(manifest(tmp_path))
    assert data.system is not None and data.system.score is not None
    part = data.system.take(data.test_index)
    assert part.decision.tolist() == [FLAGGED[i] for i in data.test_index]
    assert part.score is not None
    assert part.score.tolist() == data.system.score[data.test_index].tolist()
