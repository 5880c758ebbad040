"""A practitioner's own predictions, read from a file and joined to an audit's rows on a key.

``faircode audit`` scores decisions (and/or scores) that were made outside faircode: a CSV or
parquet file with a key column naming the audit's rows and the user's decision and/or score
columns.  :func:`read_predictions` reads and validates such a file against the audit's rows'
keys (:class:`faircode.audit.outputs.RowKeys`, from ``load_audit(manifest, key=...)``) and
returns an :class:`ExternalPredictions` aligned with the audit's row positions.  It writes
nothing; every bad file is one :class:`~faircode.core.errors.DataError` line naming the file, the
line (or parquet row), the column and an example value.

Design decisions
----------------
* **Joined on the key, never on row order.**  The file's rows may come in any order; the
  result is ordered by the audit's row positions, so a shuffled file gives identical arrays.
  Keys are compared in one canonical text form (:func:`faircode.audit.outputs.key_text`), so an
  integer id column joins a file whose ids parquet stored as strings.
* **A key is a key**: missing or repeated in the file is an error (a repeat names its two lines);
  a key that is no row of the raw file at all is an error (a join on the wrong column, or a
  file for another data set).  A key of a row the raw file has but the audit drops (a row
  filter, an underivable target, an unclassified attribute) is **ignored and counted**
  (:attr:`ExternalPredictions.n_outside`): a practitioner scores the whole file, and forcing
  them to re-implement the manifest's filters first would invite exactly the mistakes the
  manifest exists to prevent.  Only the joined rows' values are checked.
* **Every audit row must be covered** unless ``allow_partial=True``.  Auditing only the covered
  rows silently changes the population (the rows a model failed to score are rarely random), and
  a comparison with the grid or the deployed system would then be on different people; so a
  missing row is an error naming the first missing key, and partial coverage is an explicit
  choice whose count (:attr:`ExternalPredictions.n_missing`) travels with the result.
* **Values** are checked by the checks the manifest's deployed system uses
  (:func:`~faircode.audit.outputs.check_decisions`, :func:`~faircode.audit.outputs.check_scores`):
  a decision is 0/1 (also true/false, yes/no), a score a finite number, an integer level for
  ``scale="ordinal"`` and in ``[0, 1]`` for ``"probability"``; a missing value on a joined row is
  an error, never a dropped row.
* CSV files are scanned for their row lines first (:func:`faircode.audit._data_read.data_lines`:
  a row of another width is an error naming its line), then only the named columns are parsed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit._data_read import data_lines, read_csv
from faircode.audit.fetch import sha256_file
from faircode.audit.manifest import SCORE_SCALES, ReadOptions, ScoreScale
from faircode.audit.outputs import (
    RowKeys,
    check_decisions,
    check_keys,
    check_scores,
    python_value,
)
from faircode.core.errors import DataError, describe

__all__ = ["SUFFIXES", "ExternalPredictions", "read_predictions"]

SUFFIXES: tuple[str, ...] = (".csv", ".parquet", ".pq")
"""File name endings :func:`read_predictions` reads (CSV, or parquet), in any case."""
_CSV = "to parse as CSV (comma-separated, UTF-8, one header row)"


@dataclass(frozen=True, slots=True)
class ExternalPredictions:
    """Predictions joined to an audit: per covered audit row its decision and/or score.

    ``positions`` are the covered audit row positions, ascending; ``decision[i]`` and
    ``score[i]`` belong to audit row ``positions[i]``.  ``n_outside`` counts the file's rows
    whose key is a row the audit drops (ignored); ``n_missing`` the audit rows the file does not
    cover (0 unless read with ``allow_partial``).
    """

    path: Path
    sha256: str
    key: str
    positions: np.ndarray
    decision: np.ndarray | None
    score: np.ndarray | None
    scale: ScoreScale | None
    decision_column: str | None = None
    score_column: str | None = None
    n_outside: int = 0
    n_missing: int = 0

    def __post_init__(self) -> None:
        n = self.positions.size
        if self.decision is None and self.score is None:
            raise ValueError("ExternalPredictions: expected a decision and/or a score")
        if self.positions.dtype != np.int64 or (n > 1 and (np.diff(self.positions) <= 0).any()):
            raise ValueError("ExternalPredictions: positions: expected ascending int64")
        for name, values, dtype in (("decision", self.decision, np.int8),
                                    ("score", self.score, np.float64)):
            if values is not None and (values.shape != (n,) or values.dtype != dtype):
                raise ValueError(f"ExternalPredictions: {name}: expected {dtype.__name__} per "
                                 f"position ({n}), got {values.dtype} {values.shape}")
        if (self.score is None) != (self.scale is None):
            raise ValueError("ExternalPredictions: expected a scale exactly with a score")


def _columns(path: Path) -> list[str]:
    """The column names of a CSV header or a parquet schema."""
    if path.suffix.lower() == ".csv":
        return [str(c) for c in read_csv(ReadOptions(), path, where=str(path), expected=_CSV,
                                         nrows=0).columns]
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DataError(f"{path}: expected a parquet file, got {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())}") from None


def _read(path: Path, columns: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The named columns of ``path`` and where each row is (``line N`` or ``row N``)."""
    if path.suffix.lower() == ".csv":
        lines, end = data_lines(path, ReadOptions(), where=str(path), expected=_CSV)
        if not lines:
            raise DataError(f"{path}: line {end}: expected data rows below the header, got none")
        frame = read_csv(ReadOptions(), path, where=str(path), expected=_CSV, usecols=columns,
                         low_memory=False)
        if len(frame) != len(lines):  # pandas and csv disagree on an odd file: number rows
            lines = [f"data row {i + 1}" for i in range(len(frame))]
        return frame, np.asarray(lines, dtype=object)
    try:
        frame = pd.read_parquet(path, columns=columns)
    except Exception as exc:
        raise DataError(f"{path}: expected a parquet file, got {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())}") from None
    if frame.empty:
        raise DataError(f"{path}: row 1: expected data rows, got none")
    return frame.reset_index(drop=True), np.asarray(
        [f"row {i + 1}" for i in range(len(frame))], dtype=object)


