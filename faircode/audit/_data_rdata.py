"""Reading one data frame out of an R data file (``.rda``/``.RData``: R's ``save()`` format).

Private: :func:`faircode.audit._data_read.read_raw` calls :func:`read_rdata` when the manifest
names an R object (``dataset.object``) of such a file; the lazy-load databases of R packages
(``Rdata.rdb``) are read by :mod:`faircode.audit._data_rdb` with the helpers here
(:func:`decompress`, :func:`parse_stream`, :func:`frame_of`).  The parsing and the conversion of
R's types are the pure-Python ``rdata`` package's (no R needed); this module bounds what it
reads, checks what it gets and turns every failure into one line.

Design decisions
----------------
* **Bounded.**  The file is read only up to :data:`MAX_FILE_BYTES`, and R's compression (gzip,
  bzip2 or xz, as ``save(compress=)`` writes it) is undone here, incrementally, to at most
  :data:`MAX_DATA_BYTES`; ``rdata`` is handed the decompressed bytes, so a small file that
  inflates without end stops at the cap instead of filling memory.
* **One line per failure**, naming the manifest, the key and what arrived: a file that is not R
  data (its first bytes are shown), a compressed stream cut short or corrupt, an R stream that
  does not parse, the object missing (the objects the file holds are listed), an object that is
  not a data frame, a column of a type the benchmark cannot read (complex, list, raw, or a
  classed vector other than a factor, a date or a date-time, such as ``difftime``: its class is
  named).
* **Types as R has them**: factors become pandas categoricals with their levels in R's order
  (ordered factors ordered), integers nullable ``Int32``, doubles ``float64``, logicals nullable
  ``boolean``, character vectors ``string``, ``Date`` ``datetime64`` (no time zone) and
  ``POSIXct`` ``datetime64`` in its ``tzone`` (UTC when it names none); R's ``NA`` stays missing
  in every one of them.  The rows are numbered ``row 1`` ... in the data frame's order (R's row
  names are not kept), and every later data error names them so.
* Only the named object is converted: other objects in the file may be of any type.
* **Nesting is bounded by Python's recursion limit** (``rdata`` parses and converts recursively):
  an object of lists nested thousands deep is one line, never a ``RecursionError``.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import sys
import warnings
import zlib
import zoneinfo
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.core.errors import DataError, describe

__all__ = ["MAX_DATA_BYTES", "MAX_FILE_BYTES", "attributes", "decompress", "fail", "frame_of",
           "parse_stream",
           "read_bounded", "read_rdata", "strings"]

MAX_FILE_BYTES = 256 * 2**20
"""The largest R data file read (bytes on disk)."""
MAX_DATA_BYTES = 256 * 2**20
"""The most bytes an R data file may decompress to (the largest mirrored one: 4.8 MB)."""

_MAGIC = (b"RDX2\n", b"RDX3\n", b"RDA2\n", b"RDA3\n", b"RDB2\n", b"RDB3\n")
"""The headers ``save()`` writes (XDR, ASCII and native binary; versions 2 and 3)."""
_R_TYPES = {"NIL": "NULL", "SYM": "symbol", "LIST": "pairlist", "CLO": "closure",
            "ENV": "environment", "LGL": "logical", "INT": "integer", "REAL": "double",
            "CPLX": "complex", "STR": "character", "VEC": "list", "RAW": "raw", "S4": "S4"}
_COLUMN_TYPES = ("LGL", "INT", "REAL", "STR")
_FACTORS = ({"factor"}, {"ordered", "factor"})
_DATES = {"Date": frozenset({"Date"}), "POSIXct": frozenset({"POSIXct", "POSIXt"})}
"""The classed numeric columns read as dates (days since 1970-01-01) and date-times (seconds)."""
_PERSIST = 247
"""R's PERSISTSXP: a reference to something outside the stream (a lazy-load database's
environments), which ``rdata`` cannot read."""
_CHUNK = 16 * 2**20
"""Decompressed bytes asked for at a time."""
_DEPTH = sys.getrecursionlimit() // 4
"""About how deep ``rdata``'s recursive parser can follow nested R objects (each level costs it
a few Python frames); deeper is one line, not a ``RecursionError``."""
_PARSE_ERRORS = (ValueError, TypeError, IndexError, KeyError, AttributeError, AssertionError,
                 NotImplementedError, OverflowError, EOFError, struct.error, UnicodeDecodeError)
"""What ``rdata``'s parser raises on bytes it cannot read (it has no error type of its own)."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def fail(where: str, expected: str, got: str) -> DataError:
    """The one-line error ``<where>: expected <expected>, got <got>``."""
    return DataError(f"{where}: expected {expected}, got {got}")


def read_bounded(file: Path, where: str) -> bytes:
    """The bytes of ``file``, refused from its size when it has more than MAX_FILE_BYTES."""
    size = file.stat().st_size
    if size > MAX_FILE_BYTES:
        raise fail(where, f"an R data file of at most {MAX_FILE_BYTES:,} bytes",
                   f"{file.name} of {size:,} bytes")
    with file.open("rb") as handle:
        return handle.read(MAX_FILE_BYTES + 1)


