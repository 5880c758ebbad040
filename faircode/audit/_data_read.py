"""Reading an audit's raw file: its header, a field-count scan naming every row's line, the columns.

Private: :func:`faircode.audit.data.load_audit` reads through :func:`read_raw`, and
:mod:`faircode.audit.predictions_file` scans a predictions CSV with :func:`data_lines` (same
quoting rules, same ragged-row error).  The design decisions (only the read columns are parsed,
every row has the header's width, lines name the rows of every later error, a repeated column
name is read only when its copies agree) are stated in :mod:`faircode.audit.data`.
"""

from __future__ import annotations

import csv
import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Union

import pandas as pd

from faircode.audit._data_rdata import read_rdata
from faircode.audit._data_rdb import read_lazyload
from faircode.audit._manifest_rdata import DATABASE_SUFFIX
from faircode.audit.manifest import Manifest, ReadOptions
from faircode.core.errors import DataError

if TYPE_CHECKING:
    from faircode.audit.regression_manifest import RegressionManifest

TableManifest = Union[Manifest, "RegressionManifest"]
"""A tabular manifest of any task kind: the grid's, or a regression's (the same column roles)."""

__all__ = ["PARSES", "column_sources", "data_lines", "raw_header", "read_csv", "read_raw"]


def column_sources(manifest: TableManifest) -> dict[str, str]:
    """Map every read column to the first key path that names it (the system's last)."""
    where: dict[str, str] = {}
    if manifest.unit is not None:
        where.setdefault(manifest.unit, "dataset.unit")
    for i, f in enumerate(manifest.row_filters):
        where.setdefault(f.column, f"row_filters[{i}].column")
        if f.operator == "first_by":
            where.setdefault(str(f.value), f"row_filters[{i}].first_by")
    where.setdefault(manifest.target.column, "target.column")
    for i, a in enumerate(manifest.protected_attributes):
        where.setdefault(a.column, f"protected_attributes[{i}].column")
    for key in ("core_features", "proxy_features"):
        for i, col in enumerate(getattr(manifest, key)):
            where.setdefault(col, f"{key}[{i}]")
    for i, stratum in enumerate(manifest.strata):
        for j, col in enumerate(stratum.columns):
            where.setdefault(col, f"strata[{i}].columns[{j}]")
    if manifest.system is not None and not manifest.system.outcome:
        where.setdefault(manifest.system.decision.column, "system.decision.column")
        if manifest.system.score is not None:
            where.setdefault(manifest.system.score.column, "system.score.column")
    return where


PARSES = "to parse with these options"
"""What a parse error says was expected of an audit's raw file (its manifest's options)."""


def read_csv(read: ReadOptions, file: Path, *, where: str, expected: str = PARSES,
             **kwargs: object) -> pd.DataFrame:
    """``pandas.read_csv`` with reading options ``read``; a parse failure is one DataError line.

    ``where`` opens the error (``<manifest>: dataset.read``), ``expected`` says what the file
    should have been (``<where>: expected <file> <expected>, got <error>``).
    """
    options = {**read.pandas_kwargs(), **kwargs}
    try:
        return pd.read_csv(file, **options)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        detail = " ".join(str(exc).split())
        raise DataError(f"{where}: expected {file.name} {expected}, got "
                        f"{type(exc).__name__}: {detail}") from None


def _header_fields(file: Path, read: ReadOptions, *, where: str) -> list[str]:
    """The header row of ``file`` as written (pandas renames a repeated name: ``age.1``)."""
    skip = read.header or 0  # non-blank rows before the header, as pandas counts them
    limit = csv.field_size_limit(2**31 - 1)
    try:
        with file.open(encoding=read.encoding, newline="") as handle:
            rows = (fields for fields in csv.reader(handle, delimiter=read.separator) if fields)
            for _ in range(skip):
                next(rows, None)
            return next(rows, [])
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{where}: expected {file.name} {PARSES}, got "
                        f"{type(exc).__name__}: {exc}") from None
    finally:
        csv.field_size_limit(limit)


def _repeated(manifest: TableManifest, file: Path, pandas_names: list[str],
              wanted: list[str]) -> dict[str, list[str]]:
    """Each read column whose name the header repeats -> pandas' names of its copies (the first
    is the column's own name).  Names the manifest lists are unique already."""
    if manifest.dataset.read.names is not None:
        return {}
    raw = _header_fields(file, manifest.dataset.read, where=f"{manifest.file}: dataset.read")
    if len(raw) != len(pandas_names):  # an odd header pandas reads otherwise: nothing to map
        return {}
    return {col: [pandas_names[i] for i, name in enumerate(raw) if name == col]
            for col in wanted if raw.count(col) > 1}


def _check_copies(frame: pd.DataFrame, copies: Mapping[str, list[str]], lines: list[str], *,
                  file: Path, sources: Mapping[str, str]) -> None:
    """A repeated column is read only when every copy holds the same values on every row;
    copies that differ are one :class:`DataError` (which one is meant cannot be known)."""
    for col, names in copies.items():
        first = frame[names[0]].astype(object)
        for other in names[1:]:
            second = frame[other].astype(object)
            differ = ~((first == second) | (first.isna() & second.isna())).to_numpy()
            if differ.any():
                i = int(differ.nonzero()[0][0])
                raise DataError(
                    f"{file}: {lines[i]}: column {col!r} ({sources[col]}): expected each column "
                    f"once in the header, got it {len(names)} times with different values "
                    f"({first.iat[i]!r} vs {second.iat[i]!r}); rename or remove the copy")


