"""The headline's parity claims, each tested in the family of the sentence that makes it.

A headline sentence -- "S4 shows parity within ±0.05 in k of n" -- makes n claims, one per audit
it speaks of (the audits where S0 leaves a gap; for S0's own sentence those where it does not):
"the strategy's gap on the audit's first protected attribute lies within the margin in every
informative model family".  Such a claim spans the families of its cell, so it is an
intersection-union test: its p-value is the largest of its families' equivalence p-values
(``fairness.csv`` ``equivalence_p_value``; it holds at level alpha exactly when each family's
TOST does, with no adjustment across them).  The n claims of one sentence are one
Benjamini-Hochberg family (:func:`claim_q_values`): the share of false parity claims among the
parity claims that sentence makes is at most alpha.  A family of every equivalence test of an
audit (84 to 336 tests, most of them rows no sentence claims anything about) would answer a
question the report does not ask; that count stays beside the claim's, as the conservative view
(``conservative_verdict``).

Design decisions
----------------
* **The claims are pre-specified**: the metric of ``verdicts.claims`` (recorded in ``run.json``),
  each strategy's sentence over the audits the headline's first sentence sorts (S0's gap), the
  first protected attribute (the one S3 and S4 mitigate).  A report of another metric has no
  pre-specified claims: its sentences count the cells' verdicts.
* **A gap shown is no parity claim**: a claim with a family whose verdict is ``gap`` fails, as
  the cells' rule has a shown gap win over parity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from faircode.stats.resampling import benjamini_hochberg

__all__ = ["claim_p_value", "claim_q_values"]


def claim_p_value(p_values: Sequence[float], verdicts: Sequence[str]) -> float:
    """The intersection-union p-value of "parity in every informative family": the largest
    equivalence p of the informative families (NaN without one; 1 where a family shows a gap)."""
    shown = [float(p) for p, v in zip(p_values, verdicts, strict=True) if v != "uninformative"]
    if not shown:
        return float("nan")
    if "gap" in verdicts:
        return 1.0
    return float(np.nanmax(shown)) if np.isfinite(shown).any() else float("nan")


def claim_q_values(p_values: Mapping[str, float]) -> dict[str, float]:
    """Benjamini-Hochberg q of one sentence's claims, keyed as given (NaN stays NaN)."""
    keys = list(p_values)
    q = benjamini_hochberg(np.array([p_values[k] for k in keys], dtype=float))
    return dict(zip(keys, (float(x) for x in q), strict=True))
