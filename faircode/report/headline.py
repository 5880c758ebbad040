"""The report's finding in words: what each mitigation buys per audit, written from the verdicts.

:func:`findings` (:mod:`faircode.report.findings`) reads the shown gaps and paired effects of a
report and returns one :class:`AuditFinding` per audit with results; :func:`short_lead` turns
them into the first screen's lead (one sentence, then the counts as a short list), :func:`lead`
into the finding in full and :func:`audit_line` into each audit's line, each count built by a
small function of its own (:func:`direction_counts`, :func:`parity_count`, :func:`open_count`).
Nothing here is typed by hand: change a result and the sentence changes.

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
* **Every count has a direction.**  A gap shown is counted as against the disadvantaged group
  (below no gap: the sign convention) or favouring it, never as a bare "gap"
  (:func:`direction_counts`); equalized odds, a magnitude, has none.
* **The family beside the count.**  "Parity is shown in k" names the Benjamini-Hochberg family
  it was tested in -- for the pre-specified claims (``verdicts.claims``, the report metric) the
  claims of that sentence (:mod:`faircode.report.claims`) -- and, where it differs, the count
  with every equivalence test of each audit in one family (the conservative view,
  ``conservative_verdict``; :func:`parity_count`).
* **Out of reach is said.**  An inconclusive family whose interval is too wide for the margin at
  any estimate (note ``parity_not_reachable``) is counted as such (:func:`open_count`): its
  "inconclusive" is the data's size, not the gap.
* **One statistic with the heatmap.**  A number across model families is their mean over the
  informative families (:func:`faircode.report.inputs.family_mean`), the heatmap's statistic.
* **Costs on the audit's own objective.**  Where the audit decides at ``base_rate`` (or
  ``top_fraction``) -- S3/S4 then optimise balanced accuracy -- the cost is the change in
  balanced accuracy, with the majority-class accuracy beside; at a threshold, the change in
  accuracy (``effects.csv``'s ``balanced_accuracy`` and ``accuracy`` rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from faircode.core.cells import STRATEGY_TABLE, STRATEGY_TITLES
from faircode.core.metrics import Metric, no_gap
from faircode.report.findings import (
    BALANCED_RULES,
    AuditFinding,
    StrategyFinding,
    findings,
    margins_of,
)
from faircode.report.tables import num, signed

__all__ = ["AGAINST", "BALANCED_RULES", "FAVOURING", "AuditFinding", "StrategyFinding",
           "audit_line", "direction_counts", "findings", "lead", "margins_of", "open_count",
           "parity_count", "short_lead"]


def _signed(x: float, digits: int = 2) -> str:
    """``+0.12``, ``−0.34``, sign-aware (:func:`faircode.report.tables.signed`)."""
    return signed(x, digits)


def _margin(metric: str, margins: Mapping[str, object]) -> str:
    """``±0.05`` (a difference) or ``[0.8, 1.25]`` (disparate impact), from the runs' config."""
    if no_gap(metric):
        ratio = margins.get("ratio", (0.8, 1.25))
        low, high = ratio if isinstance(ratio, Sequence) else (0.8, 1.25)
        return f"[{float(low):g}, {float(high):g}]"
    delta = margins.get("difference", 0.05)
    return f"\u00b1{float(delta) if isinstance(delta, int | float) else 0.05:g}"


AGAINST = "against the disadvantaged group"
FAVOURING = "favouring it"
"""How a gap's direction reads (the sign convention: negative is the disadvantaged group worse
off, :doc:`docs/statistics.md`)."""


def direction_counts(found: Sequence[StrategyFinding]) -> str:
    """``against the disadvantaged group in 7, favouring it in 3`` over the strategies of
    ``found`` that show a gap (``, both ways across families in 1`` where families disagree);
    ``""`` without a gap or for a metric without a sign (equalized odds)."""
    shown = [s for s in found if s.gaps]
    if not shown or not any(d for s in shown for d in s.signs):
        return ""
    ways = [s.direction for s in shown]
    text = f"{AGAINST} in {ways.count('against')}, {FAVOURING} in {ways.count('favouring')}"
    return text + (f", both ways across families in {ways.count('both')}"
                   if "both" in ways else "")


