"""Bounded downloads (faircode.audit._download): deadline, size cap, partial files never left.

Every download goes to a hostile HTTP server on 127.0.0.1 that the test starts and stops: an
endless body, a body dripping one byte a second, a ``Content-Length`` beyond the cap, a server that
sends its headers and then nothing.  Partial files are checked on every exit path: an error, SIGINT
and SIGTERM of a real ``faircode data fetch`` (removed), SIGKILL (left, then removed by the next
fetch), and a live fetch's file (never removed by another).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

import faircode
from faircode.audit.fetch import fetch
from faircode.audit.manifest import Manifest, load_manifest
from faircode.core.errors import DataUnavailableError

REPO = Path(__file__).resolve().parent.parent
CODE = Path(faircode.__file__).resolve().parent.parent
"""The tree whose ``faircode`` is imported (this checkout, or the one bench/second_round.py
judges): subprocesses run its code."""
PAYLOAD = b"a,b,label\n1,x,0\n2,y,1\n" * 50
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


class Hostile(BaseHTTPRequestHandler):
    """``/ok`` the payload; ``/endless`` bytes without end; ``/drip`` one byte a second;
    ``/huge`` a Content-Length of 10 GiB; ``/silent`` headers, then nothing."""

    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:
        """No access log."""

    def do_GET(self) -> None:
        try:
            self._answer()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
            pass

    def _answer(self) -> None:
        self.send_response(200)
        if self.path == "/huge":
            self.send_header("Content-Length", str(10 * 2**30))
        if self.path == "/ok":
            self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        if self.path == "/ok":
            self.wfile.write(PAYLOAD)
            return
        stop = self.server.stopping  # type: ignore[attr-defined]
        while not stop.is_set():
            if self.path == "/endless":
                self.wfile.write(b"x" * 65536)
            elif self.path == "/drip":
                self.wfile.write(b"x")
                self.wfile.flush()
                stop.wait(1.0)
            else:  # /silent, /huge: nothing more
                stop.wait(0.2)


@pytest.fixture
def hostile() -> Iterator[str]:
    """Start the hostile server on a free 127.0.0.1 port; stop it (and its requests) after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    server.stopping = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.stopping.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def manifest_at(root: Path, url: str, *, size: int | None = None) -> Manifest:
    """A manifest of audit ``toy`` whose raw file comes from ``url`` (``size`` declared)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    dataset: dict[str, object] = {"path": "../../data/raw/toy/toy.csv", "sha256": DIGEST,
                                  "source": {"url": url}}
    if size is not None:
        dataset["size"] = size
    doc = {"name": "toy", "dataset": dataset, "target": {"column": "label", "method": "binary"},
           "protected_attributes": [{"name": "b", "type": "categorical", "column": "b",
                                     "advantaged_values": ["x"]}],
           "core_features": ["a"]}
    path = root / "audits" / "toy" / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return load_manifest(path)


def raw_folder(root: Path) -> list[str]:
    """What ``data/raw/toy/`` holds (no partial file may stay)."""
    folder = root / "data" / "raw" / "toy"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_an_endless_body_stops_at_the_declared_size(tmp_path: Path, hostile: str) -> None:
    """Security: an endless body is stopped just past ``dataset.size`` bytes, and nothing is kept.
    """
    manifest = manifest_at(tmp_path, f"{hostile}/endless", size=len(PAYLOAD))
    started = time.monotonic()
    with pytest.raises(DataUnavailableError, match=rf"more than {len(PAYLOAD):,} bytes"):
        fetch(manifest, mirrors=(), timeout=3, deadline=30)
    assert time.monotonic() - started < 10
    assert raw_folder(tmp_path) == []


def test_a_drip_of_one_byte_a_second_stops_at_the_deadline(tmp_path: Path,
                                                          hostile: str) -> None:
    """Security: one byte a second never trips a 3 s read timeout; the 2 s deadline stops it."""
    manifest = manifest_at(tmp_path, f"{hostile}/drip")
    started = time.monotonic()
    with pytest.raises(DataUnavailableError, match=r"stopped at its deadline of 2 s"):
        fetch(manifest, mirrors=(), timeout=3, deadline=2)
    took = time.monotonic() - started
    assert 1.9 <= took < 4.5, took
    assert raw_folder(tmp_path) == []


def test_a_silent_server_stops_at_the_deadline_not_the_read_timeout(tmp_path: Path,
                                                                    hostile: str) -> None:
    """Security: a server that sends nothing after its headers is given up at the deadline (1 s),
    even though a read may wait 30 s."""
    manifest = manifest_at(tmp_path, f"{hostile}/silent")
    started = time.monotonic()
    with pytest.raises(DataUnavailableError, match=r"dataset unavailable"):
        fetch(manifest, mirrors=(), timeout=30, deadline=1)
    assert time.monotonic() - started < 3.5
    assert raw_folder(tmp_path) == []


def test_a_content_length_over_the_cap_is_refused_before_the_body(tmp_path: Path,
                                                                  hostile: str) -> None:
    """Security: a declared 10 GiB body is refused on its header: nothing is read or written."""
    manifest = manifest_at(tmp_path, f"{hostile}/huge")
    with pytest.raises(DataUnavailableError, match=r"more than 1,073,741,824 bytes"):
        fetch(manifest, mirrors=(), timeout=3, deadline=5)
    assert raw_folder(tmp_path) == []


def test_a_download_within_its_bounds_is_installed(tmp_path: Path, hostile: str) -> None:
    """Security: the same bounds let a normal download through, verified, with no partial file left.
    """
    manifest = manifest_at(tmp_path, f"{hostile}/ok", size=len(PAYLOAD))
    result = fetch(manifest, mirrors=(), timeout=3, deadline=10)
    assert (result.status, result.sha256) == ("downloaded", DIGEST)
    assert raw_folder(tmp_path) == ["toy.csv"]


def test_a_file_url_to_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Security: ``file://`` of a FIFO (urllib would block opening it) is one line, at once."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    manifest = manifest_at(tmp_path / "repo", fifo.as_uri())
    with pytest.raises(DataUnavailableError, match=r"expected a regular file, got a FIFO"):
        fetch(manifest, mirrors=(), timeout=3, deadline=5)


def _fetch_process(root: Path, url: str) -> subprocess.Popen[str]:
    """``faircode data fetch toy`` of ``root`` from ``url`` (a minute's deadline), SIGINT at its
    default as from a terminal."""
    manifest_at(root, url)
    env = {**os.environ, "PYTHONPATH": str(CODE), "FAIRCODE_DATA_MIRROR": ""}
    return subprocess.Popen(
        [sys.executable, "-m", "faircode.pipeline.cli", "data", "fetch", "toy", "--timeout", "30",
         "--deadline", "60"], cwd=root, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_part(root: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not any(n.endswith(".part") for n in raw_folder(root)):
        assert process.poll() is None and time.monotonic() < deadline, "no partial file appeared"
        time.sleep(0.05)


@pytest.mark.parametrize(("signum", "code", "said"), [
    (signal.SIGTERM, 143, "stopped by SIGTERM"), (signal.SIGINT, 130, "interrupted by SIGINT")],
    ids=["SIGTERM", "SIGINT"])
def test_a_fetch_stopped_by_a_signal_removes_its_partial_file(
        tmp_path: Path, hostile: str, signum: int, code: int, said: str) -> None:
    """Faults: SIGTERM or SIGINT during a download: exit 128 + signal, one line, no partial file."""
    process = _fetch_process(tmp_path, f"{hostile}/drip")
    try:
        _wait_for_part(tmp_path, process)
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == code, err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err, err
    assert raw_folder(tmp_path) == []


def test_a_killed_fetchs_partial_file_is_removed_by_the_next(tmp_path: Path, hostile: str) -> None:
    """Faults: SIGKILL leaves the partial file; the next fetch of the audit removes it."""
    process = _fetch_process(tmp_path, f"{hostile}/drip")
    try:
        _wait_for_part(tmp_path, process)
        process.kill()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert [n for n in raw_folder(tmp_path) if n.endswith(".part")]
    manifest = manifest_at(tmp_path, f"{hostile}/ok")
    assert fetch(manifest, mirrors=(), timeout=3, deadline=10).status == "downloaded"
    assert raw_folder(tmp_path) == ["toy.csv"]


def test_a_live_fetchs_partial_file_is_not_removed(tmp_path: Path) -> None:
    """Faults: a partial file whose fetch still holds its lock survives another fetch's clean-up."""
    from faircode.audit._download import remove_stale, staging

    target = tmp_path / "data" / "raw" / "toy" / "toy.csv"
    with staging(target) as live:
        assert remove_stale(target) == []
        assert live.exists()
    assert not live.exists()
