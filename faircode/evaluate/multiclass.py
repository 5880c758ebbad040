"""A multi-class audit's tables: every row set's class shares by group, its joint tests, the grid's
strategies -- with the audit's Benjamini-Hochberg families and a verdict on every gap.

Row sets: the recorded outcome on every row (``observed``, ``all``: the published counts) and on
the test rows (``observed``, ``test``: what the models are compared with), each fitted cell of
the grid (:mod:`faircode.grid.multiclass`) on its test rows, and a model no one here trained
(``faircode audit``'s predicted classes, :func:`audit_class_predictions`: strategy
``deployed``, as a given model's rows in the grid's tables) -- each seen through every
protected attribute as a ``2 x C`` table (:mod:`faircode.stats.multiclass`).

* ``class_gaps.csv``: per row set x attribute x class, each group's share of its rows in the
  class with Wilson's interval, the ``class_share_gap`` (disadvantaged minus advantaged share)
  with Newcombe's interval, its exact mid-p test, the class's ``share_of_gap`` (of the total
  variation distance) and a verdict.
* ``class_tests.csv``: per row set x attribute, the ``class_max_gap`` (the largest absolute
  class share gap, its interval the Bonferroni union of the classes' intervals, as equalized
  odds' is of its two components), the total variation distance and its leading class, and the
  joint exact test of "no class's share differs" with its small-cell record (method, tables,
  smallest expected count, cells under 5, classes absent) and a verdict.
* ``strategies.csv``: every strategy x family of the grid -- ``fitted`` (its accuracy and
  balanced accuracy on the test rows) or ``not_applicable`` (the report's ``n/a``) with
  the reason the strategy table gives, and no number.
* ``class_replicates.csv`` (``run.seeds`` > 1): every further training replicate's joint tests.

Verdicts (:mod:`faircode.stats.verdicts`): a class gap is ``gap`` when its test is significant in
the audit's family of class tests (q < alpha) and its interval excludes 0, ``parity`` when the
equivalence test at ``verdicts.margin`` is significant in its family (the ``1 - 2 alpha``
interval inside the margin); a row set's joint verdict is ``gap`` when its joint test is
significant in the family of joint tests, ``parity`` when every class's equivalence test holds
(an intersection-union test; its largest p-value in its family); else ``inconclusive``;
``uninformative`` when the table has fewer than two classes with rows or a group without rows
(a model predicting one class for everyone).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faircode.audit.predictions_file import PredictionsReader
from faircode.audit.prepared import PreparedAudit
from faircode.core.cells import STRATEGY_TABLE, ModelFamily, not_applicable_reason, position
from faircode.core.config import StatsConfig, VerdictsConfig
from faircode.core.kinds import MULTICLASS
from faircode.core.metrics import Metric
from faircode.core.seeds import child_seed, name_stream
from faircode.grid.multiclass import ClassCell
from faircode.stats import verdicts as v
from faircode.stats.multiclass import ClassGaps, JointTest, class_counts, class_gaps, joint_test
from faircode.stats.resampling import benjamini_hochberg

__all__ = ["GAP_COLUMNS", "GIVEN", "NOT_APPLICABLE", "OBSERVED", "REPLICATE_COLUMNS",
           "STRATEGY_COLUMNS", "TEST_COLUMNS", "ClassTables", "Given", "audit_class_predictions",
           "class_tables"]

OBSERVED = "observed"
"""The row set of the recorded outcome (strategy ``observed``, model ``recorded``)."""
NOT_APPLICABLE = "not_applicable"
"""``strategies.csv``'s status of a strategy the kind does not run (the reader's ``n/a``; never
the text ``n/a`` in a CSV, which pandas reads as missing)."""
_RECORDED = "recorded"
_KEYS = ("audit", "strategy", "model", "row_set", "protected_attribute")
GAP_COLUMNS: tuple[str, ...] = (
    *_KEYS, "class", "metric", "value", "ci_low", "ci_high", "p_value", "q_value",
    "equivalence_p", "equivalence_q", "verdict", "share_of_gap", "share_disadvantaged",
    "share_disadvantaged_low", "share_disadvantaged_high", "share_advantaged",
    "share_advantaged_low", "share_advantaged_high", "count_disadvantaged",
    "count_advantaged", "n_disadvantaged", "n_advantaged")
TEST_COLUMNS: tuple[str, ...] = (
    *_KEYS, "metric", "value", "ci_low", "ci_high", "tv_distance", "leading_class",
    "leading_share", "statistic", "df", "p_value", "method", "tables", "min_expected",
    "small_cells", "classes_absent", "q_value", "equivalence_p", "equivalence_q", "bound",
    "verdict", "n_disadvantaged", "n_advantaged", "note")
STRATEGY_COLUMNS: tuple[str, ...] = (
    "audit", "strategy", "code", "model", "status", "reason", "accuracy", "balanced_accuracy",
    "n_test")
REPLICATE_COLUMNS: tuple[str, ...] = ("replicate", *(c for c in TEST_COLUMNS if c not in (
    "q_value", "equivalence_p", "equivalence_q", "bound", "verdict")))
_STREAM = name_stream("multiclass")
"""The joint tests' draws (only past the exact test's limit): ``(stream, *row set key,
attribute)``."""


@dataclass(frozen=True, slots=True)
class _RowSet:
    strategy: str
    model: str
    row_set: str
    labels: np.ndarray
    rows: np.ndarray
    """Prepared positions of the labels."""
    key: tuple[int, ...]
    """Its seed key: ``(0,)`` every row, ``(1,)`` the test rows, ``(2, replicate, strategy key,
    family index)`` a cell."""


@dataclass(slots=True)
class ClassTables:
    """The multi-class tables of one audit (module docstring)."""

    class_gaps: pd.DataFrame
    class_tests: pd.DataFrame
    strategies: pd.DataFrame
    class_replicates: pd.DataFrame | None = None


def _cell_set(cell: ClassCell) -> _RowSet:
    return _RowSet(cell.strategy.value, cell.family.value, "test", cell.predicted,
                   cell.test_index, (2, cell.replicate, *position(cell.strategy, cell.family)))


def _row_sets(data: PreparedAudit, cells: Sequence[ClassCell],
              given: Sequence[Given]) -> list[_RowSet]:
    test = data.test_index
    sets = [_RowSet(OBSERVED, _RECORDED, "all", data.y, np.arange(len(data.y)), (0,)),
            _RowSet(OBSERVED, _RECORDED, "test", data.y[test], test, (1,))]
    sets += [_RowSet(GIVEN, g.name, g.row_set, g.labels, g.rows, (3, i))
             for i, g in enumerate(given)]
    return sets + [_cell_set(c) for c in cells if c.replicate == 0]


@dataclass(frozen=True, slots=True)
class Given:
    """A model no one here trained: its predicted class per row of ``rows`` (prepared
    positions), audited as the row set ``(GIVEN, name)`` on ``row_set`` (``test``: the held-out
    rows; ``all``)."""

    name: str
    labels: np.ndarray
    rows: np.ndarray
    row_set: str = "test"


GIVEN = "deployed"
"""The strategy of a given model's row set (as a deployed system's in the grid's tables)."""