def _check_request(path: Path, *, key: str, decision: str | None, score: str | None,
                   scale: str | None) -> None:
    """Refuse a request that names no output, a score without scale, or reused columns."""
    if decision is None and score is None:
        raise DataError(f"{path}: expected a decision column and/or a score column, got neither")
    if score is not None and scale not in SCORE_SCALES:
        raise DataError(f"{path}: score column {score!r}: expected a scale of "
                        f"{', '.join(SCORE_SCALES)}, got {describe(scale)}")
    for role, column in (("decision", decision), ("score", score)):
        if column == key:
            raise DataError(f"{path}: {role} column: expected a column other than the key "
                            f"column, got {describe(column)}")


def _join(path: Path, keys: np.ndarray, lines: np.ndarray, rows: RowKeys, *, key: str,
          frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``(position per file row, -1 outside; joined mask)``; raise at an unknown key."""
    position = pd.Index(rows.kept.astype(str)).get_indexer(keys.astype(str))
    joined = position >= 0
    outside = ~joined & np.isin(keys.astype(str), rows.dropped.astype(str))
    unknown = ~joined & ~outside
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise DataError(f"{path}: {lines[i]}: column {key!r} (key): expected a key of one of the "
                        f"audit's rows, got {describe(python_value(frame[key].iloc[i]))}")
    return position.astype(np.int64), joined


def read_predictions(
    path: Path | str,
    *,
    key: str,
    rows: RowKeys,
    decision: str | None = None,
    score: str | None = None,
    scale: ScoreScale | None = None,
    allow_partial: bool = False,
) -> ExternalPredictions:
    """Read ``path`` (CSV or parquet), join it to the audit's ``rows`` on ``key``, validate it.

    ``rows`` are the audit's keys (``load_audit(manifest, key=...).keys``, or ``by_position``);
    ``key`` names the file's column holding them (the raw file's may have another name, or be
    the row position); ``decision`` and ``score`` name the file's columns (at least one),
    ``scale`` the score's scale.  Raises :class:`DataError` (one line: file, line, column,
    value) for every bad file (module docstring); writes nothing.
    """
    path = Path(path)
    _check_request(path, key=key, decision=decision, score=score, scale=scale)
    if path.suffix.lower() not in SUFFIXES:
        raise DataError(f"{path}: expected a file ending in {', '.join(SUFFIXES)}, got "
                        f"{describe(path.suffix)}")
    if not path.is_file():
        raise DataError(f"{path}: expected a predictions file, got no such file")
    header = _columns(path)
    wanted = [(key, "key"), *((c, r) for r, c in (("decision", decision), ("score", score))
                              if c is not None)]
    for column, role in wanted:
        if column not in header:
            close = difflib.get_close_matches(column, header, n=3, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise DataError(f"{path}: {role} column: expected a column of {path.name}, got "
                            f"{describe(column)}{hint}")
    frame, lines = _read(path, list(dict.fromkeys(c for c, _ in wanted)))
    keys = check_keys(frame[key], at=f"{path}: {{}}: column {key!r} (key)", rows=lines)
    position, joined = _join(path, keys, lines, rows, key=key, frame=frame)
    covered = np.zeros(rows.kept.size, dtype=bool)
    covered[position[joined]] = True
    if not allow_partial and not covered.all():
        first = rows.kept[int(np.flatnonzero(~covered)[0])]
        raise DataError(f"{path}: column {key!r} (key): expected a row for each of the audit's "
                        f"{rows.kept.size:,} rows, got none for {int((~covered).sum()):,} of "
                        f"them, first {describe(first)}")
    order = np.flatnonzero(joined)[np.argsort(position[joined], kind="stable")]
    part, where = frame.iloc[order].reset_index(drop=True), lines[order]
    decided = None if decision is None else check_decisions(
        part[decision], at=f"{path}: {{}}: column {decision!r} (decision)", rows=where)
    scored = None if score is None else check_scores(
        part[score], scale=scale or "probability",
        at=f"{path}: {{}}: column {score!r} (score)", rows=where)
    return ExternalPredictions(
        path=path, sha256=sha256_file(path), key=key, positions=position[order],
        decision=decided, score=scored, scale=scale if score is not None else None,
        decision_column=decision, score_column=score,
        n_outside=int((~joined).sum()), n_missing=int((~covered).sum()))
