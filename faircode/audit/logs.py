"""A decision log that carries its own groups: its rows read in chunks.

A deployed system's log -- every loan, claim or moderation decision of a quarter, with the
applicant's groups and the observed outcome -- is declared in a small YAML file
(:mod:`faircode.audit.log_declaration`), no raw dataset to fetch.  :class:`LogReader` reads the
log's rows in chunks (:mod:`faircode.audit.table_file`; a pandas DataFrame through
:func:`~faircode.audit.table_file.frame_table`) and turns each into arrays: label, decision,
score, disadvantaged masks, unit keys, stratum levels.

Design decisions
----------------
* **Rows are kept as a manifest keeps them**: filters, then a derivable target, then a row every
  attribute classifies (the counts of each step are ``run.json``'s ``rows.steps``); a missing
  decision, score or unit on a kept row is an error naming its line, never a dropped row.
* **One type per interpreted column**: a filter's, group, label, decision, unit, stratum or
  score column whose values change kind between chunks or shards (numbers, then text) is
  refused (:class:`~faircode.audit.column_kinds.TypeGuard`), since numbers and text compare
  differently: ``yes`` would never equal a decision rule's ``1``.
* **Strata are row-level**: the gap within a stratum's levels (a Mantel-Haenszel gap with a
  within-strata permutation test) is no function of the counts, so with ``strata`` each kept
  row's decision, masks and level id are kept (a few bytes a row); levels get codes in sorted
  order of their text, as an audit's (a whole number read as a float in one chunk is the same
  level as the integer in another).
* **Unit keys**: integer ids are used as they are; text ids by their 64-bit hash
  (``pandas.util.hash_array``; two ids share one with probability below ``U² / 2⁶⁵``, 3·10⁻⁶ for
  10⁷ units), the same in the streamed and the in-memory path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit._data_columns import (
    check_declared_numbers,
    check_look_alikes,
    derive_target,
    disadvantaged_mask,
    filter_mask,
    is_numeric_column,
)
from faircode.audit._manifest_types import Manifest
from faircode.audit.column_kinds import TypeGuard
from faircode.audit.fetch import sha256_file
from faircode.audit.outputs import check_scores, python_value
from faircode.audit.table_file import ROWS, Chunk, TableFile, open_table
from faircode.core.errors import ChecksumError, DataError, describe
from faircode.core.memory import release_free_memory

__all__ = ["LogChunk", "LogReader", "LogRecord", "SystemRecord", "table_sha256"]

_FLAGGED = "\0decided 1"  # counts keys no step can have: decided 1, disadvantaged per attribute
_SIDE = "\0disadvantaged "


@dataclass(frozen=True, slots=True)
class SystemRecord:
    """What ``run.json`` says of an audited system: name, title, decision rule, score scale."""

    name: str
    title: str
    rule: str
    scale: str | None
    outcome: bool = False
    """Whether the decision is the recorded outcome (a log's never is: it has its target)."""


@dataclass(frozen=True, slots=True)
class LogChunk:
    """One chunk's kept rows: label, decision (target coding), score, masks, unit keys and,
    per declared stratum, each row's level id (:meth:`LogReader.stratum_ranks` orders them)."""

    y: np.ndarray
    decision: np.ndarray
    masks: tuple[np.ndarray, ...]
    units: np.ndarray | None
    score: np.ndarray | None
    strata: tuple[np.ndarray, ...] = ()

    def __len__(self) -> int:
        return int(self.y.size)


@dataclass(slots=True)
class LogRecord:
    """The log's rows after each step (``run.json`` ``rows.steps``) and its system's record;
    what :func:`faircode.evaluate.write.write_audit` reads of an audit."""

    manifest: Manifest
    sha256: str
    system: SystemRecord
    counts: dict[str, int] = field(default_factory=dict)
    flagged: int = 0
    disadvantaged: tuple[int, ...] = ()
    """Per protected attribute, the audited rows in its disadvantaged group."""

    def absorb(self, counts: dict[str, int]) -> None:
        """Take the counts :meth:`LogReader.interpreted` added up (steps, decided 1, groups)."""
        steps = {k: v for k, v in counts.items() if not k.startswith("\0")}
        n_attributes = len(self.manifest.protected_attributes)
        self.counts, self.flagged = steps, counts.get(_FLAGGED, 0)
        self.disadvantaged = tuple(counts.get(f"{_SIDE}{i}", 0) for i in range(n_attributes))

    @property
    def steps(self) -> tuple[tuple[str, int], ...]:
        """The rows after each step."""
        return tuple(self.counts.items())

    @property
    def n_rows(self) -> int:
        """Rows audited."""
        return list(self.counts.values())[-1] if self.counts else 0

    @property
    def train_index(self) -> range:
        """No row is a training row."""
        return range(0)

    @property
    def test_index(self) -> range:
        """Every audited row is scored."""
        return range(self.n_rows)


class LogReader:
    """The rows of a declared log (:func:`~faircode.audit.log_declaration.load_log`), read and
    interpreted chunk by chunk."""

    def __init__(self, manifest: Manifest, *, chunk_rows: int = ROWS, verify: bool = True,
                 table: TableFile | None = None) -> None:
        if manifest.system is None:
            raise ValueError(f"{manifest.file}: expected a log declaration with a system")
        self.manifest, self.chunk_rows = manifest, chunk_rows
        self.table: TableFile = table or open_table(manifest.dataset.path)
        self.levels: tuple[dict[tuple[str, ...], int], ...] = tuple({} for _ in manifest.strata)
        sha256 = table_sha256(self.table) if verify and table is None else ""
        if verify and manifest.dataset.sha256 is not None and sha256 != manifest.dataset.sha256:
            raise ChecksumError(f"{self.table.path}: sha256: expected "
                                f"{manifest.dataset.sha256} (log.sha256), got {sha256}")
        self.columns = _log_columns(manifest)
        for column, where in self.columns.items():
            if column not in self.table.columns:
                raise DataError(f"{manifest.file}: {where}: expected a column of "
                                f"{self.table.path.name}, got {describe(column)}")
        self.table.check_flat(self.columns)
        system = manifest.system
        self.record = LogRecord(manifest, sha256, SystemRecord(
            system.name, system.title, system.decision.describe(),
            None if system.score is None else system.score.scale))

    def chunks(self) -> Iterator[LogChunk]:
        """Every chunk's kept rows; the step counts are in :attr:`record` afterwards."""
        counts: dict[str, int] = {}
        yield from self.interpreted(self.table.chunks(list(self.columns), rows=self.chunk_rows),
                                    counts)
        self.record.absorb(counts)
        self.check_totals()

    def shard(self, file: Path, row_groups: Sequence[int], start: int,
              counts: dict[str, int], guard: TypeGuard) -> Iterator[LogChunk]:
        """The kept rows of ``row_groups`` of one Parquet ``file`` (whose first row is data row
        ``start`` of it), adding the step counts to ``counts`` and the kinds to ``guard`` (a
        shard's own, :meth:`new_guard`: the driver compares the shards' kinds)."""
        yield from self.interpreted(self.table.row_group_chunks(
            file, row_groups, start, list(self.columns), rows=self.chunk_rows), counts, guard)

    def new_guard(self) -> TypeGuard:
        """A guard of the kinds of every column read (:func:`_log_columns`)."""
        return TypeGuard(self.table, self.columns)

    def interpreted(self, chunks: Iterable[Chunk], counts: dict[str, int],
                    guard: TypeGuard | None = None) -> Iterator[LogChunk]:
        """``chunks`` interpreted, the step counts (and decided 1) added to ``counts``."""
        guard = guard if guard is not None else self.new_guard()
        for chunk in chunks:
            guard.check(chunk)
            release_free_memory()  # the check's temporaries, before the chunk's copies are made
            part, steps = self._interpret(chunk)
            del chunk  # the frame: only ``part`` is read from here on
            release_free_memory()  # the frame's, before the chunk is counted
            for name, n in steps:
                counts[name] = counts.get(name, 0) + n
            counts[_FLAGGED] = counts.get(_FLAGGED, 0) + int(part.decision.sum())
            for i, mask in enumerate(part.masks):
                counts[f"{_SIDE}{i}"] = counts.get(f"{_SIDE}{i}", 0) + int(mask.sum())
            yield part
            del part  # before the next chunk is read

    def _interpret(self, chunk: Chunk) -> tuple[LogChunk, list[tuple[str, int]]]:
        manifest, frame = self.manifest, chunk.frame
        rows = np.arange(len(frame))
        steps = [("loaded", len(frame))]
        check_look_alikes(manifest, frame, rows=_Names(self.table, chunk, rows),
                          file=self.table.path, label=manifest.target)
        keep = np.ones(len(frame), dtype=bool)
        for i, row_filter in enumerate(manifest.row_filters, start=1):
            keep &= filter_mask(row_filter, frame[row_filter.column])
            steps.append((f"filter {i}: {row_filter.describe()}", int(keep.sum())))
        frame, rows = _kept(frame, keep), rows[keep]
        names = _Names(self.table, chunk, rows)
        check_declared_numbers(manifest, frame, rows=names, file=self.table.path)
        label, derivable = derive_target(manifest.target, frame[manifest.target.column],
                                         where=f"{manifest.file}: target")
        steps.append(("target derivable", int(derivable.sum())))
        frame, label, rows = _kept(frame, derivable), label[derivable], rows[derivable]
        classified = np.ones(len(frame), dtype=bool)
        masks = []
        for attribute in manifest.protected_attributes:
            mask, ok = disadvantaged_mask(attribute, frame[attribute.column])
            masks.append(mask)
            classified &= ok
        steps.append(("classified by every attribute", int(classified.sum())))
        frame, rows = _kept(frame, classified), rows[classified]
        names = _Names(self.table, chunk, rows)
        decision, score = self._outputs(frame, names)
        units = None if manifest.unit is None else self._units(frame[manifest.unit], names)
        return LogChunk(label[classified].astype(np.int8), decision,
                        tuple(m[classified] for m in masks), units, score,
                        self._strata(frame)), steps

    def _strata(self, frame: pd.DataFrame) -> tuple[np.ndarray, ...]:
        """Each declared stratum's level id per row (ids in order of first appearance)."""
        out = []
        for stratum, levels in zip(self.manifest.strata, self.levels, strict=True):
            if frame.empty:
                out.append(np.empty(0, dtype=np.int64))
                continue
            text = pd.DataFrame({c: frame[c].astype(object).map(_level_text)
                                 for c in stratum.columns})
            local, seen = pd.MultiIndex.from_frame(text).factorize()
            ids = np.array([levels.setdefault(tuple(level), len(levels)) for level in seen],
                           dtype=np.int64)
            out.append(ids[local])
        return tuple(out)

    def stratum_ranks(self) -> tuple[np.ndarray, ...]:
        """Per stratum, each level id's code: its rank among the levels in sorted order of their
        text (missing last), the codes :func:`faircode.audit.data.stratum_codes` gives."""
        out = []
        for levels in self.levels:
            ranks = np.empty(len(levels), dtype=np.int64)
            for rank, level in enumerate(sorted(levels)):
                ranks[levels[level]] = rank
            out.append(ranks)
        return tuple(out)

    def _outputs(self, frame: pd.DataFrame, names: _Names) -> tuple[np.ndarray,
                                                                    np.ndarray | None]:
        system = self.manifest.system
        assert system is not None
        rule, values = system.decision, frame[system.decision.column]
        at = f"{self.table.path}: {{}}: column {rule.column!r} (system.decision.column)"
        present = values.notna().to_numpy(dtype=bool)
        if not present.all():
            i = int(np.flatnonzero(~present)[0])
            raise DataError(f"{at.format(names[i])}: expected a decision value in every row "
                            "of the audit, got a missing value")
        if rule.method == "threshold" and not is_numeric_column(values):
            i = int(np.flatnonzero(present)[0])
            raise DataError(f"{at.format(names[i])}: expected a number for a threshold rule, "
                            f"got {describe(python_value(values.iloc[i]))}")
        decision, _ = derive_target(rule, values, where=f"{self.manifest.file}: system.decision")
        score = None
        if system.score is not None:
            score = check_scores(frame[system.score.column], scale=system.score.scale,
                                 rows=names, at=f"{self.table.path}: {{}}: column "
                                                f"{system.score.column!r} (system.score.column)")
        return decision.astype(np.int8), score

    def _units(self, values: pd.Series, names: _Names) -> np.ndarray:
        present = values.notna().to_numpy(dtype=bool)
        at = f"{self.table.path}: {{}}: column {values.name!r} (unit)"
        if not present.all():
            i = int(np.flatnonzero(~present)[0])
            raise DataError(f"{at.format(names[i])}: expected a unit in every row, got a "
                            "missing value")
        if is_numeric_column(values):
            nums = values.to_numpy()
            if np.issubdtype(nums.dtype, np.integer):
                return nums.astype(np.int64)
            whole = np.isfinite(nums) & (nums == np.round(nums)) & (np.abs(nums) < 2.0**63)
            if not whole.all():
                i = int(np.flatnonzero(~whole)[0])
                raise DataError(f"{at.format(names[i])}: expected an integer or text unit id, "
                                f"got {describe(float(nums[i]))}")
            return nums.astype(np.int64)
        hashed = pd.util.hash_array(values.astype(str).to_numpy(dtype=object))
        return hashed.view(np.int64)

    def check_totals(self) -> None:
        """Refuse a log with no row left, an attribute with an empty group or a decision rule
        matching none of the rows."""
        manifest, n = self.manifest, self.record.n_rows
        if n == 0:
            raise DataError(f"{manifest.file}: expected rows of {self.table.path.name} to remain "
                            "after the filters, got 0 rows")
        for i, (attribute, dis) in enumerate(zip(manifest.protected_attributes,
                                                 self.record.disadvantaged, strict=True)):
            for group, size in (("disadvantaged", dis), ("advantaged", n - dis)):
                if size == 0:  # its table would be blank: every gap needs both groups
                    raise DataError(f"{manifest.file}: protected_attributes[{i}] "
                                    f"({attribute.name}): expected a non-empty {group} group "
                                    f"among the log's {n:,} audited rows, got 0 rows")
        assert manifest.system is not None
        if self.record.flagged == 0:
            raise DataError(f"{manifest.file}: system.decision: expected a rule matching some of "
                            f"the log's {n:,} rows, got none for "
                            f"{manifest.system.decision.describe()}")


def table_sha256(table: TableFile) -> str:
    """The sha256 of a log file, or of a folder's files (each file's name and digest, in
    order)."""
    if table.files == (table.path,):
        return sha256_file(table.path)
    import hashlib

    digest = hashlib.sha256()
    for file in table.files:
        digest.update(f"{file.name}\t{sha256_file(file)}\n".encode())
    return digest.hexdigest()


def _kept(frame: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """The rows of ``frame`` where ``keep`` (numbered from 0), ``frame`` itself when it keeps
    every row: a copy of the chunk is the largest array a step makes (made after the earlier
    steps' free pages are handed back: :mod:`faircode.core.memory`)."""
    if keep.all():
        return frame
    release_free_memory()
    return frame[keep].reset_index(drop=True)


def _log_columns(manifest: Manifest) -> dict[str, str]:
    """Every column read from the log, mapped to the declaration key naming it."""
    where: dict[str, str] = {}
    for i, f in enumerate(manifest.row_filters):
        where.setdefault(f.column, f"row_filters[{i}].column")
    where.setdefault(manifest.target.column, "target.column")
    for i, a in enumerate(manifest.protected_attributes):
        where.setdefault(a.column, f"protected_attributes[{i}].column")
    if manifest.unit is not None:
        where.setdefault(manifest.unit, "unit")
    for i, stratum in enumerate(manifest.strata):
        for j, column in enumerate(stratum.columns):
            where.setdefault(column, f"strata[{i}].columns[{j}]")
    assert manifest.system is not None
    where.setdefault(manifest.system.decision.column, "system.decision.column")
    if manifest.system.score is not None:
        where.setdefault(manifest.system.score.column, "system.score.column")
    return where


def _level_text(value: object) -> str:
    """A stratum level's text: a whole number as an integer (a chunk with a missing value reads
    its column as floats), a missing value ``\uffff(missing)`` (sorted last)."""
    if value is None or value is pd.NA or value != value:
        return "\uffff(missing)"
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


class _Names(Sequence[str]):
    """``names[i]``: where kept row ``i`` of a chunk is in the file (made only when shown)."""

    def __init__(self, table: TableFile, chunk: Chunk, rows: np.ndarray) -> None:
        self.table, self.chunk, self.rows = table, chunk, rows

    def __len__(self) -> int:
        return int(self.rows.size)

    def __getitem__(self, i: Any) -> str:
        return self.table.where(self.chunk.file, self.chunk.start + int(self.rows[int(i)]))
