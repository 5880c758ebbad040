"""An ``mlflow server`` on 127.0.0.1 for the tests that need one: started by the test, stopped by
it (temp SQLite store, proxied artifacts, one worker)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def mlflow_server(prefix: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start ``mlflow server``, wait for its health check (at most 180 s), yield its URL; stop it
    and remove its folder however the block ends."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    port = free_port()
    log = (root / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
         "--artifacts-destination", str(root / "artifacts")],
        env={**(env or os.environ), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
             "MLFLOW_DISABLE_TELEMETRY": "true"}, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"mlflow server did not start: {(root / 'server.log').read_text()}")
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)
