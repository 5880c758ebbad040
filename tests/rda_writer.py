"""A minimal writer of R's XDR serialisation (``save()`` files, ``.rda``; lazy-load databases,
``Rdata.rdb`` with ``Rdata.rdx``), for test fixtures.

There is no R on the test machines, so the R-data reader's fixtures are written here from the
format itself (R Internals, "Serialization Formats"; R's ``serialize.c``): the ``RDX2`` magic,
the ``X`` (XDR, big-endian) format line, three version integers, then one pairlist of the saved
objects, each item an object tagged with its name.  Only what the fixtures need is written:
integer, double, logical, character and complex vectors, generic vectors (lists), attributes
(``names``, ``class``, ``levels``, ``row.names``), data frames and factors.  Symbols are
written in full every time (R writes a repeated symbol as a back-reference; a reader accepts
both).  Missing values are R's: ``NA_integer_`` (and logical ``NA``) is ``-2**31``, ``NA_real_``
the NaN whose low word is 1954, ``NA_character_`` a CHARSXP of length ``-1``.

A lazy-load database is what R's ``makeLazyLoadDB`` writes (``serialize.c``/``connections.c``:
``lazyLoadDBinsertValue``, ``R_compress1``/``2``/``3``): each object's ``serialize()`` stream
(``X`` format, no ``RDX2`` magic), compressed as ``compress`` says and appended to the ``.rdb``;
the ``.rdx`` is ``saveRDS`` (gzip) of ``list(variables = <name -> c(offset, length)>, references
= list(), compressed = <TRUE, 2L or 3L>)``.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

PERSIST = 247

NILVALUE, SYM, LIST, CHAR, LGL, INT, REAL, CPLX, STR, VEC = 254, 1, 2, 9, 10, 13, 14, 15, 16, 19
NA_INT = -(2**31)
NA_REAL = struct.unpack(">d", struct.pack(">II", 0x7FF00000, 1954))[0]
_ASCII = 64  # the CHARSXP "levels" bit of an ASCII string


class _NA:
    """R's missing value in a vector built here (``NA`` below)."""

    def __repr__(self) -> str:
        return "NA"


NA = _NA()


@dataclass(frozen=True)
class RVector:
    """An R vector of ``kind`` with its ``values`` (``NA`` for missing) and attributes."""

    kind: Literal["integer", "double", "logical", "character", "complex", "list"]
    values: Sequence[object]
    attributes: tuple[tuple[str, RVector], ...] = field(default=())


def _int(x: int) -> bytes:
    return struct.pack(">i", x)


def _flags(kind: int, *, obj: bool = False, attr: bool = False, tag: bool = False,
           levels: int = 0) -> bytes:
    return _int(kind | (obj << 8) | (attr << 9) | (tag << 10) | (levels << 12))


def _charsxp(text: str | _NA) -> bytes:
    if isinstance(text, _NA):
        return _flags(CHAR) + _int(-1)
    raw = text.encode("utf-8")
    return _flags(CHAR, levels=_ASCII if raw.isascii() else 8) + _int(len(raw)) + raw


def _symbol(name: str) -> bytes:
    return _flags(SYM) + _charsxp(name)


def _pairlist(items: Sequence[tuple[str, bytes]]) -> bytes:
    """A tagged pairlist of already serialised values, ended by NILVALUE."""
    out = b""
    for name, value in items:
        out += _flags(LIST, tag=True) + _symbol(name) + value
    return out + _int(NILVALUE)


def serialise(vector: RVector) -> bytes:
    """The XDR bytes of one R vector (with its attributes)."""
    attrs = vector.attributes
    is_object = any(name == "class" for name, _ in attrs)
    kind = {"integer": INT, "double": REAL, "logical": LGL, "character": STR,
            "complex": CPLX, "list": VEC}[vector.kind]
    out = _flags(kind, obj=is_object, attr=bool(attrs)) + _int(len(vector.values))
    for v in vector.values:
        if vector.kind in ("integer", "logical"):
            out += _int(NA_INT if isinstance(v, _NA) else int(v))  # type: ignore[call-overload]
        elif vector.kind == "double":
            out += struct.pack(">d", NA_REAL if isinstance(v, _NA) else float(v))  # type: ignore[arg-type]
        elif vector.kind == "complex":
            out += struct.pack(">dd", complex(v).real, complex(v).imag)  # type: ignore[arg-type]
        elif vector.kind == "character":
            out += _charsxp(v)  # type: ignore[arg-type]
        else:
            assert isinstance(v, RVector)
            out += serialise(v)
    if attrs:
        out += _pairlist([(name, serialise(value)) for name, value in attrs])
    return out


