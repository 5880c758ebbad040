"""Tests of faircode.audit.fetch: present, mirror, HTTP download (plain, zip member), failures."""

from __future__ import annotations

import hashlib
import socket
import threading
import zipfile
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from faircode.audit.fetch import fetch, sha256_file
from faircode.audit.manifest import Manifest, load_manifest
from faircode.core.errors import ChecksumError, DataUnavailableError

PAYLOAD = b"a,b,label\n1,x,0\n2,y,1\n" * 50
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


def make_manifest(
    root: Path,
    *,
    sha256: str | None = DIGEST,
    source: dict[str, str] | None = None,
    name: str = "toy",
) -> Manifest:
    """Write a minimal manifest whose raw file is ``data/raw/<name>/toy.csv`` under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    dataset: dict[str, object] = {"path": f"../../data/raw/{name}/toy.csv"}
    if sha256 is not None:
        dataset["sha256"] = sha256
    if source is not None:
        dataset["source"] = source
    doc = {
        "name": name,
        "dataset": dataset,
        "target": {"column": "label", "method": "binary"},
        "protected_attributes": [
            {"name": "b", "type": "categorical", "column": "b", "advantaged_values": ["x"]}
        ],
        "core_features": ["a"],
    }
    path = root / "audits" / name / "audit.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return load_manifest(path)


def leftovers(manifest: Manifest) -> list[str]:
    """Return the names of files in the raw file's directory (temp files must not remain)."""
    folder = manifest.dataset.path.parent
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def mirror_copy(tmp_path: Path) -> Path:
    """Return a mirror directory holding toy/toy.csv."""
    mirror = tmp_path / "mirror"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "toy.csv").write_bytes(PAYLOAD)
    return mirror


class QuietHandler(SimpleHTTPRequestHandler):
    """A static-file handler that does not log to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        """Drop the access log line."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """Serve ``tmp_path/www`` over HTTP on 127.0.0.1 for the test's duration; yield the base URL."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "toy.csv").write_bytes(PAYLOAD)
    with zipfile.ZipFile(www / "toy.zip", "w") as zf:
        zf.writestr("inner/toy.csv", PAYLOAD)
        zf.writestr("inner/other.csv", b"nope")
    handler = partial(QuietHandler, directory=str(www))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_mirror_copy_is_verified_and_installed(tmp_path: Path, mirror_copy: Path) -> None:
    """A mirror file with the right digest is copied into place and reported as checked."""
    m = make_manifest(tmp_path / "repo")
    result = fetch(m, mirrors=(mirror_copy,))
    assert (result.status, result.sha256, result.checked) == ("mirror", DIGEST, True)
    assert m.dataset.path.read_bytes() == PAYLOAD and leftovers(m) == ["toy.csv"]


def test_present_file_with_right_digest_is_kept(tmp_path: Path, mirror_copy: Path) -> None:
    """A second fetch finds the verified file and does not copy again."""
    m = make_manifest(tmp_path / "repo")
    fetch(m, mirrors=(mirror_copy,))
    (mirror_copy / "toy" / "toy.csv").unlink()
    assert fetch(m, mirrors=(mirror_copy,)).status == "present"


def test_mirror_mismatch_keeps_nothing(tmp_path: Path, mirror_copy: Path) -> None:
    """A mirror file with a wrong digest raises ChecksumError naming both digests; nothing stays."""
    m = make_manifest(tmp_path / "repo", sha256="0" * 64)
    with pytest.raises(ChecksumError) as info:
        fetch(m, mirrors=(mirror_copy,))
    assert f"expected {'0' * 64}" in str(info.value) and DIGEST in str(info.value)
    assert "toy.csv" in str(info.value)
    assert not m.dataset.path.exists() and leftovers(m) == []


def test_stale_file_is_replaced_from_mirror(tmp_path: Path, mirror_copy: Path) -> None:
    """An existing file with the wrong digest is replaced by the verified mirror copy."""
    m = make_manifest(tmp_path / "repo")
    m.dataset.path.parent.mkdir(parents=True)
    m.dataset.path.write_bytes(b"corrupt")
    assert fetch(m, mirrors=(mirror_copy,)).status == "mirror"
    assert sha256_file(m.dataset.path) == DIGEST


def test_stale_file_without_replacement_is_a_checksum_error(tmp_path: Path) -> None:
    """A wrong existing file with no mirror or URL is reported, not silently accepted."""
    m = make_manifest(tmp_path / "repo")
    m.dataset.path.parent.mkdir(parents=True)
    m.dataset.path.write_bytes(b"corrupt")
    with pytest.raises(ChecksumError, match="no mirror copy or URL"):
        fetch(m, mirrors=())


def test_http_download_is_verified(tmp_path: Path, server: str) -> None:
    """A plain URL is streamed from a local HTTP server and verified."""
    m = make_manifest(tmp_path / "repo", source={"url": f"{server}/toy.csv"})
    result = fetch(m, mirrors=(), timeout=10)
    assert (result.status, result.checked) == ("downloaded", True)
    assert m.dataset.path.read_bytes() == PAYLOAD and leftovers(m) == ["toy.csv"]


def test_http_zip_member_is_extracted(tmp_path: Path, server: str) -> None:
    """A zip URL with a member yields exactly that member, verified; the archive is not kept."""
    m = make_manifest(
        tmp_path / "repo", source={"url": f"{server}/toy.zip", "member": "inner/toy.csv"}
    )
    assert fetch(m, mirrors=(), timeout=10).status == "downloaded"
    assert m.dataset.path.read_bytes() == PAYLOAD and leftovers(m) == ["toy.csv"]