def audit_class_predictions(data: PreparedAudit, reader: PredictionsReader, *, name: str,
                            stats: StatsConfig, verdicts: VerdictsConfig,
                            audited: np.ndarray | None = None) -> tuple[ClassTables, np.ndarray]:
    """``faircode audit`` of a multi-class audit: the predicted classes of ``reader`` (a
    predictions file read with the manifest's classes) on the ``audited`` rows it covers
    (default every covered row), beside the recorded outcome; the tables and, per audit row,
    whether the file covers it."""
    labels = np.zeros(len(data.y), dtype=np.int8)
    covered = np.zeros(len(data.y), dtype=bool)
    for part in reader.chunks():
        assert part.decision is not None  # a class per row (the reader checked it)
        labels[part.positions] = part.decision
        covered[part.positions] = True
    rows = np.flatnonzero(covered) if audited is None else audited[covered[audited]]
    given = Given(name, labels[rows], rows, "all" if audited is None else "test")
    return class_tables(data, (), stats=stats, verdicts=verdicts, given=(given,)), covered


def _rows(audit: str, data: PreparedAudit, row_set: _RowSet, *, stats: StatsConfig,
          classes: Sequence[str]) -> tuple[list[dict], list[dict]]:
    """The class-gap rows and the joint-test rows of one row set (verdicts to come)."""
    gaps, tests = [], []
    for a, attribute in enumerate(data.manifest.protected_attributes):
        dis = data.disadvantaged[attribute.name][row_set.rows]
        table = class_counts(row_set.labels, dis, n_classes=len(classes))
        found = class_gaps(table, confidence=stats.confidence)
        joint = joint_test(table, n_permutations=stats.n_permutations,
                           seed=child_seed(data.manifest.random_state, _STREAM, *row_set.key,
                                           a))
        keys = {"audit": audit, "strategy": row_set.strategy, "model": row_set.model,
                "row_set": row_set.row_set, "protected_attribute": attribute.name}
        n_d, n_a = (int(x) for x in table.sum(axis=1))
        for j, name in enumerate(classes):
            gaps.append({**keys, "class": name, "metric": Metric.CLASS_SHARE_GAP.value,
                         "value": found.gap[j], "ci_low": found.gap_low[j],
                         "ci_high": found.gap_high[j], "p_value": found.p_value[j],
                         "share_of_gap": found.share_of_gap[j],
                         "share_disadvantaged": found.share[0, j],
                         "share_disadvantaged_low": found.share_low[0, j],
                         "share_disadvantaged_high": found.share_high[0, j],
                         "share_advantaged": found.share[1, j],
                         "share_advantaged_low": found.share_low[1, j],
                         "share_advantaged_high": found.share_high[1, j],
                         "count_disadvantaged": int(table[0, j]),
                         "count_advantaged": int(table[1, j]),
                         "n_disadvantaged": n_d, "n_advantaged": n_a})
        tests.append({**keys, **_joint(found, joint, classes, confidence=stats.confidence),
                      "n_disadvantaged": n_d, "n_advantaged": n_a})
    return gaps, tests


