"""The fairness metrics: one table (:data:`METRIC_TABLE`) of what each metric is.

Every fact about a metric lives in its :class:`MetricInfo` record -- its name, short code (the
MLflow key), the label a reader sees, the confusion cells of the group rate it compares (or the
signed components of a magnitude), its scale, the metrics whose test it shares, whether it needs
a ground truth, its seed stream and the task kinds it applies to -- and every other module reads
the table: the statistics (:mod:`faircode.stats._metric_defs` builds each metric's vectorised
value, permutation statistic and interval from these cells), power, verdicts, the effects'
families, the report's titles, MLflow's keys.  A metric that compares a group rate is one
:class:`Metric` member and one record here.

Cells are the confusion counts' order ``(TN, FP, FN, TP)`` (:mod:`faircode.stats.resampling`),
on labels oriented so that 1 is the favourable outcome.

Design decisions
----------------
* **Scales.**  ``difference``: disadvantaged minus advantaged rate (no gap 0); ``ratio``: their
  ratio (no gap 1; tested on the log scale, permuted as the difference of the same rates);
  ``magnitude``: ``max(|component|)`` of signed difference metrics (no sign; its claims come from
  its components).
* **Twins.**  ``same_null``: another metric whose null hypothesis this one's is (same rates on
  the same rows): this metric reports that one's permutation p-value and enters the audit's
  Benjamini-Hochberg family once, through it.  ``same_value``: another metric this one repeats
  (same value, interval and margin): its paired effect and its equivalence test are that one's,
  counted once.
* **Seeds by name, not position.**  ``stream`` keys the metric's random streams: the eight
  metrics that existed when keys were named keep their former positions (0-7, so no number
  changed); any other leaves it None and takes :func:`faircode.core.seeds.name_stream` of its
  name (:attr:`MetricInfo.key`), so adding a metric anywhere in the table changes no other draw.
* **Task kinds.**  ``kinds`` says which kinds of audit (or views of one) a metric is reported
  for (:mod:`faircode.core.kinds` derives each kind's metrics from it, :func:`metrics_of`).  A
  binary decision's metric compares a group rate of confusion cells; a metric of another kind
  (a regression's ``mean_difference``, ``ks_distance``, ...; a multi-class outcome's
  ``class_share_gap``; a ranking's ``exposure_ratio``) has no cells: its value is computed by
  its kind's statistics (:mod:`faircode.stats.continuous`, :mod:`faircode.stats.multiclass`,
  :mod:`faircode.stats.ranking`), and it may have a scale a rate has not -- ``distance``
  (non-negative, no gap 0: a distance between two distributions) or ``level`` (a level that is
  no gap, such as the worst group's error: an interval and its twin's test, no parity verdict).
  :data:`FAIRNESS_METRICS` and every binary table read the binary metrics only.
* **Import-light** (the standard library and :mod:`faircode.core`): the configuration and the
  stages' fast paths read it without numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from faircode.core.cells import BINARY
from faircode.core.errors import describe
from faircode.core.seeds import NAMED, name_stream

__all__ = [
    "ALL",
    "DECISION_METRICS",
    "FAIRNESS_METRICS",
    "FN",
    "FP",
    "METRIC_CODES",
    "METRIC_TABLE",
    "NOT_APPLICABLE",
    "TN",
    "TP",
    "Y0",
    "Y1",
    "YHAT1",
    "Metric",
    "MetricInfo",
    "Scale",
    "metric_info",
    "metrics_of",
    "no_gap",
    "table_of",
]

TN, FP, FN, TP = 0, 1, 2, 3
"""The confusion cells, in the counts' order."""
ALL, Y1, Y0, YHAT1 = (TN, FP, FN, TP), (FN, TP), (TN, FP), (FP, TP)
"""Row sets as cells: every row; true outcome favourable; unfavourable; decided favourable."""

