"""The main job at full size: every mirrored audit, default B = P = 2000 (marked slow)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import MIRRORED, MIRRORED_EXTRA

from faircode.core.cells import grid_cells
from faircode.pipeline.cli import main
from faircode.stats.metrics import FAIRNESS_METRICS


@pytest.mark.slow
@pytest.mark.integration
def test_full_grid_on_every_mirrored_audit(
    audit_repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
) -> None:
    """`faircode run` with defaults writes complete tables for the fifteen audits, skips the
    two (a deployed system's rows beside the grid are not counted)."""
    out = tmp_path / "results"
    assert main(["run", "--audits", str(audit_repo.audits), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("dataset unavailable") == 2
    for name in (*MIRRORED, *MIRRORED_EXTRA):
        manifest = audit_repo.manifests[name]
        fairness = pd.read_csv(out / name / "fairness.csv")
        fairness = fairness[fairness["strategy"] != "deployed"]
        n_attr = len(manifest.protected_attributes)
        assert len(fairness) == len(grid_cells()) * n_attr * len(FAIRNESS_METRICS)
        defined = fairness["value"].notna()
        p = fairness["p_value"][defined]
        assert ((p >= 1 / 2001) & (p <= 1)).all()  # P = 2000: p is never below 1 / (1 + P)
        assert fairness["p_value"][~defined].isna().all()
        inter = pd.read_csv(out / name / "intersectional.csv")
        inter = inter[inter["strategy"] != "deployed"]
        assert len(inter) == len(grid_cells()) * n_attr * (n_attr - 1) // 2
    cf = pd.read_csv(out / "compas" / "counterfactual.csv")
    unaware = cf[(cf["kind"] == "explicit") & cf["strategy"].isin(
        ["unawareness", "unawareness_proxy_removal", "in_processing"])]
    assert (unaware["flip_rate"] == 0).all() and (unaware["n_changed"] > 0).all()