def parity_count(found: Sequence[StrategyFinding], margin: str, *, claims: bool) -> str:
    """``parity within ±0.05 is shown in 7 (family: these 10 claims; 3 with all equivalence
    tests)``: the count of the sentence's claims that hold in their family
    (:mod:`faircode.report.claims`), the count with every equivalence test of each audit in one
    family beside it where it differs."""
    if not claims:
        n = sum(s.parity for s in found)
        return f"parity within {margin} is shown in {n} (family: all equivalence tests)"
    n = sum(s.claimed for s in found)
    wide = sum(s.conservative_parity for s in found)
    return (f"parity within {margin} is shown in {n} (family: these {len(found)} claims"
            + (f"; {wide} with all equivalence tests" if wide != n else "") + ")")


def open_count(others: Sequence[StrategyFinding], margin: str) -> str:
    """``in the other 7 a gap of up to 0.32 cannot be excluded (parity within ±0.05 out of
    reach at their size in 2)``: the largest bound across their families and audits."""
    if not others:
        return ""
    bounds = [s.bound for s in others if np.isfinite(s.bound)]
    text = f"in the other {len(others)} " + (
        f"a gap of up to {num(max(bounds), 2)} cannot be excluded" if bounds
        else "neither a gap nor parity is shown")
    far = sum(s.unreachable > 0 for s in others)
    return text + (f" (parity within {margin} out of reach at their size in {far})"
                   if far else "")


def _claims(items: Sequence[AuditFinding], metric: str,
            margins: Mapping[str, object]) -> bool:
    """Whether the verdicts shown are the pre-specified claims' family: the report metric is
    the runs' claims metric and the rows carry the audit-wide verdict beside."""
    return margins.get("claims") == metric and any(
        s.conservative for f in items for s in (f.baseline, *f.strategies))


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


def _strategy_sentence(code: str, gapped: Sequence[AuditFinding], margin: str, *,
                       claims: bool = False) -> str | None:
    found = [(f, s) for f in gapped for s in f.strategies if s.code == code]
    if not found:
        return None
    n = len(gapped)
    reduced = sum(s.reduces for _, s in found)
    remains = [s for _, s in found if s.gaps > 0]
    useless = [s for _, s in found if s.informative == 0]
    others = [s for _, s in found if not s.claimed and s.gaps == 0 and s.informative > 0]
    text = (f"{code} ({STRATEGY_TITLES[code]}) reduces it in every model family in {reduced} "
            f"of {n}; {parity_count([s for _, s in found], margin, claims=claims)}")
    if remains:
        way = direction_counts(remains)
        text += f"; a gap remains in {len(remains)}" + (f" ({way})" if way else "")
    if others:
        text += "; " + open_count(others, margin)
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
    claims = _claims(items, metric, margins or {})
    n = len(items)
    gapped = [f for f in items if f.baseline.gaps > 0]
    way = direction_counts([f.baseline for f in gapped])
    first = (f"{n} audit{'s' if n != 1 else ''} with results"
             + (f" ({unavailable} unavailable)" if unavailable else "") + f": S0 (baseline) "
             f"leaves a {metric} gap on the first protected attribute in {len(gapped)} of {n} "
             "(a gap shown in at least one model family)" + (f": {way}." if way else "."))
    sentences = [first]
    if gapped:
        parts = [p for p in (_strategy_sentence(s.code, gapped, margin, claims=claims)
                             for s in reversed(STRATEGY_TABLE[1:])) if p]
        if parts:
            sentences += ["Of those, " + parts[0] + ".", *(p + "." for p in parts[1:])]
    quiet = [f for f in items if f.baseline.gaps == 0]
    if quiet:
        sentences.append(_quiet_sentence(quiet, margin))
    return tuple(sentences)


