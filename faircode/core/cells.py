"""The grid's vocabulary: its strategies (one table, :data:`STRATEGY_TABLE`), its model families and
the cells they make.

Every fact about a strategy lives in its :class:`StrategyInfo` record -- its code (``S0`` ...),
the label a reader sees, its colour in every figure, the fit stage (part) that fits it and the
``mitigation.*`` keys that part reads, what it needs and gives (a cutoff on a score, the
sensitive feature at predict time), the strategies it is compared with, whether its cells get
bagged ensembles (the arbitrariness stage), and the task kinds it applies to -- and every other
module reads the table: the grid and its DVC fit stages, the
effects' comparisons, the summary and headline keys, the report's colours and legends, the MLflow
names.  A new strategy is one :class:`Strategy` member, one record here and its implementation
(:mod:`faircode.grid.strategies`).

Design decisions
----------------
* **Records, in report order.**  The table's order is the order results are reported in; a
  strategy's seed key is its own (:attr:`StrategyInfo.key`: S0-S4 keep their explicit keys, the
  numbers 0-4 they had as grid positions; any later one takes
  :func:`faircode.core.seeds.name_stream` of its name), never its place in a list, and a
  comparison's is its own (:class:`Against`, :class:`Matched`), so adding a strategy changes no
  other number.
* **A strategy that does not apply to a task kind says why**: ``not_applicable`` holds, per
  kind outside ``kinds``, the reason a reader sees in its place (``n/a``, never a number):
  :func:`applies` and :func:`not_applicable_reason`.
* **A family's name by kind** (:func:`family_name`): the grid's first family is a logistic
  regression for a binary decision (multinomial for a multi-class outcome) and a linear
  regression for a regression; its code stays
  ``LR`` and its seed key its place.
* **Import-light**: standard library and :mod:`faircode.core.seeds` only (no numpy), so the
  stages' fast paths (an audit without data) can build their headers from the table.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from enum import StrEnum

from faircode.core.errors import describe
from faircode.core.seeds import NAMED, name_stream

__all__ = [
    "BAGGED_STRATEGIES",
    "BINARY",
    "COMPARISONS",
    "CUTOFF_STRATEGIES",
    "FAMILY_CODES",
    "FIT_PARTS",
    "MATCHED",
    "STRATEGY_CODES",
    "STRATEGY_TABLE",
    "STRATEGY_TITLES",
    "Against",
    "Comparison",
    "Matched",
    "ModelFamily",
    "Strategy",
    "StrategyInfo",
    "applies",
    "family_name",
    "grid_cells",
    "not_applicable_reason",
    "position",
    "strategy_code",
    "strategy_info",
]

BINARY = frozenset({"binary"})
"""The task kinds of a binary-decision audit."""
MULTICLASS = frozenset({"multiclass"})
"""The task kinds of a multi-class outcome's audit."""
BINARY_AND_REGRESSION = frozenset({"binary", "regression"})
"""The task kinds of a strategy that fits a model of a decision or a number (S0-S3; S0-S2 also
fit a multi-class outcome's multinomial models)."""


class Strategy(StrEnum):
    """The strategies, in the order results are reported (:data:`STRATEGY_TABLE` says the rest)."""

    BASELINE = "baseline"
    UNAWARENESS = "unawareness"
    UNAWARENESS_PROXY_REMOVAL = "unawareness_proxy_removal"
    IN_PROCESSING = "in_processing"
    POST_PROCESSING = "post_processing"
    RELAXED_POST_PROCESSING = "relaxed_post_processing"


class ModelFamily(StrEnum):
    """The three model families of the grid, in the order results are reported."""

    LOGISTIC_REGRESSION = "logistic_regression"
    RANDOM_FOREST = "random_forest"
    GRADIENT_BOOSTING = "gradient_boosting"


def _check_stream(where: str, stream: int | None) -> None:
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)
                               or not 0 <= stream < NAMED):
        raise ValueError(f"{where}: stream: expected None or an int in [0, 2**32), got "
                         f"{describe(stream)}")


@dataclass(frozen=True, slots=True)
class Against:
    """One comparison of a strategy with ``reference``: a paired effect of ``effects.csv``.

    ``stream`` is its seed key (after :attr:`faircode.core.seeds.Stream.EFFECTS`): explicit for
    the comparisons that existed when keys were named (their former positions), None for any
    other, which then takes :func:`faircode.core.seeds.name_stream` of ``"<strategy>-<reference>"``.
    """

    reference: Strategy
    stream: int | None = None

    def __post_init__(self) -> None:
        _check_stream("Against", self.stream)


