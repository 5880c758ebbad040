"""The names a researcher reads in the MLflow UI: child-run names, metric keys, the parent's name.

The runs table shows a column per metric key and cuts each header after about a dozen
characters, so the keys put what distinguishes them first and keep it short:
``<metric code>[.<column code>]`` -- ``dp`` (the value), ``dp.lo``/``dp.hi`` (its interval),
``dp.q_audit`` (the per-audit Benjamini-Hochberg q), ``acc``, ``gap.p`` (the intersectional
gap's p).  The codes are tables: the fairness metrics' in
:data:`faircode.core.metrics.METRIC_TABLE`, the performance metrics' and the columns' here
(:data:`METRIC_CODES`, :data:`COLUMN_CODES`); a metric or column not in them keeps its own name,
so new rows and columns are still logged unchanged.

Design decisions
----------------
* **The q-values say their family.**  ``q_value``/``significant`` of the CSVs are per audit
  (each audit is its own study): ``q_audit``/``sig_audit``.  The benchmark-wide family of the
  report stage is ``q_bench``/``sig_bench`` where a table carries it (``summary.csv`` does, on
  the parent; the children's tables do not).  The legend (:func:`legend`) says which one the
  report's stars use.
* **Child names sort like the grid**: ``<audit> <S-code> <family code> <attribute>``, e.g.
  ``compas S0 LR race``; ``compas S0 LR race & sex`` (a pair), ``compas S3 GB flip race
  (explicit)`` (a counterfactual axis and channel).  An unknown strategy or family keeps its name.
* **A parent is named by what it is**: its freeze name, else its DVC experiment name, else the
  params a sweep varies and the short params and code digests (``K=1 · thr 0.5 · eps 0.01 · DP ·
  params 9c1d0e2 · code 3f2a9c1``), with ``· DIRTY`` when produced from uncommitted inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from faircode.core.cells import FAMILY_CODES, strategy_code
from faircode.core.metrics import METRIC_CODES as FAIRNESS_CODES

__all__ = ["COLUMN_CODES", "DESIGN_COLUMNS", "METRIC_CODES", "PROBABILITY_COLUMNS", "child_name",
           "legend", "metric_key", "parent_name", "readable"]

METRIC_CODES: dict[str, str] = {
    **FAIRNESS_CODES, "accuracy": "acc", "balanced_accuracy": "bacc",
    "majority_baseline_accuracy": "acc_major",
    "selection_rate": "sel", "selection_rate_disadvantaged": "sel_dis",
    "selection_rate_advantaged": "sel_adv",
}
"""Short codes of the fairness and performance metrics (others keep their name: ``tpr_gap``)."""

COLUMN_CODES: dict[str, str] = {
    "value": "", "ci_low": "lo", "ci_high": "hi", "p_value": "p", "q_value": "q_audit",
    "significant": "sig_audit", "q_benchmark": "q_bench", "significant_benchmark": "sig_bench",
    "n_disadvantaged": "n_dis", "n_advantaged": "n_adv", "small_sample_warning": "small_n",
    "design_effect": "deff", "mde": "mde", "powered": "powered",
    "swap_p_value": "swap_p", "swap_q_value": "swap_q", "equivalence_margin": "eq_margin",
    "equivalence_p_value": "eq_p", "equivalence_q_value": "eq_q", "gap_bound": "bound",
    "rep0_value": "rep0", "rep0_ci_low": "rep0.lo", "rep0_ci_high": "rep0.hi",
    "rep0_p_value": "rep0.p", "rep0_q_value": "rep0.q_audit", "claim_q_value": "q_claims",
    "min_margin": "min_margin",
}
"""Short codes of a statistic's columns (``value`` is the metric code alone)."""

PROBABILITY_COLUMNS = frozenset({
    "p_value", "q_value", "q_benchmark", "equivalence_p_value", "equivalence_q_value",
    "claim_q_value", "swap_p_value", "swap_q_value", "rep0_p_value", "rep0_q_value",
    "interaction_p_value", "interaction_q_value"})
"""The columns of p- and q-values: logged to 3 significant digits (:func:`readable`)."""

DESIGN_COLUMNS = frozenset({"n_disadvantaged", "n_advantaged", "n_units", "n"})
"""The columns an uninformative row still logs: its sizes, which are no estimate."""


def readable(column: str, value: float) -> float:
    """``value`` as MLflow logs it: a p- or q-value (:data:`PROBABILITY_COLUMNS`) to 3
    significant digits, so the runs table's column, cut after ~10 characters, reads
    ``2.12e-8`` and not ``2.12417292`` (the exponent cut off); any other value unchanged.  The
    CSV artifacts hold every digit."""
    if column in PROBABILITY_COLUMNS and math.isfinite(value) and value != 0:
        return float(f"{value:.3g}")
    return value


_OWN_VALUE = {"intersectional": ("gap", "gap"), "counterfactual": ("flip_rate", "flip")}
"""Tables without a ``metric`` column: (their value column, its code)."""

