"""Loading an audit's raw file into a prepared, encoded, split table — exactly as its manifest says.

Pipeline (one function, :func:`load_audit`): read the named columns only → apply the row filters in
order → derive the binary target (rows whose target cannot be derived are dropped) → build every
protected attribute's disadvantaged mask (rows any attribute cannot classify are dropped) → encode
every named column uniformly → stratified train/test split on the label.

Design decisions
----------------
* **Personal data never enters memory.**  The CSV is read once with ``usecols`` = the manifest's
  read columns; COMPAS names and dates of birth are never parsed, so they cannot reach a prepared
  table, a result, a log or a report.
* **Missing values are pandas' standard NA markers** (``""``, ``NA``, ``N/A``, ``NULL``, ``None``,
  ``nan``, ...).  Sentinel strings that are not among them — ``"?"`` in Adult and the diabetes
  data — are ordinary observed values; a manifest that wants them gone says so with a filter
  (``race not_isin ["?"]``) or declares them missing (``dataset.read.missing: ["?"]``).  Under
  pandas 3 text columns arrive as the ``str`` dtype whose missing value is ``NaN``; every
  comparison below is made NA-aware explicitly (NA never equals anything, so ``isin``/``equals``
  drop NA rows and ``not_isin``/``not_equals`` keep them).
* **Values are compared by type family.**  On a numeric column a manifest value is compared as a
  float (``1`` matches ``1.0``); on any other column both sides are compared as text, booleans as
  ``True``/``False``.
* **The file is parsed as ``dataset.read`` says** (separator, header row, encoding, column names,
  extra missing markers such as ``"?"``); a file without a header must have exactly as many fields
  as the manifest lists names — pandas would otherwise silently turn extra fields into an index.
* **Every row has the header's width.**  Reading only the named columns (``usecols``) switches off
  pandas' field-count check: a row with one extra field (an unquoted separator in a text value)
  would be read shifted, labels and numbers landing in the wrong columns.  So the file is first
  scanned with :mod:`csv` (same quoting rules), keeping only each row's field count and starting
  line: a row of another width (more or fewer fields) is a :class:`DataError` naming the file and
  line, and those lines name the rows of every later data error.  The scan holds one row at a
  time, so unnamed columns still never reach a frame.  A file with a header and no row is "no
  data rows", not a filter problem.
* **A column name the header repeats** is ambiguous: pandas would rename the second copy
  (``age.1``) and the first would be audited silently.  A read column whose copies differ on any
  row is a :class:`DataError` naming the line and both values; copies that agree on every row
  (ProPublica's two-year file repeats ``priors_count`` and ``decile_score`` verbatim) are read
  once.
* **An attribute that classifies no row** is named as such: a protected column that is missing
  on every row kept so far (or whose values are none of the declared groups) is an error naming
  that attribute and its column, never blamed on the row filters.
* **Malformed values** (:mod:`faircode.audit._data_columns`): text in a column declared numeric and
  an infinite number in a feature are errors naming file, line, column and value; a feature of
  mostly numbers and a few distinct texts (an undeclared marker) is encoded as categories with a
  warning (:attr:`AuditData.warnings`, printed by ``faircode validate``).
* **Numeric-cut targets**: ``threshold`` compares with the stated number; ``quantile`` first
  computes that quantile (numpy's default linear interpolation) of the filtered, derivable rows,
  then cuts there.  ``above`` is ``>``, ``at_least`` is ``>=``.  The cut is kept in
  :attr:`AuditData.target_cut` so ``validate`` can print it; with ties at the cut the label rate
  of a ``quantile`` target is not exactly ``1 - quantile``, which is why validate shows both.
* **Thresholds split at the threshold**: ``below`` means ``x < threshold``, ``above`` means
  ``x >= threshold`` (so ``[70-80)`` is ``above`` 70).  ``above_median`` is strictly greater than
  the median of the filtered, derivable rows.
* **Uniform encoding** (:class:`Encoder`): numeric columns stay numeric with the median filling
  missing values; every other column becomes integer codes in sorted order of its observed text
  values, with missing values as their own explicit category (code ``len(categories)``) and values
  never seen at fit time (e.g. a counterfactual edit) mapped to :data:`UNSEEN_CODE` (``-1``).
  The encoder is fitted on the prepared rows' *feature* columns only (protected, core, proxy):
  ``AuditData.X`` never holds the target's source column (nor a filter-only column), so no
  strategy can train on the label by mistake; the manifest already refuses the target as a
  feature.  Each column is encoded on its own, so leaving the others out changes no code.
* **Units** (``dataset.unit``): the unit column is read and carried per row as integer codes
  (:attr:`AuditData.unit`, in order of first appearance), never encoded into ``X``.  A missing
  unit value is an error, not a dropped row.  The ``first_by`` filter keeps, among the rows still
  kept, each unit's row with the smallest order value (missing order values last; ties by file
  order).  With a unit the train/test split is by unit (:func:`grouped_split`); without one it is
  exactly the row split it always was.
* **A deployed system** (manifest ``system:``): its decision and score columns are read
  (:attr:`Manifest.read_columns`) and turned into :attr:`AuditData.system` on the kept rows
  (:mod:`faircode.audit.outputs`: int8 decision, float64 score), never encoded into ``X``: the
  encoder sees the feature columns only, and the manifest refuses a system column that is a
  feature.  The system never decides which rows are kept: a kept row without an output is an
  error, so the rows, the split and every grid number are those of the audit without the block.
* **A join key** (``load_audit(key=...)``, for a predictions file): the named column is read too,
  checked (present and unique on the kept rows) and kept as text (:class:`RowKeys`) beside the
  keys of the rows the audit drops; it is not kept in :attr:`AuditData.raw`.

The column-level rules (filters, targets, disadvantaged masks, ``first_by``) live in
:mod:`faircode.audit._data_columns` (this module re-exports them), reading the file in
:mod:`faircode.audit._data_read`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from faircode.audit._data_columns import (
    as_text,
    check_declared_numbers,
    check_features,
    check_look_alikes,
    derive_target,
    disadvantaged_mask,
    filter_mask,
    first_per_unit,
    is_numeric_column,
    target_cut,
)
from faircode.audit._data_read import TableManifest, column_sources, read_raw
from faircode.audit.fetch import check_companions, sha256_file, unavailable_message
from faircode.audit.manifest import Manifest
from faircode.audit.outputs import RowKeys, SystemOutputs, check_keys, key_text, system_outputs
from faircode.audit.strata import conditioning
from faircode.core.errors import ChecksumError, DataError, DataUnavailableError

__all__ = [
    "UNSEEN_CODE",
    "AuditData",
    "Encoder",
    "RowKeys",
    "SystemOutputs",
    "derive_target",
    "disadvantaged_mask",
    "filter_mask",
    "first_per_unit",
    "grouped_split",
    "load_audit",
    "split_rows",
    "target_cut",
]

UNSEEN_CODE = -1.0
"""Code given to a categorical value that was not seen when the :class:`Encoder` was fitted."""


def _unit_strata(units: np.ndarray, keys: Sequence[np.ndarray]) -> np.ndarray:
    """One stratum code per unit from its 0/1 ``keys``: per key all-0, all-1 or mixed.

    If some stratum then has fewer than two units, each key falls back to its majority value per
    unit (mean >= 0.5), which with singleton units is exactly the row's value.
    """
    n_units = int(units.max()) + 1 if units.size else 0
    sizes = np.bincount(units, minlength=n_units)
    means = [np.bincount(units, weights=k, minlength=n_units) / sizes for k in keys]
    fine = np.zeros(n_units, dtype=np.int64)
    coarse = np.zeros(n_units, dtype=np.int64)
    for mean in means:
        fine = fine * 3 + np.where(mean == 0, 0, np.where(mean == 1, 1, 2))
        coarse = coarse * 2 + (mean >= 0.5)
    _, fine_sizes = np.unique(fine, return_counts=True)
    return fine if fine_sizes.min(initial=2) >= 2 else coarse


def grouped_split(
    units: np.ndarray,
    keys: Sequence[np.ndarray],
    *,
    test_size: float,
    random_state: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Split row positions into (train, test) so that no unit is on both sides.

    ``units`` are integer unit codes ``0..U-1`` per row; units are split with sklearn's
    ``train_test_split`` at ``test_size`` (a fraction of units), stratified on each unit's
    pattern of the 0/1 ``keys`` (all 0, all 1, mixed; see :func:`_unit_strata`).  When every
    unit is one row and codes follow row order this is exactly the stratified row split.
    Raises ``ValueError`` (from sklearn) when the units cannot be split so.
    """
    from sklearn.model_selection import train_test_split  # here: evaluate loads, never splits

    units = np.asarray(units, dtype=np.int64)
    strata = _unit_strata(units, [np.asarray(k, dtype=np.float64) for k in keys])
    _, test_u = train_test_split(
        np.arange(strata.size), test_size=test_size, random_state=random_state, stratify=strata
    )
    in_test = np.zeros(strata.size, dtype=bool)
    in_test[test_u] = True
    rows = np.arange(units.size)
    return np.sort(rows[~in_test[units]]), np.sort(rows[in_test[units]])


