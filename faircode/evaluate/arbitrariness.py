"""Arbitrariness and multiplicity: the bagged ensembles and the set of fitted models, scored into
``self_consistency.csv``, ``arbitrariness.csv``, ``multiplicity.csv`` and
``multiplicity_models.csv``.

For every bagged cell (:mod:`faircode.grid.bagging`) the ``B`` members are decided at the
cell's own operating point (the single fit's cutoff: the audit's rule fixed on its training
rows) and vote (:mod:`faircode.stats.arbitrariness`):

* ``self_consistency.csv``: per attribute and group, the share of arbitrary decisions
  (self-consistency below ``arbitrariness.consistency_level``) with its interval and the rows'
  mean self-consistency;
* ``arbitrariness.csv``: the ensemble abstaining on arbitrary decisions, its gaps on the rows
  it decides -- every fairness metric, with the benchmark's own inference
  (:func:`faircode.evaluate.counted.score_counts`: closed-form interval, permutation p, the
  degenerate rule) and verdicts (:func:`faircode.evaluate.claims.gap_claims_table`, the table's
  own Benjamini-Hochberg families) -- beside the single model's claim as ``fairness.csv`` makes
  it (``single_*``), the ensemble's point value on every row (``ensemble_value``, no abstention)
  and ``survives``: where the single model shows a gap, whether the abstaining ensemble shows it
  too, with the same sign.

The set of models (:mod:`faircode.stats.multiplicity`) is every fitted model that decides the
same test rows: the grid's cells (replicate 0's fit), their training replicates when they share
the test rows (``run.seed_mode: model``; a ``split`` replicate was trained on other rows, some of
them these test rows), and every bagged member.  ``multiplicity.csv`` has per attribute the set
within ``arbitrariness.accuracy_tolerance`` of the best accuracy, its gaps' range, and the test
of a less discriminatory alternative of equal accuracy (the parity gap); its q-values are a
Benjamini-Hochberg family of the audit's attributes (the gap test and, apart, the accuracy
equivalence test).  ``multiplicity_models.csv`` lists every model with its accuracy and gap on
both halves (the report's figure).

Seeds (:attr:`faircode.core.seeds.Stream.ARBITRARINESS`, keyed by name): the ensembles'
statistics are the cells' own streams under the master ``SeedSequence(master, spawn_key=(13,
name_stream("ensemble")))``; the half split ``(13, name_stream("held_out_split"))``; each
attribute's paired test ``(13, name_stream("alternative"), name_stream(<attribute>))``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faircode.audit.decision import Cutoff, DecisionRule
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import ModelFamily, Strategy, position, strategy_code
from faircode.core.config import (
    ArbitrarinessConfig,
    DegenerateConfig,
    StatsConfig,
    VerdictsConfig,
)
from faircode.core.errors import DataError
from faircode.core.metrics import FAIRNESS_METRICS, no_gap
from faircode.core.seeds import Stream, child_seed, name_stream
from faircode.evaluate.claims import gap_claims_table
from faircode.evaluate.combine import GAP_KEYS
from faircode.evaluate.counted import score_counts
from faircode.evaluate.score import CellResult, decide_cell
from faircode.grid.bagging import BaggedPredictions
from faircode.grid.predictions import ReplicatePredictions
from faircode.stats.arbitrariness import Ensemble, arbitrary_shares, ensemble
from faircode.stats.metrics import INTERSECTIONAL_COLUMNS, metric_values, orient
from faircode.stats.multiplicity import (
    GAP,
    AlternativeTest,
    alternative_shown,
    alternative_test,
    held_out_split,
)
from faircode.stats.resampling import benjamini_hochberg, confusion_counts
from faircode.stats.tally import tally_rows

__all__ = ["ARBITRARINESS_COLUMNS", "MODEL_COLUMNS", "MULTIPLICITY_COLUMNS",
           "SELF_CONSISTENCY_COLUMNS", "ArbitrarinessTables", "score_arbitrariness"]

SELF_CONSISTENCY_COLUMNS = (
    "audit", "strategy", "model", "protected_attribute", "group", "bags", "consistency_level",
    "n", "n_arbitrary", "share", "ci_low", "ci_high", "design_effect", "mean_self_consistency")
ARBITRARINESS_COLUMNS = (
    "audit", "strategy", "model", "protected_attribute", "metric", "bags", "consistency_level",
    "abstention_rate", "n_kept", "value", "ci_low", "ci_high", "ci_method", "p_value",
    "q_value", "significant", "verdict", "equivalence_p_value", "equivalence_q_value",
    "gap_bound", "n_disadvantaged", "n_advantaged", "design_effect", "note", "ensemble_value",
    "single_value", "single_ci_low", "single_ci_high", "single_verdict", "survives")
MULTIPLICITY_COLUMNS = (
    "audit", "protected_attribute", "metric", "tolerance", "n_models", "n_informative", "n_set",
    "gap_min", "gap_max", "incumbent", "alternative", "incumbent_gap", "alternative_gap",
    "incumbent_accuracy", "alternative_accuracy", "n_selection", "n_held_out", "value",
    "ci_low", "ci_high", "ci_method", "p_value", "q_value", "accuracy_difference",
    "accuracy_ci_low", "accuracy_ci_high", "equivalence_p_value", "equivalence_q_value",
    "shown", "verdict", "note")
MODEL_COLUMNS = (
    "audit", "protected_attribute", "model_id", "strategy", "model", "replicate", "member",
    "accuracy", "gap", "informative", "in_set", "role", "held_out_accuracy", "held_out_gap")


@dataclass
class ArbitrarinessTables:
    """The four tables of one audit's ensembles and set of models (module docstring)."""

    self_consistency: pd.DataFrame
    arbitrariness: pd.DataFrame
    multiplicity: pd.DataFrame
    models: pd.DataFrame