def _joint(found: ClassGaps, joint: JointTest, classes: Sequence[str], *,
           confidence: float) -> dict[str, object]:
    """A row set's joint-test row under one attribute (module docstring)."""
    component = 1.0 - (1.0 - confidence) / len(classes)  # Bonferroni over the classes
    low, high = [], []
    for j in range(len(classes)):
        evidence = v.from_interval(found.gap[j:j + 1], found.gap_low[j:j + 1],
                                   found.gap_high[j:j + 1], confidence=confidence)
        lo, hi = evidence.interval(component)
        straddles = lo[0] <= 0 <= hi[0]
        low.append(0.0 if straddles else min(abs(lo[0]), abs(hi[0])))
        high.append(max(abs(lo[0]), abs(hi[0])))
    leading = int(np.nanargmax(found.share_of_gap)) if np.isfinite(
        found.share_of_gap).any() else None
    informative = np.isfinite(joint.statistic)
    return {"metric": Metric.CLASS_MAX_GAP.value,
            "value": float(np.nanmax(np.abs(found.gap))) if informative else np.nan,
            "ci_low": min(1.0, max(low)) if informative else np.nan,
            "ci_high": min(1.0, max(high)) if informative else np.nan,
            "tv_distance": found.tv_distance if informative else np.nan,
            "leading_class": classes[leading] if leading is not None and informative else "",
            "leading_share": found.share_of_gap[leading] if leading is not None
            and informative else np.nan,
            "statistic": joint.statistic, "df": joint.df, "p_value": joint.p_value,
            "method": joint.method, "tables": joint.tables, "min_expected": joint.min_expected,
            "small_cells": joint.small_cells, "classes_absent": joint.classes_absent,
            "note": "" if informative else "fewer_than_two_classes_or_an_empty_group"}


