"""The report's finding in words: what each mitigation buys per audit, written from the verdicts.

:func:`findings` reads the shown gaps and paired effects of a report
(:class:`~faircode.report.tables.Context`, the same rows the tables print, with their
``verdict``) and returns one :class:`AuditFinding` per audit with results; :func:`lead` and
:func:`audit_line` turn them into the sentences at the top of ``report.html``.  Nothing here is
typed by hand: change a result and the sentence changes.

Design decisions
----------------
* **The first protected attribute.**  S3 and S4 mitigate the manifest's first attribute (it is
  their ``sensitive_features``), so the headline speaks of it; every attribute is in the tables.
* **Claims are verdicts** (:mod:`faircode.stats.verdicts`): "leaves a gap" where some model
  family's verdict is ``gap``; "reduces it" where every informative family's paired effect
  against S0 is ``reduced``; "parity within ±δ is shown" where every informative family's verdict
  is ``parity``; otherwise "a gap of up to X cannot be excluded", X the largest ``gap_bound``
  (the far end of the ``1 − 2·alpha`` interval) of its families.  No sentence reads a
  non-rejection as parity, and an uninformative family (degenerate decisions, too few
  informative replicates) counts for nothing.
* **One statistic with the heatmap.**  A number across model families is their mean over the
  informative families (:func:`faircode.report.inputs.family_mean`), the heatmap's statistic.
* **Costs on the audit's own objective.**  Where the audit decides at ``base_rate`` (or
  ``top_fraction``) -- S3/S4 then optimise balanced accuracy -- the cost is the change in
  balanced accuracy, with the majority-class accuracy beside; at a threshold, the change in
  accuracy (``effects.csv``'s ``balanced_accuracy`` and ``accuracy`` rows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faircode.core.cells import STRATEGY_TABLE, STRATEGY_TITLES
from faircode.core.metrics import Metric, no_gap
from faircode.report.inputs import (
    STRATEGIES,
    family_mean,
    ordered,
    strategy_code,
    test_base_rates,
)
from faircode.report.tables import Context, num

__all__ = ["AuditFinding", "StrategyFinding", "audit_line", "findings", "lead", "margins_of"]

BASELINE = STRATEGIES[0]
BALANCED_RULES = ("base_rate", "top_fraction")
"""Decision rules whose S3/S4 objective is balanced accuracy: their cost is in balanced accuracy."""


@dataclass(frozen=True, slots=True)
class StrategyFinding:
    """One strategy on one audit's first attribute, over the model families."""

    code: str
    verdicts: tuple[str, ...]
    """The strategy's gap verdict in each model family."""
    effects: tuple[str, ...] = ()
    """The verdict of its paired effect against S0 in each family (none for S0)."""
    effect: float = math.nan
    """Mean over families of Δ |gap| against S0 (< 0: closer to parity)."""
    cost: float = math.nan
    """Mean over families of Δ balanced accuracy (base_rate audits) or Δ accuracy against S0."""
    bound: float = math.nan
    """The largest distance from parity not excluded by a non-parity informative family."""

    @property
    def informative(self) -> int:
        """Families with an informative verdict."""
        return sum(v != "uninformative" for v in self.verdicts)

    @property
    def gaps(self) -> int:
        """Families with a gap shown."""
        return self.verdicts.count("gap")

    @property
    def parities(self) -> int:
        """Families with parity shown."""
        return self.verdicts.count("parity")

    @property
    def parity(self) -> bool:
        """Parity shown in every informative family (at least one)."""
        return self.informative > 0 and self.parities == self.informative

    @property
    def reduces(self) -> bool:
        """The paired effect against S0 is ``reduced`` in every informative family."""
        shown = [v for v in self.effects if v != "uninformative"]
        return bool(shown) and all(v == "reduced" for v in shown)


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """One audit's headline: S0's gap on its first attribute and what S1-S4 change."""

    audit: str
    attribute: str
    gap: float
    """S0's gap (mean over its informative families, as the heatmap shows it)."""
    baseline: StrategyFinding
    strategies: tuple[StrategyFinding, ...]
    base_rate: float = math.nan
    """Share of test rows with the favourable label (NaN when ``groups.csv`` is absent)."""
    majority: float = math.nan
    """Majority-class accuracy on the test rows (NaN when not in ``performance.csv``)."""
    rule: str = "threshold"
    """The audit's decision rule (``run.json`` ``decision.rule``)."""

    @property
    def balanced(self) -> bool:
        """Whether the audit's costs are in balanced accuracy."""
        return self.rule in BALANCED_RULES


def _rows(frame: pd.DataFrame, **where: str) -> pd.DataFrame:
    if frame.empty:
        return frame
    mask = np.logical_and.reduce([frame[k].astype(str) == v for k, v in where.items()])
    return frame[mask]


