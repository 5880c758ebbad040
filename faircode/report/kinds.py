"""The report's table of task kinds: each kind's section of the page.

The report's grid view -- ``summary.csv``, the paper tables, the heatmap and per-audit figures,
the page's headline -- reads the folders of every kind that has the grid
(:attr:`faircode.core.kinds.TaskKind.grid`; :func:`faircode.report.inputs.load_results`).  A
kind may add a section of its own (:class:`Section`: its tables, figures, a sentence of the
headline, its part of the page); a kind without the grid must, or its audits would not be
reported.  :data:`SECTIONS` names each kind's section (a kind with nothing of its own:
:data:`GRID_VIEW`; the grid's own is its ranking view, :mod:`faircode.report.ranking_section`),
imported only when a results folder holds a run of that kind.

Design decisions
----------------
* **Keyed by** :attr:`faircode.core.kinds.TaskKind.name`: core names the kinds, this wing
  registers what it draws for each (``tests/test_layout.py`` checks the table covers every
  kind); :func:`faircode.report.build.write_report` never names a kind.
* Sections are in :data:`faircode.core.kinds.TASK_KINDS` order, each over its folders in name
  order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from faircode.core.kinds import TASK_KINDS, TaskKind, kind_of_run, registered
from faircode.core.layout import audit_folders, folder_kind

if TYPE_CHECKING:
    from faircode.report.drawing import Drawing

__all__ = ["GRID_VIEW", "SECTIONS", "GridView", "LoadedSection", "Section", "load_sections",
           "section"]

SECTIONS: dict[str, str] = {
    "binary": "faircode.report.ranking_section:SECTION",
    "text": "faircode.report.text_section:SECTION",
    "regression": "faircode.report.regression_section:SECTION",
    "multiclass": "faircode.report.multiclass_section:SECTION",
}
"""Task kind -> ``"<module>:<attribute>"`` of its :class:`Section`
(:func:`faircode.core.kinds.registered`)."""


class Section(Protocol):
    """A task kind's own part of the report."""

    def load(self, folders: Sequence[Path]) -> Any:
        """The kind's inputs from its results folders (``None``: nothing to show)."""

    def tables(self, inputs: Any, out: Path) -> tuple[Path, ...]:
        """Write the kind's tables into the results folder ``out``; their paths."""

    def drawings(self, inputs: Any, out: Path) -> list[Drawing]:
        """The kind's figures, to be drawn into ``out`` (:mod:`faircode.report.drawing`)."""

    def headline(self, inputs: Any) -> str:
        """The kind's sentence of the page's headline (empty: none)."""

    def html(self, inputs: Any, *, figures: str, fold: Callable[[str, str], str],
             table: Callable[[Any], str]) -> str:
        """The kind's part of the page; ``fold`` and ``table`` are the page's helpers and
        ``figures`` its rendered figures."""


@dataclass(frozen=True, slots=True)
class LoadedSection:
    """A kind's section and the inputs it loaded."""

    kind: TaskKind
    section: Section
    inputs: Any


class GridView:
    """The section of a kind with the grid and nothing of its own: its runs are the grid
    view's (:func:`faircode.report.inputs.load_results`), so it loads nothing here."""

    def load(self, folders: Sequence[Path]) -> None:
        """Nothing: the grid view reads these runs."""
        return None

    def tables(self, inputs: Any, out: Path) -> tuple[Path, ...]:
        """No tables of its own."""
        return ()

    def drawings(self, inputs: Any, out: Path) -> list[Drawing]:
        """No figures of its own."""
        return []

    def headline(self, inputs: Any) -> str:
        """No sentence of its own."""
        return ""

    def html(self, inputs: Any, *, figures: str, fold: Callable[[str, str], str],
             table: Callable[[Any], str]) -> str:
        """No part of the page of its own."""
        return ""


GRID_VIEW = GridView()


def section(kind: TaskKind) -> Section:
    """The section :data:`SECTIONS` registers for ``kind`` (its module imported now)."""
    found: Section = registered(SECTIONS, kind, where="faircode.report.kinds.SECTIONS")
    return found


def _folders_by_kind(results: Path, only: Sequence[str]) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for folder in audit_folders(results):
        kind = kind_of_run(folder_kind(folder))
        if kind is not None and (not only or folder.name in only):
            found.setdefault(kind.name, []).append(folder)
    return found


def load_sections(results: Path, *, only: Sequence[str] = ()) -> tuple[LoadedSection, ...]:
    """Every kind's section with the runs of that kind in ``results`` (``only``: those audits),
    loaded; kinds without a run or without a section are left out."""
    folders = _folders_by_kind(results, only)
    loaded = []
    for kind in TASK_KINDS:
        if kind.name not in folders:
            continue
        shown = section(kind)
        inputs = shown.load(folders[kind.name])
        if inputs is not None:
            loaded.append(LoadedSection(kind, shown, inputs))
    return tuple(loaded)
