"""A grid audit's bagged ensembles and set of models -> MLflow child runs.

The ``binary`` kind's entry of :data:`faircode.record.kinds.CHILDREN`: the grid's children
(:func:`faircode.record.runs.grid_children`) and, where the bag stage ran, those of
``arbitrariness.csv``, ``self_consistency.csv`` and ``multiplicity.csv``
(:mod:`faircode.evaluate.arbitrariness`):

* one **ensemble** child per bagged strategy x model x attribute (``<audit> S0 LR race
  (ensemble)``): per fairness metric the gap on the rows it decides (``dp``, ``dp.lo``,
  ``dp.hi``, ``dp.p``, ``dp.q_audit``, ``dp.eq_p``, ...), the single model's (``dp.single``,
  ``dp.single.lo``, ``dp.single.hi``) and the ensemble's on every row (``dp.ensemble``), the
  ``abstention_rate``, ``n_kept``, ``bags`` and ``consistency_level``; each group's share of
  arbitrary decisions (``arbitrary.dis``, ``arbitrary.dis.lo``, ..., ``mean_sc.dis``); tags
  ``verdict.<code>``, ``single_verdict.<code>`` and ``survives.<code>`` (part of its digest);
* one **multiplicity** child per attribute (``<audit> set of models race (multiplicity)``): the
  set's size and gaps' range, the test of a less discriminatory alternative (``gap_delta``,
  ``.lo``, ``.hi``, ``.p``, ``.q_audit``; ``accuracy_delta`` with ``.eq_p``, ``.eq_q``); tags
  ``incumbent``, ``alternative``, ``verdict`` and ``note``.

An empty or non-finite cell is not logged (the CSV keeps it), as for every child.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.cells import FAMILY_CODES, strategy_code
from faircode.core.layout import table_path
from faircode.record.child import ChildRun
from faircode.record.names import METRIC_CODES, readable
from faircode.record.runs import ResultsError, audit_base, grid_children, sanitise

__all__ = ["binary_children", "ensemble_children", "multiplicity_children"]

_ENSEMBLE = {"value": "", "ci_low": ".lo", "ci_high": ".hi", "p_value": ".p",
             "q_value": ".q_audit", "equivalence_p_value": ".eq_p",
             "equivalence_q_value": ".eq_q", "gap_bound": ".bound", "single_value": ".single",
             "single_ci_low": ".single.lo", "single_ci_high": ".single.hi",
             "ensemble_value": ".ensemble"}
"""arbitrariness.csv column -> the suffix of its metric key (after the metric's code)."""
_ENSEMBLE_TAGS = ("verdict", "single_verdict", "survives")
_CELL_COLUMNS = ("abstention_rate", "n_kept", "bags", "consistency_level")
_GROUPS = {"disadvantaged": "dis", "advantaged": "adv"}
_SET = {"n_models": "n_models", "n_informative": "n_informative", "n_set": "n_set",
        "gap_min": "gap_min", "gap_max": "gap_max", "incumbent_gap": "incumbent_gap",
        "alternative_gap": "alternative_gap", "incumbent_accuracy": "incumbent_accuracy",
        "alternative_accuracy": "alternative_accuracy", "value": "gap_delta",
        "ci_low": "gap_delta.lo", "ci_high": "gap_delta.hi", "p_value": "gap_delta.p",
        "q_value": "gap_delta.q_audit", "accuracy_difference": "accuracy_delta",
        "accuracy_ci_low": "accuracy_delta.lo", "accuracy_ci_high": "accuracy_delta.hi",
        "equivalence_p_value": "accuracy_delta.eq_p",
        "equivalence_q_value": "accuracy_delta.eq_q", "shown": "shown",
        "tolerance": "tolerance", "n_selection": "n_selection", "n_held_out": "n_held_out"}
_SET_TAGS = ("metric", "incumbent", "alternative", "verdict", "note")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value in ("True", "False"):
        return float(value == "True")
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _read(folder: Path, table: str) -> pd.DataFrame | None:
    path = table_path(folder, table)
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path, keep_default_na=True)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: expected the {table} table, got {type(exc).__name__}: "
                           f"{exc}") from None


def _put(metrics: dict[str, float], key: str, column: str, value: Any) -> None:
    number = _number(value)
    if number is not None:
        metrics[sanitise(key)] = readable(column, number)


