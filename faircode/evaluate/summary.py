"""The pipeline's DVC views of one audit: its headline and full metrics, its strategy-plot data.

``results/metrics/<audit>.json`` (:func:`headline`; the DVC metrics of ``dvc.yaml``) is a few
keys, **the same keys in every audit's file**, so ``dvc metrics show`` prints one line per
audit that fits a 120-column terminal (:mod:`faircode.evaluate.headline_keys`): the first
protected attribute (``attr``) and its demographic-parity difference under each strategy
(``gap.S0`` ...: the mean over the model families of the cell's value in ``fairness.csv`` -- at
K > 1 the K-replicate estimate every view shows -- rounded to 3 decimals, over the informative
families only); null for an audit without data and for a strategy with no informative family.
(Each further key widens every line by ten characters: the accuracies did not fit.)  ``dvc exp
show`` names these columns ``results/metrics/<audit>.json:gap.S0`` (a key shared by several
files carries its file).

``results/metrics/full/<audit>.json`` (:func:`summary`; an output, not a DVC metric: ``dvc
metrics show results/metrics/full/compas.json`` reads it) carries every row set of the audit's
main tables -- S0-S4 for each model family, and the deployed system where the audit declares
one -- for every protected attribute: the accuracy of the cell, and per attribute its
demographic-parity difference (``fairness.csv``'s ``demographic_parity_diff``, signed as there:
at K > 1 the K-replicate estimate), its interval (``dp_lo``, ``dp_hi``), that test's per-audit
Benjamini-Hochberg q-value (``dp_q``) and its verdict (``dp_verdict``: gap, parity,
inconclusive, uninformative).
``results/metrics/<audit>-strategies.json`` (:func:`strategy_plot`) is the same parity
difference with its interval and verdict, one record per row set x attribute, for the
``faircode_strategies`` template of ``dvc plots`` (``.dvc/plots/faircode_strategies.json``).
Both read ``fairness.csv``'s own columns, so they show the number, interval and verdict every
other view shows.

Design decisions
----------------
* **Every full key starts with the audit's name** (``compas.S3.LR.dp_diff.race``).  ``dvc exp show``
  names a metric column by its key alone when that key is unique across the metric and params
  files (and by ``<file>:<key>`` otherwise), so a key that carries its audit is unique, short and
  never one of params.yaml's names (those have at most two parts: ``audits``, ``run.seeds``);
  the documented ``--keep``/``--drop`` patterns (``^compas\\.``, ``\\.dp_diff\\.``) match every
  audit alike.  A clash between a column name and a dep path is what crashed
  ``dvc exp show --drop audits`` (tests/test_dvc_views.py checks that no name can clash).
* **Attributes and metrics are leaves of their own key** (``dp_diff.<attribute>``,
  ``dp_q.<attribute>``), never siblings of ``accuracy``, so an attribute may have any name.
* **Short codes.**  Strategies by ``S0`` ... ``S4``, families by ``LR``/``RF``/``GB``
  (:data:`faircode.core.cells.FAMILY_CODES`); the deployed system as ``deployed.<its name>``.
* **Undefined is null.**  A degenerate cell's NaN is written as JSON ``null`` (DVC shows ``-``;
  Vega-Lite leaves the point out) -- never a number it is not.
* **An uninformative cell has no number.**  Its verdict says ``uninformative`` and its value,
  interval and q are ``null`` in every file here, and the headline's mean over the model
  families leaves it out (as the report's heatmap and headline do): the estimate of a cell whose
  decisions cannot show a gap is no finding in any view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from faircode.core.cells import FAMILY_CODES, STRATEGY_TITLES, strategy_code
from faircode.core.kinds import BINARY
from faircode.evaluate.headline_keys import headline_record
from faircode.evaluate.tables import AuditResults

__all__ = ["HEADLINE_METRIC", "STRATEGY_PLOT_FIELDS", "headline",
           "strategy_plot", "summary", "unavailable_headline", "unavailable_summary"]

HEADLINE_METRIC: str = BINARY.headline
"""The fairness metric of the DVC views (``dp_diff``): the benchmark's headline gap."""

STRATEGY_PLOT_FIELDS: tuple[str, ...] = (
    "attribute", "attribute_index", "strategy", "family", "dp_diff", "ci_low", "ci_high",
    "q_value", "significant", "verdict")
"""The fields of each record of :func:`strategy_plot` (the template reads them by name)."""


def unavailable_summary(audit: str) -> dict[str, Any]:
    """The full metrics of an audit without data: ``{audit: {"available": false}}``."""
    return {audit: {"available": False}}


def unavailable_headline() -> dict[str, Any]:
    """The headline of an audit without data: its keys, every value null."""
    return headline_record(None, {})


def _cell_means(results: AuditResults, metric: str, attribute: str) -> pd.Series:
    """Per strategy code, the mean over model families of each grid cell's value of the
    fairness ``metric`` on ``attribute`` (``fairness.csv``'s: the K-replicate estimate at
    K > 1)."""
    source = results.fairness
    rows = source[(source["metric"] == metric) & (source["strategy"] != "deployed")
                  & (source["protected_attribute"].astype(str) == attribute)]
    rows = rows[~_uninformative(rows)]
    codes = rows["strategy"].map(lambda s: strategy_code(str(s)))
    return pd.to_numeric(rows["value"], errors="coerce").groupby(codes.to_numpy()).mean()


