"""Scoring a row set from its counts: a :class:`~faircode.stats.tally.Tally` in, its table rows out.

Every statistic of a row set's rows in the audit tables -- the fairness metrics with intervals,
permutation p-values and minimum detectable gaps, performance and operating-point numbers, the
intersectional gaps, the per-group table and calibration by group -- is computed here from the
row set's :class:`~faircode.stats.tally.Tally`, through the count-level functions of
:mod:`faircode.stats` (``fairness_from_counts``, ``performance_from_counts``,
``operating_from_counts``, ``intersectional_from_counts``, ``group_rates_from_counts``,
``calibration_from_counts``, ``gap_from_counts``).  It is the one path: a grid cell's test
decisions (:func:`faircode.evaluate.score.score_decided` tallies its arrays), a deployed
system's, and a decision log counted chunk by chunk or shard by shard
(:mod:`faircode.evaluate.streamed`) all arrive here as counts, so a log gives the bytes its
in-memory audit gives, and a column added to those functions reaches every path.

Seeds are by position exactly as :mod:`faircode.evaluate.score` states them (``child_seed(master,
Stream.<kind>, s, m, ...)``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from faircode.audit.decision import Cutoff, DecisionRule
from faircode.audit.manifest import ProtectedAttribute
from faircode.core.config import DegenerateConfig, StatsConfig
from faircode.core.metrics import Metric, table_of
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.detail import (
    bin_counts,
    calibration_gap_rows,
    calibration_rows,
    group_rows,
)
from faircode.stats import clusters
from faircode.stats.exact import monte_carlo_draws, smallest_q
from faircode.stats.metrics import (
    fairness_from_counts,
    intersectional_from_counts,
    performance_from_counts,
)
from faircode.stats.operating import DEGENERATE_NOTE, is_degenerate, operating_from_counts
from faircode.stats.power import detectable_gaps
from faircode.stats.score_table import auc_from_table
from faircode.stats.tally import Tally

__all__ = ["CountedRows", "family_tests", "p_value_record", "permutations", "score_counts"]


@dataclass(frozen=True, slots=True)
class CountedRows:
    """The table rows of one row set (records), whether it is degenerate, its decision record."""

    fairness: list[dict[str, Any]]
    performance: list[dict[str, Any]]
    intersectional: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    calibration: list[dict[str, Any]]
    calibration_gap: list[dict[str, Any]]
    degenerate: bool
    decision: dict[str, Any]


def score_counts(
    tally: Tally,
    attributes: Sequence[ProtectedAttribute],
    *,
    favourable: int,
    label: Mapping[str, str],
    key: tuple[int, int],
    rule: DecisionRule | None,
    objective: str,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    master: int,
    cutoff: Cutoff | None = None,
    row_set: str = "test",
    detail: bool = True,
    outcome: bool = False,
    positive: str = "",
    row_sets: int = 1,
) -> CountedRows:
    """Every table row of the row set counted in ``tally`` (``attributes`` in its order).

    ``label`` is the rows' strategy and model, ``key`` its seed position, ``rule``/``objective``/
    ``cutoff`` what ``run.json`` records of its decisions; with ``detail`` also the per-group
    table (``positive``: what label 1 is) and, when the tally has binned scores, calibration by
    group.  ``outcome``: the decisions are the recorded outcome (no ground truth), so the
    degenerate check reads the selection rate only and the record has no balanced accuracy.
    ``row_sets``: the row sets whose tests share this one's Benjamini-Hochberg family (the grid's
    cells and a deployed system), which sets the Monte-Carlo draws (:func:`permutations`).
    """
    draws = permutations(stats, attributes=len(attributes), row_sets=row_sets)
    if tuple(a.name for a in attributes) != tally.attributes:
        raise ValueError(f"attributes: expected {tally.attributes}, got "
                         f"{tuple(a.name for a in attributes)}")
    points, flagged, record = _operating_point(
        tally, rule=rule, objective=objective, stats=stats, degenerate=degenerate,
        seed=child_seed(master, Stream.DECISIONS, *key), cutoff=cutoff, outcome=outcome)
    fairness = _fairness_rows(tally, label, favourable=favourable, stats=stats, master=master,
                              key=key, degenerate=flagged, draws=draws)
    performance = [{**label, **dataclasses.asdict(r)} for r in _performance(
        tally, stats=stats, seed=child_seed(master, Stream.PERFORMANCE, *key))]
    performance += [{**label, **dataclasses.asdict(p)} for p in points]
    intersectional = _intersectional_rows(tally, label, favourable=favourable, stats=stats,
                                          master=master, key=key, draws=draws)
    _add_power(fairness, intersectional, stats=stats)
    groups: list[dict[str, Any]] = []
    calibration: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    if detail:
        groups = group_rows(tally, attributes, label, row_set=row_set,
                            confidence=stats.confidence, positive=positive)
        if tally.bins is not None:
            binned = bin_counts(tally)  # the score table read once for both tables
            calibration = calibration_rows(tally, attributes, label, row_set=row_set,
                                           confidence=stats.confidence, counted=binned)
            gaps = calibration_gap_rows(tally, attributes, label, row_set=row_set, stats=stats,
                                        master=master, key=key, counted=binned)
    return CountedRows(fairness, performance, intersectional, groups, calibration, gaps,
                       flagged, record)


def family_tests(attributes: int, row_sets: int = 1) -> int:
    """The tests of an audit's Benjamini-Hochberg family over ``row_sets`` row sets on
    ``attributes`` protected attributes, at most: per row set and attribute each fairness
    metric of a binary audit with its own null (:func:`~faircode.core.metrics.table_of`), per
    pair of attributes the intersectional gap and the interaction."""
    own = sum(m.same_null is None for m in table_of("binary"))
    return max(1, row_sets * (attributes * own + attributes * (attributes - 1)))


def permutations(stats: StatsConfig, *, attributes: int, row_sets: int = 1) -> int:
    """The draws of the Monte-Carlo tests of the family (:func:`family_tests`): the
    cluster permutations where units repeat and the interaction's null simulation
    (:func:`faircode.stats.exact.monte_carlo_draws`: ``stats.n_permutations``, raised until the
    smallest attainable q is at most ``alpha / 2``).  Row-level tests are exact and draw none."""
    return monte_carlo_draws(stats.n_permutations, tests=family_tests(attributes, row_sets),
                             alpha=stats.alpha)


def p_value_record(stats: StatsConfig, *, attributes: int, row_sets: int) -> dict[str, Any]:
    """``run.json``'s ``tests``: which tests are exact, the Monte-Carlo draws and the smallest
    q they can reach in the audit's family."""
    tests = family_tests(attributes, row_sets)
    draws = permutations(stats, attributes=attributes, row_sets=row_sets)
    return {
        "exact": "row-level permutation tests of every count metric and of the intersectional "
                 "gap: exact conditional p-values (hypergeometric; equalized odds a product of "
                 "two), no draws",
        "monte_carlo": "cluster permutations where units repeat; the interaction's null "
                       "simulation",
        "family_tests": tests, "configured_permutations": stats.n_permutations,
        "permutations": draws, "smallest_q": smallest_q(draws, tests=tests),
        "rule": "permutations = max(stats.n_permutations, ceil(2 * family_tests / alpha) - 1): "
                "a Monte-Carlo test alone at its floor 1/(P + 1) reaches q <= alpha / 2",
    }


