"""Tests of R lazy-load databases in a manifest: ``Rdata.rdb`` with its index, read and fetched.

The fixtures are written by ``tests/rda_writer.py`` (R's serialisation and ``makeLazyLoadDB``'s
layout, from the format itself: there is no R on the test machines), with each of the three
compressions R writes; one test reads the real carData and modeldata databases of the mirror.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from conftest import _skip_or_fail
from rda_writer import (
    NA,
    RVector,
    character,
    data_frame,
    factor,
    lazyload_db,
    persistent,
    serialise,
)

from faircode.audit import _data_rdb
from faircode.audit.data import load_audit
from faircode.audit.fetch import fetch
from faircode.audit.manifest import load_manifest
from faircode.core.errors import ChecksumError, DataError, DataUnavailableError, ManifestError
from faircode.pipeline.cli import main

COLUMNS: dict[str, RVector] = {
    "group": factor(["a", "b", "a", "b", "a", "b", NA, "a"], ["b", "a"]),
    "grade": RVector("integer", [1, 2, 3, NA, 5, 2, 4, 1]),
    "score": RVector("double", [0.5, 1.5, NA, 2.5, 3.0, 0.1, 0.2, 0.3]),
    "outcome": factor(["hi", "lo", "hi", "lo", "lo", "hi", "hi", "lo"], ["lo", "hi"]),
}
OBJECTS: dict[str, RVector | bytes] = {"other": RVector("double", [1.0, 2.0]),
                                       "people": data_frame(COLUMNS)}
DOC: dict[str, Any] = {
    "name": "toy",
    "dataset": {"path": "../../data/raw/toy/Rdata.rdb", "object": "people",
                "companions": {"Rdata.rdx": None}},
    "test_size": 0.25,
    "target": {"column": "outcome", "method": "equals", "value": "hi"},
    "protected_attributes": [{"name": "grp", "type": "categorical", "column": "group",
                              "disadvantaged_values": ["a"], "advantaged_values": ["b"]}],
    "core_features": ["grade", "score"],
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_db(folder: Path, objects: dict[str, RVector | bytes] | None = None,
             **options: Any) -> tuple[bytes, bytes]:
    """Write ``Rdata.rdb`` and ``Rdata.rdx`` into ``folder``; return their bytes."""
    rdb, rdx = lazyload_db(objects or OBJECTS, **options)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Rdata.rdb").write_bytes(rdb)
    (folder / "Rdata.rdx").write_bytes(rdx)
    return rdb, rdx


def write_manifest(root: Path, document: dict[str, Any] | None = None) -> Path:
    """The manifest ``root/audits/toy/audit.yaml`` (its raw files go to ``data/raw/toy/``)."""
    (root / "pyproject.toml").write_text("")
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document or DOC, sort_keys=False))
    return path


def read(folder: Path, name: str = "people") -> pd.DataFrame:
    return _data_rdb.read_lazyload(folder / "Rdata.rdb", object_name=name, where="m.yaml: dataset")


def error(folder: Path, name: str = "people") -> str:
    """The one-line DataError reading ``name`` from the database in ``folder``."""
    with pytest.raises(DataError) as info:
        read(folder, name)
    message = str(info.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------------ reading


@pytest.mark.parametrize(("compression", "type_byte"), [
    ("zlib", None), ("bzip2", None), ("xz", None), ("none", None),
    ("xz", b"0"), ("xz", b"1"), ("bzip2", b"0"), ("bzip2", b"1"),
])
def test_every_compression_reads_the_same_frame(tmp_path: Path, compression: str,
                                                type_byte: bytes | None) -> None:
    """compress = FALSE, TRUE (zlib), 2 (bzip2) and 3 (raw LZMA2), and the stored and zlib type
    bytes R falls back to, give the same 8 x 4 data frame with R's types."""
    write_db(tmp_path, compression=compression, type_byte=type_byte)
    frame = read(tmp_path)
    assert frame.shape == (8, 4)
    assert list(frame["group"].cat.categories) == ["b", "a"]
    assert str(frame["grade"].dtype) == "Int32" and frame["score"].iloc[:2].tolist() == [0.5, 1.5]
    assert frame.isna().sum().to_dict() == {"group": 1, "grade": 1, "score": 1, "outcome": 0}


