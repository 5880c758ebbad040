"""Tests of faircode.grid.dask_reduce: a Parquet log counted in shards on a LocalCluster
(127.0.0.1, started and stopped here) writes the streamed path's bytes for 1, 2 and 4 workers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_streamed import STATS, declare, make_log, tables

from faircode.audit.log_declaration import load_log
from faircode.audit.logs import LogReader
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.streamed import audit_log
from faircode.evaluate.write import write_audit
from faircode.grid.dask_reduce import table_shards
from faircode.pipeline.cli import main

distributed = pytest.importorskip("distributed")
CONFIG = BenchmarkConfig().with_params({"stats.n_resamples": 60, "stats.n_permutations": 60})


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic log in two Parquet files of row groups of 300 rows, and the streamed
    path's tables of it."""
    root = tmp_path_factory.mktemp("dask")
    frame = make_log(np.random.default_rng(11))
    (root / "log").mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(root / "log" / "part-0.parquet", row_group_size=300)
    frame.iloc[half:].to_parquet(root / "log" / "part-1.parquet", row_group_size=300)
    assert main(["audit", str(declare(root, "log")), "--out", str(root / "streamed"),
                 "--chunk-rows", "250", *STATS]) == 0
    return root


@pytest.fixture(scope="module", params=[1, 2, 4], ids=["1 worker", "2 workers", "4 workers"])
def client(request: pytest.FixtureRequest) -> Iterator[object]:
    """A LocalCluster of single-threaded in-process workers on 127.0.0.1 (TCP)."""
    with distributed.LocalCluster(n_workers=request.param, threads_per_worker=1,
                                  processes=False, protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as connected:
        yield connected


def test_shards_are_whole_row_groups_in_log_order(folder: Path) -> None:
    """Shards of about 700 rows take two row groups of 300 each, per file, in order."""
    reader = LogReader(load_log(folder / "log.yaml"), verify=False)
    shards = table_shards(reader.table, rows=700)
    assert [(s.file.name, s.row_groups, s.start) for s in shards] == [
        ("part-0.parquet", (0, 1), 0), ("part-0.parquet", (2, 3), 600),
        ("part-1.parquet", (0, 1), 0), ("part-1.parquet", (2, 3), 600)]


def test_a_sharded_log_writes_the_streamed_bytes(folder: Path, client: object,
                                                 tmp_path: Path) -> None:
    """Shards of 600 rows counted on the cluster give the streamed tables byte for byte."""
    record, results = audit_log(load_log(folder / "log.yaml"), stats=CONFIG.stats,
                                degenerate=CONFIG.degenerate, client=client, shard_rows=600)
    write_audit(record, results, config=CONFIG, out_dir=tmp_path, provenance_record={})
    assert tables(tmp_path / "loans") == tables(folder / "streamed" / "loans")
    streamed = json.loads((folder / "streamed" / "loans" / "run.json").read_text())
    assert [list(step) for step in record.steps] == streamed["rows"]["steps"]


def test_a_bad_row_in_a_shard_is_one_line_naming_its_file_and_row(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing decision in the second file's row 5 reaches the command line as one line."""
    frame = make_log(np.random.default_rng(12), n=900)
    frame["approved"] = frame["approved"].astype(float)
    frame.loc[len(frame) // 2 + 4, ["approved", "sex"]] = [np.nan, "F"]
    (tmp_path / "log").mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_parquet(tmp_path / "log" / "part-0.parquet", row_group_size=100)
    frame.iloc[half:].to_parquet(tmp_path / "log" / "part-1.parquet", row_group_size=100)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster:
        code = main(["audit", str(declare(tmp_path, "log")), "--out", str(tmp_path / "out"),
                     "--scheduler", cluster.scheduler_address, *STATS])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err == (f"{tmp_path / 'log'}: part-1.parquet: row 5: column "
                   "'approved' (system.decision.column): expected a decision value in every "
                   "row of the audit, got a missing value")
    assert not (tmp_path / "out").exists()


def test_score_ranges_reach_the_driver_in_parts_of_the_budget(folder: Path, client: object,
                                                              tmp_path: Path) -> None:
    """A budget of 800 bytes (10 records) brings every score range to the driver in parts of at
    most 10 distinct scores (a score's records never split), far more parts than the 16 ranges,
    every distinct score once in ascending order, and the streamed bytes still."""
    from faircode.evaluate.sharded import N_BUCKETS, dask_log_tally

    reader = LogReader(load_log(folder / "log.yaml"), verify=False)
    tally, _ = dask_log_tally(client, reader, scale="probability", shard_rows=600, budget=800)
    assert tally.scores is not None
    blocks = [values for values, _ in tally.scores.blocks()]
    values = np.concatenate(blocks)
    frame = pd.concat([pd.read_parquet(p) for p in sorted((folder / "log").glob("*.parquet"))])
    kept = frame[frame["sex"].notna()]
    assert max(b.size for b in blocks) <= 10 and len(blocks) > 4 * N_BUCKETS
    assert values.tolist() == sorted(set(kept["risk"].tolist()))
    record, results = audit_log(load_log(folder / "log.yaml"), stats=CONFIG.stats,
                                degenerate=CONFIG.degenerate, client=client, shard_rows=600,
                                budget=800)
    write_audit(record, results, config=CONFIG, out_dir=tmp_path, provenance_record={})
    assert tables(tmp_path / "loans") == tables(folder / "streamed" / "loans")
