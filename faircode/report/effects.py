"""What mitigation buys, as the report shows it: paired effects, the residual floor, stable stars.

Reads the effects the evaluate step wrote (``<audit>/effects.csv``: every mitigated strategy
against S0 and S3/S4 against S2, on the same test rows; ``effects_stability.csv`` with training
replicates), never re-estimates them.

Design decisions
----------------
* **One significance: each audit's own family.**  Every star reads the q-value the CSVs carry
  (``q_value``: the audit's Benjamini-Hochberg family, :mod:`faircode.evaluate.effects` for the
  effects), the same q MLflow logs, so no view stars a number another view calls not
  significant.  Each audit is its own study: a reader of one audit should not see its stars
  change because another audit was added to the benchmark.  The benchmark-wide family
  (:func:`effect_q_benchmark`: every effect p-value of every audit, BH at once; ``tpr_gap``'s
  effect repeats equal opportunity's test and is counted once, :data:`SAME_EFFECT_TEST`) stays as
  a robustness column, ``q_benchmark``, never as a star.
* **Marks come from the verdicts the CSVs carry** (``verdict``, :mod:`faircode.evaluate.claims`):
  a gap is starred (``*``) when its verdict is ``gap`` -- the audit's own ``q_value < alpha``
  and an interval excluding no gap -- and marked ``=`` when it is ``parity`` (its equivalence
  test at the declared margin, BH over the audit's equivalence tests); an effect is starred
  when its verdict is ``reduced`` or ``increased`` (its family's q below alpha and an interval
  excluding 0; the swap test of exchangeable decisions, ``swap_q_value``, stars
  nothing).  At K > 1 the CSVs' values, intervals and verdicts are the K-replicate
  estimate's, so the report shows exactly what ``fairness.csv``, ``effects.csv``, MLflow and the
  DVC views show.  Results written before verdicts (no ``verdict`` column) are read without any
  parity claim: ``gap`` where ``q_value < alpha`` and the interval excludes no gap on an
  informative row, else ``inconclusive`` (``uninformative`` for a degenerate or undefined row).
* **The residual floor is the paired effect** (:func:`residual_floor`): the S3/S4 vs S2 rows of
  the report metric, ``|S_m| − |S2|`` with its paired interval (the K-replicate estimate at
  K > 1); ``distinguishable`` is the star.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from faircode.core.metrics import METRIC_TABLE, no_gap
from faircode.report.inputs import (
    STRATEGIES,
    ReportInputs,
    is_uninformative,
    strategy_code,
)
from faircode.report.tables import (
    FLOOR_REFERENCE,
    PARITY,
    SIGNIFICANT,
    Cell,
    Context,
    Table,
    _Footnotes,
    estimate_cell,
)
from faircode.stats.resampling import benjamini_hochberg

__all__ = [
    "EFFECT_KEYS",
    "SAME_EFFECT_TEST",
    "effect_q_benchmark",
    "effect_verdicts_of",
    "effects_table",
    "gap_directions",
    "gap_verdicts_of",
    "replicates_of",
    "residual_floor",
    "shown_effects",
    "shown_gaps",
    "training_variance_note",
]

EFFECT_KEYS = ("audit", "strategy", "reference", "model", "protected_attribute", "metric")
_SCALES: Mapping[str, str] = {m.name: m.scale for m in METRIC_TABLE}
SAME_EFFECT_TEST: Mapping[str, str] = {m.name: m.same_value.value for m in METRIC_TABLE
                                        if m.same_value is not None}
"""An effect whose test is another's: counted once in the family, through its twin (each
metric's ``same_value`` in :data:`faircode.core.metrics.METRIC_TABLE`)."""
PERFORMANCE = ("accuracy", "balanced_accuracy")


def effect_q_benchmark(effects: pd.DataFrame) -> pd.Series:
    """Benjamini-Hochberg q of every effect row over every audit's effects (module docstring)."""
    if effects.empty:
        return pd.Series(dtype=float, name="q_benchmark")
    metric = effects["metric"].astype(str).to_numpy()
    own = ~np.isin(metric, list(SAME_EFFECT_TEST))
    q = np.full(len(effects), np.nan)
    q[own] = benjamini_hochberg(effects["p_value"].to_numpy(dtype=float)[own])
    block = [tuple(str(v) for v in row) for row in
             effects.loc[:, list(EFFECT_KEYS[:-1])].itertuples(index=False)]
    lookup = {(b, m): v for b, m, v in zip(block, metric, q, strict=True)}
    for i in np.flatnonzero(~own):
        q[i] = lookup.get((block[i], SAME_EFFECT_TEST[metric[i]]), np.nan)
    return pd.Series(q, index=effects.index, name="q_benchmark")


def _excludes(low: pd.Series, high: pd.Series, null: np.ndarray | float) -> np.ndarray:
    """Whether each interval ``[low, high]`` lies wholly on one side of ``null`` (NaN: no)."""
    lo, hi = low.to_numpy(dtype=float), high.to_numpy(dtype=float)
    return np.asarray((lo > null) | (hi < null), dtype=bool)