def test_http_download_mismatch_keeps_nothing(tmp_path: Path, server: str) -> None:
    """A downloaded file with the wrong digest raises ChecksumError and leaves no file."""
    m = make_manifest(tmp_path / "repo", sha256="f" * 64, source={"url": f"{server}/toy.csv"})
    with pytest.raises(ChecksumError, match=DIGEST):
        fetch(m, mirrors=(), timeout=10)
    assert leftovers(m) == []


def test_download_without_sha256_reports_digest_unchecked(tmp_path: Path, server: str) -> None:
    """Without a declared sha256 the file is fetched and its digest reported, checked=False."""
    m = make_manifest(tmp_path / "repo", sha256=None, source={"url": f"{server}/toy.csv"})
    result = fetch(m, mirrors=(), timeout=10)
    assert (result.sha256, result.checked) == (DIGEST, False)


def test_missing_zip_member_is_unavailable(tmp_path: Path, server: str) -> None:
    """A zip without the declared member is reported as unavailable, leaving nothing."""
    m = make_manifest(tmp_path / "repo", source={"url": f"{server}/toy.zip", "member": "nope.csv"})
    with pytest.raises(DataUnavailableError, match=r"nope\.csv"):
        fetch(m, mirrors=(), timeout=10)
    assert leftovers(m) == []


def test_http_404_is_unavailable_with_instructions(tmp_path: Path, server: str) -> None:
    """A failing download gives '<audit>: dataset unavailable: <instructions>' plus the reason."""
    m = make_manifest(
        tmp_path / "repo", source={"url": f"{server}/gone.csv", "instructions": "Ask the curator."}
    )
    with pytest.raises(DataUnavailableError) as info:
        fetch(m, mirrors=(), timeout=10)
    assert str(info.value).startswith("toy: dataset unavailable: Ask the curator.")
    assert "404" in str(info.value) and leftovers(m) == []


def test_unreachable_host_is_unavailable(tmp_path: Path) -> None:
    """A refused connection (a closed local port) is reported as unavailable, not a crash."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    m = make_manifest(tmp_path / "repo", source={"url": f"http://127.0.0.1:{port}/toy.csv"})
    with pytest.raises(DataUnavailableError, match="toy: dataset unavailable"):
        fetch(m, mirrors=(), timeout=5)


def test_stale_file_with_unreachable_url_is_a_checksum_error(tmp_path: Path) -> None:
    """A wrong existing file whose URL is down is a checksum error, kept as is, not unavailable."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    m = make_manifest(tmp_path / "repo", source={"url": f"http://127.0.0.1:{port}/toy.csv"})
    m.dataset.path.parent.mkdir(parents=True)
    m.dataset.path.write_bytes(b"corrupt")
    with pytest.raises(ChecksumError) as info:
        fetch(m, mirrors=(), timeout=5)
    got = hashlib.sha256(b"corrupt").hexdigest()
    assert f"sha256: expected {DIGEST}, got {got}" in str(info.value)
    assert "download of" in str(info.value) and "unavailable" not in str(info.value)
    assert m.dataset.path.read_bytes() == b"corrupt" and leftovers(m) == ["toy.csv"]


def test_no_mirror_no_url_is_unavailable_with_instructions(tmp_path: Path) -> None:
    """With neither a mirror copy nor a URL the message carries source.instructions."""
    m = make_manifest(tmp_path / "repo", sha256=None, source={"instructions": "Download by hand."})
    with pytest.raises(
        DataUnavailableError, match=r"^toy: dataset unavailable: Download by hand\.$"
    ):
        fetch(m, mirrors=(tmp_path / "empty-mirror",))
    assert not m.dataset.path.exists()


def test_progress_bar_does_not_change_the_result(tmp_path: Path, server: str) -> None:
    """With progress=True the download is identical and verified."""
    m = make_manifest(tmp_path / "repo", source={"url": f"{server}/toy.csv"})
    result = fetch(m, mirrors=(), timeout=10, progress=True)
    assert (result.status, result.sha256) == ("downloaded", DIGEST)
    assert leftovers(m) == ["toy.csv"]


def test_first_mirror_holding_the_file_wins(tmp_path: Path, mirror_copy: Path) -> None:
    """With several mirrors, a folder without <audit>/<file> is skipped and the next one used."""
    empty = tmp_path / "empty-mirror"
    (empty / "other").mkdir(parents=True)
    m = make_manifest(tmp_path / "repo")
    result = fetch(m, mirrors=(empty, mirror_copy))
    assert (result.status, result.sha256) == ("mirror", DIGEST)


def test_earlier_mirror_is_preferred_even_when_wrong(tmp_path: Path, mirror_copy: Path) -> None:
    """The first mirror holding the file wins: a wrong copy there is an error, not a fallback."""
    bad = tmp_path / "bad-mirror"
    (bad / "toy").mkdir(parents=True)
    (bad / "toy" / "toy.csv").write_bytes(b"tampered")
    m = make_manifest(tmp_path / "repo")
    with pytest.raises(ChecksumError, match="bad-mirror"):
        fetch(m, mirrors=(bad, mirror_copy))
    assert not m.dataset.path.exists()


def test_mirrors_must_be_a_tuple(tmp_path: Path, mirror_copy: Path) -> None:
    """A single path passed as mirrors is refused rather than iterated character by character."""
    m = make_manifest(tmp_path / "repo")
    with pytest.raises(TypeError, match="tuple of paths"):
        fetch(m, mirrors=mirror_copy)  # type: ignore[arg-type]
