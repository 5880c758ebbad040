"""The manifest's value types: frozen, self-validating records of one audit's ``audit.yaml``.

Private: import these from :mod:`faircode.audit.manifest`, which re-exports them and states the
design
decisions.  The records validate what a record built in code can get wrong; the file-level checks
(key tables, one-line errors naming the key path) live in :mod:`faircode.audit._manifest_parse`.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

from faircode.audit.decision import DecisionRule
from faircode.core.errors import ManifestError, config_error
from faircode.core.names import is_safe_name
from faircode.core.schema import Scalar
from faircode.counterfactual.perturb import AxisSpec

Operator = Literal["isin", "not_isin", "equals", "not_equals", "notna", "first_by"]
TargetMethod = Literal["binary", "equals", "isin", "above_median", "threshold", "quantile",
                       "classes"]
Direction = Literal["above", "at_least"]
AttributeType = Literal["categorical", "numeric_threshold", "age_interval_threshold"]
Side = Literal["below", "above"]
DecisionMethod = Literal["isin", "equals", "threshold", "binary", "outcome"]
ScoreScale = Literal["ordinal", "probability"]
Task = Literal["binary", "multiclass"]

OPERATORS: tuple[str, ...] = get_args(Operator)
TARGET_METHODS: tuple[str, ...] = get_args(TargetMethod)
ATTRIBUTE_TYPES: tuple[str, ...] = get_args(AttributeType)
SIDES: tuple[str, ...] = get_args(Side)
TASKS: tuple[str, ...] = get_args(Task)
"""A tabular manifest's ``task``: a binary decision (the grid's, the default) or an outcome of
several classes (:mod:`faircode.audit.multiclass_manifest`); its target method ``classes``."""
DIRECTIONS: tuple[str, ...] = get_args(Direction)
DECISION_METHODS: tuple[str, ...] = ("isin", "equals", "threshold", "binary")
"""The rules that turn a system's column into its decision (``binary: true``: the column is
0/1 itself; ``outcome`` is no rule: the decision *is* the recorded outcome, :data:`OUTCOME`)."""
OUTCOME = "outcome"
SCORE_SCALES: tuple[str, ...] = get_args(ScoreScale)
"""The score scales of a deployed system; the same as :data:`faircode.stats.calibration.SCALES`
(``audit`` may not import ``stats``; ``tests/test_system.py`` checks that the two agree)."""
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def _bad(where: str, expected: str, got: object) -> ManifestError:
    """Build a record-level error (records built in code, not from a file)."""
    return cast(ManifestError, config_error(where, expected, got, cls=ManifestError))


@dataclass(frozen=True, slots=True)
class Source:
    """Where a raw file comes from and how to obtain it by hand if it cannot be downloaded."""

    url: str | None = None
    member: str | None = None
    citation: str | None = None
    license: str | None = None
    instructions: str | None = None

    def __post_init__(self) -> None:
        if self.member is not None and self.url is None:
            raise _bad("source.member", "a url to extract it from", self.url)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How the raw file is parsed: ``pandas.read_csv`` options, defaults equal to pandas' own.

    ``header`` is the 0-based index of the header row (rows above it are skipped); it is ``None``
    exactly when ``names`` lists the columns of a file without a header row.  ``missing`` holds
    extra missing-value markers, added to pandas' standard ones.
    """

    separator: str = ","
    header: int | None = 0
    encoding: str = "utf-8"
    names: tuple[str, ...] | None = None
    missing: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.separator) != 1 or self.separator in "\r\n\"":
            raise _bad("dataset.read.separator", "one character (not a quote or newline)",
                       self.separator)
        if (self.header is None) != (self.names is not None):
            raise _bad("dataset.read.header", "a header row index, or names and no header",
                       self.header)
        if self.header is not None and (isinstance(self.header, bool) or self.header < 0):
            raise _bad("dataset.read.header", "an integer >= 0", self.header)
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise _bad("dataset.read.encoding", "a known text encoding", self.encoding) from None
        if self.names is not None and len(set(self.names)) != len(self.names):
            raise _bad("dataset.read.names", "each name once", self.names)

    def pandas_kwargs(self) -> dict[str, Any]:
        """Return the keyword arguments of ``pandas.read_csv`` these options stand for."""
        kwargs: dict[str, Any] = {"sep": self.separator, "header": self.header,
                                  "encoding": self.encoding}
        if self.names is not None:
            kwargs["names"] = list(self.names)
        if self.missing:
            kwargs["na_values"] = list(self.missing)
        return kwargs


