"""Tests of faircode.audit.predictions_file and of load_audit's join key: a practitioner's own
predictions joined to an audit's rows on a key, and every bad file as one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from faircode.audit.data import AuditData, load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.outputs import RowKeys, array_decisions, array_scores
from faircode.audit.predictions_file import ExternalPredictions, read_predictions
from faircode.core.errors import DataError

# rows 1-8 are kept (group a/b); row 9 (group c) is dropped by the row filter
RAW = Path("data", "raw", "toy", "toy.csv")
"""The toy raw file, below the project (``data/raw/<audit>/``)."""
CSV = """id,group,age,tool,risk,outcome
1,a,25,High,9,hi
2,b,40,Low,2,lo
3,a,33,Medium,6,hi
4,b,22,Low,3,lo
5,a,61,Medium,5,lo
6,b,19,High,8,hi
7,a,45,Low,1,lo
8,b,38,Low,4,hi
9,c,50,High,7,hi
"""
FLAG = {1: 1, 2: 0, 3: 1, 4: 0, 5: 1, 6: 1, 7: 0, 8: 0, 9: 1}
PROB = {1: 0.9, 2: 0.2, 3: 0.6, 4: 0.3, 5: 0.5, 6: 0.8, 7: 0.1, 8: 0.4, 9: 0.7}


def audit(root: Path, csv: str = CSV, key: str = "id") -> AuditData:
    """Write and load the toy audit (with the tool as its system) keyed on ``key``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "data" / "raw" / "toy").mkdir(parents=True, exist_ok=True)
    (root / "data" / "raw" / "toy" / "toy.csv").write_text(csv)
    doc = {"name": "toy", "dataset": {"path": "../../data/raw/toy/toy.csv"}, "test_size": 0.25,
           "row_filters": [{"column": "group", "isin": ["a", "b"]}],
           "target": {"column": "outcome", "method": "equals", "value": "hi"},
           "protected_attributes": [{"name": "grp", "type": "categorical", "column": "group",
                                     "disadvantaged_values": ["a"],
                                     "advantaged_values": ["b"]}],
           "core_features": ["age"],
           "system": {"name": "tool", "decision": {"column": "tool", "isin": ["Medium", "High"]},
                      "score": {"column": "risk", "scale": "ordinal"}}}
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_audit(load_manifest(path), key=key)


@pytest.fixture
def keys(tmp_path: Path) -> RowKeys:
    """The toy audit's keys: ids 1-8 kept, 9 dropped."""
    data = audit(tmp_path / "audit")
    assert data.keys is not None
    return data.keys


def predictions(ids: list[int] | None = None) -> pd.DataFrame:
    """A predictions table for ``ids`` (default 1-9, shuffled): id, flag, prob."""
    ids = ids if ids is not None else [5, 9, 2, 8, 1, 7, 3, 6, 4]
    return pd.DataFrame({"id": ids, "flag": [FLAG[i] for i in ids],
                         "prob": [PROB[i] for i in ids]})


