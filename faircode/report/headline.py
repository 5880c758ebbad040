"""The report's finding in words: what each mitigation buys per audit, written from the numbers.

:func:`findings` reads the shown gaps and paired effects of a report
(:class:`~faircode.report.tables.Context`, the same rows the tables print) and returns one
:class:`AuditFinding` per audit with results; :func:`lead` and :func:`audit_line` turn them into
the sentences at the top of ``report.html``.  Nothing here is typed by hand: change a result
and the sentence changes.

Design decisions
----------------
* **The first protected attribute.**  S3 and S4 mitigate the manifest's first attribute (it is
  their ``sensitive_features``), so the headline speaks of it; every attribute is in the tables.
* **Across model families, the median and a count.**  The effect of a strategy is the median
  over the model families of its paired effect against S0 (``effects.csv``: Δ distance from
  parity of the report metric, Δ accuracy), as the effects table shows it (pooled at K > 1).
  "A gap remains" when the strategy's own gap is starred in at least one family; "no
  significant gap left" when it is starred in none of its informative families.  A star is the
  audit's own Benjamini-Hochberg q (the CSVs' ``significant``) and, at K > 1, the stability
  rule of :mod:`faircode.report.effects`; no star is not proof of parity (a small audit may
  not be powered: the paper table footnotes say where).
* **Context beside performance.**  Each line names the test set's base rate (share of rows with
  the favourable label, from ``groups.csv``) and the majority-class accuracy (always deciding the
  test set's majority label, ``performance.csv``), so an accuracy change reads against both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faircode.core.cells import STRATEGY_TITLES
from faircode.report.inputs import (
    STRATEGIES,
    is_uninformative,
    ordered,
    strategy_code,
    test_base_rates,
)
from faircode.report.tables import Context, num

__all__ = ["AuditFinding", "StrategyFinding", "audit_line", "findings", "lead"]

BASELINE = STRATEGIES[0]


@dataclass(frozen=True, slots=True)
class StrategyFinding:
    """One mitigated strategy on one audit's first attribute, over the model families."""

    code: str
    effect: float
    """Median over families of Δ |gap| against S0 (< 0: closer to parity); NaN without one."""
    accuracy: float
    """Median over families of Δ accuracy against S0; NaN without one."""
    starred: int
    """Families whose own gap is starred (a significant gap remains)."""
    informative: int
    """Families with an informative gap (not degenerate, not n/a)."""

    def __post_init__(self) -> None:
        if not 0 <= self.starred <= self.informative:
            raise ValueError(f"StrategyFinding: starred {self.starred} not in 0..informative "
                             f"{self.informative}")

    @property
    def reaches(self) -> bool:
        """Whether no informative family has a significant gap left."""
        return self.informative > 0 and self.starred == 0


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """One audit's headline: S0's gap on its first attribute and what S1-S4 change."""

    audit: str
    attribute: str
    gap: float
    """S0's gap (median over families, as the paper table shows it)."""
    starred: int
    informative: int
    strategies: tuple[StrategyFinding, ...]
    base_rate: float = math.nan
    """Share of test rows with the favourable label (NaN when ``groups.csv`` is absent)."""
    majority: float = math.nan
    """Majority-class accuracy on the test rows (NaN when not in ``performance.csv``)."""


def _median(values: pd.Series) -> float:
    finite = values.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(np.median(finite)) if finite.size else math.nan


def _counts(gaps: pd.DataFrame) -> tuple[int, int]:
    """(starred, informative) families of one strategy's shown gap rows."""
    usable = gaps[~is_uninformative(gaps["note"]) & gaps["value"].notna()]
    return int(usable["mark"].astype(bool).sum()), len(usable)


