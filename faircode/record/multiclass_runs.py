"""A multi-class audit's results on disk -> its MLflow child runs: one per row set x attribute.

The ``multiclass`` kind's entry of :data:`faircode.record.kinds.CHILDREN`: reads a checked
``<results>/<audit>/`` as the evaluate stage writes a multi-class audit's (``run.json`` with
``kind: multiclass``, ``class_tests.csv``, ``class_gaps.csv``, ``strategies.csv``).  A child is
named ``<audit> <row set> <attribute>`` (``bank_wages S0 LR gender``, ``bank_wages recorded
(all) gender``) with ``audit``, ``strategy``, ``strategy_code``, ``model``, ``row_set``,
``attribute`` and ``table`` (``multiclass``) as params and tags, and the verdict as a tag.

Metrics carry the kind's own units and short keys (:data:`faircode.core.metrics.METRIC_TABLE`'s
codes): ``cls_max`` (the largest class share gap) with ``cls_max.lo``/``.hi``, ``tv`` (total
variation distance), ``chi2``, ``chi2.p`` (the joint exact test) and ``chi2.q_audit``, and per
class ``cls_gap.<class>`` (disadvantaged minus advantaged share) with ``.lo``/``.hi``,
``.q_audit`` and ``share_of_gap.<class>``, and each group's ``share.<class>.dis`` /
``share.<class>.adv``; a fitted cell also logs its ``accuracy`` and ``balanced_accuracy``.  An
empty or non-finite number is not logged; p- and q-values are logged to 3 significant digits
(:func:`faircode.record.names.readable`), and an uninformative row set logs its sizes only
(``n_dis``, ``n_adv``; its verdict tag says why), as a grid cell does.  The ``n/a`` strategies
have no child: their reason is the parent's (``strategies.csv`` is logged with the tables).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.cells import FAMILY_CODES, strategy_code
from faircode.core.layout import MULTICLASS_RUN, run_record, table_path
from faircode.core.metrics import Metric, metric_info
from faircode.provenance.state import state_of
from faircode.record._values import finite_number, read_table
from faircode.record.names import DESIGN_COLUMNS, readable
from faircode.record.runs import ChildRun, sanitise, state_tags

__all__ = ["multiclass_children"]

_MAX, _GAP = metric_info(Metric.CLASS_MAX_GAP).code, metric_info(Metric.CLASS_SHARE_GAP).code
_TEST_KEYS = {"value": _MAX, "ci_low": f"{_MAX}.lo", "ci_high": f"{_MAX}.hi",
              "tv_distance": "tv", "statistic": "chi2", "p_value": "chi2.p",
              "q_value": "chi2.q_audit", "min_expected": "chi2.min_expected",
              "n_disadvantaged": "n_dis", "n_advantaged": "n_adv"}
"""class_tests.csv column -> metric key."""
_OBSERVED = "observed"


def _put(metrics: dict[str, float], key: str, value: Any, column: str = "") -> None:
    """Log ``value`` under ``key`` if it is a finite number (a p- or q-value ``column``
    readable)."""
    number = finite_number(value)
    if number is not None:
        metrics[sanitise(key)] = readable(column, number)


def multiclass_children(folder: Path) -> list[ChildRun]:
    """One :class:`ChildRun` per row set x attribute of the multi-class audit in ``folder``."""
    run = json.loads(run_record(folder).read_text(encoding="utf-8"))
    audit = str(run.get("audit", folder.name))
    config = run.get("config") or {}
    base_params = {k: str(v) for k, v in config.items() if k != "jobs"}
    base_params["seed"] = str((run.get("seeds") or {}).get("master", ""))
    base_tags = {"audit": audit, "kind": MULTICLASS_RUN,
                 "dataset_sha256": str((run.get("dataset") or {}).get("sha256", "")),
                 "manifest_sha256": str(run.get("manifest_sha256", "")),
                 **state_tags(state_of(run))}
    tests = read_table(table_path(folder, "class_tests"), "a multi-class audit's")
    gaps = read_table(table_path(folder, "class_gaps"), "a multi-class audit's")
    fitted = read_table(table_path(folder, "strategies"), "a multi-class audit's")
    keys = ["strategy", "model", "row_set", "protected_attribute"]
    children = []
    for row in tests.to_dict("records"):
        strategy, model = str(row["strategy"]), str(row["model"])
        code = strategy_code(strategy)
        shown = (f"recorded ({row['row_set']})" if strategy == _OBSERVED
                 else f"{code} {FAMILY_CODES.get(model, model)}")
        who = {"audit": audit, "strategy": strategy, "strategy_code": code, "model": model,
               "row_set": str(row["row_set"]), "attribute": str(row["protected_attribute"]),
               "table": "multiclass"}
        metrics: dict[str, float] = {}
        informative = row["verdict"] != "uninformative"
        for column, key in _TEST_KEYS.items():
            if informative or column in DESIGN_COLUMNS:
                _put(metrics, key, row[column], column)
        mine = gaps[(gaps[keys] == pd.Series({k: row[k] for k in keys})).all(axis=1)]
        for g in mine.to_dict("records") if informative else ():
            name = str(g["class"])
            for column, key in (("value", ""), ("ci_low", ".lo"), ("ci_high", ".hi"),
                                ("q_value", ".q_audit")):
                _put(metrics, f"{_GAP}.{name}{key}", g[column], column)
            _put(metrics, f"share_of_gap.{name}", g["share_of_gap"])
            _put(metrics, f"share.{name}.dis", g["share_disadvantaged"])
            _put(metrics, f"share.{name}.adv", g["share_advantaged"])
        cell = fitted[(fitted["strategy"] == strategy) & (fitted["model"] == model)]
        for column in ("accuracy", "balanced_accuracy"):
            if len(cell):
                _put(metrics, column, cell[column].iat[0])
        name = f"{audit} {shown} {row['protected_attribute']}"
        key = "|".join(("multiclass", audit, *(str(row[k]) for k in keys)))
        tags = {**base_tags, **who, "verdict": str(row["verdict"]),
                "method": str(row["method"]), "informative": str(informative).lower(),
                "faircode.child_key": key,
                "mlflow.note.content": f"{name}: class shares by group and the joint test."}
        children.append(ChildRun(key, audit, name, tags, {**base_params, **who}, metrics))
    return children
