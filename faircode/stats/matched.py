"""The matched-violation comparisons' verdicts and their Benjamini-Hochberg family.

A matched comparison (``matched.csv``, :mod:`faircode.evaluate.matched`) is a paired effect
``Δ`` = strategy minus reference on accuracy or balanced accuracy, the strategy's tolerance curve
read at its reference's violation.  Its verdict (:class:`MatchedVerdict`) is the paired effect's
(:func:`faircode.stats.verdicts.effect_verdicts`, one rule) in a comparison's words:

=================  ==========================================================================
``better``         an increase is shown (``increased``): the strategy is more accurate
``worse``          a decrease is shown (``reduced``): the reference is more accurate
``no_difference``  no difference beyond the margin, shown by the equivalence test
                   (``no_change``)
``inconclusive``   neither
``uninformative``  a cell was not run, not fitted or degenerate, or the target is undefined
=================  ==========================================================================

:func:`matched_q_values` takes a table of them through one family: an audit's own
(the evaluate step) or every audit's at once (the report: the claim is made across the
benchmark).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from faircode.stats.resampling import benjamini_hochberg
from faircode.stats.verdicts import EffectVerdict, effect_verdicts

__all__ = ["MatchedVerdict", "matched_q_values", "matched_verdicts"]


class MatchedVerdict(StrEnum):
    """A matched comparison's verdict (module docstring)."""

    BETTER = "better"
    WORSE = "worse"
    NO_DIFFERENCE = "no_difference"
    INCONCLUSIVE = "inconclusive"
    UNINFORMATIVE = "uninformative"


_MATCHED: dict[str, MatchedVerdict] = {
    EffectVerdict.INCREASED: MatchedVerdict.BETTER, EffectVerdict.REDUCED: MatchedVerdict.WORSE,
    EffectVerdict.NO_CHANGE: MatchedVerdict.NO_DIFFERENCE,
    EffectVerdict.INCONCLUSIVE: MatchedVerdict.INCONCLUSIVE,
    EffectVerdict.UNINFORMATIVE: MatchedVerdict.UNINFORMATIVE,
}


def matched_verdicts(ci_low: ArrayLike, ci_high: ArrayLike, *, significant: ArrayLike,
                     equivalent: ArrayLike, informative: ArrayLike) -> NDArray[np.object_]:
    """Each comparison's :class:`MatchedVerdict`: :func:`~faircode.stats.verdicts.
    effect_verdicts` of its ``Δ`` in a comparison's words."""
    verdicts = effect_verdicts(ci_low, ci_high, significant=significant, equivalent=equivalent,
                               informative=informative)
    out: NDArray[np.object_] = np.array([_MATCHED[v].value for v in verdicts], dtype=np.object_)
    return out


def matched_q_values(table: pd.DataFrame, *, alpha: float) -> pd.DataFrame:
    """A copy of ``table`` with its family's q-values (``p_value`` one family, the
    ``equivalence_p_value`` another), ``significant`` (q below ``alpha`` and an interval
    ``ci_low``/``ci_high`` excluding 0) and ``verdict``; a row without a ``value`` is
    ``uninformative``."""
    out = table.copy()
    out["q_value"] = benjamini_hochberg(out["p_value"].to_numpy(dtype=float))
    out["equivalence_q_value"] = benjamini_hochberg(
        out["equivalence_p_value"].to_numpy(dtype=float))
    low, high = out["ci_low"].to_numpy(dtype=float), out["ci_high"].to_numpy(dtype=float)
    q = np.nan_to_num(out["q_value"].to_numpy(dtype=float), nan=1.0)
    out["significant"] = (q < alpha) & ((low > 0) | (high < 0))
    equivalent = np.nan_to_num(out["equivalence_q_value"].to_numpy(dtype=float), nan=1.0)
    out["verdict"] = matched_verdicts(
        low, high, significant=out["significant"].to_numpy(dtype=bool),
        equivalent=equivalent < alpha, informative=out["value"].notna().to_numpy())
    return out
