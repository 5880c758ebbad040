"""Tests of faircode.report.sensitivity: the encoding sensitivity's one line in the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from test_report import write_audit_folder

from faircode.report.build import write_report
from faircode.report.sensitivity import encoding_line


def _table(changed: tuple[object, ...]) -> pd.DataFrame:
    claims = ("S0 gap", "S3 reduces", "LR S0 accuracy")
    return pd.DataFrame({"audit": "audit_a", "attribute": "sex", "claim": claims,
                         "label": ["1 of 3 (LR gap)", "2 of 3 (LR reduced)", "0.827"],
                         "onehot": ["1 of 3 (LR gap)", "3 of 3 (LR reduced)", "0.855"],
                         "changed": changed, "seeds": 1})


def test_the_line_counts_and_names_the_claims_that_change() -> None:
    """Two claims compared, one changed: the line says 1 of 2 and names it with both values;
    the accuracy row (no verdict) is not a claim."""
    line = encoding_line(_table((False, True, "")))
    assert "K = 1, 1 audit)" in line
    assert line.endswith("1 of 2 headline claims change (audit_a S3 reduces: 2 of 3 (LR "
                         "reduced) -> 3 of 3 (LR reduced)).")


def test_no_change_is_said_as_such() -> None:
    """Nothing changed: "none of the 2 headline claims changes"."""
    assert encoding_line(_table((False, False, ""))).endswith(
        "none of the 2 headline claims changes.")


def test_the_report_shows_the_line_when_the_table_is_there(tmp_path: Path) -> None:
    """results/encoding_sensitivity.csv present: report.html carries the line; absent: not."""
    root = tmp_path / "results"
    write_audit_folder(root, "audit_a", ("sex",))
    write_report(root)
    assert 'id="encoding-sensitivity"' not in (root / "report.html").read_text()
    _table((False, True, "")).to_csv(root / "encoding_sensitivity.csv", index=False)
    write_report(root)
    assert "1 of 2 headline claims change" in (root / "report.html").read_text()
