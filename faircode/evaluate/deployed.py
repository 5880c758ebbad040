"""Auditing decisions no one here trained: a deployed system's, or a practitioner's own model's.

A manifest's ``system:`` block declares a deployed system's decision (and score) as columns of
the raw data (:class:`faircode.audit.outputs.SystemOutputs`); a predictions file or arrays give
another model's.  Either is scored by the grid's own scorer
(:func:`faircode.evaluate.score.score_decided`) -- the same fairness metrics with intervals,
permutation p-values, minimum detectable gaps, performance and operating-point numbers, the
intersectional table, the per-group table and calibration by group -- and nothing is trained.

* :func:`score_system_test_rows`: on the grid's test rows, one more row set of the main tables
  (strategy ``deployed``), so S0-S4 are compared with the tool actually in use on the same
  people, inside the audit's one BH family.
* :func:`score_system_all_rows`: on every row of the audit (no split), its own tables and BH
  family -- the replication of a published audit (``results/<audit>/deployed/``).
* :func:`score_given`: another model's decisions (a predictions file joined on a key, or arrays
  in a notebook: :func:`faircode.pipeline.run.audit_decisions`), scored exactly like the
  deployed system on every row, so both give the same tables on the same decisions.
* A system with a score also gets the ranking view of it (:func:`ranked`,
  :mod:`faircode.evaluate.ranking`).

Design decisions
----------------
* A system's seed position is ``(5, 0)``: one past the explicit keys of S0-S4 (0-4); every
  later strategy's key is name-derived (at least :data:`faircode.core.seeds.NAMED`), so its
  streams never meet a cell's and a new strategy moves none of them.
* A system has no counterfactual predictions (its decisions are data, not a function faircode
  can call again), so its row sets are scored without counterfactual sets.
"""

from __future__ import annotations

import dataclasses
from typing import cast

import numpy as np

from faircode.audit.manifest import ScoreScale
from faircode.audit.outputs import SystemOutputs
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import STRATEGY_TABLE
from faircode.core.config import DegenerateConfig, StatsConfig, VerdictsConfig
from faircode.core.seeds import NAMED
from faircode.evaluate.claims import gap_claims_table
from faircode.evaluate.ranking import ranked_cells, ranking_tables
from faircode.evaluate.score import CellResult, Decided, grid_row_sets, score_decided
from faircode.evaluate.tables import AuditResults, assemble
from faircode.stats.metrics import orient

__all__ = ["DEPLOYED", "SYSTEM_KEY", "all_rows", "claimed", "ranked", "score_given",
           "score_outputs", "score_system_all_rows", "score_system_test_rows"]

DEPLOYED = "deployed"
"""The strategy name of a deployed system's (or an external model's) row set."""

SYSTEM_KEY = (1 + max(s.key for s in STRATEGY_TABLE if s.key < NAMED), 0)
"""A system's seed position (past every explicit strategy key: ``(5, 0)``)."""


def score_outputs(
    data: PreparedAudit,
    outputs: SystemOutputs,
    *,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    row_set: str,
    strategy: str = DEPLOYED,
    row_sets: int = 1,
) -> CellResult:
    """Score ``outputs`` (aligned with ``data``'s rows) on ``data``'s test rows (``row_sets``:
    the row sets of the Benjamini-Hochberg family it joins, :func:`score_decided`)."""
    test = data.test_index
    given = outputs.take(test)
    y_fav, yhat_fav = orient(data.y[test], given.decision,
                             favourable=data.manifest.target.favourable)
    decided = Decided(given.decision, y_fav, yhat_fav, (), score=given.score,
                      outcome=outputs.outcome)
    view = dataclasses.replace(data, perturbed=())
    return score_decided(
        view, decided, strategy=strategy, family=outputs.name, key=SYSTEM_KEY, rule=None,
        objective=f"given ({outputs.rule})" if outputs.rule else "given", stats=stats,
        degenerate=degenerate, master=data.manifest.random_state, scale=given.scale,
        row_set=row_set, row_sets=row_sets)


def score_system_test_rows(data: PreparedAudit, *, stats: StatsConfig,
                           degenerate: DegenerateConfig) -> CellResult | None:
    """The audit's deployed system on the grid's test rows (None without a system)."""
    if data.system is None:
        return None
    return score_outputs(data, data.system, stats=stats, degenerate=degenerate, row_set="test",
                         row_sets=grid_row_sets(data))


