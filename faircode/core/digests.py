"""The sha256 record of a results folder: written with it, checked by every reader before use.

``results/<audit>/run.json`` records ``files``: the sha256 of every other file of the folder
(:func:`folder_digests`, written by :func:`faircode.evaluate.write.write_audit`).
:func:`checked_run` is how every reader of a results folder -- ``faircode report``, ``faircode
track``, ``faircode verify --committed``, the evaluate stage's reuse -- opens it: the record is
read, and the folder must hold exactly the files it lists, byte for byte, or the reader stops
with one line naming the file.  A table cut mid-row, a file edited by hand, one copied in from
another run (a *foreign* file) or one missing is never reported on.

Design decisions
----------------
* **Exactly the recorded files**: a file the record lists must be there with its digest; a file
  it does not list is foreign and refused too (a reader would otherwise read, say, a
  ``stability.csv`` left by an older run beside new tables).  Hidden names count like any other:
  the writer never leaves one inside a results folder.
* **A record without** ``files`` is refused: every results folder written since the record was
  introduced has it, and a folder without it cannot be checked.
* Every file is read as a regular file (:func:`faircode.core.files.open_regular`), in chunks.
* The error class is the caller's (:class:`~faircode.core.errors.DataError` by default; the
  tracking wing uses its own), so exit codes stay each command's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from faircode.core.errors import DataError, FaircodeError, describe
from faircode.core.files import open_regular, read_json_object
from faircode.core.layout import RUN_RECORD, run_record

__all__ = ["checked_run", "folder_digests", "sha256_file"]

_CHUNK = 1 << 20
_RUN_JSON_BYTES = 64 * 2**20


def sha256_file(path: Path, *, error: type[FaircodeError] = DataError) -> str:
    """The hex sha256 of the regular file ``path``, read in chunks (``error`` if not regular)."""
    digest = hashlib.sha256()
    with open_regular(path, error=error) as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def folder_digests(folder: Path) -> dict[str, str]:
    """sha256 of every file of ``folder`` but ``run.json``, by path relative to it (sorted): what
    ``run.json`` records as ``files``."""
    return {p.relative_to(folder).as_posix(): sha256_file(p)
            for p in sorted(folder.rglob("*")) if p.is_file() and p != run_record(folder)}


def checked_run(folder: Path, *, error: type[FaircodeError] = DataError) -> dict[str, Any]:
    """``folder/run.json`` once the folder is checked to hold exactly the files it records.

    Raises ``error`` (one line naming the file) for a record that is not a JSON object with a
    ``files`` mapping, a recorded file missing or with another sha256 (damaged, or another
    run's), or a file the record does not list (foreign).
    """
    path = run_record(folder)
    run = read_json_object(path, limit=_RUN_JSON_BYTES, error=error, what="run record")
    recorded = run.get("files")
    if not isinstance(recorded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in recorded.items()):
        raise error(f"{path}: files: expected the sha256 of every results file (written with "
                    f"the folder), got {describe(recorded)}; re-run the audit")
    present = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
               if p.is_file() and p != path}
    for name, expected in recorded.items():
        if name not in present:
            raise error(f"{folder / name}: expected the file {RUN_RECORD} records (sha256 "
                        f"{expected[:12]}...), got no such file")
        actual = sha256_file(present[name], error=error)
        if actual != expected:
            raise error(f"{folder / name}: sha256: expected {expected} ({RUN_RECORD}), got "
                        f"{actual}: the file is damaged or another run's; re-run the audit")
    foreign = sorted(set(present) - set(recorded))
    if foreign:
        raise error(f"{folder / foreign[0]}: expected only the files {RUN_RECORD} records, got a "
                    f"file it does not list ({len(foreign)} such); move it out of the results "
                    "folder")
    return run
