"""A text audit's placebo table: every axis's swap against the swaps within its groups.

``placebo.csv`` holds, per system x sentence set x axis x kind with a placebo arm
(:mod:`faircode.counterfactual.placebo`) and per measure -- the flip rate at each operating
point, the CTF gap (mean ``|d|``) and the shift (mean ``d``) -- the between-group value, the
placebo value, their difference with its paired interval and tests
(:func:`faircode.stats.placebo.placebo_differences`), q-values and the verdict read from the
difference.  The raw rates stay in ``flips.csv`` and ``ctf.csv``; this table says how much of
them the group accounts for.

Design decisions
----------------
* **Families**: each system's differences are one Benjamini–Hochberg family across its axes,
  sets, kinds, measures and points, and its equivalence tests another (as the paired effects'),
  so adding a placebo moves no q-value of ``flips.csv``.  ``significant``: q < ``stats.alpha``
  and the interval excluding 0.  The equivalence margin is ``stats.effect_margin`` (in rate
  points for a flip rate, in score units for the gap and the shift).
* **Seeds**: ``SeedSequence(random_state, spawn_key=(10, 3, key(set, axis, kind)))`` -- one set
  of frame draws per comparison, shared by every system, measure and point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from faircode.core.config import StatsConfig
from faircode.evaluate.text_tables import Point, _frame, _seed, decide
from faircode.stats.paired_scores import NO_CHANGE
from faircode.stats.placebo import placebo_differences, placebo_verdicts
from faircode.stats.resampling import benjamini_hochberg

__all__ = ["PLACEBO_COLUMNS", "Arm", "placebo_q_values", "placebo_table"]

PLACEBO_COLUMNS = ("audit", "system", "set", "axis", "kind", "measure", "operating_point", "rule",
                   "threshold", "direction", "groups", "n_pairs", "n_placebo_pairs", "n_units",
                   "between", "between_ci_low", "between_ci_high", "placebo", "placebo_ci_low",
                   "placebo_ci_high", "difference", "ci_low", "ci_high", "p_value", "q_value",
                   "significant", "equivalence_margin", "equivalence_p_value",
                   "equivalence_q_value", "verdict", "note")
Arm = tuple[str, str, str, tuple[str, ...]]
"""(set, axis, kind, placebo groups) of one comparison."""
_GAPS = ("ctf_gap", "shift")


def placebo_table(original: ArrayLike, units: ArrayLike, pairs: pd.DataFrame,
                  arms: Sequence[Arm], *, points: Sequence[Point], stats: StatsConfig,
                  master: int, label: Mapping[str, str]) -> pd.DataFrame:
    """One system's placebo rows: ``original`` its score of every sentence, ``units`` their
    frames, ``pairs`` every copy (``set``, ``axis``, ``kind``, ``arm``, ``sentence``,
    ``copy_score``), ``arms`` the comparisons.  q-values and verdicts: :func:`placebo_q_values`."""
    scores = np.asarray(original, dtype=np.float64)
    unit_of = np.asarray(units)
    groups = pairs.groupby(["set", "arm", "axis", "kind"], sort=False).indices
    sentence = pairs["sentence"].to_numpy()
    copy = pairs["copy_score"].to_numpy(dtype=np.float64)
    empty = np.zeros(0, dtype=np.int64)

    def measures(chosen: Any) -> tuple[np.ndarray, np.ndarray]:
        rows = np.asarray(chosen, dtype=np.int64)
        before, after = scores[sentence[rows]], copy[rows]
        flips = [decide(before, p) != decide(after, p) for p in points]
        values = np.column_stack([*flips, np.abs(after - before), after - before])
        return unit_of[sentence[rows]], values

    rows_out: list[dict[str, Any]] = []
    for which, axis, kind, names in arms:
        between = groups.get((which, "between", axis, kind), empty)
        placebo = np.concatenate([groups.get((which, "placebo", g, kind), empty)
                                  for g in names]) if names else empty
        result = placebo_differences(*measures(between), *measures(placebo),
                                     n_resamples=stats.n_resamples,
                                     seed=_seed(master, "placebo", which, axis, kind),
                                     confidence=stats.confidence, margin=stats.effect_margin)
        common = {**label, "set": which, "axis": axis, "kind": kind, "groups": "|".join(names),
                  "n_pairs": result.n_between, "n_placebo_pairs": result.n_placebo,
                  "n_units": result.n_units, "equivalence_margin": stats.effect_margin,
                  "note": result.note}
        labels = [{"measure": "flip_rate", **p.label()} for p in points]
        labels += [{"measure": m, "operating_point": "", "rule": "", "threshold": np.nan,
                    "direction": ""} for m in _GAPS]
        for j, what in enumerate(labels):
            rows_out.append({**common, **what, "between": result.between[j],
                             "between_ci_low": result.between_low[j],
                             "between_ci_high": result.between_high[j],
                             "placebo": result.placebo[j], "placebo_ci_low": result.placebo_low[j],
                             "placebo_ci_high": result.placebo_high[j],
                             "difference": result.difference[j], "ci_low": result.ci_low[j],
                             "ci_high": result.ci_high[j], "p_value": result.p_value[j],
                             "equivalence_p_value": result.equivalence_p_value[j],
                             "note": result.note or (
                                 "" if result.moved is None or result.moved[j] else NO_CHANGE)})
    return _frame(rows_out, PLACEBO_COLUMNS)


def placebo_q_values(table: pd.DataFrame, *, alpha: float) -> None:
    """One system's families (module docstring), in place: q-values, ``significant`` and
    ``verdict``."""
    q = benjamini_hochberg(table["p_value"].to_numpy(dtype=np.float64))
    eq = benjamini_hochberg(table["equivalence_p_value"].to_numpy(dtype=np.float64))
    low = table["ci_low"].to_numpy(dtype=np.float64)
    high = table["ci_high"].to_numpy(dtype=np.float64)
    significant = (q < alpha) & ((low > 0) | (high < 0))
    table["q_value"], table["equivalence_q_value"] = q, eq
    table["significant"] = significant
    table["verdict"] = placebo_verdicts(low, high, significant=significant,
                                        equivalent=eq < alpha,
                                        informative=np.isfinite(
                                            table["difference"].to_numpy(dtype=np.float64)))
