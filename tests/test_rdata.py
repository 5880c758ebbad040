"""Tests of R data in a manifest: ``dataset.object``, the bounded reader, its one-line errors.

The fixtures are written by ``tests/rda_writer.py`` (R's XDR serialisation, from the format
itself: there is no R on the test machines), so every byte of a fixture is known.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import AUDITS, _skip_or_fail
from rda_writer import NA, RVector, character, data_frame, factor, rda

from faircode.audit import _data_rdata
from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.core.errors import DataError, ManifestError
from faircode.pipeline.cli import main

COLUMNS: dict[str, RVector] = {
    "group": factor(["a", "b", "a", "b", "a", "b", NA, "a"], ["b", "a"]),  # R's level order
    "grade": RVector("integer", [1, 2, 3, NA, 5, 2, 4, 1]),
    "score": RVector("double", [0.5, 1.5, NA, 2.5, 3.0, 0.1, 0.2, 0.3]),
    "flag": RVector("logical", [1, 0, NA, 1, 0, 1, 0, 1]),
    "note": character("u", NA, "w", "x", "y", "z", "u", "v"),
    "outcome": factor(["hi", "lo", "hi", "lo", "lo", "hi", "hi", "lo"], ["lo", "hi"]),
}
FRAME = data_frame(COLUMNS)
OBJECTS = {"people": FRAME, "other": RVector("double", [1.0, 2.0])}
DOC: dict[str, Any] = {
    "name": "toy",
    "dataset": {"path": "../../data/raw/toy/toy.rda", "object": "people"},
    "test_size": 0.25,
    "target": {"column": "outcome", "method": "equals", "value": "hi"},
    "protected_attributes": [{"name": "grp", "type": "categorical", "column": "group",
                              "disadvantaged_values": ["a"], "advantaged_values": ["b"]}],
    "core_features": ["grade", "score", "flag"],
}


def write(root: Path, data: bytes, document: dict[str, Any] | None = None) -> Path:
    """Write ``data`` as ``root/data/raw/toy/toy.rda`` (where fetch may write it) and the
    manifest as ``root/audits/toy/audit.yaml``."""
    (root / "data" / "raw" / "toy").mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    (root / "data" / "raw" / "toy" / "toy.rda").write_bytes(data)
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document or DOC, sort_keys=False))
    return path


def read(path: Path, name: str = "people") -> pd.DataFrame:
    return _data_rdata.read_rdata(path, object_name=name, where="m.yaml: dataset")


# ------------------------------------------------------------------------------ reading


@pytest.mark.parametrize("compression", ["gzip", "bzip2", "xz", "none"])
def test_every_save_compression_reads_the_same_frame(tmp_path: Path, compression: str) -> None:
    """gzip, bzip2, xz and uncompressed save() files give the same 8 x 6 data frame."""
    path = tmp_path / "f.rda"
    path.write_bytes(rda(OBJECTS, compression=compression))
    frame = read(path)
    assert frame.shape == (8, 6)
    assert list(frame.columns) == ["group", "grade", "score", "flag", "note", "outcome"]
    assert frame["score"].iloc[:2].tolist() == [0.5, 1.5]


def test_factors_become_categoricals_with_their_levels_in_r_order(tmp_path: Path) -> None:
    """A factor is a categorical whose categories are R's levels, in R's order, not sorted."""
    path = tmp_path / "f.rda"
    path.write_bytes(rda(OBJECTS))
    group = read(path)["group"]
    assert isinstance(group.dtype, pd.CategoricalDtype)
    assert list(group.cat.categories) == ["b", "a"] and not group.cat.ordered
    assert group.iloc[:2].tolist() == ["a", "b"]


def test_r_missing_values_stay_missing_in_every_type(tmp_path: Path) -> None:
    """NA in a factor, an integer, a double, a logical and a character column is missing."""
    path = tmp_path / "f.rda"
    path.write_bytes(rda(OBJECTS))
    frame = read(path)
    assert frame.isna().sum().to_dict() == {"group": 1, "grade": 1, "score": 1, "flag": 1,
                                            "note": 1, "outcome": 0}
    assert pd.isna(frame["group"].iloc[6]) and pd.isna(frame["grade"].iloc[3])
    assert math.isnan(frame["score"].iloc[2])
    assert str(frame["grade"].dtype) == "Int32" and str(frame["flag"].dtype) == "boolean"


def test_a_manifest_reads_the_named_object_and_numbers_its_rows(tmp_path: Path) -> None:
    """load_audit reads the object: the missing group is unclassified, the others are kept."""
    data = load_audit(load_manifest(write(tmp_path, rda(OBJECTS))))
    assert data.steps == (("loaded", 8), ("target derivable", 8),
                          ("classified by every attribute", 7))
    assert data.y.tolist() == [1, 0, 1, 0, 0, 1, 0]
    assert data.disadvantaged["grp"].tolist() == [True, False, True, False, True, False, True]
    assert data.X["grade"].tolist()[3] == 2.0  # NA -> the median of 1, 2, 3, 5, 2, 1


def test_row_errors_name_the_r_data_frames_rows(tmp_path: Path) -> None:
    """A malformed value is named by its row of the data frame (``row 2``)."""
    frame = data_frame({**COLUMNS,
                        "score": RVector("double", [0.5, float("inf"), 1, 2, 3, 4, 5, 6])})
    path = write(tmp_path, rda({"people": frame}))
    with pytest.raises(DataError) as info:
        load_audit(load_manifest(path))
    raw = tmp_path / "data" / "raw" / "toy" / "toy.rda"
    assert str(info.value) == (f"{raw}: row 2: column 'score' "
                               "(core_features[1]): expected a finite number, got inf (float)")


# ------------------------------------------------------------------------------ bad files


def _one_line(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str],
              document: dict[str, Any] | None = None) -> str:
    """`faircode validate` on the R file ``data``: exit 2 and the one line it printed."""
    write(tmp_path, data, document)
    code = main(["validate", "--audits", str(tmp_path / "audits")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err
    return err


def test_a_file_that_is_not_r_data_is_one_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A CSV saved as .rda: exit 2 naming the manifest, dataset.path and the file's first bytes."""
    err = _one_line(tmp_path, b"group,outcome\na,hi\n", capsys)
    manifest = tmp_path / "audits" / "toy" / "audit.yaml"
    assert err == (f"{manifest}: dataset.path: expected R data written by save() (header RDX2 "
                   "or RDX3, optionally gzip, bzip2 or xz compressed), got toy.rda starting "
                   "b'group,outcom' (bytes)")