def split_rows(
    y: np.ndarray, unit: np.ndarray | None, *, test_size: float, random_state: int
) -> tuple[np.ndarray, np.ndarray]:
    """The audit's train/test split of its prepared rows: sorted (train, test) positions.

    Without a unit a stratified row split on the label ``y``; with one (integer codes per row)
    the unit split of :func:`grouped_split`.  ``load_audit`` splits with the manifest's
    ``random_state``; a ``split``-mode training replicate with its own seed
    (:mod:`faircode.evaluate.stability`).  Raises ``ValueError`` (from sklearn) when it cannot
    split.
    """
    if unit is None:
        from sklearn.model_selection import train_test_split

        train, test = train_test_split(
            np.arange(len(y)), test_size=test_size, random_state=random_state, stratify=y
        )
    else:
        train, test = grouped_split(unit, [y], test_size=test_size, random_state=random_state)
    return np.sort(train), np.sort(test)


@dataclass(frozen=True)
class Encoder:
    """Uniform label-free encoding of every named column, fitted on the prepared rows."""

    columns: tuple[str, ...]
    kinds: Mapping[str, Literal["numeric", "categorical"]]
    medians: Mapping[str, float]
    categories: Mapping[str, tuple[str, ...]]

    @classmethod
    def fit(cls, raw: pd.DataFrame) -> Encoder:
        """Fit on ``raw`` (numeric columns keep values, others get sorted category codes)."""
        kinds: dict[str, Literal["numeric", "categorical"]] = {}
        medians: dict[str, float] = {}
        categories: dict[str, tuple[str, ...]] = {}
        for col in raw.columns:
            values = raw[col]
            if is_numeric_column(values):
                kinds[col] = "numeric"
                nums = values.to_numpy(dtype=float, na_value=np.nan)
                medians[col] = float(np.nanmedian(nums)) if (~np.isnan(nums)).any() else 0.0
            else:
                kinds[col] = "categorical"
                categories[col] = tuple(sorted({as_text(v) for v in values.dropna()}))
        return cls(tuple(raw.columns), kinds, medians, categories)

    def transform(self, raw: pd.DataFrame) -> pd.DataFrame:
        """Encode ``raw`` to float64 with the same columns and index; unseen values → -1."""
        out: dict[str, np.ndarray] = {}
        for col in self.columns:
            if col not in raw.columns:
                raise DataError(f"encoder: column {col!r}: expected in the frame, got none")
            values = raw[col]
            if self.kinds[col] == "numeric":
                nums = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                bad = np.isnan(nums) & values.notna().to_numpy()
                if bad.any():
                    got = values[bad].iloc[0]
                    raise DataError(f"encoder: column {col!r}: expected a number, got {got!r}")
                out[col] = np.where(np.isnan(nums), self.medians[col], nums)
            else:
                cats = self.categories[col]
                lookup = {c: float(i) for i, c in enumerate(cats)}
                codes = values.astype(object).map(
                    lambda v, lk=lookup: lk.get(as_text(v), UNSEEN_CODE)
                )
                codes = codes.where(values.notna(), float(len(cats)))
                out[col] = codes.to_numpy(dtype=float)
        return pd.DataFrame(out, index=raw.index, columns=list(self.columns), dtype=np.float64)


