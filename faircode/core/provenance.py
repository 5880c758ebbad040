"""Provenance: the package versions and the git commit of the code that produced a result."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

__all__ = ["provenance"]


def provenance(*, repo: Path | None = None) -> dict[str, Any]:
    """Package versions and the git commit of the code that produced a result."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str] = {"python": platform.python_version()}
    for package in ("faircode", "numpy", "scipy", "pandas", "scikit-learn", "fairlearn", "joblib"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:  # pragma: no cover - every one is a dependency
            versions[package] = "unknown"
    commit, dirty = None, None
    root = repo if repo is not None else Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=root, capture_output=True, text=True, check=True,
                                timeout=10).stdout
        dirty = bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return {"versions": versions, "git_commit": commit, "git_dirty": dirty}