@dataclass(frozen=True, slots=True)
class RowId:
    """What identifies a raw file's row for a predictions file (``dataset.row_id``).

    ``column``: a key column of the raw file (``row_id: {column: id}``); ``None``: the row's
    0-based position among the file's data rows (``row_id: position``: the first row below the
    header is 0, the row numbering ``pandas.read_csv`` gives), which the manifest's ``sha256``
    pins -- never the order of the predictions file.
    """

    column: str | None = None

    def describe(self) -> str:
        """``column 'id'`` or ``row position (0 = the first data row)``."""
        return (f"column {self.column!r}" if self.column is not None
                else "row position (0 = the first data row)")


@dataclass(frozen=True, slots=True)
class Companion:
    """A file read with the raw file (a lazy-load database's index): where, and its digest."""

    path: Path
    sha256: str | None = None

    def __post_init__(self) -> None:
        if not self.path.is_absolute() or not is_safe_name(self.path.name):
            raise _bad("dataset.companions", "an absolute path to a safe file name",
                       str(self.path))
        if self.sha256 is not None and not _SHA_RE.match(self.sha256):
            raise _bad("dataset.companions", "64 lowercase hex digits", self.sha256)


@dataclass(frozen=True, slots=True)
class DatasetSpec:
    """The raw file: resolved absolute path, the path as written, expected digest and size,
    provenance."""

    path: Path
    declared_path: str
    sha256: str | None = None
    source: Source | None = None
    unit: str | None = None
    read: ReadOptions = ReadOptions()
    object: str | None = None
    """The R object (a data frame) to read from an R data file; None for a CSV file."""
    mirror: str | None = None
    """The folder of each data mirror that holds the file (None: the audit's name)."""
    row_id: RowId | None = None
    """How a predictions file names this file's rows (``faircode audit``); None: undeclared."""
    size: int | None = None
    """The raw file's size in bytes, if declared: a download's size cap."""
    companions: tuple[Companion, ...] = ()
    """The other files read with it (a lazy-load database's index), beside it."""

    def __post_init__(self) -> None:
        if not self.path.is_absolute():
            raise _bad("dataset.path", "a resolved absolute path", str(self.path))
        if self.object is not None and self.read != ReadOptions():
            raise _bad("dataset.read", "no CSV reading options for an R data file", self.read)
        if self.size is not None and (isinstance(self.size, bool) or not isinstance(
                self.size, int) or self.size < 1):
            raise _bad("dataset.size", "a positive integer (bytes)", self.size)
        if self.sha256 is not None and not _SHA_RE.match(self.sha256):
            raise _bad("dataset.sha256", "64 lowercase hex digits", self.sha256)
        if self.row_id is not None and self.row_id.column is None and self.sha256 is None:
            raise _bad("dataset.row_id", "a dataset.sha256 pinning the row order of "
                       "'position'", None)
        for companion in self.companions:
            if companion.path.parent != self.path.parent or companion.path == self.path:
                raise _bad("dataset.companions", f"other files beside {self.path.name}",
                           str(companion.path))


@dataclass(frozen=True, slots=True)
class RowFilter:
    """One row filter: keep rows of ``column`` satisfying ``operator`` with ``value``."""

    column: str
    operator: Operator
    value: Scalar | tuple[Scalar, ...] | None = None

    def __post_init__(self) -> None:
        if self.operator not in OPERATORS:
            raise _bad("row_filters.operator", f"one of {', '.join(OPERATORS)}", self.operator)

    def describe(self) -> str:
        """Return a short human-readable form, e.g. ``race not_isin ['?']``."""
        if self.operator == "notna":
            return f"{self.column} notna"
        if self.operator == "first_by":
            return f"first row per {self.column} by {self.value}"
        shown = list(self.value) if isinstance(self.value, tuple) else self.value
        return f"{self.column} {self.operator} {shown!r}"


