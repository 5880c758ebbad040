"""Tests of faircode.report.figure_reuse: a per-audit figure is carried over only when its
inputs are byte for byte those of the previous report."""

from __future__ import annotations

from pathlib import Path

import pytest

from faircode.report.drawing import Drawing
from faircode.report.drawing import draw as draw_all
from faircode.report.figure_reuse import RECORD, FigureReuse
from faircode.report.figures import FigureFile

SETTINGS = {"metric": "demographic_parity_diff", "models": ("logistic_regression",),
            "alpha": 0.05, "confidence": 0.95}


class Draw:
    """A figure function that writes two small files and counts its calls."""

    __name__ = "by_strategy"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, ctx: object, audit: str, out: Path) -> FigureFile:
        self.calls += 1
        out.mkdir(parents=True, exist_ok=True)
        png, pdf = out / f"{audit}_fig.png", out / f"{audit}_fig.pdf"
        png.write_bytes(b"png %d" % self.calls)
        pdf.write_bytes(b"pdf")
        return FigureFile(f"{audit}_fig", png, pdf, "a caption")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "fairness.csv").write_text("value\n0.1\n")
    return tmp_path


def report(results: Path, draw: Draw, **settings: object) -> FigureFile:
    """One report's figure of audit ``a``: figures/ set aside, drawn or carried, recorded."""
    figures, previous = results / "figures", results / ".previous"
    if figures.is_dir():
        figures.rename(previous)
    reuse = FigureReuse(previous, results=results, settings={**SETTINGS, **settings},
                        make=FigureFile)
    (figure,) = draw_all([Drawing(draw, (None, "a"), figures, "a")], reuse=reuse)
    reuse.write(figures)
    for old in previous.glob("*") if previous.is_dir() else ():
        old.unlink()
    if previous.is_dir():
        previous.rmdir()
    return figure


def test_unchanged_inputs_carry_the_previous_files_over(results: Path) -> None:
    """A second report of the same tables and settings draws nothing and keeps the bytes."""
    draw = Draw()
    first = report(results, draw)
    second = report(results, draw)
    assert draw.calls == 1
    assert second.png.read_bytes() == b"png 1" and second.caption == first.caption
    assert (results / "figures" / RECORD).is_file()


@pytest.mark.parametrize("change", ["table", "setting", "record"])
def test_a_changed_input_draws_again(results: Path, change: str) -> None:
    """A changed byte of the audit's CSV, a changed setting or a lost record is a new drawing."""
    draw = Draw()
    report(results, draw)
    settings: dict[str, object] = {}
    if change == "table":
        (results / "a" / "fairness.csv").write_text("value\n0.2\n")
    elif change == "setting":
        settings = {"confidence": 0.9}
    else:
        (results / "figures" / RECORD).unlink()
    assert report(results, draw, **settings).png.read_bytes() == b"png 2"
    assert draw.calls == 2
