"""The report's text-audit section: flip rates explicit beside proxy, CTF gaps, per-term rates.

The report section of the ``text`` task kind (:mod:`faircode.report.text_section`, registered
in :mod:`faircode.report.kinds`): reads every ``results/<audit>/`` of a text run (``run.json``
``kind: text``; the evaluate stage's text tables, :mod:`faircode.evaluate.text`), each checked
to hold exactly the files its record lists (:func:`faircode.core.digests.checked_run`), and
writes ``results/text_table.md``, the two figures (:mod:`faircode.report.text_figures`), one
sentence for the page's headline and the page's section.  Grid audits never pass through here,
and a results folder without a text audit gives no section at all.

Design decisions
----------------
* **Explicit and proxy side by side.**  Rows are axes (one direction of one swap) on one set of
  sentences, columns the two channels, each cell the flip rate [Clopper–Pearson interval at the
  frames' effective counts], its direction (``↑`` newly flagged, ``↓`` no longer flagged) and a
  ``*`` when the direction test's q (the system's own family) is below ``stats.alpha``; a
  channel an axis does not have is ``—``.
* **Every raw rate beside its placebo.**  The placebo table puts each axis's flip rate (global
  point) and shift beside the same measure of the swaps within its groups, their difference
  [paired interval] and the verdict read from the difference; an axis without a placebo group
  is not in it (its raw rate is no evidence about the group).
* **Dixon's full set**: per shown term the subgroup, BPSN, BNSP and pinned AUCs, and per
  operating point FPED and FNED with their intervals; the systems table gives each trained
  system's held-out AUC and accuracy.
* **The headline line** names, for each system, the identity term with the highest false
  positive rate at the global operating point against the background's, and the explicit and
  proxy axis that flip most: written from the numbers.
* The per-term table and figure show the sexual-orientation, religion and race/ethnicity terms
  (:data:`SHOWN_CATEGORIES`; an audit without any of them: every category); every term is in
  ``terms.csv``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from faircode.core.layout import TEXT_TABLE, TEXT_TABLES
from faircode.report._readers import read_kind_tables

__all__ = ["SHOWN_CATEGORIES", "TextInputs", "dixon_frame", "equality_line", "flip_cell",
           "headline_line", "load_text_results", "placebo_frame", "section_html",
           "shown_categories", "systems_frame", "write_text_table"]

SHOWN_CATEGORIES = ("sexual_orientation", "religion", "race_ethnicity")
"""The categories of the per-term table on the page (every term is in terms.csv)."""


@dataclass(frozen=True, slots=True)
class TextInputs:
    """Every text audit's tables (concatenated) and run records."""

    flips: pd.DataFrame
    ctf: pd.DataFrame
    placebo: pd.DataFrame
    terms: pd.DataFrame
    auc: pd.DataFrame
    operating_points: pd.DataFrame
    systems: pd.DataFrame
    runs: dict[str, dict[str, Any]]


def load_text_results(folders: Sequence[Path]) -> TextInputs | None:
    """The text audits of ``folders`` (each a text run's results folder; ``None`` without
    any), each checked to hold exactly the files its ``run.json`` records."""
    read = read_kind_tables(folders, TEXT_TABLES, what="the text audit's")
    if read is None:
        return None
    frames, runs = read
    return TextInputs(**{t: pd.concat(f, ignore_index=True) for t, f in frames.items()},
                      runs=runs)


def _pct(x: float) -> str:
    return "n/a" if pd.isna(x) else f"{100 * x:.1f} %"


def flip_cell(row: pd.Series | None, *, alpha: float) -> str:
    """``7.9 % [4.7, 12.4] ↑7.9 ↓0.0 *`` (rates in percent), ``—`` without a row."""
    if row is None:
        return "—"
    if pd.isna(row["flip_rate"]):
        return f"n/a ({row['note']})"
    star = " *" if pd.notna(row["q_value"]) and row["q_value"] < alpha else ""
    return (f"{100 * row['flip_rate']:.1f} % [{100 * row['ci_low']:.1f}, "
            f"{100 * row['ci_high']:.1f}] ↑{100 * row['to_positive']:.1f} "
            f"↓{100 * row['to_negative']:.1f}{star}")


