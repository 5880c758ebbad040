"""What a manifest's row filters, target and protected attributes mean for a column of values.

The column-level half of :mod:`faircode.audit.data` (which reads, encodes and splits the table):
every
function here takes one column as a pandas Series and the manifest entry that describes it, and
returns NumPy masks or labels.  The comparison rules (NA-aware, by type family; thresholds split
at the threshold; numeric-cut targets) are stated in :mod:`faircode.audit.data`'s docstring.

The value checks (:func:`check_declared_numbers`, :func:`check_features`) decide what malformed
data is: a text value in a column the manifest *declares* numeric (a ``threshold``/``quantile``/
``above_median`` target, a ``numeric_threshold`` attribute) is an error — it cannot be cut, and
would otherwise be dropped as unclassifiable or fail without its row; an infinite number in a
feature is an error (no model can fit it); a feature whose values are mostly numbers and whose
other values are a few distinct texts (an undeclared missing marker such as ``"?"``) is a
*warning* — a feature's kind is inferred, not declared, the user may mean a code column such as
``"10"``/``"10A"``, and it is still encoded consistently (as categories).  A code column with many
distinct texts (ICD-9 diagnoses ``"250.83"``, ``"V57"``, ``"E909"``) gets no warning.  Each message
names the file's line (``rows`` maps frame rows to it) and the manifest key naming the column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from faircode.audit.manifest import Manifest, ProtectedAttribute, RowFilter, Scalar
from faircode.core.errors import DataError, describe
from faircode.core.text import differing, look_alike, same_text

__all__ = [
    "Declaring",
    "LabelRule",
    "as_text",
    "binary_values",
    "check_declared_numbers",
    "check_features",
    "check_look_alikes",
    "derive_target",
    "disadvantaged_mask",
    "filter_mask",
    "first_per_unit",
    "is_numeric_column",
    "target_cut",
]

_FEW_TEXTS = 3
"""A mostly-numeric feature with at most this many distinct text values gets a warning."""
RowNames = Sequence[str] | np.ndarray
"""Where each frame row is in its file (``line 17``), one entry per row."""
_TRUE = frozenset({"true", "t", "yes", "y", "1", "1.0"})
_FALSE = frozenset({"false", "f", "no", "n", "0", "0.0"})
_LOWER_BOUND = re.compile(r"^\s*[\[(]\s*([-+]?\d+(?:\.\d+)?)")


def is_numeric_column(values: pd.Series) -> bool:
    return bool(is_numeric_dtype(values) and not is_bool_dtype(values))


def as_text(value: object) -> str:
    """Canonical text of a value for comparisons and category codes."""
    return str(value)


def _as_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _isin(values: pd.Series, targets: Sequence[Scalar]) -> np.ndarray:
    """Return the bool mask of non-missing ``values`` equal to one of ``targets``."""
    present = values.notna().to_numpy()
    if is_numeric_column(values):
        wanted = [f for f in (_as_float(t) for t in targets) if f is not None]
        hit = np.isin(values.to_numpy(dtype=float, na_value=np.nan), wanted)
    else:  # each distinct value's text is compared once (a log has millions of rows)
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        wanted_text = {same_text(as_text(t)) for t in targets}  # canonical equivalents match
        known = np.array([same_text(as_text(u)) in wanted_text for u in uniques] + [False],
                         dtype=bool)
        hit = known[np.where(codes < 0, len(uniques), codes)]
    return np.asarray(hit & present, dtype=bool)


def filter_mask(row_filter: RowFilter, values: pd.Series) -> np.ndarray:
    """Return the bool mask of rows that ``row_filter`` keeps (missing never equals anything)."""
    op, value = row_filter.operator, row_filter.value
    if op == "notna":
        return values.notna().to_numpy(dtype=bool)
    targets: tuple[Scalar, ...] = value if isinstance(value, tuple) else (value,)  # type: ignore[assignment]
    hit = _isin(values, targets)
    return hit if op in ("isin", "equals") else ~hit


def first_per_unit(units: pd.Series, order: pd.Series, keep: np.ndarray) -> np.ndarray:
    """Return the mask keeping, among ``keep`` rows, each unit's row with the smallest ``order``.

    Missing order values sort last; ties keep the earlier row.  Rows outside ``keep`` stay out.
    """
    keep = np.asarray(keep, dtype=bool)
    rows = np.flatnonzero(keep)
    frame = pd.DataFrame({"u": units.to_numpy()[rows], "o": order.to_numpy()[rows], "r": rows})
    frame = frame.sort_values(["o", "r"], kind="stable", na_position="last")
    first = frame.drop_duplicates("u", keep="first")["r"].to_numpy()
    out = np.zeros(len(keep), dtype=bool)
    out[first] = True
    return out


def binary_values(values: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a 0/1 column: ``(value int8, present bool, bad bool)`` masks per row.

    Booleans, the numbers 0 and 1, and the texts true/false, t/f, yes/no, y/n, 1/0 (any case,
    surrounding spaces ignored) are 0/1; a present value of any other kind is ``bad`` (its
    ``value`` is 0).  Missing values are not ``present``.
    """
    present = values.notna().to_numpy(dtype=bool)
    if is_bool_dtype(values):
        return (values.fillna(False).to_numpy(dtype=bool).astype(np.int8), present,
                np.zeros(len(values), dtype=bool))
    if is_numeric_column(values):
        nums = values.to_numpy(dtype=float, na_value=np.nan)
        bad = present & ~np.isin(nums, [0.0, 1.0])
        return np.where(present & ~bad, nums, 0).astype(np.int8), present, bad
    text = values.astype(object).map(lambda v: as_text(v).strip().lower())
    is_true, is_false = text.isin(_TRUE).to_numpy(), text.isin(_FALSE).to_numpy()
    return is_true.astype(np.int8), present, present & ~(is_true | is_false)


