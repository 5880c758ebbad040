"""The report's multi-class section: each class's share by group, the joint tests, the grid.

The report section of the ``multiclass`` task kind (:mod:`faircode.report.multiclass_section`,
registered in :mod:`faircode.report.kinds`): reads every ``results/<audit>/`` of a multi-class
run (``run.json`` ``kind: multiclass``; :mod:`faircode.evaluate.multiclass`'s tables), each
checked to hold exactly the files its record lists (:func:`faircode.core.digests.checked_run`),
and writes ``results/multiclass_table.md``, one sentence for the page's headline and the page's
section.

Design decisions
----------------
* **Its own units**: a class's share of a group's rows in percent, a class share gap in
  percentage points, the groups' total variation distance; never a rate of a favourable label
  (a multi-class outcome has none) and never a ratio of shares (a zero share -- no woman in a
  custodial job -- makes it 0 or undefined).
* **The headline names the classes by their share of the gap**: for the recorded outcome on
  every row, each attribute's joint test and verdict, then its classes from the largest share
  of the total variation distance down, each with both groups' shares.
* ``n/a`` strategies are listed with the strategy table's reason, never with a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.cells import FAMILY_CODES, STRATEGY_TABLE, applies, strategy_code
from faircode.core.kinds import MULTICLASS
from faircode.core.layout import MULTICLASS_TABLE, MULTICLASS_TABLES
from faircode.report._readers import read_kind_tables

__all__ = ["OBSERVED", "MulticlassInputs", "class_frame", "headline_line", "joint_frame",
           "load_multiclass_results", "section_html", "strategies_frame",
           "write_multiclass_table"]

OBSERVED = "observed"
"""The recorded outcome's row set (:data:`faircode.evaluate.multiclass.OBSERVED`)."""
_NOT_APPLICABLE = tuple(s.code for s in STRATEGY_TABLE if not applies(s.strategy, MULTICLASS.name))
"""The strategies a multi-class outcome is not fitted with (their reasons: ``strategies.csv``)."""


@dataclass(frozen=True, slots=True)
class MulticlassInputs:
    """Every multi-class audit's tables (concatenated) and run records."""

    class_gaps: pd.DataFrame
    class_tests: pd.DataFrame
    strategies: pd.DataFrame
    runs: dict[str, dict[str, Any]]

    def alpha(self) -> float:
        """The runs' ``stats.alpha`` (0.05 when they differ)."""
        values = {float(r.get("config", {}).get("alpha", 0.05)) for r in self.runs.values()}
        return values.pop() if len(values) == 1 else 0.05


def load_multiclass_results(folders: Sequence[Path]) -> MulticlassInputs | None:
    """The multi-class audits of ``folders`` (``None`` without any), each checked to hold
    exactly the files its ``run.json`` records."""
    read = read_kind_tables(folders, MULTICLASS_TABLES, what="the multi-class audit's")
    if read is None:
        return None
    frames, runs = read
    return MulticlassInputs(**{t: pd.concat(f, ignore_index=True) for t, f in frames.items()},
                            runs=runs)


