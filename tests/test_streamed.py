"""Tests of faircode.evaluate.streamed through ``faircode audit``: a decision log or a predictions
file counted chunk by chunk writes the bytes of the in-memory path, and bad logs are one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.predictions_file import read_predictions
from faircode.audit.prepared import prepare
from faircode.core.config import BenchmarkConfig
from faircode.core.layout import GRID_TABLES as TABLES
from faircode.evaluate.deployed import score_given
from faircode.evaluate.write import write_audit
from faircode.pipeline.cli import main
from faircode.provenance.state import provenance

STATS = ["--n-resamples", "60", "--n-permutations", "60"]
N = 7 * 300 + 1  # chunks of 7 rows end with a chunk of one row


def make_log(rng: np.random.Generator, n: int = N) -> pd.DataFrame:
    """Customers (units of 1-4 rows, one sex and region each) with decisions and scores; some
    sex values missing; sorted so that region ``north`` appears only in the last rows."""
    customer = np.sort(rng.integers(0, n // 2, n))
    sex = np.where(rng.random(n // 2) < 0.4, "F", "M").astype(object)[customer]
    sex[rng.random(n) < 0.03] = None
    region = np.where(rng.random(n // 2) < 0.3, "north", "south")[customer]
    p = np.clip(rng.beta(2, 3, n) + 0.1 * (sex == "M"), 0, 1)
    frame = pd.DataFrame({"customer": customer, "sex": sex, "region": region,
                          "repaid": (rng.random(n) < p).astype(int),
                          "approved": (p > 0.45).astype(int), "risk": np.round(p, 3)})
    return frame.sort_values("region", ascending=False, kind="stable").reset_index(drop=True)


def declare(folder: Path, log: str, **extra: object) -> Path:
    """A log declaration for ``log`` (a file in ``folder``)."""
    doc = {"name": "loans", "log": {"path": log},
           "target": {"column": "repaid", "method": "binary", "favourable": 1},
           "system": {"name": "scorecard", "decision": {"column": "approved", "equals": 1},
                      "score": {"column": "risk", "scale": "probability"}},
           "unit": "customer",
           "protected_attributes": [
               {"name": "sex", "type": "categorical", "column": "sex",
                "disadvantaged_values": ["F"], "advantaged_values": ["M"]},
               {"name": "north", "type": "categorical", "column": "region",
                "disadvantaged_values": ["north"]}],
           **extra}
    path = folder / f"{Path(log).name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def log_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic log as parquet (row groups of 500), CSV and compressed CSVs."""
    folder = tmp_path_factory.mktemp("log")
    frame = make_log(np.random.default_rng(7))
    frame.to_parquet(folder / "log.parquet", row_group_size=500)
    for suffix in ("csv", "csv.gz", "csv.bz2", "csv.xz"):
        frame.to_csv(folder / f"log.{suffix}", index=False)
    import pyarrow as pa
    import pyarrow.csv as pc

    with pa.CompressedOutputStream(str(folder / "log.csv.zst"), "zstd") as out:
        pc.write_csv(pa.Table.from_pandas(frame, preserve_index=False), out)
    return folder


def audit(declaration: Path, out: Path, *extra: str) -> None:
    assert main(["audit", str(declaration), "--out", str(out), *STATS, *extra]) == 0


def tables(folder: Path) -> dict[str, bytes]:
    return {t: (folder / f"{t}.csv").read_bytes() for t in TABLES}