def _binary(values: pd.Series, where: str) -> tuple[np.ndarray, np.ndarray]:
    label, derivable, bad = binary_values(values)
    if bad.any():
        got = values[bad].iloc[0]
        if is_numeric_column(values):
            raise DataError(f"{where}: expected 0/1 values for method binary, got {float(got)!r}")
        raise DataError(f"{where}: expected true/false or 0/1 text for method binary, got {got!r}")
    return label, derivable


class LabelRule(Protocol):
    """What :func:`derive_target` reads of a rule: a :class:`Target` or a system's decision."""

    @property
    def column(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def value(self) -> Scalar | None: ...
    @property
    def values(self) -> tuple[Scalar, ...] | None: ...
    @property
    def threshold(self) -> float | None: ...
    @property
    def quantile(self) -> float | None: ...
    @property
    def direction(self) -> str | None: ...


def derive_target(target: LabelRule, values: pd.Series, *,
                  where: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(label int8, derivable bool)``; rows with a missing target are not derivable.

    Method ``classes`` (a multi-class target) gives each row its value's position in the
    declared ``values`` and leaves a row of any other value underivable.

    ``target`` is the manifest's :class:`Target` or any rule with its fields (a deployed
    system's decision); ``where`` names the rule in errors (default ``target.column '<col>'``).
    """
    where = where or f"target.column {target.column!r}"
    if target.method == "binary":
        return _binary(values, where)
    derivable = values.notna().to_numpy(dtype=bool)
    if target.method in ("threshold", "quantile"):
        cut = target_cut(target, values, where=where)
        if cut is None:
            return np.zeros(len(values), np.int8), derivable
        nums = values.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            hit = nums > cut if target.direction == "above" else nums >= cut
        return (derivable & hit).astype(np.int8), derivable
    if target.method == "above_median":
        if not is_numeric_column(values):
            raise DataError(
                f"{where}: expected a numeric column for above_median, got {values.dtype}"
            )
        nums = values.to_numpy(dtype=float, na_value=np.nan)
        if not derivable.any():
            return np.zeros(len(values), np.int8), derivable
        median = float(np.median(nums[derivable]))
        return (derivable & (nums > median)).astype(np.int8), derivable
    targets: tuple[Scalar, ...] = target.values or ()
    if target.method == "classes":  # the class's position in the declared list; others: none
        code = np.zeros(len(values), dtype=np.int8)
        for i, value in enumerate(targets):
            code[_isin(values, (value,))] = i
        return code, derivable & _isin(values, targets)
    if target.method == "equals" and target.value is not None:
        targets = (target.value,)
    return _isin(values, targets).astype(np.int8), derivable


def target_cut(target: LabelRule, values: pd.Series, *, where: str | None = None) -> float | None:
    """Return the number a ``threshold``/``quantile`` rule cuts at (None: other methods).

    For ``quantile`` it is the quantile of the non-missing ``values`` (None when there are none).
    """
    if target.method not in ("threshold", "quantile"):
        return None
    if not is_numeric_column(values):
        raise DataError(
            f"{where or f'target.column {target.column!r}'}: expected a numeric column for "
            f"method {target.method}, got {values.dtype}"
        )
    if target.method == "threshold":
        return float(target.threshold)  # type: ignore[arg-type]
    nums = values.to_numpy(dtype=float, na_value=np.nan)
    present = nums[~np.isnan(nums)]
    quantile = float(target.quantile or 0.0)
    return float(np.quantile(present, quantile)) if present.size else None


def _numbers(attribute: ProtectedAttribute, values: pd.Series) -> np.ndarray:
    if is_numeric_column(values):
        return values.to_numpy(dtype=float, na_value=np.nan)
    text = values.astype(object)
    if attribute.type == "age_interval_threshold":
        lower = text.map(lambda v: m.group(1) if (m := _LOWER_BOUND.match(as_text(v))) else v)
        text = lower.where(values.notna())
    return pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def disadvantaged_mask(
    attribute: ProtectedAttribute, values: pd.Series
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(disadvantaged, classified)`` bool masks of ``values`` for ``attribute``."""
    if attribute.type == "categorical":
        present = values.notna().to_numpy(dtype=bool)
        dis_values, adv_values = attribute.disadvantaged_values, attribute.advantaged_values
        dis = _isin(values, dis_values) if dis_values else None
        adv = _isin(values, adv_values) if adv_values else None
        if dis is not None and adv is not None:
            return dis, dis | adv
        if dis is not None:
            return dis, present
        assert adv is not None
        return present & ~adv, present
    nums = _numbers(attribute, values)
    classified = ~np.isnan(nums)
    threshold = float(attribute.threshold or 0.0)
    with np.errstate(invalid="ignore"):
        side = nums < threshold if attribute.disadvantaged == "below" else nums >= threshold
    return classified & side, classified


def _text_values(values: pd.Series) -> pd.Series:
    """Count per distinct present value of ``values`` that does not read as a number.

    Empty on a numeric or boolean dtype.  Only the distinct values are parsed (a column of
    70,000 rows and 30 categories costs 30 parses).
    """
    if is_numeric_dtype(values):
        return pd.Series([], dtype=np.int64)
    counts = values.value_counts(dropna=True, sort=False)
    numbers = pd.to_numeric(pd.Series(counts.index, dtype=object), errors="coerce")
    return counts[numbers.isna().to_numpy()]


def _first_row(values: pd.Series, among: pd.Series) -> int:
    """Position of the first value of ``values`` that is in ``among``'s index."""
    return int(np.flatnonzero(values.isin(among.index).to_numpy())[0])


def check_declared_numbers(manifest: Manifest, frame: pd.DataFrame, *, rows: RowNames,
                           file: object) -> None:
    """Raise :class:`DataError` at the first text value of a column the manifest declares numeric.

    ``rows[i]`` names frame row ``i`` in ``file`` (``line 17``); ``frame`` holds the rows the
    row filters keep (a filter may drop the rows of a marker such as ``"?"``).
    """
    declared: dict[str, str] = {}
    if manifest.target.method in ("threshold", "quantile", "above_median"):
        declared[manifest.target.column] = "target.column"
    for i, attribute in enumerate(manifest.protected_attributes):
        if attribute.type == "numeric_threshold":
            declared.setdefault(attribute.column, f"protected_attributes[{i}].column")
    for column, where in declared.items():
        text = _text_values(frame[column])
        if len(text):
            first = _first_row(frame[column], text)
            raise DataError(f"{file}: {rows[first]}: column {column!r} ({where}): expected a "
                            f"number, got {describe(frame[column].iloc[first])}")


def check_features(frame: pd.DataFrame, sources: dict[str, str], *, rows: RowNames,
                   file: object) -> tuple[str, ...]:
    """Raise at an infinite number in a feature; return warnings for mostly-numeric text ones.

    ``sources`` maps each feature column of ``frame`` to the manifest key naming it.
    """
    warnings: list[str] = []
    for column, where in sources.items():
        values = frame[column]
        at = f"{file}: {{}}: column {column!r} ({where})"
        if is_numeric_column(values):
            nums = values.to_numpy(dtype=float, na_value=np.nan)
            infinite = np.flatnonzero(np.isinf(nums))
            if infinite.size:
                raise DataError(f"{at.format(rows[infinite[0]])}: expected a finite number, got "
                                f"{describe(float(nums[infinite[0]]))}")
            continue
        if is_bool_dtype(values):
            continue
        text = _text_values(values)
        n_text, n_present = int(text.sum()), int(values.notna().sum())
        # mostly numbers and a few distinct texts: the signature of an undeclared missing marker
        # ("?", "n/a yet"); a code column such as ICD-9's "250.83"/"V57"/"E909" has many
        if 0 < len(text) <= _FEW_TEXTS and n_present - n_text > n_text:
            first = _first_row(values, text)
            warnings.append(
                f"{at.format(rows[first])}: encoded as categories because {n_text} of its "
                f"{n_present} values are not numbers, first {describe(values.iloc[first])}; if "
                "it is numeric, declare such markers missing (dataset.read.missing) or filter "
                "those rows")
    return tuple(warnings)


class Declaring(Protocol):
    """What :func:`check_look_alikes` reads of a manifest (a grid or a regression audit's)."""

    @property
    def row_filters(self) -> tuple[RowFilter, ...]: ...
    @property
    def protected_attributes(self) -> tuple[ProtectedAttribute, ...]: ...


def _declared_texts(manifest: Declaring, label: LabelRule | None
                    ) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each column a manifest compares with declared values: its key and the values' texts."""
    out: dict[str, tuple[str, list[str]]] = {}

    def add(column: str, where: str, values: Sequence[Scalar] | None) -> None:
        texts = [as_text(v) for v in values or () if isinstance(v, str)]
        if texts:
            out.setdefault(column, (where, []))[1].extend(texts)

    for i, f in enumerate(manifest.row_filters):
        if f.operator in ("isin", "not_isin", "equals", "not_equals"):
            add(f.column, f"row_filters[{i}]", f.value if isinstance(f.value, tuple)
                else (f.value,))  # type: ignore[arg-type]
    if label is not None:
        add(label.column, "target", label.values or ((label.value,) if label.value is not None
                                                     else ()))
    for i, a in enumerate(manifest.protected_attributes):
        add(a.column, f"protected_attributes[{i}]",
            (*(a.disadvantaged_values or ()), *(a.advantaged_values or ())))
    return {column: (where, tuple(texts)) for column, (where, texts) in out.items()}


def check_look_alikes(manifest: Declaring, frame: pd.DataFrame, *, rows: RowNames,
                      file: object, label: LabelRule | None = None) -> None:
    """Raise :class:`DataError` at the first value of a column the manifest compares with
    declared text that only looks like a declared value (:func:`faircode.core.text.look_alike`:
    a Cyrillic ``М`` for ``M``, a hidden zero-width space): it would match nothing and be
    counted in no group, or in the wrong one.  Only each column's distinct values are read.
    ``label`` is the rule deriving a binary target (its declared values checked too); a
    regression audit's number has none."""
    for column, (where, declared) in _declared_texts(manifest, label).items():
        values = frame[column]
        if is_numeric_dtype(values) or is_bool_dtype(values):
            continue
        for value in pd.unique(values.dropna()):
            text = as_text(value)
            like = look_alike(text, declared)
            if like is None:
                continue
            first = int(np.flatnonzero((values == value).to_numpy(dtype=bool))[0])
            raise DataError(f"{file}: {rows[first]}: column {column!r} ({where}): expected "
                            f"{like!r} exactly or a value unlike it, got {text!r}, which only "
                            f"looks like it ({differing(text, like)})")