def _alpha(inputs: TextInputs) -> float:
    values = {float(r.get("config", {}).get("alpha", 0.05)) for r in inputs.runs.values()}
    return values.pop() if len(values) == 1 else 0.05


def flips_frame(inputs: TextInputs, *, audit: str, system: str, point: str) -> pd.DataFrame:
    """Rows axis x set, columns explicit and proxy (:func:`flip_cell`), at one operating
    point."""
    part = inputs.flips[(inputs.flips["audit"] == audit) & (inputs.flips["system"] == system)
                        & (inputs.flips["operating_point"] == point)]
    alpha = _alpha(inputs)
    rows = []
    for axis, which in dict.fromkeys(zip(part["axis"], part["set"], strict=True)):
        cells = {"axis": axis, "set": which}
        for kind in ("explicit", "proxy"):
            found = part[(part["axis"] == axis) & (part["set"] == which)
                         & (part["kind"] == kind)]
            cells[kind] = flip_cell(found.iloc[0] if len(found) else None, alpha=alpha)
        rows.append(cells)
    return pd.DataFrame(rows, columns=["axis", "set", "explicit", "proxy"])


def ctf_frame(inputs: TextInputs, *, audit: str) -> pd.DataFrame:
    """Rows axis x kind x set, a column per system: the CTF gap [interval] and the signed
    shift."""
    part = inputs.ctf[inputs.ctf["audit"] == audit]
    keys = ["axis", "kind", "set"]
    out = part.loc[:, keys].drop_duplicates().reset_index(drop=True)
    for system, rows in part.groupby("system", sort=False):
        values = {}
        for r in rows.itertuples(index=False):
            values[(r.axis, r.kind, r.set)] = (
                f"{r.ctf_gap:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]; shift {r.shift:+.3f}")
        out[str(system)] = [values.get(k, "—") for k in out.itertuples(index=False, name=None)]
    return out


def _difference(row: Mapping[Any, Any], *, percent: bool) -> str:
    scale, digits = (100.0, 1) if percent else (1.0, 3)
    if pd.isna(row["difference"]):
        return f"n/a ({row['note']})" if isinstance(row["note"], str) and row["note"] else "n/a"
    return (f"{scale * row['difference']:+.{digits}f} [{scale * row['ci_low']:+.{digits}f}, "
            f"{scale * row['ci_high']:+.{digits}f}]{' *' if row['significant'] else ''}")


def placebo_frame(inputs: TextInputs, *, audit: str, system: str) -> pd.DataFrame:
    """Rows set x axis x kind with a placebo: the global point's flip rate of the swap and of
    its placebo (percent), their difference [interval] and verdict; the shift's difference and
    verdict."""
    p = inputs.placebo
    part = p[(p["audit"] == audit) & (p["system"] == system)]
    keys = ["set", "axis", "kind"]
    flips = part[(part["measure"] == "flip_rate") & (part["operating_point"] == "global")]
    shifts = {tuple(r[k] for k in keys): r
              for r in part[part["measure"] == "shift"].to_dict("records")}
    rows = []
    for r in flips.to_dict("records"):
        shift = shifts[tuple(r[k] for k in keys)]
        rows.append({"set": r["set"], "axis": r["axis"], "kind": r["kind"],
                     "groups": str(r["groups"]).replace("|", ", "),
                     "swap": _pct(r["between"]), "placebo": _pct(r["placebo"]),
                     "difference [interval]": _difference(r, percent=True),
                     "verdict": r["verdict"],
                     "shift difference [interval]": _difference(shift, percent=False),
                     "shift verdict": shift["verdict"]})
    return pd.DataFrame(rows, columns=["set", "axis", "kind", "groups", "swap", "placebo",
                                       "difference [interval]", "verdict",
                                       "shift difference [interval]", "shift verdict"])