def _child(key: str, audit: str, name: str, who: Mapping[str, str], *, params: Mapping[str, str],
           tags: Mapping[str, str], own: Mapping[str, str], metrics: dict[str, float],
           what: str) -> ChildRun:
    everything = {**tags, **who, **own, "informative": "true", "faircode.child_key": key,
                  "mlflow.note.content": f"{name}: {what}."}
    return ChildRun(key, audit, name, everything, {**params, **who}, metrics)


def ensemble_children(folder: Path, *, audit: str, params: Mapping[str, str],
                      tags: Mapping[str, str]) -> list[ChildRun]:
    """One child per bagged strategy x model x attribute of ``arbitrariness.csv`` (module
    docstring); none without the table."""
    frame, shares = _read(folder, "arbitrariness"), _read(folder, "self_consistency")
    if frame is None or frame.empty:
        return []
    by_cell = {} if shares is None else dict(list(shares.groupby(
        ["strategy", "model", "protected_attribute"], sort=False)))
    children = []
    for (strategy, model, attribute), rows in frame.groupby(
            ["strategy", "model", "protected_attribute"], sort=False):
        metrics: dict[str, float] = {}
        own: dict[str, str] = {}
        for row in rows.to_dict("records"):
            code = METRIC_CODES.get(str(row["metric"]), str(row["metric"]))
            for column, suffix in _ENSEMBLE.items():
                _put(metrics, f"{code}{suffix}", column, row.get(column))
            own.update({sanitise(f"{t}.{code}"): str(row[t]) for t in _ENSEMBLE_TAGS
                        if isinstance(row.get(t), str | bool) and str(row[t])})
        first = rows.iloc[0]
        for column in _CELL_COLUMNS:
            _put(metrics, column, column, first[column])
        for share in by_cell.get((strategy, model, attribute), pd.DataFrame()).to_dict("records"):
            group = _GROUPS.get(str(share["group"]), str(share["group"]))
            for column, suffix in (("share", ""), ("ci_low", ".lo"), ("ci_high", ".hi"),
                                   ("design_effect", ".deff")):
                _put(metrics, f"arbitrary.{group}{suffix}", column, share[column])
            _put(metrics, f"mean_sc.{group}", "mean_self_consistency",
                 share["mean_self_consistency"])
        name = (f"{audit} {strategy_code(str(strategy))} "
                f"{FAMILY_CODES.get(str(model), str(model))} {attribute} (ensemble)")
        who = {"audit": audit, "strategy": str(strategy),
               "strategy_code": strategy_code(str(strategy)),
               "model": str(model), "attribute": str(attribute), "table": "arbitrariness"}
        key = "|".join(("arbitrariness", audit, str(strategy), str(model), str(attribute)))
        children.append(_child(key, audit, name, who, params=params, tags=tags, own=own,
                               metrics=metrics, what=(
                                   "the bagged ensemble abstaining on arbitrary decisions: its "
                                   "gaps beside the single model's, each group's share of "
                                   "arbitrary decisions")))
    return children


def multiplicity_children(folder: Path, *, audit: str, params: Mapping[str, str],
                          tags: Mapping[str, str]) -> list[ChildRun]:
    """One child per attribute of ``multiplicity.csv`` (module docstring); none without it."""
    frame = _read(folder, "multiplicity")
    if frame is None or frame.empty:
        return []
    children = []
    for row in frame.to_dict("records"):
        attribute = str(row["protected_attribute"])
        metrics: dict[str, float] = {}
        for column, key in _SET.items():
            _put(metrics, key, column, row.get(column))
        own = {t: str(row[t]) for t in _SET_TAGS if isinstance(row.get(t), str) and row[t]}
        name = f"{audit} set of models {attribute} (multiplicity)"
        who = {"audit": audit, "attribute": attribute, "table": "multiplicity"}
        key = "|".join(("multiplicity", audit, attribute))
        children.append(_child(key, audit, name, who, params=params, tags=tags, own=own,
                               metrics=metrics, what=(
                                   "the models within the accuracy tolerance of the best, the "
                                   "range of their gaps and the test of a less discriminatory "
                                   "alternative of equal accuracy")))
    return children


def binary_children(folder: Path) -> list[ChildRun]:
    """The child runs of one checked grid audit folder: the grid's, then its ensembles' and its
    set of models' (module docstring)."""
    audit, params, tags = audit_base(folder)
    return [*grid_children(folder),
            *ensemble_children(folder, audit=audit, params=params, tags=tags),
            *multiplicity_children(folder, audit=audit, params=params, tags=tags)]

