"""A text system's scores into tables: flip rates and CTF gaps per axis x kind, per-term error
rates against the background and the overall rate, subgroup and pinned AUCs, and the operating
points with Dixon et al.'s FPED and FNED.

Each builder takes plain arrays (scores, labels, unit ids, the pairs of an original and its
copy) and one system's name, so the same code serves a manifest's audit
(:mod:`faircode.evaluate.text`) and a practitioner's two score files
(:mod:`faircode.evaluate.text_files`): on the same scores both give the same numbers.

Design decisions
----------------
* **Operating points** (:class:`Point`): ``above`` decides 1 when ``score > t``, ``at_least``
  when ``score >= t``.  The equal-error-rate point (:func:`equal_error_threshold`) is Dixon et
  al.'s: among the observed scores, the smallest ``t`` at which ``score >= t`` makes as few false
  positives as false negatives (the smallest ``|FP − FN|``) on the labelled sentences.
* **Seeds** are keyed by what a number is about -- its table, axis, kind and operating point's
  threshold -- through a stable hash (:func:`seed_key`), never by a system's or an axis's
  position: every system is resampled with the same draws, and a comparison gets the same draws
  whichever path or order computed it.
* Flip rates are :func:`faircode.stats.flips.flip_rates` on the changed pairs (``n_unchanged``
  is the payloads the axis left as they were), with the direction test of
  :func:`faircode.stats.paired_scores.flip_direction`; "positive" is the system's flag (toxic,
  negative sentiment), so ``to_positive`` is the share of changed pairs whose copy is newly
  flagged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from faircode.core.config import StatsConfig
from faircode.core.seeds import Stream, child_seed
from faircode.counterfactual.perturb import PerturbationKind
from faircode.stats.error_equality import EqualityDifference, equality_difference
from faircode.stats.flips import flip_rates
from faircode.stats.paired_scores import counterfactual_gap, flip_direction
from faircode.stats.subgroup_auc import CrossCounts, UnitWeights, auc
from faircode.stats.term_rates import subgroup_rates

__all__ = ["CTF_COLUMNS", "FLIP_COLUMNS", "TABLE_SEEDS", "Equality", "Point", "auc_table",
           "counterfactual_tables", "decide", "equal_error_threshold", "equality_differences",
           "operating_table", "seed_key", "term_table"]

TABLE_SEEDS = {"flips": 0, "ctf": 1, "auc": 2, "placebo": 3}
"""Second spawn-key component of each table's draws (after :attr:`Stream.TEXT`)."""
FLIP_COLUMNS = ("audit", "system", "operating_point", "rule", "threshold", "direction", "axis",
                "kind", "n_payloads", "n_changed", "n_unchanged", "n_flipped", "flip_rate",
                "ci_low", "ci_high", "to_positive", "to_negative", "design_effect", "n_units",
                "p_value", "q_value", "significant", "note")
CTF_COLUMNS = ("audit", "system", "axis", "kind", "n_pairs", "n_units", "ctf_gap", "ci_low",
               "ci_high", "shift", "shift_ci_low", "shift_ci_high", "p_value", "q_value",
               "significant", "note")
_RATES = (("false_positive_rate", 0, 1), ("false_negative_rate", 1, 0))
"""(metric, the label it is a rate of, the decision that is an error there)."""


@dataclass(frozen=True, slots=True)
class Point:
    """An operating point: its name, rule and resolved threshold and comparison."""

    name: str
    rule: str
    threshold: float
    direction: Literal["above", "at_least"] = "above"

    def label(self) -> dict[str, Any]:
        return {"operating_point": self.name, "rule": self.rule, "threshold": self.threshold,
                "direction": self.direction}


def decide(scores: ArrayLike, point: Point) -> NDArray[np.int8]:
    """0/1 decisions of ``scores`` at ``point``."""
    s = np.asarray(scores, dtype=np.float64)
    flagged = s > point.threshold if point.direction == "above" else s >= point.threshold
    return flagged.astype(np.int8)


