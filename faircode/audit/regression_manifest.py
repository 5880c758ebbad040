"""A regression audit's manifest: ``task: regression`` in ``audit.yaml``, a number per row.

The same tabular manifest as the grid's (``dataset``, ``row_filters``, ``protected_attributes``,
``core_features``, ``proxy_features``, ``strata``, ``system``, ``random_state``, ``test_size``;
``docs/manifest.md``), with ``task: regression`` and a continuous ``target``::

    task: regression
    target:
      column: wage            # the number audited (its rows must hold finite numbers)
      transform: log          # optional: none (default) or log (every value must be > 0)
      units: US$ per hour     # what the column is measured in, before the transform
      margin: {units: 0.05}   # the parity margin in the analysed outcome's units (log
                              #   points after a log), or {sd: 0.1}: a share of its SD

Design decisions
----------------
* **The margin is declared, in the outcome's own units.**  A gap of 0.05 is a lot on a 1-5
  rating and nothing on a salary in dollars, so no benchmark-wide number can be the margin of a
  verdict: each regression manifest states one (``units``: a number in the analysed outcome's
  units; ``sd``: a share of its standard deviation over the audit's rows, resolved at load,
  :meth:`Margin.resolve`).  Absent is an error naming the key.
* **The log transform is declared, not inferred**: pay is audited on the log scale as the wage
  literature does (a mean log-wage gap of −0.23 is "23 log points less"), and the manifest
  says so; its mean ratio is then the ratio of geometric means (:mod:`faircode.stats.continuous`).
* **People's numbers.**  ``system: {name, title, decision: outcome}`` says that the outcome is
  itself the decision audited (students' ratings, employers' pay): the observed outcome's gaps
  are the people's, as a binary audit's people's decisions are.  Another system is not
  supported here (a deployed regressor's predictions: ``faircode audit --prediction``).
* **Every section is the tabular manifest's parser** (:mod:`faircode.audit._manifest_parse`), so
  a key means the same and fails with the same one-line error in both kinds; only ``target`` and
  ``task`` are this module's.
* A ``task:`` other than ``regression`` is the grid's (``binary``) or another kind's, refused
  here with one line naming where it is run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from faircode.audit._manifest_parse import (
    _check_unit,
    _parse_attributes,
    _parse_dataset,
    _parse_features,
    _parse_filter,
    _parse_name,
    _parse_split,
)
from faircode.audit._manifest_strata import parse_strata
from faircode.audit._manifest_system import parse_system
from faircode.audit._manifest_types import (
    DatasetSpec,
    DeployedSystem,
    ProtectedAttribute,
    RowFilter,
    Stratum,
)
from faircode.audit.manifest import TABULAR, read_manifest_document, repository_root
from faircode.core.errors import ManifestError, config_error
from faircode.core.kinds import REGRESSION
from faircode.core.schema import Checker

__all__ = ["TASK", "TRANSFORMS", "Margin", "Outcome", "RegressionManifest",
           "load_regression_manifest"]

TASK = REGRESSION.manifest_kind
"""The ``task:`` of a regression manifest."""
Transform = Literal["none", "log"]
TRANSFORMS: tuple[str, ...] = ("none", "log")

_TOP_KEYS: dict[str, bool] = {
    "task": True, "kind": False, "name": True, "title": False, "dataset": True,
    "random_state": False, "test_size": False, "row_filters": False, "target": True,
    "protected_attributes": True, "core_features": True, "proxy_features": False,
    "strata": False, "system": False,
}
_TARGET_KEYS: dict[str, bool] = {"column": True, "transform": False, "units": True,
                                 "margin": True}
_MARGIN_KEYS: dict[str, bool] = {"units": False, "sd": False}


@dataclass(frozen=True, slots=True)
class Margin:
    """A verdict's parity margin: in the analysed outcome's ``units``, or a share ``sd`` of its
    standard deviation (exactly one)."""

    units: float | None = None
    sd: float | None = None

    def __post_init__(self) -> None:
        if (self.units is None) == (self.sd is None):
            raise config_error("target.margin", "exactly one of units, sd",
                               {"units": self.units, "sd": self.sd}, cls=ManifestError)
        for key, value in (("units", self.units), ("sd", self.sd)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise config_error(f"target.margin.{key}", "a positive number", value,
                                   cls=ManifestError)

    def resolve(self, sd: float) -> float:
        """The margin in the outcome's units, given the outcome's standard deviation ``sd``."""
        if self.units is not None:
            return float(self.units)
        return float(self.sd or 0.0) * sd

    def describe(self) -> str:
        """``0.05 (outcome units)`` or ``0.1 SD``."""
        return f"{self.units:g} (outcome units)" if self.units is not None else f"{self.sd:g} SD"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The number audited: its column, transform, units and verdict margin."""

    column: str
    units: str
    margin: Margin
    transform: Transform = "none"

    def __post_init__(self) -> None:
        if self.transform not in TRANSFORMS:
            raise config_error("target.transform", f"one of {', '.join(TRANSFORMS)}",
                               self.transform, cls=ManifestError)

    @property
    def log_scale(self) -> bool:
        """Whether the outcome is analysed on the log scale."""
        return self.transform == "log"

    @property
    def scale_units(self) -> str:
        """The analysed outcome's units: ``log(US$ per hour)`` after a log, else ``units``."""
        return f"log({self.units})" if self.log_scale else self.units


