"""Loading a regression audit's rows: the number per row, its groups, features, units and split.

The steps of :func:`faircode.audit.data.load_audit`, with a continuous target: read the named
columns only → the row filters in order → the target's number (rows without one are dropped;
text is an error) → every protected attribute's disadvantaged mask (rows no attribute classifies
are dropped) → the uniform feature encoding → the train/test split.  The column-level rules
(filters, masks, ``first_by``, encoding, malformed features, declared text matched only as the
same text: a look-alike is an error) are the tabular audit's, so a manifest key means the same in
both kinds.

Design decisions
----------------
* **The outcome is analysed as declared**: ``transform: log`` takes the natural log of every
  value, and a value that is not positive is an error naming the file, the row and the value (a
  log gap of a zero wage is undefined, and dropping it silently would move the gap).
  :attr:`RegressionData.raw_y` keeps the column's own numbers, so the groups' means on the
  original scale (the published dollars) are reported beside the log gap.
* **The split keeps the groups' shares**: without a unit, a row split stratified on the first
  attribute's group (a continuous target cannot stratify); with one, the unit split of
  :func:`faircode.audit.data.grouped_split` on the same key.  The observed outcome is audited
  on every row; a model on the test rows.
* **The margin is resolved once**, on the audit's rows (:meth:`~faircode.audit.
  regression_manifest.Margin.resolve`: a share of the analysed outcome's standard deviation, or
  the declared units), so every row set of the audit is judged against the same number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from faircode.audit._data_columns import (
    as_text,
    check_features,
    check_look_alikes,
    disadvantaged_mask,
    filter_mask,
    first_per_unit,
)
from faircode.audit._data_read import column_sources, read_raw
from faircode.audit.data import (
    Encoder,
    _classifies_none,
    _unit_codes,
    grouped_split,
)
from faircode.audit.fetch import check_companions, sha256_file, unavailable_message
from faircode.audit.regression_manifest import RegressionManifest
from faircode.audit.strata import stratum_codes
from faircode.core.errors import ChecksumError, DataError, DataUnavailableError

__all__ = ["POSITION", "RegressionData", "load_regression_audit", "split_regression"]


@dataclass(frozen=True)
class RegressionData:
    """A prepared regression audit: rows, encoded features, outcome, groups, units, split."""

    manifest: RegressionManifest
    raw: pd.DataFrame
    X: pd.DataFrame
    y: np.ndarray
    """The analysed outcome per row (its log with ``transform: log``)."""
    raw_y: np.ndarray
    """The target column's own number per row (before any transform)."""
    disadvantaged: Mapping[str, np.ndarray]
    train_index: np.ndarray
    test_index: np.ndarray
    encoder: Encoder
    steps: tuple[tuple[str, int], ...]
    sha256: str
    margin: float
    """The verdicts' margin in the analysed outcome's units (resolved on these rows)."""
    unit: np.ndarray | None = None
    strata: Mapping[str, np.ndarray] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    keys: np.ndarray | None = None
    """The join key of every row as text (``load_regression_audit(key=...)``: a raw column's
    values, or with ``key="position"`` the row's 0-based position among the file's data rows),
    or None."""