def decompressor(head: bytes) -> tuple[str, Any] | None:
    """The kind and a fresh decompressor of a gzip, bzip2 or xz file starting ``head``."""
    if head.startswith(b"\x1f\x8b"):
        return "gzip", zlib.decompressobj(16 + zlib.MAX_WBITS)
    if head.startswith(b"BZh"):
        return "bzip2", bz2.BZ2Decompressor()
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz", lzma.LZMADecompressor()
    return None


def decompress(raw: bytes, engine: Any, *, kind: str, name: str, where: str,
               limit: int) -> bytearray:
    """``raw`` through ``engine`` (a zlib, bz2 or lzma decompressor), incrementally.

    Returns at most ``limit + 1`` bytes: more than ``limit`` means the stream goes on past it
    (reading stopped there; the caller says what that means).  A stream that ends before its
    end-of-stream marker or does not decode is one line naming ``name`` and ``kind``.
    """
    data = bytearray()  # one growing buffer: a list of parts joined at the end peaks at twice
    total, pending = 0, raw
    try:
        while total <= limit:  # every call gives at most what is left under the cap (+1)
            out = engine.decompress(pending, min(limit + 1 - total, _CHUNK))
            data += out
            total += len(out)
            if engine.eof:
                break
            # zlib keeps unread input in unconsumed_tail; bz2/xz keep it inside the engine
            zlib_engine = hasattr(engine, "unconsumed_tail")
            pending = engine.unconsumed_tail if zlib_engine else b""
            if (not pending) if zlib_engine else engine.needs_input:
                break  # every byte read and no end-of-stream marker: cut short
    except (zlib.error, OSError, lzma.LZMAError, EOFError) as exc:
        raise fail(where, f"a valid {kind} stream (R data)",
                   f"{name} corrupt ({type(exc).__name__}: {_one_line(exc)})") from None
    if total <= limit and not engine.eof:
        raise fail(where, f"a complete {kind} stream (R data)",
                   f"{name} cut short after {len(raw):,} compressed bytes")
    return data


def _inflate(raw: bytes, *, name: str, where: str) -> bytes | bytearray:
    """``raw`` decompressed (or as it is when not compressed), at most MAX_DATA_BYTES."""
    found = decompressor(raw[:6])
    if found is None:
        return raw
    kind, engine = found
    data = decompress(raw, engine, kind=kind, name=name, where=where, limit=MAX_DATA_BYTES)
    if len(data) > MAX_DATA_BYTES:
        raise fail(where, f"R data of at most {MAX_DATA_BYTES:,} bytes once decompressed",
                   f"{name} inflating past that (reading stopped)")
    return data


def parse_stream(data: bytes | bytearray, *, name: str, where: str, object_where: str) -> Any:
    """``rdata``'s parse of the R stream ``data`` (a ``save()`` file or one ``serialize()``).

    A stream that does not parse is one line at ``where``; one holding a persistent reference
    (a lazy-load database's environment) one line at ``object_where``.
    """
    import rdata  # here: the R reader is loaded only for an audit that reads R data

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return rdata.parser.parse_data(data)  # type: ignore[arg-type]  # bytes-like
    except RecursionError:  # rdata parses recursively: lists in lists ... thousands deep
        raise fail(where, f"R data nested at most about {_DEPTH:,} levels deep",
                   f"{name} nested deeper (lists within lists)") from None
    except MemoryError:
        raise MemoryError(f"reading {name}") from None
    except _PARSE_ERRORS as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(f"{_PERSIST} is not a valid"):
            raise fail(object_where, "a data frame of values (references to a lazy-load "
                       "database's environments or promises are not read)",
                       f"{name} holding one (an R persistent reference)") from None
        raise fail(where, "a complete R data stream", f"{name} cut short or "
                   f"malformed ({type(exc).__name__}: {_one_line(exc)})") from None


def strings(obj: Any) -> list[str]:
    """The texts of a character vector RObject (NA as "NA")."""
    values = getattr(obj, "value", None) or ()
    out = []
    for item in values:
        raw = getattr(item, "value", None)
        out.append(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else "NA")
    return out


def _resolve(obj: Any) -> Any:
    """Follow a back-reference (REFSXP) to the object it names."""
    while obj is not None and obj.info.type.name == "REF":
        obj = obj.referenced_object
    return obj


def _pairs(obj: Any) -> Iterator[tuple[str, Any]]:
    """The (tag, value) items of a pairlist RObject (attributes, or the saved objects)."""
    node = _resolve(obj)
    while node is not None and node.info.type.name in ("LIST", "ATTRLIST"):
        tag = _resolve(node.tag)
        name = ""
        if tag is not None and tag.info.type.name == "SYM":
            raw = getattr(_resolve(tag.value), "value", b"")
            name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        car, cdr = node.value
        yield name, _resolve(car)
        node = _resolve(cdr)