def headline(results: AuditResults) -> dict[str, Any]:
    """The headline metrics of one audit (module docstring): the same keys for every audit."""
    gaps = results.fairness[results.fairness["metric"] == HEADLINE_METRIC]
    attributes = list(dict.fromkeys(map(str, gaps["protected_attribute"])))
    if not attributes:
        return unavailable_headline()
    means = _cell_means(results, HEADLINE_METRIC, attributes[0])
    return headline_record(attributes[0], {str(code): value for code, value in means.items()})


def _uninformative(rows: pd.DataFrame) -> pd.Series:
    """Which rows' verdict is ``uninformative`` (none in a table without verdicts)."""
    if "verdict" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["verdict"].astype(str) == "uninformative"


def _rounded(value: object) -> float | None:
    number = _number(value)
    return None if number is None else round(number, 3)


def _row_sets(fairness: pd.DataFrame, performance: pd.DataFrame) -> list[tuple[str, str]]:
    """The (strategy, model) row sets of the tables, in table (grid) order."""
    pairs = pd.concat([fairness.loc[:, ["strategy", "model"]],
                       performance.loc[:, ["strategy", "model"]]], ignore_index=True)
    return [(str(s), str(m)) for s, m in pairs.drop_duplicates().itertuples(index=False)]


def _keys(strategy: str, model: str) -> tuple[str, str]:
    """A row set's two keys: ``("S3", "LR")``, or ``("deployed", "<system name>")``."""
    return strategy_code(strategy), FAMILY_CODES.get(model, model)


def summary(results: AuditResults, *, audit: str) -> dict[str, Any]:
    """The DVC metrics of one audit: ``{audit: {code: {family: {"accuracy": a, "dp_diff":
    {attribute: v}, "dp_lo": ..., "dp_hi": ..., "dp_q": {attribute: q}, "dp_verdict":
    {attribute: verdict}}}}}`` for every row set of its tables (the interval and verdict where
    ``fairness.csv`` has them)."""
    fairness = results.fairness
    gaps = fairness[fairness["metric"] == HEADLINE_METRIC]
    perf = results.performance
    accuracy = perf[perf["metric"] == "accuracy"].set_index(["strategy", "model"])["value"]
    out: dict[str, dict[str, Any]] = {}
    for strategy, model in _row_sets(gaps, perf[perf["metric"] == "accuracy"]):
        code, family = _keys(strategy, model)
        rows = gaps[(gaps["strategy"] == strategy) & (gaps["model"] == model)]
        record: dict[str, Any] = {"accuracy": _number(accuracy.get((strategy, model)))}
        valued = ~_uninformative(rows).to_numpy()
        for key, column, cast in _METRIC_COLUMNS:
            if column in rows:
                record[key] = {str(a): cast(v) if ok or column == "verdict" else None
                               for a, v, ok in zip(rows["protected_attribute"], rows[column],
                                                   valued, strict=True)}
        out.setdefault(code, {})[family] = record
    return {audit: out}


def _text(value: object) -> str | None:
    """A JSON-safe string (None for a missing value)."""
    return None if value is None or pd.isna(value) else str(value)  # type: ignore[call-overload]


def _number(value: object) -> float | None:
    """A JSON-safe float (None for a missing or undefined value)."""
    if value is None or pd.isna(value):  # type: ignore[call-overload]
        return None
    return float(value)  # type: ignore[arg-type]


_METRIC_COLUMNS: tuple[tuple[str, str, Callable[[object], Any]], ...] = (
    ("dp_diff", "value", _number), ("dp_lo", "ci_low", _number), ("dp_hi", "ci_high", _number),
    ("dp_q", "q_value", _number), ("dp_verdict", "verdict", _text))
"""Each attribute's keys of a row set: (key, ``fairness.csv`` column, JSON cast)."""


def strategy_plot(results: AuditResults | None, *, audit: str) -> list[dict[str, Any]]:
    """Plot records for ``dvc plots`` (fields :data:`STRATEGY_PLOT_FIELDS`): per row set x
    attribute the parity difference with its interval; ``[]`` for ``None``.

    ``attribute`` reads ``"<audit>: <attribute>"`` (the facet header names both),
    ``attribute_index`` its position in the table (the manifest's order, the panels' order),
    ``strategy`` ``"S3 ExponentiatedGradient"`` (or ``"deployed <system name>"``), ``family``
    ``LR``/``RF``/``GB`` (``deployed`` for the system); ``significant`` is the per-audit BH
    decision.
    """
    if results is None:
        return []
    fairness = results.fairness
    rows = fairness[fairness["metric"] == HEADLINE_METRIC]
    order = {a: i for i, a in enumerate(dict.fromkeys(map(str, rows["protected_attribute"])))}
    out = []
    for row, empty in zip(rows.itertuples(index=False), _uninformative(rows), strict=True):
        code, family = _keys(str(row.strategy), str(row.model))
        title = STRATEGY_TITLES.get(code)

        def shown(value: object, empty: bool = bool(empty)) -> float | None:
            return None if empty else _number(value)

        out.append({
            "attribute": f"{audit}: {row.protected_attribute}",
            "attribute_index": order[str(row.protected_attribute)],
            "strategy": f"{code} {title}" if title else f"{code} {family}",
            "family": family if title else "deployed",
            "dp_diff": shown(row.value), "ci_low": shown(row.ci_low),
            "ci_high": shown(row.ci_high), "q_value": shown(row.q_value),
            "significant": _flag(row.significant),
            "verdict": _text(getattr(row, "verdict", None)),
        })
    return out


def _flag(value: object) -> bool | None:
    """A JSON-safe boolean (None for a missing value)."""
    return None if value is None or pd.isna(value) else bool(value)  # type: ignore[call-overload]
