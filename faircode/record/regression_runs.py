"""A regression audit's results on disk -> its MLflow child runs: one per row set x attribute.

The ``regression`` kind's entry of :data:`faircode.record.kinds.CHILDREN`: reads a checked
``<results>/<audit>/`` as a regression run writes it (``run.json`` with ``kind: regression``,
``regression_gaps.csv``).  A child is the observed outcome (``<audit> observed <system>
<attribute> (regression)``) or a grid cell (``<audit> S0 linear_regression <attribute>
(regression)``), with ``audit``, ``strategy``, ``model``, ``attribute`` and the outcome's units
as params and tags, so MLflow's compare view shows what differs and in what units.  Metrics,
each metric's short code (:data:`faircode.core.metrics.METRIC_CODES`: ``mean_diff``, ``q50``,
``ks``, ``mae_gap``, ...) with ``.lo``, ``.hi``, ``.p``, ``.q_audit`` and ``.mde``; every
metric's verdict is a tag (``verdict.<code>``), part of the child's digest.  A strategy that does
not apply (S4) is no child: its reason is ``strategies.csv``'s.  An empty or non-finite cell is
not logged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from faircode.core.layout import REGRESSION_RUN, run_record, table_path
from faircode.core.metrics import metric_info
from faircode.provenance.state import state_of
from faircode.record._values import finite_number
from faircode.record.runs import ChildRun, ResultsError, sanitise, state_tags

__all__ = ["GAP_KEYS", "regression_children"]

GAP_KEYS = {"value": "", "ci_low": ".lo", "ci_high": ".hi", "p_value": ".p",
            "q_value": ".q_audit", "mde": ".mde"}
"""regression_gaps.csv column -> the suffix of its metric key (after the metric's code)."""
_NOT_APPLICABLE = "not_applicable"


def regression_children(folder: Path) -> list[ChildRun]:
    """One :class:`ChildRun` per row set x attribute of the regression audit in ``folder``."""
    run = json.loads(run_record(folder).read_text(encoding="utf-8"))
    audit = str(run.get("audit", folder.name))
    units = str((run.get("target") or {}).get("scale_units", ""))
    base_params = {k: str(v) for k, v in (run.get("config") or {}).items() if k != "jobs"}
    base_params["seed"] = str((run.get("seeds") or {}).get("master", ""))
    base_tags = {"audit": audit, "kind": REGRESSION_RUN, "units": units,
                 "dataset_sha256": str((run.get("dataset") or {}).get("sha256", "")),
                 "manifest_sha256": str(run.get("manifest_sha256", "")),
                 **state_tags(state_of(run))}
    path = table_path(folder, "regression_gaps")
    try:
        gaps = pd.read_csv(path, keep_default_na=True)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: expected a regression audit's gaps, got "
                           f"{type(exc).__name__}: {exc}") from None
    gaps = gaps[gaps["verdict"].astype(str) != _NOT_APPLICABLE]
    children = []
    for (strategy, model, attribute), rows in gaps.groupby(
            ["strategy", "model", "protected_attribute"], sort=False):
        who = {"audit": audit, "strategy": str(strategy), "model": str(model),
               "attribute": str(attribute), "table": "regression"}
        metrics: dict[str, float] = {}
        verdicts: dict[str, str] = {}
        for row in rows.itertuples(index=False):
            code = metric_info(str(row.metric)).code
            for column, suffix in GAP_KEYS.items():
                value = finite_number(getattr(row, column))
                if value is not None:
                    metrics[sanitise(f"{code}{suffix}")] = value
            if isinstance(row.verdict, str) and row.verdict:
                verdicts[sanitise(f"verdict.{code}")] = row.verdict
        name = f"{audit} {strategy} {model} {attribute} (regression)"
        key = "|".join(("regression", audit, str(strategy), str(model), str(attribute)))
        tags = {**base_tags, **who, **verdicts, "informative": "true",
                "faircode.child_key": key,
                "mlflow.note.content": f"{name}: gaps in {units} (disadvantaged minus "
                                       "advantaged), intervals, tests and verdicts."}
        children.append(ChildRun(key, audit, name, tags, {**base_params, **who, "units": units},
                                 metrics))
    return children
