"""The report's readers: one per kind of file of a results folder.

:func:`faircode.report.inputs.load_results` hands each audit folder to the reader of its kind
(:func:`faircode.core.layout.folder_kind`): the pipeline's note (:func:`read_note`) or a run of
a kind with the grid (:func:`read_grid_run`), which reads its record and then each table with
the table's reader (:data:`GRID_READS`).  Every table is checked for its required columns
(:data:`REQUIRED`); a missing column, an unreadable file or a missing required table is one
:class:`~faircode.core.errors.DataError` line naming the file.

Design decisions
----------------
* **Where each table's rows go is a table** (:data:`GRID_READS`), not a branch per file: the
  four main tables (required; a deployed system's rows split off), the optional ones beside
  them, and those of ``deployed/``.
* Folders are read in name order and, within one, in :data:`GRID_READS` order, so every
  concatenated table is in the order it always was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.digests import checked_run
from faircode.core.errors import DataError, describe
from faircode.core.layout import (
    RUN_RECORD,
    UNAVAILABLE_NOTE,
    deployed_path,
    table_file,
    table_path,
)
from faircode.stats.calibration import CALIBRATION_COLUMNS
from faircode.stats.groups import GROUP_COLUMNS

__all__ = ["DEPLOYED", "GRID_READS", "MAIN_TABLES", "REQUIRED", "Found", "read_csv",
           "read_grid_run", "read_kind_tables", "read_note", "read_sensitivity"]

DEPLOYED = "deployed"


def read_kind_tables(folders: Sequence[Path], tables: Sequence[str], *, what: str,
                     optional: Sequence[str] = ()
                     ) -> tuple[dict[str, list[pd.DataFrame]], dict[str, dict[str, Any]]] | None:
    """The run records (checked: :func:`faircode.core.digests.checked_run`) and the tables of
    the folders of a kind without the grid (text, regression, multi-class), each table's frames
    in folder order -- ``tables`` from every folder, ``optional`` ones where a folder has them;
    ``None`` without a folder.  An unreadable table is one line naming it and ``what`` (``the
    text audit's``)."""
    frames: dict[str, list[pd.DataFrame]] = {t: [] for t in (*tables, *optional)}
    runs: dict[str, dict[str, Any]] = {}
    for folder in folders:
        runs[folder.name] = checked_run(folder)
        for table in (*tables, *optional):
            path = table_path(folder, table)
            if table in optional and not path.is_file():
                continue
            try:
                frames[table].append(pd.read_csv(path, keep_default_na=True))
            except (OSError, ValueError) as exc:
                raise DataError(f"{path}: expected {what} {table} table, got "
                                f"{type(exc).__name__}: {exc}") from None
    return (frames, runs) if runs else None
"""The strategy of a deployed system's rows (its model is the system's name)."""
MAIN_TABLES = ("fairness", "performance", "intersectional", "counterfactual")
"""The tables every grid run has; a deployed system's rows in them are split off."""
REQUIRED: dict[str, tuple[str, ...]] = {
    "fairness": ("audit", "strategy", "model", "protected_attribute", "metric", "value",
                 "ci_low", "ci_high", "p_value", "q_value", "note"),
    "performance": ("audit", "strategy", "model", "metric", "value", "ci_low", "ci_high", "note"),
    "intersectional": ("audit", "strategy", "model", "attribute_a", "attribute_b", "gap",
                       "ci_low", "ci_high", "p_value", "note"),
    "counterfactual": ("audit", "strategy", "model", "axis", "kind", "flip_rate", "ci_low",
                       "ci_high", "note"),
    "groups": ("audit", "strategy", "model", *GROUP_COLUMNS),
    "calibration": ("audit", "strategy", "model", *CALIBRATION_COLUMNS),
    "calibration_gap": ("audit", "strategy", "model", "row_set", "protected_attribute", "value",
                        "ci_low", "ci_high", "p_value", "q_value", "note"),
    "stratified": ("audit", "strategy", "model", "protected_attribute", "stratum", "columns",
                   "value", "ci_low", "ci_high", "p_value", "q_value", "raw_gap", "note"),
    "stratum_rates": ("audit", "strategy", "model", "protected_attribute", "stratum", "level",
                      "n_disadvantaged", "decided_1_disadvantaged", "n_advantaged",
                      "decided_1_advantaged", "gap", "weight", "note"),
    "curves": ("audit", "strategy", "model", "threshold", "protected_attribute", "metric",
               "value", "ci_low", "ci_high", "note", "point"),
    "stability": ("audit", "strategy", "model", "protected_attribute", "metric", "seeds",
                  "seed_mode", "note"),
    "effects": ("audit", "strategy", "reference", "model", "protected_attribute", "metric",
                "value", "ci_low", "ci_high", "p_value", "q_value", "note"),
    "frontier": ("audit", "strategy", "model", "protected_attribute", "tolerance", "metric",
                 "violation", "violation_low", "violation_high", "accuracy", "accuracy_low",
                 "accuracy_high", "balanced_accuracy", "balanced_accuracy_low",
                 "balanced_accuracy_high", "note"),
    "matched": ("audit", "strategy", "reference", "model", "protected_attribute", "metric",
                "target", "match", "tolerance", "reference_violation", "value", "ci_low",
                "ci_high", "p_value", "equivalence_p_value", "q_value", "verdict", "note"),
    "self_consistency": ("audit", "strategy", "model", "protected_attribute", "group", "bags",
                         "consistency_level", "n", "n_arbitrary", "share", "ci_low", "ci_high"),
    "arbitrariness": ("audit", "strategy", "model", "protected_attribute", "metric", "bags",
                      "consistency_level", "abstention_rate", "value", "ci_low", "ci_high",
                      "verdict", "note", "single_value", "single_ci_low", "single_ci_high",
                      "single_verdict", "survives"),
    "multiplicity": ("audit", "protected_attribute", "metric", "tolerance", "n_models", "n_set",
                     "gap_min", "gap_max", "value", "ci_low", "ci_high", "q_value",
                     "accuracy_difference", "accuracy_ci_low", "accuracy_ci_high",
                     "equivalence_q_value", "shown", "verdict", "note"),
    "multiplicity_models": ("audit", "protected_attribute", "model_id", "strategy", "model",
                            "member", "accuracy", "gap", "in_set", "role"),
}
"""Each table's required columns (extra columns are kept)."""

GRID_READS: tuple[tuple[str, bool, str], ...] = (
    ("stability", False, "stability"),  # only with training replicates
    ("effects", False, "effects"),  # the paired effects (at K > 1 the K-replicate estimates)
    ("curves", False, "curves"),  # operating-point curves (curves.*)
    ("frontier", False, "frontier"),  # a tolerance curve's frontier (S5)
    ("matched", False, "matched"),  # and its matched-violation comparisons
    ("self_consistency", False, "self_consistency"),  # the bagged ensembles (the bag stage)
    ("arbitrariness", False, "arbitrariness"),
    ("multiplicity", False, "multiplicity"),  # and the set of equally accurate models
    ("multiplicity_models", False, "multiplicity_models"),
    ("fairness", True, "deployed:fairness_all"),
    ("performance", True, "deployed:performance_all"),
    ("intersectional", True, "deployed:intersectional_all"),
    ("stratified", True, "deployed:stratified_all"),
    ("stratum_rates", True, "deployed:stratum_rates_all"),
    ("groups", False, "deployed:groups"),
    ("calibration", False, "deployed:calibration"),
    ("calibration_gap", False, "deployed:calibration_gap"),
    ("stratified", False, "deployed:stratified"),
    ("stratum_rates", False, "deployed:stratum_rates"),
    ("groups", True, "deployed:groups"),  # row set "all": the system on every row
)
"""``(table, in deployed/, where its rows go)`` of a grid run's optional tables, in reading
order: ``<bucket>`` a table of :class:`~faircode.report.inputs.ReportInputs`, ``deployed:<x>``
one of :class:`~faircode.report.inputs.DeployedInputs` (``*_all``: the system on every row)."""


@dataclass(slots=True)
class Found:
    """What the readers found so far, folder by folder (concatenated once all are read)."""

    frames: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    deployed: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, bucket: str, frame: pd.DataFrame) -> None:
        """Append ``frame`` to ``bucket`` (``deployed:<x>``: a deployed system's table)."""
        kind, _, name = bucket.rpartition(":")
        into = self.deployed if kind else self.frames
        into.setdefault(name, []).append(frame)


