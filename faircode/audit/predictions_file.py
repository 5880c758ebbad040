"""A practitioner's own predictions, read from a file in chunks, joined to an audit's rows on a key.

``faircode audit`` scores decisions (and/or scores) that were made outside faircode: a CSV
(plain or compressed) or Parquet file with a key column naming the audit's rows and the user's
decision and/or score columns.  :class:`PredictionsReader` reads and validates such a file
against the audit's rows' keys (:class:`faircode.audit.outputs.RowKeys`, from
``load_audit(manifest, key=...)``) one chunk at a time (:mod:`faircode.audit.table_file`), each
chunk joined to the audit's row positions -- a keyed lookup, so the file is never held whole and
no Python object is kept per row of the file.  :func:`read_predictions` collects the chunks into
an :class:`ExternalPredictions` aligned with the audit's row positions (the in-memory path).
Nothing is written; every bad file is one :class:`~faircode.core.errors.DataError` line naming
the file, the line (or parquet row), the column and an example value.

Design decisions
----------------
* **Joined on the key, never on row order.**  The file's rows may come in any order; the
  result is ordered by the audit's row positions, so a shuffled file gives identical arrays.
  Keys are compared in one canonical text form (:func:`faircode.audit.outputs.key_text`), so an
  integer id column joins a file whose ids parquet stored as strings.
* **A key is a key**: missing or repeated in the file is an error (a repeat names its two lines,
  also across chunks: the line of each key's first row is kept per audit row); a key that is no
  row of the raw file at all is an error (a join on the wrong column, or a file for another data
  set).  A key of a row the raw file has but the audit drops (a row filter, an underivable
  target, an unclassified attribute) is **ignored and counted**
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
  an error, never a dropped row.  The first bad value *in file order* is reported.  With
  ``classes`` (a multi-class audit's ``target.values``) a decision is a predicted class
  (:func:`~faircode.audit.outputs.check_classes`), and a ``rank`` column is a rank (1 = the top,
  :func:`~faircode.audit.outputs.check_ranks`) for the ranking view, beside the decisions.
* A header naming a column twice is refused (:func:`faircode.audit.table_file.open_table`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit._data_read import raw_header
from faircode.audit.fetch import sha256_file
from faircode.audit.manifest import SCORE_SCALES, Manifest, ScoreScale
from faircode.audit.outputs import (
    RowKeys,
    check_classes,
    check_decisions,
    check_keys,
    check_ranks,
    check_scores,
    python_value,
)
from faircode.audit.table_file import Chunk, TableFile, open_table
from faircode.core.errors import DataError, describe

__all__ = ["JOIN_ROWS", "ExternalPredictions", "JoinedChunk", "PredictionsReader", "find_key",
           "read_predictions"]

JOIN_ROWS = 1 << 18
"""Rows of a predictions file read at a time by default (the audit's rows are in memory)."""


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


@dataclass(frozen=True, slots=True)
class JoinedChunk:
    """One chunk's joined rows: audit row positions (file order) and their decisions/scores
    (a multi-class audit's decisions: class codes), and ranks."""

    positions: np.ndarray
    decision: np.ndarray | None
    score: np.ndarray | None
    rank: np.ndarray | None = None


class _Where(Sequence[str]):
    """``rows[i]`` of a chunk: where its row ``i`` is in the file (made only when shown)."""

    def __init__(self, table: TableFile, chunk: Chunk, rows: np.ndarray | None = None) -> None:
        self._table, self._chunk, self._rows = table, chunk, rows

    def __len__(self) -> int:
        return len(self._chunk) if self._rows is None else int(self._rows.size)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        row = int(i) if self._rows is None else int(self._rows[int(i)])
        return self._table.where(self._chunk.file, self._chunk.start + row)


def _check_request(path: Path, *, key: str, decision: str | None, score: str | None,
                   scale: str | None, rank: str | None = None) -> None:
    """Refuse a request that names no output, a score without scale, a rank without a
    decision, or reused columns."""
    if decision is None and score is None:
        raise DataError(f"{path}: expected a decision column and/or a score column, got neither")
    if rank is not None and decision is None:
        raise DataError(f"{path}: rank column {rank!r}: expected a decision column beside it "
                        "(the decisions the tables are of), got none")
    if score is not None and scale not in SCORE_SCALES:
        raise DataError(f"{path}: score column {score!r}: expected a scale of "
                        f"{', '.join(SCORE_SCALES)}, got {describe(scale)}")
    for role, column in (("decision", decision), ("score", score), ("rank", rank)):
        if column == key:
            raise DataError(f"{path}: {role} column: expected a column other than the key "
                            f"column, got {describe(column)}")


def check_columns(table: TableFile, wanted: Sequence[tuple[str, str]]) -> None:
    """Refuse a named column the file does not have (naming the closest of its columns)."""
    for column, role in wanted:
        if column not in table.columns:
            close = difflib.get_close_matches(column, list(table.columns), n=3, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise DataError(f"{table.path}: {role} column: expected a column of "
                            f"{table.path.name}, got {describe(column)}{hint}")


def find_key(manifest: Manifest, table: TableFile, *, outputs: Sequence[str]) -> tuple[str, str]:
    """The file's key column when ``--key`` is not given, and why it is the one.

    A declared ``dataset.row_id`` column is the key.  Otherwise the key is the one column of the
    file that can be one: for ``row_id: position``, its one column that is neither an output
    (``outputs``: the decision and score columns) nor a column of the raw file; without a
    declaration, its one column that is also a raw file's column, not an output and not read by
    the manifest (a feature, the target, a group or filter column is no key).  None, or more
    than one, is an error naming the candidates and ``--key``.
    """
    declared = manifest.dataset.row_id
    raw, name = Path(manifest.dataset.declared_path).name, table.path.name
    if declared is not None and declared.column is not None:
        return declared.column, f"the manifest's dataset.row_id column {declared.column!r}"
    header = raw_header(manifest)
    free = [c for c in table.columns if c not in outputs]
    if declared is not None:
        found = _integer_columns(table, [c for c in free if c not in header])
        why = f"the one integer column of {name} that is no decision, score or column of " \
              f"{raw}: each row's position in {raw} (dataset.row_id: position)"
        expected = f"a column of {name} holding each row's position in {raw} (0 = its first " \
                   "data row)"
    else:
        found = [c for c in free if c in header and c not in manifest.read_columns]
        why = f"the one column of {name} that {raw} also has and the audit does not read"
        expected = f"a column naming each row, in {name} and in {raw} (no feature, target or " \
                   "group column)"
    if len(found) == 1:
        return found[0], why
    how = ("" if declared is not None else
           f"; a raw file without a key column can declare dataset.row_id: position in "
           f"{manifest.file}")
    got = f"{len(found)} candidates ({', '.join(found)})" if found else "no candidate"
    raise DataError(f"faircode audit: --key: expected {expected}, got {got}{how}")


def _integer_columns(table: TableFile, columns: list[str]) -> list[str]:
    """Those of ``columns`` whose values in the file's first rows are integers (a position can
    only be one; a score column beside it is not a candidate)."""
    if not columns:
        return []
    first = next(table.chunks(columns, rows=1000), None)
    if first is None:
        return columns
    return [c for c in columns if pd.api.types.is_integer_dtype(first.frame[c])]


class PredictionsReader:
    """A predictions file joined to an audit's ``rows`` on ``key``, read chunk by chunk.

    Iterate :meth:`chunks` once; afterwards :attr:`n_outside` and :attr:`n_missing` hold the
    counts (the coverage check runs after the last chunk).  ``sha256`` is the file's digest.
    """

    def __init__(self, path: Path | str, *, key: str, rows: RowKeys, decision: str | None = None,
                 score: str | None = None, scale: ScoreScale | None = None,
                 allow_partial: bool = False, chunk_rows: int = JOIN_ROWS,
                 rank: str | None = None, classes: Sequence[str] | None = None) -> None:
        self.path = Path(path)
        if rows.column != key:
            raise ValueError(f"rows: expected the keys of column {key!r}, got {rows.column!r}")
        _check_request(self.path, key=key, decision=decision, score=score, scale=scale,
                       rank=rank)
        self.table = open_table(self.path)
        wanted = [(key, "key"), *((c, r) for r, c in (("decision", decision), ("score", score),
                                                       ("rank", rank)) if c is not None)]
        check_columns(self.table, wanted)
        self.table.check_flat({c: f"{r} column" for c, r in reversed(wanted)})
        self.columns = list(dict.fromkeys(c for c, _ in wanted))
        self.key, self.rows, self.decision, self.score = key, rows, decision, score
        self.rank, self.classes = rank, None if classes is None else tuple(classes)
        self.scale = scale if score is not None else None
        self.allow_partial, self.chunk_rows = allow_partial, chunk_rows
        self.sha256 = sha256_file(self.path) if self.path.is_file() else ""
        self.n_outside = self.n_missing = 0
        self._integer_index: tuple[pd.Index, pd.Index] | None = None

    def chunks(self) -> Iterator[JoinedChunk]:
        """The joined rows of every chunk, in file order; raises at the first bad row."""
        kept = pd.Index(self.rows.kept.astype(str))
        dropped = pd.Index(self.rows.dropped.astype(str))
        self._integer_index = _integer_index(self.rows)
        first_kept = np.full(kept.size, -1, dtype=np.int64)      # global row of each key's row
        first_dropped = np.full(dropped.size, -1, dtype=np.int64)
        seen = 0
        for chunk in self.table.chunks(self.columns, rows=self.chunk_rows):
            seen += len(chunk)
            if len(chunk):
                yield self._join(chunk, kept, dropped, first_kept, first_dropped)
        if not seen:
            below = " below the header" if self.table.is_csv else ""
            raise DataError(f"{self.path}: {self.table.end()}: expected data rows{below}, "
                            "got none")
        covered = first_kept >= 0
        self.n_missing = int((~covered).sum())
        if not self.allow_partial and self.n_missing:
            first = self.rows.kept[int(np.flatnonzero(~covered)[0])]
            raise DataError(f"{self.path}: column {self.key!r} (key): expected a row for each of "
                            f"the audit's {kept.size:,} rows, got none for {self.n_missing:,} of "
                            f"them, first {describe(first)}")

    def _lookup(self, values: pd.Series, where: _Where, index: tuple[pd.Index, pd.Index]
                ) -> tuple[np.ndarray, np.ndarray]:
        """Each row's position among the kept and the dropped keys (-1: not one).

        Integer keys are looked up as integers when every audit key is an integer's text (no
        string per row); anything else by its canonical text (:func:`check_keys`).
        """
        at = f"{self.path}: {{}}: column {self.key!r} (key)"
        if self._integer_index is not None and pd.api.types.is_integer_dtype(values):
            numbers = values.to_numpy(dtype=np.int64)
            order = np.argsort(numbers, kind="stable")
            repeat = np.flatnonzero(numbers[order][1:] == numbers[order][:-1])
            if repeat.size:  # raises as the text path does: the first repeat in file order
                check_keys(values, at=at, rows=where)
            ints = self._integer_index
            found = pd.Index(numbers)
            return ints[0].get_indexer(found), ints[1].get_indexer(found)
        text = pd.Index(check_keys(values, at=at, rows=where).astype(str))
        return index[0].get_indexer(text), index[1].get_indexer(text)

    def _join(self, chunk: Chunk, kept: pd.Index, dropped: pd.Index, first_kept: np.ndarray,
              first_dropped: np.ndarray) -> JoinedChunk:
        frame, key = chunk.frame, self.key
        where = _Where(self.table, chunk)
        position, other = self._lookup(frame[key], where, (kept, dropped))
        joined = position >= 0
        unknown = ~joined & (other < 0)
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            raise DataError(f"{self.path}: {where[i]}: column {key!r} (key): expected a key of "
                            f"one of the audit's rows, got "
                            f"{describe(python_value(frame[key].iloc[i]))}")
        rows = np.arange(len(frame), dtype=np.int64) + chunk.start
        for seen, index in ((first_kept, position), (first_dropped, other)):
            hit = index >= 0
            if not hit.any():
                continue
            again = hit & (seen[np.where(hit, index, 0)] >= 0)
            if again.any():
                i = int(np.flatnonzero(again)[0])
                first = int(seen[index[i]])
                raise DataError(
                    f"{self.path}: {where[i]}: column {key!r} (key): expected each key once, got "
                    f"{describe(python_value(frame[key].iloc[i]))} again (first at "
                    f"{self.table.where(chunk.file, first)})")
            seen[index[hit]] = rows[hit]
        self.n_outside += int((~joined).sum())
        at = np.flatnonzero(joined)
        part = frame.iloc[at].reset_index(drop=True)
        names = _Where(self.table, chunk, at)
        where_decision = f"{self.path}: {{}}: column {self.decision!r} (decision)"
        decided = None if self.decision is None else check_decisions(
            part[self.decision], at=where_decision, rows=names) if self.classes is None else \
            check_classes(part[self.decision], self.classes, at=where_decision, rows=names)
        scored = None if self.score is None else check_scores(
            part[self.score], scale=self.scale or "probability",
            at=f"{self.path}: {{}}: column {self.score!r} (score)", rows=names)
        ranked = None if self.rank is None else check_ranks(
            part[self.rank], at=f"{self.path}: {{}}: column {self.rank!r} (rank)", rows=names)
        return JoinedChunk(position[at].astype(np.int64), decided, scored, ranked)


def _integer_index(rows: RowKeys) -> tuple[pd.Index, pd.Index] | None:
    """The kept and dropped keys as integers when every one is an integer's canonical text."""
    out = []
    for keys in (rows.kept, rows.dropped):
        text = pd.Series(keys.astype(str), dtype=object)
        numbers = pd.to_numeric(text, errors="coerce")
        if numbers.isna().any() or not (text == numbers.astype("Int64").astype(str)).all():
            return None
        out.append(pd.Index(numbers.astype(np.int64)))
    return out[0], out[1]


def read_predictions(
    path: Path | str,
    *,
    key: str,
    rows: RowKeys,
    decision: str | None = None,
    score: str | None = None,
    scale: ScoreScale | None = None,
    allow_partial: bool = False,
    chunk_rows: int = 0,
) -> ExternalPredictions:
    """Read ``path`` whole, join it to the audit's ``rows`` on ``key``, validate it.

    ``rows`` are the audit's keys (``load_audit(manifest, key=...).keys``, or ``by_position``);
    ``key`` names the file's column holding them (the raw file's may have another name, or be
    the row position); ``decision`` and ``score`` name the file's columns (at least one),
    ``scale`` the score's scale.  Raises :class:`DataError` (one line: file, line, column,
    value) for every bad file (module docstring); writes nothing.  The arrays are aligned with
    the audit's row positions.
    """
    reader = PredictionsReader(path, key=key, rows=rows, decision=decision, score=score,
                               scale=scale, allow_partial=allow_partial,
                               chunk_rows=chunk_rows or JOIN_ROWS)
    parts = list(reader.chunks())
    positions = np.concatenate([p.positions for p in parts])
    order = np.argsort(positions, kind="stable")

    def stacked(values: list[np.ndarray | None]) -> np.ndarray | None:
        if values[0] is None:
            return None
        return np.concatenate([v for v in values if v is not None])[order]

    return ExternalPredictions(
        path=reader.path, sha256=reader.sha256, key=key, positions=positions[order],
        decision=stacked([p.decision for p in parts]), score=stacked([p.score for p in parts]),
        scale=reader.scale, decision_column=decision, score_column=score,
        n_outside=reader.n_outside, n_missing=reader.n_missing)
