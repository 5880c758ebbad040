"""The ``audit.yaml`` manifest: a typed, frozen, fully validated description of one audit.

A manifest declares where an audit's raw file lives (and how to obtain and verify it), how rows are
filtered, how the binary label is derived, which protected attributes are compared, and which
columns are core features or proxies.  The schema is ``MANIFEST_SPEC.md``; this module is its only
reader.

Design decisions
----------------
* **Everything is checked at load time**, and every failure is one line naming the file, the key
  path, what was expected and what arrived with its type (``faircode.errors.config_error``).
  Nothing invalid is silently dropped or coerced: ``random_state: 42.0`` is an error, not 42.
* **The allowed keys are a table** (``_TOP_KEYS``, ``_DATASET_KEYS``, ...).  Adding a key to the
  schema is one line there plus its parser; a typo such as ``protected_attribute`` is rejected.
* **YAML is read with a safe loader only**, and a key repeated in one mapping is an error (plain
  ``yaml.safe_load`` keeps the last one silently).
* **Paths are resolved against the manifest's own directory** and must stay inside the repository
  root: the nearest ancestor holding ``.git`` or ``pyproject.toml`` (fallback: the manifest
  directory's grandparent, i.e. the parent of ``audits/``).
* Column-level checks (does the column exist, does the target yield two classes) need the data and
  live in :mod:`faircode.data`.
* **Repeated people** (``docs/manifest-units.md``): ``dataset.unit`` names the column that
  identifies an independent unit (a person, a patient).  It is read, never a feature, target or
  protected column.  One-row-per-unit designs use the positional row filter
  ``{column: <unit>, first_by: <order column>}``, which keeps, among the rows still kept, each
  unit's row with the smallest order value; a filter, not a dataset option, so its place in the
  filter sequence (and the row count after it) is explicit.
* **Reading options are part of the manifest** (``dataset.read``: separator, header row, encoding,
  column names, extra missing markers) because they decide what the bytes mean; their defaults are
  pandas' own, so a manifest without ``read`` is read exactly as before.  Column names of a file
  without a header are listed in the manifest itself (not a side file), so the manifest's sha256
  recorded with every result covers them.
* **Numeric cuts state their side**: ``threshold`` and ``quantile`` targets need ``direction``
  (``above`` is ``>``, ``at_least`` is ``>=``); there is no default, because ``G3 >= 10`` and
  ``G3 > 10`` are different labels.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal, cast, get_args

import yaml

from faircode._schema import Checker, Scalar, UniqueKeyLoader
from faircode.decision import RULES, DecisionRule, Rule
from faircode.errors import ConfigError, ManifestError, config_error
from faircode.perturb import AxisSpec, axis_from_config

__all__ = [
    "AttributeType",
    "CounterfactualAxis",
    "DatasetSpec",
    "DecisionRule",
    "Manifest",
    "Operator",
    "ProtectedAttribute",
    "ReadOptions",
    "RowFilter",
    "Scalar",
    "Source",
    "Target",
    "TargetMethod",
    "discover_manifests",
    "load_manifest",
    "repository_root",
]

Operator = Literal["isin", "not_isin", "equals", "not_equals", "notna", "first_by"]
TargetMethod = Literal["binary", "equals", "isin", "above_median", "threshold", "quantile"]
Direction = Literal["above", "at_least"]
AttributeType = Literal["categorical", "numeric_threshold", "age_interval_threshold"]
Side = Literal["below", "above"]

OPERATORS: tuple[str, ...] = get_args(Operator)
TARGET_METHODS: tuple[str, ...] = get_args(TargetMethod)
ATTRIBUTE_TYPES: tuple[str, ...] = get_args(AttributeType)
SIDES: tuple[str, ...] = get_args(Side)
DIRECTIONS: tuple[str, ...] = get_args(Direction)
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")

# Allowed keys per mapping: key -> required?  Adding a schema key is one line here (plus parsing).
_TOP_KEYS: dict[str, bool] = {
    "name": True,
    "title": False,
    "dataset": True,
    "random_state": False,
    "test_size": False,
    "row_filters": False,
    "target": True,
    "protected_attributes": True,
    "core_features": True,
    "proxy_features": False,
    "counterfactual_axes": False,
    "decision": False,
}
_DATASET_KEYS: dict[str, bool] = {
    "path": True, "sha256": False, "source": False, "unit": False, "read": False
}
_READ_KEYS: dict[str, bool] = {
    "separator": False,
    "header": False,
    "encoding": False,
    "names": False,
    "missing": False,
}
_SOURCE_KEYS: dict[str, bool] = {
    "url": False,
    "member": False,
    "citation": False,
    "license": False,
    "instructions": False,
}
_FILTER_KEYS: dict[str, bool] = {"column": True, **{op: False for op in OPERATORS}}
_TARGET_KEYS: dict[str, dict[str, bool]] = {
    "binary": {},
    "equals": {"value": True},
    "isin": {"values": True},
    "above_median": {},
    "threshold": {"threshold": True, "direction": True},
    "quantile": {"quantile": True, "direction": True},
}
_TARGET_COMMON: dict[str, bool] = {"column": True, "method": True, "favourable": False}
_DECISION_KEYS: dict[str, dict[str, bool]] = {
    "threshold": {"threshold": True},
    "base_rate": {},
    "top_fraction": {"fraction": True},
}
_ATTRIBUTE_COMMON: dict[str, bool] = {"name": True, "type": True, "column": True}
_ATTRIBUTE_KEYS: dict[str, dict[str, bool]] = {
    "categorical": {"disadvantaged_values": False, "advantaged_values": False},
    "numeric_threshold": {"threshold": True, "disadvantaged": True},
    "age_interval_threshold": {"threshold": True, "disadvantaged": True},
}


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
class DatasetSpec:
    """The raw file: resolved absolute path, the path as written, expected digest, provenance."""

    path: Path
    declared_path: str
    sha256: str | None = None
    source: Source | None = None
    unit: str | None = None
    read: ReadOptions = ReadOptions()

    def __post_init__(self) -> None:
        if not self.path.is_absolute():
            raise _bad("dataset.path", "a resolved absolute path", str(self.path))
        if self.sha256 is not None and not _SHA_RE.match(self.sha256):
            raise _bad("dataset.sha256", "64 lowercase hex digits", self.sha256)


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
        if self.favourable not in (0, 1) or isinstance(self.favourable, bool):
            raise _bad("target.favourable", "0 or 1", self.favourable)


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

    def __post_init__(self) -> None:
        if not self.protected_attributes:
            raise _bad(f"{self.file}: protected_attributes", "at least one attribute", ())
        if not 0.0 < self.test_size < 1.0:
            raise _bad(f"{self.file}: test_size", "a number in (0, 1)", self.test_size)

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
        """Every column named: features, target, filter columns, the unit, ``first_by`` orders."""
        filters = (f.column for f in self.row_filters)
        orders = (str(f.value) for f in self.row_filters if f.operator == "first_by")
        unit = () if self.unit is None else (self.unit,)
        return tuple(
            dict.fromkeys((*self.feature_columns, self.target.column, *filters, *unit, *orders))
        )


# --------------------------------------------------------------------------------------------
# Reading and validating
# --------------------------------------------------------------------------------------------


def repository_root(manifest_dir: Path) -> Path:
    """Return the nearest ancestor of ``manifest_dir`` holding ``.git`` or ``pyproject.toml``."""
    manifest_dir = manifest_dir.resolve()
    for candidate in (manifest_dir, *manifest_dir.parents):
        if (candidate / ".git").exists() or (candidate / "pyproject.toml").exists():
            return candidate
    return manifest_dir.parent.parent if manifest_dir.parent != manifest_dir else manifest_dir


def _parse_dataset(c: Checker, raw: object, root: Path) -> DatasetSpec:
    data = c.mapping(raw, "dataset", _DATASET_KEYS)
    declared = c.string(data["path"], "dataset.path")
    if PurePosixPath(declared).is_absolute() or PureWindowsPath(declared).is_absolute():
        raise c.fail("dataset.path", "a path relative to the manifest's directory", declared)
    resolved = (c.file.parent / declared).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise c.fail("dataset.path", f"a path inside the repository {root}", declared)
    sha = data.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not _SHA_RE.match(sha)):
        raise c.fail("dataset.sha256", "64 lowercase hex digits", sha)
    source = None
    if data.get("source") is not None:
        src = c.mapping(data["source"], "dataset.source", _SOURCE_KEYS)
        fields = {k: c.optional_string(src.get(k), f"dataset.source.{k}") for k in _SOURCE_KEYS}
        if fields["url"] is not None and not re.match(r"^(https?|file)://", fields["url"]):
            raise c.fail("dataset.source.url", "an http(s):// or file:// URL", fields["url"])
        if fields["member"] is not None and fields["url"] is None:
            raise c.fail(
                "dataset.source.member",
                "a member only together with dataset.source.url",
                fields["member"],
            )
        source = Source(**fields)
    unit = c.optional_string(data.get("unit"), "dataset.unit")
    read = _parse_read(c, data["read"]) if data.get("read") is not None else ReadOptions()
    return DatasetSpec(path=resolved, declared_path=declared, sha256=sha, source=source,
                       unit=unit, read=read)


def _parse_filter(c: Checker, raw: object, where: str) -> RowFilter:
    data = c.mapping(raw, where, _FILTER_KEYS)
    column = c.string(data["column"], f"{where}.column")
    ops = [op for op in OPERATORS if op in data]
    if len(ops) != 1:
        raise c.fail(where, f"exactly one operator of {', '.join(OPERATORS)}", tuple(ops))
    op = ops[0]
    value: Scalar | tuple[Scalar, ...] | None
    if op in ("isin", "not_isin"):
        value = c.scalars(data[op], f"{where}.{op}")
    elif op == "notna":
        if data[op] is not True:
            raise c.fail(f"{where}.notna", "true", data[op])
        value = None
    elif op == "first_by":
        value = c.string(data[op], f"{where}.first_by")
    else:
        value = c.scalar(data[op], f"{where}.{op}")
    return RowFilter(column=column, operator=cast(Operator, op), value=value)


def _parse_target(c: Checker, raw: object) -> Target:
    if not isinstance(raw, dict):
        raise c.fail("target", "a mapping", raw)
    method = c.choice(raw.get("method"), "target.method", TARGET_METHODS)
    data = c.mapping(raw, "target", {**_TARGET_COMMON, **_TARGET_KEYS[method]})
    favourable = data.get("favourable", 1)
    if isinstance(favourable, bool) or favourable not in (0, 1):
        raise c.fail("target.favourable", "0 or 1", favourable)
    return Target(
        column=c.string(data["column"], "target.column"),
        method=cast(TargetMethod, method),
        value=c.scalar(data["value"], "target.value") if method == "equals" else None,
        values=c.scalars(data["values"], "target.values") if method == "isin" else None,
        favourable=cast(Literal[0, 1], int(favourable)),
        **_parse_cut(c, data, method),
    )


def _parse_cut(c: Checker, data: dict[str, Any], method: str) -> dict[str, Any]:
    """The ``threshold`` / ``quantile`` and ``direction`` of a numeric-cut target."""
    if method not in ("threshold", "quantile"):
        return {}
    cut = c.number(data[method], f"target.{method}")
    if method == "quantile" and not 0.0 < cut < 1.0:
        raise c.fail("target.quantile", "a number in (0, 1)", data[method])
    direction = c.choice(data["direction"], "target.direction", DIRECTIONS)
    return {method: cut, "direction": direction}


def _parse_read(c: Checker, raw: object) -> ReadOptions:
    """``dataset.read``: how to parse the raw file (every key optional, pandas' defaults)."""
    data = c.mapping(raw, "dataset.read", _READ_KEYS)
    separator = data.get("separator", ",")
    if not isinstance(separator, str) or len(separator) != 1 or separator in "\r\n\"":
        raise c.fail("dataset.read.separator", "one character (not a quote or newline)",
                     separator)
    encoding = data.get("encoding", "utf-8")
    try:
        codecs.lookup(c.string(encoding, "dataset.read.encoding"))
    except LookupError:
        raise c.fail("dataset.read.encoding", "a known text encoding", encoding) from None
    names = None
    if data.get("names") is not None:
        names = c.columns(data["names"], "dataset.read.names", allow_empty=False)
    header = data.get("header")
    if header is not None:
        if names is not None:
            raise c.fail("dataset.read.header",
                         "no header row index together with names (names mean no header)",
                         header)
        if isinstance(header, bool) or not isinstance(header, int) or header < 0:
            raise c.fail("dataset.read.header", "an integer >= 0 (0-based row index)", header)
    elif names is None:
        header = 0
    missing: tuple[str, ...] = ()
    if data.get("missing") is not None:
        raw_missing = data["missing"]
        if not isinstance(raw_missing, list) or not raw_missing:
            raise c.fail("dataset.read.missing", "a non-empty list of strings", raw_missing)
        missing = tuple(c.string(v, f"dataset.read.missing[{i}]")
                        for i, v in enumerate(raw_missing))
    return ReadOptions(separator=separator, header=header, encoding=encoding, names=names,
                       missing=missing)


def _parse_attribute(c: Checker, raw: object, where: str) -> ProtectedAttribute:
    if not isinstance(raw, dict):
        raise c.fail(where, "a mapping", raw)
    kind = c.choice(raw.get("type"), f"{where}.type", ATTRIBUTE_TYPES)
    data = c.mapping(raw, where, {**_ATTRIBUTE_COMMON, **_ATTRIBUTE_KEYS[kind]})
    name = c.string(data["name"], f"{where}.name")
    column = c.string(data["column"], f"{where}.column")
    if kind != "categorical":
        return ProtectedAttribute(
            name=name,
            type=cast(AttributeType, kind),
            column=column,
            threshold=c.number(data["threshold"], f"{where}.threshold"),
            disadvantaged=cast(
                Side, c.choice(data["disadvantaged"], f"{where}.disadvantaged", SIDES)
            ),
        )
    sides: dict[str, tuple[Scalar, ...] | None] = {}
    for key in ("disadvantaged_values", "advantaged_values"):
        sides[key] = c.scalars(data[key], f"{where}.{key}") if data.get(key) is not None else None
    dis, adv = sides["disadvantaged_values"], sides["advantaged_values"]
    if dis is None and adv is None:
        raise c.fail(
            f"{where}.disadvantaged_values", "disadvantaged_values and/or advantaged_values", None
        )
    if dis is not None and adv is not None:
        both = {str(v) for v in dis} & {str(v) for v in adv}
        if both:
            raise c.fail(
                f"{where}.advantaged_values",
                "no value also in disadvantaged_values",
                sorted(both)[0],
            )
    return ProtectedAttribute(
        name=name,
        type="categorical",
        column=column,
        disadvantaged_values=dis,
        advantaged_values=adv,
    )


def _parse(c: Checker, doc: dict[str, Any], root: Path) -> Manifest:
    data = c.mapping(doc, "", _TOP_KEYS)
    name = c.string(data["name"], "name")
    if not _NAME_RE.match(name):
        raise c.fail("name", "letters, digits, '_', '.', '-' (a folder-safe id)", name)
    title = c.string(data["title"], "title") if data.get("title") is not None else name
    random_state = data.get("random_state", 42)
    if (
        isinstance(random_state, bool)
        or not isinstance(random_state, int)
        or not 0 <= random_state < 2**32
    ):
        raise c.fail("random_state", "an integer in [0, 2**32)", random_state)
    test_size = data.get("test_size", 0.2)
    if (
        isinstance(test_size, bool)
        or not isinstance(test_size, int | float)
        or not 0 < test_size < 1
    ):
        raise c.fail("test_size", "a number in (0, 1)", test_size)
    raw_filters = data.get("row_filters") or []
    if not isinstance(raw_filters, list):
        raise c.fail("row_filters", "a list", raw_filters)
    filters = tuple(_parse_filter(c, f, f"row_filters[{i}]") for i, f in enumerate(raw_filters))
    target = _parse_target(c, data["target"])
    raw_attrs = data["protected_attributes"]
    if not isinstance(raw_attrs, list) or not raw_attrs:
        raise c.fail("protected_attributes", "a non-empty list", raw_attrs)
    attrs = tuple(
        _parse_attribute(c, a, f"protected_attributes[{i}]") for i, a in enumerate(raw_attrs)
    )
    for i, attr in enumerate(attrs):
        if attr.name in (a.name for a in attrs[:i]):
            raise c.fail(
                f"protected_attributes[{i}].name", "a name not used by another attribute", attr.name
            )
    core = c.columns(data["core_features"], "core_features", allow_empty=False)
    proxy = c.columns(data.get("proxy_features") or [], "proxy_features", allow_empty=True)
    protected = {a.column for a in attrs}
    for key, cols in (("core_features", core), ("proxy_features", proxy)):
        for i, col in enumerate(cols):
            if key == "proxy_features" and col in core:
                raise c.fail(f"{key}[{i}]", "a column not also in core_features", col)
            if col in protected:
                raise c.fail(
                    f"{key}[{i}]", "a column that is not a protected attribute's column", col
                )
            if col == target.column:
                raise c.fail(f"{key}[{i}]", "a column other than the target column", col)
    if target.column in protected:
        raise c.fail(
            "target.column", "a column that is not a protected attribute's column", target.column
        )
    dataset = _parse_dataset(c, data["dataset"], root)
    _check_unit(c, dataset.unit, filters, (*protected, *core, *proxy, target.column))
    return Manifest(
        name=name,
        title=title,
        file=c.file,
        dataset=dataset,
        random_state=random_state,
        test_size=float(test_size),
        row_filters=filters,
        target=target,
        protected_attributes=attrs,
        core_features=core,
        proxy_features=proxy,
        counterfactual_axes=_parse_counterfactual_axes(
            c, data.get("counterfactual_axes"), features=(*protected, *core, *proxy)
        ),
        decision=_parse_decision(c, data["decision"]) if "decision" in data else None,
    )


def _check_unit(
    c: Checker, unit: str | None, filters: tuple[RowFilter, ...], used: tuple[str, ...]
) -> None:
    """The unit is never a feature, protected or target column; ``first_by`` dedupes the unit."""
    if unit is not None and unit in used:
        raise c.fail(
            "dataset.unit", "a column that is not a feature, protected or target column", unit
        )
    for i, f in enumerate(filters):
        if f.operator != "first_by":
            continue
        if unit is None:
            raise c.fail(
                f"row_filters[{i}].first_by", "a dataset.unit declared to deduplicate by", None
            )
        if f.column != unit:
            raise c.fail(f"row_filters[{i}].column", f"the unit column {unit!r}", f.column)
        if f.value == unit:
            raise c.fail(f"row_filters[{i}].first_by", "an order column other than the unit",
                         f.value)


def _parse_decision(c: Checker, raw: object) -> DecisionRule:
    """``decision``: the audit's operating point (see :mod:`faircode.decision`).

    ``threshold`` needs ``threshold`` in [0, 1]; ``top_fraction`` needs ``fraction`` in (0, 1);
    ``base_rate`` takes nothing else.  Absent, the global ``decision_threshold`` applies.
    """
    if not isinstance(raw, dict):
        raise c.fail("decision", "a mapping with a rule", raw)
    rule = c.choice(raw.get("rule"), "decision.rule", RULES)
    data = c.mapping(raw, "decision", {"rule": True, **_DECISION_KEYS[rule]})
    values: dict[str, float] = {}
    for key, low, high in (("threshold", "[0", "1]"), ("fraction", "(0", "1)")):
        if key in data:
            value = data[key]
            inside = isinstance(value, int | float) and not isinstance(value, bool) and (
                (0 <= value <= 1) if key == "threshold" else (0 < value < 1))
            if not inside:
                raise c.fail(f"decision.{key}", f"a number in {low}, {high}", value)
            values[key] = float(value)
    return DecisionRule(cast(Rule, rule), **values)


def _parse_counterfactual_axes(
    c: Checker, raw: object, *, features: tuple[str, ...]
) -> tuple[CounterfactualAxis, ...]:
    """``counterfactual_axes``: a list of axes (see :func:`axis_from_config`) plus ``columns``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise c.fail("counterfactual_axes", "a list of axes", raw)
    axes: list[CounterfactualAxis] = []
    for i, item in enumerate(raw):
        where = f"counterfactual_axes[{i}]"
        if not isinstance(item, dict):
            raise c.fail(where, "a mapping with name, columns and substitutions", item)
        if "columns" not in item:
            raise ManifestError(
                f"{c.file}: {where}.columns: expected a value (required key), got nothing"
            )
        columns = c.columns(item["columns"], f"{where}.columns", allow_empty=False)
        for j, column in enumerate(columns):
            if column not in features:
                raise c.fail(f"{where}.columns[{j}]",
                             "a protected, core or proxy column of this manifest", column)
        rest = {k: v for k, v in item.items() if k != "columns"}
        try:
            axis = axis_from_config(rest, where=f"{c.file}: {where}")
        except ConfigError as exc:
            raise ManifestError(str(exc)) from None
        if axis.name in (a.axis.name for a in axes):
            raise c.fail(f"{where}.name", "a name not used by another axis", axis.name)
        axes.append(CounterfactualAxis(axis, columns))
    return tuple(axes)


def load_manifest(path: Path | str, *, root: Path | None = None) -> Manifest:
    """Read and validate the manifest at ``path``; raise :class:`ManifestError` if invalid."""
    file = Path(path)
    c = Checker(file)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{file}: cannot be read: {exc.__class__.__name__}: {exc}") from None
    if not text.strip():
        raise c.fail("top level", "a YAML mapping", "") from None
    try:
        doc = yaml.load(text, Loader=UniqueKeyLoader)
    except ConfigError as exc:  # a repeated key, from UniqueKeyLoader
        raise ManifestError(f"{file}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "top level"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(
            f"{file}: {where}: expected valid YAML, got a syntax error ({problem})"
        ) from None
    if doc is None:
        raise c.fail("top level", "a YAML mapping", doc)
    if not isinstance(doc, dict):
        raise c.fail("top level", "a YAML mapping", doc)
    return _parse(c, doc, root if root is not None else repository_root(file.parent))


def discover_manifests(root: Path | str) -> list[Path]:
    """Return ``<root>/*/audit.yaml`` (``root`` is the ``audits/`` folder), sorted."""
    return sorted(Path(root).glob("*/audit.yaml"))