Scale = Literal["difference", "ratio", "magnitude", "distance", "level"]
_SCALES: tuple[str, ...] = ("difference", "ratio", "magnitude", "distance", "level")
_CELL_SCALES: tuple[str, ...] = ("difference", "ratio", "magnitude")
"""The scales of a binary decision's metric (a group rate of cells, or a magnitude)."""
REGRESSION = frozenset({"regression"})
"""The task kinds of a regression audit's metrics."""
MULTICLASS = frozenset({"multiclass"})
"""The task kinds of a multi-class outcome's metrics."""
RANKING = frozenset({"ranking"})
"""The ranking view of a scored audit (not a task kind of its own: any audit with a score)."""


class Metric(StrEnum):
    """The fairness metrics, in result order (:data:`METRIC_TABLE` says what each one is)."""

    DEMOGRAPHIC_PARITY = "demographic_parity_diff"
    DISPARATE_IMPACT = "disparate_impact_ratio"
    EQUAL_OPPORTUNITY = "equal_opportunity_diff"
    EQUALIZED_ODDS = "equalized_odds_diff"
    PREDICTIVE_PARITY = "predictive_parity_diff"
    ACCURACY_EQUALITY = "accuracy_equality_diff"
    TPR_GAP = "tpr_gap"
    FPR_GAP = "fpr_gap"
    MEAN_DIFFERENCE = "mean_difference"
    MEAN_RATIO = "mean_ratio"
    Q10_GAP = "q10_gap"
    Q50_GAP = "q50_gap"
    Q90_GAP = "q90_gap"
    KS_DISTANCE = "ks_distance"
    MAE_GAP = "mae_gap"
    BOUNDED_GROUP_LOSS = "bounded_group_loss"
    RESIDUAL_GAP = "residual_gap"
    CLASS_SHARE_GAP = "class_share_gap"
    CLASS_MAX_GAP = "class_max_gap"
    EXPOSURE_RATIO = "exposure_ratio"


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """Everything the benchmark knows about one fairness metric (module docstring).

    ``numerator`` and ``denominator`` are the cells of the group rate a difference or ratio
    compares (a rate's denominator is the row set its permutation test shuffles within);
    a magnitude has none and names its signed ``components`` instead.  ``code`` is its short
    name (MLflow keys; its name where it has none), ``label`` what a reader sees,
    ``ground_truth`` whether it compares decisions with a true outcome (a system whose decision
    *is* the outcome has none), ``stream`` its explicit seed key (None: from its name).
    """

    metric: Metric
    code: str
    label: str
    scale: Scale
    numerator: tuple[int, ...] = ()
    denominator: tuple[int, ...] = ()
    components: tuple[Metric, ...] = ()
    same_null: Metric | None = None
    same_value: Metric | None = None
    ground_truth: bool = True
    stream: int | None = None
    kinds: frozenset[str] = BINARY

    def __post_init__(self) -> None:
        where = f"MetricInfo({self.metric})"
        if self.scale not in _SCALES:
            raise ValueError(f"{where}: scale: expected one of {', '.join(_SCALES)}, got "
                             f"{describe(self.scale)}")
        if not self.cells:  # another kind's metric: its statistics compute it, no cells
            if self.numerator or self.denominator or (
                    self.components and self.scale != "magnitude"):
                raise ValueError(f"{where}: expected no cells (components only for a "
                                 f"magnitude) for a metric of {', '.join(sorted(self.kinds))}")
            self._check_names()
            return
        if self.scale not in _CELL_SCALES:
            raise ValueError(f"{where}: scale: expected one of {', '.join(_CELL_SCALES)} for a "
                             f"binary decision's metric, got {describe(self.scale)}")
        rate = self.scale != "magnitude"
        if rate != bool(self.numerator and self.denominator) or rate == bool(self.components):
            raise ValueError(f"{where}: expected numerator and denominator cells for a "
                             "difference or ratio, components (only) for a magnitude")
        if not set(self.numerator) <= set(self.denominator) <= set(ALL):
            raise ValueError(f"{where}: numerator: expected cells of the denominator, within "
                             f"{ALL}, got {self.numerator} of {self.denominator}")
        self._check_names()

    def _check_names(self) -> None:
        where = f"MetricInfo({self.metric})"
        if self.stream is not None and (isinstance(self.stream, bool) or not isinstance(
                self.stream, int) or not 0 <= self.stream < NAMED):
            raise ValueError(f"{where}: stream: expected None or an int in [0, 2**32), got "
                             f"{describe(self.stream)}")
        if not self.code or not self.label or not self.kinds:
            raise ValueError(f"{where}: code, label, kinds: expected non-empty values")

    @property
    def cells(self) -> bool:
        """Whether it is a binary decision's metric, a function of confusion cells."""
        return "binary" in self.kinds

    @property
    def name(self) -> str:
        """The metric's name, as the tables' ``metric`` column spells it."""
        return self.metric.value

    @property
    def key(self) -> int:
        """Its seed key: ``stream``, else :func:`faircode.core.seeds.name_stream` of its name."""
        return name_stream(self.name) if self.stream is None else self.stream

    @property
    def parity(self) -> float:
        """Its value at no gap: 1 for a ratio, else 0."""
        return 1.0 if self.scale == "ratio" else 0.0