def _operating_point(
    tally: Tally, *, rule: DecisionRule | None, objective: str, stats: StatsConfig,
    degenerate: DegenerateConfig, seed: np.random.SeedSequence, cutoff: Cutoff | None,
    outcome: bool = False,
) -> tuple[tuple[Any, ...], bool, dict[str, Any]]:
    """The operating-point numbers, whether the decisions are degenerate, and the record of
    the decision for ``run.json``."""
    sizes: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    for a, name in enumerate(tally.attributes):
        d, adv = tally.counts(tally.group_fold(a, favourable=None))
        sizes[name] = ((int(d.sum()), int(d[1] + d[3])), (int(adv.sum()), int(adv[1] + adv[3])))
    points = operating_from_counts(tally.counts(tally.overall_fold())[0], sizes,
                                   n_resamples=stats.n_resamples, confidence=stats.confidence,
                                   seed=seed)
    point = {p.metric: p.value for p in points if not p.protected_attribute}
    balanced = None if outcome else point["balanced_accuracy"]  # no ground truth
    flagged = is_degenerate(
        selection_rate=point["selection_rate"], balanced_accuracy=balanced,
        min_selection_rate=degenerate.min_selection_rate,
        max_selection_rate=degenerate.max_selection_rate,
        balanced_accuracy_margin=degenerate.balanced_accuracy_margin,
    )
    record = {**(rule.as_dict() if rule is not None else {"rule": "given"}),
              "objective": objective,
              "selection_rate": point["selection_rate"],
              "balanced_accuracy": balanced, "degenerate": flagged}
    if cutoff is not None:
        record.update(cutoff=cutoff.value, inclusive=cutoff.inclusive)
    return points, flagged, record


