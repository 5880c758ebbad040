"""``report.html``: one self-contained page that leads with its finding, then figures and tables.

Design decisions
----------------
* **The finding first, read in ten seconds.**  The first screen holds the lead
  (:func:`faircode.report.headline.short_lead`: the finding in one sentence, then the counts
  per strategy as a short list, written from the numbers; the finding in full is folded under
  it), the legend (S0-S4 named, the model families' markers, the sign convention and every mark
  a gap can carry) and, beside them, the whole heatmap: its column is as wide as the figure can
  be while as tall as the window less the page's head (:func:`_fit`), so every row shows at
  once however many audits there are.  The per-audit lines, the figures and the folded tables
  follow, so the page opens short however many audits it holds.
* **One significance, one number.**  Every mark on the page is the verdict the CSVs carry (a
  star: ``gap``, the audit's own Benjamini-Hochberg q and an interval excluding no gap; ``=``:
  ``parity``), and every number the CSVs' value (at K > 1 the K-replicate estimate): the text,
  the heatmap and the tables agree with ``fairness.csv``, MLflow and the DVC views.  The
  benchmark-wide q is a robustness column (``summary.csv`` ``q_benchmark``) and the page says
  so.
* Self-contained: CSS inline, figures inline as base64 PNG, and a Content-Security-Policy that
  forbids every request except ``data:`` images, so opening the page can never reach a network.
  The inline figures are the PNG files quantised to 128 colours (same pixels, a third of the
  bytes); the files in ``figures/`` stay full colour for print.  An image whose PNG is byte
  for byte the one the page being replaced embeds is carried over from it
  (:mod:`faircode.report.page_images`).
* Provenance is printed, not linked (:mod:`faircode.report.provenance_page`): the state the
  results come from (commit, code and params digests, dirty inputs, whether the params are the
  params file's: the ``state`` of every ``run.json``, grouped when audits differ), the report
  code that rendered the page, and per audit the dataset and manifest digests, seeds and
  parameters.  No ``dvc.lock`` digest: a stage cannot know the lock that will record it; the
  citable identity is the freeze record, which the page names.
* A small inline script writes every image's natural size, every loaded resource, the page's
  width with every fold open (wide tables scroll inside their own box, so it stays the window's)
  and the layout of the first screen (where the headline, legend and heatmap end, the page's height,
  whether they come before the first table) into ``<pre id="render-check">`` once the page has
  loaded; a headless browser's DOM dump then shows what a reader's browser actually rendered.
  It changes nothing a reader sees.
* No timestamp: the page is a function of its inputs, so DVC sees it change only when they do.
"""

from __future__ import annotations

import html
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.core.cells import STRATEGY_TITLES, strategy_info
from faircode.report import arbitrariness, headline, matched
from faircode.report.deployed import deployed_tables
from faircode.report.effects import effects_table
from faircode.report.figures import FigureFile
from faircode.report.given import given_lines, groups_table
from faircode.report.html_tables import CSS as TABLES_CSS
from faircode.report.html_tables import boxed, frame_html, plural, rows_html, stability_html
from faircode.report.inputs import MODELS, STRATEGIES, ordered, strategy_code
from faircode.report.kinds import LoadedSection
from faircode.report.page_images import SHA_ATTRIBUTE, page_images
from faircode.report.people import people_lines, people_tables
from faircode.report.provenance_page import CSS as PROVENANCE_CSS
from faircode.report.provenance_page import provenance_html
from faircode.report.sensitivity import margins_html, sensitivity_html
from faircode.report.style import FAMILY_GLYPHS, SHORT, family_marker, strategy_colour
from faircode.report.tables import Context, all_tables, marks_list, to_html

__all__ = ["CSP", "write_html"]

CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'")
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:76rem;margin:1.2rem auto;
padding:0 1rem;color:#111;line-height:1.4}
h1{font-size:1.5rem;margin:.2rem 0 .3rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc;
margin-top:1.8rem}h3{font-size:1rem;margin:.2rem 0 .4rem}
.scope{font-size:.85rem;color:#333;margin:.2rem 0 .8rem}
.top{display:grid;grid-template-columns:minmax(0,1fr) auto;gap:1.4rem;align-items:start}
.side{position:sticky;top:.4rem}
#headline .lead{font-size:1.05rem;margin:.2rem 0 .3rem}
.counts{margin:.1rem 0 .7rem;padding-left:1.3rem;font-size:.95rem}.counts li{margin:.1rem 0}
#finding{font-size:.9rem}
.findings{list-style:none;padding:0;margin:0;font-size:.84rem}
.findings li{margin:0 0 .45rem;padding-left:.6rem;border-left:3px solid #ddd}
#legend{font-size:.78rem;background:#f7f7f7;border:1px solid #e3e3e3;padding:.4rem .7rem;
margin-bottom:.6rem}#legend h3{margin:0 0 .2rem}#legend p{margin:.2rem 0}#legend ul{margin:.1rem 0;
padding-left:0;list-style:none}#legend ul.strategies li{display:inline-block;margin-right:.9rem}
#legend ul.marks li{display:grid;grid-template-columns:4.3rem 1fr}
.sw{display:inline-block;width:.8em;height:.8em;margin-right:.3em;
vertical-align:-.05em;border-radius:2px}
table{border-collapse:collapse;margin:.6rem 0;font-size:.85rem}
caption{text-align:left;font-weight:600;padding:.3rem 0}
th,td{padding:.2rem .5rem;border-bottom:1px solid #e3e3e3;vertical-align:top}
thead th{border-bottom:2px solid #333;text-align:center}
tbody th{text-align:left;font-weight:normal;white-space:nowrap}
tr.section th{text-align:left;font-style:italic;background:#f4f4f4}
td.num{text-align:center;font-variant-numeric:tabular-nums}
td.na{text-align:center;color:#555;font-style:italic}
.ci{color:#555;font-size:.8em}.sig{font-weight:700}
.legend,.footnotes{font-size:.8rem;color:#333}.footnotes{list-style:none;padding-left:0}
figure{display:inline-block;margin:.6rem 1.2rem .6rem 0;max-width:31rem;vertical-align:top}
.side figure{display:block;margin:0;max-width:none}
figure img{width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.78rem;color:#333}
code,pre{font-size:.8rem;background:#f6f6f6}pre{padding:.5rem;overflow-x:auto}
#render-check{display:none}
details{margin:.35rem 0}summary{cursor:pointer}summary h3{display:inline}
"""
_CHECK = """
window.addEventListener("load", function () {
  var images = Array.prototype.map.call(document.images, function (img) {
    return {id: img.id, complete: img.complete, width: img.naturalWidth,
            height: img.naturalHeight};
  });
  var resources = performance.getEntriesByType("resource").map(function (e) {
    return e.name;
  });
  function box(el) {
    if (!el) { return null; }
    var r = el.getBoundingClientRect();
    return {top: Math.round(r.top + window.scrollY), bottom: Math.round(r.bottom + window.scrollY)};
  }
  var table = document.querySelector("table");
  function before(id) {
    var el = document.getElementById(id);
    return !!el && (!table ||
      !!(el.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING));
  }
  // every fold opened: the page must still be as wide as the window (wide tables scroll in
  // their own box); then the folds are closed again, as the reader found them
  var shut = Array.prototype.filter.call(document.querySelectorAll("details"),
    function (d) { return !d.open; });
  shut.forEach(function (d) { d.open = true; });
  var openWidth = document.documentElement.scrollWidth;
  var right = document.body.getBoundingClientRect().right;
  var unboxed = Array.prototype.filter.call(document.querySelectorAll("table"), function (t) {
    var box = t.parentElement;
    return t.getBoundingClientRect().right > right + 1 &&
      !(box.classList.contains("scroll") || box.classList.contains("box"));
  }).length;
  shut.forEach(function (d) { d.open = false; });
  var out = document.getElementById("render-check");
  out.textContent = JSON.stringify({images: images, resources: resources,
    tables: document.querySelectorAll("table.results").length,
    layout: {viewport: window.innerWidth, height: document.documentElement.scrollHeight,
             width: document.documentElement.scrollWidth, open_width: openWidth,
             unboxed_wide_tables: unboxed,
             lead: box(document.getElementById("lead")),
             headline: box(document.getElementById("headline")),
             legend: box(document.getElementById("legend")),
             heatmap: box(document.getElementById("heatmap")),
             heatmap_image: box(document.querySelector("#heatmap img")),
             counts: box(document.getElementById("counts")),
             before_first_table: {headline: before("headline"), legend: before("legend")}}});
  document.body.setAttribute("data-rendered", "yes");
});
"""


def _esc(value: object) -> str:
    return html.escape(str(value))


def _figure(fig: FigureFile, i: int, images: Mapping[Path, tuple[str, str]], *,
            element_id: str = "") -> str:
    """The figure element, its image ``images[fig.png]`` (the PNG's sha256 and embedded image:
    :func:`faircode.report.page_images.page_images`)."""
    ident = f' id="{_esc(element_id)}"' if element_id else ""
    sha, image = images[fig.png]
    return (f'<figure{ident}><img id="figure-{i}" alt="{_esc(fig.caption)}" '
            f'{SHA_ATTRIBUTE}="{sha}" src="data:image/png;base64,{image}"><figcaption>'
            f"{_esc(fig.caption)} <code>figures/{_esc(fig.png.name)}</code>, <code>.pdf</code>"
            "</figcaption></figure>")


def _floor_sentence(counts: pd.DataFrame) -> str:
    if counts.empty:
        return "<p>No audit has both S2 and a mitigated strategy for this metric.</p>"
    items = []
    for r in counts.to_dict("records"):
        undefined, code = int(r["n_undefined"]), strategy_code(str(r["strategy"]))
        items.append(
            f"<li>{_esc(code)} ({_esc(STRATEGY_TITLES.get(code, r['strategy']))}) · "
            f"{_esc(SHORT.get(str(r['model']), r['model']))}: not distinguishable from S2 in "
            f"<b>{int(r['audits_not_distinguishable'])} of {int(r['audits'])}</b> audits "
            f"({int(r['pairs_not_distinguishable'])} of {int(r['pairs'])} audit × attribute "
            "pairs" + (f"; {undefined} without an estimate" if undefined else "") + ")</li>")
    return f"<ul>{''.join(items)}</ul>"


def _unavailable(ctx: Context) -> str:
    if not ctx.inputs.unavailable:
        return "<p>Every audit has results.</p>"
    items = "".join(
        f"<li><b>{_esc(u.audit)}</b>: {_esc(u.reason)}<br>How to obtain the data: "
        f"{_esc(u.instructions or 'no instructions recorded')}</li>"
        for u in ctx.inputs.unavailable)
    return f'<ul id="unavailable">{items}</ul>'


def _deployed(ctx: Context) -> list[str]:
    """The deployed-system tables, folded (only where some audit has a system)."""
    tables = deployed_tables(ctx)
    if not tables:
        return []
    return [_fold(
        "Deployed systems beside S0-S4, and the published-audit replication",
        "<p>Decisions nobody here trained: the system an audit's manifest declares, scored on "
        "the grid's test rows beside S0-S4 (same people, same statistics) and on every row of "
        "the audit, the replication of a published audit. Error-rate balance (the FPR and FNR "
        "gaps, the per-group table) and calibration within groups (the calibration gap, the "
        "figure) are the two views of the COMPAS debate; where base rates differ, no score has "
        "both, so both are shown.</p>" + "".join(boxed(to_html(t)) for t in tables))]


def _people(ctx: Context) -> list[str]:
    """Decisions made by people (audits whose decision is the outcome), folded, if any."""
    tables = people_tables(ctx)
    if not tables:
        return []
    lines = "".join(
        f"<li><b>{_esc(a)}</b>: its S0-S4 are trained to predict the people's decision "
        f"\u2014 {_esc(ctx.inputs.deployed.titles.get(a, a))} \u2014 from the applicant's "
        "features: the grid is a screening model trained on historical human decisions, and "
        "its gaps are what such a model learns from them.</li>" for a in ctx.inputs.deployed.people
        if a in ctx.inputs.runs)
    return [_fold(
        "Decisions made by people: the decision, its gap within strata, and the grid trained "
        "on it", "<p>The audited decision is the data's own outcome: nothing separate is its "
        "ground truth, so its selection rates, parity gap, disparate impact, intersectional "
        "cells and the gap within the declared legitimate strata are measured, and every "
        "error rate is not applicable (n/a \u2014 decision is the outcome).</p>"
        f"<ul>{lines}</ul>" + "".join(boxed(to_html(t)) for t in tables))]


def _effects(ctx: Context) -> list[str]:
    """The paired-effects table, folded (only where some audit has effects.csv)."""
    table = effects_table(ctx)
    if table is None:
        return []
    return [_fold("What mitigation buys: paired effects (effects_table)",
                  "<p>Each mitigated strategy against S0, and S3/S4 against S2 (the residual "
                  "floor), scored on the same test rows in every bootstrap draw: the change in "
                  "distance from parity, in accuracy and in balanced accuracy, with the paired "
                  "interval, the test of no change that inverts it and its verdict (effects.csv, "
                  "with the swap test of exchangeable decisions; at K &gt; 1 the K-replicate "
                  "estimate of effects_stability.csv).</p>"
                  + sensitivity_html(ctx.inputs.encoding_sensitivity) + boxed(to_html(table)))]


def _margins(ctx: Context) -> list[str]:
    body = margins_html(ctx)
    return [_fold("Margin sensitivity: the parity claims at three margins", body)] if body else []


def _fold(title: str, body: str, *, open_: bool = False) -> str:
    return (f"<details{' open' if open_ else ''}><summary><h3>{_esc(title)}</h3></summary>"
            f"{body}</details>")


def _legend(ctx: Context) -> str:
    """S0-S4 (colour), the families (marker), the sign convention and every mark on a gap."""
    strategies = "".join(
        f'<li title="{_esc(strategy_info(s).what)}"><span class="sw" '
        f'style="background:{strategy_colour(s)}"></span><b>{_esc(strategy_code(s))}</b> '
        f"{_esc(STRATEGY_TITLES.get(strategy_code(s), s))}</li>" for s in STRATEGIES)
    models = ordered(ctx.fairness["model"], MODELS) if not ctx.fairness.empty else list(MODELS)
    families = ", ".join(
        f"{FAMILY_GLYPHS.get(family_marker(m, models), family_marker(m, models))} "
        f"{SHORT.get(m, m)} {m.replace('_', ' ')}" for m in models)
    margin = headline.margins_of(ctx)["difference"]
    marks = "".join(f"<li><b>{_esc(mark)}</b> {_esc(text)}</li>" for mark, text in marks_list(
        ctx, margin=f"\u00b1{margin:g}" if isinstance(margin, int | float) else "the margin"))
    return (
        '<aside id="legend"><h3>Legend</h3><ul class="strategies">' + strategies + "</ul>"
        f"<p>Marker per model family in every figure: {_esc(families)}; colour = strategy.</p>"
        "<p><b>Sign convention</b>: a gap is the disadvantaged group's rate of the favourable "
        "outcome minus the advantaged group's (a ratio for disparate impact); negative (a "
        "ratio below 1): the disadvantaged group is worse off, in every audit. Δ|gap| &lt; 0: "
        "closer to parity than the reference.</p>"
        f'<p><b>Marks</b> (every table and figure):</p><ul class="marks">{marks}</ul>'
        + ("<p>At K &gt; 1 every number, interval and verdict is the K-replicate "
           "estimate's.</p>" if "K = 1," not in ctx.variance_note else "")
        + "</aside>")


def _given_top(ctx: Context) -> str:
    """The first screen of a folder of given models only (``faircode audit``): each model's
    numbers (:func:`faircode.report.given.given_lines`) and its table beside the legend."""
    deployed, items = ctx.inputs.deployed, []
    for audit, model in deployed.systems.items():
        fairness = deployed.fairness[(deployed.fairness["audit"] == audit)
                                     & (deployed.fairness["model"] == model)]
        performance = deployed.performance[(deployed.performance["audit"] == audit)
                                           & (deployed.performance["model"] == model)]
        record = ctx.inputs.runs.get(audit, {}).get("predictions", {})
        rows = (f" on {plural(int(record['rows']), 'row')} "
                f"({str(record.get('rows_audited', 'all')).replace('_', '-')}) of "
                f"{record.get('path', 'a predictions file')}" if "rows" in record else "")
        lines = "".join(f"<li>{_esc(line)}</li>" for line in given_lines(fairness, performance))
        items.append(f"<h3>{_esc(audit)}: {_esc(model)}{_esc(rows)}</h3>"
                     f'<ul class="findings">{lines}</ul>')
    table = groups_table(ctx)
    tables = boxed(to_html(table)) if table is not None else ""
    return ('<div class="top"><section id="headline"><h2>Given model</h2>'
            '<p class="lead" id="lead">Decisions no one here trained, scored with the '
            "benchmark's statistics (no S0-S4 grid in this folder).</p>"
            f'{"".join(items)}{tables}</section><div class="side">{_legend(ctx)}</div></div>')


def _top(ctx: Context, figures: Sequence[FigureFile], images: Mapping[Path, tuple[str, str]], *,
         text_line: str = "") -> str:
    """The first screen: the lead (the finding, then the counts), the legend, the finding in
    full and the per-audit lines | the whole heatmap beside them."""
    if ctx.fairness.empty and ctx.inputs.deployed.systems:
        return _given_top(ctx)
    items = headline.findings(ctx)
    margins = headline.margins_of(ctx)
    unavailable = len(ctx.inputs.unavailable)
    sentence, counts = headline.short_lead(items, metric=ctx.metric, margins=margins)
    sentences = headline.lead(items, metric=ctx.metric, unavailable=unavailable,
                              margins=margins)
    claim = matched.claim_sentence(ctx.inputs.matched, ctx.inputs.runs, alpha=ctx.alpha)
    abstained = arbitrariness.abstention_sentence(items, ctx.inputs.arbitrariness,
                                                  metric=ctx.metric, models=ctx.models)
    sentences = (*sentences, *(line for line in (claim, abstained, text_line) if line))
    people = people_lines(ctx)  # an audit of people's decisions: that line first
    pairs = [p for f in items
             for p in (*([people.pop(f.audit)] if f.audit in people else []),
                       headline.audit_line(f, margins=margins, metric=ctx.metric))
             ] + list(people.values())
    lines = "".join(f"<li><b>{_esc(label)}</b>: {_esc(text)}</li>" for label, text in pairs)
    heat = [(i, f) for i, f in enumerate(figures) if f.section == "heatmap"]
    listed = "".join(f"<li>{_esc(c)}</li>" for c in counts)
    return (
        f'<div class="top"{_fit(heat[0][1].png) if heat else ""}><section id="headline">'
        "<h2>Finding</h2>"
        f'<p class="lead" id="lead">{_esc(sentence)}</p>'
        + (f'<ul class="counts" id="counts">{listed}</ul>' if listed else "")
        + _legend(ctx)
        + _fold("The finding in full", f'<p id="finding">{_esc(" ".join(sentences))}</p>')
        + "<h3>Per audit (first protected attribute; gaps and Δ against S0: the mean over the "
        f'informative model families, as the heatmap)</h3><ul class="findings">{lines}</ul>'
        "</section>"
        '<div class="side">'
        + "".join(_figure(f, i, images, element_id="heatmap") for i, f in heat) + "</div></div>")


def _fit(png: Path) -> str:
    """The first screen's grid sized so the whole heatmap shows on one screen: its column as
    wide as the figure can be when it is as tall as the window less the page's head (at most
    30rem)."""
    width, height = struct.unpack(">II", png.read_bytes()[16:24])  # the PNG header's size
    return (' style="grid-template-columns:minmax(0,1fr) '
            f'min(30rem,calc((100vh - 10rem) * {width / height:.4f}))"')


def write_html(ctx: Context, *, floor: pd.DataFrame, counts: pd.DataFrame,
               intersectional: pd.DataFrame, figures: Sequence[FigureFile],
               provenance: Mapping[str, Any], out: Path,
               sections: Sequence[tuple[LoadedSection, Sequence[FigureFile]]] = (),
               workers: int = 1) -> Path:
    """Write the self-contained report page to ``out``; return ``out``.  Each of ``sections``
    (a task kind's own section with its figures, :mod:`faircode.report.kinds`; the text
    audits') adds its part of the page and its headline sentence.  ``workers``: processes
    encoding the embedded images (the page is the same bytes for any number, and whether or not
    a page at ``out`` lends it images)."""
    own = [f for _, shown in sections for f in shown]
    pngs = sorted({f.png for f in (*figures, *own)})
    images = page_images(pngs, previous=out, workers=workers)
    paper, performance, counterfactual, floor_table = all_tables(ctx, floor)
    models = ", ".join(SHORT.get(m, m) for m in ctx.models)
    per_audit: dict[str, list[tuple[int, FigureFile]]] = {}
    for i, f in enumerate(figures):
        if f.audit:
            per_audit.setdefault(f.audit, []).append((i, f))
    body = [
        "<h1>faircode benchmark report</h1>",
        f'<p class="scope">Metric <b>{_esc(ctx.metric)}</b>; '
        + (f"{plural(len(ctx.models), 'model family', 'model families')}: {_esc(models)}; "
           if ctx.models else "no S0-S4 grid; ")
        + f"{plural(len(ctx.inputs.runs), 'audit')} with results, "
        f"{len(ctx.inputs.unavailable)} unavailable. {_esc(ctx.variance_note)}</p>",
        _top(ctx, figures, images, text_line=" ".join(
            line for s, _ in sections if (line := s.section.headline(s.inputs)))),
        "<h2>Residual floor: what S3 and S4 add to S2</h2>", _floor_sentence(counts),
        "".join(_figure(f, i, images) for i, f in enumerate(figures) if f.section == "figures"),
        "<h2>Per audit</h2>",
        "".join(_fold(f"{audit}: {', '.join(_KIND.get(f.kind, f.kind) for _, f in shown)}",
                      "".join(_figure(f, i, images) for i, f in shown))
                for audit, shown in per_audit.items()),
        "<h2>Tables</h2>",
        _fold("Paper table: the gap per audit, attribute, strategy and family",
              boxed(to_html(paper))), *_margins(ctx),
        *_effects(ctx),
        *matched.matched_folds(ctx, fold=_fold),
        *arbitrariness.arbitrariness_folds(ctx, fold=_fold),
        _fold("Residual floor table: |S3| - |S2| and |S4| - |S2|", boxed(to_html(floor_table))),
        _fold("Performance, with the majority-class accuracy", boxed(to_html(performance))),
        _fold("Counterfactual flip rates", boxed(to_html(counterfactual))),
        *_deployed(ctx),
        *_people(ctx),
        *([_fold("Training variance across seeds", stability_html(ctx))]
          if not ctx.inputs.stability.empty else []),
        _fold(f"Every {ctx.metric} row, with the benchmark-wide q (q_benchmark)",
              rows_html(ctx, intersectional)),
        *_sections(sections, first=len(figures), images=images),
        "<h2>Unavailable audits</h2>", _unavailable(ctx),
        "<h2>Provenance</h2>", provenance_html(ctx.inputs.runs, provenance),
        '<pre id="render-check"></pre>',
    ]
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>faircode report: {_esc(ctx.metric)}</title><style>{_CSS}{TABLES_CSS}"
            f"{PROVENANCE_CSS}</style>"
            "</head>"
            f"<body>{''.join(body)}<script>{_CHECK}</script></body></html>\n")
    out.write_text(page, encoding="utf-8")
    return out


def _sections(sections: Sequence[tuple[LoadedSection, Sequence[FigureFile]]], *, first: int,
              images: Mapping[Path, tuple[str, str]]) -> list[str]:
    """Each kind's own part of the page, its figures numbered on from ``first``."""
    parts = []
    for loaded, shown in sections:
        figures = "".join(_figure(f, first + i, images) for i, f in enumerate(shown))
        parts.append(loaded.section.html(loaded.inputs, fold=_fold, table=frame_html,
                                         figures=figures))
        first += len(shown)
    return parts


_KIND = {"by_strategy": "gap by strategy", "tradeoff": "accuracy against distance from parity",
         "curves": "operating-point curves", "calibration": "calibration by group",
         "frontier": "accuracy against the constraint's violation, with the tolerance curve",
         "multiplicity": "every fitted model's gap against its accuracy"}
