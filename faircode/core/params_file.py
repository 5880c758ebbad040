"""``params.yaml`` as a file: its last valid version, put back when an experiment is refused.

``dvc exp run -S run.seeds=0`` writes the new value into the workspace's ``params.yaml`` (DVC
re-dumps the whole file) *before* any stage runs; when the ``check-params`` stage then refuses
it, the repro stops -- and the file stays rewritten (issue 57: 43 lines added, 27 removed, two
comments lost; ``git status`` may not even show it).  So the stage keeps the last version it
accepted (:func:`remember_valid`) and, when it refuses the file during an experiment, puts the
accepted version back (:func:`restore_refused`) and says so in its one line.

Design decisions
----------------
* **Only during an experiment**: DVC gives an experiment's stages ``DVC_EXP_BASELINE_REV``
  (:data:`EXPERIMENT_ENV`).  A plain ``dvc repro`` of a hand-edited file that is refused leaves
  the file alone: the user fixes their edit.  An experiment in a temporary copy
  (``.dvc/tmp/exps/...``, ``--temp``/``--queue``) is thrown away by DVC anyway.
* **What is put back**: the last version ``check-params`` accepted (kept under
  ``.dvc/tmp/faircode/``, DVC's scratch space, never tracked), else the baseline commit's
  ``params.yaml``; only a version that validates.  The refused file is kept beside it
  (``params.refused.yaml``), so nothing typed is lost.
* Writes replace the file atomically, with its permissions.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from faircode.core.errors import FaircodeError

__all__ = ["EXPERIMENT_ENV", "LAST_VALID", "REFUSED", "STORE", "remember_valid",
           "restore_refused"]

EXPERIMENT_ENV = "DVC_EXP_BASELINE_REV"
"""Set by DVC for the stages of ``dvc exp run``: the experiment's baseline commit."""
STORE = Path(".dvc", "tmp", "faircode")
"""Where the versions are kept, below the project root (DVC's scratch space)."""
LAST_VALID = "params.last-valid.yaml"
REFUSED = "params.refused.yaml"


def _write(path: Path, data: bytes, *, like: Path | None = None) -> None:
    """Replace ``path`` with ``data`` atomically (with ``like``'s permissions, if it exists)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if like is not None and like.exists():
            os.chmod(name, like.stat().st_mode & 0o7777)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def remember_valid(params: Path, *, store: Path = STORE) -> None:
    """Keep ``params`` (just accepted) as the last valid version."""
    data = params.read_bytes()
    kept = store / LAST_VALID
    if not kept.is_file() or kept.read_bytes() != data:
        _write(kept, data)


def _baseline(params: Path, rev: str) -> bytes | None:
    try:
        done = subprocess.run(["git", "show", f"{rev}:./{params.name}"], cwd=params.parent,
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def restore_refused(params: Path, *, baseline: str | None, validate: Callable[[Path], object],
                    store: Path = STORE) -> str | None:
    """Put back the last valid ``params`` after an experiment's refused one (module docstring);
    return what the refusal's line adds, or None when nothing was put back.

    ``baseline`` is :data:`EXPERIMENT_ENV`'s value (None outside an experiment); ``validate``
    raises a :class:`FaircodeError` for a params file that is not valid.
    """
    if baseline is None or ".dvc/tmp/exps" in params.resolve().as_posix():
        return None
    refused = params.read_bytes()
    kept = store / LAST_VALID
    candidates = [kept.read_bytes() if kept.is_file() else None, _baseline(params, baseline)]
    for data in candidates:
        if data is None or data == refused:
            continue
        trial = store / ".params.trial.yaml"
        _write(trial, data)
        try:
            validate(trial)
        except FaircodeError:
            continue
        finally:
            trial.unlink(missing_ok=True)
        _write(store / REFUSED, refused)
        _write(params, data, like=params)
        return (f"{params} is put back as it was accepted last (dvc exp run had rewritten it; "
                f"the refused file is {store / REFUSED})")
    return None