def _claims(gaps: pd.DataFrame, tests: pd.DataFrame, *, stats: StatsConfig,
            verdicts: VerdictsConfig) -> None:
    """The q-values, equivalence tests and verdicts of both tables, in place (module
    docstring)."""
    alpha, margin = stats.alpha, verdicts.margin
    evidence = v.from_interval(gaps["value"].to_numpy(float), gaps["ci_low"].to_numpy(float),
                               gaps["ci_high"].to_numpy(float), confidence=stats.confidence)
    gaps["equivalence_p"] = evidence.p_equivalence(-margin, margin)
    gaps["q_value"] = benjamini_hochberg(gaps["p_value"].to_numpy(float))
    gaps["equivalence_q"] = benjamini_hochberg(gaps["equivalence_p"].to_numpy(float))
    low, high = gaps["ci_low"].to_numpy(float), gaps["ci_high"].to_numpy(float)
    informative = np.isfinite(gaps["p_value"].to_numpy(float))
    gaps["verdict"] = v.gap_verdicts(
        informative=informative, gap=(gaps["q_value"] < alpha) & ((low > 0) | (high < 0)),
        parity=gaps["equivalence_q"] < alpha)
    eq_low, eq_high = evidence.interval(1.0 - 2.0 * alpha)
    per_class = gaps.loc[:, [*_KEYS, "equivalence_p"]].assign(
        bound=np.abs(v.far_end(eq_low, eq_high)))
    by_set = per_class.groupby(list(_KEYS), sort=False)
    index = pd.MultiIndex.from_frame(tests.loc[:, list(_KEYS)])
    tests["equivalence_p"] = by_set["equivalence_p"].max().reindex(index).to_numpy()
    tests["bound"] = by_set["bound"].max().reindex(index).to_numpy()
    tests["q_value"] = benjamini_hochberg(tests["p_value"].to_numpy(float))
    tests["equivalence_q"] = benjamini_hochberg(tests["equivalence_p"].to_numpy(float))
    tests["verdict"] = v.gap_verdicts(informative=np.isfinite(tests["statistic"].to_numpy(float)),
                                      gap=tests["q_value"] < alpha,
                                      parity=tests["equivalence_q"] < alpha)


def _strategies(audit: str, data: PreparedAudit, cells: Sequence[ClassCell]) -> pd.DataFrame:
    rows = []
    for info in STRATEGY_TABLE:
        reason = not_applicable_reason(info.strategy, MULTICLASS.name)
        for family in ModelFamily:
            cell = next((c for c in cells if c.replicate == 0 and c.strategy is info.strategy
                         and c.family is family), None)
            row = {"audit": audit, "strategy": info.strategy.value, "code": info.code,
                   "model": family.value, "status": NOT_APPLICABLE if reason else "fitted",
                   "reason": reason, "accuracy": np.nan, "balanced_accuracy": np.nan,
                   "n_test": np.nan}
            if cell is not None:
                truth = data.y[cell.test_index]
                recalls = [float((cell.predicted[truth == k] == k).mean())
                           for k in np.unique(truth)]
                row.update(accuracy=float((cell.predicted == truth).mean()),
                           balanced_accuracy=float(np.mean(recalls)),
                           n_test=int(truth.size))
            rows.append(row)
    return pd.DataFrame(rows, columns=list(STRATEGY_COLUMNS))


def class_tables(data: PreparedAudit, cells: Sequence[ClassCell], *, stats: StatsConfig,
                 verdicts: VerdictsConfig, given: Sequence[Given] = ()) -> ClassTables:
    """The tables of one multi-class audit (module docstring) from its prepared rows, its
    grid's cells (every replicate; replicate 0's are the main tables') and the ``given``
    models' predictions."""
    audit = data.manifest.name
    classes = tuple(str(c) for c in data.manifest.target.values or ())
    gap_rows, test_rows = [], []
    for row_set in _row_sets(data, cells, given):
        gaps, tests = _rows(audit, data, row_set, stats=stats, classes=classes)
        gap_rows += gaps
        test_rows += tests
    gaps_frame = pd.DataFrame(gap_rows, columns=list(GAP_COLUMNS))
    tests_frame = pd.DataFrame(test_rows, columns=list(TEST_COLUMNS))
    _claims(gaps_frame, tests_frame, stats=stats, verdicts=verdicts)
    replicates = None
    if any(c.replicate > 0 for c in cells):
        rows = []
        for cell in (c for c in cells if c.replicate > 0):
            _, tests = _rows(audit, data, _cell_set(cell), stats=stats, classes=classes)
            rows += [{"replicate": cell.replicate, **t} for t in tests]
        replicates = pd.DataFrame(rows).loc[:, list(REPLICATE_COLUMNS)]
    return ClassTables(gaps_frame, tests_frame, _strategies(audit, data, cells), replicates)
