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


def _claimed_results(root: Path) -> Path:
    """Two hand-made audits whose fairness.csv carries the verdicts the evaluate step writes
    (the claims' family of demographic parity, min_margin), and run.json's claims metric."""
    import json

    from test_report import record_files

    from faircode.core.config import VerdictsConfig
    from faircode.evaluate.claims import gap_claims_table
    from faircode.stats.metrics import INTERSECTIONAL_COLUMNS

    for audit in ("audit_a", "audit_b"):
        folder = write_audit_folder(root, audit, ("sex",))
        fairness = pd.read_csv(folder / "fairness.csv")
        claimed, _ = gap_claims_table(fairness, pd.DataFrame(columns=list(
            INTERSECTIONAL_COLUMNS)), combined=None, confidence=0.95, alpha=0.05,
            verdicts=VerdictsConfig())
        claimed.to_csv(folder / "fairness.csv", index=False)
        run = json.loads((folder / "run.json").read_text())
        run["config"]["verdict_claims"] = "demographic_parity_diff"
        (folder / "run.json").write_text(json.dumps(run))
        record_files(folder)
    return root


def test_the_declared_margins_column_is_the_headlines_count(tmp_path: Path) -> None:
    """Re-decided at ±0.05 the claims give each strategy the headline's parity count (its
    sentence's audits, its family); a narrower margin shows parity in no more audits."""
    from faircode.report.build import _context
    from faircode.report.headline import findings
    from faircode.report.inputs import load_results
    from faircode.report.sensitivity import margin_table

    root = _claimed_results(tmp_path / "results")
    ctx = _context(load_results(root), metric="demographic_parity_diff",
                   models=("logistic_regression", "random_forest", "gradient_boosting"),
                   alpha=0.05, confidence=0.95)
    table = margin_table(ctx)
    assert table is not None and table.columns == ("\u00b10.02", "\u00b10.05", "\u00b10.1")
    items = findings(ctx)
    for (code,), cells in table.sections[0][1]:
        found = [s for f in items for s in (f.baseline, *f.strategies)
                 if s.code == code and (f.baseline.gaps > 0) != (code == "S0")]
        assert cells[1].text == f"{sum(s.claimed for s in found)} of {len(found)}", code
        counts = [int(c.text.split()[0]) for c in cells]
        assert counts == sorted(counts), code
    s4 = dict((k[0], c) for k, c in table.sections[0][1])["S4"]
    # the fixture's S4 (-0.02, -0.01, 0.00 ± 0.03): its largest family p is 0.025, so both
    # audits' claims hold at ±0.05 in their sentence's family of 2; never at ±0.02
    assert [c.text for c in s4] == ["0 of 2", "2 of 2", "2 of 2"]
