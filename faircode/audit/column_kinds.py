"""One type per column across a table's chunks: :class:`TypeGuard`.

A CSV chunk is typed on its own, and each Parquet file of a folder has its own schema, so a
column whose first rows are numbers and a later row text (``1`` then ``F``, ``0``/``1`` then
``yes``/``no``) would be compared as numbers in one chunk and as text in another; a column a
reader interprets (a filter's, a group, the label, the decision, the unit, the score) is refused
at the first row of another kind, naming the file, the row, the column and both kinds -- also
between the shards of a Dask reduction (:meth:`TypeGuard.absorb`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from faircode.core.errors import DataError, describe

if TYPE_CHECKING:
    from faircode.audit.table_file import Chunk, TableFile

__all__ = ["FirstOfKind", "TypeGuard"]


def _kind(values: pd.Series) -> str | None:
    """``number``, ``boolean`` or ``text``; None for a chunk whose column is all missing."""
    if not values.notna().any():
        return None
    if is_bool_dtype(values):
        return "boolean"
    return "number" if is_numeric_dtype(values) else "text"


@dataclass(frozen=True, slots=True)
class FirstOfKind:
    """Where a column first had a value, and that value's kind (a :class:`TypeGuard`'s memory)."""

    kind: str
    file: Path
    row: int
    value: object


@dataclass(slots=True)
class TypeGuard:
    """Remembers each guarded column's kind in the first chunk that has a value for it.

    One guard reads one stream of chunks; the guards of a log's shards (read apart, on Dask
    workers) are compared afterwards, in the shards' order, with :meth:`absorb`.
    """

    table: TableFile
    roles: dict[str, str]
    kinds: dict[str, FirstOfKind] = field(default_factory=dict)

    def check(self, chunk: Chunk) -> None:
        """Raise at the first row of ``chunk`` whose column kind differs from the first rows'."""
        for column in self.roles:
            values = chunk.frame[column]
            kind = _kind(values)
            if kind is None:
                continue
            i = _first_of_kind(values, kind)
            here = FirstOfKind(kind, chunk.file, chunk.start + i, _python(values.iloc[i]))
            self._compare(column, here)

    def absorb(self, kinds: dict[str, FirstOfKind]) -> None:
        """Compare the kinds a later shard's guard found with this guard's (module docstring)."""
        for column, here in kinds.items():
            self._compare(column, here)

    def _compare(self, column: str, here: FirstOfKind) -> None:
        first = self.kinds.setdefault(column, here)
        if here.kind == first.kind:
            return
        table = self.table
        raise DataError(f"{table.path}: {table.where(here.file, here.row)}: column {column!r} "
                        f"({self.roles[column]}): expected {first.kind} values as from "
                        f"{table.where(first.file, first.row)}, got {here.kind}: "
                        f"{describe(here.value)}")


def _first_of_kind(values: pd.Series, kind: str) -> int:
    if kind != "text":
        return int(np.flatnonzero(values.notna().to_numpy())[0])
    numbers = pd.to_numeric(values.astype(object), errors="coerce")
    text = values.notna().to_numpy() & numbers.isna().to_numpy()
    return int(np.flatnonzero(text)[0]) if text.any() else int(
        np.flatnonzero(values.notna().to_numpy())[0])


def _python(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value
