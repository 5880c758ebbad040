"""Drawing the report's figures, several at a time.

Drawing is most of the report's time (PNG at 300 dpi and a PDF with embedded font subsets: about
a second a figure), and a sweep value redraws the figures of every audit whose tables moved.
Each figure is a :class:`Drawing` -- the function that draws it, its arguments and the folder it
writes into -- and :func:`draw` runs a list of them: a per-audit figure whose inputs did not
change is carried over first (:mod:`faircode.report.figure_reuse`), the rest are drawn, in this
process or on ``workers`` processes, and come back in the list's order.

Design decisions
----------------
* **Forked workers, one figure per task.**  A worker inherits the report's context (every
  results table) from the fork instead of unpickling it for each figure; only the written
  figure's record (names, paths, caption) comes back.  The house style
  (:data:`faircode.report.style.RC`) is set around each drawing in whichever process draws it.
* **The same bytes however many workers**: a figure's files depend only on what it draws
  (matplotlib's Agg and PDF backends, no date or software tag), so the worker count is not an
  input of the report (tests/test_report.py checks one worker against two).
* Where the platform cannot fork, figures are drawn in this process.
* :func:`on_workers` is the one pool: the report page's embedded (quantised) images are encoded
  on it too (:func:`faircode.report.html.write_html`: about 0.2 s a figure).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

from faircode.report.figure_reuse import FigureReuse
from faircode.report.style import RC

__all__ = ["Drawing", "draw", "on_workers"]


@dataclass(frozen=True, slots=True)
class Drawing:
    """One figure to draw: ``function(*args, out)``, which returns its record (or ``None``
    when it has nothing to draw).  ``audit`` set: a per-audit figure the report may carry over
    from its previous one when that audit's tables did not change."""

    function: Callable[..., Any]
    args: tuple[Any, ...]
    out: Path
    audit: str = ""

    @property
    def slot(self) -> str:
        """The reuse slot (``by_strategy|compas``); empty for a figure across audits."""
        return f"{getattr(self.function, '__name__', 'figure')}|{self.audit}" if self.audit \
            else ""

    def __call__(self) -> Any:
        with matplotlib.rc_context(RC):  # type: ignore[arg-type]  # keys are valid rcParams
            return self.function(*self.args, self.out)


_IDLE: tuple[Callable[[Any], Any], Sequence[Any]] = (lambda item: item, ())
_PENDING = _IDLE
"""The function and items of the pool being run; forked workers inherit them (:func:`_one`)."""


def _one(index: int) -> Any:
    function, items = _PENDING
    return function(items[index])


def on_workers(function: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    """``function(item)`` for every item, in order, on up to ``workers`` forked processes (only
    an index goes to a worker and only the result comes back; in this process where the
    platform cannot fork or one worker is enough)."""
    global _PENDING
    workers = min(workers, len(items))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [function(item) for item in items]
    _PENDING = (function, items)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_one, range(len(items))))
    finally:
        _PENDING = _IDLE


def draw(drawings: Sequence[Drawing], *, reuse: FigureReuse | None = None,
         workers: int = 1) -> tuple[Any, ...]:
    """Carry over or draw every drawing; their records, aligned with ``drawings`` (``None``
    where a drawing had nothing to draw)."""
    done: list[Any] = [None] * len(drawings)
    todo: list[int] = []
    keys: dict[int, str] = {}
    for i, drawing in enumerate(drawings):
        if reuse is not None and drawing.slot:
            keys[i], carried = reuse.lookup(drawing.slot, drawing.audit, drawing.out)
            if carried is not None:
                done[i] = carried
                continue
        todo.append(i)
    for i, record in zip(todo, on_workers(lambda i: drawings[i](), todo, workers), strict=True):
        done[i] = record
    if reuse is not None:
        for i in todo:
            if i in keys:
                reuse.record(drawings[i].slot, keys[i], done[i])
    return tuple(done)
