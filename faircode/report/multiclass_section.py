"""The ``multiclass`` kind's section of the report: its entry of
:data:`faircode.report.kinds.SECTIONS`.

Gathers the multi-class audits' reading, tables and page section
(:mod:`faircode.report.multiclass`) and its figure -- :func:`class_shares_figure`: per attribute,
each class's share of the disadvantaged and the advantaged group's rows (every row: the recorded
outcome) with Wilson intervals, the class's share of the gap beside its name -- behind the one
shape every kind's section has (:class:`faircode.report.kinds.Section`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from faircode.report.drawing import Drawing
from faircode.report.figures import FigureFile, _save
from faircode.report.multiclass import (
    OBSERVED,
    MulticlassInputs,
    headline_line,
    load_multiclass_results,
    section_html,
    write_multiclass_table,
)
from faircode.report.style import OKABE_ITO, WIDTH

__all__ = ["SECTION", "MulticlassSection", "class_shares_figure"]

_GROUP_COLOURS = {"disadvantaged": OKABE_ITO["vermillion"], "advantaged": OKABE_ITO["blue"]}


def class_shares_figure(inputs: MulticlassInputs, audit: str, out: Path) -> FigureFile | None:
    """Per attribute and class, both groups' shares [Wilson interval] on every row."""
    g = inputs.class_gaps
    part = g[(g["audit"] == audit) & (g["strategy"] == OBSERVED) & (g["row_set"] == "all")]
    if part.empty:
        return None
    attributes = list(dict.fromkeys(part["protected_attribute"].astype(str)))
    fig, axes = plt.subplots(1, len(attributes), figsize=(WIDTH, 1.7), layout="constrained",
                             sharey=True, squeeze=False)
    for ax, attribute in zip(axes[0], attributes, strict=True):
        rows = part[part["protected_attribute"] == attribute]
        y = np.arange(len(rows))[::-1].astype(float)
        for group, shift in (("disadvantaged", 0.12), ("advantaged", -0.12)):
            share = rows[f"share_{group}"].to_numpy(float)
            ax.hlines(y + shift, rows[f"share_{group}_low"], rows[f"share_{group}_high"],
                      color=_GROUP_COLOURS[group], lw=0.8)
            ax.scatter(share, y + shift, s=9, color=_GROUP_COLOURS[group], zorder=3,
                       label=group)
        for height, held in zip(y, rows["share_of_gap"], strict=True):  # its share of the gap
            if held == held:
                ax.annotate(f"{100 * held:.0f} %", (1.28, height), fontsize=5, ha="right",
                            va="center", color="grey")
        ax.set_yticks(y, [str(c) for c in rows["class"]])
        ax.set_xlim(-0.02, 1.3)
        ax.set_xticks([0.0, 0.5, 1.0])
        ax.set_title(attribute, fontsize=7)
    fig.supxlabel("share of the group's rows (right: the class's share of the gap)", fontsize=6)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=2, frameon=False)
    caption = (f"{audit}: each class's share of the disadvantaged and the advantaged group's "
               "rows (every row, the recorded outcome) with 95 % Wilson intervals; at the right "
               "the class's share of the groups' total variation distance.")
    return _save(fig, out, f"{audit}_class_shares", caption, audit=audit, kind="class_shares")


class MulticlassSection:
    """The ``multiclass`` kind's part of the report."""

    def load(self, folders: Sequence[Path]) -> MulticlassInputs | None:
        """The multi-class runs' tables and records."""
        return load_multiclass_results(folders)

    def tables(self, inputs: MulticlassInputs, out: Path) -> tuple[Path, ...]:
        """``multiclass_table.md``."""
        return (write_multiclass_table(inputs, out),)

    def drawings(self, inputs: MulticlassInputs, out: Path) -> list[Drawing]:
        """One class-shares figure per multi-class audit."""
        return [Drawing(class_shares_figure, (inputs, audit), out) for audit in inputs.runs]

    def headline(self, inputs: MulticlassInputs) -> str:
        """One sentence per multi-class audit."""
        return headline_line(inputs)

    def html(self, inputs: MulticlassInputs, *, figures: str, fold: Callable[[str, str], str],
             table: Callable[[Any], str]) -> str:
        """The page's multi-class section."""
        return section_html(inputs, figures=figures, fold=fold, table=table)


SECTION = MulticlassSection()
"""The ``multiclass`` kind's section."""
