"""The report's visual vocabulary: one colour per strategy, one marker per model family.

Every figure (:mod:`faircode.report.figures`, :mod:`faircode.report.threshold_curves`,
:mod:`faircode.report.calibration_figure`) and the page's legend (:mod:`faircode.report.html`)
read these tables, so a colour means the same strategy and a marker the same family everywhere
on the page.  The DVC plots (dvc.yaml, the evaluate stage) are drawn by DVC's own templates and
do not read them.

Design decisions
----------------
* **Colour = strategy, marker (and line style) = model family**, never the other way round in
  any figure: the strategies are what the benchmark compares, so they get the channel that reads
  at a glance; the families get a second, shape channel that survives a grey-scale print.
* Okabe-Ito colours (distinguishable under the common colour-vision deficiencies): each
  strategy's ``colour`` in :data:`faircode.core.cells.STRATEGY_TABLE` (S0 black, S1 orange,
  S2 sky blue, S3 bluish green, S4 vermillion, S5 blue), a deployed system reddish purple;
  the diverging heatmap (ColorBrewer ``PuOr``) encodes a value, not a strategy.
* Drawn at print size (3.3 in wide, 7 pt text): :data:`WIDTH` and :data:`RC`.
* Matplotlib-free, so the HTML page can name the styles without importing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faircode.core.cells import FAMILY_CODES, STRATEGY_TABLE, ModelFamily

__all__ = ["FAMILY_GLYPHS", "OKABE_ITO", "RC", "SHORT", "STRATEGY_COLOUR", "WIDTH",
           "family_line", "family_marker", "strategy_colour"]

OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky_blue": "#56B4E9",
             "green": "#009E73", "yellow": "#F0E442", "blue": "#0072B2",
             "vermillion": "#D55E00", "purple": "#CC79A7"}
STRATEGY_COLOUR: dict[str, str] = {**{s.strategy: s.colour for s in STRATEGY_TABLE},
                                   "deployed": OKABE_ITO["purple"]}
"""Colour of each strategy (and of a deployed system) in every figure and legend."""
_FAMILY: dict[str, tuple[str, str]] = {
    ModelFamily.LOGISTIC_REGRESSION: ("o", "-"),
    ModelFamily.RANDOM_FOREST: ("s", "--"),
    ModelFamily.GRADIENT_BOOSTING: ("^", ":"),
}
_EXTRA = [("D", "-."), ("v", (0, (5, 1))), ("P", (0, (1, 1)))]
FAMILY_GLYPHS = {"o": "\u25cf", "s": "\u25a0", "^": "\u25b2", "D": "\u25c6", "v": "\u25bc",
                 "P": "\u271a", "X": "\u2716"}
"""The text glyph of each marker (the page's legend)."""
SHORT: dict[str, str] = {str(k): v for k, v in FAMILY_CODES.items()}
"""``LR``, ``RF``, ``GB``."""

WIDTH = 3.3
RC: dict[str, Any] = {
    "font.size": 7, "axes.labelsize": 7, "axes.titlesize": 7, "xtick.labelsize": 6.5,
    "ytick.labelsize": 6.5, "legend.fontsize": 6.5, "lines.linewidth": 0.8,
    "lines.markersize": 3.5, "axes.linewidth": 0.6, "xtick.major.width": 0.6,
    "ytick.major.width": 0.6, "errorbar.capsize": 1.5, "font.family": "DejaVu Sans",
    "pdf.fonttype": 42, "svg.hashsalt": "faircode", "axes.spines.top": False,
    "axes.spines.right": False}


def strategy_colour(strategy: str) -> str:
    """The colour of a strategy (a name, or ``deployed``); a grey for any other name."""
    return STRATEGY_COLOUR.get(strategy, "#4D4D4D")


def _family(model: str, models: Sequence[str]) -> tuple[str, Any]:
    if model in _FAMILY:
        return _FAMILY[model]
    extra = [m for m in models if m not in _FAMILY]
    return _EXTRA[extra.index(model) % len(_EXTRA)] if model in extra else _EXTRA[0]


def family_marker(model: str, models: Sequence[str]) -> str:
    """The marker of a model family (extra families get spare markers in order)."""
    return _family(model, models)[0]


def family_line(model: str, models: Sequence[str]) -> Any:
    """The line style of a model family (curves)."""
    return _family(model, models)[1]
