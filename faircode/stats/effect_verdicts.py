"""What a paired effect shows: one word per effect, from its interval and its two tests.

The vocabulary (:class:`EffectVerdict`) is defined here once, for every place that states an
effect: one replicate's ``effects.csv`` and any combination of replicates, which passes its own
interval, significance and equivalence decision to the same :func:`effect_verdicts`.

=================  ==========================================================================
verdict            meaning (``Δ``: the change of A against its reference B)
=================  ==========================================================================
``reduced``        a decrease is shown: the interval lies wholly below 0 and the test of
                   ``Δ = 0`` is significant in its family.  Fairness: A is closer to parity
                   (``Δ |gap|`` < 0); accuracy, balanced accuracy: A costs accuracy.
``increased``      an increase is shown (the interval wholly above 0, significant): A is
                   further from parity, or gains accuracy.
``no_change``      no change larger than the margin ``δ``: the equivalence test of
                   ``|Δ| ≥ δ`` is significant in its family (the ``1 − 2α`` interval lies
                   inside ``±δ``) and no change is shown.
``inconclusive``   neither: the data allow no change and allow a change beyond ``±δ`` (the
                   interval says how large).  Never read as "no change".
``uninformative``  the effect says nothing: a strategy's decisions are degenerate or were not
                   run, or the effect is undefined (an empty subset, a zero rate).
=================  ==========================================================================

Design decisions
----------------
* **A shown change wins**: an effect that is significant and also within ``±δ`` (a small, real
  change) is ``reduced``/``increased``; its equivalence q says it is small.
* **Direction from the interval**, not the point value, so a verdict and the interval shown
  beside it always agree (with a test that inverts that interval, as
  :mod:`faircode.stats.paired`'s, they agree by construction).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["EffectVerdict", "effect_verdicts"]


class EffectVerdict(StrEnum):
    """The five verdicts of a paired effect (module docstring)."""

    REDUCED = "reduced"
    INCREASED = "increased"
    NO_CHANGE = "no_change"
    INCONCLUSIVE = "inconclusive"
    UNINFORMATIVE = "uninformative"


def effect_verdicts(
    ci_low: ArrayLike, ci_high: ArrayLike, *, significant: ArrayLike, equivalent: ArrayLike,
    informative: ArrayLike,
) -> NDArray[np.str_]:
    """The verdict of every effect (elementwise; module docstring).

    ``significant``: the test of ``Δ = 0`` is significant in its family (an interval that does
    not exclude 0 is never read as significant); ``equivalent``: the equivalence test is
    significant in its family; ``informative``: the effect is defined and both strategies'
    decisions are informative.  NaN intervals are uninformative.
    """
    low = np.asarray(ci_low, dtype=np.float64)
    high = np.asarray(ci_high, dtype=np.float64)
    sig = np.asarray(significant, dtype=bool)
    usable = np.asarray(informative, dtype=bool) & np.isfinite(low) & np.isfinite(high)
    out = np.where(np.asarray(equivalent, dtype=bool), EffectVerdict.NO_CHANGE.value,
                   EffectVerdict.INCONCLUSIVE.value)
    out = np.where(sig & (high < 0), EffectVerdict.REDUCED.value, out)
    out = np.where(sig & (low > 0), EffectVerdict.INCREASED.value, out)
    return np.where(usable, out, EffectVerdict.UNINFORMATIVE.value).astype(np.str_)
