"""A practitioner's two score files: a model's scores of original payloads and of the copies
``faircode perturb`` wrote, joined on the payload id.

The model is theirs (any classifier, one behind an API): faircode imports none of its code, it
reads what the model said.  Two files, each CSV (a header row) or JSON Lines (``.jsonl``):

* **originals** -- ``id``, ``score`` and optionally ``unit`` (a template or any group of
  payloads that are not independent; without it every payload is its own unit);
* **copies** -- ``id``, ``axis``, ``kind``, ``changed`` and ``score``: ``faircode perturb``'s
  records with the model's score added (the ``perturbed`` payload and ``fired`` may stay; they
  are not read).  A copy that did not change (``changed`` false) needs no score and is counted
  as unchanged, never as "no flip".

Every defect is one :class:`~faircode.core.errors.DataError` line naming the file, the line and
the field, raised before anything is computed: a missing column, an id that is not a string or
an integer, a duplicate id (a duplicate (id, axis, kind) among the copies), a score that is not
a number in [0, 1] (in JSON Lines a JSON number: ``"0.5"`` is text, refused), a changed copy
without a score, a ``changed`` that is not a boolean, a kind
other than explicit or proxy, and a copy whose id has no original.  Ids are compared as text
(CSV has no other type), so ``7`` and ``"7"`` are one id.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from faircode.audit.fetch import sha256_file
from faircode.core.errors import DataError, FaircodeError, describe
from faircode.core.schema import decode_utf8
from faircode.counterfactual._jsonl import parse_line, split_lines

__all__ = ["COPY_FIELDS", "ORIGINAL_FIELDS", "ScorePairs", "read_score_files"]

ORIGINAL_FIELDS = ("id", "score")
COPY_FIELDS = ("id", "axis", "kind", "changed", "score")
_KINDS = ("explicit", "proxy")
_TRUE, _FALSE = ("true", "True", "TRUE", "1"), ("false", "False", "FALSE", "0")


@dataclass(frozen=True, slots=True)
class ScorePairs:
    """The joined files: every original's id, score and unit, and per (axis, kind) its copies.

    ``pairs`` holds the changed copies (``axis``, ``kind``, ``sentence``: the original's index,
    ``copy_score``); ``payloads`` per (axis, kind), in order of first appearance, its number of
    copies (``n_payloads``, changed or not) and of changed ones.
    """

    ids: tuple[str, ...]
    scores: NDArray[np.float64]
    units: NDArray[np.str_] | None
    pairs: pd.DataFrame
    payloads: pd.DataFrame
    sha256: tuple[str, str]


def _records(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """``(line, record)`` of a CSV or JSONL file; a malformed file or line is one DataError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read: {type(exc).__name__}: {exc}") from None
    try:
        text = decode_utf8(data, where=str(path))
    except FaircodeError as exc:
        raise DataError(str(exc)) from None
    text = text.removeprefix("\ufeff")  # a byte-order mark (Excel's UTF-8 CSV) is no text
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(split_lines(text), start=1):
            if not line.strip():
                continue
            try:
                obj = parse_line(line, where=f"{path}: line {lineno}")
            except FaircodeError as exc:
                raise DataError(str(exc)) from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}: line {lineno}: expected a JSON object, got "
                                f"{describe(obj)}")
            yield lineno, obj
    elif path.suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if reader.fieldnames is None:
            raise DataError(f"{path}: line 1: expected a header row, got an empty file")
        width = len(reader.fieldnames)
        for row in reader:
            if None in row or len(row) != width or any(v is None for v in row.values()):
                raise DataError(f"{path}: line {reader.line_num}: expected {width} fields as "
                                f"in the header, got another number")
            yield reader.line_num, dict(row)
    else:
        raise DataError(f"{path}: expected a .csv or .jsonl score file, got suffix "
                        f"{path.suffix!r} (str)")


