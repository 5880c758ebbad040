"""Tests of faircode.evaluate.deployed: a deployed system's and an external model's audit.

The deployed COMPAS tool of ``compas_two_years`` is scored on every row (ProPublica's truth
tables), beside the grid on the test rows, and through the predictions-file and array paths,
which must give the manifest path's tables exactly.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from faircode.audit.data import AuditData, load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import PreparedAudit, prepare
from faircode.core.config import BenchmarkConfig, DegenerateConfig, StatsConfig
from faircode.core.errors import ConfigError, FaircodeError
from faircode.evaluate.deployed import score_given, score_system_all_rows, score_system_test_rows
from faircode.pipeline.cli import main
from faircode.pipeline.run import audit_decisions

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "audits" / "compas_two_years" / "audit.yaml"
STATS = StatsConfig(n_resamples=50, n_permutations=50)
DEGENERATE = DegenerateConfig()


@pytest.fixture(scope="module")
def raw_file(mirror_extra: Path) -> Path:
    return mirror_extra / "compas_two_years" / "compas-scores-two-years.csv"


@pytest.fixture(scope="module")
def audit(raw_file: Path) -> AuditData:
    """The compas_two_years audit, loaded with its join key ``id``."""
    return load_audit(load_manifest(MANIFEST), path=raw_file, key="id")


@pytest.fixture(scope="module")
def prepared(audit: AuditData) -> PreparedAudit:
    return prepare(audit)


def _counts(groups: pd.DataFrame, attribute: str) -> dict[str, tuple[int, ...]]:
    rows = groups[(groups["protected_attribute"] == attribute) & (groups["metric"] == "fpr")]
    return {r.group: (r.TN, r.FP, r.FN, r.TP) for r in rows.itertuples()}


def test_all_rows_reproduce_propublica_truth_tables(prepared: PreparedAudit) -> None:
    """On every row the tool's per-group table is ProPublica's Black/White tables, count for
    count, with its published FPR and FNR."""
    results = score_system_all_rows(prepared, stats=STATS, degenerate=DEGENERATE)
    assert results is not None
    groups = results.groups
    assert _counts(groups, "race") == {"African-American": (990, 805, 532, 1369),
                                       "Caucasian": (1139, 349, 461, 505)}
    rate = groups.set_index(["protected_attribute", "group", "metric"])["value"]
    assert rate["race", "African-American", "fpr"] == pytest.approx(805 / 1795)
    assert rate["race", "Caucasian", "fnr"] == pytest.approx(461 / 966)
    assert set(results.fairness["strategy"]) == {"deployed"}
    assert set(results.calibration_gap["protected_attribute"]) == {"race", "sex", "age"}


def test_test_rows_are_one_more_row_set_of_the_grid(prepared: PreparedAudit) -> None:
    """On the test rows the system is scored on exactly the grid's test people, one row per
    fairness metric and attribute, with its decile score's calibration."""
    result = score_system_test_rows(prepared, stats=STATS, degenerate=DEGENERATE)
    assert result is not None
    fairness = pd.DataFrame(result.fairness.records())
    assert len(fairness) == 8 * 3 and set(fairness["model"]) == {"compas_tool"}
    n = fairness.loc[fairness["metric"] == "demographic_parity_diff", ["n_disadvantaged",
                                                                     "n_advantaged"]].sum(axis=1)
    assert (n == len(prepared.test_index)).all()
    calibration = pd.DataFrame(result.calibration.records())
    assert set(calibration["bin"].astype(str)) == {str(k) for k in range(1, 11)}


def test_predictions_file_equals_the_manifest_system(
    prepared: PreparedAudit, raw_file: Path, tmp_path: Path, audit_repo: Any
) -> None:
    """The tool's decisions in a shuffled predictions file, joined on ``id`` and audited on
    every row (``--rows all``), give the manifest path's tables value for value."""
    raw = pd.read_csv(raw_file, usecols=["id", "score_text", "decile_score"])
    file = tmp_path / "tool.csv"
    raw.assign(flag=(raw["score_text"] != "Low").astype(int), risk=raw["decile_score"]).sample(
        frac=1.0, random_state=3).loc[:, ["id", "flag", "risk"]].to_csv(file, index=False)
    out = tmp_path / "external"
    code = main(["audit", "compas_two_years", "--predictions", str(file), "--key", "id",
                 "--decision", "flag", "--score", "risk", "--scale", "ordinal",
                 "--name", "compas_tool", "--out", str(out), "--n-resamples", "50",
                 "--n-permutations", "50", "--audits", str(audit_repo.audits), "--rows", "all"])
    assert code == 0
    want = score_system_all_rows(prepared, stats=STATS, degenerate=DEGENERATE)
    assert want is not None
    for table in ("fairness", "performance", "intersectional", "groups", "calibration_gap"):
        got = pd.read_csv(out / "compas_two_years" / f"{table}.csv")
        expected = pd.read_csv(io.StringIO(getattr(want, table).to_csv(index=False)))
        pd.testing.assert_frame_equal(got, expected)
    run = json.loads((out / "compas_two_years" / "run.json").read_text())
    assert run["predictions"]["rows"] == len(prepared.y)
    assert run["predictions"]["outside_audit"] == 7214 - 6150
    assert run["predictions"]["training_rows_in_file"] == len(prepared.train_index)