def _fallback(frame: pd.DataFrame, *, alpha: float, null: np.ndarray | float,
              shown: tuple[str, str, str]) -> np.ndarray:
    """Verdicts of rows written before verdicts: never a parity claim (module docstring)."""
    informative = ~is_uninformative(frame["note"]).to_numpy() & frame["value"].notna().to_numpy()
    found = (frame["q_value"].to_numpy(dtype=float) < alpha) & _excludes(
        frame["ci_low"], frame["ci_high"], null)
    value = frame["value"].to_numpy(dtype=float) - null
    reduced, increased, other = shown
    out = np.where(found, np.where(value < 0, reduced, increased), other).astype(object)
    out[~informative] = "uninformative"
    return out


def gap_verdicts_of(frame: pd.DataFrame, *, alpha: float) -> np.ndarray:
    """Each fairness row's verdict: its ``verdict`` column (module docstring for older ones)."""
    if "verdict" in frame and frame["verdict"].notna().all():
        return frame["verdict"].astype(str).to_numpy(dtype=object)
    null = np.array([no_gap(str(m)) for m in frame["metric"]], dtype=float)
    return _fallback(frame, alpha=alpha, null=null, shown=("gap", "gap", "inconclusive"))


def effect_verdicts_of(frame: pd.DataFrame, *, alpha: float) -> np.ndarray:
    """Each effect row's verdict: its ``verdict`` column (module docstring for older ones)."""
    if "verdict" in frame and frame["verdict"].notna().all():
        return frame["verdict"].astype(str).to_numpy(dtype=object)
    return _fallback(frame, alpha=alpha, null=0.0,
                     shown=("reduced", "increased", "inconclusive"))


def shown_gaps(fairness: pd.DataFrame, *, metric: str | None, alpha: float) -> pd.DataFrame:
    """The paper table's rows of ``metric`` (every metric with ``None``) with their
    ``verdict`` and ``mark`` (the star: verdict ``gap``), as every view shows them."""
    rows = fairness if metric is None else fairness[fairness["metric"] == metric]
    verdict = gap_verdicts_of(rows, alpha=alpha)
    return rows.assign(verdict=verdict, mark=verdict == "gap",
                       direction=gap_directions(rows, verdict))


def gap_directions(rows: pd.DataFrame, verdict: np.ndarray) -> np.ndarray:
    """Each gap shown's direction: ``against`` the disadvantaged group (below no gap, the sign
    convention), ``favouring`` it, ``""`` for any other verdict and for a metric without a sign
    (equalized odds, a magnitude; a distance or a level)."""
    metric = rows["metric"].astype(str).to_numpy()
    signed = np.array([_SCALES.get(m) in ("difference", "ratio") for m in metric], dtype=bool)
    side = rows["value"].to_numpy(dtype=float) - np.array([no_gap(m) for m in metric])
    out = np.where(side < 0, "against", np.where(side > 0, "favouring", "")).astype(object)
    out[(np.asarray(verdict) != "gap") | ~signed] = ""
    return out


def shown_effects(inputs: ReportInputs, *, alpha: float) -> pd.DataFrame:
    """Every effect row with its ``verdict``, ``mark`` (the star: ``reduced`` or ``increased``)
    and the benchmark-wide ``q_benchmark`` (a robustness column)."""
    effects = inputs.effects
    if effects.empty:
        return effects
    verdict = effect_verdicts_of(effects, alpha=alpha)
    return effects.assign(q_benchmark=effect_q_benchmark(effects), verdict=verdict,
                          mark=np.isin(verdict, ["reduced", "increased"]))


def residual_floor(effects: pd.DataFrame, *, metric: str) -> pd.DataFrame:
    """``|S_m| − |S2|`` of ``metric`` for S3 and S4, per audit x attribute x model: the paired
    effect against S2 as shown (:func:`shown_effects`).

    Columns: ``audit``, ``protected_attribute``, ``model``, ``strategy``, ``metric``,
    ``difference``, ``low``, ``high``, ``p_value``, ``q_value`` (the audit's family: the star's),
    ``q_benchmark`` (every audit's effects at once: robustness only), ``seeds``,
    ``distinguishable`` (the star; NaN where the effect or its interval is undefined), ``note``.
    """
    columns = ["audit", "protected_attribute", "model", "strategy", "metric", "difference",
               "low", "high", "p_value", "q_value", "q_benchmark", "seeds", "distinguishable",
               "note"]
    if effects.empty:
        return pd.DataFrame(columns=columns)
    rows = effects[(effects["reference"] == FLOOR_REFERENCE) & (effects["metric"] == metric)]
    out = rows.rename(columns={"value": "difference", "ci_low": "low", "ci_high": "high"})
    out = out.assign(seeds=out["seeds"] if "seeds" in out else 1)
    defined = out[["difference", "low", "high"]].notna().all(axis=1)
    out["distinguishable"] = pd.array(out["mark"].to_numpy(dtype=bool),
                                      dtype="boolean").copy()
    out.loc[~defined, "distinguishable"] = pd.NA
    return out.loc[:, columns].reset_index(drop=True)


