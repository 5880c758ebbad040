"""The evaluate step of one audit: every cell scored, assembled into the four result tables.

:func:`evaluate_audit` scores each cell of an :class:`~faircode.grid.predictions.AuditPredictions`
(from :func:`faircode.grid.fit.fit_audit`, in memory or loaded from ``data/predictions/``) with
:func:`faircode.evaluate.score.score_cell` and assembles the rows into the four tables
(:class:`AuditResults`).  Benjamini-Hochberg q-values are computed across every fairness test of
the audit (:func:`faircode.stats.metrics.audit_q_values`: each per-attribute null once, the
intersectional gaps and interactions), and ``significant`` is ``q < alpha``.

With training replicates (``run.seeds`` > 1, :mod:`faircode.evaluate.stability`) every replicate
is scored the same way with its own master seed and summarised in ``stability.csv``.
"""

from __future__ import annotations

import dataclasses

from joblib import Parallel, delayed

from faircode.audit.prepared import PreparedAudit
from faircode.core.config import BenchmarkConfig
from faircode.core.errors import DataError
from faircode.evaluate import stability
from faircode.evaluate.score import _score_cell
from faircode.evaluate.tables import AuditResults, assemble
from faircode.grid.predictions import AuditPredictions

__all__ = ["evaluate_audit"]


def evaluate_audit(
    data: PreparedAudit, predictions: AuditPredictions, *, config: BenchmarkConfig
) -> AuditResults:
    """Score every cell of ``predictions`` on ``data``; return the four tables.

    Reads ``decision_threshold``, ``n_resamples``, ``n_permutations``, ``confidence``, ``alpha``
    and ``jobs`` of ``config``; with ``seeds`` > 1 (which must match the predictions') also
    :attr:`AuditResults.stability` and :attr:`AuditResults.replicates`
    (:func:`faircode.evaluate.stability.evaluate_stability`).
    """
    if predictions.audit != data.manifest.name:
        raise DataError(f"predictions of {predictions.audit!r} cannot be evaluated on "
                        f"{data.manifest.name!r}")
    if predictions.dataset_sha256 and predictions.dataset_sha256 != data.sha256:
        raise DataError(f"{data.manifest.name}: predictions: dataset_sha256: expected "
                        f"{data.sha256}, got {predictions.dataset_sha256}; re-run fit")
    cells = predictions.cells
    jobs = min(config.jobs, max(1, len(cells)))
    results = Parallel(n_jobs=jobs)(delayed(_score_cell)(data, c, config) for c in cells)
    assembled = assemble(data, results, config)
    if config.seeds == 1 and predictions.seeds == 1:
        return assembled
    # training replicates (run.seeds > 1): stability.csv and stability_replicates.csv
    table, replicates = stability.evaluate_stability(data, predictions, config=config)
    return dataclasses.replace(assembled, stability=table, replicates=replicates)