def findings(ctx: Context) -> tuple[AuditFinding, ...]:
    """One :class:`AuditFinding` per audit with results (audit order), from ``ctx``'s shown
    gaps (``ctx.gaps``) and effects (``ctx.effects``) of the report metric."""
    gaps = ctx.gaps[ctx.gaps["model"].isin(ctx.models)] if not ctx.gaps.empty else ctx.gaps
    effects = ctx.effects
    if not effects.empty:
        effects = effects[(effects["reference"] == BASELINE) & effects["model"].isin(ctx.models)]
    context = test_base_rates(ctx.inputs)
    out = []
    for audit in ctx.inputs.runs:
        mine = gaps[gaps["audit"] == audit] if not gaps.empty else gaps
        attrs = ordered(mine["protected_attribute"], ()) if not mine.empty else []
        if not attrs:
            continue
        attr = attrs[0]
        rows = mine[mine["protected_attribute"] == attr]
        base = rows[rows["strategy"] == BASELINE]
        starred, informative = _counts(base)
        strategies = []
        for strategy in ordered(rows["strategy"], STRATEGIES):
            if strategy == BASELINE:
                continue
            eff = effects[(effects["audit"] == audit) & (effects["strategy"] == strategy)
                          & (effects["protected_attribute"] == attr)] if not effects.empty \
                else effects
            parity = eff[eff["metric"] == ctx.metric] if not eff.empty else eff
            accuracy = eff[eff["metric"] == "accuracy"] if not eff.empty else eff
            s, n = _counts(rows[rows["strategy"] == strategy])
            strategies.append(StrategyFinding(
                code=strategy_code(strategy),
                effect=_median(parity["value"]) if not parity.empty else math.nan,
                accuracy=_median(accuracy["value"]) if not accuracy.empty else math.nan,
                starred=s, informative=n))
        usable = base[~is_uninformative(base["note"])]
        rate, major = context.get(str(audit), (math.nan, math.nan))
        out.append(AuditFinding(audit=str(audit), attribute=str(attr),
                                gap=_median(usable["value"]), starred=starred,
                                informative=informative, strategies=tuple(strategies),
                                base_rate=rate, majority=major))
    return tuple(out)


def _signed(x: float, digits: int = 2) -> str:
    """``+0.12``, ``−0.34`` (typographic minus); callers leave NaN out, ``n/a`` if not."""
    if not np.isfinite(x):
        return "n/a"
    text = num(x, digits)
    return text.replace("-", "\u2212") if text.startswith("-") else "+" + text


def lead(items: Sequence[AuditFinding], *, metric: str, unavailable: int) -> tuple[str, ...]:
    """The headline's sentences across audits (plain text, no markup)."""
    if not items:
        return ("No audit has results for this metric yet.",)
    n = len(items)
    gapped = [f for f in items if f.starred > 0]
    first = (f"{n} audit{'s' if n != 1 else ''} with results"
             + (f" ({unavailable} unavailable)" if unavailable else "") + f": S0 (baseline) "
             f"leaves a significant {metric} gap on the first protected attribute in "
             f"{len(gapped)} of {n}.")
    sentences = [first]
    if gapped:
        parts = []
        for code in ("S3", "S4", "S2", "S1"):
            found = [s for f in gapped for s in f.strategies if s.code == code]
            if not found:
                continue
            reached = sum(s.reaches for s in found)
            acc = _median(pd.Series([s.accuracy for s in found]))
            parts.append(f"{code} ({STRATEGY_TITLES[code]}) in {reached} of {len(gapped)}"
                         + (f", median \u0394 accuracy {_signed(acc)}" if np.isfinite(acc)
                            else ""))
        sentences.append("Of those, no significant gap is left in any model family by "
                         + "; ".join(parts) + ".")
        stuck = [f"{f.audit} ({f.attribute})" for f in gapped
                 if not any(s.reaches for s in f.strategies if s.code in ("S3", "S4"))]
        if stuck:
            sentences.append("A significant gap remains after both S3 and S4 in "
                             + ", ".join(stuck) + ".")
    quiet = [f.audit for f in items if f.starred == 0]
    if quiet:
        sentences.append("S0's gap on the first attribute is not significant in "
                         + ", ".join(quiet)
                         + " (no star is not parity: see the powered footnotes).")
    return tuple(sentences)


def audit_line(item: AuditFinding) -> tuple[str, str]:
    """``(label, text)`` of one audit's line: S0's gap and base rates, then S1-S4."""
    label = f"{item.audit} \u00b7 {item.attribute}"
    context = []
    if np.isfinite(item.base_rate):
        context.append(f"base rate {num(item.base_rate, 2)}")
    if np.isfinite(item.majority):
        context.append(f"majority-class accuracy {num(item.majority, 2)}")
    head = (f"S0 gap {_signed(item.gap)} (significant in {item.starred} of {item.informative} "
            "families" + ("; " + ", ".join(context) if context else "") + ").")
    parts = []
    for s in item.strategies:
        verdict = ("no significant gap left" if s.reaches else
                   "uninformative" if s.informative == 0 else
                   f"a gap remains ({s.starred} of {s.informative})")
        numbers = ", ".join(f"{what} {_signed(x)}" for what, x in
                            (("\u0394|gap|", s.effect), ("\u0394acc", s.accuracy))
                            if np.isfinite(x))  # no effects.csv row: no number, no "n/a"
        parts.append(f"{s.code} {numbers}: {verdict}" if numbers else f"{s.code}: {verdict}")
    return label, head + " " + "; ".join(parts) + "."