@dataclass(frozen=True, slots=True)
class RegressionManifest:
    """A validated regression manifest (module docstring).  Its column roles mirror
    :class:`faircode.audit.manifest.Manifest`'s, so the raw file is read by the same reader."""

    name: str
    title: str
    file: Path
    dataset: DatasetSpec
    random_state: int
    test_size: float
    row_filters: tuple[RowFilter, ...]
    target: Outcome
    protected_attributes: tuple[ProtectedAttribute, ...]
    core_features: tuple[str, ...]
    proxy_features: tuple[str, ...] = ()
    strata: tuple[Stratum, ...] = ()
    system: DeployedSystem | None = None

    @property
    def unit(self) -> str | None:
        """The column identifying an independent unit (``dataset.unit``), or None."""
        return self.dataset.unit

    @property
    def protected_columns(self) -> tuple[str, ...]:
        """Columns of the protected attributes, unique, in declaration order."""
        return tuple(dict.fromkeys(a.column for a in self.protected_attributes))

    @property
    def feature_columns(self) -> tuple[str, ...]:
        """Protected columns, then core, then proxy features (S0's feature set), unique."""
        return tuple(dict.fromkeys((*self.protected_columns, *self.core_features,
                                    *self.proxy_features)))

    @property
    def named_columns(self) -> tuple[str, ...]:
        """Every column the rows are built from: features, target, filters, unit, strata."""
        filters = (f.column for f in self.row_filters)
        orders = (str(f.value) for f in self.row_filters if f.operator == "first_by")
        unit = () if self.unit is None else (self.unit,)
        strata = (c for s in self.strata for c in s.columns)
        return tuple(dict.fromkeys((*self.feature_columns, self.target.column, *filters, *unit,
                                    *orders, *strata)))

    @property
    def read_columns(self) -> tuple[str, ...]:
        """Every column read from the raw file (a regression manifest's system has none)."""
        return self.named_columns

    @property
    def system_columns(self) -> tuple[str, ...]:
        """None: the only system a regression manifest declares is the outcome itself."""
        return ()


def _parse_outcome(c: Checker, raw: object) -> Outcome:
    data = c.mapping(raw, "target", _TARGET_KEYS)
    margin = c.mapping(data["margin"], "target.margin", _MARGIN_KEYS)
    if len(margin) != 1:
        raise c.fail("target.margin", "exactly one of units (the outcome's units) or sd (a "
                     "share of its standard deviation)", data["margin"])
    key, value = next(iter(margin.items()))
    number = c.number(value, f"target.margin.{key}")
    if not number > 0:
        raise c.fail(f"target.margin.{key}", "a positive number", value)
    transform = c.choice(data.get("transform", "none"), "target.transform", TRANSFORMS)
    return Outcome(column=c.string(data["column"], "target.column"),
                   units=c.string(data["units"], "target.units"),
                   margin=Margin(**{key: number}),
                   transform=cast(Transform, transform))


def parse_regression_manifest(c: Checker, doc: dict[str, Any], root: Path) -> RegressionManifest:
    """Validate the YAML mapping ``doc`` of ``c.file`` (sections in a fixed order, so the first
    error reported is stable; the tabular parser's checks for the shared sections)."""
    if doc.get("task") != TASK:
        raise c.fail("task", f"{TASK} (a regression manifest)", doc.get("task"))
    if doc.get("kind", TABULAR) != TABULAR:
        raise c.fail("kind", f"{TABULAR} (a regression audit reads a table)", doc.get("kind"))
    data = c.mapping(doc, "", _TOP_KEYS)
    name, title = _parse_name(c, data)
    random_state, test_size = _parse_split(c, data)
    raw_filters = data.get("row_filters") or []
    if not isinstance(raw_filters, list):
        raise c.fail("row_filters", "a list", raw_filters)
    filters = tuple(_parse_filter(c, f, f"row_filters[{i}]") for i, f in enumerate(raw_filters))
    target = _parse_outcome(c, data["target"])
    attrs = _parse_attributes(c, data["protected_attributes"])
    protected = {a.column for a in attrs}
    core, proxy = _parse_features(c, data, protected=protected, target=target.column)
    dataset = _parse_dataset(c, data["dataset"], root, name=name)
    _check_unit(c, dataset.unit, filters, (*protected, *core, *proxy, target.column))
    system = None
    if data.get("system") is not None:
        system = parse_system(c, data["system"], roles={}, target=target.column)
        if not system.outcome:
            raise c.fail("system.decision", "outcome (the number audited is the people's "
                         "decision; a deployed regressor is faircode audit --prediction)",
                         system.decision.method)
    strata = parse_strata(c, data.get("strata"), protected=protected, target=target.column,
                          unit=dataset.unit)
    return RegressionManifest(name=name, title=title, file=c.file, dataset=dataset,
                              random_state=random_state, test_size=test_size,
                              row_filters=filters, target=target, protected_attributes=attrs,
                              core_features=core, proxy_features=proxy, strata=strata,
                              system=system)


def load_regression_manifest(path: Path | str, *, root: Path | None = None
                             ) -> RegressionManifest:
    """Read and validate the regression manifest at ``path``; one :class:`ManifestError` line
    if invalid."""
    file = Path(path)
    c, doc = read_manifest_document(file)
    return parse_regression_manifest(c, doc, root if root is not None
                                     else repository_root(file.parent))
