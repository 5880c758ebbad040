"""Reusing an audit's results when nothing the evaluate step reads has changed.

A sweep value (``dvc exp run -S models.decision_threshold=0.4``) re-runs the ``evaluate`` stage
over every audit, since DVC sees a changed param in the stage's ``params:``; but an audit whose
manifest declares its own operating point (``decision: {rule: base_rate}``, ``top_fraction``)
does not read that param, and its numbers would come out the same, bit for bit.
:func:`inputs_key` is a content address of everything the step reads, recorded in ``run.json``
as ``evaluate_inputs_sha256``; the stage compares it before evaluating and, on a match, keeps
the tables and refreshes only ``run.json``'s ``config`` and provenance (:func:`refresh_record`),
so the record names the params of this run.

Design decisions
----------------
* **Keyed by what is read, not by the params file.**  The key is sha256 over: the *resolved*
  decision rule (:func:`faircode.audit.decision.resolve_rule`: the manifest's block, else
  ``threshold`` at ``models.decision_threshold``) instead of the raw threshold; the ``stats``,
  ``degenerate``, ``curves``, ``arbitrariness`` and replicate sections; the bytes of the
  manifest, of every file of the prepared audit, of the three prediction parts and of the bagged
  members' store; the source of every file the stage's
  ``deps:`` name (:data:`CODE`, checked against ``dvc.yaml`` by ``tests/test_curves.py``); and
  the package versions and the numerical kernels (:mod:`faircode.core.numerics`).  A change of
  any of them is a miss.  The mitigation keys need no place
  of their own: what they change is in the predictions' bytes.
* **Only the pipeline stage reuses, and only a folder that holds exactly what was written.**
  ``faircode run`` and the library always evaluate.  A hit needs the folder's files, but
  ``run.json``, to be exactly those ``run.json`` records under ``files``, byte for byte (a file
  left over from another run -- ``git checkout`` restores tracked tables and leaves a K = 2
  ``stability.csv`` beside them -- or an edited table is a miss).
* **Never when re-computing is the point.**  ``FAIRCODE_REUSE=0`` in the environment
  (:data:`REUSE_ENV`; ``faircode verify`` and the CI drift check set it) turns every reuse off,
  so a verification re-computes every number.  (The report's figure reuse stays on: a figure
  is drawn from the tables, which a verification compares number by number.)
* **Refresh, never partial rewrite of a table.**  On a hit only ``run.json`` is replaced (written
  in a hidden sibling folder, then renamed over the old file: one atomic step), with the
  current ``config`` and provenance; timings stay those of the run that computed the numbers.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from faircode.audit.decision import resolve_rule
from faircode.audit.manifest import Manifest
from faircode.core.config import BenchmarkConfig, config_record
from faircode.core.digests import checked_run, folder_digests
from faircode.core.errors import FaircodeError
from faircode.core.layout import run_record

__all__ = [
    "CODE",
    "KEY",
    "REUSE_ENV",
    "folder_digests",
    "inputs_key",
    "refresh_record",
    "reusable",
    "reuse_enabled",
]

KEY = "evaluate_inputs_sha256"
"""The ``run.json`` key holding :func:`inputs_key`."""

CODE: tuple[str, ...] = (
    "pipeline/stages/evaluate.py", "__init__.py", "pipeline/__init__.py", "pipeline/_boundary.py",
    "pipeline/stages/__init__.py", "core", "provenance", "counterfactual", "audit", "stats", "grid",
    "evaluate",
)
"""The evaluate stage's code deps (``dvc.yaml``), relative to the ``faircode`` package."""

_PACKAGE = Path(__file__).resolve().parents[1]

REUSE_ENV = "FAIRCODE_REUSE"
"""``FAIRCODE_REUSE=0``: no stage reuses an earlier output (``faircode verify``, drift check)."""


def reuse_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """False when ``FAIRCODE_REUSE=0`` (see the module docstring)."""
    return (os.environ if environ is None else environ).get(REUSE_ENV, "1") != "0"


def _files(paths: Iterable[Path], *, suffix: str | None = None) -> list[Path]:
    """Every file under ``paths`` (a file is itself), sorted; only ``suffix`` files if given."""
    found: set[Path] = set()
    for path in paths:
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            found.update(p for p in path.rglob("*") if p.is_file()
                         and (suffix is None or p.suffix == suffix)
                         and "__pycache__" not in p.parts)
    return sorted(found)


def _digest(h: Any, files: Iterable[Path], *, root: Path | None) -> None:
    for path in files:
        name = path.relative_to(root).as_posix() if root is not None else path.name
        h.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())


def inputs_key(
    manifest: Manifest, *, config: BenchmarkConfig, inputs: Iterable[Path],
    versions: Mapping[str, str], numerics: Mapping[str, Any] | None = None,
) -> str:
    """sha256 of everything one audit's evaluate step reads (see the module docstring).

    ``inputs`` are the prepared-audit folder and the prediction parts (and the bagged members'
    store where there is one); ``versions`` the package
    versions (``provenance()["versions"]``); ``numerics`` the kernels this process computes with
    (:func:`faircode.core.numerics.configuration`: numbers of other kernels are not these).
    """
    rule = resolve_rule(manifest.decision, default_threshold=config.models.decision_threshold)
    reads = {"rule": rule.as_dict(), "stats": dataclasses.asdict(config.stats),
             "degenerate": dataclasses.asdict(config.degenerate),
             "replicates": dataclasses.asdict(config.replicates),
             "curves": list(config.curves.thresholds),
             "arbitrariness": dataclasses.asdict(config.arbitrariness),
             "versions": dict(versions),
             **({"numerics": dict(numerics)} if numerics else {})}
    h = hashlib.sha256(b"faircode-evaluate-inputs-v1\0")
    h.update(json.dumps(reads, sort_keys=True, default=str).encode() + b"\0")
    h.update(hashlib.sha256(manifest.file.read_bytes()).digest())
    for folder in inputs:
        h.update(b"\0input\0")
        _digest(h, _files([folder]), root=folder)
    h.update(b"\0code\0")
    _digest(h, _files([_PACKAGE / c for c in CODE], suffix=".py"), root=_PACKAGE)
    return h.hexdigest()


def reusable(folder: Path, *, key: str, outputs: Iterable[Path] = ()) -> dict[str, Any] | None:
    """``folder``'s ``run.json`` if it records ``key``, the folder holds exactly the ``files``
    it records (names and sha256) and ``outputs`` exist; else None."""
    if not run_record(folder).is_file():
        return None
    try:
        run = checked_run(folder)
    except FaircodeError:
        return None
    if run.get(KEY) != key:
        return None
    return run if all(p.is_file() for p in outputs) else None


def refresh_record(folder: Path, run: Mapping[str, Any], *, config: BenchmarkConfig,
                   provenance_record: Mapping[str, Any]) -> None:
    """Replace ``folder/run.json`` by ``run`` with the current config and provenance, in one
    rename (written first in a hidden sibling folder, which readers and git ignore)."""
    record = {**run, "config": config_record(config), **provenance_record}
    staging = folder.parent / f".{folder.name}.refresh"
    staging.mkdir(exist_ok=True)
    temporary = run_record(staging)
    temporary.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(temporary, run_record(folder))
    staging.rmdir()