@pytest.fixture(scope="module")
def in_memory(log_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The log's tables from the in-memory path (every row read, counted at once)."""
    out = tmp_path_factory.mktemp("mem")
    audit(declare(log_folder, "log.parquet"), out, "--in-memory")
    return tables(out / "loans")


def test_streamed_log_writes_the_in_memory_bytes(log_folder: Path, in_memory: dict[str, bytes],
                                                 tmp_path: Path) -> None:
    """7-row chunks (the last of one row; units, missing sexes, north only at the end) give the
    in-memory path's seven tables byte for byte."""
    audit(declare(log_folder, "log.parquet"), tmp_path, "--chunk-rows", "7")
    assert tables(tmp_path / "loans") == in_memory
    fairness = pd.read_csv(tmp_path / "loans" / "fairness.csv")
    assert (fairness["design_effect"] != 1.0).any()  # the units repeat and were used


@pytest.mark.parametrize("suffix", ["csv", "csv.gz", "csv.bz2", "csv.xz", "csv.zst"])
def test_csv_and_compressed_csv_give_the_parquet_tables(log_folder: Path, suffix: str,
                                                        in_memory: dict[str, bytes],
                                                        tmp_path: Path) -> None:
    """The same log as CSV, plain or compressed, streamed in 500-row chunks."""
    audit(declare(log_folder, f"log.{suffix}"), tmp_path, "--chunk-rows", "500")
    assert tables(tmp_path / "loans") == in_memory


def test_a_tiny_memory_budget_spills_and_writes_the_same_bytes(
        log_folder: Path, in_memory: dict[str, bytes], tmp_path: Path) -> None:
    """Records spilled to disk at a 4 KiB budget are read back into the same tables."""
    from faircode.audit.log_declaration import load_log
    from faircode.evaluate.streamed import audit_log

    config = BenchmarkConfig().with_params({"stats.n_resamples": 60, "stats.n_permutations": 60})
    record, results = audit_log(load_log(declare(log_folder, "log.parquet")),
                                stats=config.stats, degenerate=config.degenerate,
                                chunk_rows=100, budget=4096)
    write_audit(record, results, config=config, out_dir=tmp_path, provenance_record={})
    assert tables(tmp_path / "loans") == in_memory


def test_run_json_records_the_log_and_its_steps(log_folder: Path, tmp_path: Path) -> None:
    """run.json names the log, its sha256 and the rows after each step (missing sexes out)."""
    audit(declare(log_folder, "log.parquet"), tmp_path)
    run = json.loads((tmp_path / "loans" / "run.json").read_text())
    frame = pd.read_parquet(log_folder / "log.parquet")
    kept = int(frame["sex"].notna().sum())
    assert run["rows"]["steps"] == [["loaded", N], ["target derivable", N],
                                    ["classified by every attribute", kept]]
    assert run["log"]["rows"] == kept and len(run["log"]["sha256"]) == 64
    assert run["system"] == {"name": "scorecard", "title": "scorecard",
                             "decision": "approved equals 1", "scale": "probability"}


def one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_a_group_column_changing_type_between_chunks_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers in the first chunk, text at row 9: exit 2, one line naming it, nothing written."""
    frame = make_log(np.random.default_rng(1), n=20)
    frame["region"] = ["1"] * 8 + ["north"] * 12
    frame.to_csv(tmp_path / "log.csv", index=False)
    declaration = declare(tmp_path, "log.csv")
    err = one_line_exit_2(["audit", str(declaration), "--out", str(tmp_path / "out"),
                           "--chunk-rows", "5", *STATS], capsys)
    assert err == (f"{tmp_path / 'log.csv'}: line 10: column 'region' "
                   "(protected_attributes[1].column): expected number values as from line 2, "
                   "got text: 'north' (str)")
    assert not (tmp_path / "out").exists()


def _with_a_second_approved(tmp_path: Path, copy: Callable[[str], str]) -> Path:
    """log.csv with a last column also named ``approved``, each row's value ``copy(approved)``."""
    tmp_path.mkdir(exist_ok=True)
    make_log(np.random.default_rng(2), n=200).to_csv(tmp_path / "log.csv", index=False)
    header, *rows = (tmp_path / "log.csv").read_text().splitlines()
    at = header.split(",").index("approved")
    (tmp_path / "log.csv").write_text("\n".join(
        [header + ",approved", *(r + "," + copy(r.split(",")[at]) for r in rows)]) + "\n")
    return declare(tmp_path, "log.csv")


def test_a_repeated_column_whose_copies_differ_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log whose header names ``approved`` twice, the copies differing, is one line naming
    the first row where they differ and both columns; nothing written."""
    declared = _with_a_second_approved(tmp_path, lambda v: "1" if v == "0" else "0")
    err = one_line_exit_2(["audit", str(declared), "--out", str(tmp_path / "out")], capsys)
    width = len((tmp_path / "log.csv").read_text().splitlines()[0].split(","))
    assert re.fullmatch(
        rf"{re.escape(str(tmp_path / 'log.csv'))}: line 2: column 'approved' is named twice "
        rf"\(columns \d+ and {width}\) and the copies differ: '([01])' \(str\) and '(?!\1)[01]' "
        r"\(str\); rename one of them", err), err
    assert not (tmp_path / "out").exists()


def test_a_repeated_column_with_equal_copies_is_read_once(tmp_path: Path) -> None:
    """Two identical ``approved`` columns (ProPublica's COMPAS file has two ``decile_score``)
    audit exactly as the file with one."""
    declared = _with_a_second_approved(tmp_path / "two", lambda v: v)
    once = tmp_path / "one"
    once.mkdir()
    make_log(np.random.default_rng(2), n=200).to_csv(once / "log.csv", index=False)
    for folder, declaration in ((tmp_path / "two", declared),
                                (once, declare(once, "log.csv"))):
        assert main(["audit", str(declaration), "--out", str(folder / "out"),
                     "--n-resamples", "50", "--n-permutations", "50"]) == 0
    for table in ("fairness.csv", "groups.csv"):
        two = sorted((tmp_path / "two" / "out").rglob(table))
        one = sorted((once / "out").rglob(table))
        assert len(two) == len(one) == 1 and two[0].read_text() == one[0].read_text()


@pytest.mark.parametrize(("change", "message"), [
    ({"target": {"column": "repaid", "method": "above_median"}},
     "target.method: expected one of binary, equals, isin, threshold in a decision log (read "
     "in one pass), got 'above_median' (str)"),
    ({"row_filters": [{"column": "customer", "first_by": "risk"}]},
     "row_filters[0].first_by: expected a row-wise filter in a decision log (read in one pass: "
     "de-duplicate the log first), got 'risk' (str)"),
    ({"colour": "red"}, "colour: expected one of the keys name, title, log, random_state, "
     "row_filters, target, protected_attributes, unit, system, strata, got 'colour' (str)"),
    ({"unit": "client"}, "unit: expected a column of log.csv, got 'client' (str)"),
])
def test_a_bad_declaration_is_one_line_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object],
        message: str) -> None:
    """The declaration is checked by the manifest's parsers: one line, file and key path."""
    make_log(np.random.default_rng(3), n=10).to_csv(tmp_path / "log.csv", index=False)
    declaration = declare(tmp_path, "log.csv", **change)
    err = one_line_exit_2(["audit", str(declaration), "--out", str(tmp_path / "out")], capsys)
    assert err.startswith(f"{declaration}: {message}")


# ------------------------------------------------------------------ a predictions file, joined

RAW = "id,person,group,age,income,outcome\n" + "".join(
    f"{i},{i // 3},{'ab'[(i // 3) % 2]},{20 + i % 50},{i % 17},"
    f"{'hi' if (i * 7) % 5 < 2 else 'lo'}\n" for i in range(1, 301))


def toy_audit(root: Path) -> Path:
    """A 300-row toy audit of 100 persons (3 rows each) keyed on ``id``."""
    (root / "pyproject.toml").write_text("")
    (root / "data" / "raw" / "toy").mkdir(parents=True)
    (root / "data" / "raw" / "toy" / "toy.csv").write_text(RAW)  # where fetch may write it
    doc = {"name": "toy", "dataset": {"path": "../../data/raw/toy/toy.csv", "unit": "person"},
           "target": {"column": "outcome", "method": "equals", "value": "hi"},
           "protected_attributes": [{"name": "grp", "type": "categorical", "column": "group",
                                     "disadvantaged_values": ["a"]},
                                    {"name": "young", "type": "numeric_threshold",
                                     "column": "age", "threshold": 40, "disadvantaged": "below"}],
           "core_features": ["income"]}
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("rows", ["all", "held-out"])
def test_a_streamed_predictions_file_writes_the_bytes_of_score_given(tmp_path: Path,
                                                                     rows: str) -> None:
    """A shuffled file in 13-row chunks gives score_given's tables on the file read whole, on
    every audit row (--rows all) and on the held-out rows only (the default)."""
    manifest_path = toy_audit(tmp_path)
    rng = np.random.default_rng(4)
    ids = rng.permutation(np.arange(1, 301))
    prob = np.round(rng.random(300), 2)
    pd.DataFrame({"id": ids, "flag": (prob > 0.5).astype(int), "prob": prob}).to_csv(
        tmp_path / "p.csv.gz", index=False)
    assert main(["audit", str(manifest_path), "--predictions", str(tmp_path / "p.csv.gz"),
                 "--key", "id", "--decision", "flag", "--score", "prob", "--scale",
                 "probability", "--name", "m", "--chunk-rows", "13", "--rows", rows, "--out",
                 str(tmp_path / "stream"), *STATS]) == 0
    config = BenchmarkConfig().with_params({"stats.n_resamples": 60, "stats.n_permutations": 60})
    data = load_audit(load_manifest(manifest_path), key="id")
    assert data.keys is not None
    found = read_predictions(tmp_path / "p.csv.gz", key="id", rows=data.keys, decision="flag",
                             score="prob", scale="probability")
    keep = np.isin(found.positions, data.test_index) if rows == "held-out" else \
        np.ones(found.positions.size, dtype=bool)
    assert found.decision is not None and found.score is not None
    results = score_given(prepare(data), name="m", decision=found.decision[keep],
                          score=found.score[keep], scale=found.scale,
                          positions=found.positions[keep], stats=config.stats,
                          degenerate=config.degenerate,
                          row_set="test" if rows == "held-out" else "all")
    write_audit(data, results, config=config, out_dir=tmp_path / "whole",
                provenance_record=provenance())
    assert tables(tmp_path / "stream" / "toy") == tables(tmp_path / "whole" / "toy")


def test_a_large_predictions_file_is_one_line_under_a_memory_cap(tmp_path: Path) -> None:
    """139 MB of predictions with no key at line 1002: one line, exit 2, under 2 GB of address
    space (issue 33: a MemoryError at 1.5 GB when a string was kept per row)."""
    manifest_path = toy_audit(tmp_path)
    pad = b"0" * 40
    with open(tmp_path / "big.csv", "wb") as out:
        out.write(b"id,flag,prob\n")
        out.write(b"".join(b"%d,1,0.5%s\n" % (i, pad) for i in range(1, 1001)))
        out.write(b",1,0.5\n")
        start = 10_000
        while out.tell() < 139 * 2**20:
            out.write(b"".join(b"%d,1,0.5%s\n" % (i, pad) for i in range(start, start + 10**5)))
            start += 10**5
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30,) * 2); "
            "from faircode.pipeline.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run(
        [sys.executable, "-c", code, "audit", str(manifest_path), "--predictions",
         str(tmp_path / "big.csv"), "--key", "id", "--decision", "flag", "--out",
         str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == (f"{tmp_path / 'big.csv'}: line 1002: column 'id' (key): "
                                   "expected a key in every row, got a missing value")
    assert not (tmp_path / "out").exists()


def test_a_parquet_log_is_read_without_holding_the_row_groups_already_read(
        tmp_path: Path) -> None:
    """Arrow memory while a 40-row-group file is read chunk by chunk stays near one chunk's
    (pyarrow's pre-buffered reader held 14 MB here: the whole 12.8 MB of both columns)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from faircode.audit.table_file import open_table

    path, n = tmp_path / "log.parquet", 20_000
    pq.write_table(pa.table({"a": np.arange(40 * n), "s": np.linspace(0, 1, 40 * n)}), path,
                   row_group_size=n)
    base = pa.total_allocated_bytes()
    held = [pa.total_allocated_bytes() - base
            for _ in open_table(path).chunks(["a", "s"], rows=n)]
    whole = 40 * n * 16
    assert len(held) == 40 and max(held) < whole / 4



def test_a_chunk_handed_on_is_held_by_nothing_in_the_parquet_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a chunk is handed on, the reader holds neither its DataFrame, nor a chunk-sized Arrow
    batch, nor the row group's whole column chunks: Arrow memory stays under half a chunk's
    even when the file is one row group of three chunks.  (It held all three until the next
    chunk was read: about 100 MiB at 10⁶ rows of the six-column synthetic log, growing with the
    file's row groups, and the streamed audit's peak varied by as much from chunk to chunk.)"""
    import weakref

    import pyarrow as pa
    import pyarrow.parquet as pq

    from faircode.audit import table_file

    monkeypatch.setattr(table_file, "_ARROW_ROWS", 1_000)
    monkeypatch.setattr(table_file, "_READ_BUFFER", 1 << 16)
    path, n = tmp_path / "log.parquet", 200_000
    pq.write_table(pa.table({"a": np.arange(3 * n), "s": np.linspace(0, 1, 3 * n)}), path,
                   row_group_size=3 * n, use_dictionary=False, data_page_size=1 << 16)
    chunks = table_file.open_table(path).chunks(["a", "s"], rows=n)
    base = pa.total_allocated_bytes()
    sizes = []
    for _ in range(3):
        chunk = next(chunks)
        sizes.append(len(chunk))
        frame = weakref.ref(chunk.frame)
        del chunk
        assert frame() is None
        assert pa.total_allocated_bytes() - base < n * 16 / 2
    assert sizes == [n] * 3 and next(chunks, None) is None


def test_a_log_reader_lets_go_of_each_chunk_before_reading_the_next(log_folder: Path) -> None:
    """When the log reader asks its table for the next chunk, neither the last chunk's
    DataFrame nor the rows it gave from it are alive any more (its consumer dropped them)."""
    import weakref

    from faircode.audit.log_declaration import load_log
    from faircode.audit.logs import LogReader

    reader = LogReader(load_log(declare(log_folder, "log.parquet")), chunk_rows=300)
    earlier: list[weakref.ref[object]] = []
    read = reader.table.chunks

    def watched(columns: list[str], *, rows: int) -> object:
        for chunk in read(columns, rows=rows):
            assert all(ref() is None for ref in earlier), "an earlier chunk is still held"
            earlier.append(weakref.ref(chunk.frame))
            box = [chunk]
            del chunk
            yield box.pop()  # this watcher itself holds nothing while the reader counts

    reader.table.chunks = watched  # type: ignore[method-assign]
    parts = 0
    for part in reader.chunks():
        earlier.append(weakref.ref(part.y))
        parts += 1
        del part
    assert parts == -(-N // 300) and len(earlier) == 2 * parts
