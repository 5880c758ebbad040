"""The ``text`` kind's section of the report: its entry of :data:`faircode.report.kinds.SECTIONS`.

Gathers the text audits' reading, tables and page section (:mod:`faircode.report.text`) and
figures (:mod:`faircode.report.text_figures`) behind the one shape every kind's section has
(:class:`faircode.report.kinds.Section`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from faircode.report.drawing import Drawing
from faircode.report.text import (
    TextInputs,
    headline_line,
    load_text_results,
    section_html,
    write_text_table,
)
from faircode.report.text_figures import text_drawings

__all__ = ["SECTION", "TextSection"]


class TextSection:
    """The ``text`` kind's part of the report."""

    def load(self, folders: Sequence[Path]) -> TextInputs | None:
        """The text runs' tables and records (:func:`~faircode.report.text.load_text_results`)."""
        return load_text_results(folders)

    def tables(self, inputs: TextInputs, out: Path) -> tuple[Path, ...]:
        """``text_table.md`` (:func:`~faircode.report.text.write_text_table`)."""
        return (write_text_table(inputs, out),)

    def drawings(self, inputs: TextInputs, out: Path) -> list[Drawing]:
        """Both figures of every text audit (:func:`~faircode.report.text_figures.
        text_drawings`)."""
        return text_drawings(inputs, out)

    def headline(self, inputs: TextInputs) -> str:
        """One sentence per text audit (:func:`~faircode.report.text.headline_line`)."""
        return headline_line(inputs)

    def html(self, inputs: TextInputs, *, figures: str, fold: Callable[[str, str], str],
             table: Callable[[Any], str]) -> str:
        """The page's text-audit section (:func:`~faircode.report.text.section_html`)."""
        return section_html(inputs, figures=figures, fold=fold, table=table)


SECTION = TextSection()
"""The ``text`` kind's section."""