def equal_error_threshold(scores: ArrayLike, labels: ArrayLike) -> float:
    """The smallest observed score ``t`` minimising ``|FP − FN|`` when ``score >= t`` flags."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    candidates = np.unique(s)
    neg, pos = np.sort(s[~y]), np.sort(s[y])
    false_pos = neg.size - np.searchsorted(neg, candidates, side="left")
    false_neg = np.searchsorted(pos, candidates, side="left")
    return float(candidates[int(np.argmin(np.abs(false_pos - false_neg)))])


def seed_key(*parts: object) -> int:
    """A stable non-negative 32-bit key of ``parts`` (their ``repr``, sha256)."""
    text = "\0".join(repr(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:4], "big")


def _seed(master: int, table: str, *parts: object) -> np.random.SeedSequence:
    return child_seed(master, Stream.TEXT, TABLE_SEEDS[table], seed_key(*parts))


Equality = Mapping[tuple[str, str], EqualityDifference]
"""(operating point, metric) -> the per-term differences from the overall rate and their sum."""


def equality_differences(scores: ArrayLike, labels: ArrayLike,
                         members: Mapping[str, NDArray[np.bool_]], *, points: Sequence[Point],
                         weights: UnitWeights, confidence: float) -> Equality:
    """Per point and rate, every term's rate minus the overall rate, and FPED / FNED
    (:func:`faircode.stats.error_equality.equality_difference`, on the AUCs' frame draws)."""
    y = np.asarray(labels).astype(np.int8)
    out = {}
    for point in points:
        decision = decide(scores, point)
        for metric, on_label, error in _RATES:
            out[(point.name, metric)] = equality_difference(
                decision == error, y == on_label, list(members.values()), weights=weights,
                confidence=confidence)
    return out


def counterfactual_tables(
    original: ArrayLike,
    units: ArrayLike | None,
    pairs: pd.DataFrame,
    payloads: pd.DataFrame,
    *,
    points: Sequence[Point],
    stats: StatsConfig,
    master: int,
    label: Mapping[str, str],
    scope: str = "",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Flip rates (per point) and CTF gaps of one system, one row per (axis, kind).

    ``original`` holds the system's score of every original payload and ``units`` their unit
    ids (or None); ``pairs`` the changed copies (``axis``, ``kind``, ``sentence``: the original's
    index, ``copy_score``); ``payloads`` per (axis, kind) its ``n_payloads``, in report order.
    ``label`` gives the rows' ``audit`` and ``system``; a ``scope`` (a declared sentence set's
    name) joins every seed's key.  q-values are left empty (the family is the caller's).
    """
    where = (scope,) if scope else ()
    scores = np.asarray(original, dtype=np.float64)
    unit_of = None if units is None else np.asarray(units)
    groups = pairs.groupby(["axis", "kind"], sort=False).indices
    flips: list[dict[str, Any]] = []
    gaps: list[dict[str, Any]] = []
    for axis, kind, n_payloads in payloads.loc[:, ["axis", "kind", "n_payloads"]].itertuples(
            index=False, name=None):
        rows = groups.get((axis, kind), np.zeros(0, dtype=np.int64))
        sentence = pairs["sentence"].to_numpy()[rows]
        before, after = scores[sentence], pairs["copy_score"].to_numpy(dtype=np.float64)[rows]
        pair_units = None if unit_of is None else unit_of[sentence]
        gap = counterfactual_gap(before, after, units=pair_units, n_resamples=stats.n_resamples,
                                 n_permutations=stats.n_permutations,
                                 seed=_seed(master, "ctf", *where, axis, kind),
                                 confidence=stats.confidence)
        gaps.append({**label, "axis": axis, "kind": kind, "n_pairs": gap.n_pairs,
                     "n_units": gap.n_units, "ctf_gap": gap.gap, "ci_low": gap.gap_low,
                     "ci_high": gap.gap_high, "shift": gap.shift,
                     "shift_ci_low": gap.shift_low, "shift_ci_high": gap.shift_high,
                     "p_value": gap.p_value, "note": gap.note})
        for point in points:
            flips.append({**label, **point.label(), "axis": axis, "kind": kind,
                          **_flip_row(decide(before, point), decide(after, point), pair_units,
                                      n_payloads=int(n_payloads), axis=axis, kind=kind,
                                      stats=stats, seed=_seed(master, "flips", *where, axis,
                                                              kind, point.threshold,
                                                              point.direction))})
    return _frame(flips, FLIP_COLUMNS), _frame(gaps, CTF_COLUMNS)


def _flip_row(before: NDArray[np.int8], after: NDArray[np.int8], units: NDArray | None, *,
              n_payloads: int, axis: str, kind: str, stats: StatsConfig,
              seed: np.random.SeedSequence) -> dict[str, Any]:
    changed = np.ones(before.size, dtype=bool)
    result = flip_rates(before, after, changed, axis=axis, kind=PerturbationKind(kind),
                        favourable=1, confidence=stats.confidence, units=units)
    p = flip_direction(before, after, changed, units=units, n_permutations=stats.n_permutations,
                       seed=seed)
    n_units = int(np.unique(units).size) if units is not None else before.size
    return {"n_payloads": n_payloads, "n_changed": result.n_changed,
            "n_unchanged": n_payloads - result.n_changed, "n_flipped": result.n_flipped,
            "flip_rate": result.flip_rate, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "to_positive": result.to_favourable, "to_negative": result.to_unfavourable,
            "design_effect": result.design_effect, "n_units": n_units, "p_value": p,
            "note": result.note or ("no_flips" if result.n_flipped == 0 else "")}


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for column in columns:
        if column not in frame:
            frame[column] = np.nan if column in ("q_value",) else (False if column ==
                                                                   "significant" else "")
    return frame.loc[:, list(columns)]


TERM_COLUMNS = ("audit", "system", "operating_point", "rule", "threshold", "direction",
                "category", "term", "metric", "n", "errors", "rate", "ci_low", "ci_high",
                "design_effect", "background_n", "background_errors", "background_rate",
                "background_ci_low", "background_ci_high", "difference", "p_value", "q_value",
                "significant", "mde", "powered", "mde_note", "overall_rate", "overall_difference",
                "overall_ci_low", "overall_ci_high", "note")


def term_table(scores: ArrayLike, labels: ArrayLike, members: Mapping[str, NDArray[np.bool_]],
               category: Mapping[str, str], units: ArrayLike | None, *,
               points: Sequence[Point], stats: StatsConfig, label: Mapping[str, str],
               equality: Equality | None = None) -> pd.DataFrame:
    """Per point x rate (false positives on label 0, false negatives on label 1) x term: the
    term's rate against the background's (:func:`faircode.stats.term_rates.subgroup_rates`)
    and, given ``equality``, against the overall rate (Dixon et al.'s comparison)."""
    y = np.asarray(labels).astype(np.int8)
    rows = []
    for point in points:
        decision = decide(scores, point)
        for metric, on_label, error in _RATES:
            rates = subgroup_rates(decision == error, y == on_label, list(members.values()),
                                   strata=units, confidence=stats.confidence,
                                   alpha=stats.alpha, power=stats.power)
            eq = None if equality is None else equality[(point.name, metric)]
            for t, (term, r) in enumerate(zip(members, rates, strict=True)):
                overall = {} if eq is None else {
                    "overall_rate": eq.overall, "overall_difference": eq.differences[t],
                    "overall_ci_low": eq.differences_low[t],
                    "overall_ci_high": eq.differences_high[t]}
                rows.append({**label, **point.label(), "category": category[term],
                             "term": term, "metric": metric, "n": r.n, "errors": r.errors,
                             "rate": r.rate, "ci_low": r.ci_low, "ci_high": r.ci_high,
                             "design_effect": r.design_effect, "background_n": r.background_n,
                             "background_errors": r.background_errors,
                             "background_rate": r.background_rate,
                             "background_ci_low": r.background_ci_low,
                             "background_ci_high": r.background_ci_high,
                             "difference": r.difference, "p_value": r.p_value, "mde": r.mde,
                             "powered": bool(np.isfinite(r.mde)
                                             and abs(r.difference) >= r.mde),
                             "mde_note": r.mde_note, **overall, "note": r.note})
    return _frame(rows, TERM_COLUMNS)


AUC_COLUMNS = ("audit", "system", "category", "term", "metric", "value", "ci_low", "ci_high",
               "n_positive", "n_negative", "note")


def auc_table(scores: ArrayLike, labels: ArrayLike, members: Mapping[str, NDArray[np.bool_]],
              category: Mapping[str, str], *, weights: UnitWeights, stats: StatsConfig,
              label: Mapping[str, str]) -> pd.DataFrame:
    """The overall AUC, then per term its subgroup, BPSN and BNSP AUC (Borkan et al.) and its
    pinned AUC (Dixon et al.)."""
    y = np.asarray(labels).astype(bool)
    overall = auc(scores, y, ~y, weights=weights, confidence=stats.confidence)
    rows = [{**label, "category": "all", "term": "", **_auc_row(overall)}]
    cross = CrossCounts(scores, y.astype(np.int8), weights=weights)
    for term, member in members.items():
        for result in cross.aucs(member, confidence=stats.confidence, pinned=True):
            rows.append({**label, "category": category[term], "term": term,
                         **_auc_row(result)})
    return _frame(rows, AUC_COLUMNS)


def _auc_row(result: Any) -> dict[str, Any]:
    return {"metric": result.metric, "value": result.value, "ci_low": result.ci_low,
            "ci_high": result.ci_high, "n_positive": result.n_positive,
            "n_negative": result.n_negative, "note": result.note}


POINT_COLUMNS = ("audit", "system", "operating_point", "rule", "threshold", "direction", "n",
                 "n_positive", "n_negative", "selection_rate", "false_positive_rate",
                 "false_negative_rate", "accuracy", "fped", "fped_ci_low", "fped_ci_high",
                 "fned", "fned_ci_low", "fned_ci_high", "n_terms")
_EQUALITY = {"false_positive_rate": "fped", "false_negative_rate": "fned"}


def operating_table(scores: ArrayLike, labels: ArrayLike, *, points: Sequence[Point],
                    label: Mapping[str, str], equality: Equality | None = None
                    ) -> pd.DataFrame:
    """Per point: the share flagged and the error rates on the labelled sentences, and given
    ``equality`` FPED and FNED (Dixon et al.: the sums over terms of |rate − rate_t|)."""
    y = np.asarray(labels).astype(bool)
    rows = []
    for point in points:
        d = decide(scores, point).astype(bool)
        sums: dict[str, Any] = {}
        for metric, key in ({} if equality is None else _EQUALITY).items():
            eq = equality[(point.name, metric)]  # type: ignore[index]
            sums.update({key: eq.total, f"{key}_ci_low": eq.total_low,
                         f"{key}_ci_high": eq.total_high, "n_terms": eq.n_terms})
        rows.append({**label, **point.label(), **sums, "n": int(y.size),
                     "n_positive": int(y.sum()),
                     "n_negative": int((~y).sum()), "selection_rate": float(d.mean()),
                     "false_positive_rate": float(d[~y].mean()) if (~y).any() else np.nan,
                     "false_negative_rate": float((~d[y]).mean()) if y.any() else np.nan,
                     "accuracy": float((d == y).mean())})
    return _frame(rows, POINT_COLUMNS)


SYSTEM_COLUMNS = ("audit", "system", "origin", "title", "package", "version", "features", "c",
                  "n_train", "n_test", "threshold", "test_auc", "test_auc_ci_low",
                  "test_auc_ci_high", "test_accuracy", "test_accuracy_ci_low",
                  "test_accuracy_ci_high", "note")


def systems_table(records: Mapping[str, Mapping[str, str]], *, audit: str,
                  trained: Mapping[str, Mapping[str, Any]],
                  heldout: Mapping[str, NDArray[np.float64]], heldout_y: ArrayLike,
                  decision_threshold: float, confidence: float) -> pd.DataFrame:
    """Per system what it is and, for a system trained here, its held-out AUC (DeLong's
    interval, clipped to [0, 1]) and accuracy at ``score > decision_threshold``
    (Clopper–Pearson); a deployed system's are NaN with note ``deployed``."""
    from faircode.stats.resampling import delong_auc, z_quantile
    from faircode.stats.term_rates import clopper_pearson

    y = np.asarray(heldout_y).astype(bool)
    z = z_quantile(confidence)
    rows = []
    for name, record in records.items():
        row: dict[str, Any] = {"audit": audit, "system": name, **{
            k: record.get(k, "") for k in ("title", "package", "version")}}
        info = trained.get(name)
        if info is None:
            rows.append({**row, "origin": "deployed", "note": "deployed"})
            continue
        score = np.asarray(heldout[name], dtype=np.float64)
        value, variance = delong_auc(y, score)
        half = z * np.sqrt(variance)
        correct = int(((score > decision_threshold) == y).sum())
        low, high = clopper_pearson(correct, y.size, confidence=confidence)
        rows.append({**row, "origin": "trained", "features": info["features"], "c": info["c"],
                     "n_train": info["n_train"], "n_test": int(y.size),
                     "threshold": decision_threshold, "test_auc": value,
                     "test_auc_ci_low": max(0.0, value - half),
                     "test_auc_ci_high": min(1.0, value + half),
                     "test_accuracy": correct / y.size, "test_accuracy_ci_low": low,
                     "test_accuracy_ci_high": high, "note": ""})
    return _frame(rows, SYSTEM_COLUMNS)