def _strategy(code: str, gaps: pd.DataFrame, effects: pd.DataFrame, *, metric: str,
              balanced: bool) -> StrategyFinding:
    """A strategy's finding from its gap rows and its effect rows against S0."""
    verdicts = tuple(str(v) for v in gaps["verdict"])
    informative = gaps[gaps["verdict"] != "uninformative"]
    open_ = informative[~informative["verdict"].isin(["parity"])]
    ref = no_gap(metric)
    bounds = (open_["gap_bound"].to_numpy(dtype=float) - ref) if "gap_bound" in open_ \
        else np.full(len(open_), np.nan)
    dist = effects[effects["metric"] == metric] if not effects.empty else effects
    cost = effects[effects["metric"] == ("balanced_accuracy" if balanced else "accuracy")] \
        if not effects.empty else effects
    return StrategyFinding(
        code=code, verdicts=verdicts,
        effects=tuple(str(v) for v in dist["verdict"]) if not dist.empty else (),
        effect=family_mean(_informative(dist)["value"]) if not dist.empty else math.nan,
        cost=family_mean(_informative(cost)["value"]) if not cost.empty else math.nan,
        bound=float(np.nanmax(np.abs(bounds))) if np.isfinite(bounds).any() else math.nan)


def _informative(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["verdict"] != "uninformative"] if "verdict" in frame else frame


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
        mine = _rows(gaps, audit=str(audit))
        attrs = ordered(mine["protected_attribute"], ()) if not mine.empty else []
        if not attrs:
            continue
        attr = attrs[0]
        rows = _rows(mine, protected_attribute=str(attr))
        rule = _rule(ctx.inputs.runs.get(str(audit), {}))
        found = {}
        for strategy in ordered(rows["strategy"], STRATEGIES):
            eff = _rows(effects, audit=str(audit), strategy=str(strategy),
                        protected_attribute=str(attr))
            found[strategy] = _strategy(strategy_code(strategy), _rows(rows, strategy=strategy),
                                        eff, metric=ctx.metric, balanced=rule in BALANCED_RULES)
        base = _rows(rows, strategy=BASELINE)
        rate, major = context.get(str(audit), (math.nan, math.nan))
        out.append(AuditFinding(
            audit=str(audit), attribute=str(attr),
            gap=family_mean(_informative(base)["value"]) if not base.empty else math.nan,
            baseline=found.get(BASELINE, StrategyFinding(strategy_code(BASELINE), ())),
            strategies=tuple(f for s, f in found.items() if s != BASELINE),
            base_rate=rate, majority=major, rule=rule))
    return tuple(out)


def _rule(run: Mapping[str, object]) -> str:
    decision = run.get("decision")
    rule = decision.get("rule") if isinstance(decision, Mapping) else None
    return str(rule) if rule else "threshold"


def _signed(x: float, digits: int = 2) -> str:
    """``+0.12``, ``−0.34`` (typographic minus); callers leave NaN out, ``n/a`` if not."""
    if not np.isfinite(x):
        return "n/a"
    text = num(x, digits)
    return text.replace("-", "\u2212") if text.startswith("-") else "+" + text


def _margin(metric: str, margins: Mapping[str, object]) -> str:
    """``±0.05`` (a difference) or ``[0.8, 1.25]`` (disparate impact), from the runs' config."""
    if no_gap(metric):
        ratio = margins.get("ratio", (0.8, 1.25))
        low, high = ratio if isinstance(ratio, Sequence) else (0.8, 1.25)
        return f"[{float(low):g}, {float(high):g}]"
    delta = margins.get("difference", 0.05)
    return f"\u00b1{float(delta) if isinstance(delta, int | float) else 0.05:g}"


def margins_of(ctx: Context) -> dict[str, object]:
    """The equivalence margins the runs record (``config.verdict_margin``, ``..._ratio_margin``;
    the params' defaults when absent)."""
    config: Mapping[str, object] = next(
        (r["config"] for r in ctx.inputs.runs.values() if isinstance(r.get("config"), Mapping)),
        {})
    ratio = config.get("verdict_ratio_margin", (0.8, 1.25))
    return {"difference": config.get("verdict_margin", 0.05),
            "ratio": tuple(ratio) if isinstance(ratio, Sequence) else (0.8, 1.25)}


def _costs(found: Sequence[tuple[AuditFinding, StrategyFinding]]) -> str:
    """``median Δ balanced accuracy −0.05 on 6 base_rate audits, majority-class accuracy
    0.55–0.91 and median Δ accuracy −0.01 on 2 threshold audits``."""
    parts = []
    for balanced, what, where in ((True, "balanced accuracy", "base_rate"),
                                  (False, "accuracy", "threshold")):
        values = [s.cost for f, s in found if f.balanced == balanced and np.isfinite(s.cost)]
        if not values:
            continue
        text = (f"median \u0394 {what} {_signed(float(np.median(values)))} on {len(values)} "
                f"{where} audit{'s' if len(values) != 1 else ''}")
        major = [f.majority for f, s in found if f.balanced == balanced and np.isfinite(s.cost)
                 and np.isfinite(f.majority)]
        if balanced and major:
            text += (f", majority-class accuracy {num(min(major), 2)}"
                     + (f"\u2013{num(max(major), 2)}" if max(major) > min(major) else ""))
        parts.append(text)
    return " and ".join(parts)


