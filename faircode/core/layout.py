"""The results folder: the name of every file in it, which kind of run a folder holds, its tables.

Every writer and reader of a results folder -- the evaluate step and ``faircode run``,
``faircode audit`` and ``faircode flips``, the report, MLflow (:mod:`faircode.record`), the
digests (:mod:`faircode.core.digests`), freeze/verify and the DVC stages -- takes its names
from here (``tests/test_layout.py`` fails on a results file name spelled anywhere else)::

    <results>/
      <audit>/                      one per audit (audit_folders)
        run.json                    RUN_RECORD: what produced the folder, the sha256 of every
                                    other file, its kind ("kind"; absent: the grid's)
        unavailable.json            UNAVAILABLE_NOTE: instead of all else, an audit without data
        <table>.csv                 table_file: the tables of the run's kind
                                    (faircode.core.kinds.TaskKind.tables)
        deployed/<table>.csv        DEPLOYED_FOLDER: a deployed system's tables on every row
      summary.csv, summary_families.csv, residual_floor.csv     the report's (REPORT_FILES)
      <name>.md, <name>.tex         the paper tables (paper_table_files), text_table.md,
                                    multiclass_table.md, ranking_table.md
      report.html                   REPORT_PAGE
      encoding_sensitivity.csv      ENCODING_SENSITIVITY (bench/encoding_sensitivity.py)
      figures/                      FIGURES, with its record inputs.json (FIGURES_RECORD)
      metrics/<audit>.json, metrics/full/<audit>.json, metrics/<audit>-strategies.json,
      curves/<audit>.csv            the evaluate stage's DVC views (dvc_views)

Design decisions
----------------
* **Names, not policy.**  This module says where a file is and what kind of run a folder
  holds; which tables a kind writes is the kind's (:mod:`faircode.core.kinds`), how a table is
  read or written its wing's.  The table names below are the ones the shipped kinds and
  ``faircode flips`` write.
* **A run's kind is its** ``run.json`` ``kind`` (:func:`run_kind`); the grid's record has
  none (its files predate the key, and no byte of them may change), so an absent ``kind`` is
  :data:`GRID_RUN`.  A record that cannot be read counts as the grid's too: the grid's reader
  then names what is wrong with it (:func:`faircode.core.digests.checked_run`).
* The pipeline's note of an audit without data is one file, here: written by
  :func:`write_unavailable`, read by :func:`unavailable_message` (the raw, prepared,
  predictions and results folders carry the same note forward).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ARBITRARINESS_TABLES",
    "COUNTERFACTUAL_SCORES_RUN",
    "DEPLOYED_FOLDER",
    "DEPLOYED_TABLES",
    "EFFECT_TABLES",
    "ENCODING_SENSITIVITY",
    "FIGURES",
    "FIGURES_PREVIOUS",
    "FIGURES_RECORD",
    "FLIP_TABLES",
    "GRID_EXTRA_TABLES",
    "GRID_RUN",
    "GRID_TABLES",
    "MATCHED_TABLES",
    "MULTICLASS_EXTRA_TABLES",
    "MULTICLASS_RUN",
    "MULTICLASS_TABLE",
    "MULTICLASS_TABLES",
    "RANKING_TABLE",
    "RANKING_TABLES",
    "REGRESSION_EXTRA_TABLES",
    "REGRESSION_RUN",
    "REGRESSION_TABLE",
    "REGRESSION_TABLES",
    "REPORT_FILES",
    "REPORT_PAGE",
    "RESIDUAL_FLOOR",
    "RUN_RECORD",
    "STABILITY_TABLES",
    "SUMMARY",
    "SUMMARY_FAMILIES",
    "TEXT_RUN",
    "TEXT_TABLE",
    "TEXT_TABLES",
    "UNAVAILABLE",
    "UNAVAILABLE_NOTE",
    "DvcViews",
    "audit_folders",
    "deployed_path",
    "dvc_views",
    "file_names",
    "folder_kind",
    "paper_table_files",
    "run_kind",
    "run_record",
    "table_file",
    "table_path",
    "unavailable_message",
    "write_unavailable",
]

# ---------------------------------------------------------------------------- one audit's folder
RUN_RECORD = "run.json"
"""An audit's record: what produced its folder and the sha256 of every other file."""
UNAVAILABLE_NOTE = "unavailable.json"
"""The pipeline's note of an audit without data (``{"audit", "available": false, "message"}``)."""
DEPLOYED_FOLDER = "deployed"
"""The sub-folder of a deployed system's tables on every row of the audit."""

