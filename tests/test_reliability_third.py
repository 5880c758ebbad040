"""Issue 57's third round: no silent wrong number from a log, nothing left behind by a failed
command, bounded work on any input -- each failure class through a real entry point.

Each docstring opens with its class in issue 57's order (``Numbers``, ``State``, ``Bounds``,
``Traceback``, ``Message``).  The logs are tests/test_streamed.py's synthetic loan log; the
tiny grid project is tests/test_hostile_inputs.py's (audit ``toy``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_streamed import STATS, declare, make_log

from faircode.pipeline.cli import main


def one_line(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 2) -> str:
    """Run the CLI: exit ``code`` and the one line it printed on stderr."""
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# ------------------------------------------------------------------ Numbers: kinds per shard


def _two_kinds(folder: Path) -> Path:
    """A log of two Parquet files: ``approved`` 0/1 in the first, ``yes``/``no`` in the second."""
    frame = make_log(np.random.default_rng(3), n=400)
    (folder / "log").mkdir()
    first, second = frame.iloc[:200].copy(), frame.iloc[200:].copy()
    second["approved"] = np.where(second["approved"] == 1, "yes", "no")
    first.to_parquet(folder / "log" / "part-0.parquet", row_group_size=100)
    second.to_parquet(folder / "log" / "part-1.parquet", row_group_size=100)
    return declare(folder, "log")


KIND_LINE = ("part-1.parquet: row 1: column 'approved' (system.decision.column): expected "
             "number values as from part-0.parquet: row 1, got text: ")


def test_a_decision_column_changing_kind_between_files_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: 0/1 decisions in one file and yes/no in the next (read as decision 0 before):
    exit 2, one line naming the file, the row, the column and both kinds; nothing written."""
    declaration = _two_kinds(tmp_path)
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err.startswith(f"{tmp_path / 'log'}: {KIND_LINE}")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """A LocalCluster of two single-threaded in-process workers on 127.0.0.1."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as running:
        yield running


def test_a_decision_column_changing_kind_between_shards_is_refused(
        tmp_path: Path, cluster: object, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: the same log counted in shards on Dask workers (each shard read apart): the
    driver compares the shards' kinds and refuses in the same one line."""
    declaration = _two_kinds(tmp_path)
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), "--scheduler",
                    cluster.scheduler_address, *STATS],  # type: ignore[attr-defined]
                   capsys)
    assert err.startswith(f"{tmp_path / 'log'}: {KIND_LINE}")
    assert not (tmp_path / "out").exists()