@pytest.mark.parametrize("compression", ["gzip", "bzip2", "xz"])
def test_a_compressed_stream_cut_short_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], compression: str) -> None:
    """The first half of a compressed save() file: exit 2, 'cut short', the bytes read."""
    whole = rda(OBJECTS, compression=compression)
    half = whole[: len(whole) // 2]
    err = _one_line(tmp_path, half, capsys)
    assert err.endswith(f"dataset.path: expected a complete {compression} stream (R data), got "
                        f"toy.rda cut short after {len(half):,} compressed bytes")


def test_an_uncompressed_stream_cut_short_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An uncompressed save() file cut in half fails to parse: exit 2, one line."""
    whole = rda(OBJECTS, compression="none")
    err = _one_line(tmp_path, whole[: len(whole) // 2], capsys)
    assert "dataset.path: expected a complete R data stream, got toy.rda cut short or " \
           "malformed (" in err


def test_a_corrupt_compressed_stream_is_one_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """gzip magic followed by garbage: exit 2, 'corrupt' and zlib's reason."""
    err = _one_line(tmp_path, b"\x1f\x8b" + b"garbage" * 10, capsys)
    assert "dataset.path: expected a valid gzip stream (R data), got toy.rda corrupt (" in err


def test_a_missing_object_lists_the_objects_present(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """dataset.object naming no object of the file: exit 2 and the objects the file holds."""
    document = copy.deepcopy(DOC)
    document["dataset"]["object"] = "People"
    err = _one_line(tmp_path, rda(OBJECTS), capsys, document)
    assert err.endswith("dataset.object: expected an object of toy.rda, got 'People' (str); "
                        "the file holds: people, other")


def test_an_object_that_is_no_data_frame_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Naming a plain double vector: exit 2, 'the name of a data frame', its R type."""
    document = copy.deepcopy(DOC)
    document["dataset"]["object"] = "other"
    err = _one_line(tmp_path, rda(OBJECTS), capsys, document)
    assert err.endswith("dataset.object: expected the name of a data frame, got 'other' (str), "
                        "an R double")


@pytest.mark.parametrize(("column", "r_type"), [
    (RVector("complex", [1j] * 8), "an R complex"),
    (RVector("double", [1.0] * 8, (("units", character("days")),
                                   ("class", character("difftime")))),
     "an R double of class difftime"),
    (RVector("list", [RVector("double", [1.0])] * 8), "an R list"),
])
def test_an_unsupported_column_type_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], column: RVector,
        r_type: str) -> None:
    """A complex, a difftime-classed or a list column: exit 2 naming the column and its R type."""
    frame = data_frame({**COLUMNS, "odd": column})
    err = _one_line(tmp_path, rda({"people": frame}), capsys)
    assert err.endswith("dataset.object: expected a data frame of logical, integer, double, "
                        "character, factor, Date or POSIXct columns, got column 'odd' of "
                        f"'people', {r_type}")


def test_a_stream_inflating_past_the_cap_stops_there(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Decompression stops at MAX_DATA_BYTES (here 64 bytes): exit 2, nothing more is read."""
    monkeypatch.setattr(_data_rdata, "MAX_DATA_BYTES", 64)
    err = _one_line(tmp_path, rda(OBJECTS), capsys)
    assert err.endswith("dataset.path: expected R data of at most 64 bytes once decompressed, "
                        "got toy.rda inflating past that (reading stopped)")


def test_a_file_past_the_byte_cap_is_refused_unread(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file larger than MAX_FILE_BYTES is refused from its size: exit 2, its size named."""
    data = rda(OBJECTS)
    monkeypatch.setattr(_data_rdata, "MAX_FILE_BYTES", len(data) - 1)
    err = _one_line(tmp_path, data, capsys)
    assert err.endswith(f"dataset.path: expected an R data file of at most {len(data) - 1:,} "
                        f"bytes, got toy.rda of {len(data):,} bytes")


def test_a_column_the_manifest_names_must_be_in_the_frame(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A core feature absent from the R data frame: exit 2 with the closest names."""
    document = copy.deepcopy(DOC)
    document["core_features"] = ["grades"]
    err = _one_line(tmp_path, rda(OBJECTS), capsys, document)
    assert err.endswith("core_features[0]: expected a column of toy.rda, got 'grades' (str); "
                        "closest: grade")


# ------------------------------------------------------------------------------ manifest keys


@pytest.mark.parametrize(("change", "message"), [
    ({"object": None}, "dataset.object: expected the name of the R object to read (a data "
                       "frame) for an .rda/.RData file or an .rdb database, got nothing"),
    ({"path": "../../data/raw/toy/toy.csv"}, "dataset.object: expected no object for a file "
                                              "that is not .rda/.RData/.rdb, got 'people' (str)"),
    ({"read": {"separator": ";"}}, "dataset.read: expected no CSV reading options for an R "
                                   "data file, got {'separator': ';'} (dict)"),
    ({"mirror": "../elsewhere"}, "dataset.mirror: expected a folder- and shell-safe name (a "
                                 "letter or digit, then letters, digits, '_', '.' or '-'; at "
                                 "most 100 characters), got '../elsewhere' (str)"),
])
def test_dataset_keys_of_r_data_are_checked(tmp_path: Path, change: dict[str, Any],
                                            message: str) -> None:
    """object, read and mirror are validated with a one-line error naming the key path."""
    document = copy.deepcopy(DOC)
    for key, value in change.items():
        if value is None:
            del document["dataset"][key]
        else:
            document["dataset"][key] = value
    path = write(tmp_path, rda(OBJECTS), document)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert str(info.value) == f"{path}: {message}"


def test_an_rdata_suffix_in_any_case_is_r_data(tmp_path: Path) -> None:
    """``.RData`` is R data as ``.rda`` is: the object is required and read."""
    document = copy.deepcopy(DOC)
    document["dataset"]["path"] = "../../data/raw/toy/toy.RData"
    path = write(tmp_path, b"", document)
    (tmp_path / "data" / "raw" / "toy" / "toy.RData").write_bytes(rda(OBJECTS))
    assert load_manifest(path).dataset.object == "people"
    assert len(load_audit(load_manifest(path)).y) == 7


# ------------------------------------------------------------------------------ the real files


@pytest.mark.parametrize(("audit", "shape", "factor_levels"), [
    ("resume_callbacks", (4_870, 27), {"ethnicity": ["cauc", "afam"], "call": ["no", "yes"],
                                       "quality": ["low", "high"]}),
    ("mortgage_denials", (2_380, 14), {"afam": ["no", "yes"], "deny": ["no", "yes"],
                                       "chist": ["1", "2", "3", "4", "5", "6"]}),
])
def test_the_mirrored_aer_files_read_with_their_levels(
        mirror_extra: Path, audit: str, shape: tuple[int, int],
        factor_levels: dict[str, list[str]]) -> None:
    """ResumeNames.rda (gzip) and HMDA.rda (xz) give SOURCES.md's shapes and AER's levels."""
    m = load_manifest(AUDITS / audit / "audit.yaml")
    assert m.dataset.mirror is not None and m.dataset.object is not None
    path = mirror_extra / m.dataset.mirror / m.dataset.path.name
    if not path.is_file():
        _skip_or_fail(f"no {path}")
    frame = read(path, m.dataset.object)
    assert frame.shape == shape and int(frame.isna().sum().sum()) == 0
    for column, levels in factor_levels.items():
        assert list(frame[column].cat.categories) == levels
    assert np.isfinite(frame.select_dtypes("number").to_numpy(dtype=float)).all()