GRID_RUN = "grid"
"""The kind of a run whose ``run.json`` has no ``kind``: the grid's (and ``faircode audit``'s)."""
TEXT_RUN = "text"
"""The ``kind`` of a text audit's ``run.json``."""
REGRESSION_RUN = "regression"
"""The ``kind`` of a regression audit's ``run.json``."""
MULTICLASS_RUN = "multiclass"
"""The ``kind`` of a multi-class audit's ``run.json``."""
COUNTERFACTUAL_SCORES_RUN = "counterfactual_scores"
"""The ``kind`` of a folder ``faircode flips`` wrote (two score files, no manifest)."""
UNAVAILABLE = "unavailable"
"""The kind of a folder holding the pipeline's :data:`UNAVAILABLE_NOTE` and no record."""

GRID_TABLES = ("fairness", "performance", "intersectional", "counterfactual", "groups",
               "calibration", "calibration_gap")
"""The tables every grid run writes (each ``<name>.csv``)."""
GRID_EXTRA_TABLES = ("stratified", "stratum_rates", "curves")
"""A grid run's tables when it has them: the gaps conditional on declared strata and the
strata's per-level counts and rates (both also in ``deployed/``), the operating-point curves."""
EFFECT_TABLES = ("effects", "effects_stability", "effects_replicates")
"""The paired effects of the strategies; at K > 1 also across and per training replicate."""
MATCHED_TABLES = ("frontier", "matched")
"""A tolerance curve's tables (S5): every strategy's point and the curve on the first
attribute, and the matched-violation comparisons (:mod:`faircode.evaluate.matched`)."""
STABILITY_TABLES = ("stability", "stability_replicates")
"""Training variance across seeds (``run.seeds`` > 1 only)."""
ARBITRARINESS_TABLES = ("self_consistency", "arbitrariness", "multiplicity",
                        "multiplicity_models")
"""The bagged ensembles and the set of equally accurate models (where the bagging stage ran):
each group's share of arbitrary decisions, the gap after abstention beside the single model's,
the test of a less discriminatory alternative, and every model of the set."""
DEPLOYED_TABLES = ("fairness", "performance", "intersectional", "groups", "calibration",
                   "calibration_gap")
"""The tables of ``deployed/`` (and ``stratified``, ``stratum_rates`` with declared strata)."""
TEXT_TABLES = ("flips", "ctf", "placebo", "terms", "auc", "operating_points", "systems")
"""The tables of a text audit's run."""
FLIP_TABLES = ("flips", "ctf")
"""The tables of a ``faircode flips`` folder."""
REGRESSION_TABLES = ("regression_gaps", "regression_groups", "strategies")
"""The tables of a regression audit's run: every row set's gaps, its groups, and the grid's
strategies with the reason of those that do not apply."""
REGRESSION_EXTRA_TABLES = ("regression_strata", "regression_replicates")
"""A regression run's tables when it has them: the mean gap within declared strata, and at
K > 1 every training replicate's gaps."""
MULTICLASS_TABLES = ("class_gaps", "class_tests", "strategies")
"""The tables of a multi-class audit's run: every row set's class shares and gaps by group, its
joint tests, and the grid's strategies (fitted, or ``n/a`` with the reason)."""
MULTICLASS_EXTRA_TABLES = ("class_replicates",)
"""A multi-class run's table at ``run.seeds`` > 1: every training replicate's joint tests."""
RANKING_TABLES = ("ranking", "ranking_topk")
"""The ranking view of a scored run (the grid's S0-S2 scores on the test rows, a deployed
system's score; also in ``deployed/``): exposure and FA*IR per row set and attribute, and the
top-k shares with their simultaneous band."""

# ---------------------------------------------------------------------------- beside the audits
SUMMARY = "summary.csv"
SUMMARY_FAMILIES = "summary_families.csv"
RESIDUAL_FLOOR = "residual_floor.csv"
REPORT_PAGE = "report.html"
TEXT_TABLE = "text_table.md"
"""The text audits' tables, as one markdown file."""
REGRESSION_TABLE = "regression_table"
"""The regression audits' paper table (:func:`paper_table_files`: its ``.md``, every section,
and its ``.tex``, the headline gaps in the outcomes' units)."""
MULTICLASS_TABLE = "multiclass_table.md"
"""The multi-class audits' joint tests and class gaps, as one markdown file."""
RANKING_TABLE = "ranking_table.md"
"""The scored audits' ranking views (exposure, FA*IR), as one markdown file."""
ENCODING_SENSITIVITY = "encoding_sensitivity.csv"
"""``bench/encoding_sensitivity.py``'s table, read by the report where it exists."""
REPORT_FILES = (SUMMARY, SUMMARY_FAMILIES, RESIDUAL_FLOOR, REPORT_PAGE, TEXT_TABLE,
                MULTICLASS_TABLE, RANKING_TABLE)