_M = Metric
METRIC_TABLE: tuple[MetricInfo, ...] = (
    MetricInfo(_M.DEMOGRAPHIC_PARITY, "dp", "parity gap", "difference", YHAT1, ALL,
               ground_truth=False, stream=0),
    MetricInfo(_M.DISPARATE_IMPACT, "di", "disparate impact", "ratio", YHAT1, ALL,
               same_null=_M.DEMOGRAPHIC_PARITY, ground_truth=False, stream=1),
    MetricInfo(_M.EQUAL_OPPORTUNITY, "eopp", "equal opportunity", "difference", (TP,), Y1,
               stream=2),
    MetricInfo(_M.EQUALIZED_ODDS, "eodds", "equalized odds", "magnitude",
               components=(_M.TPR_GAP, _M.FPR_GAP), stream=3),
    MetricInfo(_M.PREDICTIVE_PARITY, "ppar", "predictive parity", "difference", (TP,), YHAT1,
               stream=4),
    MetricInfo(_M.ACCURACY_EQUALITY, "acc_eq", "accuracy equality", "difference", (TN, TP), ALL,
               stream=5),
    MetricInfo(_M.TPR_GAP, "tpr_gap", "TPR gap", "difference", (TP,), Y1,
               same_null=_M.EQUAL_OPPORTUNITY, same_value=_M.EQUAL_OPPORTUNITY, stream=6),
    MetricInfo(_M.FPR_GAP, "fpr_gap", "FPR gap", "difference", (FP,), Y0, stream=7),
    # a regression's (faircode.stats.continuous): no cells, every seed key from its name
    MetricInfo(_M.MEAN_DIFFERENCE, "mean_diff", "mean gap", "difference", ground_truth=False,
               kinds=REGRESSION),
    MetricInfo(_M.MEAN_RATIO, "mean_ratio", "mean ratio", "ratio",
               same_null=_M.MEAN_DIFFERENCE, ground_truth=False, kinds=REGRESSION),
    MetricInfo(_M.Q10_GAP, "q10", "10th-percentile gap", "difference", ground_truth=False,
               kinds=REGRESSION),
    MetricInfo(_M.Q50_GAP, "q50", "median gap", "difference", ground_truth=False,
               kinds=REGRESSION),
    MetricInfo(_M.Q90_GAP, "q90", "90th-percentile gap", "difference", ground_truth=False,
               kinds=REGRESSION),
    MetricInfo(_M.KS_DISTANCE, "ks", "distribution distance (KS)", "distance",
               ground_truth=False, kinds=REGRESSION),
    MetricInfo(_M.MAE_GAP, "mae_gap", "error gap (MAE)", "difference", kinds=REGRESSION),
    MetricInfo(_M.BOUNDED_GROUP_LOSS, "bgl", "worst group's MAE (bounded group loss)", "level",
               same_null=_M.MAE_GAP, kinds=REGRESSION),
    MetricInfo(_M.RESIDUAL_GAP, "resid_gap", "mean residual gap", "difference",
               kinds=REGRESSION),
    # a multi-class outcome's (faircode.stats.multiclass) and a ranking's
    # (faircode.stats.ranking): no cells, every seed key from its name
    MetricInfo(_M.CLASS_SHARE_GAP, "cls_gap", "class share gap", "difference",
               ground_truth=False, kinds=MULTICLASS),
    MetricInfo(_M.CLASS_MAX_GAP, "cls_max", "largest class share gap", "magnitude",
               components=(_M.CLASS_SHARE_GAP,), ground_truth=False, kinds=MULTICLASS),
    MetricInfo(_M.EXPOSURE_RATIO, "expo", "exposure ratio", "ratio", ground_truth=False,
               kinds=RANKING),
)
"""The fairness metrics in result order (:class:`MetricInfo`): the one table every module reads."""

