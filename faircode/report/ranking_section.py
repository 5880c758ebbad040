"""The ``binary`` kind's own section of the report: the ranking view of its scores.

The grid view (:func:`faircode.report.inputs.load_results`) reads a grid run's main tables; this
section (the kind's entry of :data:`faircode.report.kinds.SECTIONS`) reads its ranking view --
``ranking.csv`` and ``ranking_topk.csv`` on the test rows, and a deployed system's on every row
in ``deployed/`` (:mod:`faircode.evaluate.ranking`) -- and writes ``results/ranking_table.md``,
one figure per audit (the disadvantaged group's share of the top ``k`` with its simultaneous
band), a sentence of the headline and the page's section.  A grid run without a ranking view (a
folder written before it existed, an audit without a score) adds nothing.

Its units: exposure as Singh & Joachims' mean ``1 / log2(1 + position)`` of a group's rows and
their ratio (disadvantaged / advantaged; 1 = parity of exposure), shares of the top ``k`` in
percent, FA*IR's verdict with the prefix that fails and the adjusted alpha.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd

from faircode.core.cells import FAMILY_CODES, STRATEGY_CODES, Strategy, strategy_code
from faircode.core.errors import DataError
from faircode.core.layout import RANKING_TABLE, RANKING_TABLES, deployed_path, table_path
from faircode.report.drawing import Drawing
from faircode.report.figures import FigureFile, _save
from faircode.report.style import OKABE_ITO, WIDTH

__all__ = ["SECTION", "RankingInputs", "RankingSection", "load_rankings", "ranking_frame",
           "top_share_figure"]

_BASELINE = STRATEGY_CODES[Strategy.BASELINE]


@dataclass(frozen=True, slots=True)
class RankingInputs:
    """Every grid audit's ranking tables (concatenated; ``row_set`` says test or all rows)."""

    ranking: pd.DataFrame
    topk: pd.DataFrame
    audits: tuple[str, ...]


def _read(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: expected a ranking table, got {type(exc).__name__}: "
                        f"{exc}") from None


def load_rankings(folders: Sequence[Path]) -> RankingInputs | None:
    """The ranking tables of the grid runs in ``folders`` (None when none has any)."""
    main: list[pd.DataFrame] = []
    topk: list[pd.DataFrame] = []
    audits = []
    for folder in folders:
        for where in (lambda t, f=folder: table_path(f, t),
                      lambda t, f=folder: deployed_path(f, t)):
            found = [_read(where(t)) for t in RANKING_TABLES]
            if found[0] is not None and found[1] is not None:
                main.append(found[0])
                topk.append(found[1])
                audits.append(folder.name)
    if not main:
        return None
    return RankingInputs(pd.concat(main, ignore_index=True), pd.concat(topk, ignore_index=True),
                         tuple(dict.fromkeys(audits)))


def _shown(strategy: str, model: str) -> str:
    code = strategy_code(strategy)
    return f"{code} {FAMILY_CODES[model]}" if model in FAMILY_CODES else f"{code} ({model})"


def ranking_frame(inputs: RankingInputs, *, audit: str) -> pd.DataFrame:
    """One audit's row sets by attribute: exposure ratio [interval], q, verdict, FA*IR."""
    r = inputs.ranking[inputs.ranking["audit"] == audit]
    return pd.DataFrame({
        "rows": [f"{_shown(str(s), str(m))}, {rs}" for s, m, rs in zip(
            r["strategy"], r["model"], r["row_set"], strict=True)],
        "attribute": r["protected_attribute"].astype(str),
        "disadvantaged share": [f"{100 * p:.1f} %" for p in r["share_disadvantaged"]],
        "exposure ratio": [f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if pd.notna(v) else "n/a"
                           for v, lo, hi in zip(r["value"], r["ci_low"], r["ci_high"],
                                                strict=True)],
        "q": [f"{q:.2g}" if pd.notna(q) else "n/a" for q in r["q_value"]],
        "verdict": r["verdict"].astype(str),
        "FA*IR (top k)": [
            ("passes" if str(ok) == "True" else f"fails at {int(first)} ({int(seen)} < "
             f"{int(need)})") + f", k {int(k)}, alpha_c {a:.2g}" if pd.notna(a) else "n/a"
            for ok, first, seen, need, k, a in zip(
                r["fair_passes"], r["fair_first_fail"], r["fair_observed"], r["fair_needed"],
                r["fair_k"], r["fair_alpha_adjusted"], strict=True)],
    }).reset_index(drop=True)


def _markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join(":--" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |"
            for row in frame.itertuples(index=False, name=None)]
    return "\n".join([head, rule, *body])