@dataclass(frozen=True, slots=True)
class FittedModel:
    """One model of the set: who it is and its oriented test decisions (1 = favourable)."""

    strategy: str
    family: str
    replicate: int
    member: int
    decisions: np.ndarray

    @property
    def model_id(self) -> str:
        """``S0/logistic_regression/r0`` (a grid fit, replicate 0) or ``.../b3`` (member 3)."""
        which = f"b{self.member}" if self.member >= 0 else f"r{self.replicate}"
        return f"{strategy_code(self.strategy)}/{self.family}/{which}"


def _seed(master: int, name: str, *more: int) -> np.random.SeedSequence:
    return child_seed(master, Stream.ARBITRARINESS, name_stream(name), *more)


def _member_votes(scores: np.ndarray, cutoff: Cutoff, *, favourable: int,
                  y_test: np.ndarray) -> np.ndarray:
    """The members' oriented decisions ``(B, n)`` at ``cutoff``."""
    return np.stack([orient(y_test, cutoff.apply(s), favourable=favourable)[1] for s in scores])


def _shares(data: PreparedAudit, cell: CellResult, votes: Ensemble,
            config: ArbitrarinessConfig, *, confidence: float) -> list[dict[str, object]]:
    test = data.test_index
    units = None if data.unit is None else data.unit[test]
    rows: list[dict[str, object]] = []
    for attribute in data.manifest.protected_attributes:
        mask = data.disadvantaged[attribute.name][test]
        for share in arbitrary_shares(votes.self_consistency, mask,
                                      level=config.consistency_level, units=units,
                                      confidence=confidence):
            rows.append({"strategy": str(cell.strategy), "model": str(cell.family),
                         "protected_attribute": attribute.name, "group": share.group,
                         "bags": votes.members, "consistency_level": config.consistency_level,
                         "n": share.n, "n_arbitrary": share.arbitrary, "share": share.share,
                         "ci_low": share.ci_low, "ci_high": share.ci_high,
                         "design_effect": share.design_effect,
                         "mean_self_consistency": share.mean_self_consistency})
    return rows