def replicates_of(inputs: ReportInputs) -> dict[str, int]:
    """Each audit's training replicates K (``run.json`` ``config.seeds``; absent = 1)."""
    out = {}
    for audit, run in inputs.runs.items():
        config = run.get("config") if isinstance(run, Mapping) else None
        seeds = config.get("seeds", 1) if isinstance(config, Mapping) else 1
        out[audit] = int(seeds) if isinstance(seeds, int) and not isinstance(seeds, bool) else 1
    return out


def training_variance_note(inputs: ReportInputs) -> str:
    """One sentence for every caption: whether (and for which audits) intervals and verdicts
    include training variance."""
    k = replicates_of(inputs)
    single = sorted(a for a, n in k.items() if n == 1)
    many = sorted(a for a, n in k.items() if n > 1)
    parts = []
    if many:
        counts = sorted({k[a] for a in many})
        parts.append(
            f"{', '.join(many) if single else 'Every audit'}: K = "
            f"{'/'.join(map(str, counts))} training replicates; each value is the K-replicate "
            "estimate (the mean over the informative replicates) with an interval for it "
            "(sampling and training variance), and its test and verdict come from that "
            "interval; replicate 0's own numbers are the CSVs' rep0_* columns.")
    if single:
        parts.append(
            f"{', '.join(single) if many else 'Every audit'}: K = 1, training variance not "
            "included (intervals and verdicts reflect the test-sample noise of one fit; "
            "run.seeds > 1 adds it).")
    return " ".join(parts)


def _comparisons(effects: pd.DataFrame) -> list[tuple[str, str]]:
    pairs = dict.fromkeys(zip(effects["strategy"].astype(str), effects["reference"].astype(str),
                              strict=True))
    order = {s: i for i, s in enumerate(STRATEGIES)}
    return sorted(pairs, key=lambda p: (p[1] != STRATEGIES[0], order.get(p[1], 99),
                                        order.get(p[0], 99)))


EFFECT_ROWS = ("accuracy", "balanced_accuracy")
"""The cost rows of the effects table under the report metric's row."""


def effects_table(ctx: Context) -> Table | None:
    """Rows audit x attribute x (Δ distance from parity of the report metric, Δ accuracy,
    Δ balanced accuracy), columns every comparison (S1-S0 ... S4-S0, S3-S2, S4-S2), per model
    family."""
    effects = ctx.effects
    if effects.empty:
        return None
    fn = _Footnotes()
    comparisons = _comparisons(effects)
    metrics = (ctx.metric, *EFFECT_ROWS)
    shown = effects[effects["metric"].isin(metrics)]
    lookup = {tuple(str(v) for v in k): r for k, (_, r) in zip(
        shown[["model", "audit", "protected_attribute", "metric", "strategy",
               "reference"]].itertuples(index=False, name=None), shown.iterrows(), strict=True)}
    labels = {ctx.metric: f"Δ |{ctx.metric}|", "accuracy": "Δ accuracy",
              "balanced_accuracy": "Δ balanced accuracy"}
    sections: list[tuple[str, tuple[Any, ...]]] = []
    pairs = list(dict.fromkeys(zip(shown["audit"].astype(str),
                                   shown["protected_attribute"].astype(str), strict=True)))
    for model in ctx.models:
        rows = []
        for audit, attr in pairs:
            for metric in metrics:
                cells: tuple[Cell, ...] = tuple(
                    estimate_cell(lookup.get((model, audit, attr, metric, a, b)), value="value",
                                  fn=fn, missing="no effect row for this comparison")
                    for a, b in comparisons)
                rows.append(((audit, attr, labels[metric]), cells))
        sections.append((model, tuple(rows)))
    pct = f"{ctx.confidence:.0%}"
    legend = (f"Each cell: the paired effect of the column's strategy against its reference on "
              f"the same test rows [{pct} paired interval: the expanded percentile interval "
              "where the draws keep both gaps' signs, the signed box near parity]: Δ |gap| = "
              "|gap(strategy)| - |gap(reference)| (< 0: closer to parity; |x - 1| for a "
              "ratio), Δ accuracy and Δ balanced accuracy = strategy - reference (the cost on "
              "the audit's own objective where it decides at base_rate). "
              f"{SIGNIFICANT} a change shown (effects.csv verdict reduced or increased: the "
              f"audit's own Benjamini-Hochberg q < {ctx.alpha:g} of the test of no change, "
              "which inverts the interval, tpr_gap once, and an interval excluding 0); "
              f"{PARITY} no change beyond the margin shown (verdict no_change: the "
              f"{1 - 2 * ctx.alpha:.0%} interval inside the margin). " + ctx.variance_note)
    return Table("effects_table", f"What mitigation buys: paired effects on {ctx.metric}, "
                 "accuracy and balanced accuracy", ("audit", "attribute", "effect"),
                 tuple(f"{strategy_code(a)}-{strategy_code(b)}" for a, b in comparisons),
                 tuple(sections), legend.strip(), fn.items())