_BY_NAME: dict[str, MetricInfo] = {m.name: m for m in METRIC_TABLE}


def table_of(kind: str) -> tuple[MetricInfo, ...]:
    """The records of the metrics of the task kind (or view) ``kind``, in result order."""
    return tuple(m for m in METRIC_TABLE if kind in m.kinds)


def metrics_of(kind: str) -> tuple[str, ...]:
    """The names of the metrics of the task kind (or view) ``kind``, in result order."""
    return tuple(m.name for m in table_of(kind))


FAIRNESS_METRICS: tuple[str, ...] = metrics_of("binary")
"""The binary decisions' metrics' names in result order (every binary table's)."""

DECISION_METRICS: tuple[str, ...] = tuple(m.name for m in table_of("binary")
                                          if not m.ground_truth)
"""The fairness metrics of decisions alone: all a system whose decision *is* the recorded outcome
(people's decisions, manifest ``system.decision: outcome``) can be scored on."""

METRIC_CODES: dict[str, str] = {m.name: m.code for m in METRIC_TABLE if m.code != m.name}
"""The metrics' short codes, where they have one (``tpr_gap`` keeps its name)."""

NOT_APPLICABLE = "not_applicable:decision_is_outcome"
"""The note of every number that needs a ground truth on such a system (an error rate, an
accuracy): the value is NaN by design, never 0 and never an error."""


def metric_info(metric: str) -> MetricInfo:
    """The record of ``metric`` (a name), else a ValueError naming the metrics."""
    try:
        return _BY_NAME[metric]
    except (KeyError, TypeError):
        raise ValueError(f"metric: expected one of {', '.join(_BY_NAME)}, got "
                         f"{describe(metric)}") from None


def no_gap(metric: str) -> float:
    """The value of ``metric`` at no gap: 1 for a ratio, 0 for a difference, a magnitude and any
    name that is no fairness metric (an effect, a performance metric)."""
    info = _BY_NAME.get(metric)
    return 0.0 if info is None else info.parity


def _check_table() -> None:
    """The table's invariants, at import: one record per metric in enum order, distinct codes
    and seed keys, twins and components that are metrics of the same rows."""
    if tuple(m.metric for m in METRIC_TABLE) != tuple(Metric):
        raise ValueError("METRIC_TABLE: expected one record per Metric, in its order")
    for field in ("code", "key"):
        if len({getattr(m, field) for m in METRIC_TABLE}) != len(METRIC_TABLE):
            raise ValueError(f"METRIC_TABLE: {field}: expected distinct values")
    for m in METRIC_TABLE:
        for twin in (m.same_null, m.same_value):
            if twin is None:
                continue
            other = _BY_NAME[twin]
            if twin is m.metric or other.same_null or other.same_value:
                raise ValueError(f"METRIC_TABLE: {m.name}: twin {twin}: expected another "
                                 "metric, itself no twin")
            if other.denominator != m.denominator or other.scale == "magnitude" \
                    or other.kinds != m.kinds:
                raise ValueError(f"METRIC_TABLE: {m.name}: twin {twin}: expected a rate on the "
                                 "same rows (the same null)")
        if m.same_value is not None and (
                m.same_null is not m.same_value or _BY_NAME[m.same_value].numerator
                != m.numerator or _BY_NAME[m.same_value].scale != m.scale):
            raise ValueError(f"METRIC_TABLE: {m.name}: same_value: expected the same rate, "
                             "scale and null")
        if any(_BY_NAME[c].scale != "difference" or _BY_NAME[c].kinds != m.kinds
               for c in m.components):
            raise ValueError(f"METRIC_TABLE: {m.name}: components: expected differences of "
                             "its kinds")


_check_table()