def _ensemble_rows(data: PreparedAudit, cell: CellResult, votes: Ensemble, *,
                   rule: DecisionRule, stats: StatsConfig, degenerate: DegenerateConfig,
                   master: int) -> list[dict[str, object]]:
    """The abstaining ensemble's fairness rows on the rows it decides (``fairness.csv``'s
    columns and the benchmark's inference), with its point value on every row."""
    test, kept = data.test_index, votes.kept
    favourable = data.manifest.target.favourable
    label = votes.decision if favourable == 1 else (1 - votes.decision).astype(np.int8)
    masks = [data.disadvantaged[a.name][test] for a in data.manifest.protected_attributes]
    units = None if data.unit is None else data.unit[test][kept]
    tally = tally_rows([a.name for a in data.manifest.protected_attributes],
                       data.y[test][kept], label[kept], [m[kept] for m in masks], units=units)
    counted = score_counts(
        tally, data.manifest.protected_attributes, favourable=favourable,
        label={"strategy": str(cell.strategy), "model": str(cell.family)},
        key=position(Strategy(cell.strategy), ModelFamily(cell.family)), rule=rule, objective="",
        stats=stats,
        degenerate=degenerate, master=master, detail=False)
    y_fav, yhat_fav = orient(data.y[test], label, favourable=favourable)
    everywhere = {}
    for attribute, mask in zip(data.manifest.protected_attributes, masks, strict=True):
        counts = (confusion_counts(y_fav[mask], yhat_fav[mask]),
                  confusion_counts(y_fav[~mask], yhat_fav[~mask]))
        for metric in FAIRNESS_METRICS:
            everywhere[attribute.name, metric] = float(metric_values(metric, *counts))
    abstention = float(votes.abstain.mean()) if votes.abstain.size else float("nan")
    return [{**row, "bags": votes.members, "abstention_rate": abstention,
             "n_kept": int(kept.sum()),
             "ensemble_value": everywhere[row["protected_attribute"], row["metric"]]}
            for row in counted.fairness]