def test_dates_and_date_times_become_datetimes(tmp_path: Path) -> None:
    """A Date column is days since 1970 (no zone), a POSIXct one seconds in its tzone."""
    frame = data_frame({
        "day": RVector("double", [0.0, 17_532.0, NA], (("class", character("Date")),)),
        "when": RVector("double", [0.0, 1_483_250_442.0, NA], (
            ("tzone", character("America/Chicago")), ("class", character("POSIXct", "POSIXt")))),
    })
    write_db(tmp_path, {"stops": frame})
    got = read(tmp_path, "stops")
    assert got["day"].tolist()[:2] == [pd.Timestamp("1970-01-01"), pd.Timestamp("2018-01-01")]
    assert str(got["when"].dt.tz) == "America/Chicago"
    assert got["when"].iloc[1] == pd.Timestamp("2017-01-01 06:00:42", tz="UTC")
    assert got.isna().sum().tolist() == [1, 1]


def test_a_manifest_names_a_database_and_its_object(tmp_path: Path) -> None:
    """dataset.path Rdata.rdb with its index as a companion: load_audit reads the object."""
    write_db(tmp_path / "data" / "raw" / "toy")
    data = load_audit(load_manifest(write_manifest(tmp_path)))
    assert data.steps == (("loaded", 8), ("target derivable", 8),
                          ("classified by every attribute", 7))
    assert data.y.tolist() == [1, 0, 1, 0, 0, 1, 0]


# ------------------------------------------------------------------------------ fetching


def _pinned(rdb: bytes, rdx: bytes, rds: bytes | None = None) -> dict[str, Any]:
    document = copy.deepcopy(DOC)
    document["dataset"]["sha256"] = sha(rdb)
    document["dataset"]["mirror"] = "toydata"
    document["dataset"]["companions"] = {"Rdata.rdx": sha(rdx),
                                         **({"Rdata.rds": sha(rds)} if rds else {})}
    return document


def test_fetch_copies_and_verifies_every_file_of_the_database(tmp_path: Path) -> None:
    """The .rdb, its .rdx and any other declared companion come from the mirror, verified."""
    mirror = tmp_path / "mirror"
    rdb, rdx = write_db(mirror / "toydata")
    (mirror / "toydata" / "Rdata.rds").write_bytes(b"rds bytes")
    manifest = load_manifest(write_manifest(tmp_path, _pinned(rdb, rdx, b"rds bytes")))
    result = fetch(manifest, mirrors=(mirror,))
    raw = tmp_path / "data" / "raw" / "toy"
    assert sorted(p.name for p in raw.iterdir()) == ["Rdata.rdb", "Rdata.rds", "Rdata.rdx"]
    assert [(r.status, r.checked) for r in (result, *result.companions)] == [("mirror", True)] * 3
    assert result.line("toy").count("\n") == 2
    assert len(load_audit(manifest).y) == 7


def test_fetch_keeps_no_companion_whose_digest_is_wrong(tmp_path: Path) -> None:
    """A mirror's index whose sha256 differs: ChecksumError naming it, nothing of it kept."""
    mirror = tmp_path / "mirror"
    rdb, rdx = write_db(mirror / "toydata")
    manifest = load_manifest(write_manifest(tmp_path, _pinned(rdb, rdx + b"!")))
    with pytest.raises(ChecksumError, match=r"toy: Rdata\.rdx from .*: sha256: expected"):
        fetch(manifest, mirrors=(mirror,))
    assert not (tmp_path / "data" / "raw" / "toy" / "Rdata.rdx").exists()


def test_a_companion_nowhere_is_unavailable_naming_it(tmp_path: Path) -> None:
    """The mirror has the .rdb but no .rdx: the audit is unavailable, the index named."""
    mirror = tmp_path / "mirror"
    rdb, rdx = write_db(mirror / "toydata")
    (mirror / "toydata" / "Rdata.rdx").unlink()
    manifest = load_manifest(write_manifest(tmp_path, _pinned(rdb, rdx)))
    with pytest.raises(DataUnavailableError, match=r"expected at .*/data/raw/toy/Rdata\.rdx"):
        fetch(manifest, mirrors=(mirror,))


def test_load_audit_verifies_the_companions(tmp_path: Path) -> None:
    """A changed index beside the database is refused when the audit is loaded."""
    rdb, rdx = write_db(tmp_path / "data" / "raw" / "toy")
    manifest = load_manifest(write_manifest(tmp_path, _pinned(rdb, rdx)))
    (tmp_path / "data" / "raw" / "toy" / "Rdata.rdx").write_bytes(rdx + b"!")
    with pytest.raises(ChecksumError, match=r"Rdata\.rdx: sha256: expected"):
        load_audit(manifest)
    (tmp_path / "data" / "raw" / "toy" / "Rdata.rdx").unlink()
    with pytest.raises(DataUnavailableError, match=r"Rdata\.rdx"):
        load_audit(manifest)


# ------------------------------------------------------------------------------ manifest keys