def short_lead(items: Sequence[AuditFinding], *, metric: str,
               margins: Mapping[str, object] | None = None) -> tuple[str, tuple[str, ...]]:
    """The first screen's lead: the finding in one sentence (with the gaps' directions), then
    the counts as short items (per mitigated strategy, named by its code as in the legend
    beside it, then the audits without a gap); :func:`lead` is the finding in full (the
    unavailable audits are the page's scope line's)."""
    if not items:
        return "No audit has results for this metric yet.", ()
    margin = _margin(metric, margins or {})
    n, gapped = len(items), [f for f in items if f.baseline.gaps > 0]
    way = direction_counts([f.baseline for f in gapped])
    sentence = (f"S0 leaves a {metric} gap on the first protected attribute in {len(gapped)} of "
                f"{n} audit{'s' if n != 1 else ''}" + (f" ({way})" if way else "")
                + (f". Of those {len(gapped)}:" if gapped else "."))
    counts = [c for c in (_short_count(s.code, gapped, margin)
                          for s in reversed(STRATEGY_TABLE[1:])) if c]
    quiet = [f.audit for f in items if f.baseline.gaps == 0]
    if quiet:
        parity = sum(f.baseline.claimed for f in items if f.baseline.gaps == 0)
        counts.append(f"No S0 gap in {len(quiet)} ({', '.join(quiet)}), parity in {parity}")
    return sentence, tuple(counts)


def _short_count(code: str, gapped: Sequence[AuditFinding], margin: str) -> str:
    """``S3: reduced in 5, parity (±0.05) in 2, gap remains in 3, inconclusive in 1 (≤ 0.08)``
    (a zero count left out); ``""`` for a strategy no audit ran."""
    found = [s for f in gapped for s in f.strategies if s.code == code]
    if not found:
        return ""
    others = [s for s in found if not s.claimed and s.gaps == 0 and s.informative > 0]
    bounds = [s.bound for s in others if np.isfinite(s.bound)]
    parts = [f"reduced in {sum(s.reduces for s in found)}",
             f"parity ({margin}) in {sum(s.claimed for s in found)}",
             f"gap remains in {sum(s.gaps > 0 for s in found)}",
             f"inconclusive in {len(others)}"
             + (f" (\u2264 {num(max(bounds), 2)})" if bounds else ""),
             f"uninformative in {sum(s.informative == 0 for s in found)}"]
    return f"{code}: " + ", ".join(p for p in parts if not p.endswith(" in 0"))


def _quiet_sentence(quiet: Sequence[AuditFinding], margin: str) -> str:
    """The audits where S0 shows no gap, each with what its evidence does show."""
    described = []
    for f in quiet:
        b = f.baseline
        state = ("uninformative" if b.informative == 0 else
                 f"parity within {margin} shown" if b.claimed else
                 f"a gap of up to {num(b.bound, 2)} not excluded" if np.isfinite(b.bound)
                 else "inconclusive")
        if b.unreachable and not b.claimed:
            state += f"; parity within {margin} out of reach at its size"
        described.append(f"{f.audit} ({state})")
    return ("S0 shows no gap on the first attribute in " + ", ".join(described)
            + "; no gap shown is not parity unless the equivalence test says so.")


def _state(s: StrategyFinding, margin: str, *, baseline: bool = False) -> str:
    """A strategy's verdicts over its families, in words, a gap with its direction."""
    if s.informative == 0:
        return "uninformative"
    if s.gaps:
        way = {"against": f" {AGAINST}", "favouring": " favouring the disadvantaged group",
               "both": " in both directions"}.get(s.direction, "")
        return (f"a gap {'shown' if baseline else 'remains'}{way} ({s.gaps} of "
                f"{s.informative})" + (f", parity in {s.parities}" if s.parities else ""))
    if s.parity:
        return f"parity within {margin} ({s.parities} of {s.informative})"
    if s.claimed:  # the sentence's claim holds in its family, not every cell in the audit's
        return (f"parity within {margin} in every family as the headline's claim (q "
                f"{num(s.claim_q, 3)} among its sentence's claims; cell by cell "
                f"{s.parities} of {s.informative})")
    bound = f": a gap up to {num(s.bound, 2)} not excluded" if np.isfinite(s.bound) else ""
    far = (f"; parity within {margin} out of reach at this size ({s.unreachable} of "
           f"{s.informative})" if s.unreachable else "")
    return f"inconclusive{bound}" + (f", parity in {s.parities}" if s.parities else "") + far


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