def _with_single(table: pd.DataFrame, fairness: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each row's single-model claim (``fairness.csv``) and ``survives``."""
    lookup = fairness.set_index([fairness[k].astype(str) for k in GAP_KEYS])
    index = pd.MultiIndex.from_frame(table.loc[:, list(GAP_KEYS)].astype(str))
    rows = lookup.reindex(index)
    out = table.copy()
    for column in ("value", "ci_low", "ci_high", "verdict"):
        out[f"single_{column}"] = rows[column].to_numpy() if column in rows else np.nan
    null = np.array([no_gap(m) for m in out["metric"].astype(str)], dtype=float)
    single = out["single_value"].to_numpy(dtype=float) - null
    own = out["value"].to_numpy(dtype=float) - null
    shown = (out["single_verdict"] == "gap").to_numpy(dtype=bool)
    survives = shown & (out["verdict"] == "gap").to_numpy(dtype=bool) & (
        np.sign(single) == np.sign(own))
    out["survives"] = pd.array(np.where(shown, survives, False), dtype="boolean")
    out.loc[~shown, "survives"] = pd.NA
    return out


def _ensembles(data: PreparedAudit, bagged: BaggedPredictions, cells: Sequence[CellResult],
               fairness: pd.DataFrame, *, rule: DecisionRule, stats: StatsConfig,
               degenerate: DegenerateConfig, verdicts: VerdictsConfig,
               config: ArbitrarinessConfig) -> tuple[pd.DataFrame, pd.DataFrame,
                                                     list[FittedModel]]:
    """``self_consistency.csv``, ``arbitrariness.csv`` and the bagged members of the set."""
    by_cell = {(str(c.strategy), str(c.family)): c for c in cells if c.decided is not None}
    master = int(_seed(data.manifest.random_state, "ensemble").generate_state(1)[0])
    favourable, y_test = data.manifest.target.favourable, data.y[data.test_index]
    shares: list[dict[str, object]] = []
    rows: list[dict[str, object]] = []
    members: list[FittedModel] = []
    for (strategy, family), scores in bagged.scores.items():
        cell = by_cell.get((strategy.value, family.value))
        if cell is None or cell.decided is None or cell.decided.cutoff is None:
            continue  # the single fit was skipped or is not a cutoff: no operating point
        votes = _member_votes(scores, cell.decided.cutoff, favourable=favourable, y_test=y_test)
        members += [FittedModel(strategy.value, family.value, 0, b, v)
                    for b, v in enumerate(votes)]
        voted = ensemble(votes, level=config.consistency_level)
        shares += _shares(data, cell, voted, config, confidence=stats.confidence)
        rows += _ensemble_rows(data, cell, voted, rule=rule, stats=stats,
                               degenerate=degenerate, master=master)
    audit = data.manifest.name
    share_frame = pd.DataFrame(shares, columns=list(SELF_CONSISTENCY_COLUMNS[1:]))
    share_frame.insert(0, "audit", audit)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return share_frame, pd.DataFrame(columns=list(ARBITRARINESS_COLUMNS)), members
    frame.insert(0, "audit", audit)
    claimed, _ = gap_claims_table(frame, pd.DataFrame(columns=list(INTERSECTIONAL_COLUMNS)),
                                  combined=None, confidence=stats.confidence, alpha=stats.alpha,
                                  verdicts=verdicts)
    for column in ("bags", "abstention_rate", "n_kept", "ensemble_value"):
        claimed[column] = frame[column].to_numpy()
    claimed["consistency_level"] = config.consistency_level
    return share_frame, _with_single(claimed, fairness).loc[:, list(ARBITRARINESS_COLUMNS)], \
        members


def _grid_models(data: PreparedAudit, cells: Sequence[CellResult],
                 replicates: Sequence[ReplicatePredictions], *,
                 rule: DecisionRule) -> list[FittedModel]:
    """The grid's fits on the test rows: replicate 0's cells, and the replicates that share
    its test rows (model mode)."""
    out = [FittedModel(str(c.strategy), str(c.family), 0, -1, c.decided.yhat_fav)
           for c in cells if c.decided is not None]
    for rep in replicates:
        if rep.cell.fitted and np.array_equal(rep.test_index, data.test_index):
            decided = decide_cell(data, rep.cell, rule=rule)
            out.append(FittedModel(rep.cell.strategy.value, rep.cell.family.value,
                                   rep.replicate, -1, decided.yhat_fav))
    return out


def _model_rows(models: Sequence[FittedModel], test: AlternativeTest,
                attribute: str) -> list[dict[str, object]]:
    role = {test.incumbent: "incumbent", test.alternative: "alternative"}
    return [{"protected_attribute": attribute, "model_id": m.model_id, "strategy": m.strategy,
             "model": m.family, "replicate": m.replicate, "member": m.member,
             "accuracy": test.selection.accuracy[i], "gap": test.selection.gap[i],
             "informative": bool(test.selection.informative[i]),
             "in_set": bool(test.in_set[i]), "role": role.get(i, ""),
             "held_out_accuracy": test.held_out.accuracy[i],
             "held_out_gap": test.held_out.gap[i]} for i, m in enumerate(models)]


def _test_row(models: Sequence[FittedModel], test: AlternativeTest, attribute: str, *,
              tolerance: float, sizes: tuple[int, int]) -> dict[str, object]:
    def who(i: int) -> str:
        return models[i].model_id if i >= 0 else ""

    def at(values: np.ndarray, i: int) -> float:
        return float(values[i]) if i >= 0 else float("nan")

    gap, acc = test.gap_effect, test.accuracy_effect
    nan = float("nan")
    return {"protected_attribute": attribute, "metric": GAP.value, "tolerance": tolerance,
            "n_models": len(models), "n_informative": int(test.selection.informative.sum()),
            "n_set": int(test.in_set.sum()), "gap_min": test.gap_min, "gap_max": test.gap_max,
            "incumbent": who(test.incumbent), "alternative": who(test.alternative),
            "incumbent_gap": at(test.selection.gap, test.incumbent),
            "alternative_gap": at(test.selection.gap, test.alternative),
            "incumbent_accuracy": at(test.selection.accuracy, test.incumbent),
            "alternative_accuracy": at(test.selection.accuracy, test.alternative),
            "n_selection": sizes[0], "n_held_out": sizes[1],
            "value": gap.value if gap else nan, "ci_low": gap.ci_low if gap else nan,
            "ci_high": gap.ci_high if gap else nan, "ci_method": gap.ci_method if gap else "",
            "p_value": gap.p_value if gap else nan,
            "accuracy_difference": acc.value if acc else nan,
            "accuracy_ci_low": acc.ci_low if acc else nan,
            "accuracy_ci_high": acc.ci_high if acc else nan,
            "equivalence_p_value": acc.equivalence_p_value if acc else nan,
            "note": test.note or (gap.note if gap else "")}


def _multiplicity(data: PreparedAudit, models: Sequence[FittedModel], *, stats: StatsConfig,
                  degenerate: DegenerateConfig, verdicts: VerdictsConfig,
                  config: ArbitrarinessConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``multiplicity.csv`` and ``multiplicity_models.csv`` (module docstring)."""
    test_rows = data.test_index
    master = data.manifest.random_state
    y_fav = orient(data.y[test_rows], data.y[test_rows],
                   favourable=data.manifest.target.favourable)[0]
    units = None if data.unit is None else data.unit[test_rows]
    select, held = held_out_split(y_fav, seed=_seed(master, "held_out_split"), units=units)
    decisions = np.stack([m.decisions for m in models])
    rows, listed = [], []
    for attribute in data.manifest.protected_attributes:
        result = alternative_test(
            decisions, y_fav, data.disadvantaged[attribute.name][test_rows], select=select,
            held_out=held, tolerance=config.accuracy_tolerance, margin=verdicts.margin,
            degenerate=degenerate, units=units, n_resamples=stats.n_resamples,
            n_permutations=stats.n_permutations, confidence=stats.confidence,
            seed=_seed(master, "alternative", name_stream(attribute.name)))
        rows.append(_test_row(models, result, attribute.name, sizes=(select.size, held.size),
                              tolerance=config.accuracy_tolerance))
        listed += _model_rows(models, result, attribute.name)
    table = pd.DataFrame(rows)
    table["q_value"] = benjamini_hochberg(table["p_value"].to_numpy(dtype=float))
    table["equivalence_q_value"] = benjamini_hochberg(
        table["equivalence_p_value"].to_numpy(dtype=float))
    shown = alternative_shown(table["q_value"], table["ci_high"], table["equivalence_q_value"],
                              alpha=stats.alpha)
    tested = np.isfinite(table["value"].to_numpy(dtype=float))
    table["shown"] = shown
    table["verdict"] = np.where(shown, "shown", np.where(tested, "not_shown", "no_alternative"))
    table.insert(0, "audit", data.manifest.name)
    model_frame = pd.DataFrame(listed)
    model_frame.insert(0, "audit", data.manifest.name)
    return table.loc[:, list(MULTIPLICITY_COLUMNS)], model_frame.loc[:, list(MODEL_COLUMNS)]


def score_arbitrariness(
    data: PreparedAudit,
    bagged: BaggedPredictions,
    cells: Sequence[CellResult],
    fairness: pd.DataFrame,
    *,
    rule: DecisionRule,
    stats: StatsConfig,
    degenerate: DegenerateConfig,
    verdicts: VerdictsConfig,
    config: ArbitrarinessConfig,
    replicates: Sequence[ReplicatePredictions] = (),
) -> ArbitrarinessTables:
    """The four tables of ``data``'s bagged ensembles (``bagged``) and of its set of models:
    the scored grid ``cells`` (replicate 0), ``replicates`` that share their test rows and the
    members; ``fairness`` is the claimed ``fairness.csv`` (the single models' claims)."""
    if bagged.audit != data.manifest.name or (
            bagged.dataset_sha256 and bagged.dataset_sha256 != data.sha256):
        raise DataError(f"{data.manifest.name}: bagged members of {bagged.audit!r} (dataset "
                        f"{bagged.dataset_sha256[:12]}) do not belong to these prepared rows; "
                        "re-run the bag stage")
    shares, table, members = _ensembles(data, bagged, cells, fairness, rule=rule, stats=stats,
                                        degenerate=degenerate, verdicts=verdicts, config=config)
    models = [*_grid_models(data, cells, replicates, rule=rule), *members]
    if not models:
        empty = (pd.DataFrame(columns=list(c)) for c in (MULTIPLICITY_COLUMNS, MODEL_COLUMNS))
        return ArbitrarinessTables(shares, table, *empty)
    multiplicity, listed = _multiplicity(data, models, stats=stats, degenerate=degenerate,
                                         verdicts=verdicts, config=config)
    return ArbitrarinessTables(shares, table, multiplicity, listed)