def systems_frame(inputs: TextInputs, *, audit: str) -> pd.DataFrame:
    """Per system: deployed or trained here, and a trained one's held-out AUC and accuracy."""
    part = inputs.systems[inputs.systems["audit"] == audit]

    def cell(value: float, low: float, high: float, *, percent: bool) -> str:
        if pd.isna(value):
            return "—"
        if percent:
            return f"{_pct(value)} [{_pct(low)}, {_pct(high)}]"
        return f"{value:.3f} [{low:.3f}, {high:.3f}]"

    return pd.DataFrame({
        "system": part["system"], "origin": part["origin"], "title": part["title"],
        "held-out AUC": [cell(*v, percent=False) for v in zip(
            part["test_auc"], part["test_auc_ci_low"], part["test_auc_ci_high"], strict=True)],
        "held-out accuracy": [cell(*v, percent=True) for v in zip(
            part["test_accuracy"], part["test_accuracy_ci_low"], part["test_accuracy_ci_high"],
            strict=True)],
    }).reset_index(drop=True)


def dixon_frame(inputs: TextInputs, *, audit: str, system: str) -> pd.DataFrame:
    """Per shown term: its subgroup, BPSN, BNSP and pinned AUC."""
    a = inputs.auc
    part = a[(a["audit"] == audit) & (a["system"] == system) & (a["term"].notna())
             & (a["category"] != "all")]
    part = part[part["category"].isin(shown_categories(part))]
    table = part.pivot_table(index=["category", "term"], columns="metric", values="value",
                             sort=False)
    columns = [m for m in ("subgroup_auc", "bpsn_auc", "bnsp_auc", "pinned_auc")
               if m in table.columns]
    return table.loc[:, columns].round(3).reset_index()


def equality_line(inputs: TextInputs, *, audit: str, system: str) -> str:
    """FPED and FNED of each operating point, with their intervals."""
    o = inputs.operating_points
    part = o[(o["audit"] == audit) & (o["system"] == system)].dropna(subset=["fped"])
    said = []
    for r in part.to_dict("records"):
        said.append(f"{r['operating_point']}: FPED {r['fped']:.2f} [{r['fped_ci_low']:.2f}, "
                    f"{r['fped_ci_high']:.2f}], FNED {r['fned']:.2f} [{r['fned_ci_low']:.2f}, "
                    f"{r['fned_ci_high']:.2f}]")
    if not said:
        return f"{system} -- no FPED or FNED"
    return f"{system} -- " + "; ".join(said) + f" (sums over {int(part['n_terms'].max())} terms)"


def shown_categories(terms: pd.DataFrame) -> list[str]:
    """:data:`SHOWN_CATEGORIES` that ``terms`` has, in that order; else every category."""
    present = list(dict.fromkeys(terms["category"].astype(str)))
    shown = [c for c in SHOWN_CATEGORIES if c in present]
    return shown or [c for c in present if c != "all"]


def terms_frame(inputs: TextInputs, *, audit: str, system: str,
                point: str = "global") -> pd.DataFrame:
    """The per-term false positive rates on label-0 sentences of the shown categories."""
    t = inputs.terms
    part = t[(t["audit"] == audit) & (t["system"] == system) & (t["operating_point"] == point)
             & (t["metric"] == "false_positive_rate")]
    part = part[part["category"].isin(shown_categories(part))]
    alpha = _alpha(inputs)
    return pd.DataFrame({
        "category": part["category"], "term": part["term"], "n": part["n"],
        "false positives": part["errors"],
        "rate [interval]": [f"{_pct(r)} [{_pct(lo)}, {_pct(hi)}]" for r, lo, hi in
                            zip(part["rate"], part["ci_low"], part["ci_high"], strict=True)],
        "background": [_pct(b) for b in part["background_rate"]],
        "q": [("n/a" if pd.isna(q) else f"{q:.2g}") + (" *" if pd.notna(q) and q < alpha
                                                       else "") for q in part["q_value"]],
    }).reset_index(drop=True)


def _markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join(":--" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |"
            for row in frame.itertuples(index=False, name=None)]
    return "\n".join([head, rule, *body])


def _points(inputs: TextInputs, audit: str, system: str) -> list[tuple[str, str]]:
    part = inputs.operating_points[(inputs.operating_points["audit"] == audit)
                                   & (inputs.operating_points["system"] == system)]
    return [(str(r.operating_point), f"{r.operating_point} ({r.rule}, "
             f"{'>' if r.direction == 'above' else '>='} {r.threshold:.4g})")
            for r in part.itertuples(index=False)]