def test_held_out_predictions_equal_the_system_on_the_test_rows(
    prepared: PreparedAudit, raw_file: Path, tmp_path: Path, audit_repo: Any
) -> None:
    """By default (``--rows held-out``) the tool's decisions are audited on the grid's test rows
    only: its gaps equal the deployed system's row set beside S0-S4, value for value."""
    raw = pd.read_csv(raw_file, usecols=["id", "score_text"])
    file = tmp_path / "tool.csv"
    raw.assign(flag=(raw["score_text"] != "Low").astype(int)).loc[:, ["id", "flag"]].to_csv(
        file, index=False)
    out = tmp_path / "external"
    code = main(["audit", "compas_two_years", "--predictions", str(file), "--key", "id",
                 "--decision", "flag", "--name", "compas_tool", "--out", str(out),
                 "--n-resamples", "50", "--n-permutations", "50",
                 "--audits", str(audit_repo.audits)])
    assert code == 0
    test_rows = score_system_test_rows(prepared, stats=STATS, degenerate=DEGENERATE)
    assert test_rows is not None
    got = pd.read_csv(out / "compas_two_years" / "fairness.csv")
    want = pd.DataFrame(test_rows.fairness.records())
    keys = ["protected_attribute", "metric"]
    merged = got.merge(want, on=keys, suffixes=("", "_want"))
    assert len(merged) == len(got) == len(want)
    np.testing.assert_allclose(merged["value"], merged["value_want"], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(merged["n_disadvantaged"], merged["n_disadvantaged_want"])
    run = json.loads((out / "compas_two_years" / "run.json").read_text())
    assert run["predictions"]["rows"] == len(prepared.test_index)
    assert run["predictions"]["rows_audited"] == "held_out"


def test_arrays_equal_the_manifest_system(audit: AuditData, prepared: PreparedAudit) -> None:
    """audit_decisions on the system's own arrays gives the manifest path's fairness table."""
    assert audit.system is not None
    config = BenchmarkConfig(jobs=1).with_params({
        "stats.n_resamples": 50, "stats.n_permutations": 50
    })
    got = audit_decisions(audit, decision=audit.system.decision, score=audit.system.score,
                          scale="ordinal", name="compas_tool", config=config)
    want = score_system_all_rows(prepared, stats=config.stats, degenerate=config.degenerate)
    assert want is not None
    pd.testing.assert_frame_equal(got.fairness, want.fairness)


def test_a_score_alone_decides_above_the_threshold(prepared: PreparedAudit) -> None:
    """Without decisions the model decides ``score > threshold``."""
    score = np.linspace(0.0, 1.0, len(prepared.y))
    results = score_given(prepared, name="m", decision=None, score=score, scale="probability",
                          threshold=0.75, stats=STATS, degenerate=DEGENERATE)
    performance = results.performance
    overall = (performance["metric"] == "selection_rate") & (
        performance["protected_attribute"].fillna("") == "")
    rate = performance.loc[overall, "value"].iloc[0]
    assert rate == pytest.approx(np.mean(score > 0.75))


def test_bad_arrays_are_one_line(audit: AuditData) -> None:
    """An array of the wrong length or with a non-binary value is one line naming it."""
    with pytest.raises(ConfigError, match=r"audit_decisions: decision: expected 6150 values"):
        audit_decisions(audit, decision=np.zeros(3, dtype=int))
    with pytest.raises(FaircodeError, match=r"decision\[1\]: expected a 0/1 decision"):
        audit_decisions(audit, decision=np.array([0, 2] + [0] * 6148))


def test_bad_predictions_file_writes_nothing(
    raw_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], audit_repo: Any
) -> None:
    """A key given twice is exit 2, one line naming the file and the key, and no output."""
    file = tmp_path / "dup.csv"
    ids = pd.read_csv(raw_file, usecols=["id"])["id"]
    pd.DataFrame({"id": [*ids, ids.iloc[0]], "flag": 0}).to_csv(file, index=False)
    out = tmp_path / "external"
    code = main(["audit", "compas_two_years", "--predictions", str(file), "--key", "id",
                 "--decision", "flag", "--out", str(out), "--audits", str(audit_repo.audits)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert str(file) in err[0] and "id" in err[0]
    assert not out.exists()