@dataclass(frozen=True, slots=True)
class Target:
    """How the binary label is derived, and which label is the favourable decision."""

    column: str
    method: TargetMethod
    value: Scalar | None = None
    values: tuple[Scalar, ...] | None = None
    favourable: Literal[0, 1] = 1
    threshold: float | None = None
    quantile: float | None = None
    direction: Direction | None = None

    def __post_init__(self) -> None:
        if self.method not in TARGET_METHODS:
            raise _bad("target.method", f"one of {', '.join(TARGET_METHODS)}", self.method)
        if self.method == "threshold" and self.threshold is None:
            raise _bad("target.threshold", "a number for method threshold", None)
        if self.method == "quantile" and not (
            self.quantile is not None and 0.0 < self.quantile < 1.0
        ):
            raise _bad("target.quantile", "a number in (0, 1) for method quantile", self.quantile)
        if self.method in ("threshold", "quantile") and self.direction not in DIRECTIONS:
            raise _bad("target.direction", f"one of {', '.join(DIRECTIONS)}", self.direction)
        if self.method == "equals" and self.value is None:
            raise _bad("target.value", "a value for method equals", None)
        if self.method == "isin" and not self.values:
            raise _bad("target.values", "a non-empty list for method isin", self.values)
        if self.method == "classes" and len(set(self.values or ())) < 2:
            raise _bad("target.values", "at least two distinct classes for method classes",
                       self.values)
        if self.favourable not in (0, 1) or isinstance(self.favourable, bool):
            raise _bad("target.favourable", "0 or 1", self.favourable)

    def label_text(self, cut: float | None = None) -> str:
        """What label 1 is, from the definition: ``two_year_recid true``, ``ScoreText in
        [High, Medium]``, ``G3 >= 10`` (``cut``: a quantile target's cut, when known)."""
        op = ">" if self.direction == "above" else ">="
        if self.method == "threshold":
            return f"{self.column} {op} {self.threshold:g}"
        if self.method == "quantile":
            where = f"{cut:g} (its {self.quantile:g} quantile)" if cut is not None else \
                f"its {self.quantile:g} quantile"
            return f"{self.column} {op} {where}"
        return {"binary": f"{self.column} true", "equals": f"{self.column} = {self.value!r}",
                "isin": f"{self.column} in {list(self.values or ())!r}",
                "classes": f"{self.column}'s class among {list(self.values or ())!r}",
                "above_median": f"{self.column} above its median"}[self.method]

    def positive(self) -> str:
        """What a per-group table's positives are: ``label 1 = two_year_recid true
        (unfavourable)``: TPR, FPR, FNR, PPV and base rate count label 1, whichever it is."""
        return (f"label 1 = {self.label_text()} "
                f"({'favourable' if self.favourable == 1 else 'unfavourable'})")


@dataclass(frozen=True, slots=True)
class ProtectedAttribute:
    """One protected attribute and how its disadvantaged group is defined."""

    name: str
    type: AttributeType
    column: str
    disadvantaged_values: tuple[Scalar, ...] | None = None
    advantaged_values: tuple[Scalar, ...] | None = None
    threshold: float | None = None
    disadvantaged: Side | None = None

    def __post_init__(self) -> None:
        if self.type not in ATTRIBUTE_TYPES:
            raise _bad(f"{self.name}.type", f"one of {', '.join(ATTRIBUTE_TYPES)}", self.type)
        if self.type == "categorical":
            if not self.disadvantaged_values and not self.advantaged_values:
                raise _bad(self.name, "disadvantaged_values and/or advantaged_values", None)
        elif self.threshold is None or self.disadvantaged not in SIDES:
            raise _bad(self.name, "a threshold and disadvantaged below/above", self.disadvantaged)


@dataclass(frozen=True, slots=True)
class CounterfactualAxis:
    """A perturbation axis applied to the raw values of named ``columns`` of the test rows."""

    axis: AxisSpec
    columns: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.columns:
            raise ValueError(f"counterfactual axis {self.axis.name!r}: no columns")


