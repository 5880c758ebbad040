"""The report's tables: built once as :class:`Table` values, rendered to Markdown, LaTeX, HTML.

Design decisions
----------------
* One table model, three renderers: a cell is its estimate, its interval and its marks
  (significance, footnote letters), so the Markdown, booktabs and HTML versions cannot
  disagree.
* Rows are audit x attribute (x metric / axis); columns are the strategies found in the data,
  in S0-S4 order; one section per model family (only the one of ``--model``).
* Every value that is not a number says why: "n/a" or "uninformative" with a footnote letter
  whose text is the reason (and, for an unavailable audit, the reason it is unavailable).
* A gap's verdict is its mark: ``*`` a gap shown, ``=`` parity within the margin shown, none
  inconclusive (the row's ``verdict``: :mod:`faircode.report.effects`).
* The LaTeX fragment needs only ``booktabs`` (plain ``tabular``; the interval is stacked under
  the estimate in a nested ``tabular``), escapes every name, and is ASCII.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.core.cells import Strategy
from faircode.core.layout import paper_table_files
from faircode.core.metrics import NOT_APPLICABLE
from faircode.report.inputs import (
    STRATEGIES,
    UNINFORMATIVE_NOTE,
    ReportInputs,
    notes_of,
    ordered,
    strategy_code,
    test_base_rates,
)
from faircode.stats.operating import UNFITTABLE_NOTE

__all__ = [
    "FAVOURING",
    "Cell",
    "Context",
    "Table",
    "all_tables",
    "counterfactual_table",
    "estimate_cell",
    "floor_table",
    "marks_legend",
    "marks_list",
    "paper_table",
    "performance_table",
    "signed",
    "to_html",
    "to_latex",
    "to_markdown",
    "write_tables",
]

REASONS = {
    "insufficient_data": "insufficient data: a group has no rows in the metric's subset",
    "undefined_advantaged_rate_zero":
        "undefined ratio: the advantaged group's positive rate is 0",
    UNINFORMATIVE_NOTE: "uninformative: degenerate decisions (one decision for every row of a "
                        "group), so the estimate says nothing about a gap",
    UNFITTABLE_NOTE: "uninformative: the cell could not be fitted (a group too small for its "
                     "stratified split; run.json's cells say why), so there is no estimate",
}
NO_INTERVAL = "interval undefined (no usable bootstrap resample)"
NOT_APPLICABLE_TEXT = "n/a \u2014 decision is the outcome"
"""How every view shows a ground-truth number of a decision that is the recorded outcome."""
SIGNIFICANT = "*"
FAVOURING = "\u2020"
"""The mark of a gap shown that favours the disadvantaged group (``*`` marks one against it)."""
FLOOR_REFERENCE: str = Strategy.UNAWARENESS_PROXY_REMOVAL.value
"""The residual floor's reference (S2): what S3 and S4 add to removing the protected and proxy
columns."""
PARITY = "="
WITHIN_MARGIN = ("parity", "no_change")
"""The verdicts of a gap or an effect shown to lie within its margin: the ``=`` mark."""
STARS = ("the audit's own Benjamini-Hochberg q < {alpha} (fairness.csv q_value = significant: "
         "one family per audit, each null once; the benchmark-wide q is summary.csv's "
         "q_benchmark, a robustness check, never a star).")
"""What a star means, for every legend (``{alpha}`` is filled in)."""
VERDICT_MARKS = ("* gap shown against the disadvantaged group, \u2020 gap shown favouring it "
                 "(verdict gap: {stars} and an interval excluding no gap; equalized odds, "
                 "which has no sign, takes *); "
                 "= parity shown (verdict parity: the {narrow} interval inside the margin, "
                 "equivalence q < {alpha} in its family: fairness.csv claim_q_value for the "
                 "pre-specified claims of verdicts.claims, equivalence_q_value over every "
                 "equivalence test of the audit for any other row); "
                 "no mark: inconclusive (a gap up to fairness.csv gap_bound cannot be "
                 "excluded), never parity.")
"""What the marks of a gap mean, for every legend (``{stars}``, ``{narrow}``, ``{alpha}``)."""


@dataclass(frozen=True, slots=True)
class Context:
    """What every table and figure of one report is built from."""

    inputs: ReportInputs
    fairness: pd.DataFrame
    metric: str
    models: tuple[str, ...]
    alpha: float
    confidence: float
    deployed_fairness: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The deployed systems' fairness rows on the test rows (``q_value``: the audit's family)."""
    calibration_gap: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The calibration gaps of the audits with a system (``q_value``: the audit's family)."""
    gaps: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The paper table's rows as shown (:func:`faircode.report.effects.shown_gaps`)."""
    effects: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The paired effects as shown (:func:`faircode.report.effects.shown_effects`)."""
    variance_note: str = ""
    """Whether intervals and stars include training variance (every caption says it)."""
    intersectional: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Every intersectional row with its benchmark-wide ``q_benchmark`` columns (row dumps)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0 or not 0.0 < self.confidence < 1.0:
            raise ValueError("Context: alpha and confidence must lie in (0, 1)")

    def strategies(self, frame: pd.DataFrame) -> list[str]:
        """The strategies of ``frame`` (or of the fairness table when it is empty) in order."""
        source = frame if not frame.empty else self.fairness
        return ordered(source["strategy"], STRATEGIES) or list(STRATEGIES)


@dataclass(frozen=True, slots=True)
class Cell:
    """One table cell: an estimate or "n/a", its interval, and its marks."""

    text: str
    interval: str = ""
    significant: bool = False
    notes: tuple[str, ...] = ()
    numeric: bool = True
    parity: bool = False
    """Parity within the margin shown (verdict ``parity``): the ``=`` mark."""
    favouring: bool = False
    """A gap shown that favours the disadvantaged group: ``†`` instead of ``*``."""

    @property
    def mark(self) -> str:
        """``*`` (a gap against the disadvantaged group, or a change shown), ``†`` (a gap
        favouring it), ``=`` (parity shown) or nothing."""
        if self.significant:
            return FAVOURING if self.favouring else SIGNIFICANT
        return PARITY if self.parity else ""


@dataclass(frozen=True, slots=True)
class Table:
    """A table with a stub (row labels), strategy columns, sections, legend and footnotes."""

    name: str
    caption: str
    stub: tuple[str, ...]
    columns: tuple[str, ...]
    sections: tuple[tuple[str, tuple[tuple[tuple[str, ...], tuple[Cell, ...]], ...]], ...]
    legend: str
    footnotes: tuple[tuple[str, str], ...] = ()


@dataclass
class _Footnotes:
    """Reason text -> footnote letter, in order of first use."""

    letters: dict[str, str] = field(default_factory=dict)

    def __call__(self, reason: str) -> str:
        if reason not in self.letters:
            n = len(self.letters)
            self.letters[reason] = chr(97 + n % 26) * (1 + n // 26)
        return self.letters[reason]

    def items(self) -> tuple[tuple[str, str], ...]:
        return tuple((letter, reason) for reason, letter in self.letters.items())


def num(x: float, digits: int = 3) -> str:
    """A number with ``digits`` decimals and ASCII minus, rounded sign-aware: a negative value
    that rounds to zero keeps its sign (−0.0048 is ``-0.00``, never ``0.00`` or ``+0.00``), only
    zero itself (and its negative twin) is ``0.00``."""
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and x == 0 else text


def signed(x: float, digits: int = 2) -> str:
    """``+0.12``, ``−0.34`` (typographic minus), sign-aware like :func:`num`: −0.0048 is
    ``−0.00`` and +0.0048 ``+0.00``, zero itself ``0.00``; ``n/a`` for NaN."""
    if not np.isfinite(x):
        return "n/a"
    text = num(x, digits)
    if x == 0:
        return text
    return text.replace("-", "\u2212") if text.startswith("-") else "+" + text


def _reason(note: str) -> str:
    tokens = notes_of(note)
    for key, text in REASONS.items():
        if key in tokens:
            return text
    return f"not estimated ({note})" if note else "not estimated (no reason recorded)"


def estimate_cell(row: pd.Series | None, *, value: str, fn: _Footnotes,
                  missing: str = "no result row for this cell") -> Cell:
    """Render one result row: estimate [interval], the row's ``mark`` (``*``), footnotes."""
    if row is None:
        return Cell("n/a", notes=(fn(missing),), numeric=False)
    note = str(row.get("note", ""))
    if NOT_APPLICABLE in notes_of(note):  # by design: a decision that is the outcome
        return Cell(NOT_APPLICABLE_TEXT, numeric=False)
    for token in (UNINFORMATIVE_NOTE, UNFITTABLE_NOTE):
        if token in notes_of(note):
            return Cell("uninformative", notes=(fn(REASONS[token]),), numeric=False)
    x = float(row[value])
    if np.isnan(x):
        return Cell("n/a", notes=(fn(_reason(note)),), numeric=False)
    low, high = float(row["ci_low"]), float(row["ci_high"])
    notes: list[str] = []
    if np.isnan(low) or np.isnan(high):
        interval = "[n/a]"
        notes.append(fn(NO_INTERVAL))
    else:
        interval = f"[{num(low)}, {num(high)}]"
    return Cell(num(x), interval, significant=bool(row.get("mark", False)), notes=tuple(notes),
                parity=str(row.get("verdict", "")) in WITHIN_MARGIN,
                favouring=str(row.get("direction", "")) == "favouring")


def _lookup(frame: pd.DataFrame, keys: Sequence[str]) -> dict[tuple[str, ...], pd.Series]:
    return {tuple(str(v) for v in k): row for k, row in zip(
        frame[list(keys)].itertuples(index=False, name=None),
        (r for _, r in frame.iterrows()), strict=True)}


def _grid(ctx: Context, frame: pd.DataFrame, *, row_keys: Sequence[str], value: str,
          rows_of: Callable[[str], list[tuple[str, ...]]], fn: _Footnotes,
          skip: Callable[[str, str, str], str]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """Cells for every model section x audit row x strategy column."""
    strategies = ctx.strategies(frame)
    lookup = _lookup(frame, ["model", "audit", *row_keys, "strategy"])
    unavailable = {u.audit: u for u in ctx.inputs.unavailable}
    sections = []
    for model in ctx.models:
        rows = []
        for audit in ctx.inputs.audits:
            if audit in unavailable:
                u = unavailable[audit]
                letter = fn(f"{audit} unavailable: {u.reason}")
                labels: list[tuple[str, ...]] = [(a,) for a in u.attributes] \
                    if row_keys == ["protected_attribute"] else []
                for label in labels or [("--",) * len(row_keys)]:
                    rows.append(((audit, *label), tuple(
                        Cell("n/a", notes=(letter,), numeric=False) for _ in strategies)))
                continue
            for label in rows_of(audit):
                cells = tuple(estimate_cell(
                    lookup.get((model, audit, *label, s)), value=value, fn=fn,
                    missing=skip(audit, s, model)) for s in strategies)
                rows.append(((audit, *label), cells))
        sections.append((model, tuple(rows)))
    return tuple(strategy_code(s) for s in strategies), tuple(sections)


def _skip_reason(ctx: Context) -> Callable[[str, str, str], str]:
    def reason(audit: str, strategy: str, model: str) -> str:
        for cell in ctx.inputs.runs.get(audit, {}).get("cells", []):
            if cell.get("strategy") == strategy and cell.get("model") == model \
                    and cell.get("skipped"):
                return f"not run: {cell['skipped']}"
        return "no result row for this cell"
    return reason


def marks_legend(ctx: Context) -> str:
    """What ``*`` and ``=`` mean on a gap (every table and figure of gaps)."""
    stars = STARS.format(alpha=f"{ctx.alpha:g}").removesuffix(".")
    return VERDICT_MARKS.format(stars=stars, narrow=f"{1 - 2 * ctx.alpha:.0%}",
                                alpha=f"{ctx.alpha:g}")


def marks_list(ctx: Context, *, margin: str) -> tuple[tuple[str, str], ...]:
    """Every mark a gap can carry on the page, with what it means in a few words (the page's
    legend; :func:`marks_legend` is the tables' sentence of the same verdicts)."""
    return (
        ("*", "gap shown: " + STARS.format(alpha=f"{ctx.alpha:g}").removesuffix(".")
              + " and an interval excluding no gap (heatmap: in every informative model "
              "family)"),
        ("(*)", "heatmap: a gap shown in some of the model families, not all"),
        ("=", f"parity shown: the {1 - 2 * ctx.alpha:.0%} interval inside {margin}"),
        ("no mark", "inconclusive: a gap up to fairness.csv gap_bound cannot be excluded; "
                    "never read as parity"),
        ("n/a, grey", "uninformative (degenerate decisions) or not computed; the tables say "
                      "why"),
    )


def _legend(ctx: Context, what: str) -> str:
    pct = f"{ctx.confidence:.0%}"
    return (f"Each cell: {what} [{pct} CI: Newcombe score interval for differences, Katz log "
            "for the ratio; at K > 1 the K-replicate estimate's interval]. "
            f"{marks_legend(ctx)}")


def paper_table(ctx: Context) -> Table:
    """Rows audit x attribute, columns S0-S4: the gap of ``ctx.metric`` per model family."""
    fn = _Footnotes()
    frame = ctx.gaps
    if frame.empty:  # a context built without the shown rows: replicate 0, q < alpha
        frame = ctx.fairness[ctx.fairness["metric"] == ctx.metric]
        frame = frame.assign(mark=frame["q_value"].lt(ctx.alpha))

    def rows_of(audit: str) -> list[tuple[str, ...]]:
        sub = frame[frame["audit"] == audit]
        return [(a,) for a in ordered(sub["protected_attribute"], ())]

    columns, sections = _grid(ctx, frame, row_keys=["protected_attribute"], value="value",
                              rows_of=rows_of, fn=fn, skip=_skip_reason(ctx))
    return Table("paper_table", f"{ctx.metric} by audit, attribute and strategy",
                 ("audit", "attribute"), columns, sections,
                 f"{_legend(ctx, f'{ctx.metric} estimate')} {ctx.variance_note}".strip(),
                 fn.items())


PERFORMANCE_ROWS = ("accuracy", "majority_baseline_accuracy", "balanced_accuracy", "auc", "f1",
                    "selection_rate")
"""The performance table's rows per audit: accuracy beside the majority-class accuracy."""


def performance_table(ctx: Context) -> Table:
    """Rows audit x performance metric (:data:`PERFORMANCE_ROWS` present, then any other
    whole-test-set metric), columns S0-S4, per model family; the legend names each audit's base
    rate and majority-class accuracy."""
    fn = _Footnotes()
    frame = ctx.inputs.performance
    if "protected_attribute" in frame:  # per-group rows (selection_rate_disadvantaged, ...)
        attribute = frame["protected_attribute"]
        frame = frame[attribute.isna() | attribute.astype(str).eq("")]
    metrics = ordered(frame["metric"], PERFORMANCE_ROWS)

    def rows_of(audit: str) -> list[tuple[str, ...]]:
        have = set(frame.loc[frame["audit"] == audit, "metric"])
        return [(m,) for m in metrics if m in have]

    columns, sections = _grid(ctx, frame, row_keys=["metric"], value="value", rows_of=rows_of,
                              fn=fn, skip=_skip_reason(ctx))
    pct = f"{ctx.confidence:.0%}"
    rates = test_base_rates(ctx.inputs)
    context = "; ".join(f"{a} {num(r, 2)}" for a, (r, _) in rates.items() if np.isfinite(r))
    return Table("performance_table", "Test-set performance by strategy",
                 ("audit", "metric"), columns, sections,
                 f"Each cell: estimate [{pct} CI]. majority_baseline_accuracy: always deciding "
                 "the test set's majority label (the accuracy any model should beat)."
                 + (f" Base rate (share of test rows with the favourable label): {context}."
                    if context else ""), fn.items())


def counterfactual_table(ctx: Context) -> Table:
    """Rows audit x axis (channel), columns S0-S4: counterfactual flip rates per family."""
    fn = _Footnotes()
    frame = ctx.inputs.counterfactual
    frame = frame.assign(axis_kind=frame["axis"].astype(str) + " (" + frame["kind"].astype(str)
                         + ")")
    audits = set(frame["audit"])

    def rows_of(audit: str) -> list[tuple[str, ...]]:
        return [(a,) for a in ordered(frame.loc[frame["audit"] == audit, "axis_kind"], ())]

    sub = ctx.inputs
    no_axes = [a for a in sub.audits if a in sub.runs and a not in audits]
    columns, sections = _grid(ctx, frame, row_keys=["axis_kind"], value="flip_rate",
                              rows_of=rows_of, fn=fn, skip=_skip_reason(ctx))
    legend = (f"Each cell: share of changed rows whose decision flipped [{ctx.confidence:.0%} "
              "CI]; explicit and proxy channels are never merged.")
    if no_axes:
        legend += " Audits without counterfactual axes: " + ", ".join(no_axes) + "."
    return Table("counterfactual_table", "Counterfactual flip rates by strategy and channel",
                 ("audit", "axis (channel)"), columns, sections, legend, fn.items())


def floor_table(ctx: Context, floor: pd.DataFrame) -> Table:
    """Rows audit x attribute, columns |S3|-|S2| and |S4|-|S2|: the paired effect against S2."""
    fn = _Footnotes()
    frame = floor.rename(columns={"difference": "value", "low": "ci_low", "high": "ci_high"})
    frame = frame.assign(mark=frame["distinguishable"].fillna(False).astype(bool))
    strategies = ordered(frame["strategy"], STRATEGIES) if not frame.empty else []
    lookup = _lookup(frame, ["model", "audit", "protected_attribute", "strategy"])
    sections = []
    for model in ctx.models:
        rows = []
        for audit, attr in dict.fromkeys(zip(frame["audit"], frame["protected_attribute"],
                                             strict=True)):
            cells = tuple(estimate_cell(lookup.get((model, audit, attr, s)), value="value",
                                        fn=fn) for s in strategies)
            rows.append(((audit, attr), cells))
        sections.append((model, tuple(rows)))
    return Table(
        "residual_floor_table",
        f"Residual floor: distance from parity of {ctx.metric}, mitigated minus S2",
        ("audit", "attribute"),
        tuple(f"|{strategy_code(s)}|-|{strategy_code(FLOOR_REFERENCE)}|" for s in strategies),
        tuple(sections),
        f"Each cell: |S3| - |S2| or |S4| - |S2| (distance from parity, mitigated minus S2), the "
        f"paired effect on the same test rows [{ctx.confidence:.0%} paired interval: the "
        f"percentile interval where the draws keep the gaps' signs, the signed box near "
        f"parity]. {SIGNIFICANT} distinguishable from S2 (effects.csv verdict reduced or "
        f"increased: the audit's own Benjamini-Hochberg q < {ctx.alpha:g} of the test of no "
        f"change, which inverts the interval, and an interval excluding 0); {PARITY} no change "
        f"beyond the margin shown (verdict no_change). "
        f"{ctx.variance_note}".strip(), fn.items())


# ------------------------------------------------------------------------------ renderers


def _md(text: str) -> str:
    """Escape the Markdown table delimiter."""
    return text.replace("|", "\\|")


def _md_cell(cell: Cell) -> str:
    text = f"{cell.text} {cell.interval}".strip() + cell.mark
    return _md(text) + "".join(f"<sup>{n}</sup>" for n in cell.notes)


def to_markdown(table: Table) -> str:
    """GitHub-flavoured Markdown: caption, one pipe table, legend and footnotes."""
    head = [_md(h) for h in (*table.stub, *table.columns)]
    lines = [f"**{_md(table.caption)}**", "", "| " + " | ".join(head) + " |",
             "|" + "|".join([":--"] * len(table.stub) + [":-:"] * len(table.columns)) + "|"]
    for title, rows in table.sections:
        if len(table.sections) > 1 or title:
            lines.append(f"| **{title}** |" + " |" * (len(head) - 1))
        for stub, cells in rows:
            lines.append("| " + " | ".join([*map(_md, stub), *map(_md_cell, cells)]) + " |")
    lines += ["", table.legend]
    lines += [f"<sup>{letter}</sup> {text}  " for letter, text in table.footnotes]
    return "\n".join(lines).rstrip() + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}",
        "|": r"$|$", "<": r"$<$", ">": r"$>$", "Δ": r"$\Delta$", "\u2014": "---",
        FAVOURING: r"$^{\dagger}$"}