@dataclass(frozen=True)
class AuditData:
    """A prepared audit: raw named columns, encoded features, label, group masks and split."""

    manifest: Manifest
    raw: pd.DataFrame
    X: pd.DataFrame
    y: np.ndarray
    disadvantaged: Mapping[str, np.ndarray]
    train_index: np.ndarray
    test_index: np.ndarray
    encoder: Encoder
    steps: tuple[tuple[str, int], ...]
    sha256: str
    unit: np.ndarray | None = None
    """Integer unit code per row (``0..U-1``, order of first appearance); None without a unit."""
    target_cut: float | None = None
    warnings: tuple[str, ...] = ()
    """Data a user may mean but should see (a mostly-numeric feature read as categories)."""
    system: SystemOutputs | None = None
    """The deployed system's decision and score per row (manifest ``system:``), or None."""
    keys: RowKeys | None = None
    """The join key of every row (``load_audit(key=...)``), or None."""
    strata: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Per declared ``mantel_haenszel`` stratum (manifest ``strata:``), its code per row
    (:func:`faircode.audit.strata.stratum_codes`)."""
    stratum_levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per such stratum, the readable level of each code."""
    covariates: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    """Per declared ``logistic_regression`` stratum, its covariates' design (rows x terms)."""


def load_audit(manifest: Manifest, *, path: Path | None = None,
               key: str | None = None, by_position: bool = False) -> AuditData:
    """Load, filter, label, classify, encode and split the audit's raw file.

    ``key`` names a column of the raw file to join other files on (a predictions file): it is
    read beside the manifest's columns, never encoded, and returned as :attr:`AuditData.keys`.
    ``by_position`` keys the rows by their 0-based position among the file's data rows instead
    (``dataset.row_id: position``; :attr:`RowKeys.column` is then ``"position"``).
    """
    if by_position and key is not None:
        raise ValueError("load_audit: expected key or by_position, got both")
    file = path if path is not None else manifest.dataset.path
    if not file.exists():
        raise DataUnavailableError(unavailable_message(manifest, missing=file))
    digest = sha256_file(file)  # a regular file only: a FIFO or a device is one DataError line
    expected = manifest.dataset.sha256
    if expected is not None and digest != expected:
        raise ChecksumError(f"{file}: sha256: expected {expected}, got {digest}")
    check_companions(manifest, file.parent)  # a lazy-load database's index, beside it
    frame, lines = read_raw(manifest, file, extra={key: "key"} if key is not None else None)
    rows = np.asarray(lines, dtype=object)  # where each remaining row is in the file
    origin = np.arange(len(frame))  # each remaining row's position among the file's data rows
    every_key = (frame[key] if key is not None else
                 pd.Series(origin) if by_position else None)
    steps: list[tuple[str, int]] = [("loaded", len(frame))]
    check_look_alikes(manifest, frame, rows=rows, file=file, label=manifest.target)
    keep = np.ones(len(frame), dtype=bool)
    for i, row_filter in enumerate(manifest.row_filters, start=1):
        if row_filter.operator == "first_by":
            keep &= first_per_unit(frame[row_filter.column], frame[str(row_filter.value)], keep)
        else:
            keep &= filter_mask(row_filter, frame[row_filter.column])
        steps.append((f"filter {i}: {row_filter.describe()}", int(keep.sum())))
    frame, rows, origin = frame[keep].reset_index(drop=True), rows[keep], origin[keep]
    check_declared_numbers(manifest, frame, rows=rows, file=file)
    cut = target_cut(manifest.target, frame[manifest.target.column])
    label, derivable = derive_target(manifest.target, frame[manifest.target.column])
    steps.append(("target derivable", int(derivable.sum())))
    frame, label, rows = frame[derivable].reset_index(drop=True), label[derivable], rows[derivable]
    origin = origin[derivable]
    masks: dict[str, np.ndarray] = {}
    classified = np.ones(len(frame), dtype=bool)
    for i, attribute in enumerate(manifest.protected_attributes):
        masks[attribute.name], ok = disadvantaged_mask(attribute, frame[attribute.column])
        if len(frame) and not ok.any():  # name the attribute, not the filters
            raise _classifies_none(manifest, i, frame[attribute.column], file=file)
        classified &= ok
    steps.append(("classified by every attribute", int(classified.sum())))
    frame, rows, origin = frame[classified].reset_index(drop=True), rows[classified], \
        origin[classified]
    y = label[classified].astype(np.int8)
    masks = {name: mask[classified] for name, mask in masks.items()}
    _check_prepared(manifest, y, masks, steps=steps)
    unit = _unit_codes(manifest, frame)
    sources = column_sources(manifest)
    warnings = check_features(frame, {c: sources[c] for c in manifest.feature_columns},
                              rows=rows, file=file)
    system = None
    if manifest.system is not None:
        system, more = system_outputs(manifest, frame, rows=rows, file=file, label=y)
        warnings += more
    keys = None if every_key is None else _row_keys(
        key or "position", frame[key] if key is not None else pd.Series(origin), every_key,
        rows=rows, file=file)
    frame = frame.loc[:, list(manifest.read_columns)]
    encoder = Encoder.fit(frame.loc[:, list(manifest.feature_columns)])
    try:
        train, test = split_rows(y, unit, test_size=manifest.test_size,
                                 random_state=manifest.random_state)
    except ValueError as exc:
        raise DataError(f"{manifest.file}: test_size: cannot split {len(y)} rows: {exc}") from None
    given = conditioning(frame, manifest.strata)
    return AuditData(
        manifest=manifest, raw=frame, X=encoder.transform(frame), y=y, disadvantaged=masks,
        train_index=train, test_index=test, encoder=encoder, steps=tuple(steps), sha256=digest,
        unit=unit, target_cut=cut, warnings=warnings, system=system, keys=keys,
        strata=given.codes, stratum_levels=given.levels, covariates=given.covariates,
    )