@dataclass(frozen=True, slots=True)
class SystemDecision:
    """How a column of the raw file becomes a deployed system's 0/1 decision.

    Method ``outcome`` is no rule: the system's decision *is* the recorded outcome (people's
    decisions: an employer's callback, a lender's denial), ``column`` the target's column, and
    nothing is read for it.

    The same rule fields, names and comparisons as a :class:`Target` (``isin``/``equals`` by type
    family, ``threshold`` with its ``direction``), so both go through
    :func:`faircode.audit._data_columns.derive_target`.  Decision 1 is the decision that calls for
    label 1 (the target's coding: COMPAS flagged = predicted re-arrest), whichever is favourable.
    """

    column: str
    method: DecisionMethod
    values: tuple[Scalar, ...] | None = None
    value: Scalar | None = None
    threshold: float | None = None
    direction: Direction | None = None

    def __post_init__(self) -> None:
        if self.method not in (*DECISION_METHODS, OUTCOME):
            raise _bad("system.decision", f"one of {', '.join(DECISION_METHODS)}", self.method)
        if self.method == "isin" and not self.values:
            raise _bad("system.decision.isin", "a non-empty list", self.values)
        if self.method == "equals" and self.value is None:
            raise _bad("system.decision.equals", "a value", None)
        if self.method == "threshold" and (self.threshold is None
                                           or self.direction not in DIRECTIONS):
            raise _bad("system.decision.direction",
                       f"a threshold and one of {', '.join(DIRECTIONS)}", self.direction)

    @property
    def quantile(self) -> None:
        """No quantile cut (the rule interface :func:`derive_target` reads)."""
        return None

    def describe(self) -> str:
        """Return a short human-readable form, e.g. ``score_text isin ['Medium', 'High']``."""
        if self.method == OUTCOME:
            return f"the recorded outcome ({self.column})"
        if self.method == "binary":
            return f"{self.column} (0/1)"
        if self.method == "threshold":
            op = ">" if self.direction == "above" else ">="
            return f"{self.column} {op} {self.threshold:g}"
        shown = list(self.values or ()) if self.method == "isin" else self.value
        return f"{self.column} {self.method} {shown!r}"


@dataclass(frozen=True, slots=True)
class SystemScore:
    """A deployed system's numeric risk score: higher means label 1 is more likely."""

    column: str
    scale: ScoreScale

    def __post_init__(self) -> None:
        if self.scale not in SCORE_SCALES:
            raise _bad("system.score.scale", f"one of {', '.join(SCORE_SCALES)}", self.scale)


@dataclass(frozen=True, slots=True)
class DeployedSystem:
    """The audited system whose outputs are columns of the raw file (manifest ``system:``)."""

    name: str
    title: str
    decision: SystemDecision
    score: SystemScore | None = None

    def __post_init__(self) -> None:
        if self.outcome and self.score is not None:
            raise _bad("system.score", "no score for a decision that is the recorded outcome",
                       self.score.column)

    @property
    def outcome(self) -> bool:
        """Whether the decision is the recorded outcome (no separate ground truth)."""
        return self.decision.method == OUTCOME

    @property
    def columns(self) -> tuple[str, ...]:
        """The decision column, then the score column (unique); ``()`` for an outcome."""
        if self.outcome:
            return ()
        score = () if self.score is None else (self.score.column,)
        return tuple(dict.fromkeys((self.decision.column, *score)))


MANTEL_HAENSZEL = "mantel_haenszel"
"""A stratum's default estimator: the gap within the levels of its columns' combinations."""
LOGISTIC_REGRESSION = "logistic_regression"
"""A stratum's estimator for covariates that make no strata: the gap conditional on them."""
STRATUM_ESTIMATORS: tuple[str, ...] = (MANTEL_HAENSZEL, LOGISTIC_REGRESSION)
"""The values of ``strata[i].estimator``."""