def read_csv(path: Path, table: str) -> pd.DataFrame:
    """The table ``table`` at ``path``, its required columns checked and its notes (if it has
    them) text."""
    try:
        frame = pd.read_csv(path, keep_default_na=True)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot be read as CSV: {type(exc).__name__}: {exc}") from None
    missing = [c for c in REQUIRED[table] if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: expected columns {', '.join(REQUIRED[table])}, "
                        f"got {describe(list(frame.columns))}; missing {', '.join(missing)}")
    if "note" in frame:  # the tables without one (self_consistency, multiplicity_models)
        frame["note"] = frame["note"].astype(object).where(frame["note"].notna(), "").astype(str)
    return frame


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot be read as JSON: {type(exc).__name__}: {exc}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object, got {describe(data)}")
    return data


def read_note(folder: Path, found: Found) -> None:
    """The pipeline's note of an audit without data: ``{"audit", "reason", "instructions"}``,
    or the stages' ``{"audit", "available", "message"}`` (the message is ``<audit>: dataset
    unavailable: <how to obtain it>``)."""
    where = folder / UNAVAILABLE_NOTE
    data = _read_json(where)
    if isinstance(data.get("message"), str) and "reason" not in data:
        message = str(data["message"])
        _, sep, how = message.partition("dataset unavailable: ")
        data = {"audit": data.get("audit"), "reason": "dataset unavailable",
                "instructions": how if sep else message}
    if not isinstance(data.get("reason"), str):
        raise DataError(f"{where}: reason: expected a string, got {describe(data.get('reason'))}")
    found.notes[folder.name] = {"audit": str(data.get("audit", folder.name)),
                                "reason": data["reason"],
                                "instructions": str(data.get("instructions") or "")}


