"""Tests of the ranking view of a scored audit (faircode.evaluate.ranking): the COMPAS deciles of
compas_two_years against counts from the raw file, the row sets it ranks, and its report."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.config import DegenerateConfig, StatsConfig
from faircode.core.layout import RANKING_TABLE
from faircode.evaluate.deployed import score_system_all_rows, score_system_test_rows
from faircode.evaluate.ranking import RANKING_COLUMNS, TOPK_COLUMNS, ranked_cells
from faircode.evaluate.score import CellResult
from faircode.record.runs import grid_children
from faircode.report.ranking_section import SECTION, RankingInputs

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "audits" / "compas_two_years" / "audit.yaml"
STATS = StatsConfig(n_resamples=60, n_permutations=60)


@pytest.fixture(scope="module")
def prepared(mirror_extra: Path) -> PreparedAudit:
    return prepare(load_audit(load_manifest(MANIFEST), path=mirror_extra / "compas_two_years"
                              / "compas-scores-two-years.csv"))


@pytest.fixture(scope="module")
def raw(mirror_extra: Path) -> pd.DataFrame:
    """ProPublica's file, the audit's rows (African-American and Caucasian)."""
    frame = pd.read_csv(mirror_extra / "compas_two_years" / "compas-scores-two-years.csv",
                        usecols=["race", "decile_score.1", "score_text"])
    return frame[frame["race"].isin(["African-American", "Caucasian"])]


def test_the_deployed_deciles_on_every_row(prepared: PreparedAudit, raw: pd.DataFrame) -> None:
    """Ranked low risk first (re-arrest is the unfavourable label 1), the reported k are the
    deciles' cuts and each share of the top k is the raw file's count of African-American
    defendants at or below the decile; FA*IR tests the cuts within the Low scores."""
    tables = score_system_all_rows(prepared, stats=STATS, degenerate=DegenerateConfig())
    assert tables is not None and tables.ranking is not None and tables.ranking_topk is not None
    assert tuple(tables.ranking.columns) == RANKING_COLUMNS
    assert tuple(tables.ranking_topk.columns) == TOPK_COLUMNS
    race = tables.ranking_topk[tables.ranking_topk["protected_attribute"] == "race"]
    cumulative = raw.groupby("decile_score.1")["race"].agg(
        n="size", black=lambda r: (r == "African-American").sum()).cumsum()
    assert race["k"].tolist() == cumulative["n"].tolist()
    assert race["share_disadvantaged"].tolist() == pytest.approx(
        (cumulative["black"] / cumulative["n"]).tolist())
    row = tables.ranking.set_index("protected_attribute").loc["race"]
    assert row["order"] == "score ascending" and row["n"] == len(raw)
    low = int((raw["score_text"] == "Low").sum())
    assert row["fair_k"] == low and row["fair_tested"] == 4  # deciles 1-4 are Low
    assert row["value"] < 1 and row["ci_low"] <= row["value"] <= row["ci_high"]
    assert row["verdict"] == "gap"


def test_exposure_of_tied_deciles_by_hand(prepared: PreparedAudit, raw: pd.DataFrame) -> None:
    """Each decile's rows share its positions' mean 1/log2(1 + position): the groups' mean
    exposures and their ratio, by hand."""
    tables = score_system_all_rows(prepared, stats=STATS, degenerate=DegenerateConfig())
    assert tables is not None and tables.ranking is not None
    counts = raw.groupby("decile_score.1")["race"].agg(
        n="size", black=lambda r: (r == "African-American").sum())
    v = 1.0 / np.log2(np.arange(2, len(raw) + 2))
    ends = counts["n"].cumsum().to_numpy()
    means = [v[e - n:e].mean() for e, n in zip(ends, counts["n"], strict=True)]
    black = sum(m * b for m, b in zip(means, counts["black"], strict=True))
    white = sum(m * (n - b) for m, n, b in zip(means, counts["n"], counts["black"],
                                               strict=True))
    expected = (black / counts["black"].sum()) / (white / (counts["n"] - counts["black"]).sum())
    row = tables.ranking.set_index("protected_attribute").loc["race"]
    assert row["value"] == pytest.approx(expected)


def test_only_scored_row_sets_are_ranked(prepared: PreparedAudit) -> None:
    """A grid cell of S3 or S4 (a randomised classifier) is not ranked; a deployed system with
    a score and S0-S2 cells are."""
    system = score_system_test_rows(prepared, stats=STATS, degenerate=DegenerateConfig())
    assert system is not None and system.decided is not None
    fake = [CellResult("post_processing", "logistic_regression", decided=system.decided),
            CellResult("baseline", "logistic_regression", decided=system.decided), system]
    assert [(r.strategy, r.model) for r in ranked_cells(fake)] == [
        ("baseline", "logistic_regression"), ("deployed", "compas_tool")]


def test_the_report_section(prepared: PreparedAudit, tmp_path: Path) -> None:
    """The section's table names FA*IR's first failing prefix, its headline the deployed
    system's exposure ratio; its figure is drawn."""
    tables = score_system_all_rows(prepared, stats=STATS, degenerate=DegenerateConfig())
    assert tables is not None and tables.ranking is not None and tables.ranking_topk is not None
    inputs = RankingInputs(tables.ranking, tables.ranking_topk, ("compas_two_years",))
    (path,) = SECTION.tables(inputs, tmp_path)
    assert path.name == RANKING_TABLE and "exposure ratio" in path.read_text()
    sentence = SECTION.headline(inputs)
    assert sentence.startswith("Ranking view") and "compas_two_years's compas_tool" in sentence
    drawn = [d() for d in SECTION.drawings(inputs, tmp_path)]
    assert drawn[0] is not None and drawn[0].png.is_file()
    assert not math.isnan(float(tables.ranking["band_critical"].iloc[0]))