def all_rows(data: PreparedAudit) -> PreparedAudit:
    """``data`` with every row a scored row (no training rows): a given system's view."""
    return dataclasses.replace(data, train_index=np.empty(0, dtype=np.int64),
                               test_index=np.arange(len(data.y)), perturbed=())


def score_system_all_rows(data: PreparedAudit, *, stats: StatsConfig,
                          degenerate: DegenerateConfig,
                          verdicts: VerdictsConfig | None = None) -> AuditResults | None:
    """The audit's deployed system on every row of the audit, as its own tables and BH family,
    with every gap's verdict (None without a system)."""
    if data.system is None:
        return None
    result = score_outputs(all_rows(data), data.system, stats=stats, degenerate=degenerate,
                           row_set="all")
    tables = claimed(assemble(data.manifest.name, [result], rule=None, alpha=stats.alpha),
                     stats=stats, verdicts=verdicts)
    return ranked(tables, data, result, rows=np.arange(len(data.y)), row_set="all",
                  stats=stats, verdicts=verdicts)


def ranked(tables: AuditResults, data: PreparedAudit, result: CellResult, *, rows: np.ndarray,
           row_set: str, stats: StatsConfig, verdicts: VerdictsConfig | None) -> AuditResults:
    """``tables`` with the ranking view of ``result``'s score on ``rows``
    (:mod:`faircode.evaluate.ranking`; none without a score)."""
    found = ranking_tables(data, ranked_cells([result]), rows=rows, row_set=row_set,
                           stats=stats, verdicts=verdicts or VerdictsConfig())
    if found is not None:
        tables.ranking, tables.ranking_topk = found
    return tables


def claimed(tables: AuditResults, *, stats: StatsConfig,
             verdicts: VerdictsConfig | None) -> AuditResults:
    """``tables`` with the verdicts of one fit (:mod:`faircode.evaluate.claims`, K = 1)."""
    tables.fairness, tables.intersectional = gap_claims_table(
        tables.fairness, tables.intersectional, combined=None, confidence=stats.confidence,
        alpha=stats.alpha, verdicts=verdicts or VerdictsConfig())
    return tables


def score_given(
    data: PreparedAudit,
    *,
    name: str,
    decision: np.ndarray | None,
    score: np.ndarray | None,
    scale: str | None,
    positions: np.ndarray | None = None,
    threshold: float = 0.5,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    rule: str = "",
    row_set: str = "all",
    verdicts: VerdictsConfig | None = None,
) -> AuditResults:
    """Audit another model's decisions (and/or score) on the audit's rows, as a deployed
    system on every row: its own tables and BH family, nothing trained, and every gap's
    verdict (:mod:`faircode.evaluate.claims`, ``verdicts`` default the params' defaults).

    ``decision``/``score`` are validated 0/1 int8 and float64 arrays aligned with ``positions``
    (the covered audit rows, ascending; default every row).  Without a decision the model
    decides ``score > threshold``.  ``row_set`` names the rows in the per-group tables
    (``all``; ``test`` for the audit's held-out rows).
    """
    positions = np.arange(len(data.y)) if positions is None else positions
    if decision is None:
        assert score is not None
        decision = (score > threshold).astype(np.int8)
        rule = rule or f"score > {threshold:g}"
    full = np.zeros(len(data.y), dtype=np.int8)
    full[positions] = decision
    full_score = None
    if score is not None:
        full_score = np.zeros(len(data.y), dtype=np.float64)
        full_score[positions] = score
    outputs = SystemOutputs(name, name, full, full_score,
                            cast(ScoreScale, scale) if score is not None else None, rule)
    view = dataclasses.replace(all_rows(data), test_index=np.asarray(positions, dtype=np.int64))
    result = score_outputs(view, outputs, stats=stats, degenerate=degenerate, row_set=row_set)
    tables = claimed(assemble(data.manifest.name, [result], rule=None, alpha=stats.alpha),
                     stats=stats, verdicts=verdicts)
    return ranked(tables, data, result, rows=np.asarray(positions, dtype=np.int64),
                  row_set=row_set, stats=stats, verdicts=verdicts)
