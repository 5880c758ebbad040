"""Reading one data frame out of an R lazy-load database (an R package's ``Rdata.rdb``).

Private: :func:`faircode.audit._data_read.read_raw` calls :func:`read_lazyload` when the
manifest's ``dataset.path`` ends in ``.rdb`` (:mod:`faircode.audit._manifest_rdata`).  The
format is R's ``makeLazyLoadDB`` (``tools`` package; ``lazyLoadDBinsertValue`` and
``R_compress1``/``2``/``3`` in R's ``serialize.c`` and ``connections.c``):

* ``<base>.rdx``, the index, beside the database: one ``serialize()`` stream (gzip-compressed,
  as ``saveRDS`` writes it) of ``list(variables = <name -> c(offset, length)>, references =
  <environments>, compressed = <0, 1, 2 or 3>)``;
* ``<base>.rdb``, the objects one after another; the ``length`` bytes at ``offset`` are one
  object's ``serialize()`` stream, compressed as ``compressed`` says: 0 none; 1 a 4-byte
  big-endian length of the stream then its zlib stream; 2 and 3 that length, then a type byte
  (``'2'`` bzip2, ``'1'`` zlib, ``'0'`` stored, and for 3 also ``'Z'``: a raw LZMA2 stream
  without the xz container) and the compressed stream.

Design decisions
----------------
* **Only the named object is read**: its bytes are sought in the database, never the rest, and
  only that object is parsed and converted (:func:`faircode.audit._data_rdata.frame_of`: the
  same types, checks and one-line errors as a ``save()`` file's data frame).
* **Bounded**: the index and the object are each read up to
  :data:`~faircode.audit._data_rdata.MAX_FILE_BYTES` and decompressed incrementally, together
  to at most :data:`~faircode.audit._data_rdata.MAX_DATA_BYTES`; an object declaring a larger
  length is refused before a byte of it is decompressed, one inflating past its declared length
  stops there.  The file is named in every error.
* **Values only**: an object holding a persistent reference (a lazy-load database's
  environments or promises, kept as ``references`` in the index) is refused in one line; only
  data frames are read.
"""

from __future__ import annotations

import bz2
import difflib
import lzma
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.audit._data_rdata import (
    MAX_DATA_BYTES,
    MAX_FILE_BYTES,
    attributes,
    decompress,
    decompressor,
    fail,
    frame_of,
    parse_stream,
    read_bounded,
    strings,
)

__all__ = ["INDEX_SUFFIX", "read_lazyload"]

INDEX_SUFFIX = ".rdx"
"""The index beside a lazy-load database ``<base>.rdb``: ``<base>.rdx``."""
_HEADERS = (b"X\n", b"A\n", b"B\n")
"""The format lines ``serialize()`` opens a stream with (XDR, ASCII, native binary)."""
_TYPES = {b"Z": "xz (raw LZMA2)", b"2": "bzip2", b"1": "zlib", b"0": "stored"}
"""The type byte of an object compressed with ``compress = 2`` or ``3``."""
_SHOWN = 12
"""A missing object's error lists every object of a database this small, else the closest."""


def _named(obj: Any) -> dict[str, Any]:
    """The items of a named R list (a generic vector with ``names``) by name."""
    if obj is None or obj.info.type.name != "VEC":
        return {}
    return dict(zip(strings(attributes(obj).get("names")), obj.value or (), strict=False))


def _numbers(obj: Any) -> list[float] | None:
    """The values of a logical, integer or double R vector without NA (None otherwise)."""
    if obj is None or obj.info.type.name not in ("LGL", "INT", "REAL"):
        return None
    values = np.asarray(np.ma.getdata(obj.value), dtype=float).ravel()
    if np.ma.getmaskarray(obj.value).any() or not np.isfinite(values).all():
        return None
    return [float(v) for v in values]


def _index(file: Path, *, where: str) -> tuple[dict[str, tuple[int, int]], int, int]:
    """The objects of the index ``file`` (name -> offset, length), its ``compressed`` and the
    bytes it decompressed to."""
    if not file.is_file():
        raise fail(where, f"the lazy-load index {file.name} beside "
                   f"{file.with_suffix('.rdb').name}", "no such file")
    raw = read_bounded(file, where)
    found = decompressor(raw[:6])
    data: bytes | bytearray = raw
    if found is not None:  # saveRDS() writes it gzip-compressed; R reads bzip2 and xz too
        data = decompress(raw, found[1], kind=found[0], name=file.name, where=where,
                          limit=MAX_DATA_BYTES)
    expected = "a lazy-load index (a serialize() stream of variables, references, compressed)"
    if len(data) > MAX_DATA_BYTES or not data.startswith(_HEADERS):
        raise fail(where, expected, f"{file.name} starting {bytes(data[:12])!r}")
    top = _named(parse_stream(data, name=file.name, where=where, object_where=where).object)
    compressed = _numbers(top.get("compressed"))
    keys: dict[str, tuple[int, int]] = {}
    for name, key in _named(top.get("variables")).items():
        pair = _numbers(key)
        if pair is None or len(pair) != 2 or min(pair) < 0 or any(v % 1 for v in pair):
            raise fail(where, f"{expected} whose keys are (offset, length) pairs",
                       f"{file.name} with {name!r} keyed {pair}")
        keys[name] = (int(pair[0]), int(pair[1]))
    if compressed is None or len(compressed) != 1 or compressed[0] not in (0, 1, 2, 3) \
            or "variables" not in top:
        raise fail(where, expected, f"{file.name} holding {', '.join(top) or 'nothing'}"
                   f" (compressed: {compressed})")
    return keys, int(compressed[0]), len(data)