def character(*values: str | _NA) -> RVector:
    return RVector("character", values)


def factor(values: Sequence[str | _NA], levels: Sequence[str]) -> RVector:
    """An R factor: 1-based integer codes with ``levels`` and class ``factor``."""
    codes = [NA if isinstance(v, _NA) else levels.index(v) + 1 for v in values]
    return RVector("integer", codes, (("levels", character(*levels)),
                                      ("class", character("factor"))))


def data_frame(columns: dict[str, RVector]) -> RVector:
    """An R data frame of equal-length ``columns`` (compact row names ``c(NA, -n)``)."""
    n = len(next(iter(columns.values())).values)
    return RVector("list", list(columns.values()), (
        ("names", character(*columns)),
        ("row.names", RVector("integer", [NA, -n])),
        ("class", character("data.frame")),
    ))


def rda(objects: dict[str, RVector], *,
        compression: Literal["gzip", "bzip2", "xz", "none"] = "gzip") -> bytes:
    """The bytes of ``save(<objects>, file=)``: RDX2 + XDR, compressed as R's ``compress=``."""
    body = (b"RDX2\nX\n" + _int(2) + _int(0x040201) + _int(0x020300)
            + _pairlist([(name, serialise(value)) for name, value in objects.items()]))
    if compression == "gzip":
        return gzip.compress(body, mtime=0)
    if compression == "bzip2":
        return bz2.compress(body)
    if compression == "xz":
        return lzma.compress(body)
    return body


def named_list(items: dict[str, RVector]) -> RVector:
    """An R list with names (``list(a = ..., b = ...)``)."""
    return RVector("list", list(items.values()), (("names", character(*items)),))


def stream(value: RVector | bytes) -> bytes:
    """One ``serialize()`` stream (XDR, version 2) of ``value`` (or of already serialised bytes)."""
    body = value if isinstance(value, bytes) else serialise(value)
    return b"X\n" + _int(2) + _int(0x040201) + _int(0x020300) + body


def persistent(name: str) -> bytes:
    """A persistent reference (PERSISTSXP) to ``name``, as a database refers to an environment."""
    return _int(PERSIST) + _int(0) + _int(1) + _charsxp(name)


LazyCompression = Literal["zlib", "bzip2", "xz", "none"]
_FLAGS: dict[str, RVector] = {"none": RVector("logical", [0]), "zlib": RVector("logical", [1]),
                              "bzip2": RVector("integer", [2]), "xz": RVector("integer", [3])}


def pack(data: bytes, compression: LazyCompression, type_byte: bytes | None = None) -> bytes:
    """One object's bytes in the database: ``R_compress1`` (zlib), ``2`` (bzip2), ``3`` (xz).

    ``type_byte`` (for bzip2 and xz only) writes another type: ``b"0"`` stored, ``b"1"`` zlib.
    """
    if compression == "none":
        return data
    length = struct.pack(">I", len(data))
    if compression == "zlib":
        return length + zlib.compress(data)
    kind = type_byte or (b"2" if compression == "bzip2" else b"Z")
    body = {b"0": lambda d: d, b"1": zlib.compress, b"2": bz2.compress,
            b"Z": lambda d: lzma.compress(d, format=lzma.FORMAT_RAW, filters=[
                {"id": lzma.FILTER_LZMA2, "preset": 6}])}[kind](data)
    return length + kind + body


def lazyload_db(objects: dict[str, RVector | bytes], *, compression: LazyCompression = "zlib",
                type_byte: bytes | None = None) -> tuple[bytes, bytes]:
    """The bytes of ``Rdata.rdb`` and ``Rdata.rdx`` holding ``objects`` (module docstring)."""
    rdb, keys = b"", {}
    for name, value in objects.items():
        blob = pack(stream(value), compression, type_byte)
        keys[name] = RVector("integer", [len(rdb), len(blob)])
        rdb += blob
    index = named_list({"variables": named_list(keys), "references": named_list({}),
                        "compressed": _FLAGS[compression]})
    return rdb, gzip.compress(stream(index), mtime=0)