def _row_keys(column: str, kept: pd.Series, every: pd.Series, *, rows: np.ndarray,
              file: Path) -> RowKeys:
    """The kept rows' keys (unique, present) and the other keys of the file."""
    text = check_keys(kept, at=f"{file}: {{}}: column {column!r} (key)", rows=rows)
    others, present = key_text(every)
    dropped = np.setdiff1d(others[present].astype(str), text.astype(str))
    return RowKeys(column, text, dropped.astype(object))


def _unit_codes(manifest: TableManifest, frame: pd.DataFrame) -> np.ndarray | None:
    """Integer codes of the prepared rows' units; a missing unit value is a :class:`DataError`."""
    if manifest.unit is None:
        return None
    values = frame[manifest.unit]
    missing = int(values.isna().sum())
    if missing:
        raise DataError(
            f"{manifest.file}: dataset.unit: expected a unit in every prepared row of column "
            f"{manifest.unit!r}, got {missing} missing (add a notna filter to drop them)"
        )
    codes, _ = pd.factorize(values, sort=False)
    return np.asarray(codes, dtype=np.int64)


def _classifies_none(manifest: TableManifest, index: int, values: pd.Series, *,
                     file: Path) -> DataError:
    """The error of protected attribute ``index`` classifying none of the rows kept so far."""
    attribute = manifest.protected_attributes[index]
    where = f"{manifest.file}: protected_attributes[{index}] ({attribute.name})"
    rows = f"the {len(values):,} rows kept so far"
    if values.isna().all():
        return DataError(f"{where}: column {attribute.column!r} of {file.name}: expected values "
                         f"to classify rows by, got a value missing in every one of {rows}")
    seen = ", ".join(repr(v) for v in values.dropna().astype(str).unique()[:5])
    return DataError(f"{where}: column {attribute.column!r} of {file.name}: expected values that "
                     f"classify rows as disadvantaged or advantaged, got none in {rows} "
                     f"(values seen: {seen})")


