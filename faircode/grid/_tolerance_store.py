"""The tolerance curves of a predictions store: ``tolerances.parquet`` and the cells' fields.

A cell with a tolerance curve (S5, :mod:`faircode.grid.relaxed`) has its test decisions at every
tolerance; :mod:`faircode.grid.predictions` writes them here beside its own files (the layout is
its module docstring's), only when some cell has one, so a store without S5 is what it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Curves", "curve_fields", "load_curves", "save_curves"]


def save_curves(cells: Sequence[tuple[int, Any, np.ndarray]], path: Path) -> None:
    """Write ``path`` (``tolerances.parquet``) when a cell has a tolerance curve: ``cells`` are
    ``(replicate, CellPredictions, its test rows)``, in store order."""
    frames = []
    for replicate, cell, rows in cells:
        for k, (tolerance, decision) in enumerate(zip(cell.tolerances, cell.curve_decision,
                                                      strict=True)):
            frames.append(pd.DataFrame({
                "replicate": np.int64(replicate), "strategy": cell.strategy.value,
                "model": cell.family.value, "point": np.int64(k), "tolerance": tolerance,
                "row": rows.astype(np.int64), "decision": np.asarray(decision, dtype=np.int8)}))
    if frames:
        pd.concat(frames, ignore_index=True).to_parquet(path, index=False)
    else:  # a store re-written without a curve keeps no earlier one
        path.unlink(missing_ok=True)


Curves = dict[tuple[int, str, str], tuple[np.ndarray, ...]]


def load_curves(path: Path) -> Curves:
    """``(replicate, strategy, model) -> every point's decisions`` of ``path`` ({} without
    it)."""
    if not path.is_file():
        return {}
    out: dict[tuple[int, str, str], list[np.ndarray]] = {}
    frame = pd.read_parquet(path)
    for (k, s, m, _), part in frame.groupby(["replicate", "strategy", "model", "point"],
                                            sort=True):
        out.setdefault((int(k), str(s), str(m)), []).append(  # type: ignore[call-overload]
            part["decision"].to_numpy(dtype=np.int8))
    return {key: tuple(value) for key, value in out.items()}


def curve_fields(entry: dict[str, Any], curves: Curves, replicate: int) -> dict[str, Any]:
    """The violation and curve fields of a cells.json entry, its decisions from ``curves``."""
    tolerances = tuple(float(t) for t in entry.get("tolerances", ()))
    return {"violations": tuple(float(v) for v in entry.get("violations", ())),
            "tolerances": tolerances, "base": str(entry.get("base", "")),
            "curve_decision": curves.get((replicate, entry["strategy"], entry["model"]), ())
            if tolerances else ()}
