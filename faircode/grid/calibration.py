"""S4's and S5's calibration split: the training rows' 70 % for the base model, 30 % for the
thresholds.

S4 calibrates its thresholds on rows the base model never saw.  Calibrating on the rows the
model was fitted on overfits: on German credit the post-processed parity gap is +0.22 instead of
+0.07.  The split is stratified on label x group and needs at least two rows in every
combination; with fewer the cell is :class:`Unfittable` (the grid keeps the audit's other cells
and marks this one uninformative, and ``faircode validate`` warns up front).  With a unit
(``groups``) the split is by unit: no unit has rows in both parts
(:func:`faircode.audit.data.grouped_split`).  S5 (:mod:`faircode.grid.relaxed`) uses the same
split with the same seed, so both post-process on the same rows.
"""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split

from faircode.audit.data import grouped_split
from faircode.core.errors import DataError

__all__ = ["CALIBRATION_FRACTION", "Unfittable", "calibration_problem", "calibration_split",
           "calibration_warning"]

CALIBRATION_FRACTION = 0.3


class Unfittable(DataError):
    """A cell cannot be fitted on these training rows (a group too small for a stratified
    split); the message names the attribute, the stratum and its size.  The grid keeps the other
    cells and marks this one uninformative (:func:`faircode.grid.fit.fit_cell`)."""


def calibration_warning(y: np.ndarray, sensitive: np.ndarray, *, attribute: str,
                        margin: int = 5) -> str:
    """``faircode validate``'s warning about S4 on these training rows ('' when none): its
    cells will not be fitted (:func:`calibration_problem`), or a label x group stratum has
    fewer than ``margin`` rows, so a re-split training replicate may not be fitted."""
    problem = calibration_problem(y, sensitive, attribute=attribute)
    if problem:
        return f"{problem}: the S4 (post_processing) cells will be uninformative (not fitted)"
    strata = np.asarray(y, dtype=np.int64) * 2 + np.asarray(sensitive, dtype=np.int64)
    counts = np.bincount(strata, minlength=4)
    code = int(np.argmin(counts))
    if counts[code] < margin:
        return (f"post_processing calibration split: label={code // 2}, {attribute} "
                f"disadvantaged={bool(code % 2)} has only {counts[code]} training rows: a "
                "re-split training replicate (run.seed_mode split) may leave fewer than 2, and "
                "its S4 cells uninformative (not fitted)")
    return ""


def calibration_problem(y: np.ndarray, sensitive: np.ndarray, *, attribute: str = "",
                        fraction: float = CALIBRATION_FRACTION) -> str:
    """Why S4's stratified calibration split of these training rows is impossible ('' if it is
    not): a label x group stratum of fewer than two rows."""
    strata = np.asarray(y, dtype=np.int64) * 2 + np.asarray(sensitive, dtype=np.int64)
    counts = np.bincount(strata, minlength=4)
    for code, n in enumerate(counts):
        if n < 2:
            who = f"{attribute} " if attribute else ""
            return (f"post_processing calibration split: label={code // 2}, {who}"
                    f"disadvantaged={bool(code % 2)} has {n} training row(s); stratifying the "
                    f"{1 - fraction:.0%}/{fraction:.0%} split needs at least 2")
    return ""


def calibration_split(
    y: np.ndarray, sensitive: np.ndarray, *, random_state: int,
    fraction: float = CALIBRATION_FRACTION, groups: np.ndarray | None = None,
    attribute: str = "",
) -> tuple[np.ndarray, np.ndarray]:
    """Split training rows into (model-fit, threshold-calibration) positions for S4.

    Stratified on label x group; every one of the four combinations must have >= 2 rows,
    otherwise :class:`Unfittable` names the combination (and ``attribute``) and its size
    (:func:`calibration_problem`).  ``groups`` (a unit id per row) splits by unit instead,
    stratified on each unit's label and group pattern; without it the split is the row split it
    always was.
    """
    problem = calibration_problem(y, sensitive, attribute=attribute, fraction=fraction)
    if problem:
        raise Unfittable(problem)
    strata = np.asarray(y, dtype=np.int64) * 2 + np.asarray(sensitive, dtype=np.int64)
    if groups is not None:
        _, codes = np.unique(np.asarray(groups), return_inverse=True)
        try:
            return grouped_split(
                codes.reshape(-1), [np.asarray(y), np.asarray(sensitive)],
                test_size=fraction, random_state=random_state,
            )
        except ValueError as exc:
            raise Unfittable(
                f"post_processing calibration split: cannot split the training units: {exc}"
            ) from None
    fit_idx, cal_idx = train_test_split(
        np.arange(len(strata)), test_size=fraction, stratify=strata, random_state=random_state
    )
    return np.sort(fit_idx), np.sort(cal_idx)