@pytest.mark.parametrize(("change", "message"), [
    ({"companions": None}, "dataset.companions: expected a mapping naming Rdata.rdx (the "
                           "database's index) and any other file of it, each to its sha256, "
                           "got None"),
    ({"companions": {"Rdata.rds": None}}, "dataset.companions: expected a mapping naming "
                                          "Rdata.rdx"),
    ({"companions": {"Rdata.rdx": None, "../x": None}}, "dataset.companions: expected file "
                                                        "names beside Rdata.rdb"),
    ({"companions": {"Rdata.rdx": "abc"}}, "dataset.companions.Rdata.rdx: expected 64 lowercase "
                                           "hex digits, got 'abc' (str)"),
    ({"sha256": "0" * 64}, "dataset.companions.Rdata.rdx: expected its sha256 (dataset.sha256 "
                           "is declared: every file of the database is pinned), got None"),
    ({"object": None}, "dataset.object: expected the name of the R object to read (a data "
                       "frame) for an .rda/.RData file or an .rdb database, got nothing"),
    ({"path": "../../data/raw/toy/toy.csv", "object": None},
     "dataset.companions: expected no companion files for a file that is not an .rdb "
     "database"),
])
def test_database_keys_are_checked(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    """companions and object of a database are validated in one line naming the key path."""
    document = copy.deepcopy(DOC)
    for key, value in change.items():
        if value is None:
            document["dataset"].pop(key)
        else:
            document["dataset"][key] = value
    with pytest.raises(ManifestError) as info:
        load_manifest(write_manifest(tmp_path, document))
    assert str(info.value).startswith(f"{tmp_path / 'audits' / 'toy' / 'audit.yaml'}: {message}")


# ------------------------------------------------------------------------------ bad databases


def test_a_missing_object_lists_the_objects_present(tmp_path: Path) -> None:
    """A small database lists its objects; a large one counts them and names the closest."""
    write_db(tmp_path)
    assert error(tmp_path, "People").endswith(
        "dataset.object: expected an object of Rdata.rdb, got 'People' (str); the database "
        "holds: other, people")
    many = {f"frame{i:02d}": RVector("double", [1.0]) for i in range(20)}
    write_db(tmp_path, {**many, "people": data_frame(COLUMNS)})
    assert error(tmp_path, "peoples").endswith(
        "got 'peoples' (str); Rdata.rdb holds 21 objects; closest: people")


def test_an_object_that_is_no_data_frame_is_one_line(tmp_path: Path) -> None:
    """A double vector: 'the name of a data frame' and its R type."""
    write_db(tmp_path)
    assert error(tmp_path, "other").endswith(
        "dataset.object: expected the name of a data frame, got 'other' (str), an R double")


def test_an_object_referring_to_an_environment_is_refused(tmp_path: Path) -> None:
    """A data frame whose attribute is a persistent reference (a database environment)."""
    frame = data_frame(COLUMNS)  # with a 'spec' attribute referring to the first environment
    spec = RVector("list", frame.values, (*frame.attributes, ("spec", character("spec"))))
    body = serialise(spec).replace(serialise(character("spec")), persistent("env::1"), 1)
    assert body != serialise(spec)
    write_db(tmp_path, {"people": body})
    assert error(tmp_path).endswith(
        "dataset.object: expected a data frame of values (references to a lazy-load database's "
        "environments or promises are not read), got Rdata.rdb object 'people' holding one (an "
        "R persistent reference)")


@pytest.mark.parametrize("compression", ["zlib", "bzip2", "xz"])
def test_an_object_declaring_more_than_the_cap_is_not_decompressed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: str) -> None:
    """A declared length past what is left of MAX_DATA_BYTES (here 600 bytes, the index's
    included) is refused before any decompression, the file and the object named."""
    write_db(tmp_path, compression=compression)
    monkeypatch.setattr(_data_rdb, "MAX_DATA_BYTES", 600)
    assert re.search(r"dataset\.path: expected R data of at most \d+ bytes once decompressed, "
                     r"got Rdata\.rdb object 'people' declaring [\d,]+ \(not read\)$",
                     error(tmp_path))


def test_an_object_inflating_past_its_declared_length_stops_there(tmp_path: Path) -> None:
    """A header declaring fewer bytes than the stream holds: reading stops at the declared
    length plus one, and the mismatch is one line."""
    rdb, _ = write_db(tmp_path)
    keys = _data_rdb._index(tmp_path / "Rdata.rdx", where="w")[0]
    start = keys["people"][0]
    declared = int.from_bytes(rdb[start:start + 4], "big")
    patched = rdb[:start] + (declared - 10).to_bytes(4, "big") + rdb[start + 4:]
    (tmp_path / "Rdata.rdb").write_bytes(patched)
    assert error(tmp_path).endswith(
        f"dataset.path: expected an object of the {declared - 10:,} bytes its header declares, "
        f"got Rdata.rdb object 'people' of {declared - 9:,} or more")


