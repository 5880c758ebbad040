"""Decisions and scores that nobody here trained: a deployed system's outputs, and their checks.

An audit may declare the system it audits (manifest ``system:``): its 0/1 decision is a rule on
one column of the raw file, its optional score another column.  :func:`system_outputs` turns the
kept rows' values into a :class:`SystemOutputs` record (``load_audit`` stores it beside ``y``).
The value checks :func:`check_decisions` and :func:`check_scores` are shared with the reader of a
practitioner's own predictions file (:mod:`faircode.audit.predictions_file`), and
:func:`key_text` is the one canonical form in which an audit's rows and a file's rows are joined.
:func:`array_decisions` and :func:`array_scores` apply the same checks to arrays (a notebook's
``y_pred``), naming the position of a bad value.

Design decisions
----------------
* **Coding: the target's.**  Decision 1 is the decision that calls for label 1 (COMPAS: flagged
  Medium/High = predicted re-arrest), and a score is higher where label 1 is more likely,
  whichever label is favourable -- the coding of :mod:`faircode.stats.groups` and
  :mod:`faircode.stats.calibration`; the evaluate step orients it like any grid cell.
* **Every kept row has an output.**  A missing decision or score on a row the audit keeps is an
  error naming its line (add a ``notna`` row filter to audit only the rows the system scored);
  dropping the row silently would change the audit's rows, and with them the grid's split.
* **A rule matching no row is an error; one matching every row is a warning.**  No row matching
  is the signature of a value that does not occur as written (``medium`` for ``Medium``, ``1``
  on a column of ``yes``/``no``) and every statistic of the system would be degenerate; the
  error lists the column's most frequent values.  Every row matching needs every value listed
  (or a threshold below every score): deliberate, and a tool that flags everyone is a finding in
  itself (its false positive rate is 1 in every group), so ``validate`` warns and the evaluate
  step's degenerate-decision rule marks it.  A listed ``isin`` value that no kept row has is a
  warning (a likely typo that still leaves other values matching).
* **Scores are declared** ``ordinal`` (integer levels, one calibration bin each; a non-integer is
  an error) or ``probability`` (in ``[0, 1]``); text, booleans and non-finite numbers are errors
  naming the line, the column and the value.
* **Keys are compared as text** (:func:`key_text`): integral numbers as integers (``7``, also
  when pandas read ``7.0`` because of a missing value elsewhere), everything else as its text,
  so an ``int64`` id column of the audit joins a file whose ids parquet stored as strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from pandas.api.types import is_bool_dtype, is_numeric_dtype

from faircode.audit._data_columns import as_text, binary_values, derive_target, is_numeric_column
from faircode.audit.manifest import SCORE_SCALES, Manifest, ScoreScale, SystemDecision
from faircode.core.errors import DataError, describe

__all__ = [
    "RowKeys",
    "SystemOutputs",
    "array_decisions",
    "array_scores",
    "check_classes",
    "check_decisions",
    "check_keys",
    "check_ranks",
    "check_scores",
    "key_text",
    "python_value",
    "system_outputs",
]

RowNames = Sequence[str] | np.ndarray
"""Where each row is in its file (``line 17``), one entry per row."""
_SHOWN_VALUES = 5


@dataclass(frozen=True, slots=True)
class SystemOutputs:
    """A deployed system's decision (int8 0/1) and score (float64 or None) per kept row."""

    name: str
    title: str
    decision: np.ndarray
    score: np.ndarray | None = None
    scale: ScoreScale | None = None
    rule: str = ""
    """The decision rule as text (``score_text isin ['Medium', 'High']``), for printing."""
    outcome: bool = False
    """Whether the decision is the recorded outcome (people's decisions: no ground truth)."""

    def __post_init__(self) -> None:
        d = self.decision
        if d.ndim != 1 or d.dtype != np.int8 or not np.isin(d, (0, 1)).all():
            raise ValueError(f"SystemOutputs {self.name!r}: decision: expected a 1-D int8 0/1 "
                             f"array, got dtype {d.dtype}")
        if (self.score is None) != (self.scale is None):
            raise ValueError(f"SystemOutputs {self.name!r}: expected a scale exactly with a score")
        if self.scale is not None and self.scale not in SCORE_SCALES:
            raise ValueError(f"SystemOutputs {self.name!r}: scale: expected one of "
                             f"{', '.join(SCORE_SCALES)}, got {describe(self.scale)}")
        if self.score is not None and (self.score.shape != d.shape
                                       or self.score.dtype != np.float64):
            raise ValueError(f"SystemOutputs {self.name!r}: score: expected float64 of the "
                             f"decision's {d.size} rows, got {self.score.dtype} {self.score.shape}")

    def take(self, positions: np.ndarray) -> SystemOutputs:
        """The outputs of the rows at ``positions`` (e.g. the test rows), in that order."""
        score = None if self.score is None else self.score[positions]
        return SystemOutputs(self.name, self.title, self.decision[positions], score, self.scale,
                             self.rule, self.outcome)