def _write_table(inputs: RankingInputs, out: Path) -> Path:
    parts = ["# Ranking view", "",
             "Each score ranks its rows favourable end first. Exposure: the mean 1/log2(1 + "
             "position) of a group's rows (Singh & Joachims 2018), the ratio disadvantaged / "
             "advantaged with its 95 % interval, its permutation test's q (the audit's ranking "
             "family) and verdict; FA*IR (Zehlike et al. 2017): every prefix of the top k holds "
             "at least the binomial lower bound of disadvantaged rows at the adjusted alpha "
             "(k: the rows the row set decides favourably; at most 1,000 prefixes tested, a tied "
             "score's only at its cuts).", ""]
    for audit in inputs.audits:
        parts += [f"## {audit}", "", _markdown(ranking_frame(inputs, audit=audit)), ""]
    path = out / RANKING_TABLE
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def top_share_figure(inputs: RankingInputs, audit: str, out: Path) -> FigureFile | None:
    """The first attribute's disadvantaged share of the top ``k`` against ``k / n``: the
    deployed system on every row (with its band) and S0's families on the test rows."""
    t = inputs.topk[inputs.topk["audit"] == audit]
    if t.empty:
        return None
    attribute = str(t["protected_attribute"].iloc[0])
    t = t[t["protected_attribute"] == attribute]
    fig, ax = plt.subplots(figsize=(WIDTH, 2.0), layout="constrained")
    colours = [OKABE_ITO["black"], OKABE_ITO["orange"], OKABE_ITO["sky_blue"],
               OKABE_ITO["vermillion"]]
    shown = 0
    for (strategy, model, row_set), part in t.groupby(["strategy", "model", "row_set"],
                                                      sort=False):
        code = strategy_code(str(strategy))
        if code != _BASELINE and row_set != "all":
            continue
        colour = colours[shown % len(colours)]
        ax.plot(part["fraction"], part["share_disadvantaged"], marker=".", color=colour, lw=0.8,
                label=f"{_shown(str(strategy), str(model))}, {row_set} rows")
        ax.fill_between(part["fraction"], part["band_low"], part["band_high"], color=colour,
                        alpha=0.15, lw=0)
        shown += 1
    if not shown:
        plt.close(fig)
        return None
    ax.axhline(float(t["share_of_rows"].iloc[0]), color="grey", lw=0.5, ls=":")
    ax.set_xlabel("top k, as a share of the ranked rows (favourable end first)")
    ax.set_ylabel(f"disadvantaged share ({attribute})")
    ax.legend(loc="lower right", frameon=False, fontsize=5)
    caption = (f"{audit}: the disadvantaged group's ({attribute}) share of the top k of each "
               "ranking, favourable end first, with its simultaneous 95 % band (every k from "
               "k_min at once); the dotted line is its share of the rows.")
    return _save(fig, out, f"{audit}_top_share", caption, audit=audit, kind="top_share")


def _headline(inputs: RankingInputs) -> str:
    r = inputs.ranking
    systems = r[r["row_set"] == "all"]
    first = r.groupby("audit", sort=False)["protected_attribute"].transform("first")
    grid = r[(r["row_set"] == "test") & r["model"].isin(list(FAMILY_CODES))]
    said = []
    for row in systems[systems["protected_attribute"] == first[systems.index]].to_dict(
            "records"):
        fair = "passes" if str(row["fair_passes"]) == "True" else \
            f"fails at the top {int(row['fair_first_fail'])}"
        said.append(f"{row['audit']}'s {row['model']} gives its disadvantaged "
                    f"{row['protected_attribute']} group {row['value']:.2f} [{row['ci_low']:.2f},"
                    f" {row['ci_high']:.2f}] of the advantaged's exposure ({row['verdict']}), "
                    f"FA*IR {fair}")
    gaps = int((grid["verdict"] == "gap").sum())
    failed = int((grid["fair_passes"].astype(str) != "True").sum())
    return ("Ranking view (favourable end first): " + ("; ".join(said) + "; " if said else "")
            + f"the grid's S0-S2 scores show an exposure gap in {gaps} and fail FA*IR in "
              f"{failed} of {len(grid)} row sets x attributes.")


class RankingSection:
    """The ``binary`` kind's part of the report: its ranking view."""

    def load(self, folders: Sequence[Path]) -> RankingInputs | None:
        """The grid runs' ranking tables."""
        return load_rankings(folders)

    def tables(self, inputs: RankingInputs, out: Path) -> tuple[Path, ...]:
        """``ranking_table.md``."""
        return (_write_table(inputs, out),)

    def drawings(self, inputs: RankingInputs, out: Path) -> list[Drawing]:
        """One top-k share figure per audit with a ranking view."""
        return [Drawing(top_share_figure, (inputs, audit), out, audit=audit)
                for audit in inputs.audits]

    def headline(self, inputs: RankingInputs) -> str:
        """One sentence: the deployed systems' exposure and FA*IR, the grid's counts."""
        return _headline(inputs)

    def html(self, inputs: RankingInputs, *, figures: str, fold: Callable[[str, str], str],
             table: Callable[[Any], str]) -> str:
        """The page's ranking section."""
        parts = ["<h2>Ranking view</h2>",
                 "<p>Each score ranks its rows favourable end first: exposure (Singh &amp; "
                 "Joachims 2018; disadvantaged over advantaged, 1 = parity) with its interval "
                 "and permutation test, FA*IR's prefix test at the adjusted alpha (Zehlike et al."
                 " 2017), and the disadvantaged share of the top k with a simultaneous band.</p>",
                 figures]
        parts += [fold(f"{audit}: ranking view", table(ranking_frame(inputs, audit=audit)))
                  for audit in inputs.audits]
        return "".join(parts)


SECTION = RankingSection()
"""The ``binary`` kind's section (:data:`faircode.report.kinds.SECTIONS`)."""