@pytest.mark.parametrize("compression", ["zlib", "bzip2", "xz"])
def test_a_database_cut_short_is_one_line(tmp_path: Path, compression: str) -> None:
    """The .rdb cut inside the object: the index does not match the database, in one line."""
    rdb, _ = write_db(tmp_path, compression=compression)
    (tmp_path / "Rdata.rdb").write_bytes(rdb[:-20])
    assert "(the index does not match the database)" in error(tmp_path)


def test_a_corrupt_object_is_one_line(tmp_path: Path) -> None:
    """zlib garbage in place of the object: 'corrupt' and zlib's reason."""
    rdb, _ = write_db(tmp_path)
    keys = _data_rdb._index(tmp_path / "Rdata.rdx", where="w")[0]
    start, length = keys["people"]
    (tmp_path / "Rdata.rdb").write_bytes(rdb[:start + 4] + b"\x00" * (length - 4))
    assert "dataset.path: expected a valid zlib stream (R data), got Rdata.rdb object " \
           "'people' corrupt (error: " in error(tmp_path)


def test_an_index_that_is_not_one_is_one_line(tmp_path: Path) -> None:
    """A CSV in place of the .rdx, and no .rdx at all: one line each naming the index."""
    write_db(tmp_path)
    (tmp_path / "Rdata.rdx").write_text("a,b\n1,2\n")
    assert error(tmp_path).endswith(
        "dataset.path: expected a lazy-load index (a serialize() stream of variables, "
        "references, compressed), got Rdata.rdx starting b'a,b\\n1,2\\n'")
    (tmp_path / "Rdata.rdx").unlink()
    assert error(tmp_path).endswith(
        "dataset.path: expected the lazy-load index Rdata.rdx beside Rdata.rdb, got no such file")


def test_an_unknown_type_byte_is_one_line(tmp_path: Path) -> None:
    """An object of a compress = 3 database typed 'Q': the known type bytes are listed."""
    rdb, _ = write_db(tmp_path, compression="xz")
    start = _data_rdb._index(tmp_path / "Rdata.rdx", where="w")[0]["people"][0]
    (tmp_path / "Rdata.rdb").write_bytes(rdb[:start + 4] + b"Q" + rdb[start + 5:])
    assert error(tmp_path).endswith(
        "expected a type byte of b'Z', b'2', b'1', b'0' (compressed 3), got Rdata.rdb object "
        "'people' typed b'Q'")


def test_validate_prints_one_line_for_a_bad_database(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`faircode validate` on a database whose object is missing: exit 2, one line."""
    write_db(tmp_path / "data" / "raw" / "toy", {"other": RVector("double", [1.0])})
    write_manifest(tmp_path)
    code = main(["validate", "--audits", str(tmp_path / "audits")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err
    assert err.endswith("dataset.object: expected an object of Rdata.rdb, got 'people' (str); "
                        "the database holds: other")


# ------------------------------------------------------------------------------ the real files


def test_the_mirrored_cardata_and_modeldata_databases_read(mirror_extra: Path) -> None:
    """Arrests, MplsStops, Salaries (carData, zlib) and training_data, testing_data (modeldata,
    raw LZMA2) give SOURCES.md's rows and counts."""
    cardata, modeldata = mirror_extra / "cardata", mirror_extra / "modeldata"
    if not (cardata / "Rdata.rdb").is_file() or not (modeldata / "Rdata.rdb").is_file():
        _skip_or_fail(f"no {cardata} or {modeldata}")
    arrests = read(cardata, "Arrests")
    assert len(arrests) == 5_226
    released = arrests.groupby("colour", observed=True)["released"]
    assert released.apply(lambda s: int((s == "Yes").sum())).to_dict() == {"Black": 955,
                                                                            "White": 3_379}
    assert released.size().to_dict() == {"Black": 1_288, "White": 3_938}
    stops = read(cardata, "MplsStops")
    assert len(stops) == 51_920 and str(stops["date"].dt.tz) == "America/Chicago"
    assert len(read(cardata, "Salaries")) == 397
    training = read(modeldata, "training_data")
    assert len(training) == 4_000
    assert training["score"].value_counts().to_dict() == {"great": 2_600, "other": 1_400}
    assert len(read(modeldata, "testing_data")) == 1_000