def _id(value: object, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise DataError(f"{where}: id: expected a string or an integer, got {describe(value)}")
    return str(value)


def _score(value: object, where: str, *, csv_text: bool, optional: bool = False) -> float:
    """A score of CSV text (``"0.5"`` read as a number) or of JSON (a number, never a string:
    a JSON ``"0.5"`` says the model's output was text, and is refused)."""
    if optional and value in ((None, "") if csv_text else (None,)):
        return math.nan
    number: object = value
    if isinstance(value, str) and csv_text:
        try:
            number = float(value)
        except ValueError:
            number = value
    if (isinstance(number, bool) or not isinstance(number, int | float)
            or not math.isfinite(number) or not 0.0 <= number <= 1.0):
        raise DataError(f"{where}: score: expected a number in [0, 1], got {describe(value)}")
    return float(number)


def _changed(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _TRUE + _FALSE:
        return value in _TRUE
    raise DataError(f"{where}: changed: expected true or false, got {describe(value)}")


def _fields(record: dict[str, object], fields: tuple[str, ...], where: str) -> None:
    missing = [f for f in fields if f not in record]
    if missing:
        raise DataError(f"{where}: {missing[0]}: expected a value (required field), got "
                        "nothing")


def _originals(path: Path) -> tuple[dict[str, int], list[float], list[str] | None]:
    index: dict[str, int] = {}
    lines: dict[str, int] = {}
    scores: list[float] = []
    units: list[str] = []
    with_units: bool | None = None
    for lineno, record in _records(path):
        where = f"{path}: line {lineno}"
        _fields(record, ORIGINAL_FIELDS, where)
        pid = _id(record["id"], where)
        if pid in index:
            raise DataError(f"{where}: id: duplicate id {pid!r} (also line {lines[pid]})")
        has_unit = record.get("unit") not in (None, "")
        if with_units is None:
            with_units = has_unit
        elif has_unit != with_units:
            raise DataError(f"{where}: unit: expected a unit on every line or on none, got "
                            f"{describe(record.get('unit'))}")
        index[pid], lines[pid] = len(index), lineno
        scores.append(_score(record["score"], where, csv_text=path.suffix == ".csv"))
        if has_unit:
            units.append(str(record["unit"]))
    if not index:
        raise DataError(f"{path}: expected one line per original payload, got none")
    return index, scores, units if with_units else None


def read_score_files(originals: Path, copies: Path) -> ScorePairs:
    """Read and join the two files (see the module docstring); every defect is one line."""
    index, scores, units = _originals(Path(originals))
    seen: dict[tuple[str, str, str], int] = {}
    rows: list[tuple[str, str, int, float]] = []
    counts: dict[tuple[str, str], list[int]] = {}
    for lineno, record in _records(Path(copies)):
        where = f"{copies}: line {lineno}"
        _fields(record, COPY_FIELDS[:4], where)  # the score only where the copy changed
        pid = _id(record["id"], where)
        axis, kind = record["axis"], record["kind"]
        if not isinstance(axis, str) or not axis.strip():
            raise DataError(f"{where}: axis: expected an axis name, got {describe(axis)}")
        if kind not in _KINDS:
            raise DataError(f"{where}: kind: expected one of explicit, proxy, got "
                            f"{describe(kind)}")
        key = (pid, axis, str(kind))
        if key in seen:
            raise DataError(f"{where}: id: duplicate copy {pid!r} of axis {axis!r} ({kind}) "
                            f"(also line {seen[key]})")
        seen[key] = lineno
        if pid not in index:
            raise DataError(f"{where}: id: expected the id of an original in {originals}, got "
                            f"{pid!r} (a copy without its original)")
        changed = _changed(record["changed"], where)
        if changed and "score" not in record:
            raise DataError(f"{where}: score: expected a number in [0, 1] (a changed copy), got "
                            "nothing")
        score = _score(record.get("score"), where, csv_text=Path(copies).suffix == ".csv",
                       optional=not changed)
        tally = counts.setdefault((axis, str(kind)), [0, 0])
        tally[0] += 1
        if changed:
            tally[1] += 1
            rows.append((axis, str(kind), index[pid], score))
    if not seen:
        raise DataError(f"{copies}: expected one line per copy (faircode perturb's records "
                        "with a score), got none")
    pairs = pd.DataFrame(rows, columns=["axis", "kind", "sentence", "copy_score"])
    payloads = pd.DataFrame([(a, k, n, c) for (a, k), (n, c) in counts.items()],
                            columns=["axis", "kind", "n_payloads", "n_changed"])
    return ScorePairs(ids=tuple(index), scores=np.asarray(scores, dtype=np.float64),
                      units=None if units is None else np.asarray(units),
                      pairs=pairs, payloads=payloads,
                      sha256=(sha256_file(Path(originals)), sha256_file(Path(copies))))
