"""Tests of owned temporary folders (faircode.core.owned): a spill folder whose process was
killed outright is removed by the next store that spills; a live one's, or a folder without a
mark, never."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from faircode.core import owned
from faircode.stats.records import SPILL_PREFIX, Records, RecordStore

SPILLER = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from pathlib import Path
    from faircode.stats.records import Records, RecordStore
    store = RecordStore(budget=64, folder=Path(sys.argv[1]))
    for k in range(4):
        store.add(Records.of(np.arange(10, dtype=np.uint64) + 10 * k, np.zeros(10, dtype=np.int64)))
    print(store._dir, flush=True)
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()  # alive until the test closes its stdin
""")


def _spilling(folder: Path, how: str) -> tuple[subprocess.Popen[str], Path]:
    child = subprocess.Popen([sys.executable, "-c", SPILLER, str(folder), how], text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout is not None
    return child, Path(child.stdout.readline().strip())


def test_the_next_spilling_store_removes_a_killed_ones_folder_not_a_live_ones(
        tmp_path: Path) -> None:
    killed, left = _spilling(tmp_path, "kill")
    assert killed.wait(timeout=60) == -signal.SIGKILL
    assert left.is_dir() and any(left.glob("*.bin"))  # SIGKILL ran no clean-up
    mine = tmp_path / f"{SPILL_PREFIX}the-callers"  # no mark: not a store's
    mine.mkdir()
    live, held = _spilling(tmp_path, "live")
    try:
        assert not left.exists()  # swept when the live one spilled
        store = RecordStore(budget=64, folder=tmp_path)
        for k in range(3):
            store.add(Records.of(np.arange(5, dtype=np.uint64) + 5 * k,
                                 np.zeros(5, dtype=np.int64)))
        assert store._dir is not None and store._dir.is_dir()
        assert held.is_dir() and any(held.glob("*.bin")) and mine.is_dir()
        assert sum(int(r.count.sum()) for r in store.ordered()) == 15
        store.close()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([held.name, mine.name])
    finally:
        assert live.stdin is not None
        live.stdin.close()
        live.wait(timeout=60)
    # the child ended without closing its store: its folder is left, and now swept
    assert held.is_dir()
    assert owned.sweep(SPILL_PREFIX, tmp_path) == [held]
    assert [p.name for p in tmp_path.iterdir()] == [mine.name]


def test_a_mark_is_taken_only_once_its_holder_lets_go(tmp_path: Path) -> None:
    path = tmp_path / owned.MARK
    assert owned.take(path) is None  # no mark
    fd = owned.mark(path)
    assert [p.name for p in tmp_path.iterdir()] == [owned.MARK]
    assert owned.take(path) is None
    os.close(fd)
    again = owned.take(path)
    assert again is not None
    os.close(again)
