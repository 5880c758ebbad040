"""A bin-free calibration check: logistic regression of the label on the score and the group.

The complement of :func:`faircode.stats.calibration.calibration_gap` (same orientation, scales
and groups): it separates a shift of the calibration curve from a change of its slope, at the
price of assuming the curve is linear in log-odds.  Row-level (statsmodels' fit); not part of
the audit tables, so it has no count-level form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from faircode.core import checks
from faircode.stats import clusters
from faircode.stats.calibration import Scale, _as_score, _two_groups

__all__ = ["CalibrationRegression", "calibration_regression"]


@dataclass(frozen=True, slots=True)
class CalibrationRegression:
    """Logistic calibration check ``logit P(y=1) = b0 + b1·z + b2·D + b3·z·D``.

    ``z`` is the centred score (ordinal) or centred ``logit(score)`` (probability), ``D`` the
    disadvantaged indicator.  ``group_*`` is ``b2`` (the log-odds difference at the mean score),
    ``interaction_*`` is ``b3`` (a different slope), ``joint_p`` the Wald test of ``b2 = b3 = 0``
    (one calibration curve for both groups).  Standard errors are cluster-robust by unit when
    units repeat.
    """

    group_coef: float
    group_se: float
    group_p: float
    interaction_coef: float
    interaction_se: float
    interaction_p: float
    joint_p: float
    n: int
    note: str


def calibration_regression(
    y_true: ArrayLike,
    score: ArrayLike,
    disadvantaged: ArrayLike,
    advantaged: ArrayLike | None = None,
    *,
    scale: Scale,
    units: ArrayLike | None = None,
) -> CalibrationRegression:
    """Fit the logistic calibration check (:class:`CalibrationRegression`) with statsmodels.

    A bin-free complement to :func:`calibration_gap`: it separates a shift of the calibration
    curve (``group``) from a change of its slope (``interaction``), at the price of assuming the
    curve is linear in log-odds.  A fit that fails (e.g. perfect separation) gives NaN and
    note ``fit_failed``.
    """
    import statsmodels.api as sm  # heavy import, only for this check

    masks = _two_groups(disadvantaged, advantaged)
    y, s = checks.as_binary("y_true", y_true), _as_score(score, scale)
    checks.check_lengths(y_true=y, score=s, disadvantaged=masks["disadvantaged"])
    used = masks["disadvantaged"] | masks["advantaged"]
    z = s if scale == "ordinal" else np.log(np.clip(s, 1e-6, 1 - 1e-6) / np.clip(1 - s, 1e-6, 1))
    z, d, y_used = z[used] - z[used].mean(), masks["disadvantaged"][used].astype(float), y[used]
    exog = np.column_stack([np.ones(z.size), z, d, z * d])
    inverse = clusters.repeated_units(units, y.size)
    kwargs: dict[str, object] = {}
    if inverse is not None:
        kwargs = {"cov_type": "cluster", "cov_kwds": {"groups": inverse[used]}}
    nan = float("nan")
    try:
        fit = sm.Logit(y_used, exog).fit(disp=0, **kwargs)
        joint = fit.wald_test(np.array([[0, 0, 1, 0], [0, 0, 0, 1]]), scalar=True)
    except Exception:  # separation, singular design: report, do not crash an audit
        return CalibrationRegression(nan, nan, nan, nan, nan, nan, nan, int(used.sum()),
                                     "fit_failed")
    params, bse, pvalues = (np.asarray(a, dtype=float) for a in (fit.params, fit.bse, fit.pvalues))
    return CalibrationRegression(
        float(params[2]), float(bse[2]), float(pvalues[2]), float(params[3]), float(bse[3]),
        float(pvalues[3]), float(np.asarray(joint.pvalue)), int(used.sum()),
        "clustered_by_unit" if inverse is not None else "",
    )
