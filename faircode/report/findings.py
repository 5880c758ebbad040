"""The report's findings per audit: what each strategy's verdicts over the model families say.

:func:`findings` reads the shown gaps and paired effects of a report
(:class:`~faircode.report.tables.Context`, the same rows the tables print, with their
``verdict``) and returns one :class:`AuditFinding` per audit with results, each strategy's
:class:`StrategyFinding` -- its families' verdicts, directions, bounds, the conservative
verdicts and, for the pre-specified claims, the q of its headline claim in its sentence's
family (:mod:`faircode.report.claims`).  :mod:`faircode.report.headline` writes them as
sentences; nothing here is words.

Design decisions
----------------
* **The first protected attribute**: S3 and S4 mitigate it (their ``sensitive_features``).
* **One statistic with the heatmap**: a number across model families is their mean over the
  informative families (:func:`faircode.report.inputs.family_mean`).
* **Costs on the audit's own objective**: balanced accuracy where S3/S4 optimise it
  (``base_rate``, ``top_fraction``), accuracy at a threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from faircode.core.cells import STRATEGY_TABLE
from faircode.core.metrics import metric_info, no_gap
from faircode.report.claims import claim_p_value, claim_q_values
from faircode.report.inputs import (
    STRATEGIES,
    family_mean,
    notes_of,
    ordered,
    strategy_code,
    test_base_rates,
)
from faircode.report.tables import Context
from faircode.stats.verdicts import UNREACHABLE_NOTE

__all__ = ["BALANCED_RULES", "AuditFinding", "StrategyFinding", "findings", "margins_of"]

BASELINE = STRATEGIES[0]
BASELINE_CODE = strategy_code(BASELINE)
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
    signs: tuple[int, ...] = ()
    """Each family's direction: -1 a gap against the disadvantaged group (below no gap), +1 one
    favouring it, 0 none (no gap, an undefined value, or a magnitude without a sign)."""
    conservative: tuple[str, ...] = ()
    """Each family's verdict with every equivalence test of the audit in one family
    (``conservative_verdict``; empty for results written before it)."""
    unreachable: int = 0
    """Inconclusive families whose interval is too wide for the margin at any estimate
    (note ``parity_not_reachable``)."""
    p_parity: tuple[float, ...] = ()
    """Each family's equivalence p-value (``fairness.csv`` ``equivalence_p_value``)."""
    claim_q: float = math.nan
    """The q of its headline claim in the family of its sentence (:mod:`faircode.report.claims`;
    NaN where it makes no pre-specified claim)."""
    alpha: float = 0.05

    @property
    def claimed(self) -> bool:
        """Its headline claim, parity in every informative family, holds in its family (the
        cells' own verdicts where no claim was tested)."""
        if not np.isfinite(self.claim_q):
            return self.parity
        return self.claim_q < self.alpha and self.gaps == 0

    @property
    def direction(self) -> str:
        """Where the families showing a gap point: ``against`` (the disadvantaged group worse
        off), ``favouring``, ``both`` (families disagree) or ``""`` (no gap, or no sign)."""
        found = {d for v, d in zip(self.verdicts, self.signs, strict=False)
                 if v == "gap" and d}
        return ("both" if len(found) > 1 else "against" if found == {-1} else
                "favouring" if found == {1} else "")

    @property
    def conservative_parity(self) -> bool:
        """Parity in every informative family over all the audit's equivalence tests."""
        shown = self.conservative or self.verdicts
        informative = [v for v in shown if v != "uninformative"]
        return bool(informative) and all(v == "parity" for v in informative)

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
        bound=float(np.nanmax(np.abs(bounds))) if np.isfinite(bounds).any() else math.nan,
        signs=_signs(gaps, metric), conservative=tuple(
            str(v) for v in gaps["conservative_verdict"].fillna("")
        ) if "conservative_verdict" in gaps and gaps["conservative_verdict"].notna().all()
        else (),
        unreachable=int(sum(UNREACHABLE_NOTE in notes_of(n) for n in open_.get(
            "note", pd.Series(dtype=str)))),
        p_parity=tuple(gaps["equivalence_p_value"].to_numpy(dtype=float))
        if "equivalence_p_value" in gaps else ())


def _signs(gaps: pd.DataFrame, metric: str) -> tuple[int, ...]:
    """Each row's direction (:attr:`StrategyFinding.signs`): none for a magnitude."""
    if metric_info(metric).scale not in ("difference", "ratio"):  # no sign
        return (0,) * len(gaps)
    side = np.sign(gaps["value"].to_numpy(dtype=float) - no_gap(metric))
    return tuple(int(x) if np.isfinite(x) else 0 for x in side)


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
    claims = margins_of(ctx).get("claims") == ctx.metric
    return _with_claims(tuple(out), alpha=ctx.alpha) if claims else tuple(out)


def _with_claims(items: tuple[AuditFinding, ...], *, alpha: float) -> tuple[AuditFinding, ...]:
    """``items`` with each strategy's headline claim tested in its sentence's family
    (:mod:`faircode.report.claims`): S1-S4 over the audits where S0 leaves a gap, S0 over the
    others."""
    q: dict[tuple[str, str], float] = {}
    for code in (s.code for s in STRATEGY_TABLE):
        p = {f.audit: claim_p_value(s.p_parity, s.verdicts)
             for f in items if (f.baseline.gaps > 0) != (code == BASELINE_CODE)
             for s in (f.baseline, *f.strategies) if s.code == code and s.p_parity}
        q.update({(a, code): v for a, v in claim_q_values(p).items()})

    def tested(f: AuditFinding, s: StrategyFinding) -> StrategyFinding:
        return replace(s, claim_q=q.get((f.audit, s.code), math.nan), alpha=alpha)

    return tuple(replace(f, baseline=tested(f, f.baseline),
                         strategies=tuple(tested(f, s) for s in f.strategies)) for f in items)


def _rule(run: Mapping[str, object]) -> str:
    decision = run.get("decision")
    rule = decision.get("rule") if isinstance(decision, Mapping) else None
    return str(rule) if rule else "threshold"


def margins_of(ctx: Context) -> dict[str, object]:
    """The equivalence margins the runs record (``config.verdict_margin``, ``..._ratio_margin``;
    the params' defaults when absent) and the metric of the pre-specified claims
    (``config.verdict_claims``; None for results written before the claims' family)."""
    config: Mapping[str, object] = next(
        (r["config"] for r in ctx.inputs.runs.values() if isinstance(r.get("config"), Mapping)),
        {})
    ratio = config.get("verdict_ratio_margin", (0.8, 1.25))
    return {"difference": config.get("verdict_margin", 0.05),
            "ratio": tuple(ratio) if isinstance(ratio, Sequence) else (0.8, 1.25),
            "claims": config.get("verdict_claims")}