def _strategy_sentence(code: str, gapped: Sequence[AuditFinding], margin: str) -> str | None:
    found = [(f, s) for f in gapped for s in f.strategies if s.code == code]
    if not found:
        return None
    n = len(gapped)
    reduced = sum(s.reduces for _, s in found)
    parity = sum(s.parity for _, s in found)
    remains = [s for _, s in found if s.gaps > 0]
    useless = [s for _, s in found if s.informative == 0]
    others = [s for _, s in found if not s.parity and s.gaps == 0 and s.informative > 0]
    text = (f"{code} ({STRATEGY_TITLES[code]}) reduces it in every model family in {reduced} "
            f"of {n}; parity within {margin} is shown in {parity}")
    if remains:
        text += f"; a gap remains in {len(remains)}"
    bounds = [s.bound for s in others if np.isfinite(s.bound)]
    if others:
        text += f"; in the other {len(others)} " + (
            f"a gap of up to {num(max(bounds), 2)} cannot be excluded" if bounds
            else "neither a gap nor parity is shown")
    if useless:
        text += f"; uninformative in {len(useless)}"
    costs = _costs(found)
    return text + (f"; cost: {costs}" if costs else "")


def lead(items: Sequence[AuditFinding], *, metric: str, unavailable: int,
         margins: Mapping[str, object] | None = None) -> tuple[str, ...]:
    """The headline's sentences across audits (plain text, no markup)."""
    if not items:
        return ("No audit has results for this metric yet.",)
    margin = _margin(metric, margins or {})
    n = len(items)
    gapped = [f for f in items if f.baseline.gaps > 0]
    first = (f"{n} audit{'s' if n != 1 else ''} with results"
             + (f" ({unavailable} unavailable)" if unavailable else "") + f": S0 (baseline) "
             f"leaves a {metric} gap on the first protected attribute in {len(gapped)} of {n} "
             "(a gap shown in at least one model family).")
    sentences = [first]
    if gapped:
        parts = [p for p in (_strategy_sentence(s.code, gapped, margin)
                             for s in reversed(STRATEGY_TABLE[1:])) if p]
        if parts:
            sentences += ["Of those, " + parts[0] + ".", *(p + "." for p in parts[1:])]
    quiet = [f for f in items if f.baseline.gaps == 0]
    if quiet:
        described = []
        for f in quiet:
            b = f.baseline
            state = ("uninformative" if b.informative == 0 else
                     f"parity within {margin} shown" if b.parity else
                     f"a gap of up to {num(b.bound, 2)} not excluded" if np.isfinite(b.bound)
                     else "inconclusive")
            described.append(f"{f.audit} ({state})")
        sentences.append("S0 shows no gap on the first attribute in " + ", ".join(described)
                         + "; no gap shown is not parity unless the equivalence test says so.")
    return tuple(sentences)


def _state(s: StrategyFinding, margin: str, *, baseline: bool = False) -> str:
    """A strategy's verdicts over its families, in words."""
    if s.informative == 0:
        return "uninformative"
    if s.gaps:
        return (f"a gap {'shown' if baseline else 'remains'} ({s.gaps} of {s.informative})"
                + (f", parity in {s.parities}" if s.parities else ""))
    if s.parity:
        return f"parity within {margin} ({s.parities} of {s.informative})"
    bound = f": a gap up to {num(s.bound, 2)} not excluded" if np.isfinite(s.bound) else ""
    return f"inconclusive{bound}" + (f", parity in {s.parities}" if s.parities else "")


def audit_line(item: AuditFinding, *, margins: Mapping[str, object] | None = None,
               metric: str = Metric.DEMOGRAPHIC_PARITY.value) -> tuple[str, str]:
    """``(label, text)`` of one audit's line: S0's gap and base rates, then S1-S4."""
    margin = _margin(metric, margins or {})
    label = f"{item.audit} \u00b7 {item.attribute}"
    context = []
    if np.isfinite(item.base_rate):
        context.append(f"base rate {num(item.base_rate, 2)}")
    if np.isfinite(item.majority):
        context.append(f"majority-class accuracy {num(item.majority, 2)}")
    context.append(f"decides at {item.rule}")
    base = item.baseline
    head = (f"S0 gap {_signed(item.gap)}, {_state(base, margin, baseline=True)} "
            f"({'; '.join(context)}).")
    cost = "\u0394bal.acc" if item.balanced else "\u0394acc"
    parts = []
    for s in item.strategies:
        numbers = ", ".join(f"{what} {_signed(x)}" for what, x in
                            (("\u0394|gap|", s.effect), (cost, s.cost))
                            if np.isfinite(x))  # no effects.csv row: no number, no "n/a"
        reduced = sum(v == "reduced" for v in s.effects)
        shown = sum(v != "uninformative" for v in s.effects)
        change = f", reduced in {reduced} of {shown}" if shown else ""
        verdict = _state(s, margin) + change
        parts.append(f"{s.code} {numbers}: {verdict}" if numbers else f"{s.code}: {verdict}")
    return label, head + " " + "; ".join(parts) + "."
