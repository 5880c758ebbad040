"""Tests of faircode.core.files: what faircode creates gets the user's umask."""

from __future__ import annotations

import os
from pathlib import Path

from faircode.core.files import umask, user_mode
from faircode.evaluate.swap import replacing


def test_umask_reads_the_process_umask() -> None:
    """umask() returns the umask in force, whatever it is, and changes nothing."""
    old = os.umask(0o027)
    try:
        assert umask() == 0o027
        assert umask() == 0o027
    finally:
        os.umask(old)


def test_user_mode_is_what_open_and_mkdir_give(tmp_path: Path) -> None:
    """A 0600 file and a 0700 folder get 0666 and 0777 less the umask."""
    old = os.umask(0o022)
    try:
        file, folder = tmp_path / "f", tmp_path / "d"
        file.write_text("x")
        folder.mkdir()
        os.chmod(file, 0o600)
        os.chmod(folder, 0o700)
        user_mode(file)
        user_mode(folder)
        assert (file.stat().st_mode & 0o777, folder.stat().st_mode & 0o777) == (0o644, 0o755)
    finally:
        os.umask(old)


def test_a_results_folder_gets_the_users_umask(tmp_path: Path) -> None:
    """A folder written through replacing() (every results/<audit>/) is 0755 under umask 022,
    not mkdtemp's 0700."""
    old = os.umask(0o022)
    try:
        with replacing(tmp_path / "audit") as staging:
            (staging / "run.json").write_text("{}")
    finally:
        os.umask(old)
    assert (tmp_path / "audit").stat().st_mode & 0o777 == 0o755