def tex_escape(text: str) -> str:
    """Escape LaTeX specials; replace non-ASCII by '?' so the fragment stays ASCII."""
    out = "".join(_TEX.get(ch, ch) for ch in text)
    return out.encode("ascii", "replace").decode("ascii")


def _tex_cell(cell: Cell) -> str:
    marks = cell.mark.replace(FAVOURING, r"\dagger") + ",".join(cell.notes)
    sup = f"^{{{marks}}}" if marks else ""
    main = f"${cell.text}{sup}$" if cell.numeric else \
        f"{tex_escape(cell.text)}" + (f"\\textsuperscript{{{marks}}}" if marks else "")
    if not cell.interval:
        return main
    interval = cell.interval.replace("n/a", r"\mathrm{n/a}").replace(", ", ",")
    return r"\begin{tabular}[t]{@{}c@{}}" + main + r"\\ $" + interval + r"$\end{tabular}"


def to_latex(table: Table) -> str:
    """One booktabs ``table*`` float per section (model family); needs only ``booktabs``.

    ``table*`` spans both columns of a two-column paper and is a plain float in one column.

    The first stub column (the audit) becomes a bold group row, so the body has one label
    column and stays within a single-column text width.
    """
    n = len(table.stub) - 1 + len(table.columns)
    head = " & ".join(tex_escape(h) for h in (*table.stub[1:], *table.columns))
    out = ["% faircode report table; needs \\usepackage{booktabs}"]
    for title, rows in table.sections:
        suffix = f" ({title})" if title else ""
        label = table.name + (f"-{title}" if title else "")
        lines = [r"\begin{table*}[htbp]", r"\centering", r"\scriptsize",
                 r"\setlength{\tabcolsep}{2.5pt}",
                 f"\\caption{{{tex_escape(table.caption + suffix)}}}",
                 f"\\label{{tab:faircode-{label.replace('_', '-')}}}",
                 r"\begin{tabular}{" + "l" * (len(table.stub) - 1) + "c" * len(table.columns)
                 + "}", r"\toprule", head + r" \\", r"\midrule"]
        group = None
        used: list[str] = []
        for stub, cells in rows:
            if stub[0] != group:
                if group is not None:
                    lines.append(r"\addlinespace")
                group = stub[0]
                lines.append(f"\\multicolumn{{{n}}}{{l}}{{\\textbf{{{tex_escape(group)}}}}}"
                             r" \\")
            used += [m for c in cells for m in c.notes if m not in used]
            lines.append(" & ".join([*(r"\quad " + tex_escape(x) for x in stub[1:]),
                                     *map(_tex_cell, cells)]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", "",
                  r"\smallskip\par\raggedright "
                  + tex_escape(table.legend).replace(SIGNIFICANT, "$^{*}$", 1)]
        lines += [f"\\par $^{{{letter}}}$ {tex_escape(text)}"
                  for letter, text in table.footnotes if letter in used]
        lines += [r"\end{table*}", ""]
        out += lines
    return "\n".join(out)


def _html_cell(cell: Cell) -> str:
    cls = "num" if cell.numeric else "na"
    sig = f'<span class="sig">{html.escape(cell.mark)}</span>' if cell.mark else ""
    notes = "".join(f"<sup>{html.escape(n)}</sup>" for n in cell.notes)
    interval = f'<br><span class="ci">{html.escape(cell.interval)}</span>' if cell.interval \
        else ""
    return f'<td class="{cls}">{html.escape(cell.text)}{sig}{notes}{interval}</td>'


def to_html(table: Table) -> str:
    """An HTML ``<table>`` with caption, section rows, legend and footnotes."""
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in (*table.stub, *table.columns))
    body = []
    for title, rows in table.sections:
        if len(table.sections) > 1 or title:
            body.append(f'<tr class="section"><th colspan="{len(table.stub) + len(table.columns)}"'
                        f">{esc(title)}</th></tr>")
        for stub, cells in rows:
            body.append("<tr>" + "".join(f"<th>{esc(s)}</th>" for s in stub)
                        + "".join(map(_html_cell, cells)) + "</tr>")
    notes = "".join(f"<li><sup>{esc(k)}</sup> {esc(t)}</li>" for k, t in table.footnotes)
    return (f'<table class="results" id="{esc(table.name)}"><caption>{esc(table.caption)}'
            f"</caption><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            f'<p class="legend">{esc(table.legend)}</p><ul class="footnotes">{notes}</ul>')


def all_tables(ctx: Context, floor: pd.DataFrame) -> tuple[Table, ...]:
    """The paper, performance, counterfactual and residual-floor tables."""
    return (paper_table(ctx), performance_table(ctx), counterfactual_table(ctx),
            floor_table(ctx, floor))


def write_tables(ctx: Context, *, floor: pd.DataFrame, out: Path,
                 extra: Sequence[Table] = ()) -> tuple[Path, ...]:
    """Write ``<name>.md`` and ``<name>.tex`` of every table (and of ``extra``) into ``out``."""
    written = []
    for table in (*all_tables(ctx, floor), *extra):
        for name, render in zip(paper_table_files(table.name), (to_markdown, to_latex),
                                strict=True):
            path = out / name
            path.write_text(render(table), encoding="utf-8")
            written.append(path)
    return tuple(written)

