"""The evaluate step of the grid: decisions and predictions in, the four result tables out.

:func:`evaluate_audit` scores each cell of an :class:`~faircode.grid.predictions.AuditPredictions`
(from :func:`faircode.grid.fit.fit_audit`, in memory or loaded from ``data/predictions/``) with

* the six group-fairness metrics for every protected attribute (bootstrap CI + permutation p),
* accuracy / AUC / F1 with CIs,
* the intersectional demographic-parity gap for every pair of attributes,
* the counterfactual flip rate of every manifest axis (explicit and proxy channels apart).

With training replicates (``run.seeds`` > 1, :mod:`faircode.evaluate.stability`) every replicate is
scored the same way with its own master seed and summarised in ``stability.csv``.

The audit's operating point (:mod:`faircode.audit.decision`) is resolved here: the manifest's
``decision`` block, else ``threshold`` at ``config.decision_threshold``; S0-S2 decide at the rule's
cutoff, fixed on the training rows, and S3/S4 keep the randomised decisions drawn at fit time
(fitted with the rule's objective).  Every cell's selection rate (overall and per group),
balanced accuracy and majority baseline join ``performance.csv``; a degenerate cell's fairness
rows carry the note ``degenerate_decisions``.  Labels and decisions are oriented once by the
manifest's ``target.favourable`` (:func:`faircode.stats.metrics.orient`) before any group metric.
Benjamini-Hochberg q-values are computed across every fairness test of the audit
(:func:`faircode.stats.metrics.audit_q_values`: each per-attribute null once, the intersectional
gaps
and interactions), and ``significant`` is ``q < alpha``.  :func:`write_audit` writes
``<out>/<audit>/`` (four CSVs + ``run.json``).

Every statistic draws from the child stream of its grid position (:class:`Stream`), so the
numbers do not depend on ``jobs`` or on whether the fit ran in this process.

Repeated units: when the audit declares ``dataset.unit`` (``data.unit``) and a unit has several
test rows, the test rows' unit ids are passed to every metric (``units=``): fairness p-values
exchange labels between units, intervals are taken at design-effect-deflated effective sizes,
the performance bootstrap resamples units and flip rates use Clopper–Pearson at the effective
size (:mod:`faircode.stats.metrics`, :mod:`faircode.stats.flips`).  ``design_effect`` (a column of
``fairness.csv``, ``intersectional.csv`` and ``counterfactual.csv``; per metric summarised in
``run.json``) is 1.0 without a unit and with one row per unit (rows are then the independent
units, the design effect is 1 by definition), where every other number is bit-identical to the
unit-free path.  ``mde``/``powered``/``mde_note``
(:func:`faircode.stats.power.detectable_gap` at ``config.alpha`` and ``config.power``) are computed
for every fairness row and every intersectional DD-vs-AA gap, at effective counts (each count
divided by ``max(1, design_effect)``, rounded) when units repeat.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from faircode.audit.decision import decision_cutoff, resolve_rule
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import ModelFamily, Strategy
from faircode.core.config import BenchmarkConfig
from faircode.core.seeds import Stream, child_seed
from faircode.grid.predictions import CellPredictions
from faircode.stats import clusters
from faircode.stats.flips import flip_rates
from faircode.stats.metrics import (
    fairness_metrics,
    intersectional_gap,
    orient,
    performance_metrics,
)
from faircode.stats.operating import DEGENERATE_NOTE, is_degenerate, operating_point_metrics
from faircode.stats.power import detectable_gap
from faircode.stats.resampling import confusion_counts

__all__ = [
    "CellResult",
]


@dataclass(frozen=True, slots=True)
class CellResult:
    """Every row one strategy x model cell contributes, and where its time went."""

    strategy: Strategy
    family: ModelFamily
    fairness: tuple[dict[str, Any], ...] = ()
    performance: tuple[dict[str, Any], ...] = ()
    intersectional: tuple[dict[str, Any], ...] = ()
    counterfactual: tuple[dict[str, Any], ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)
    skipped: str = ""
    degenerate: bool = False
    decision: dict[str, Any] = field(default_factory=dict)


def _score_cell(data: PreparedAudit, cell: CellPredictions, config: BenchmarkConfig, *,
                master: int | None = None) -> CellResult:
    """Score one cell's predictions (runs in a worker process).

    ``master`` seeds every statistic (default the manifest's ``random_state``; a training
    replicate passes its own, :mod:`faircode.evaluate.stability`).
    """
    strategy, family = cell.strategy, cell.family
    if cell.skipped:
        return CellResult(strategy, family, seconds=dict(cell.seconds), skipped=cell.skipped)
    manifest = data.manifest
    master = manifest.random_state if master is None else master
    s, m = list(Strategy).index(strategy), list(ModelFamily).index(family)
    test = data.test_index
    y_test = data.y[test]
    # The audit's operating point, fixed on the training rows (S0-S2; S3/S4 keep their draws).
    rule = resolve_rule(manifest.decision, default_threshold=config.decision_threshold)
    cutoff = decision_cutoff(
        rule, train_scores=cell.train_score if rule.rule == "top_fraction" else None,
        train_labels=data.y[data.train_index])
    y_pred, flipped = cell.decisions(cutoff)
    y_score = cell.test_score
    # every group metric counts the favourable outcome (negative = disadvantaged worse off)
    y_fav, yhat_fav = orient(y_test, y_pred, favourable=manifest.target.favourable)

    t2 = time.perf_counter()
    label = {"strategy": strategy.value, "model": family.value}
    attributes = manifest.protected_attributes
    points = operating_point_metrics(
        y_test, y_pred, {a.name: data.disadvantaged[a.name][test] for a in attributes},
        n_resamples=config.n_resamples, confidence=config.confidence,
        seed=child_seed(master, Stream.DECISIONS, s, m),
    )
    point = {p.metric: p.value for p in points if not p.protected_attribute}
    degenerate = is_degenerate(
        selection_rate=point["selection_rate"], balanced_accuracy=point["balanced_accuracy"],
        min_selection_rate=config.degenerate_min_selection_rate,
        max_selection_rate=config.degenerate_max_selection_rate,
        balanced_accuracy_margin=config.degenerate_balanced_accuracy_margin,
    )
    decision = {**rule.as_dict(), "objective": cell.objective,
                "selection_rate": point["selection_rate"],
                "balanced_accuracy": point["balanced_accuracy"], "degenerate": degenerate}
    if cell.test_decision is None:
        decision.update(cutoff=cutoff.value, inclusive=cutoff.inclusive)
    units = None if data.unit is None else data.unit[test]
    fairness: list[dict[str, Any]] = []
    for a, attribute in enumerate(attributes):
        mask = data.disadvantaged[attribute.name][test]
        counts_d = confusion_counts(y_fav[mask], yhat_fav[mask])
        counts_a = confusion_counts(y_fav[~mask], yhat_fav[~mask])
        for result in fairness_metrics(
            y_fav, yhat_fav, mask,
            n_permutations=config.n_permutations,
            confidence=config.confidence, seed=child_seed(master, Stream.FAIRNESS, s, m, a),
            units=units, n_resamples=config.n_resamples,
        ):
            row = {**label, "protected_attribute": attribute.name,
                   **dataclasses.asdict(result),
                   **_mde(result.metric, counts_d, counts_a, value=result.value,
                          design_effect=result.design_effect, config=config)}
            if degenerate:
                row["note"] = ";".join(n for n in (row["note"], DEGENERATE_NOTE) if n)
            fairness.append(row)
    performance = [
        {**label, **dataclasses.asdict(result)}
        for result in performance_metrics(
            y_test, y_pred, y_score, n_resamples=config.n_resamples,
            confidence=config.confidence, seed=child_seed(master, Stream.PERFORMANCE, s, m),
            units=units,
        )
    ] + [{**label, **dataclasses.asdict(p)} for p in points]
    intersectional: list[dict[str, Any]] = []
    for p, (a, b) in enumerate(itertools.combinations(range(len(attributes)), 2)):
        pair = intersectional_gap(
            yhat_fav, data.disadvantaged[attributes[a].name][test],
            data.disadvantaged[attributes[b].name][test], n_permutations=config.n_permutations,
            confidence=config.confidence, seed=child_seed(master, Stream.INTERSECTIONAL, s, m, p),
            units=units, n_resamples=config.n_resamples,
        )
        intersectional.append({**label, "attribute_a": attributes[a].name,
                               "attribute_b": attributes[b].name, **dataclasses.asdict(pair),
                               **_mde("demographic_parity_diff",
                                      _rate_counts(pair.n_dd, pair.rate_dd),
                                      _rate_counts(pair.n_aa, pair.rate_aa),
                                      value=pair.gap, design_effect=pair.design_effect,
                                      config=config)})
    t3 = time.perf_counter()

    counterfactual: list[dict[str, Any]] = []
    for rows, y_flip in zip(data.perturbed, flipped, strict=True):
        flips = flip_rates(
            y_pred, y_flip, rows.changed, axis=rows.axis, kind=rows.kind,
            favourable=manifest.target.favourable, confidence=config.confidence, units=units,
        )
        record = dataclasses.asdict(flips)
        record["kind"] = flips.kind.value
        counterfactual.append({**label, "columns": " ".join(rows.columns), **record})
    t4 = time.perf_counter()
    fit = cell.seconds
    return CellResult(
        strategy, family, tuple(fairness), tuple(performance), tuple(intersectional),
        tuple(counterfactual),
        seconds={"fit": fit.get("fit", 0.0), "predict": fit.get("predict", 0.0),
                 "statistics": t3 - t2,
                 "counterfactual": fit.get("counterfactual", 0.0) + t4 - t3},
        degenerate=degenerate, decision=decision,
    )


def _mde(
    metric: str,
    counts_d: np.ndarray,
    counts_a: np.ndarray,
    *,
    value: float,
    design_effect: float,
    config: BenchmarkConfig,
) -> dict[str, Any]:
    """``mde``, ``powered``, ``mde_note`` of one comparison, at effective counts with units."""
    factor = clusters.deflation(design_effect)
    if factor != 1.0:  # Kish's effective sizes (power.py takes integer counts: rounded)
        counts_d = np.rint(counts_d / factor).astype(np.int64)
        counts_a = np.rint(counts_a / factor).astype(np.int64)
    found = detectable_gap(metric, counts_d, counts_a, value=value, alpha=config.alpha,
                           power=config.power)
    return {"mde": found.mde, "powered": found.powered, "mde_note": found.note}


def _rate_counts(n: int, rate: float) -> np.ndarray:
    """A cell's favourable decisions as (TN, FP, 0, 0) counts, from its size and rate."""
    positives = round(rate * n) if n else 0
    return np.array([n - positives, positives, 0, 0], dtype=np.int64)


