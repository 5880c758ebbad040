"""The ranking view of a scored audit: each score's ordering of the rows, seen by group --
``ranking.csv`` and ``ranking_topk.csv`` (:data:`faircode.core.layout.RANKING_TABLES`).

Every row set with a score is ranked favourable end first -- the grid's S0-S2 cells (their
probability of label 1; :data:`faircode.core.cells.CUTOFF_STRATEGIES`) and a deployed system's
score (the COMPAS deciles) on the test rows, and the deployed system on every row
(``deployed/``); a label 1 that is unfavourable (COMPAS: re-arrest) ranks low scores first -- and
seen through every protected attribute, the disadvantaged group protected
(:mod:`faircode.stats.ranking`):

* ``ranking.csv``, per row set x attribute: the groups' mean exposure (Singh & Joachims), their
  ratio (``exposure_ratio``, 1 = parity of exposure) with its interval, the permutation test,
  its q-value in the table's Benjamini-Hochberg family and a verdict (``gap``: q < alpha and the
  interval excludes 1; ``parity``: the ``1 - 2 alpha`` interval inside ``verdicts.ratio_margin``,
  its equivalence test significant in its family); FA*IR's test of the determined prefixes of
  the top ``k`` (``k`` the rows the row set decides favourably; at most
  :data:`faircode.stats.ranking.FAIR_MAX_K` prefixes) at the protected group's share of the
  rows, with its adjusted alpha and the first failing prefix (``fair_passes`` empty when no
  prefix is determined: a tie block longer than ``k``);
  the band's critical value and ``k_min``.
* ``ranking_topk.csv``, per row set x attribute x reported ``k``: the protected share of the top
  ``k`` with its simultaneous band (every ``k >= k_min`` at once) beside its share of all rows.

Design decisions
----------------
* **One resample of the rows, every ranking of them**: the row sets of one table rank the same
  rows, so they share the bootstrap and permutation draws (``child_seed(master,
  name_stream("ranking"), rows)``, ``rows`` 0 for the test rows, 1 for every row), and a row
  set's numbers do not depend on the others'.
* Replicate 0 only: at K > 1 the view is of the run's own fit (``run.json`` says so).
* A row set without a score (S3's mixture is a score, but of a randomised classifier; S4 has
  none) has no ranking; nor has an audit without a scored row set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from faircode.audit.manifest import Manifest
from faircode.core.cells import CUTOFF_STRATEGIES, Strategy
from faircode.core.config import StatsConfig, VerdictsConfig
from faircode.core.metrics import Metric
from faircode.core.seeds import child_seed, name_stream
from faircode.evaluate.score import CellResult
from faircode.stats import verdicts as v
from faircode.stats.ranking import RankView, default_k_min, rank_views
from faircode.stats.resampling import benjamini_hochberg

__all__ = ["RANKING_COLUMNS", "TOPK_COLUMNS", "RankedAudit", "RankedRows", "ranked_cells",
           "ranking_tables"]

_KEYS = ("audit", "strategy", "model", "row_set", "protected_attribute")
RANKING_COLUMNS: tuple[str, ...] = (
    *_KEYS, "order", "n", "n_disadvantaged", "share_disadvantaged", "metric",
    "exposure_disadvantaged", "exposure_advantaged", "value", "ci_low", "ci_high",
    "exposure_difference", "p_value", "q_value", "equivalence_p", "equivalence_q", "verdict",
    "fair_k", "fair_alpha", "fair_alpha_adjusted", "fair_fail_probability", "fair_tested",
    "fair_passes", "fair_first_fail", "fair_needed", "fair_observed", "band_critical",
    "band_k_min")
TOPK_COLUMNS: tuple[str, ...] = (
    *_KEYS, "k", "fraction", "share_disadvantaged", "band_low", "band_high", "share_of_rows")
_STREAM = name_stream("ranking")


class RankedAudit(Protocol):
    """What the view reads of an audit: its manifest and its groups per row (a prepared audit,
    or an audit's data)."""

    @property
    def manifest(self) -> Manifest: ...
    @property
    def disadvantaged(self) -> Mapping[str, np.ndarray]: ...


@dataclass(frozen=True, slots=True)
class RankedRows:
    """One row set's score and favourable decisions on the ranked rows."""

    strategy: str
    model: str
    score: np.ndarray
    favourable: np.ndarray
    """1 where the row set decides favourably (the FA*IR length counts them)."""


def ranked_cells(cells: Sequence[CellResult]) -> list[RankedRows]:
    """The scored row sets of ``cells`` (the grid's S0-S2 and a deployed system with a
    score), in their order."""
    scored = {s.value for s in CUTOFF_STRATEGIES}
    grid = {s.value for s in Strategy}
    out = []
    for cell in cells:
        decided, name = cell.decided, str(cell.strategy)
        if decided is None or decided.score is None or cell.skipped or cell.unfittable or (
                name in grid and name not in scored):
            continue
        out.append(RankedRows(str(cell.strategy), str(cell.family), np.asarray(decided.score),
                              np.asarray(decided.yhat_fav)))
    return out


def _rows(audit: str, row_set: str, ranked: RankedRows, attribute: str, view: RankView,
          order: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    keys = {"audit": audit, "strategy": ranked.strategy, "model": ranked.model,
            "row_set": row_set, "protected_attribute": attribute}
    e, f, s = view.exposure, view.fair, view.shares
    n = ranked.score.size
    main = {**keys, "order": order, "n": n, "n_disadvantaged": round(f.p * n),
            "share_disadvantaged": f.p, "metric": Metric.EXPOSURE_RATIO.value,
            "exposure_disadvantaged": e.exposure_protected,
            "exposure_advantaged": e.exposure_other, "value": e.ratio, "ci_low": e.ci_low,
            "ci_high": e.ci_high, "exposure_difference": e.difference, "p_value": e.p_value,
            "fair_k": f.k, "fair_alpha": f.alpha, "fair_alpha_adjusted": f.alpha_adjusted,
            "fair_fail_probability": f.fail_probability, "fair_tested": f.tested,
            "fair_passes": f.passes if f.tested else np.nan,  # nothing tested: no verdict
            "fair_first_fail": f.first_fail, "fair_needed": f.needed,
            "fair_observed": f.observed, "band_critical": s.critical, "band_k_min": s.k_min}
    topk = [{**keys, "k": int(k), "fraction": int(k) / n, "share_disadvantaged": share,
             "band_low": low, "band_high": high, "share_of_rows": f.p}
            for k, share, low, high in zip(s.k, s.share, s.band_low, s.band_high, strict=True)]
    return main, topk


def _claims(table: pd.DataFrame, *, stats: StatsConfig, verdicts: VerdictsConfig) -> None:
    """The exposure ratios' q-values, equivalence tests and verdicts, in place."""
    metric = Metric.EXPOSURE_RATIO.value
    values = [table[c].to_numpy(float) for c in ("value", "ci_low", "ci_high")]
    evidence = v.interval_evidence(metric, *values, confidence=stats.confidence)
    lower, upper = v.margins_of(verdicts).bounds(metric)
    table["equivalence_p"] = evidence.p_equivalence(lower, upper)
    table["q_value"] = benjamini_hochberg(table["p_value"].to_numpy(float))
    table["equivalence_q"] = benjamini_hochberg(table["equivalence_p"].to_numpy(float))
    low, high = values[1], values[2]
    table["verdict"] = v.gap_verdicts(
        informative=np.isfinite(values[0]),
        gap=(table["q_value"] < stats.alpha) & ((low > 1) | (high < 1)),
        parity=table["equivalence_q"] < stats.alpha)


def ranking_tables(data: RankedAudit, ranked: Sequence[RankedRows], *, rows: np.ndarray,
                   row_set: str, stats: StatsConfig, verdicts: VerdictsConfig
                   ) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """``ranking.csv`` and ``ranking_topk.csv`` of the row sets ``ranked`` on the prepared
    rows ``rows`` (module docstring); None without a scored row set."""
    if not ranked:
        return None
    manifest = data.manifest
    favourable_high = manifest.target.favourable == 1  # P(label 1): high first when favourable
    order = "score descending" if favourable_high else "score ascending"
    attributes = [a.name for a in manifest.protected_attributes]
    views = rank_views(
        [r.score for r in ranked], [data.disadvantaged[a][rows] for a in attributes],
        higher_first=favourable_high, fair_k=[int(r.favourable.sum()) for r in ranked],
        confidence=stats.confidence, alpha=stats.alpha, n_resamples=stats.n_resamples,
        n_permutations=stats.n_permutations,
        seed=child_seed(manifest.random_state, _STREAM, 0 if row_set == "test" else 1),
        k_min=default_k_min(rows.size))
    main, topk = [], []
    for r, per_attribute in zip(ranked, views, strict=True):
        for attribute, view in zip(attributes, per_attribute, strict=True):
            row, ks = _rows(manifest.name, row_set, r, attribute, view, order)
            main.append(row)
            topk += ks
    table = pd.DataFrame(main).reindex(columns=list(RANKING_COLUMNS))
    _claims(table, stats=stats, verdicts=verdicts)
    return table, pd.DataFrame(topk, columns=list(TOPK_COLUMNS))