def _missing(name: str, keys: dict[str, tuple[int, int]], base: str) -> str:
    """What the error for a missing object says after ``got``."""
    if len(keys) <= _SHOWN:
        return f"{name!r} (str); the database holds: {', '.join(keys) or 'no object'}"
    close = difflib.get_close_matches(name, list(keys), n=3, cutoff=0.5)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return f"{name!r} (str); {base} holds {len(keys)} objects{hint}"


def _slice(file: Path, offset: int, length: int, *, what: str, where: str) -> bytes:
    """The ``length`` bytes of ``file`` at ``offset`` (inside the file, at most MAX_FILE_BYTES)."""
    size = file.stat().st_size
    if offset + length > size or length > MAX_FILE_BYTES:
        raise fail(where, f"an object inside {file.name} ({size:,} bytes) of at most "
                   f"{MAX_FILE_BYTES:,} bytes", f"{what} at bytes {offset:,} to "
                   f"{offset + length:,} (the index does not match the database)")
    with file.open("rb") as handle:
        handle.seek(offset)
        return handle.read(length)


def _unpack(blob: bytes, compressed: int, *, what: str, where: str,
            limit: int) -> bytes | bytearray:
    """An object's serialize() stream from its bytes in the database (module docstring)."""
    if compressed == 0:
        return blob
    head = 5 if compressed > 1 else 4
    if len(blob) < head:
        raise fail(where, f"an object of at least {head} bytes (its length, compressed "
                   f"{compressed})", f"{what} of {len(blob)}")
    declared = int.from_bytes(blob[:4], "big")
    kind = _TYPES.get(blob[4:5]) if compressed > 1 else "zlib"
    if kind is None or (kind.startswith("xz") and compressed == 2):
        raise fail(where, f"a type byte of {', '.join(map(repr, _TYPES))} (compressed "
                   f"{compressed})", f"{what} typed {blob[4:5]!r}")
    if declared > limit:
        raise fail(where, f"R data of at most {limit:,} bytes once decompressed",
                   f"{what} declaring {declared:,} (not read)")
    payload = blob[head:]
    data: bytes | bytearray
    if kind == "stored":
        data = payload
    else:
        engine: Any = (zlib.decompressobj() if kind == "zlib" else bz2.BZ2Decompressor()
                       if kind == "bzip2" else lzma.LZMADecompressor(
                           format=lzma.FORMAT_RAW,
                           filters=[{"id": lzma.FILTER_LZMA2,
                                     "dict_size": max(declared, 4096)}]))
        data = decompress(payload, engine, kind=kind, name=what, where=where, limit=declared)
    if len(data) != declared:
        raise fail(where, f"an object of the {declared:,} bytes its header declares",
                   f"{what} of {len(data):,}{' or more' if len(data) > declared else ''}")
    return data


def read_lazyload(file: Path, *, object_name: str, where: str) -> pd.DataFrame:
    """The data frame ``object_name`` of the lazy-load database ``file`` (module docstring).

    ``where`` opens every error (``<manifest>: dataset``); the key that is wrong is appended
    (``.path`` for the files, ``.object`` for the object).
    """
    index = file.with_suffix(INDEX_SUFFIX)
    keys, compressed, used = _index(index, where=f"{where}.path")
    if object_name not in keys:
        raise fail(f"{where}.object", f"an object of {file.name}",
                   _missing(object_name, keys, file.name))
    offset, length = keys[object_name]
    what = f"{file.name} object {object_name!r}"
    blob = _slice(file, offset, length, what=what, where=f"{where}.path")
    data = _unpack(blob, compressed, what=what, where=f"{where}.path",
                   limit=MAX_DATA_BYTES - used)
    if not data.startswith(_HEADERS):
        raise fail(f"{where}.path", "an R serialize() stream (X, A or B format)",
                   f"{what} starting {bytes(data[:12])!r}")
    parsed = parse_stream(data, name=what, where=f"{where}.path", object_where=f"{where}.object")
    return frame_of(parsed.object, encoding=getattr(parsed.extra, "encoding", None),
                    name=object_name, file=file.name, where=f"{where}.object")