def split_regression(*, key: np.ndarray,
                     unit: np.ndarray | None, test_size: float, random_state: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) positions, stratified on the 0/1 ``key`` (the first attribute's
    group): a row split, or with ``unit`` codes the unit split."""
    if unit is None:
        from sklearn.model_selection import train_test_split

        train, test = train_test_split(np.arange(key.size), test_size=test_size,
                                       random_state=random_state, stratify=key)
    else:
        train, test = grouped_split(unit, [key], test_size=test_size, random_state=random_state)
    return np.sort(train), np.sort(test)


def _outcome(manifest: RegressionManifest, values: pd.Series, rows: np.ndarray, *,
             file: Path) -> tuple[np.ndarray, np.ndarray]:
    """The target's numbers and which rows have one; text or (on a log scale) a number that is
    not positive is one :class:`DataError` line naming the row."""
    where = f"{manifest.file}: target.column {manifest.target.column!r} of {file.name}"
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    text = np.isnan(numbers) & values.notna().to_numpy()
    if text.any():
        i = int(np.flatnonzero(text)[0])
        raise DataError(f"{where}: {rows[i]}: expected a number, got {values.iloc[i]!r}")
    present = np.isfinite(numbers)
    if manifest.target.log_scale and (numbers[present] <= 0).any():
        i = int(np.flatnonzero(present & (numbers <= 0))[0])
        raise DataError(f"{where}: {rows[i]}: expected a positive number (transform: log), "
                        f"got {numbers[i]:g}")
    return numbers, present


POSITION = "position"
"""``load_regression_audit(key=POSITION)``: rows are keyed by their position in the file."""


def load_regression_audit(manifest: RegressionManifest, *, path: Path | None = None,
                          key: str | None = None) -> RegressionData:
    """Load, filter, measure, classify, encode and split the audit's raw file (module
    docstring); with ``key`` (a raw column, or :data:`POSITION`) each row's join key too."""
    file = path if path is not None else manifest.dataset.path
    if not file.exists():
        raise DataUnavailableError(unavailable_message(manifest, missing=file))
    digest = sha256_file(file)
    expected = manifest.dataset.sha256
    if expected is not None and digest != expected:
        raise ChecksumError(f"{file}: sha256: expected {expected}, got {digest}")
    check_companions(manifest, file.parent)
    column = key if key not in (None, POSITION) else None
    frame, lines = read_raw(manifest, file, extra={column: "key"} if column else None)
    every_key = (frame[column].map(as_text).to_numpy(dtype=object) if column is not None
                 else np.arange(len(frame)).astype(str).astype(object))
    rows = np.asarray(lines, dtype=object)
    steps: list[tuple[str, int]] = [("loaded", len(frame))]
    check_look_alikes(manifest, frame, rows=rows, file=file)  # a Cyrillic М for a declared M
    keep = np.ones(len(frame), dtype=bool)
    for i, row_filter in enumerate(manifest.row_filters, start=1):
        if row_filter.operator == "first_by":
            keep &= first_per_unit(frame[row_filter.column], frame[str(row_filter.value)], keep)
        else:
            keep &= filter_mask(row_filter, frame[row_filter.column])
        steps.append((f"filter {i}: {row_filter.describe()}", int(keep.sum())))
    frame, rows, every_key = frame[keep].reset_index(drop=True), rows[keep], every_key[keep]
    numbers, present = _outcome(manifest, frame[manifest.target.column], rows, file=file)
    steps.append(("target a number", int(present.sum())))
    frame, rows, numbers = frame[present].reset_index(drop=True), rows[present], numbers[present]
    every_key = every_key[present]
    masks: dict[str, np.ndarray] = {}
    classified = np.ones(len(frame), dtype=bool)
    for i, attribute in enumerate(manifest.protected_attributes):
        masks[attribute.name], ok = disadvantaged_mask(attribute, frame[attribute.column])
        if len(frame) and not ok.any():
            raise _classifies_none(manifest, i, frame[attribute.column], file=file)
        classified &= ok
    steps.append(("classified by every attribute", int(classified.sum())))
    frame, rows = frame[classified].reset_index(drop=True), rows[classified]
    raw_y, every_key = numbers[classified], every_key[classified]
    masks = {name: mask[classified] for name, mask in masks.items()}
    _check_rows(manifest, raw_y, masks)
    unit = _unit_codes(manifest, frame)
    sources = column_sources(manifest)
    warnings = check_features(frame, {c: sources[c] for c in manifest.feature_columns},
                              rows=rows, file=file)
    frame = frame.loc[:, list(manifest.read_columns)]
    encoder = Encoder.fit(frame.loc[:, list(manifest.feature_columns)])
    y = np.log(raw_y) if manifest.target.log_scale else raw_y.copy()
    first = masks[manifest.protected_attributes[0].name].astype(np.int8)
    try:
        train, test = split_regression(key=first, unit=unit, test_size=manifest.test_size,
                                       random_state=manifest.random_state)
    except ValueError as exc:
        raise DataError(f"{manifest.file}: test_size: cannot split {len(y)} rows: {exc}") from None
    sd = float(np.std(y, ddof=1)) if y.size > 1 else 0.0
    return RegressionData(
        manifest=manifest, raw=frame, X=encoder.transform(frame), y=y, raw_y=raw_y,
        disadvantaged=masks, train_index=train, test_index=test, encoder=encoder,
        steps=tuple(steps), sha256=digest, margin=manifest.target.margin.resolve(sd),
        unit=unit, strata={s.name: stratum_codes(frame, s.columns) for s in manifest.strata},
        warnings=warnings, keys=every_key if key is not None else None)


def _check_rows(manifest: RegressionManifest, y: np.ndarray,
                masks: Mapping[str, np.ndarray]) -> None:
    """A :class:`DataError` for no rows, a constant outcome or an empty group."""
    if y.size == 0:
        raise DataError(f"{manifest.file}: target.column {manifest.target.column!r}: expected "
                        "rows with a number to remain, got 0 rows")
    if np.unique(y).size < 2:
        raise DataError(f"{manifest.file}: target.column {manifest.target.column!r}: expected "
                        f"values that vary, got {y[0]:g} on every one of {y.size} rows")
    for i, attribute in enumerate(manifest.protected_attributes):
        dis = masks[attribute.name]
        for group, size in (("disadvantaged", int(dis.sum())), ("advantaged", int((~dis).sum()))):
            if size == 0:
                raise DataError(f"{manifest.file}: protected_attributes[{i}] ({attribute.name}): "
                                f"expected a non-empty {group} group after filtering, got 0 rows")