@dataclass(frozen=True, slots=True)
class Matched:
    """A matched-violation comparison of a strategy with a tolerance curve against ``reference``
    (``matched.csv``, :mod:`faircode.evaluate.matched`): the strategy's curve is read at the
    violation ``reference`` reaches on its own training rows (``tolerance`` None), or at the
    fixed ``tolerance``; its seed key is :func:`faircode.core.seeds.name_stream` of
    ``"<strategy>-<reference>-matched"``."""

    reference: Strategy
    tolerance: float | None = None

    def __post_init__(self) -> None:
        t = self.tolerance
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)
                              or not 0 <= t <= 1):
            raise ValueError(f"Matched: tolerance: expected None or a number in [0, 1], got "
                             f"{describe(t)}")


_COLOUR = re.compile(r"#[0-9A-F]{6}")
_PART = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True, slots=True)
class StrategyInfo:
    """Everything the benchmark knows about one strategy (module docstring).

    ``number`` makes its code (``S<number>``) and keys its grid cells' seeds; ``label`` names it
    in every legend and ``what`` says in a few words what it does (the report's legend); ``part``
    is the
    DVC fit stage that fits it (``fit_<part>``) and ``reads`` the ``mitigation.*`` keys that fit
    reads; ``cutoff``: its decisions are a cutoff on its deterministic score (a threshold curve;
    the declared decision rule moves it), else they are drawn at fit time (randomised);
    ``score``: it gives a score (an AUC); ``sensitive_at_predict``: it needs the sensitive
    feature to decide; ``against``: the strategies it is compared with; ``kinds``: the task
    kinds it applies to.
    """

    strategy: Strategy
    number: int
    label: str
    what: str
    colour: str
    part: str
    reads: frozenset[str] = frozenset()
    cutoff: bool = False
    score: bool = True
    sensitive_at_predict: bool = False
    against: tuple[Against, ...] = ()
    bagged: bool = False
    """Its binary cells get an ensemble of bagged members (:mod:`faircode.grid.bagging`: the
    self-consistency of their decisions and the set of models; a cheap fit, decided by a
    cutoff)."""
    kinds: frozenset[str] = BINARY
    stream: int | None = None
    draws: Strategy | None = None
    matched: tuple[Matched, ...] = ()
    not_applicable: tuple[tuple[str, str], ...] = ()
    """``(kind, reason)`` for each task kind it does not apply to and says why."""

    def __post_init__(self) -> None:
        where = f"StrategyInfo({self.strategy})"
        _check_stream(where, self.stream)
        if isinstance(self.number, bool) or not isinstance(self.number, int) or not (
                0 <= self.number < 100):
            raise ValueError(f"{where}: number: expected an int in [0, 100), got "
                             f"{describe(self.number)}")
        if not _COLOUR.fullmatch(self.colour):
            raise ValueError(f"{where}: colour: expected '#RRGGBB', got {describe(self.colour)}")
        if not _PART.fullmatch(self.part):
            raise ValueError(f"{where}: part: expected a lower-case identifier, got "
                             f"{describe(self.part)}")
        if self.cutoff and not self.score:
            raise ValueError(f"{where}: cutoff: a strategy without a score cannot decide by a "
                             "cutoff on it")
        if self.bagged and not self.cutoff:
            raise ValueError(f"{where}: bagged: a bagged ensemble votes with its members' "
                             "cutoff decisions; expected a cutoff strategy")
        if not self.label or not self.what or not self.kinds:
            raise ValueError(f"{where}: label, what, kinds: expected non-empty values")
        for kind, reason in self.not_applicable:
            if kind in self.kinds or not reason:
                raise ValueError(f"{where}: not_applicable: expected (kind, reason) of a kind "
                                 f"it does not apply to, got {describe((kind, reason))}")

    @property
    def code(self) -> str:
        """``S<number>``: the strategy's short name in every table, legend and run name."""
        return f"S{self.number}"

    @property
    def key(self) -> int:
        """Its grid cells' seed key: ``stream``, else :func:`faircode.core.seeds.name_stream`
        of its name."""
        return name_stream(self.strategy.value) if self.stream is None else self.stream


