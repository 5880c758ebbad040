"""The pipeline's DVC views of one audit: its metrics file and its parity plot data."""

from __future__ import annotations

from typing import Any

import pandas as pd

from faircode.core.cells import STRATEGY_CODES, ModelFamily, Strategy, strategy_code
from faircode.evaluate.tables import AuditResults

__all__ = ["parity_plot", "summary"]


SUMMARY_STRATEGIES = (Strategy.BASELINE, Strategy.UNAWARENESS_PROXY_REMOVAL,
                      Strategy.IN_PROCESSING)
"""The cells of the DVC metrics: the baseline, proxy removal, and S3 (what a threshold sweep
moves, and what a ``mitigation.eps`` sweep alone moves: ``dvc exp show`` tells them apart)."""


PARITY_METRIC = "demographic_parity_diff"


def _parity(results: AuditResults) -> pd.DataFrame:
    """The first protected attribute's parity gap per cell (grid order)."""
    fairness = results.fairness
    if not len(fairness):
        return pd.DataFrame(columns=["strategy", "model", "parity_gap"])
    first = fairness["protected_attribute"].iloc[0]
    rows = fairness[(fairness["protected_attribute"] == first)
                    & (fairness["metric"] == PARITY_METRIC)]
    return rows.loc[:, ["strategy", "model", "value"]].rename(columns={"value": "parity_gap"})


def summary(results: AuditResults) -> dict[str, Any]:
    """The pipeline's DVC metrics of one audit: S0, S2 and S3 parity gap and accuracy per model.

    The parity gap is the first protected attribute's ``demographic_parity_diff``.
    """
    parity = _parity(results).set_index(["strategy", "model"])["parity_gap"]
    perf = results.performance
    accuracy = perf[perf["metric"] == "accuracy"].set_index(["strategy", "model"])["value"]
    out: dict[str, Any] = {}
    for strategy in SUMMARY_STRATEGIES:
        out[STRATEGY_CODES[strategy]] = {
            family.value: {"parity_gap": _number(parity.get((strategy.value, family.value))),
                           "accuracy": _number(accuracy.get((strategy.value, family.value)))}
            for family in ModelFamily
        }
    return out


def _number(value: object) -> float | None:
    """A JSON-safe float (None for a missing or undefined value)."""
    if value is None or pd.isna(value):  # type: ignore[call-overload]
        return None
    return float(value)  # type: ignore[arg-type]


def parity_plot(results: AuditResults | None) -> pd.DataFrame:
    """Plot data for ``dvc plots``: one row per cell, ``cell`` (e.g. ``S0 random_forest``),
    ``strategy``, ``model``, ``parity_gap``; empty (header only) for ``None``."""
    columns = ["cell", "strategy", "model", "parity_gap"]
    if results is None:
        return pd.DataFrame(columns=columns)
    frame = _parity(results)
    frame.insert(0, "cell", [f"{strategy_code(s)} {m}"
                             for s, m in zip(frame["strategy"], frame["model"], strict=True)])
    return frame.reset_index(drop=True).loc[:, columns]