def raw_header(manifest: TableManifest) -> tuple[str, ...]:
    """The raw file's column names (a CSV file's header; ``()`` for an R data file, whose
    columns are known only once it is read whole)."""
    if manifest.dataset.object is not None:
        return ()
    return tuple(_header(manifest, manifest.dataset.path))


def _header(manifest: TableManifest, file: Path) -> list[str]:
    """Return the file's column names (checking a manifest's names against its field count)."""
    read, where = manifest.dataset.read, f"{manifest.file}: dataset.read"
    if read.names is None:
        return [str(c) for c in read_csv(read, file, where=where, nrows=0).columns]
    fields = read_csv(read, file, where=where, nrows=1, names=None, usecols=None).shape[1]
    if fields != len(read.names):
        raise DataError(
            f"{manifest.file}: dataset.read.names: expected {fields} names for the {fields} "
            f"fields of {file.name}, got {len(read.names)} names (list)"
        )
    return list(read.names)


def data_lines(file: Path, read: ReadOptions, *, where: str,
               expected: str = PARSES) -> tuple[list[str], int]:
    """``line N`` where each data row of ``file`` starts, and the line after the last row.

    Raises :class:`DataError` at the first row whose field count differs from the header's (or
    from ``read.names``).  Blank lines are skipped, as pandas skips them.  ``where`` opens a
    parse error (``<manifest>: dataset.read``) and ``expected`` its expectation, as in
    :func:`read_csv`.
    """
    skip = -1 if read.header is None else read.header  # non-blank rows before the header
    width = len(read.names) if read.names is not None else 0
    lines: list[str] = []
    ended = rows = 0
    limit = csv.field_size_limit(2**31 - 1)  # pandas reads any field length; so must the scan
    try:
        with file.open(encoding=read.encoding, newline="") as handle:
            reader = csv.reader(handle, delimiter=read.separator)
            for fields in reader:
                start, ended = ended + 1, reader.line_num
                if not fields:
                    continue
                rows += 1
                if rows - 1 < skip:
                    continue
                if rows - 1 == skip:
                    width = len(fields)
                elif len(fields) != width:
                    source = "in the header" if read.names is None else "in dataset.read.names"
                    raise DataError(f"{file}: line {start}: expected {width} fields as "
                                    f"{source}, got {len(fields)}")
                else:
                    lines.append(f"line {start}")
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{where}: expected {file.name} {expected}, got "
                        f"{type(exc).__name__}: {exc}") from None
    finally:
        csv.field_size_limit(limit)
    return lines, ended + 1


def read_raw(manifest: TableManifest, file: Path, *,
             extra: Mapping[str, str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The read columns of ``file`` (:attr:`Manifest.read_columns`, then ``extra``) and the
    ``line N`` of each of its rows.

    ``extra`` maps further columns to read (a join key) to the name of what asked for them; a
    missing one is an error opening with the data file, not the manifest.  An R data file
    (``dataset.object``) is read by :func:`faircode.audit._data_rdata.read_rdata` (an R lazy-load
    database ``.rdb`` by :func:`faircode.audit._data_rdb.read_lazyload`), its rows named
    ``row N``.
    """
    frame = None
    if manifest.dataset.object is not None:
        reader = read_lazyload if file.suffix.lower() == DATABASE_SUFFIX else read_rdata
        frame = reader(file, object_name=manifest.dataset.object,
                       where=f"{manifest.file}: dataset")
        header = [str(c) for c in frame.columns]
    else:
        header = _header(manifest, file)
    wanted = [(col, f"{manifest.file}: {where}") for col, where in column_sources(manifest).items()]
    wanted += [(col, f"{file}: {what}") for col, what in (extra or {}).items()]
    for col, where in wanted:
        if col not in header:
            close = difflib.get_close_matches(col, header, n=3, cutoff=0.5)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise DataError(f"{where}: expected a column of {file.name}, got {col!r} (str){hint}")
    named = list(dict.fromkeys((*manifest.read_columns, *(extra or {}))))
    if frame is not None:
        if frame.empty:
            raise DataError(f"{manifest.file}: dataset.object: expected data rows in "
                            f"{manifest.dataset.object!r}, got none")
        return frame[named], [f"row {i + 1}" for i in range(len(frame))]
    lines, end = data_lines(file, manifest.dataset.read, where=f"{manifest.file}: dataset.read")
    if not lines:
        below = " below the header" if manifest.dataset.read.names is None else ""
        raise DataError(f"{file}: line {end}: expected data rows{below}, got none")
    copies = _repeated(manifest, file, header, named)
    also = [name for names in copies.values() for name in names[1:]]
    frame = read_csv(manifest.dataset.read, file, where=f"{manifest.file}: dataset.read",
                     usecols=[*named, *also], low_memory=False)
    if len(frame) != len(lines):  # pandas and csv disagree on an odd file: number rows plainly
        lines = [f"data row {i + 1}" for i in range(len(frame))]
    sources = {**column_sources(manifest), **(extra or {})}
    _check_copies(frame, copies, lines, file=file, sources=sources)
    return frame[named], lines
