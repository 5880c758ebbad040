"""Parsing and validating an ``audit.yaml`` document into a
:class:`faircode.audit.manifest.Manifest`.

Private: :func:`faircode.audit.manifest.load_manifest` reads the YAML and calls
:func:`parse_manifest`.
The allowed keys of each mapping are the tables below (key -> required?); each section has its
own parser, and every failure is one line naming the file and the key path.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal, cast

from faircode.audit._manifest_rdata import parse_companions, parse_r_object
from faircode.audit._manifest_strata import parse_strata
from faircode.audit._manifest_system import parse_system
from faircode.audit._manifest_types import (
    _SHA_RE,
    ATTRIBUTE_TYPES,
    DIRECTIONS,
    OPERATORS,
    SIDES,
    TARGET_METHODS,
    TASKS,
    AttributeType,
    CounterfactualAxis,
    DatasetSpec,
    Manifest,
    Operator,
    ProtectedAttribute,
    ReadOptions,
    RowFilter,
    RowId,
    Side,
    Source,
    Target,
    TargetMethod,
    Task,
)
from faircode.audit.decision import RULES, DecisionRule, Rule
from faircode.core.errors import ConfigError, ManifestError
from faircode.core.kinds import BINARY, REGRESSION
from faircode.core.names import SAFE_NAME_TEXT, check_name, is_safe_name
from faircode.core.schema import Checker, Scalar
from faircode.counterfactual.perturb import axis_from_config

RAW_DIR = ("data", "raw")
"""Where an audit's raw file lives below the repository root: ``data/raw/<audit>/``."""

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
    "system": False,
    "strata": False,
    "task": False,
}
_DATASET_KEYS: dict[str, bool] = {
    "path": True, "sha256": False, "size": False, "source": False, "unit": False, "read": False,
    "object": False, "mirror": False, "row_id": False, "companions": False,
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
    "classes": {"values": True},
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


def raw_places(file: Path, name: str, root: Path) -> tuple[Path, Path]:
    """The folders a manifest's raw file may live in: ``<root>/data/raw/<name>/`` and the
    manifest's own folder (both resolved)."""
    return (root.resolve().joinpath(*RAW_DIR, name), file.parent.resolve())


def _dataset_path(c: Checker, declared: str, *, name: str, root: Path) -> Path:
    """``dataset.path`` resolved; it must name a file inside :func:`raw_places` (symlinks
    followed), never the folder itself, a repository file elsewhere or anything outside."""
    if "\0" in declared:  # no file name holds one (os calls raise ValueError)
        raise c.fail("dataset.path", "a path without a NUL character", declared)
    if PurePosixPath(declared).is_absolute() or PureWindowsPath(declared).is_absolute():
        raise c.fail("dataset.path", "a path relative to the manifest's directory", declared)
    resolved = (c.file.parent / declared).resolve()
    places = raw_places(c.file, name, root)
    if not any(resolved.is_relative_to(p) and resolved != p for p in places) \
            or resolved == c.file.resolve():
        shown = " or ".join(f"{p}/" for p in places)
        raise c.fail("dataset.path", f"a file inside {shown} (where fetch may write it)",
                     declared)
    return resolved


def _parse_dataset(c: Checker, raw: object, root: Path, *, name: str) -> DatasetSpec:
    data = c.mapping(raw, "dataset", _DATASET_KEYS)
    declared = c.string(data["path"], "dataset.path")
    resolved = _dataset_path(c, declared, name=name, root=root)
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
    row_id = _parse_row_id(c, data["row_id"]) if data.get("row_id") is not None else None
    if row_id is not None and row_id.column is None and sha is None:
        raise c.fail("dataset.row_id", "a dataset.sha256 pinning the row order of 'position'",
                     data["row_id"])
    r_object = parse_r_object(c, data, declared)
    mirror = c.optional_string(data.get("mirror"), "dataset.mirror")
    if mirror is not None and not is_safe_name(mirror):
        raise c.fail("dataset.mirror", SAFE_NAME_TEXT, mirror)
    size = data.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise c.fail("dataset.size", "a positive integer (the file's size in bytes)", size)
    return DatasetSpec(path=resolved, declared_path=declared, sha256=sha, source=source,
                       unit=unit, read=read, object=r_object, mirror=mirror,
                       row_id=row_id, size=size,
                       companions=parse_companions(c, data, resolved))


def _parse_row_id(c: Checker, raw: object) -> RowId:
    """``dataset.row_id``: ``position`` or ``{column: <a column of the raw file>}``."""
    if raw == "position":
        return RowId()
    if isinstance(raw, dict) and set(raw) == {"column"}:
        return RowId(column=c.string(raw["column"], "dataset.row_id.column"))
    raise c.fail("dataset.row_id", "position or {column: <a key column of the raw file>}", raw)


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
    common = {k: v for k, v in _TARGET_COMMON.items() if method != "classes" or k != "favourable"}
    data = c.mapping(raw, "target", {**common, **_TARGET_KEYS[method]})
    favourable = data.get("favourable", 1)
    if isinstance(favourable, bool) or favourable not in (0, 1):
        raise c.fail("target.favourable", "0 or 1", favourable)
    return Target(
        column=c.string(data["column"], "target.column"),
        method=cast(TargetMethod, method),
        value=c.scalar(data["value"], "target.value") if method == "equals" else None,
        values=c.scalars(data["values"], "target.values") if method in ("isin", "classes")
        else None,
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
    name = c.visible(c.string(data["name"], f"{where}.name"), f"{where}.name")
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
        for j, value in enumerate(sides[key] or ()):  # a zero-width space would match no row
            if isinstance(value, str):
                c.visible(value, f"{where}.{key}[{j}]")
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


def parse_manifest(c: Checker, doc: dict[str, Any], root: Path) -> Manifest:
    """Validate the YAML mapping ``doc`` of ``c.file``; its raw file must be inside
    ``<root>/data/raw/<name>/`` or the manifest's own folder (:func:`raw_places`).

    The sections are checked in a fixed order (names, split, filters, target, attributes,
    features, dataset, unit, system, axes, decision, strata), so the first error reported is
    stable.
    """
    if doc.get("kind", BINARY.manifest_kind) != BINARY.manifest_kind:  # faircode.audit.kinds
        raise c.fail("kind", "tabular (the grid's manifests; a kind: text audit runs in the "
                     "pipeline's text stages: list it under text_audits in params.yaml, run "
                     "faircode pipeline, then dvc repro)", doc.get("kind"))
    if doc.get("task") == REGRESSION.manifest_kind:  # a tabular manifest of its own kind
        raise c.fail("task", f"one of {', '.join(TASKS)} (the grid's manifests and the "
                     "multi-class ones; a task: regression audit runs in the pipeline's "
                     "regression stages: list it under regression_audits in params.yaml, run "
                     "faircode pipeline, then dvc repro)", doc.get("task"))
    data = c.mapping({k: v for k, v in doc.items() if k != "kind"}, "", _TOP_KEYS)
    task = cast(Task, c.choice(data.get("task", BINARY.name), "task", TASKS))
    if task != BINARY.name:  # a multi-class outcome: no binary operating point, system or swap
        for key in ("decision", "system", "counterfactual_axes", "strata"):
            if data.get(key) is not None:
                raise c.fail(key, f"no {key} for task {task} (a binary decision's)", data[key])
    name, title = _parse_name(c, data)
    random_state, test_size = _parse_split(c, data)
    raw_filters = data.get("row_filters") or []
    if not isinstance(raw_filters, list):
        raise c.fail("row_filters", "a list", raw_filters)
    filters = tuple(_parse_filter(c, f, f"row_filters[{i}]") for i, f in enumerate(raw_filters))
    target = _parse_target(c, data["target"])
    attrs = _parse_attributes(c, data["protected_attributes"])
    protected = {a.column for a in attrs}
    core, proxy = _parse_features(c, data, protected=protected, target=target.column)
    dataset = _parse_dataset(c, data["dataset"], root, name=name)
    _check_unit(c, dataset.unit, filters, (*protected, *core, *proxy, target.column))
    if task != BINARY.name and dataset.unit is not None:
        raise c.fail("dataset.unit", f"no unit for task {task} (its tests take rows as "
                     "independent)", dataset.unit)
    system = None
    if data.get("system") is not None:
        roles = {**({dataset.unit: "the unit (dataset.unit)"} if dataset.unit else {}),
                 target.column: "the target column", **dict.fromkeys(proxy, "a proxy feature"),
                 **dict.fromkeys(core, "a core feature"),
                 **dict.fromkeys(protected, "a protected attribute's column")}
        system = parse_system(c, data["system"], roles=roles, target=target.column)
    return Manifest(
        name=name,
        title=title,
        file=c.file,
        dataset=dataset,
        random_state=random_state,
        test_size=test_size,
        row_filters=filters,
        target=target,
        protected_attributes=attrs,
        core_features=core,
        proxy_features=proxy,
        counterfactual_axes=_parse_counterfactual_axes(
            c, data.get("counterfactual_axes"), features=(*protected, *core, *proxy)
        ),
        decision=_parse_decision(c, data["decision"]) if "decision" in data else None,
        system=system,
        strata=parse_strata(c, data.get("strata"), protected=protected,
                            target=target.column, unit=dataset.unit),
        task=task,
    )


def _parse_name(c: Checker, data: dict[str, Any]) -> tuple[str, str]:
    """``name`` (a folder-safe id) and ``title`` (the name when absent)."""
    name = check_name(data["name"], where=f"{c.file}: name", cls=ManifestError)
    title = c.string(data["title"], "title") if data.get("title") is not None else name
    return name, title


def _parse_split(c: Checker, data: dict[str, Any]) -> tuple[int, float]:
    """``random_state`` (an integer in [0, 2**32), 42) and ``test_size`` (in (0, 1), 0.2)."""
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
    return random_state, float(test_size)


def _parse_attributes(c: Checker, raw: object) -> tuple[ProtectedAttribute, ...]:
    """``protected_attributes``: a non-empty list of attributes with distinct names."""
    if not isinstance(raw, list) or not raw:
        raise c.fail("protected_attributes", "a non-empty list", raw)
    attrs = tuple(_parse_attribute(c, a, f"protected_attributes[{i}]") for i, a in enumerate(raw))
    for i, attr in enumerate(attrs):
        if attr.name in (a.name for a in attrs[:i]):
            raise c.fail(
                f"protected_attributes[{i}].name", "a name not used by another attribute", attr.name
            )
    return attrs


def _parse_features(
    c: Checker, data: dict[str, Any], *, protected: set[str], target: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``core_features`` and ``proxy_features``: disjoint, never a protected or target column."""
    core = c.columns(data["core_features"], "core_features", allow_empty=False)
    proxy = c.columns(data.get("proxy_features") or [], "proxy_features", allow_empty=True)
    for key, cols in (("core_features", core), ("proxy_features", proxy)):
        for i, col in enumerate(cols):
            if key == "proxy_features" and col in core:
                raise c.fail(f"{key}[{i}]", "a column not also in core_features", col)
            if col in protected:
                raise c.fail(
                    f"{key}[{i}]", "a column that is not a protected attribute's column", col
                )
            if col == target:
                raise c.fail(f"{key}[{i}]", "a column other than the target column", col)
    if target in protected:
        raise c.fail(
            "target.column", "a column that is not a protected attribute's column", target
        )
    return core, proxy


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
    """``decision``: the audit's operating point (see :mod:`faircode.audit.decision`).

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
