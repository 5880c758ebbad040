"""The encoding sensitivity in one line: do the headline's claims depend on one-hot columns?

``bench/encoding_sensitivity.py`` runs the audits under ``models.encoding: label`` and
``onehot`` and writes ``<results>/encoding_sensitivity.csv`` (one row per audit x claim:
``label``, ``onehot``, ``changed``, ``seeds``); :func:`encoding_line` turns it into the report's
sentence and :func:`sensitivity_html` into its paragraph.  Without the file the report says
nothing about it (the table is a benchmark's output, committed beside the results, not a stage's).
"""

from __future__ import annotations

import html

import pandas as pd

__all__ = ["encoding_line", "sensitivity_html"]


def _changed(frame: pd.DataFrame) -> pd.Series:
    """Whether each claim changed (the CSV holds True/False, and nothing for a plain number)."""
    return frame["changed"].map(lambda v: str(v).strip().lower() in ("true", "1"))


def encoding_line(frame: pd.DataFrame) -> str:
    """One sentence: how many headline claims change under one-hot encoding, and which."""
    if frame.empty:
        return ""
    claims = frame[frame["changed"].map(lambda v: str(v).strip() not in ("", "nan"))]
    moved = claims[_changed(claims)]
    seeds = sorted({int(s) for s in frame["seeds"]}) if "seeds" in frame else [1]
    audits = frame["audit"].nunique()
    head = (f"Encoding sensitivity (bench/encoding_sensitivity.py, K = "
            f"{'/'.join(map(str, seeds))}, {audits} audit{'s' if audits != 1 else ''}): with "
            "one-hot nominal columns for logistic regression instead of the specification's "
            "integer codes, ")
    if moved.empty:
        return head + f"none of the {len(claims)} headline claims changes."
    which = "; ".join(f"{r.audit} {r.claim}: {r.label} -> {r.onehot}"
                      for r in moved.itertuples())
    return head + f"{len(moved)} of {len(claims)} headline claims change ({which})."


def sensitivity_html(frame: pd.DataFrame) -> str:
    """The line as an HTML paragraph (empty without a table)."""
    line = encoding_line(frame)
    return f'<p class="note" id="encoding-sensitivity">{html.escape(line)}</p>' if line else ""