PLACEBO_NOTE = ("Each swap against its placebo (swaps within the axis's declared groups: a "
                "name for another name of the same race and sex, a term for another naming the "
                "same group): flip rates in percent at the global point, their difference "
                "[paired 95 % interval] and the shift's (score units); * q < alpha in the "
                "system's own family of placebo tests. Verdicts: above_placebo / below_placebo "
                "(a difference shown), within_margin (shown within ±stats.effect_margin), "
                "inconclusive.")


def write_text_table(inputs: TextInputs, out: Path) -> Path:
    """``text_table.md``: per text audit the systems, flip, placebo, CTF, per-term and AUC
    tables."""
    alpha = _alpha(inputs)
    parts = ["# Text audits", "",
             f"Flip rates in percent of the changed pairs [95 % interval], ↑ newly flagged, ↓ "
             f"no longer flagged; * direction test q < {alpha:g} (each system's own "
             "Benjamini-Hochberg family). CTF gap: mean |score change| [interval], shift: mean "
             "signed change.", ""]
    for audit in inputs.runs:
        systems = list(dict.fromkeys(inputs.flips.loc[inputs.flips["audit"] == audit,
                                                      "system"]))
        parts += [f"## {audit}: systems (held out: a trained system's test part)", "",
                  _markdown(systems_frame(inputs, audit=audit)), ""]
        for system in systems:
            for point, title in _points(inputs, audit, system):
                parts += [f"## {audit}: {system}, flip rates at {title}", "",
                          _markdown(flips_frame(inputs, audit=audit, system=system,
                                                point=point)), ""]
        for system in systems:
            parts += [f"## {audit}: {system}, each swap against its placebo", "", PLACEBO_NOTE,
                      "", _markdown(placebo_frame(inputs, audit=audit, system=system)), ""]
        parts += [f"## {audit}: CTF gap per axis", "", _markdown(ctf_frame(inputs, audit=audit)),
                  ""]
        for system in systems:
            parts += [f"## {audit}: {system}, false positive rate per identity term "
                      "(label-0 sentences, global operating point)", "",
                      _markdown(terms_frame(inputs, audit=audit, system=system)), "",
                      f"## {audit}: {system}, AUCs per identity term (Borkan et al.; pinned: "
                      "Dixon et al.)", "", equality_line(inputs, audit=audit, system=system), "",
                      _markdown(dixon_frame(inputs, audit=audit, system=system)), ""]
    path = out / TEXT_TABLE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def headline_line(inputs: TextInputs) -> str:
    """One sentence per text audit for the page's headline (from the numbers)."""
    sentences = []
    for audit in inputs.runs:
        said = []
        for system in dict.fromkeys(inputs.flips.loc[inputs.flips["audit"] == audit, "system"]):
            said.append(_system_clause(inputs, audit, str(system)))
        sentences.append(f"Text audit {audit}: " + "; ".join(said) + ".")
    return " ".join(sentences)


def _system_clause(inputs: TextInputs, audit: str, system: str) -> str:
    t = inputs.terms
    fp = t[(t["audit"] == audit) & (t["system"] == system) & (t["operating_point"] == "global")
           & (t["metric"] == "false_positive_rate")].dropna(subset=["rate"])
    f = inputs.flips
    flips = f[(f["audit"] == audit) & (f["system"] == system)
              & (f["operating_point"] == "global")].dropna(subset=["flip_rate"])
    clause = system
    if len(fp):
        top = fp.iloc[int(np.argmax(fp["rate"].to_numpy(dtype=float)))]
        clause += (f" flags {_pct(top['rate'])} of non-toxic sentences with '{top['term']}' "
                   f"(background {_pct(top['background_rate'])})")
    for kind in ("explicit", "proxy"):
        part = flips[flips["kind"] == kind]
        if not len(part):
            continue
        top = part.iloc[int(np.argmax(part["flip_rate"].to_numpy(dtype=float)))]
        if top["flip_rate"] == 0:
            clause += f", no {kind} swap flips a decision"
        else:
            clause += (f", its {kind} swaps flip up to {_pct(top['flip_rate'])} of decisions "
                       f"({top['axis']}{_placebo_note(inputs, audit, system, top)})")
    return clause