def metric_key(table: str, metric: str | None, column: str) -> str:
    """The MLflow metric key of ``column`` of a ``metric`` row of ``table`` (see the module).

    Examples: ``("fairness", "demographic_parity_diff", "q_value")`` -> ``dp.q_audit``;
    ``("intersectional", None, "interaction_p_value")`` -> ``interaction.p``;
    ``("counterfactual", None, "flip_rate")`` -> ``flip``.
    """
    if metric is not None:
        return _join(METRIC_CODES.get(metric, metric), COLUMN_CODES.get(column, column))
    value, code = _OWN_VALUE.get(table, ("", ""))
    if column == value:
        return code
    if code and COLUMN_CODES.get(column):
        return _join(code, COLUMN_CODES[column])
    head, _, rest = column.partition("_")
    if COLUMN_CODES.get(rest):  # interaction_ci_low -> interaction.lo
        return _join(head, COLUMN_CODES[rest])
    return column


def _join(head: str, tail: str) -> str:
    return f"{head}.{tail}" if tail else head


def child_name(audit: str, strategy: str, model: str, *, table: str,
               ident: Mapping[str, str]) -> str:
    """``compas S0 LR race`` (fairness), ``... race & sex`` (pair), ``... flip race (explicit)``."""
    what = {"fairness": lambda: ident["protected_attribute"],
            "intersectional": lambda: f"{ident['attribute_a']} & {ident['attribute_b']}",
            "counterfactual": lambda: f"flip {ident['axis']} ({ident['kind']})"}[table]()
    return f"{audit} {strategy_code(strategy)} {FAMILY_CODES.get(model, model)} {what}"


_SWEPT = (("seeds", "K={}"), ("decision_threshold", "thr {}"), ("eps", "eps {}"),
          ("constraint", "{}"))
_CONSTRAINT_CODES = {"demographic_parity": "DP", "equalized_odds": "EOdds",
                     "true_positive_rate_parity": "TPRP", "false_positive_rate_parity": "FPRP",
                     "error_rate_parity": "ERP"}


def parent_name(*, freeze: str | None, dvc_exp: str | None, config: Mapping[str, Any],
                code_sha256: str | None, params_sha256: str | None, dirty: bool | None) -> str:
    """The parent run's name (see the module docstring)."""
    suffix = " · DIRTY" if dirty else ""
    if freeze:
        return freeze + suffix
    code = f"code {code_sha256[:7]}" if code_sha256 else "code unknown"
    if dvc_exp:
        return f"{dvc_exp} · {code}{suffix}"
    flat = {k: v for k, v in config.items() if not isinstance(v, Mapping)}
    for section in ("models", "mitigation", "run"):  # params.yaml's shape, when given it
        inner = config.get(section)
        if isinstance(inner, Mapping):
            flat.update(inner)
    flat.setdefault("seeds", 1)
    flat["constraint"] = _CONSTRAINT_CODES.get(str(flat.get("constraint")),
                                               flat.get("constraint"))
    parts = [template.format(flat[key]) for key, template in _SWEPT
             if flat.get(key) is not None]
    params = f"params {params_sha256[:7]}" if params_sha256 else "params unknown"
    return " · ".join([*parts, params, code]) + suffix


def legend(*, stars: str = "q_audit") -> str:
    """The experiment description: what each metric key and q-value means."""
    metrics = ", ".join(f"{code} = {name}" for name, code in METRIC_CODES.items())
    columns = ", ".join(f".{code} = {name}" for name, code in COLUMN_CODES.items() if code)
    return (
        "faircode benchmark runs. One parent run per result state (named by its freeze, its DVC "
        "experiment, or its params and code digest; tags state.* identify it), one child per "
        "audit x strategy (S0-S4) x model family (LR, RF, GB) x attribute, per attribute pair "
        "and per counterfactual axis x channel. Strategy, model, attribute and audit are params "
        "and tags.\n\n"
        f"Metric keys: {metrics}; other metrics keep their name (tpr_gap, fpr_gap, auc, f1). "
        f"A bare key is the value; {columns}. Pairs: gap.*, interaction.*; counterfactual: "
        "flip.*. Text audits: one child per system x axis x channel (<audit> <system> flip "
        "<axis> (<channel>)) with <point>.flip.* per operating point (global, declared), ctf.* "
        "and shift.*.\n\n"
        "Significance: q_audit is the Benjamini-Hochberg q within one audit (the CSVs' "
        "q_value; each audit is its own study). The benchmark-wide BH q over every audit's "
        "tests is the report's q_benchmark column (the parent's report/summary.csv), not a "
        f"child metric. The report's stars use {stars}. Each gap's verdict (gap, parity, "
        "inconclusive, uninformative) is "
        "the tag fairness.<metric>.verdict; q_claims is the equivalence q of a pre-specified "
        "claim (verdicts.claims: parity is q_claims < alpha), eq_q the same test's q over "
        "every equivalence test of the audit (the conservative view, tag "
        "fairness.<metric>.conservative_verdict), bound the largest gap its interval cannot "
        "exclude, min_margin the smallest margin parity could be shown within at the cell's "
        "size. An uninformative cell logs no value, interval or test (its verdict tag says "
        "uninformative; its sizes stay). p- and q-values are logged to 3 significant digits "
        "(the CSV artifacts hold every digit). With K > 1 training "
        "replicates every value, interval and q is the K-replicate estimate's, and rep0.* are "
        "replicate 0's own. Empty and non-finite cells are not logged.")