@dataclass(frozen=True, slots=True)
class Stratum:
    """A declared legitimate factor: the gap is also reported conditional on it.

    With ``estimator`` :data:`MANTEL_HAENSZEL` the ``columns`` define strata together (one
    stratum per combination of their values that occurs; :mod:`faircode.stats.stratified`);
    with :data:`LOGISTIC_REGRESSION` they are the covariates of a logistic regression, numeric
    columns as they are and the others one indicator per level but the first
    (:mod:`faircode.stats.adjusted`).
    """

    name: str
    columns: tuple[str, ...]
    estimator: str = MANTEL_HAENSZEL

    def __post_init__(self) -> None:
        if not self.columns or len(set(self.columns)) != len(self.columns):
            raise _bad(f"strata {self.name!r}.columns", "distinct column names", self.columns)
        if self.estimator not in STRATUM_ESTIMATORS:
            raise _bad(f"strata {self.name!r}.estimator",
                       f"one of {', '.join(STRATUM_ESTIMATORS)}", self.estimator)

    @property
    def regression(self) -> bool:
        """Whether the gap is conditioned by regression on the columns (not within strata)."""
        return self.estimator == LOGISTIC_REGRESSION


@dataclass(frozen=True, slots=True)
class Manifest:
    """A validated audit manifest (see ``MANIFEST_SPEC.md``)."""

    name: str
    title: str
    file: Path
    dataset: DatasetSpec
    random_state: int
    test_size: float
    row_filters: tuple[RowFilter, ...]
    target: Target
    protected_attributes: tuple[ProtectedAttribute, ...]
    core_features: tuple[str, ...]
    proxy_features: tuple[str, ...] = ()
    counterfactual_axes: tuple[CounterfactualAxis, ...] = ()
    decision: DecisionRule | None = None
    system: DeployedSystem | None = None
    strata: tuple[Stratum, ...] = ()
    task: Task = "binary"
    """``binary`` (the grid's) or ``multiclass`` (target method ``classes``)."""

    def __post_init__(self) -> None:
        if (self.task == "multiclass") != (self.target.method == "classes"):
            raise _bad(f"{self.file}: target.method", "classes for task multiclass (and only "
                       "for it)", self.target.method)
        if not self.protected_attributes:
            raise _bad(f"{self.file}: protected_attributes", "at least one attribute", ())
        if not 0.0 < self.test_size < 1.0:
            raise _bad(f"{self.file}: test_size", "a number in (0, 1)", self.test_size)
        for stratum in self.strata:
            if self.unit is not None or {*stratum.columns} & {*self.protected_columns,
                                                              self.target.column}:
                raise _bad(f"{self.file}: strata", "columns that are no protected or target "
                           "column, and no dataset.unit", stratum.columns)
        taken = {*self.feature_columns, self.target.column,
                 *(() if self.unit is None else (self.unit,))}
        for column in self.system_columns:
            if column in taken:
                raise _bad(f"{self.file}: system", "columns that are no feature, protected, "
                           "target or unit column", column)

    @property
    def protected_columns(self) -> tuple[str, ...]:
        """Columns of the protected attributes, unique, in declaration order."""
        return tuple(dict.fromkeys(a.column for a in self.protected_attributes))

    @property
    def feature_columns(self) -> tuple[str, ...]:
        """Protected columns, then core, then proxy features (the S0 feature set), unique."""
        return tuple(
            dict.fromkeys((*self.protected_columns, *self.core_features, *self.proxy_features))
        )

    @property
    def unit(self) -> str | None:
        """The column identifying an independent unit (``dataset.unit``), or None."""
        return self.dataset.unit

    @property
    def named_columns(self) -> tuple[str, ...]:
        """Every column the prepared rows are built from: features, target, filter columns, the
        unit, ``first_by`` orders, strata (the deployed system's are :attr:`system_columns`)."""
        filters = (f.column for f in self.row_filters)
        orders = (str(f.value) for f in self.row_filters if f.operator == "first_by")
        unit = () if self.unit is None else (self.unit,)
        strata = (c for s in self.strata for c in s.columns)
        return tuple(dict.fromkeys((*self.feature_columns, self.target.column, *filters, *unit,
                                    *orders, *strata)))

    @property
    def system_columns(self) -> tuple[str, ...]:
        """The deployed system's decision and score columns (``()`` without a system)."""
        return () if self.system is None else self.system.columns

    @property
    def read_columns(self) -> tuple[str, ...]:
        """Every column read from the raw file: :attr:`named_columns`, then the system's."""
        return tuple(dict.fromkeys((*self.named_columns, *self.system_columns)))
