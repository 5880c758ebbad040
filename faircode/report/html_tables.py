"""The page's plain tables (rows as written in the CSVs): each in its own scrolled box, key first.

The every-row tables (``fairness.csv``, ``intersectional.csv``), the training-variance table
(``stability.csv``) and the provenance table have 15-40 columns, far wider than the page's
column.  Each is rendered by :func:`frame_html`:

* **in a box of its own** (``div.scroll``) that scrolls sideways, so the page never does;
* **the row's identity first, and kept in view**: one sticky ``cell`` column naming the row the
  way the MLflow runs and the paper table do (``S0 LR race``; a pair ``S0 LR race & sex``), then
  the columns a reader looks for (:data:`FIRST`: value, interval, q, significance, power, the
  group sizes), then every other column in file order -- nothing is left out;
* **long text wraps** (notes, the interval method), and a digest is shown in full but may break
  anywhere, so a 64-digit sha256 takes the width of its column, not of the page.

Each table's lead-in says what its rows are, true at any K: the CSV rows are replicate 0's
values at K > 1 (the tables above show the mean over the replicates, ``stability.csv`` both).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd

from faircode.core.cells import FAMILY_CODES
from faircode.report.inputs import strategy_code
from faircode.report.tables import Context, num

__all__ = ["CSS", "FIRST", "boxed", "frame_html", "plural", "rows_html", "stability_html"]

CSS = """
div.scroll{overflow-x:auto;max-width:100%;margin:.4rem 0 .8rem;border-left:1px solid #eee}
div.scroll table{margin:0}div.scroll td,div.scroll th{white-space:nowrap}
div.scroll td.text{white-space:normal;min-width:9rem;max-width:22rem}
div.scroll td.hash{white-space:normal;overflow-wrap:anywhere;max-width:17rem;
font-family:ui-monospace,monospace;font-size:.75rem}
div.scroll .key{position:sticky;left:0;background:#fff;z-index:1;box-shadow:1px 0 0 #ccc}
div.scroll thead .key{background:#fff}
p.scrollnote{font-size:.78rem;color:#555;margin:.2rem 0}
div.box{overflow-x:auto;max-width:100%}
"""
"""The boxes' CSS (the page inlines it)."""

FIRST: tuple[str, ...] = (
    "metric", "value", "gap", "ci_low", "ci_high", "q_value", "significant", "mde", "powered",
    "p_value", "n_disadvantaged", "n_advantaged", "interaction", "interaction_ci_low",
    "interaction_ci_high", "interaction_q_value", "interaction_significant",
)
"""The columns after the key, in this order where a table has them; the rest follow."""

_KEY = ("audit", "strategy", "model", "protected_attribute", "attribute_a", "attribute_b")
_TEXT = ("note", "ci_method", "mde_note")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 audit``, ``2 audits`` (``many``: the plural when it is not ``word + "s"``)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def boxed(table_html: str) -> str:
    """A results table (with its legend) in a box that scrolls sideways on a narrow screen."""
    return f'<div class="box">{table_html}</div>'


def _key(row: pd.Series, *, audit: bool) -> str:
    """``S0 LR race`` / ``S0 LR race & sex`` (``compas S0 LR race`` with ``audit``)."""
    parts = [str(row["audit"])] if audit and "audit" in row else []
    if "strategy" in row:
        parts.append(strategy_code(str(row["strategy"])))
    if "model" in row:
        parts.append(FAMILY_CODES.get(str(row["model"]), str(row["model"])))
    if "attribute_a" in row:
        parts.append(f"{row['attribute_a']} & {row['attribute_b']}")
    elif "protected_attribute" in row:
        parts.append(str(row["protected_attribute"]))
    return " ".join(parts)


def _text(value: object) -> str:
    if isinstance(value, float):
        return "n/a" if value != value else num(value, 4)
    return "n/a" if value is None or value is pd.NA else str(value)


def frame_html(frame: pd.DataFrame, *, key: str | None = "cell", audit: bool = False,
               hashes: Sequence[str] = ()) -> str:
    """A plain table of ``frame`` in its own scrolled box (module docstring); NaN is "n/a".

    ``key`` names the sticky first column built from the identity columns (None: keep the
    columns as they are, the first one sticky); ``audit`` puts the audit into it; ``hashes``
    are columns of digests that may break anywhere.
    """
    if key is not None:
        keys = [c for c in _KEY if c in frame.columns and (audit or c != "audit")]
        ident = frame.apply(_key, axis=1, audit=audit) if len(frame) else pd.Series(dtype=str)
        rest = [c for c in FIRST if c in frame.columns] + [
            c for c in frame.columns if c not in FIRST and c not in keys and c != "audit"]
        frame = pd.concat([ident.rename(key), frame.loc[:, rest]], axis=1)
    columns = list(frame.columns)
    cls = {c: "hash" if c in hashes else "text" if c in _TEXT else "" for c in columns}
    head = "".join(f'<th{" class=key" if i == 0 else ""}>{html.escape(str(c))}</th>'
                   for i, c in enumerate(columns))
    body = []
    for row in frame.itertuples(index=False, name=None):
        cells = []
        for i, (column, value) in enumerate(zip(columns, row, strict=True)):
            klass = " ".join(x for x in ("key" if i == 0 else "", cls[column]) if x)
            attr = f' class="{klass}"' if klass else ""
            cells.append(f"<td{attr}>{html.escape(_text(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="plain"><thead><tr>{head}</tr></thead><tbody>'
            f'{"".join(body)}</tbody></table></div>')


def _columns_note(frame: pd.DataFrame) -> str:
    return (f'<p class="scrollnote">{len(frame.columns)} columns, the row\'s cell first; the '
            "box scrolls sideways.</p>")


def rows_html(ctx: Context, intersectional: pd.DataFrame) -> str:
    """Every ``ctx.metric`` row of ``fairness.csv`` and every ``intersectional.csv`` row, per
    audit, folded."""
    parts = [f"<p>The rows of each audit's <code>fairness.csv</code> and "
             f"<code>intersectional.csv</code> as written, with the benchmark-wide q "
             f"(<code>q_benchmark</code>). {_replicate_note(ctx)}</p>"]
    for audit in ctx.inputs.runs:
        rows = ctx.fairness[(ctx.fairness["audit"] == audit)
                            & (ctx.fairness["metric"] == ctx.metric)
                            & ctx.fairness["model"].isin(ctx.models)]
        inter = intersectional[(intersectional["audit"] == audit)
                               & intersectional["model"].isin(ctx.models)]
        body = _columns_note(rows) + frame_html(rows)
        if not inter.empty:
            body += "<p>Intersectional (every column present):</p>" + frame_html(inter)
        parts.append(f"<details><summary>{html.escape(audit)}: every "
                     f"{html.escape(ctx.metric)} row ({len(rows)})</summary>{body}</details>")
    return "".join(parts)


def _replicate_note(ctx: Context) -> str:
    """What the CSV rows are at this K (the same numbers the tables above show)."""
    if "K = 1," in ctx.variance_note and "replicates;" not in ctx.variance_note:
        return "K = 1: these are the values the tables above show."
    return ("With K > 1 training replicates these are the K-replicate estimates the tables "
            "above show; replicate 0's own values are the rep0_* columns.")


STABILITY_SHOWN = ("audit", "protected_attribute", "strategy", "model", "seeds", "seed_mode",
                   "value", "ci_low", "ci_high", "verdict", "n_informative", "rep0_value",
                   "sd_between", "sd_within", "min", "max", "share_significant", "sign_flips",
                   "note")
"""The columns of the training-variance table, after its key (those the CSV has)."""


def stability_html(ctx: Context) -> str:
    """The training-variance table's lead-in and its rows ('' without ``stability.csv``)."""
    frame = ctx.inputs.stability
    if frame.empty:
        return ""
    rows = frame[(frame["metric"] == ctx.metric) & frame["model"].isin(ctx.models)]
    return (f"<p>{html.escape(ctx.metric)} of every cell re-fitted with K seeds "
            "(stability.csv): the K-replicate estimate, its interval and verdict (the numbers "
            "every table above shows), the informative replicates it rests on, replicate 0's "
            "own value, the between-replicate and mean within-replicate SD, min and max over "
            "the replicates, the share in which the gap is significant in its replicate's own "
            "family, and whether its sign flips.</p>"
            + frame_html(rows.loc[:, [c for c in STABILITY_SHOWN if c in rows]], audit=True))