def _split_deployed(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``(grid rows, deployed rows or None)``: a frame without deployed rows is returned as is."""
    mine = frame["strategy"].astype(str).eq(DEPLOYED).to_numpy()
    if not mine.any():
        return frame, None
    return frame[~mine].reset_index(drop=True), frame[mine].reset_index(drop=True)


def read_grid_run(folder: Path, found: Found) -> None:
    """A run of a kind with the grid: its record (once the folder holds exactly the files it
    records, byte for byte: :func:`~faircode.core.digests.checked_run`), its main tables and
    every optional table of :data:`GRID_READS` it has."""
    found.runs[folder.name] = checked_run(folder)
    for table in MAIN_TABLES:
        path = table_path(folder, table)
        if not path.is_file():
            raise DataError(f"{folder}: expected {table_file(table)} beside {RUN_RECORD}, "
                            "got none")
        grid, system = _split_deployed(read_csv(path, table))
        found.add(table, grid)
        if system is not None:
            found.add(f"deployed:{table}", system)
    for table, deployed, bucket in GRID_READS:
        path = deployed_path(folder, table) if deployed else table_path(folder, table)
        if path.is_file():
            found.add(bucket, read_csv(path, table))


def read_sensitivity(path: Path, *, only: Sequence[str]) -> pd.DataFrame:
    """``bench/encoding_sensitivity.py``'s table (empty without the file), ``only``'s audits."""
    columns = ("audit", "claim", "label", "onehot", "changed", "seeds")
    if not path.is_file():
        return pd.DataFrame()
    try:
        frame = pd.read_csv(path, keep_default_na=False, dtype=str)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot be read as CSV: {type(exc).__name__}: {exc}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: expected columns {', '.join(columns)}, got "
                        f"{describe(list(frame.columns))}; missing {', '.join(missing)}")
    return frame[frame["audit"].isin(only)] if only else frame