def _float(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def _pct(x: object) -> str:
    value = _float(x)
    return "n/a" if value != value else f"{100 * value:.1f} %"


def _pp(x: object) -> str:
    value = _float(x)
    return "n/a" if value != value else f"{100 * value:+.1f} pp"


def _p(x: object) -> str:
    value = _float(x)
    return "n/a" if value != value else f"{value:.2g}"


def _row_set(strategy: str, model: str, row_set: str) -> str:
    if strategy == OBSERVED:
        return f"recorded ({row_set} rows)"
    return f"{strategy_code(strategy)} {FAMILY_CODES.get(model, model)}"


def joint_frame(inputs: MulticlassInputs, *, audit: str) -> pd.DataFrame:
    """Per row set and attribute: the largest class gap [interval], the total variation
    distance and its leading class, the joint exact test and the verdict."""
    t = inputs.class_tests[inputs.class_tests["audit"] == audit]
    return pd.DataFrame({
        "rows": [_row_set(str(r.strategy), str(r.model), str(r.row_set))
                 for r in t.itertuples(index=False)],
        "attribute": t["protected_attribute"].astype(str),
        "largest class gap": [f"{100 * v:.1f} pp [{100 * lo:.1f}, {100 * hi:.1f}]"
                              if pd.notna(v) else "n/a"
                              for v, lo, hi in zip(t["value"], t["ci_low"], t["ci_high"],
                                                   strict=True)],
        "TV distance": [f"{v:.3f}" if pd.notna(v) else "n/a" for v in t["tv_distance"]],
        "leading class": [f"{c} ({_pct(s)})" if isinstance(c, str) and c else "n/a"
                          for c, s in zip(t["leading_class"], t["leading_share"], strict=True)],
        "joint test": [f"X² {s:.1f} (df {int(d)}), p {_p(p)}, {m}" if pd.notna(s) else "n/a"
                       for s, d, p, m in zip(t["statistic"], t["df"], t["p_value"], t["method"],
                                             strict=True)],
        "q": [_p(q) for q in t["q_value"]],
        "verdict": t["verdict"].astype(str),
    }).reset_index(drop=True)


def class_frame(inputs: MulticlassInputs, *, audit: str, strategy: str = OBSERVED,
                model: str = "recorded", row_set: str = "all") -> pd.DataFrame:
    """One row set's classes by attribute: each group's share [interval], the gap [interval],
    its mid-p q, its share of the gap and its verdict."""
    g = inputs.class_gaps
    part = g[(g["audit"] == audit) & (g["strategy"] == strategy) & (g["model"] == model)
             & (g["row_set"] == row_set)]
    return pd.DataFrame({
        "attribute": part["protected_attribute"].astype(str),
        "class": part["class"].astype(str),
        "disadvantaged": [f"{_pct(s)} ({int(c)}/{int(n)})" for s, c, n in zip(
            part["share_disadvantaged"], part["count_disadvantaged"], part["n_disadvantaged"],
            strict=True)],
        "advantaged": [f"{_pct(s)} ({int(c)}/{int(n)})" for s, c, n in zip(
            part["share_advantaged"], part["count_advantaged"], part["n_advantaged"],
            strict=True)],
        "gap": [f"{_pp(v)} [{100 * lo:.1f}, {100 * hi:.1f}]" if pd.notna(v) else "n/a"
                for v, lo, hi in zip(part["value"], part["ci_low"], part["ci_high"],
                                     strict=True)],
        "share of gap": [_pct(s) for s in part["share_of_gap"]],
        "q (mid-p)": [_p(q) for q in part["q_value"]],
        "verdict": part["verdict"].astype(str),
    }).reset_index(drop=True)


def strategies_frame(inputs: MulticlassInputs, *, audit: str) -> pd.DataFrame:
    """The grid's cells: fitted with their accuracy, or ``n/a`` with the reason."""
    s = inputs.strategies[inputs.strategies["audit"] == audit]
    return pd.DataFrame({
        "strategy": s["code"].astype(str),
        "model": [FAMILY_CODES.get(str(m), str(m)) for m in s["model"]],
        "status": ["n/a" if v == "not_applicable" else str(v) for v in s["status"]],
        "accuracy": [f"{a:.3f}" if pd.notna(a) else "n/a" for a in s["accuracy"]],
        "balanced accuracy": [f"{a:.3f}" if pd.notna(a) else "n/a"
                              for a in s["balanced_accuracy"]],
        "reason": s["reason"].fillna("").astype(str),
    }).reset_index(drop=True)


def _markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join(":--" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |"
            for row in frame.itertuples(index=False, name=None)]
    return "\n".join([head, rule, *body])


def write_multiclass_table(inputs: MulticlassInputs, out: Path) -> Path:
    """``multiclass_table.md``: per multi-class audit its joint tests, its recorded classes by
    group and its grid."""
    alpha = inputs.alpha()
    parts = ["# Multi-class audits", "",
             "Shares of a group's rows in each class in percent, class share gaps (disadvantaged "
             "minus advantaged) in percentage points with 95 % intervals (Wilson, Newcombe); the "
             "joint test is exact conditional on the margins (never the chi-square "
             f"approximation); q: Benjamini-Hochberg within the audit, verdicts at alpha "
             f"{alpha:g}.", ""]
    for audit in inputs.runs:
        parts += [f"## {audit}: joint tests", "", _markdown(joint_frame(inputs, audit=audit)),
                  "", f"## {audit}: recorded classes by group (every row)", "",
                  _markdown(class_frame(inputs, audit=audit)), "",
                  f"## {audit}: the grid", "", _markdown(strategies_frame(inputs, audit=audit)),
                  ""]
    path = out / MULTICLASS_TABLE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _attribute_clause(inputs: MulticlassInputs, audit: str, attribute: str) -> str:
    t = inputs.class_tests
    row = t[(t["audit"] == audit) & (t["strategy"] == OBSERVED) & (t["row_set"] == "all")
            & (t["protected_attribute"] == attribute)].iloc[0]
    g = inputs.class_gaps
    classes = g[(g["audit"] == audit) & (g["strategy"] == OBSERVED) & (g["row_set"] == "all")
                & (g["protected_attribute"] == attribute)]
    classes = classes.sort_values("share_of_gap", ascending=False, kind="stable")
    shares = ", ".join(f"{c['class']} {_pct(c['share_of_gap'])} "
                       f"({_pct(c['share_disadvantaged'])} vs {_pct(c['share_advantaged'])})"
                       for c in classes.to_dict("records"))
    return (f"by {attribute} TV {float(row['tv_distance']):.3f} (exact test p "
            f"{_p(row['p_value'])}, {row['verdict']}), the gap's classes {shares}")


def headline_line(inputs: MulticlassInputs) -> str:
    """One sentence per multi-class audit for the page's headline (from the numbers)."""
    sentences = []
    for audit, run in inputs.runs.items():
        t = inputs.class_tests
        attributes = dict.fromkeys(t.loc[t["audit"] == audit, "protected_attribute"].astype(str))
        target = run.get("target", {})
        cells = t[(t["audit"] == audit) & (t["strategy"] != OBSERVED)]
        gaps = int((cells["verdict"] == "gap").sum())
        sentences.append(
            f"Multi-class audit {audit} ({target.get('column', 'class')}: "
            f"{' / '.join(target.get('classes', []))}; disadvantaged vs advantaged share): "
            + "; ".join(_attribute_clause(inputs, audit, a) for a in attributes)
            + f"; the S0-S2 models' predictions show a gap in {gaps} of {len(cells)} cells x "
              "attributes.")
    return " ".join(sentences)


def section_html(inputs: MulticlassInputs, *, figures: str, fold: Any, table: Any) -> str:
    """The page's multi-class section; ``fold(title, body)`` and ``table(frame)`` are the page's
    own folding and table helpers, ``figures`` the rendered figures."""
    parts = ["<h2>Multi-class audits</h2>",
             "<p>An outcome of several classes (a job grade) by group: each class's share of a "
             "group's rows with Wilson intervals, the class share gap (percentage points, "
             "Newcombe intervals, exact mid-p tests) and its share of the groups' total "
             "variation distance; one exact joint test per row set (conditional on the margins: "
             f"valid with zero cells). {', '.join(_NOT_APPLICABLE)} are n/a for a multi-class "
             "outcome, with the reason.</p>", figures]
    for audit in inputs.runs:
        parts.append(fold(f"{audit}: joint tests", table(joint_frame(inputs, audit=audit))))
        parts.append(fold(f"{audit}: recorded classes by group",
                          table(class_frame(inputs, audit=audit))))
        parts.append(fold(f"{audit}: the grid", table(strategies_frame(inputs, audit=audit))))
    return "".join(parts)