"""The report's own files beside the audit folders (and the paper tables, the figures)."""
FIGURES = "figures"
"""The report's figures folder (written whole by the report)."""
FIGURES_RECORD = "inputs.json"
"""``figures/inputs.json``: each figure's key, name and caption (figure reuse)."""
FIGURES_PREVIOUS = ".figures-previous"
"""The previous figures while a report draws the new ones (hidden: no reader sees it)."""
_METRICS = "metrics"
_FULL = "full"
_CURVES = "curves"


def table_file(table: str) -> str:
    """The file name of the table ``table`` (``fairness`` -> ``fairness.csv``)."""
    return f"{table}.csv"


def table_path(folder: Path, table: str) -> Path:
    """``<folder>/<table>.csv``."""
    return folder / table_file(table)


def deployed_path(folder: Path, table: str) -> Path:
    """``<folder>/deployed/<table>.csv``: the deployed system's table on every row."""
    return folder / DEPLOYED_FOLDER / table_file(table)


def run_record(folder: Path) -> Path:
    """``<folder>/run.json``."""
    return folder / RUN_RECORD


def paper_table_files(name: str) -> tuple[str, str]:
    """The files of the report's table ``name``: ``(<name>.md, <name>.tex)``."""
    return f"{name}.md", f"{name}.tex"


def file_names() -> frozenset[str]:
    """Every fixed file name of a results folder (tables of every kind included): what no
    module but this one spells (``tests/test_layout.py``)."""
    tables = {*GRID_TABLES, *GRID_EXTRA_TABLES, *EFFECT_TABLES, *MATCHED_TABLES,
              *STABILITY_TABLES, *ARBITRARINESS_TABLES, *DEPLOYED_TABLES, *TEXT_TABLES,
              *FLIP_TABLES, *REGRESSION_TABLES, *REGRESSION_EXTRA_TABLES, *MULTICLASS_TABLES,
              *MULTICLASS_EXTRA_TABLES, *RANKING_TABLES}
    return frozenset({RUN_RECORD, UNAVAILABLE_NOTE, *REPORT_FILES, ENCODING_SENSITIVITY,
                      FIGURES_RECORD, *(table_file(t) for t in tables)})


@dataclass(frozen=True, slots=True)
class DvcViews:
    """An audit's DVC views beside the results: the headline metrics, the full summary, the
    strategy-plot data and the parity-gap curve."""

    headline: Path
    full: Path
    strategies: Path
    curve: Path

    def __iter__(self) -> Iterator[Path]:
        """The four paths, in the order above."""
        return iter((self.headline, self.full, self.strategies, self.curve))


def dvc_views(results: Path, audit: str) -> DvcViews:
    """``metrics/<audit>.json``, ``metrics/full/<audit>.json``,
    ``metrics/<audit>-strategies.json`` and ``curves/<audit>.csv`` under ``results``."""
    metrics = results / _METRICS
    return DvcViews(metrics / f"{audit}.json", metrics / _FULL / f"{audit}.json",
                    metrics / f"{audit}-strategies.json", results / _CURVES / f"{audit}.csv")


# ---------------------------------------------------------------------------- kinds of folder
def run_kind(run: Mapping[str, Any]) -> str:
    """The kind of run a ``run.json`` records: its ``kind``, :data:`GRID_RUN` without one."""
    kind = run.get("kind")
    return kind if isinstance(kind, str) and kind else GRID_RUN


def folder_kind(folder: Path) -> str | None:
    """Which kind of run ``folder`` holds: :func:`run_kind` of its ``run.json`` (an unreadable
    record: :data:`GRID_RUN`, whose reader names the defect), :data:`UNAVAILABLE` for the
    pipeline's note alone, ``None`` for a folder holding neither."""
    record = run_record(folder)
    if record.is_file():
        try:
            run = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return GRID_RUN
        return run_kind(run) if isinstance(run, dict) else GRID_RUN
    return UNAVAILABLE if (folder / UNAVAILABLE_NOTE).is_file() else None


def audit_folders(results: Path) -> list[Path]:
    """The audit folders of ``results`` -- each holding a ``run.json`` or the pipeline's note --
    sorted by name; hidden folders (a writer's staging copies) and the report's and DVC views'
    folders are none (an empty list when ``results`` is not a folder)."""
    if not results.is_dir():
        return []
    return sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and folder_kind(p) is not None)


# ---------------------------------------------------------------------------- the unavailable note
def write_unavailable(folder: Path, *, audit: str, message: str) -> None:
    """Replace ``folder``'s content with the single note saying that ``audit`` has no data."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():  # a persisted results folder may hold a deployed/ folder
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    note = {"audit": audit, "available": False, "message": message}
    (folder / UNAVAILABLE_NOTE).write_text(json.dumps(note, indent=2) + "\n")


def unavailable_message(folder: Path) -> str | None:
    """The message of ``folder``'s unavailable note (``None`` without one)."""
    note = folder / UNAVAILABLE_NOTE
    if not note.is_file():
        return None
    return str(json.loads(note.read_text())["message"])