def write_csv(folder: Path, text: str, name: str = "p.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def read(path: Path, keys: RowKeys, **kwargs: object) -> ExternalPredictions:
    options: dict[str, object] = {"decision": "flag", "score": "prob", "scale": "probability"}
    options.update(kwargs)
    return read_predictions(path, key="id", rows=keys, **options)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ good files


def test_good_csv_is_aligned_with_the_audit_rows(tmp_path: Path, keys: RowKeys) -> None:
    """A shuffled file of ids 1-9 gives the kept rows' decisions and scores in row order."""
    path = tmp_path / "p.csv"
    predictions().to_csv(path, index=False)
    got = read(path, keys)
    assert got.positions.tolist() == list(range(8))
    assert got.decision is not None and got.decision.tolist() == [1, 0, 1, 0, 1, 1, 0, 0]
    assert got.score is not None and got.score.tolist() == [0.9, 0.2, 0.6, 0.3, 0.5, 0.8, 0.1,
                                                            0.4]
    assert (got.n_outside, got.n_missing, got.scale) == (1, 0, "probability")


def test_csv_and_parquet_give_identical_results(tmp_path: Path, keys: RowKeys) -> None:
    """The same table as CSV and as parquet reads to the same positions, decisions, scores."""
    predictions().to_csv(tmp_path / "p.csv", index=False)
    predictions().to_parquet(tmp_path / "p.parquet", index=False)
    a, b = read(tmp_path / "p.csv", keys), read(tmp_path / "p.parquet", keys)
    for field in ("positions", "decision", "score"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert a.sha256 != b.sha256


def test_row_order_of_the_file_does_not_matter(tmp_path: Path, keys: RowKeys) -> None:
    """Two orders of the same rows give the same aligned arrays (joined on the key)."""
    predictions([1, 2, 3, 4, 5, 6, 7, 8]).to_csv(tmp_path / "a.csv", index=False)
    predictions([8, 6, 4, 2, 7, 5, 3, 1]).to_csv(tmp_path / "b.csv", index=False)
    a, b = read(tmp_path / "a.csv", keys), read(tmp_path / "b.csv", keys)
    assert a.decision is not None and b.decision is not None
    assert a.decision.tolist() == b.decision.tolist()
    assert a.score is not None and b.score is not None and a.score.tolist() == b.score.tolist()


def test_parquet_string_ids_join_integer_audit_ids(tmp_path: Path, keys: RowKeys) -> None:
    """Keys are compared as text: '3' in the file is the audit's integer id 3."""
    frame = predictions()
    frame["id"] = frame["id"].astype(str)
    frame.to_parquet(tmp_path / "p.parquet", index=False)
    got = read(tmp_path / "p.parquet", keys, score=None, scale=None)
    assert got.decision is not None and got.decision.tolist() == [1, 0, 1, 0, 1, 1, 0, 0]
    assert got.score is None


def test_decision_alone_and_text_decisions(tmp_path: Path, keys: RowKeys) -> None:
    """A file with only a decision column of true/false text is read as 0/1."""
    frame = predictions()
    frame["flag"] = frame["flag"].map({1: "true", 0: "False"})
    frame.drop(columns="prob").to_csv(tmp_path / "p.csv", index=False)
    got = read(tmp_path / "p.csv", keys, score=None, scale=None)
    assert got.decision is not None and got.decision.tolist() == [1, 0, 1, 0, 1, 1, 0, 0]


def test_a_bad_value_on_a_dropped_row_is_ignored(tmp_path: Path, keys: RowKeys) -> None:
    """Row 9 is no audit row: its decision is never read, so 'maybe' there is no error."""
    text = predictions().to_csv(index=False).replace("9,1,0.7", "9,maybe,0.7")
    got = read(write_csv(tmp_path, text), keys)
    assert got.n_outside == 1 and got.decision is not None and got.decision.size == 8


def test_allow_partial_audits_only_the_covered_rows(tmp_path: Path, keys: RowKeys) -> None:
    """With allow_partial, rows 2 and 5 missing leave six positions and n_missing 2."""
    predictions([1, 3, 4, 6, 7, 8]).to_csv(tmp_path / "p.csv", index=False)
    got = read(tmp_path / "p.csv", keys, allow_partial=True)
    assert got.positions.tolist() == [0, 2, 3, 5, 6, 7] and got.n_missing == 2
    assert got.decision is not None and got.decision.tolist() == [1, 1, 0, 1, 0, 0]


def test_predictions_file_equals_the_manifest_systems_outputs(tmp_path: Path) -> None:
    """A file holding the tool's own decisions and deciles reads to exactly the system's arrays."""
    data = audit(tmp_path / "audit")
    raw = pd.read_csv(tmp_path / "audit" / "data" / "raw" / "toy" / "toy.csv")
    raw["flag"] = raw["tool"].isin(["Medium", "High"]).astype(int)
    raw.sample(frac=1.0, random_state=3)[["id", "flag", "risk"]].to_csv(tmp_path / "p.csv",
                                                                        index=False)
    assert data.keys is not None and data.system is not None and data.system.score is not None
    got = read_predictions(tmp_path / "p.csv", key="id", rows=data.keys, decision="flag",
                           score="risk", scale="ordinal")
    assert got.decision is not None and got.score is not None
    np.testing.assert_array_equal(got.decision, data.system.decision)
    np.testing.assert_array_equal(got.score, data.system.score)


# ------------------------------------------------------------------------------ bad files


GOOD = predictions().to_csv(index=False)
BAD_FILES: list[tuple[str, str, dict[str, object], str]] = [
    ("key column missing", GOOD.replace("id,", "idx,", 1), {},
     "{p}: key column: expected a column of p.csv, got 'id' (str); closest: idx"),
    ("decision column missing", GOOD.replace(",flag,", ",flagged,", 1), {},
     "{p}: decision column: expected a column of p.csv, got 'flag' (str); closest: flagged"),
    ("score column missing", GOOD, {"score": "probability"},
     "{p}: score column: expected a column of p.csv, got 'probability' (str); closest: prob"),
    ("duplicated key", GOOD.replace("8,0,0.4", "5,0,0.4"), {},
     "{p}: line 5: column 'id' (key): expected each key once, got 5 (int) again (first at "
     "line 2)"),
    ("unknown key", GOOD.replace("2,0,0.2", "99,0,0.2"), {},
     "{p}: line 4: column 'id' (key): expected a key of one of the audit's rows, got 99 (int)"),
    ("missing key value", GOOD.replace("2,0,0.2", ",0,0.2"), {},
     "{p}: line 4: column 'id' (key): expected a key in every row, got a missing value"),
    ("audit row missing", GOOD.replace("2,0,0.2\n", ""), {},
     "{p}: column 'id' (key): expected a row for each of the audit's 8 rows, got none for 1 of "
     "them, first '2' (str)"),
    ("non-binary decision", GOOD.replace("2,0,0.2", "2,2,0.2"), {},
     "{p}: line 4: column 'flag' (decision): expected a 0/1 decision (0/1, true/false, "
     "yes/no), got 2 (int)"),
    ("text decision", GOOD.replace("2,0,0.2", "2,maybe,0.2"), {},
     "{p}: line 4: column 'flag' (decision): expected a 0/1 decision (0/1, true/false, "
     "yes/no), got 'maybe' (str)"),
    ("missing decision", GOOD.replace("2,0,0.2", "2,,0.2"), {},
     "{p}: line 4: column 'flag' (decision): expected a decision in every row, got a missing "
     "value"),
    ("text score", GOOD.replace("2,0,0.2", "2,0,high"), {},
     "{p}: line 4: column 'prob' (score): expected a numeric score, got 'high' (str)"),
    ("infinite score", GOOD.replace("2,0,0.2", "2,0,inf"), {},
     "{p}: line 4: column 'prob' (score): expected a score in [0, 1] (scale probability), got "
     "inf (float)"),
    ("score above 1", GOOD.replace("2,0,0.2", "2,0,1.2"), {},
     "{p}: line 4: column 'prob' (score): expected a score in [0, 1] (scale probability), got "
     "1.2 (float)"),
    ("fractional ordinal score", GOOD, {"scale": "ordinal"},
     "{p}: line 2: column 'prob' (score): expected an integer score (scale ordinal), got 0.5 "
     "(float)"),
    ("neither output", GOOD, {"decision": None, "score": None},
     "{p}: expected a decision column and/or a score column, got neither"),
    ("score without scale", GOOD, {"scale": None},
     "{p}: score column 'prob': expected a scale of ordinal, probability, got None (NoneType)"),
    ("decision is the key", GOOD, {"decision": "id"},
     "{p}: decision column: expected a column other than the key column, got 'id' (str)"),
    ("header only", "id,flag,prob\n", {},
     "{p}: line 2: expected data rows below the header, got none"),
    ("ragged row", GOOD.replace("2,0,0.2", "2,0,0.2,extra"), {},
     "{p}: line 4: expected 3 fields as in the header, got 4"),
    ("repeated column name", GOOD.replace("id,flag,prob", "id,flag,flag", 1), {"score": None},
     "{p}: line 2: column 'flag' is named twice (columns 2 and 3) and the copies differ: '1' "
     "(str) and '0.5' (str); rename one of them"),
    ("empty file", "", {},
     "{p}: expected p.csv to parse as CSV (comma-separated, UTF-8, one header row), got "
     "EmptyDataError: No columns to parse from file"),
]


@pytest.mark.parametrize(("text", "options", "message"), [c[1:] for c in BAD_FILES],
                         ids=[c[0] for c in BAD_FILES])
def test_every_bad_file_is_one_exact_line_and_nothing_is_written(
    tmp_path: Path, keys: RowKeys, text: str, options: dict[str, object], message: str
) -> None:
    """Each bad predictions file raises its one-line DataError and leaves its folder as it was."""
    path = write_csv(tmp_path / "in", text)
    with pytest.raises(DataError) as info:
        read(path, keys, **options)
    assert str(info.value) == message.format(p=path)
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == ["p.csv"]


@pytest.mark.parametrize(("name", "make", "fragment"), [
    ("p.xlsx", lambda p: p.write_text("x"),
     "expected a file ending in .csv, .csv.gz, .csv.bz2, .csv.xz, .csv.zst, .parquet, .pq or a "
     "folder of .parquet files, got '.xlsx' (str)"),
    ("absent.csv", lambda p: None, "expected a predictions file, got no such file"),
    ("p.parquet", lambda p: p.write_text("not parquet"),
     "expected a parquet file, got ArrowInvalid: "),
], ids=["suffix", "absent", "not parquet"])
def test_unreadable_files_are_one_line(tmp_path: Path, keys: RowKeys, name: str,
                                       make: Callable[[Path], None], fragment: str) -> None:
    """A wrong suffix, an absent file and a corrupt parquet file are one line naming the file."""
    path = tmp_path / name
    make(path)
    with pytest.raises(DataError) as info:
        read(path, keys)
    assert str(info.value).startswith(f"{path}: {fragment}") and "\n" not in str(info.value)


def test_a_parquet_schema_naming_a_column_twice_is_one_line(tmp_path: Path,
                                                            keys: RowKeys) -> None:
    """Parquet keeps repeated names; the reader refuses them before reading a row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array([1, 2]), pa.array([0, 1]), pa.array([1, 0])],
                                 names=["id", "flag", "flag"])
    pq.write_table(table, tmp_path / "p.parquet")
    with pytest.raises(DataError) as info:
        read(tmp_path / "p.parquet", keys, score=None)
    assert str(info.value) == (f"{tmp_path / 'p.parquet'}: schema: expected each column name "
                               "once, got 'flag' (str) twice (columns 2 and 3)")


# ------------------------------------------------------------------------------ join key


def test_load_audit_key_is_unique_text_per_kept_row(tmp_path: Path) -> None:
    """load_audit(key='id') keeps each kept row's id as text, the dropped id apart."""
    data = audit(tmp_path)
    assert data.keys is not None
    assert data.keys.kept.tolist() == ["1", "2", "3", "4", "5", "6", "7", "8"]
    assert data.keys.dropped.tolist() == ["9"]
    assert "id" not in data.raw.columns and "id" not in data.X.columns


def test_missing_key_column_names_the_data_file_and_closest(tmp_path: Path) -> None:
    """A key that is no column of the raw file is one line naming the file and closest names."""
    with pytest.raises(DataError) as info:
        audit(tmp_path, key="idd")
    assert str(info.value) == (f"{tmp_path / RAW}: key: expected a column of toy.csv, "
                               "got 'idd' (str); closest: id")


def test_repeated_key_among_kept_rows_names_both_lines(tmp_path: Path) -> None:
    """Two kept rows with id 3 cannot be joined: the error names the repeat and its first line."""
    with pytest.raises(DataError) as info:
        audit(tmp_path, CSV.replace("4,b,22,", "3,b,22,"))
    assert str(info.value) == (f"{tmp_path / RAW}: line 5: column 'id' (key): expected "
                               "each key once, got 3 (int) again (first at line 4)")


def test_key_repeated_only_on_a_dropped_row_is_fine(tmp_path: Path) -> None:
    """Row 9 (dropped) may share a kept row's id: the kept row's key wins, nothing is dropped."""
    data = audit(tmp_path, CSV.replace("9,c,50,", "1,c,50,"))
    assert data.keys is not None and data.keys.dropped.tolist() == []


# ------------------------------------------------------------------------------ arrays


def test_arrays_are_checked_like_file_columns() -> None:
    """Array decisions and scores pass the file's checks; a bad value is named by position."""
    assert array_decisions(np.array([True, False, True])).tolist() == [1, 0, 1]
    assert array_scores([0.25, 1.0], scale="probability").tolist() == [0.25, 1.0]
    with pytest.raises(DataError, match=r"^y_pred\[2\]: expected a 0/1 decision \(0/1, "
                                        r"true/false, yes/no\), got 2 \(int\)$"):
        array_decisions([0, 1, 2], name="y_pred")
    with pytest.raises(DataError, match=r"^scores\[1\]: expected a score in \[0, 1\] \(scale "
                                        r"probability\), got inf \(float\)$"):
        array_scores([0.5, np.inf], scale="probability")
    with pytest.raises(DataError, match=r"^scores\[0\]: expected a score in every row, got a "
                                        r"missing value$"):
        array_scores([np.nan], scale="ordinal")
