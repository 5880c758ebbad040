"""Task kinds: what a manifest's ``kind`` selects, as one table every wing reads.

A *task kind* is a kind of audit: ``binary`` (binary classification, the S0-S4 grid of
strategies x model families on a tabular manifest), ``text`` (deployed text classifiers on
template sentences with counterfactual swaps), ``regression`` (a number per row -- a wage, a
salary, a rating -- and the S0-S3 grid of regression models; a tabular manifest with ``task:
regression``) and ``multiclass`` (an outcome of several classes -- a job grade -- by group, and
the S0-S2 grid of multinomial models; a tabular manifest with ``task: multiclass``).  Its record
(:class:`TaskKind`) holds the facts
the rest of the code dispatches on: how its manifest and its ``run.json`` name it, which
``params.yaml`` list names its audits, its data stages, its tables (their files:
:mod:`faircode.core.layout`), its metrics, and whether it has the grid.

Design decisions
----------------
* **Core names a kind; each wing registers its implementation** in its own table keyed by the
  kind's :attr:`TaskKind.name` -- the audit wing its manifest loader
  (:mod:`faircode.audit.kinds`), evaluate its evaluator (:mod:`faircode.evaluate.kinds`), report
  its section (:mod:`faircode.report.kinds`), record its MLflow children
  (:mod:`faircode.record.kinds`) -- so every arrow still points down, and a dispatcher never
  names a kind: it looks one up.  ``tests/test_layout.py`` checks that every wing's table
  covers every kind here.
* **A new kind** is a record here, its manifest schema, and one module per wing it touches with
  one entry in that wing's table; no dispatcher changes.
* Lookups fail in one line naming what arrived and what is known, never with a ``KeyError``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from faircode.core import layout
from faircode.core.errors import ConfigError, describe
from faircode.core.metrics import Metric, metrics_of

__all__ = ["BINARY", "MULTICLASS", "REGRESSION", "TASK_KINDS", "TEXT", "TaskKind",
           "kind_of_manifest", "kind_of_run", "registered", "task_kind"]


@dataclass(frozen=True, slots=True)
class TaskKind:
    """One kind of audit and the facts every wing dispatches on."""

    name: str
    """The key of every wing's table (``binary``, ``text``)."""
    label: str
    """What it is, for a reader."""
    manifest_kind: str
    """The ``kind:`` of its ``audit.yaml``, or for a tabular manifest its ``task:``
    (:func:`faircode.audit.manifest.manifest_kind`)."""
    run_kind: str
    """The ``kind`` of its ``run.json`` (:func:`faircode.core.layout.run_kind`)."""
    params_key: str
    """The ``params.yaml`` list naming its audits (a field of
    :class:`faircode.core.config.Params`)."""
    data_stages: tuple[str, ...]
    """Its stages before evaluate, in order (``upstream/dvc.yaml``)."""
    tables: tuple[str, ...]
    """The tables every run of it writes (each ``<name>.csv``)."""
    metrics: tuple[str, ...]
    """The metrics its tables report (a kind of the metric table: :func:`faircode.core.metrics.
    metrics_of`)."""
    grid: bool = False
    """Whether its audits run the S0-S4 grid (:mod:`faircode.core.cells`): its tables are then
    the grid's and the report's grid view reads them."""
    optional_tables: tuple[str, ...] = ()
    """Tables a run writes when it has them (training replicates, strata, curves)."""
    headline: str = ""
    """The metric of its DVC headline's ``gap.S<k>`` (:mod:`faircode.evaluate.headline_keys`),
    or empty for a kind without that headline."""

    def __post_init__(self) -> None:
        for name in ("name", "label", "manifest_kind", "run_kind", "params_key"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ConfigError(f"TaskKind.{name}: expected a non-empty string, "
                                  f"got {describe(value)}")
        for name in ("data_stages", "tables", "metrics", "optional_tables"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"TaskKind.{name}: expected a tuple of strings, "
                                  f"got {describe(value)}")
        if not self.tables:
            raise ConfigError(f"TaskKind.tables: expected at least one table, got none "
                              f"({self.name})")
        if self.headline and self.headline not in self.metrics:
            raise ConfigError(f"TaskKind.headline: expected one of its metrics, got "
                              f"{self.headline!r} ({self.name})")


BINARY = TaskKind(
    name="binary",
    label="binary classification: the S0-S4 grid of strategies x model families",
    manifest_kind="tabular",
    run_kind=layout.GRID_RUN,
    params_key="audits",
    data_stages=("fetch", "prepare", "fit"),
    tables=layout.GRID_TABLES,
    metrics=metrics_of("binary"),
    grid=True,
    headline=Metric.DEMOGRAPHIC_PARITY.value,
    optional_tables=(*layout.GRID_EXTRA_TABLES, *layout.EFFECT_TABLES, *layout.MATCHED_TABLES,
                     *layout.STABILITY_TABLES, *layout.RANKING_TABLES,
                     *layout.ARBITRARINESS_TABLES),
)
TEXT = TaskKind(
    name="text",
    label="text classifiers on template sentences with counterfactual swaps",
    manifest_kind="text",
    run_kind=layout.TEXT_RUN,
    params_key="text_audits",
    data_stages=("fetch", "payloads", "systems", "scores"),
    tables=layout.TEXT_TABLES,
    metrics=("flip_rate", "ctf_gap", "shift", "placebo_difference", "false_positive_rate",
             "false_negative_rate", "fped", "fned", "auc", "subgroup_auc", "bpsn_auc",
             "bnsp_auc", "pinned_auc", "test_auc", "test_accuracy"),
)

REGRESSION = TaskKind(
    name="regression",
    label="regression: a number per row (pay, a rating) by group, and the S0-S3 grid of "
          "regression models",
    manifest_kind="regression",
    run_kind=layout.REGRESSION_RUN,
    params_key="regression_audits",
    data_stages=("fetch", "regression-fit"),
    tables=layout.REGRESSION_TABLES,
    metrics=metrics_of("regression"),
    headline=Metric.MEAN_DIFFERENCE.value,
    optional_tables=layout.REGRESSION_EXTRA_TABLES,
)

MULTICLASS = TaskKind(
    name="multiclass",
    label="multi-class outcomes: each class's share by group, and the S0-S2 grid of "
          "multinomial models",
    manifest_kind="multiclass",
    run_kind=layout.MULTICLASS_RUN,
    params_key="multiclass_audits",
    data_stages=("fetch",),
    tables=layout.MULTICLASS_TABLES,
    metrics=metrics_of("multiclass"),
    headline=Metric.CLASS_MAX_GAP.value,
    optional_tables=layout.MULTICLASS_EXTRA_TABLES,
)
"""Its fits run in its evaluate step (:mod:`faircode.evaluate.multiclass_kind`): no fit stage."""

TASK_KINDS: tuple[TaskKind, ...] = (BINARY, TEXT, REGRESSION, MULTICLASS)
"""Every task kind, in the order the evaluate stage settles their audits."""


def _check_distinct() -> None:
    for field in ("name", "manifest_kind", "run_kind", "params_key"):
        values = [getattr(k, field) for k in TASK_KINDS]
        if len(set(values)) != len(values):
            raise ConfigError(f"TASK_KINDS: {field}: expected distinct values, got {values}")


_check_distinct()


def task_kind(name: str) -> TaskKind:
    """The task kind called ``name``; else one :class:`ConfigError` line."""
    for kind in TASK_KINDS:
        if kind.name == name:
            return kind
    raise ConfigError(f"task kind: expected one of {', '.join(k.name for k in TASK_KINDS)}, "
                      f"got {describe(name)}")


def kind_of_manifest(manifest_kind: str, *, where: str = "kind") -> TaskKind:
    """The task kind an ``audit.yaml`` ``kind:`` names; else one line naming ``where``."""
    for kind in TASK_KINDS:
        if kind.manifest_kind == manifest_kind:
            return kind
    raise ConfigError(f"{where}: expected one of "
                      f"{', '.join(k.manifest_kind for k in TASK_KINDS)}, "
                      f"got {describe(manifest_kind)}")


def kind_of_run(run_kind: str | None) -> TaskKind | None:
    """The task kind whose runs have ``run.json`` ``kind`` ``run_kind`` (``None`` for another
    folder: the pipeline's note, a ``faircode flips`` folder, an unknown kind)."""
    for kind in TASK_KINDS:
        if kind.run_kind == run_kind:
            return kind
    return None


def registered(table: dict[str, str], kind: TaskKind, *, where: str) -> Any:
    """The object a wing's table registers for ``kind``, imported now: each entry is
    ``"<module>:<attribute>"`` (``"faircode.record.runs:grid_children"``), so a wing's table
    imports nothing until a kind is used; a kind the table lacks is one line naming ``where``."""
    if kind.name not in table:
        raise ConfigError(f"{where}: expected an entry for the task kind {kind.name!r}, got "
                          f"entries for {', '.join(sorted(table)) or 'none'}")
    module, _, attribute = table[kind.name].partition(":")
    return getattr(importlib.import_module(module), attribute)