def _performance(tally: Tally, *, stats: StatsConfig,
                 seed: np.random.SeedSequence) -> tuple[Any, ...]:
    """Accuracy, AUC and F1 of the whole set (label coding)."""
    overall = tally.overall_fold()
    auc = None
    if tally.scores is not None:
        labels = np.tile(np.array([0, 1], dtype=np.int64), tally.n_groups)
        auc = auc_from_table(tally.scores, labels)
    return performance_from_counts(tally.counts(overall)[0], tally.types(overall, 1), auc,
                                   n_resamples=stats.n_resamples, confidence=stats.confidence,
                                   seed=seed)


def _fairness_rows(
    tally: Tally, label: Mapping[str, str], *, favourable: int, stats: StatsConfig,
    master: int, key: tuple[int, int], degenerate: bool, draws: int,
) -> list[dict[str, Any]]:
    """Every fairness metric of every protected attribute (``_counts_d``/``_counts_a`` are the
    groups' oriented counts, taken off again by :func:`_add_power`); ``draws`` Monte-Carlo
    permutations where units repeat."""
    rows: list[dict[str, Any]] = []
    for a, name in enumerate(tally.attributes):
        fold = tally.group_fold(a, favourable=favourable)
        counts_d, counts_a = tally.counts(fold)
        for result in fairness_from_counts(
            counts_d, counts_a, tally.types(fold, 2), n_permutations=draws,
            confidence=stats.confidence, seed=child_seed(master, Stream.FAIRNESS, *key, a),
            n_resamples=stats.n_resamples,
        ):
            row = {**label, "protected_attribute": name, **dataclasses.asdict(result),
                   "_counts_d": counts_d, "_counts_a": counts_a}
            if degenerate:
                row["note"] = ";".join(n for n in (row["note"], DEGENERATE_NOTE) if n)
            rows.append(row)
    return rows


def _intersectional_rows(
    tally: Tally, label: Mapping[str, str], *, favourable: int, stats: StatsConfig,
    master: int, key: tuple[int, int], draws: int,
) -> list[dict[str, Any]]:
    """The intersectional gap of every pair of protected attributes (``draws``: the Monte-Carlo
    draws of its tests that are not exact)."""
    rows: list[dict[str, Any]] = []
    pairs = itertools.combinations(range(len(tally.attributes)), 2)
    for p, (a, b) in enumerate(pairs):
        four_fold = tally.pair_fold(a, b, favourable=favourable, only_corners=False)
        corner_fold = tally.pair_fold(a, b, favourable=favourable, only_corners=True)
        cells = tally.counts(four_fold)
        pair = intersectional_from_counts(
            dict(zip(("dd", "da", "ad", "aa"), cells, strict=True)),
            tally.types(four_fold, 4), tally.types(corner_fold, 2),
            n_permutations=draws, confidence=stats.confidence,
            seed=child_seed(master, Stream.INTERSECTIONAL, *key, p),
            n_resamples=stats.n_resamples,
        )
        rows.append({**label, "attribute_a": tally.attributes[a],
                     "attribute_b": tally.attributes[b], **dataclasses.asdict(pair),
                     "_counts_d": _rate_counts(pair.n_dd, pair.rate_dd),
                     "_counts_a": _rate_counts(pair.n_aa, pair.rate_aa)})
    return rows


def _add_power(fairness: list[dict[str, Any]], intersectional: list[dict[str, Any]], *,
               stats: StatsConfig) -> None:
    """``mde``, ``powered``, ``mde_note`` of every comparison, in one batched call."""
    rows = [*fairness, *intersectional]
    if not rows:
        return
    metrics = [r["metric"] for r in fairness] + [Metric.DEMOGRAPHIC_PARITY.value] * len(
        intersectional)  # an intersectional gap is a parity gap
    values = [r["value"] for r in fairness] + [r["gap"] for r in intersectional]
    counts_d, counts_a = [], []
    for row in rows:
        d, a = row.pop("_counts_d"), row.pop("_counts_a")
        factor = clusters.deflation(row["design_effect"])
        if factor != 1.0:  # Kish's effective sizes (power.py takes integer counts: rounded)
            d, a = np.rint(d / factor).astype(np.int64), np.rint(a / factor).astype(np.int64)
        counts_d.append(d)
        counts_a.append(a)
    mde, powered, note = detectable_gaps(metrics, np.stack(counts_d), np.stack(counts_a),
                                         values=np.asarray(values, dtype=float),
                                         alpha=stats.alpha, power=stats.power)
    for row, m, ok, why in zip(rows, mde, powered, note, strict=True):
        row.update(mde=float(m), powered=bool(ok), mde_note=str(why))


def _rate_counts(n: int, rate: float) -> np.ndarray:
    """A cell's favourable decisions as (TN, FP, 0, 0) counts, from its size and rate."""
    positives = round(rate * n) if n else 0
    return np.array([n - positives, positives, 0, 0], dtype=np.int64)
