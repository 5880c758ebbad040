"""A table file read in chunks: CSV (plain or compressed) or Parquet (a file or a folder of files).

What a decision log or a predictions file is read through (:mod:`faircode.audit.logs`,
:mod:`faircode.audit.predictions_file`).  :func:`open_table` checks the header, and
:meth:`TableFile.chunks` yields the named columns ``rows`` rows at a time, each chunk knowing
the position of its first row, so memory does not grow with the file.

Design decisions
----------------
* **Formats by suffix**: ``.csv`` (UTF-8, comma, one header row), ``.csv.gz``, ``.csv.bz2``,
  ``.csv.xz``, ``.csv.zst`` (decompressed as a stream by pyarrow), ``.parquet``/``.pq``, or a
  folder of ``*.parquet`` files (read in name order: a partitioned log, one shard per file and
  row group for the Dask reduction, :mod:`faircode.grid.dask_reduce`).  A pandas DataFrame
  in memory is read through the same interface (:func:`frame_table`: ``row N`` of the frame).
* **A repeated column name is read only as one column**: pandas would rename the second copy
  ``decision.1`` and audit the first silently.  A CSV header may repeat a name (ProPublica's
  COMPAS file has two ``decile_score`` columns): a column no reader reads is never looked at, and
  a repeated column a reader reads is read once when every copy holds the same text on every
  row, else refused at the first row where the copies differ, naming both columns and values.
  A Parquet schema or a DataFrame naming a column twice is refused.
* **Rows are named where they are**: ``line N`` of a CSV file -- the physical line, found by
  re-scanning the file only when an error is reported (:meth:`TableFile.where`), so no string
  is kept per row -- or ``row N`` of a Parquet file (``<file>: row N`` in a folder).  A row of
  another width is pandas' own tokenizer error, turned into that one line.
* **One type per column** (:class:`faircode.audit.column_kinds.TypeGuard`): a column a reader
  interprets is refused at the first row of another kind than its first rows'.
* **Decompression is bounded** (:class:`_Inflated`): a ``.csv.gz``/``.bz2``/``.xz``/``.zst`` file
  is read only up to :data:`MAX_INFLATION` times its size, so a compression bomb stops with one
  line naming the file instead of running for hours.
* **Parquet is read without pre-buffering** (:func:`_parquet_chunks`): pyarrow's pre-buffered reader
  holds the buffers of every row group it has read, so a 10⁸-row log's reader alone would hold
  gigabytes; nor does it read a column chunk whole (a row group's size is the writer's choice).  A
  chunk is joined from small Arrow batches and nothing here names it once it is handed on, so
  while it is counted it exists once (a chunk-sized batch stayed in Arrow's reader, and the
  DataFrame in this generator, until the next chunk was read).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.core.errors import DataError, describe
from faircode.core.memory import map_large_arrays

__all__ = ["CSV_SUFFIXES", "PARQUET_SUFFIXES", "Chunk", "FrameTable", "TableFile", "frame_table",
           "open_table", "table_suffix"]

CSV_SUFFIXES: tuple[str, ...] = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")
PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")
_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zst": "zstd"}
_CSV = "to parse as CSV (comma-separated, UTF-8, one header row)"
ROWS = 1_000_000
"""Rows per chunk by default."""
#: Rows of one Arrow batch a Parquet chunk is joined from (:func:`_parquet_chunks`).
_ARROW_ROWS = 1 << 16
#: Bytes of a column chunk pyarrow reads at a time (:func:`_parquet_chunks`); 0 reads it whole.
_READ_BUFFER = 1 << 20
MAX_INFLATION = 1000
"""A compressed CSV may decompress to at most this many times its size (plus
:data:`INFLATION_SLACK`): a CSV log compresses 5 to 50 times, gzip at most about 1,032 times,
while a bzip2 or xz bomb of a few kB holds terabytes."""
INFLATION_SLACK = 64 * 2**20
_HEADER_BYTES = 1 << 20


def table_suffix(path: Path) -> str | None:
    """The recognised suffix of ``path`` (lower case), or None; a folder is ``"/"``."""
    if path.is_dir():
        return "/"
    name = path.name.lower()
    for suffix in (*CSV_SUFFIXES[1:], *CSV_SUFFIXES[:1], *PARQUET_SUFFIXES):
        if name.endswith(suffix):
            return suffix
    return None


@dataclass(frozen=True, slots=True)
class Chunk:
    """Consecutive rows of one file: the named columns, the file and its first row (0-based)."""

    frame: pd.DataFrame
    file: Path
    start: int

    def __len__(self) -> int:
        return len(self.frame)


class TableFile:
    """A checked table file (:func:`open_table`): its header and its rows in chunks."""

    def __init__(self, path: Path, files: tuple[Path, ...], columns: tuple[str, ...],
                 csv_format: bool) -> None:
        self.path, self.files, self.columns, self.is_csv = path, files, columns, csv_format

    def chunks(self, columns: Sequence[str], *, rows: int = ROWS) -> Iterator[Chunk]:
        """The named columns, ``rows`` rows at a time (a file's last chunk may be shorter)."""
        if self.is_csv:
            yield from self._csv_chunks(list(columns), rows)
            return
        for file in self.files:
            try:
                yield from _parquet_chunks(file, 0, rows=rows, columns=list(columns))
            except (OSError, ValueError) as exc:
                raise DataError(f"{file}: expected a parquet file, got {type(exc).__name__}: "
                                f"{' '.join(str(exc).split())}") from None

    def check_flat(self, roles: Mapping[str, str]) -> None:
        """Refuse a Parquet column of ``roles`` (column -> what reads it) whose type is nested
        (a struct, list or map): it holds no number or text to read, and pandas' conversion of
        it would fail mid-read with a traceback."""
        if self.is_csv:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        for file in self.files:
            schema = pq.read_schema(file)
            for column, role in roles.items():
                kind = schema.field(column).type
                if pa.types.is_dictionary(kind):
                    kind = kind.value_type
                if pa.types.is_nested(kind):
                    where = "schema" if file == self.path else f"{file.name}: schema"
                    raise DataError(f"{self.path}: {where}: column {column!r} ({role}): expected "
                                    f"numbers, booleans or text, got the nested type {kind}")

    def row_groups(self) -> list[tuple[Path, int, int]]:
        """Every Parquet row group: ``(file, index, rows)``, in file and group order."""
        import pyarrow.parquet as pq

        if self.is_csv:
            raise DataError(f"{self.path}: expected a Parquet log (a .parquet file or a folder of "
                            "them) to shard, got a CSV file")
        out = []
        for file in self.files:
            meta = pq.ParquetFile(file).metadata
            out += [(file, g, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
        return out

    def row_group_chunks(self, file: Path, groups: Sequence[int], start: int,
                         columns: Sequence[str], *, rows: int = ROWS) -> Iterator[Chunk]:
        """The named columns of some row groups of one Parquet ``file`` (first row ``start``)."""
        yield from _parquet_chunks(file, start, rows=rows, columns=list(columns),
                                   row_groups=list(groups))

    def _csv_chunks(self, columns: list[str], rows: int) -> Iterator[Chunk]:
        import pyarrow as pa
        import pyarrow.csv as pc

        slots = _slot_names(self.columns)
        copies = {c: [i for i, name in enumerate(self.columns) if name == c] for c in columns}
        read_columns = [slots[i] if copies[c] else c for c in columns for i in copies[c] or [0]]
        options = pc.ConvertOptions(include_columns=read_columns, strings_can_be_null=True,
                                    column_types={c: pa.string() for c in read_columns})
        block = max(1 << 20, min(rows * 64, 1 << 28))
        read = pc.ReadOptions(block_size=block) if slots == self.columns else pc.ReadOptions(
            block_size=block, column_names=list(slots), skip_rows=1)
        parse = pc.ParseOptions(newlines_in_values=True)
        start = 0
        try:
            with _open_text(self.path) as handle:
                for batch in pc.open_csv(handle, read_options=read, parse_options=parse,
                                         convert_options=options):
                    for first in range(0, batch.num_rows, rows):  # chunks of at most rows
                        piece = batch.slice(first, rows)
                        self._check_copies(piece, copies, slots, start)
                        # no local names the frame while it is counted (_parquet_chunks)
                        yield Chunk(pd.DataFrame({c: _typed(piece.column(
                            slots[copies[c][0]] if copies[c] else c).to_pandas())
                            for c in columns}), self.path, start)
                        start += piece.num_rows
        except pa.ArrowInvalid as exc:
            raise self._parse_error(exc) from None
        except (UnicodeDecodeError, OSError) as exc:
            raise DataError(f"{self.path}: expected {self.path.name} {_CSV}, got "
                            f"{type(exc).__name__}: {' '.join(str(exc).split())}") from None

    def _check_copies(self, piece: Any, copies: Mapping[str, list[int]],
                      slots: tuple[str, ...], start: int) -> None:
        """Refuse a repeated column whose copies differ (module docstring), at the first row."""
        for column, positions in copies.items():
            first = piece.column(slots[positions[0]]).to_pandas()
            for other in positions[1:]:
                second = piece.column(slots[other]).to_pandas()
                differ = (first != second) & ~(first.isna() & second.isna())
                if differ.any():
                    i = int(np.flatnonzero(differ.to_numpy())[0])
                    raise DataError(
                        f"{self.path}: {_csv_line(self.path, start + i)}: column {column!r} "
                        f"is named twice (columns {positions[0] + 1} and {other + 1}) and the "
                        f"copies differ: {describe(first.iloc[i])} and "
                        f"{describe(second.iloc[i])}; rename one of them")

    def _parse_error(self, exc: Exception) -> DataError:
        """pyarrow's parse error as one line: a row of another width names its line."""
        text = " ".join(str(exc).split())
        if "Expected" in text and "columns" in text:
            line, got = _ragged_line(self.path, len(self.columns))
            if line:
                return DataError(f"{self.path}: line {line}: expected {len(self.columns)} fields "
                                 f"as in the header, got {got}")
        return DataError(f"{self.path}: expected {self.path.name} {_CSV}, got ArrowInvalid: "
                         f"{text}")

    def end(self) -> str:
        """Where a row after the last would be (``line N`` / ``row N``), for "no rows" errors."""
        if not self.is_csv:
            return "row 1"
        with _open_text(self.path) as raw:
            reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            for _ in reader:
                pass
            return f"line {reader.line_num + 1}"

    def where(self, file: Path, row: int) -> str:
        """Where data row ``row`` (0-based) of ``file`` is: ``line N`` or ``row N``."""
        if not self.is_csv:
            return f"row {row + 1}" if file == self.path else f"{file.name}: row {row + 1}"
        return _csv_line(self.path, row)


class _Inflated(io.RawIOBase):
    """A compressed file's decompressed bytes, refused past :data:`MAX_INFLATION` times its
    size (plus :data:`INFLATION_SLACK`): a compression bomb stops there, naming the file."""

    def __init__(self, stream: Any, path: Path) -> None:
        super().__init__()
        self._stream, self._path, self._read = stream, path, 0
        self._size = path.stat().st_size
        self.limit = self._size * MAX_INFLATION + INFLATION_SLACK

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self._read += len(data)
        if self._read > self.limit:
            raise DataError(f"{self._path}: expected a compressed table of at most "
                            f"{self.limit:,} bytes once decompressed ({MAX_INFLATION:,} times "
                            f"its {self._size:,} bytes), got more (a compression bomb? reading "
                            "stopped)")
        return bytes(data)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


class FrameTable(TableFile):
    """A pandas DataFrame read as a table file (:func:`frame_table`): its rows in chunks."""

    def __init__(self, frame: pd.DataFrame, name: str) -> None:
        super().__init__(Path(name), (Path(name),), tuple(str(c) for c in frame.columns), False)
        self.frame = frame.reset_index(drop=True)

    def chunks(self, columns: Sequence[str], *, rows: int = ROWS) -> Iterator[Chunk]:
        """The named columns, ``rows`` rows at a time."""
        for start in range(0, len(self.frame), rows):
            yield Chunk(self.frame.iloc[start:start + rows][list(columns)].reset_index(
                drop=True), self.path, start)

    def check_flat(self, roles: Mapping[str, str]) -> None:
        """Refuse a column of ``roles`` holding a nested value (a mapping, a list, an array):
        it holds no number or text to read."""
        for column, role in roles.items():
            values = self.frame[column]
            if values.dtype != object:
                continue
            nested = values.map(lambda v: isinstance(v, dict | list | tuple | set | np.ndarray))
            if nested.any():
                i = int(np.flatnonzero(nested.to_numpy(dtype=bool))[0])
                raise DataError(f"{self.path}: row {i + 1}: column {column!r} ({role}): expected "
                                f"numbers, booleans or text, got {describe(values.iat[i])}")

    def row_groups(self) -> list[tuple[Path, int, int]]:
        """A frame has no row groups to shard."""
        raise DataError(f"{self.path}: expected a Parquet log to shard, got a DataFrame")

    def end(self) -> str:
        """Where a row after the last would be."""
        return f"row {len(self.frame) + 1}"

    def where(self, file: Path, row: int) -> str:
        """``row N`` (1-based position in the frame)."""
        return f"row {row + 1}"


def frame_table(frame: pd.DataFrame, *, name: str = "DataFrame") -> FrameTable:
    """``frame`` as a table (named ``name`` in errors); a column name repeated is refused."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{name}: expected a pandas DataFrame, got {type(frame).__name__}")
    _check_unique(Path(name), [str(c) for c in frame.columns], "columns")
    return FrameTable(frame, name)


def _open_text(path: Path) -> Any:
    suffix = table_suffix(path) or ".csv"
    compression = _COMPRESSION.get(suffix[len(".csv"):]) if suffix != ".csv" else None
    if compression is None:
        return open(path, "rb")
    import pyarrow as pa

    if compression == "lzma":
        import lzma

        return _Inflated(lzma.open(path, "rb"), path)
    return _Inflated(pa.input_stream(str(path), compression=compression), path)


def _ragged_line(path: Path, width: int) -> tuple[int, int]:
    """The first line whose row has not ``width`` fields, and its field count (0, 0: none)."""
    limit = csv.field_size_limit(2**31 - 1)
    try:
        with _open_text(path) as raw:
            reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            ended = 0
            for fields in reader:
                start, ended = ended + 1, reader.line_num
                if fields and len(fields) != width:
                    return start, len(fields)
    finally:
        csv.field_size_limit(limit)
    return 0, 0


def _parquet_chunks(file: Path, start: int, *, rows: int, columns: list[str],
                    row_groups: list[int] | None = None) -> Iterator[Chunk]:
    """A Parquet file's chunks of ``rows`` rows (the first being data row ``start``; the last
    may be shorter), read without pre-buffering: with it (pyarrow's default) the reader keeps
    every row group's buffers it has read until it is closed, so its memory grows with the file
    (15 MB per 10⁶ rows of a six-column log).  Column chunks are read :data:`_READ_BUFFER`
    bytes at a time: pyarrow's default reads each whole, so a file of large row groups would
    hold them (40 MiB for a row group of 3·10⁶ rows of two float columns, 7.5 MiB buffered).

    Arrow's batches are of at most :data:`_ARROW_ROWS` rows, joined into a chunk: its reader
    holds the batch it read last while the next is read, so a chunk-sized batch would keep a
    second copy of the chunk alive while the chunk is counted.  No local names a chunk while
    this generator waits (the reader above holds it only as long as it needs it).  Arrow
    allocates from the C heap, its buffers mapped (:mod:`faircode.core.memory`)."""
    import pyarrow.parquet as pq

    map_large_arrays()  # `faircode audit` has already; a library caller or Dask worker not
    pending: list[Any] = []
    held = 0
    for batch in pq.ParquetFile(file, pre_buffer=False, buffer_size=_READ_BUFFER).iter_batches(
            batch_size=min(rows, _ARROW_ROWS), row_groups=row_groups, columns=columns):
        pending.append(batch)
        held += batch.num_rows
        del batch
        while held >= rows:
            yield Chunk(_take_frame(pending, rows), file, start)
            start, held = start + rows, held - rows
    if held:
        yield Chunk(_take_frame(pending, held), file, start)


def _take_frame(pending: list[Any], rows: int) -> pd.DataFrame:
    """The first ``rows`` rows of the Arrow batches ``pending`` as a DataFrame, leaving the rest
    in ``pending``; each column's Arrow buffers are let go as it is converted."""
    import pyarrow as pa

    joined = pa.Table.from_batches(pending)
    pending[:] = joined.slice(rows).to_batches()
    head = joined.slice(0, rows)
    del joined
    return head.to_pandas(split_blocks=True, self_destruct=True)


def _typed(values: pd.Series) -> pd.Series:
    """A chunk's text column as numbers when every present value is one (as pandas' reader
    types a column), else as text."""
    present = values.notna()
    if not present.any():
        return values.astype(object)
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().sum() == present.sum():
        return numbers
    return values


def _csv_line(path: Path, row: int) -> str:
    """The physical line of data row ``row`` (blank lines skipped, quoted newlines counted)."""
    limit = csv.field_size_limit(2**31 - 1)
    try:
        with _open_text(path) as raw:
            reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            seen, ended = -1, 0  # -1: the header row is not a data row
            for fields in reader:
                start, ended = ended + 1, reader.line_num
                if not fields:
                    continue
                if seen == row:
                    return f"line {start}"
                seen += 1
    finally:
        csv.field_size_limit(limit)
    return f"data row {row + 1}"


def open_table(path: Path | str) -> TableFile:
    """Check ``path`` (a recognised table, its header naming each column once) and open it.

    Raises :class:`DataError` for a missing file, an unknown suffix, an unreadable header, a
    repeated column name and a folder without Parquet files.
    """
    path = Path(path)
    suffix = table_suffix(path)
    if path.exists() and not (path.is_file() or path.is_dir()):
        raise DataError(f"{path}: expected a regular file, got {_special(path)}")
    if suffix is None:
        if not path.exists():
            raise DataError(f"{path}: expected a predictions file, got no such file")
        raise DataError(f"{path}: expected a file ending in {', '.join(CSV_SUFFIXES)}, "
                        f"{', '.join(PARQUET_SUFFIXES)} or a folder of .parquet files, got "
                        f"{describe(path.suffix)}")
    if suffix != "/" and not path.is_file():
        raise DataError(f"{path}: expected a predictions file, got no such file")
    if suffix in CSV_SUFFIXES:
        return TableFile(path, (path,), _csv_header(path), True)
    files = (path,) if suffix != "/" else tuple(sorted(path.glob("*.parquet")))
    if not files:
        raise DataError(f"{path}: expected a folder of .parquet files, got none in it")
    return TableFile(path, files, _parquet_header(files), False)


def _special(path: Path) -> str:
    import stat

    mode = path.stat().st_mode
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _csv_header(path: Path) -> tuple[str, ...]:
    """The header row's names (a name may repeat: :meth:`TableFile.chunks`), from at most the
    first MiB."""
    try:
        with _open_text(path) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            head = text.read(_HEADER_BYTES)
    except (UnicodeDecodeError, OSError) as exc:
        raise DataError(f"{path}: expected {path.name} {_CSV}, got {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())}") from None
    rows = (r for r in csv.reader(io.StringIO(head)) if r)
    names = next(rows, None)
    if names is None:
        raise DataError(f"{path}: expected {path.name} {_CSV}, got EmptyDataError: No columns "
                        "to parse from file")
    return tuple(names)


def _slot_names(header: tuple[str, ...]) -> tuple[str, ...]:
    """Each header column's name for pyarrow: a repeated name's later copies get a name of
    their own (``<name>\\x00<position>``), so every copy can be read."""
    seen: set[str] = set()
    out = []
    for i, name in enumerate(header):
        out.append(name if name not in seen else f"{name}\x00{i}")
        seen.add(name)
    return tuple(out)


def _parquet_header(files: Sequence[Path]) -> tuple[str, ...]:
    import pyarrow.parquet as pq

    header: tuple[str, ...] | None = None
    for file in files:
        try:
            names = tuple(pq.read_schema(file).names)
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise DataError(f"{file}: expected a parquet file, got {type(exc).__name__}: "
                            f"{' '.join(str(exc).split())}") from None
        _check_unique(file, list(names), "schema")
        if header is not None and names != header:
            raise DataError(f"{file}: schema: expected the columns of {files[0].name} "
                            f"({', '.join(header)}), got {', '.join(names)}")
        header = names
    assert header is not None
    return header


def _check_unique(path: Path, names: list[str], where: str) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise DataError(f"{path}: {where}: expected each column name once, got "
                            f"{describe(name)} twice (columns {seen[name] + 1} and {i + 1})")
        seen[name] = i