def attributes(obj: Any) -> dict[str, Any]:
    """The attributes of an RObject by name."""
    return dict(_pairs(obj.attributes)) if obj.attributes is not None else {}


def _type_name(obj: Any) -> str:
    kind = obj.info.type.name
    classes = strings(attributes(obj).get("class"))
    base = _R_TYPES.get(kind, kind.lower())
    return f"{base} of class {', '.join(classes)}" if classes else base


def _date_kind(value: Any) -> str | None:
    """``Date`` or ``POSIXct`` for a numeric vector of that class, else None."""
    classes = frozenset(strings(attributes(value).get("class")))
    if value.info.type.name not in ("INT", "REAL"):
        return None
    return next((kind for kind, wanted in _DATES.items() if classes == wanted), None)


def _check_frame(obj: Any, *, name: str, where: str) -> list[str]:
    """Raise unless ``obj`` is a data frame of readable columns; return its column names."""
    attrs = attributes(obj)
    if obj.info.type.name != "VEC" or "data.frame" not in strings(attrs.get("class")):
        raise fail(where, "the name of a data frame", f"{name!r} (str), an R {_type_name(obj)}")
    columns = strings(attrs.get("names"))
    for column, value in zip(columns, obj.value, strict=False):
        value = _resolve(value)
        classes = set(strings(attributes(value).get("class")))
        readable = value.info.type.name in _COLUMN_TYPES and (
            not classes or (value.info.type.name == "INT" and classes in _FACTORS)
            or _date_kind(value) is not None)
        if not readable:
            raise fail(where, "a data frame of logical, integer, double, character, factor, "
                       "Date or POSIXct columns",
                       f"column {column!r} of {name!r}, an R {_type_name(value)}")
    return columns


def _as_dates(frame: pd.DataFrame, obj: Any, *, name: str, where: str) -> pd.DataFrame:
    """``frame`` with its Date and POSIXct columns (numbers after conversion) as datetimes."""
    for column, value in zip(strings(attributes(obj).get("names")), obj.value, strict=False):
        value = _resolve(value)
        kind = _date_kind(value)
        if kind is None:
            continue
        numbers = pd.to_numeric(frame[column]).to_numpy(dtype=float, na_value=np.nan)
        if kind == "Date":
            frame[column] = pd.to_datetime(numbers, unit="D")
            continue
        zone = (strings(attributes(value).get("tzone")) or [""])[0] or "UTC"
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise fail(where, "a POSIXct column in a known time zone",
                       f"column {column!r} of {name!r} in {zone!r}") from None
        frame[column] = pd.to_datetime(numbers, unit="s", utc=True).tz_convert(zone)
    return frame


def frame_of(obj: Any, *, encoding: str | None, name: str, file: str,
             where: str) -> pd.DataFrame:
    """The data frame RObject ``obj`` (the object ``name`` of ``file``) as pandas' frame.

    ``where`` opens every error (``<manifest>: dataset.object``).
    """
    import rdata

    _check_frame(obj, name=name, where=where)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            converter = rdata.conversion.SimpleConverter(default_encoding=encoding)
            frame = converter.convert(obj)
    except RecursionError:
        raise fail(where, f"a data frame nested at most about {_DEPTH:,} levels deep in {file}",
                   f"{name!r} nested deeper") from None
    except _PARSE_ERRORS as exc:
        raise fail(where, f"a data frame rdata can convert in {file}",
                   f"{name!r} ({type(exc).__name__}: {_one_line(exc)})") from None
    if not isinstance(frame, pd.DataFrame):  # pragma: no cover - _check_frame guarantees it
        raise fail(where, "a data frame", describe(frame))
    return _as_dates(frame.reset_index(drop=True), obj, name=name, where=where)


def read_rdata(file: Path, *, object_name: str, where: str) -> pd.DataFrame:
    """The data frame ``object_name`` of the R data file ``file`` (module docstring).

    ``where`` opens every error (``<manifest>: dataset``); the key that is wrong is appended
    (``.path`` for the file, ``.object`` for the object).
    """
    raw = read_bounded(file, f"{where}.path")
    data = _inflate(raw, name=file.name, where=f"{where}.path")
    if not data.startswith(_MAGIC):
        raise fail(f"{where}.path", "R data written by save() (header RDX2 or RDX3, "
                   "optionally gzip, bzip2 or xz compressed)",
                   f"{file.name} starting {describe(bytes(data[:12]))}")
    parsed = parse_stream(data, name=file.name, where=f"{where}.path",
                          object_where=f"{where}.object")
    objects = dict(_pairs(parsed.object))
    if object_name not in objects:
        held = ", ".join(objects) or "no object"
        raise fail(f"{where}.object", f"an object of {file.name}",
                   f"{object_name!r} (str); the file holds: {held}")
    return frame_of(objects[object_name], encoding=getattr(parsed.extra, "encoding", None),
                    name=object_name, file=file.name, where=f"{where}.object")