_BLACK, _ORANGE, _SKY_BLUE, _GREEN, _VERMILLION, _BLUE = (
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#D55E00", "#0072B2")  # Okabe-Ito
_S = Strategy
_NO_MULTICLASS_REDUCTION = (
    "fairlearn's reductions constrain a binary classifier (a demographic-parity or "
    "equalized-odds moment over one favourable label); they have no multi-class form "
    "(fairlearn issue 1201)")
_NO_MULTICLASS_CUTOFF = (
    "ThresholdOptimizer moves one cutoff per group on a binary score; a multi-class model has "
    "no single score to cut (fairlearn issue 1201)")
STRATEGY_TABLE: tuple[StrategyInfo, ...] = (
    StrategyInfo(_S.BASELINE, 0, "baseline", "every feature, protected attributes included",
                 _BLACK, "unmitigated", cutoff=True, stream=0, bagged=True,
                 kinds=BINARY_AND_REGRESSION | MULTICLASS),
    StrategyInfo(_S.UNAWARENESS, 1, "unawareness", "protected attributes dropped", _ORANGE,
                 "unmitigated", cutoff=True, against=(Against(_S.BASELINE, 0),), stream=1,
                 kinds=BINARY_AND_REGRESSION | MULTICLASS),
    StrategyInfo(_S.UNAWARENESS_PROXY_REMOVAL, 2, "unawareness + proxy removal",
                 "protected attributes and their proxies dropped", _SKY_BLUE, "unmitigated",
                 cutoff=True, against=(Against(_S.BASELINE, 1),), stream=2, bagged=True,
                 kinds=BINARY_AND_REGRESSION | MULTICLASS),
    StrategyInfo(_S.IN_PROCESSING, 3, "ExponentiatedGradient",
                 "fairlearn in-processing under the parity constraint (first attribute)", _GREEN,
                 "in_processing", reads=frozenset({"constraint", "eps", "max_iter"}),
                 against=(Against(_S.BASELINE, 2), Against(_S.UNAWARENESS_PROXY_REMOVAL, 4)),
                 stream=3, kinds=BINARY_AND_REGRESSION,
                 not_applicable=(("multiclass", _NO_MULTICLASS_REDUCTION),)),
    StrategyInfo(_S.POST_PROCESSING, 4, "ThresholdOptimizer",
                 "fairlearn group thresholds (first attribute), on S2's features", _VERMILLION,
                 "post_processing", reads=frozenset({"constraint"}), score=False,
                 sensitive_at_predict=True,
                 against=(Against(_S.BASELINE, 3), Against(_S.UNAWARENESS_PROXY_REMOVAL, 5)),
                 stream=4,
                 not_applicable=(("regression", "ThresholdOptimizer moves a cutoff on a score to "
                                  "equalise group decision rates; a regression predicts a "
                                  "number and has no cutoff to move"),
                                 ("multiclass", _NO_MULTICLASS_CUTOFF))),
    StrategyInfo(_S.RELAXED_POST_PROCESSING, 5, "relaxed ThresholdOptimizer",
                 "fairlearn group thresholds within a tolerance (first attribute), on the most "
                 "accurate of S0-S2's models", _BLUE, "relaxed_post_processing",
                 reads=frozenset({"constraint", "tolerances"}), score=False,
                 sensitive_at_predict=True, against=(Against(_S.BASELINE),),
                 draws=_S.POST_PROCESSING,
                 matched=(Matched(_S.IN_PROCESSING), Matched(_S.POST_PROCESSING, 0.0)),
                 not_applicable=(("regression", "a relaxed ThresholdOptimizer moves a cutoff "
                                  "on a score; a regression predicts a number and has no cutoff "
                                  "to move"),
                                 ("multiclass", "a relaxed " + _NO_MULTICLASS_CUTOFF))),
)
"""The strategies in report order (:class:`StrategyInfo`): the one table every module reads."""

_BY_STRATEGY: dict[Strategy, StrategyInfo] = {s.strategy: s for s in STRATEGY_TABLE}


def strategy_info(strategy: str) -> StrategyInfo:
    """The record of ``strategy`` (a :class:`Strategy` or its name), else a ValueError naming
    the strategies."""
    try:
        return _BY_STRATEGY[Strategy(strategy)]
    except (ValueError, KeyError):
        raise ValueError(f"strategy: expected one of {', '.join(_BY_STRATEGY)}, got "
                         f"{describe(strategy)}") from None


STRATEGY_CODES: dict[Strategy, str] = {s.strategy: s.code for s in STRATEGY_TABLE}
"""``S0`` ... by strategy (from :data:`STRATEGY_TABLE`)."""

STRATEGY_TITLES: dict[str, str] = {s.code: s.label for s in STRATEGY_TABLE}
"""What each code means to a reader (every legend: the report, the DVC plots, the README)."""

CUTOFF_STRATEGIES: tuple[Strategy, ...] = tuple(s.strategy for s in STRATEGY_TABLE if s.cutoff)
"""The strategies decided by a cutoff on their score (a threshold curve each), in order."""

BAGGED_STRATEGIES: tuple[Strategy, ...] = tuple(s.strategy for s in STRATEGY_TABLE if s.bagged)
"""The strategies whose cells get a bagged ensemble (the arbitrariness stage), in order."""

MATCHED: tuple[tuple[Strategy, Matched], ...] = tuple(
    (s.strategy, m) for s in STRATEGY_TABLE for m in s.matched)
"""Every matched-violation comparison ``(strategy, Matched)``, in table order."""

FIT_PARTS: dict[str, tuple[Strategy, ...]] = {
    part: tuple(s.strategy for s in STRATEGY_TABLE if s.part == part)
    for part in dict.fromkeys(s.part for s in STRATEGY_TABLE)}
"""The grid's parts, one DVC fit stage each, with their strategies, in grid order."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """``strategy`` against ``reference`` (a paired effect) and its seed key ``stream``."""

    strategy: Strategy
    reference: Strategy
    stream: int

    @property
    def code(self) -> str:
        """``S3-S2``."""
        return f"{STRATEGY_CODES[self.strategy]}-{STRATEGY_CODES[self.reference]}"


COMPARISONS: tuple[Comparison, ...] = tuple(
    Comparison(s.strategy, ref.strategy, name_stream(f"{s.strategy}-{ref.strategy}")
               if a.stream is None else a.stream)
    for ref in STRATEGY_TABLE for s in STRATEGY_TABLE for a in s.against
    if a.reference is ref.strategy)
"""Every comparison in result order: by reference (table order), then strategy (S1-S4 vs S0,
then S3, S4 vs S2)."""

FAMILY_CODES: dict[str, str] = {
    ModelFamily.LOGISTIC_REGRESSION: "LR",
    ModelFamily.RANDOM_FOREST: "RF",
    ModelFamily.GRADIENT_BOOSTING: "GB",
}
"""``LR``, ``RF``, ``GB``: the families' short names (figure legends, DVC metric keys)."""


def _check_table() -> None:
    """The table's invariants, at import: one record per strategy, in enum order, distinct
    numbers, one ``reads`` per part, comparisons with known references and distinct keys."""
    if tuple(s.strategy for s in STRATEGY_TABLE) != tuple(Strategy):
        raise ValueError("STRATEGY_TABLE: expected one record per Strategy, in its order")
    for field in ("number", "key"):
        if len({getattr(s, field) for s in STRATEGY_TABLE}) != len(STRATEGY_TABLE):
            raise ValueError(f"STRATEGY_TABLE: {field}: expected distinct values")
    for part, members in FIT_PARTS.items():
        if len({_BY_STRATEGY[s].reads for s in members}) != 1:
            raise ValueError(f"STRATEGY_TABLE: part {part}: expected its strategies to read the "
                             "same mitigation keys")
    for s in STRATEGY_TABLE:
        references = [a.reference for a in s.against] + [m.reference for m in s.matched]
        if s.strategy in references:
            raise ValueError(f"STRATEGY_TABLE: {s.strategy}: against, matched: compared with "
                             "itself")
        if s.draws is not None and s.draws is s.strategy:
            raise ValueError(f"STRATEGY_TABLE: {s.strategy}: draws: expected another strategy")
    if len({c.stream for c in COMPARISONS}) != len(COMPARISONS):
        raise ValueError("STRATEGY_TABLE: against: expected distinct comparison streams")


_check_table()


def applies(strategy: str, kind: str) -> bool:
    """Whether ``strategy`` is run for an audit of the task kind ``kind``."""
    return kind in strategy_info(strategy).kinds


def not_applicable_reason(strategy: str, kind: str) -> str:
    """Why ``strategy`` is not run for ``kind`` (``""`` when it is); a strategy that neither
    applies nor says why is a ValueError naming both."""
    info = strategy_info(strategy)
    if kind in info.kinds:
        return ""
    for other, reason in info.not_applicable:
        if other == kind:
            return reason
    raise ValueError(f"STRATEGY_TABLE: {info.code}: expected a reason it does not apply to "
                     f"{kind!r} (not_applicable), got none")


_FAMILY_NAMES: dict[str, dict[str, str]] = {
    "regression": {"logistic_regression": "linear_regression"},
}
"""A family's name where a task kind names it otherwise (:func:`family_name`)."""


def family_name(family: str, kind: str) -> str:
    """What the tables of an audit of ``kind`` call the grid family ``family``."""
    name = ModelFamily(family).value
    return _FAMILY_NAMES.get(kind, {}).get(name, name)


def strategy_code(strategy: str) -> str:
    """``S0``.. for a grid strategy, else the name itself (a deployed system's row set)."""
    try:
        return STRATEGY_CODES[Strategy(strategy)]
    except ValueError:
        return strategy


def grid_cells() -> list[tuple[Strategy, ModelFamily]]:
    """The strategy x model cells in grid (report) order."""
    return list(itertools.product(Strategy, ModelFamily))


def position(strategy: Strategy, family: ModelFamily) -> tuple[int, int]:
    """A cell's seed key: its strategy's key (:attr:`StrategyInfo.key`; S0-S4: their numbers)
    and its family's index in the grid."""
    return _BY_STRATEGY[Strategy(strategy)].key, list(ModelFamily).index(family)