def test_faircode_audit_ranks_by_a_rank_column(prepared: PreparedAudit, mirror_extra: Path,
                                               tmp_path: Path) -> None:
    """`faircode audit --rank` (the decile as a rank: 1 = the top, the favourable end) on every
    row gives the deployed system's own ranking view, number for number, and its MLflow child
    carries it."""
    from faircode.pipeline.cli import main

    raw = pd.read_csv(mirror_extra / "compas_two_years" / "compas-scores-two-years.csv",
                      usecols=["id", "race", "decile_score.1", "score_text"])
    raw = raw[raw["race"].isin(["African-American", "Caucasian"])]
    predictions = tmp_path / "tool.csv"
    pd.DataFrame({"id": raw["id"], "flag": raw["score_text"].isin(["Medium", "High"]),
                  "rank": raw["decile_score.1"]}).to_csv(predictions, index=False)
    code = main(["audit", "compas_two_years", "--audits", str(REPO / "audits"),
                 "--predictions", str(predictions), "--key", "id", "--decision", "flag",
                 "--rank", "rank", "--rows", "all", "--name", "compas_tool", "--n-resamples",
                 "60", "--n-permutations", "60", "--out", str(tmp_path / "out")])
    assert code == 0
    mine = pd.read_csv(tmp_path / "out" / "compas_two_years" / "ranking.csv")
    tables = score_system_all_rows(prepared, stats=STATS, degenerate=DegenerateConfig())
    assert tables is not None and tables.ranking is not None
    columns = ["value", "ci_low", "ci_high", "p_value", "fair_k", "fair_first_fail",
               "band_critical"]
    pd.testing.assert_frame_equal(mine[columns], tables.ranking[columns], check_dtype=False)
    children = grid_children(tmp_path / "out" / "compas_two_years")  # MLflow: the kind's units
    race = next(c for c in children if c.name.endswith("compas_tool race"))
    assert race.metrics["expo"] == pytest.approx(float(mine.loc[0, "value"]))
    assert {"expo.lo", "expo.hi", "expo.q_audit", "expo.fair_first_fail"} <= set(race.metrics)
    assert race.tags["ranking.exposure_ratio.verdict"] == mine.loc[0, "verdict"]


def test_rank_is_refused_for_a_decisions_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`--rank` ranks a benchmark audit's rows only: with a decisions file it is one line naming
    the flag, exit 2, nothing written."""
    from faircode.pipeline.cli import main

    file = tmp_path / "own.csv"
    pd.DataFrame({"g": [0, 1], "y": [0, 1], "d": [1, 0], "r": [1, 2]}).to_csv(file, index=False)
    code = main(["audit", str(file), "--group", "g", "--label", "y", "--decision", "d",
                 "--rank", "r", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--rank" in err and "\n" not in err
    assert not (tmp_path / "out").exists()