def flips_none(inputs: TextInputs, audit: str, system: str) -> int:
    """The number of axes of a system whose every flip rate at its global point is 0 (its
    chart would show nothing: the page says so in one line instead), else 0."""
    f = inputs.flips
    part = f[(f["audit"] == audit) & (f["system"] == system) & (f["operating_point"] == "global")]
    rates = part["flip_rate"].to_numpy(dtype=float)
    return int(part["axis"].nunique()) if rates.size and np.nan_to_num(rates).max() == 0 else 0


def nothing_lines(inputs: TextInputs, audit: str) -> list[str]:
    """One paragraph per system of ``audit`` whose swaps flip nothing (:func:`flips_none`): what
    its chart of points at 0 would have said."""
    systems = dict.fromkeys(inputs.flips.loc[inputs.flips["audit"] == audit, "system"])
    return [f"<p>{html.escape(f'{audit}, {system}')}: no swap of its {n} axes flips a decision "
            "at its global operating point (every flip rate 0; no chart drawn, the table "
            "below)</p>" for system in systems if (n := flips_none(inputs, audit, str(system)))]


def _placebo_note(inputs: TextInputs, audit: str, system: str, flip: pd.Series) -> str:
    """``; placebo 19.8 %: below_placebo`` for a flip row whose axis has a placebo, else ``""``:
    a raw rate is never quoted without its control where it has one."""
    p = inputs.placebo
    row = p[(p["audit"] == audit) & (p["system"] == system) & (p["measure"] == "flip_rate")
            & (p["operating_point"] == "global") & (p["set"] == flip["set"])
            & (p["axis"] == flip["axis"]) & (p["kind"] == flip["kind"])]
    if not len(row):
        return ""
    return f"; placebo {_pct(row['placebo'].iat[0])}: {row['verdict'].iat[0]}"


def section_html(inputs: TextInputs, *, figures: str, fold: Any, table: Any) -> str:
    """The page's text-audit section; ``fold(title, body)`` and ``table(frame)`` are the page's
    own folding and table helpers, ``figures`` the rendered figures."""
    parts = ["<h2>Text audits</h2>",
             "<p>Deployed text classifiers on template sentences with counterfactual swaps: an "
             "explicit swap edits a stated identity term, a proxy swap a first name "
             "(Bertrand &amp; Mullainathan's). Flip rates with Clopper–Pearson intervals at the "
             "template frames' effective counts; ↑ newly flagged, ↓ no longer flagged; * the "
             "direction test's q below alpha in the system's own family.</p>", figures]
    for audit in inputs.runs:
        systems = dict.fromkeys(inputs.flips.loc[inputs.flips["audit"] == audit, "system"])
        parts.append(fold(f"{audit}: systems", table(systems_frame(inputs, audit=audit))))
        parts += nothing_lines(inputs, audit)
        for system in systems:
            for point, title in _points(inputs, audit, str(system)):
                parts.append(fold(f"{audit}: {system} flip rates at {title}", table(
                    flips_frame(inputs, audit=audit, system=str(system), point=point))))
            parts.append(fold(f"{audit}: {system}, each swap against its placebo",
                              f"<p>{PLACEBO_NOTE}</p>" + table(placebo_frame(
                                  inputs, audit=audit, system=str(system)))))
        parts.append(fold(f"{audit}: CTF gap per axis", table(ctf_frame(inputs, audit=audit))))
        for system in systems:
            parts.append(fold(f"{audit}: {system} false positive rate per identity term", table(
                terms_frame(inputs, audit=audit, system=str(system)))))
            parts.append(fold(f"{audit}: {system} AUCs per identity term, FPED and FNED",
                              f"<p>{equality_line(inputs, audit=audit, system=str(system))}</p>"
                              + table(dixon_frame(inputs, audit=audit, system=str(system)))))
    return "".join(parts)