def _check_prepared(manifest: Manifest, y: np.ndarray, masks: Mapping[str, np.ndarray], *,
                    steps: Sequence[tuple[str, int]] = ()) -> None:
    """Raise :class:`DataError` for no rows (naming the step that left none), a one-class
    target or an empty group."""
    if len(y) == 0:
        step = next((i for i, (_, n) in enumerate(steps) if n == 0), None)
        filters = len(manifest.row_filters)
        where = ("row_filters" if step is None or step == 0 else
                 f"row_filters[{step - 1}]" if step <= filters else
                 "target" if step == filters + 1 else "protected_attributes")
        after = f" after {steps[step][0]}" if step is not None else ""
        raise DataError(f"{manifest.file}: {where}: expected rows to remain, got 0 rows{after}")
    classes = np.unique(y)
    if len(classes) < 2:
        raise DataError(
            f"{manifest.file}: target: expected two classes after filtering, "
            f"got only label {int(classes[0])} ({len(y)} rows)"
        )
    for i, attribute in enumerate(manifest.protected_attributes):
        dis = masks[attribute.name]
        for group, size in (("disadvantaged", int(dis.sum())), ("advantaged", int((~dis).sum()))):
            if size == 0:
                raise DataError(
                    f"{manifest.file}: protected_attributes[{i}] ({attribute.name}): expected a "
                    f"non-empty {group} group after filtering, got 0 rows"
                )
