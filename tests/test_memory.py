"""Tests of faircode.core.memory and its use by the log reader: a streamed audit's memory is the
same for its last chunk as for its first (bench/log_scale.py measures the whole run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_streamed import N, declare, make_log

LINUX = pytest.mark.skipif(not Path("/proc/self/status").is_file() or sys.platform != "linux",
                           reason="reads RssAnon of /proc; glibc's mallopt and malloc_trim")

_ANON = """
import numpy as np
from faircode.core.memory import map_large_arrays, release_free_memory

def anon_mib():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon"):
            return int(line.split()[1]) / 1024

map_large_arrays()
"""

_HOLES = _ANON + """
arrays = [np.ones(12_500) for _ in range(800)]  # 100 kB each: carved from the heap
kept = arrays[9::10]  # every tenth stays, the last one on top: no hole is at the heap's end
del arrays
before = anon_mib()
release_free_memory()
print(before, anon_mib())
"""

_MAPPED = _ANON + """
base = anon_mib()
arrays = [np.ones(20_000) for _ in range(400)]  # 160 kB each
kept = arrays[9::10]
held = anon_mib()
del arrays  # no trim: a mapped array's pages go back when it is freed
print(held - base, anon_mib() - base)
"""


def _child(code: str) -> list[float]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return [float(x) for x in done.stdout.split()]


@LINUX
def test_free_heap_holes_leave_resident_memory_when_released() -> None:
    # 720 freed arrays of 100 kB (69 MiB) sit between live ones; freed, they stay resident
    # until release_free_memory hands their pages back (what every streamed chunk does)
    before, after = _child(_HOLES)
    assert before - after > 50, (before, after)


@LINUX
def test_an_array_of_160_kb_is_handed_back_as_soon_as_it_is_freed() -> None:
    # glibc's own threshold rises to the largest block freed (a 10⁶-row mask is 1 MB), after
    # which such arrays come from the heap and stay resident when freed; fixed at 128 KiB they
    # are mappings of their own
    held, after = _child(_MAPPED)
    assert held > 55 and after < 12, (held, after)


_POOL = """
import sys
from faircode.pipeline.cli import main
code = main(["audit", sys.argv[1], "--out", sys.argv[2], "--n-resamples", "20",
             "--n-permutations", "20"])
import pyarrow as pa
print(code, pa.default_memory_pool().backend_name, pa.mimalloc_memory_pool().max_memory())
"""


@LINUX
def test_a_streamed_audit_reads_arrow_buffers_into_the_c_heap(tmp_path: Path) -> None:
    # Arrow's bundled mimalloc keeps freed pages per reader thread, a different share after each
    # chunk: the run's peak rose with the log (325 MiB at 10⁶ rows, 339 at 10⁸).  Arrow's C++
    # readers take the pool Arrow chose when pandas first loaded it (set later, only Python's
    # default changes), so the audit chooses it before anything else: no byte from mimalloc
    make_log(np.random.default_rng(3)).to_parquet(tmp_path / "log.parquet", row_group_size=500)
    done = subprocess.run([sys.executable, "-c", _POOL, str(declare(tmp_path, "log.parquet")),
                           str(tmp_path / "out")], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-3:] == ["0", "system", "0"], done.stdout + done.stderr


def test_the_log_reader_hands_back_free_pages_before_each_copy_and_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before a chunk is interpreted (the check's temporaries), before its rows are copied and
    before it is counted (the frame's pages), the reader hands free pages back: what is left of
    them is what differs from chunk to chunk."""
    import faircode.audit.logs as logs
    from faircode.audit.log_declaration import load_log

    make_log(np.random.default_rng(5)).to_parquet(tmp_path / "log.parquet")
    events: list[str] = []
    monkeypatch.setattr(logs, "release_free_memory", lambda: events.append("release"))
    reader = logs.LogReader(load_log(declare(tmp_path, "log.parquet")), chunk_rows=700)
    interpret, copy = reader._interpret, logs._kept

    def interpreted(chunk: object) -> object:
        events.append("interpret")
        return interpret(chunk)  # type: ignore[arg-type]

    def kept(frame: object, keep: np.ndarray) -> object:
        events.append("copy" if not keep.all() else "kept")
        return copy(frame, keep)  # type: ignore[arg-type]

    monkeypatch.setattr(reader, "_interpret", interpreted)
    monkeypatch.setattr(logs, "_kept", kept)
    chunks = 0
    for _ in reader.chunks():
        events.append("counted")
        chunks += 1
    assert chunks == -(-N // 700)
    steps = " ".join(events).split("counted")[:-1]
    for step in steps:
        words = step.split()
        assert words[:2] == ["release", "interpret"] and words[-1] == "release", step
        for i, word in enumerate(words):
            if word == "copy":
                assert words[i + 1] == "release", step  # _kept's own release, then the copy
    assert any("copy" in step for step in steps)  # missing sexes: a chunk's rows are copied
