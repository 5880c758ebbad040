"""What the MLflow UI shows first: one audit's S0-S4 with ``dp`` and its interval as columns.

MLflow 3.17's runs table opens with the parents collapsed, default columns only (no metric) and
names cut after ~15 characters.  Its UI has one mechanism that sets the whole first screen from
an address: a **shared view**.  ``?viewStateShareKey=<key>`` makes the runs page read the
experiment tag ``mlflow.sharedViewState.<key>`` -- a JSON object of search facets
(``searchFilter``, ``orderByKey``, ``orderByAsc``) and table state (``selectedColumns``,
``columnWidths``) -- and apply it (``mlflow/server/js`` in the locked wheel: the hook reading
``viewStateShareKey``; a URL that also carries a facet ignores the key).  :func:`first_screen`
builds that view and :func:`share_first_screen` writes it on every sync, so the address
``faircode track`` prints (:func:`faircode.record.tracking.runs_url`) opens on:

* **one audit's fairness children of the latest state**: the alphabetically first audit with
  children and its first protected attribute -- the first line of the report's heatmap and
  paper table -- filtered by the state's digest, so the table says "15 matching runs" for S0-S4
  x three families, not a page of another state's or a count of whatever was loaded.  The audit
  is the first among the children **logged under this state's parent**: a child it shares with
  an earlier state (:mod:`faircode.record._shared`) is tagged with that state's digest, so an
  audit whose children are all shared would open on "0 matching runs".  When the parent logged
  no fairness child (every number equal to an earlier state's), the view is the first audit's
  shared runs, by run id (``attributes.run_id IN (...)``);
* **sorted by name** (``<audit> S<k> <family> <attribute>`` sorts like the grid);
* **columns** ``dp``, ``dp.lo``, ``dp.hi``, ``dp.q_audit``, ``acc`` and the strategy, model and
  attribute params, in that order after the name, each wide enough for its values, and a name
  column wide enough for the longest child name.

Filtering (``searchFilter``) lists children flat: MLflow nests children under parents only in
an unfiltered, date-sorted table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from faircode.record.runs import ChildRun

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

__all__ = ["COLUMNS", "SHARE_KEY", "TAG", "first_screen", "share_first_screen"]

SHARE_KEY = "faircode"
"""The ``viewStateShareKey`` of the first screen (``runs_url`` puts it in the address)."""

TAG = f"mlflow.sharedViewState.{SHARE_KEY}"
"""The experiment tag MLflow's UI reads the shared view from."""

COLUMNS: tuple[str, ...] = (
    "metrics.`dp`", "metrics.`dp.lo`", "metrics.`dp.hi`", "metrics.`dp.q_audit`",
    "metrics.`acc`", "params.`strategy`", "params.`model`", "params.`attribute`")
"""The runs table's columns, in MLflow's column keys (``<kind>.`<name>```)."""

_NAME_COLUMN = "attributes.`Run Name`"
_PIXELS_PER_CHARACTER = 7.5


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def first_screen(children: Sequence[ChildRun], *, digest: str,
                 shared: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The shared view of the first audit's first attribute (module docstring); None without
    a fairness child.

    ``shared``: key -> run id of the children the state's parent shares instead of logging
    them (none by default); the audit and attribute are chosen among the others.
    """
    shared = shared or {}
    fairness = [c for c in children if c.tags.get("table") == "fairness"]
    if not fairness:
        return None
    here = [c for c in fairness if c.key not in shared]
    audit = min(c.audit for c in here or fairness)
    mine = [c for c in here or fairness if c.audit == audit]
    attribute = mine[0].tags["attribute"]  # children follow the table's (manifest) order
    shown = [c for c in mine if c.tags["attribute"] == attribute]
    widest = max(len(c.name) for c in shown)
    which = (f"tags.`faircode.parent_digest` = {_quoted(digest)}" if here else
             f"attributes.run_id IN ({', '.join(_quoted(shared[c.key]) for c in shown)})")
    return {
        "searchFilter": (f"tags.table = 'fairness' and tags.audit = {_quoted(audit)} and "
                         f"tags.attribute = {_quoted(attribute)} and {which}"),
        "orderByKey": "tags.`mlflow.runName`", "orderByAsc": True,
        "selectedColumns": list(COLUMNS),
        "columnOrder": [_NAME_COLUMN, *COLUMNS],
        "columnWidths": {_NAME_COLUMN: int(40 + _PIXELS_PER_CHARACTER * widest),
                         **dict.fromkeys(COLUMNS[:5], 105),
                         **dict.fromkeys(COLUMNS[5:], 165)},
    }


def share_first_screen(client: MlflowClient, experiment_id: str,
                       children: Sequence[ChildRun], *, digest: str,
                       shared: Mapping[str, str] | None = None) -> bool:
    """Write the first screen of ``children`` as the experiment's shared view; whether one was
    written (a state without fairness children leaves the tag as it was)."""
    view = first_screen(children, digest=digest, shared=shared)
    if view is None:
        return False
    client.set_experiment_tag(experiment_id, TAG, json.dumps(view, sort_keys=True))
    return True