@dataclass(frozen=True, slots=True)
class RowKeys:
    """The join key of an audit: ``column``, its text per kept row, and the dropped rows' keys.

    ``kept[i]`` is the key of prepared row ``i`` (unique, never missing); ``dropped`` holds the
    keys of the file's rows the audit does not keep (filtered, target not derivable,
    unclassified) that are not also a kept row's key, so a file of predictions for every row of
    the raw file can be joined without being filtered first.
    """

    column: str
    kept: np.ndarray
    dropped: np.ndarray

    def __post_init__(self) -> None:
        if len(set(self.kept.tolist())) != self.kept.size:
            raise ValueError(f"RowKeys {self.column!r}: kept: expected unique keys")


def python_value(value: object) -> object:
    """A numpy scalar as the Python value it holds (errors show ``2 (int)``, not ``np.int64``)."""
    return value.item() if isinstance(value, np.generic) else value


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def key_text(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(text, present)``: each value's canonical key text and whether it is present.

    Integral numbers become integer text (``7.0`` -> ``"7"``), other numbers ``repr`` of the
    float, booleans ``True``/``False``, anything else its text.
    """
    present = values.notna().to_numpy(dtype=bool)
    if is_numeric_column(values):
        nums = values.to_numpy(dtype=np.float64, na_value=np.nan)
        integral = np.isfinite(nums) & (nums == np.round(nums)) & (np.abs(nums) < 2.0**53)
        text = np.where(integral, np.where(integral, nums, 0).astype(np.int64).astype(str),
                        nums.astype(str)).astype(object)
    else:
        text = values.astype(object).map(as_text).to_numpy(dtype=object)
    text[~present] = ""
    return text, present


def check_keys(values: pd.Series, *, at: str, rows: RowNames) -> np.ndarray:
    """Return the key texts of ``values``; raise at a missing or a repeated key.

    ``at`` is the error's opening with one ``{}`` for the row (``line 17``); a repeated key names
    its first two rows.
    """
    text, present = key_text(values)
    if not present.all():
        i = _first(~present)
        raise DataError(f"{at.format(rows[i])}: expected a key in every row, got a missing value")
    codes, uniques = pd.factorize(pd.Series(text, dtype=object), sort=False)
    counts = np.bincount(codes, minlength=len(uniques))
    if counts.max(initial=0) > 1:
        second = _first(pd.Series(codes).duplicated(keep="first").to_numpy())
        first = _first(codes == codes[second])
        raise DataError(f"{at.format(rows[second])}: expected each key once, got "
                        f"{describe(python_value(values.iloc[second]))} again (first at "
                        f"{rows[first]})")
    return text


def check_decisions(values: pd.Series, *, at: str, rows: RowNames) -> np.ndarray:
    """Return 0/1 decisions (int8) of ``values``; raise at a missing or non-binary value.

    Accepted: booleans, the numbers 0 and 1, and the texts of
    :func:`faircode.audit._data_columns.binary_values` (true/false, yes/no, 1/0).  ``at`` opens
    the error with one ``{}`` for the row.
    """
    decision, present, bad = binary_values(values)
    if not present.all():
        i = _first(~present)
        raise DataError(f"{at.format(rows[i])}: expected a decision in every row, got a "
                        "missing value")
    if bad.any():
        i = _first(bad)
        raise DataError(f"{at.format(rows[i])}: expected a 0/1 decision (0/1, true/false, "
                        f"yes/no), got {describe(python_value(values.iloc[i]))}")
    return decision


def check_scores(values: pd.Series, *, scale: ScoreScale, at: str,
                 rows: RowNames) -> np.ndarray:
    """Return the scores (float64) of ``values``; raise at a value ``scale`` does not allow.

    Every row needs a finite number: integer-valued for ``ordinal``, in ``[0, 1]`` for
    ``probability``.  ``at`` opens the error with one ``{}`` for the row.
    """
    if scale not in SCORE_SCALES:
        raise ValueError(f"scale: expected one of {', '.join(SCORE_SCALES)}, got {describe(scale)}")
    present = values.notna().to_numpy(dtype=bool)
    if is_bool_dtype(values):
        i = _first(present) if present.any() else 0
        raise DataError(f"{at.format(rows[i])}: expected a numeric score, got "
                        f"{describe(python_value(values.iloc[i]))}")
    if is_numeric_dtype(values):
        nums = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        nums = pd.to_numeric(values.astype(object), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan)
        text = present & np.isnan(nums)
        if text.any():
            i = _first(text)
            raise DataError(f"{at.format(rows[i])}: expected a numeric score, got "
                            f"{describe(python_value(values.iloc[i]))}")
    if not present.all():
        i = _first(~present)
        raise DataError(f"{at.format(rows[i])}: expected a score in every row, got a missing "
                        "value")
    if scale == "ordinal":
        bad, expected = ~np.isfinite(nums) | (nums != np.round(nums)), "an integer score (scale " \
            "ordinal)"
    else:
        bad, expected = ~((nums >= 0.0) & (nums <= 1.0)), "a score in [0, 1] (scale probability)"
    if bad.any():
        i = _first(bad)
        raise DataError(f"{at.format(rows[i])}: expected {expected}, got "
                        f"{describe(float(nums[i]))}")
    return nums


def check_classes(values: pd.Series, classes: Sequence[str], *, at: str,
                  rows: RowNames) -> np.ndarray:
    """Return the class codes (int8: each value's position in ``classes``, the manifest's
    ``target.values``) of ``values``; raise at a missing value or one of no class.  Values are
    compared as text (:func:`faircode.audit._data_columns.as_text`).  ``at`` opens the error
    with one ``{}`` for the row."""
    lookup = {as_text(c): i for i, c in enumerate(classes)}
    present = values.notna().to_numpy(dtype=bool)
    if not present.all():
        i = _first(~present)
        raise DataError(f"{at.format(rows[i])}: expected a class in every row, got a missing "
                        "value")
    codes = values.astype(object).map(lambda v: lookup.get(as_text(v), -1)).to_numpy(
        dtype=np.int64)
    if (codes < 0).any():
        i = _first(codes < 0)
        raise DataError(f"{at.format(rows[i])}: expected one of the classes "
                        f"{', '.join(lookup)}, got {describe(python_value(values.iloc[i]))}")
    return codes.astype(np.int8)


def check_ranks(values: pd.Series, *, at: str, rows: RowNames) -> np.ndarray:
    """Return the ranks (float64; 1 = the top, ties allowed) of ``values``; raise at a missing
    value, a boolean or anything that is no positive number.  ``at`` opens the error with one
    ``{}`` for the row."""
    nums = pd.to_numeric(values.astype(object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    bad = ~(np.isfinite(nums) & (nums > 0))
    if is_bool_dtype(values):
        bad[:] = True
    if bad.any():
        i = _first(bad)
        raise DataError(f"{at.format(rows[i])}: expected a rank (a positive number, 1 = the "
                        f"top), got {describe(python_value(values.iloc[i]))}")
    return nums


class _Positions(Sequence[str]):
    """``[i]`` for each position of an array of ``n`` values (made only for the row shown)."""

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return f"[{int(i)}]"


def _series(values: ArrayLike, name: str) -> pd.Series:
    array = np.asarray(values)
    if array.ndim != 1:
        raise DataError(f"{name}: expected a 1-D array, got ndim={array.ndim}")
    return pd.Series(array)


def array_decisions(values: ArrayLike, *, name: str = "decisions") -> np.ndarray:
    """:func:`check_decisions` for an array (notebook use): ``decisions[3]: expected ...``."""
    series = _series(values, name)
    return check_decisions(series, at=f"{name}{{}}", rows=_Positions(len(series)))


def array_scores(values: ArrayLike, *, scale: ScoreScale, name: str = "scores") -> np.ndarray:
    """:func:`check_scores` for an array (notebook use): ``scores[3]: expected ...``."""
    series = _series(values, name)
    return check_scores(series, scale=scale, at=f"{name}{{}}", rows=_Positions(len(series)))


def _common_values(values: pd.Series) -> str:
    counts = values.astype(object).map(as_text).value_counts()
    shown = ", ".join(repr(v) for v in counts.index[:_SHOWN_VALUES])
    more = f" and {len(counts) - _SHOWN_VALUES} more" if len(counts) > _SHOWN_VALUES else ""
    return f"{shown}{more}"


def system_outputs(manifest: Manifest, frame: pd.DataFrame, *, rows: RowNames, file: object,
                   label: np.ndarray) -> tuple[SystemOutputs, tuple[str, ...]]:
    """The manifest's system on the kept rows ``frame``: its outputs and the warnings to print.

    ``rows[i]`` names frame row ``i`` in ``file``; ``label`` is the kept rows' 0/1 target,
    which *is* the decision of a system declared ``decision: outcome``.  Raises
    :class:`DataError` for a missing or malformed value (module docstring) and for a decision
    rule matching no kept row.
    """
    system = manifest.system
    if system is None:
        raise ValueError(f"{manifest.file}: no system block")
    if system.outcome:  # people's decisions: the recorded outcome, no separate ground truth
        return SystemOutputs(system.name, system.title, np.asarray(label, dtype=np.int8),
                             rule=f"the recorded outcome ({_target_text(manifest)})",
                             outcome=True), ()
    rule, values = system.decision, frame[system.decision.column]
    at = f"{file}: {{}}: column {rule.column!r} (system.decision.column)"
    present = values.notna().to_numpy(dtype=bool)
    if not present.all():
        raise DataError(f"{at.format(rows[_first(~present)])}: expected a decision value in "
                        "every row of the audit, got a missing value (a notna row filter "
                        "leaves such rows out)")
    if rule.method == "threshold" and not is_numeric_column(values):
        _refuse_text(values, at=at, rows=rows)
    decision, _ = derive_target(rule, values, where=f"{manifest.file}: system.decision")
    flagged, n = int(decision.sum()), int(decision.size)
    if flagged == 0:
        raise DataError(f"{manifest.file}: system.decision: expected a rule matching some of "
                        f"the audit's {n:,} rows, got none for {rule.describe()} (the column's "
                        f"values: {_common_values(values)})")
    warnings = []
    if flagged == n:
        warnings.append(f"{manifest.file}: system.decision: {rule.describe()} matches every one "
                        f"of the audit's {n:,} rows: the system decides 1 for everyone")
    for i, value in enumerate(rule.values or ()):
        if rule.method == "isin" and not derive_target(
                SystemDecision(rule.column, "isin", values=(value,)), values)[0].any():
            warnings.append(f"{manifest.file}: system.decision.isin[{i}]: {describe(value)} "
                            "matches no row of the audit")
    score = scale = None
    if system.score is not None:
        scale = system.score.scale
        score = check_scores(frame[system.score.column], scale=scale, rows=rows,
                             at=f"{file}: {{}}: column {system.score.column!r} "
                                "(system.score.column)")
    outputs = SystemOutputs(system.name, system.title, decision.astype(np.int8), score, scale,
                            rule.describe())
    return outputs, tuple(warnings)


def _target_text(manifest: Manifest) -> str:
    """The target's rule as text: ``call equals 'yes'``."""
    t = manifest.target
    shown = {"equals": repr(t.value), "isin": repr(list(t.values or ())), "binary": "(0/1)"}
    return f"{t.column} {t.method} {shown.get(t.method, '')}".rstrip()


def _refuse_text(values: pd.Series, *, at: str, rows: RowNames) -> None:
    """Raise at the first text of a threshold rule's column (a column that is not numeric)."""
    nums = pd.to_numeric(values.astype(object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    text = values.notna().to_numpy(dtype=bool) & np.isnan(nums)
    if not text.any():
        raise DataError(f"{at.format(rows[0])}: expected a numeric column for a threshold "
                        f"rule, got dtype {values.dtype}")
    i = _first(text)
    raise DataError(f"{at.format(rows[i])}: expected a number for a threshold rule, got "
                    f"{describe(python_value(values.iloc[i]))}")
