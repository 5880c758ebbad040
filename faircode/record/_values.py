"""The two reads every kind's MLflow children share: a results table (one line when it cannot
be read) and a value as a finite number (``None`` for a missing, non-numeric or infinite one,
which is never logged)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from faircode.record.runs import ResultsError

__all__ = ["finite_number", "read_table"]


def read_table(path: Path, what: str) -> pd.DataFrame:
    """``path`` as a frame; else one :class:`ResultsError` line naming it and ``what`` (``a
    text audit's``)."""
    try:
        return pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: expected {what} table, got {type(exc).__name__}: "
                           f"{exc}") from None


def finite_number(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else ``None``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
