"""Tests of `faircode audit FILE --group ... --label ... --decision ...` (a decisions file with its
own columns, no manifest), of `faircode.audit_decisions` on a DataFrame, of the key column found
for an audit's rows, and of the training-row warning only where a file follows the split."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

import faircode
from faircode.audit.data import load_audit
from faircode.audit.log_declaration import load_log
from faircode.core.config import BenchmarkConfig
from faircode.core.errors import ConfigError
from faircode.pipeline.cli import main

AUDIT = "german_credit_lending"
FAST = ["--n-resamples", "60", "--n-permutations", "60"]
CONFIG = BenchmarkConfig().with_params({"stats.n_resamples": 60, "stats.n_permutations": 60})
NUMBERS = ["value", "ci_low", "ci_high", "p_value", "q_value", "significant", "mde"]


@pytest.fixture(scope="module")
def german(audit_repo: Any) -> Any:
    """German credit loaded with its declared row identity (positions)."""
    return load_audit(audit_repo.manifests[AUDIT], by_position=True)


def _approve(n: int) -> np.ndarray:
    """A label-free decision per raw row: approve each row whose position is not a multiple of
    3."""
    return (np.arange(n) % 3 != 0).astype(int)


def _numbers(folder: Path, table: str = "fairness") -> pd.DataFrame:
    frame = pd.read_csv(folder / f"{table}.csv")
    keys = [c for c in ("protected_attribute", "metric", "group") if c in frame.columns]
    return frame.sort_values(keys).reset_index(drop=True)


@pytest.fixture
def decisions(tmp_path: Path) -> Path:
    """A synthetic decisions file with its own groups, label, decision, score and a city."""
    rng = np.random.default_rng(11)
    n = 1500
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "age": rng.integers(18, 70, n),
                          "city": rng.choice(["a", "b", "c"], n)})
    frame["repaid"] = (rng.random(n) < 0.6).astype(int)
    frame["p"] = np.clip(0.3 + 0.4 * frame["repaid"] - 0.1 * (frame["sex"] == "F")
                         + rng.normal(0, 0.2, n), 0, 1)
    frame["approved"] = (frame["p"] > 0.5).astype(int)
    path = tmp_path / "loans.csv"
    frame.to_csv(path, index=False)
    return path


def _file_audit(path: Path, out: Path, *extra: str) -> int:
    return main(["audit", str(path), "--group", "sex=F", "--group", "age<25", "--label",
                 "repaid", "--decision", "approved", "--score", "p", "--scale", "probability",
                 "--out", str(out), *FAST, *extra])


def test_manifest_free_audit_equals_the_manifest_audit_on_the_same_rows(
        audit_repo: Any, german: Any, tmp_path: Path) -> None:
    """German credit's every row audited twice -- through its manifest (a predictions file keyed
    by row position) and as a file of its own columns (age, class, the decision) with no
    manifest -- gives the same fairness, performance and per-group numbers."""
    n = 1000
    approve = _approve(n)
    keyed = tmp_path / "keyed.csv"
    pd.DataFrame({"row": np.arange(n), "approve": approve}).to_csv(keyed, index=False)
    assert main(["audit", AUDIT, "--predictions", str(keyed), "--decision", "approve",
                 "--rows", "all", "--name", "mine", "--out", str(tmp_path / "a"), "--audits",
                 str(audit_repo.audits), *FAST]) == 0
    positions = german.keys.kept.astype(int)
    own = tmp_path / "own.csv"
    german.raw[["age", "class"]].assign(approve=approve[positions]).to_csv(own, index=False)
    assert main(["audit", str(own), "--group", "age<30", "--label", "class=good", "--decision",
                 "approve", "--name", "mine", "--out", str(tmp_path / "b"), *FAST]) == 0
    for table, columns in (("fairness", NUMBERS), ("performance", ["value", "ci_low",
                                                                   "ci_high"])):
        a, b = _numbers(tmp_path / "a" / AUDIT, table), _numbers(tmp_path / "b" / "own", table)
        pd.testing.assert_frame_equal(a[columns], b[columns])
    groups = ["n", "base_rate", "selection_rate", "tpr", "fpr"]
    a, b = _numbers(tmp_path / "a" / AUDIT, "groups"), _numbers(tmp_path / "b" / "own", "groups")
    pd.testing.assert_frame_equal(a[[c for c in groups if c in a]],
                                  b[[c for c in groups if c in b]])


def test_the_saved_declaration_repeats_the_audit(decisions: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The options are saved as a log declaration beside the results folder; auditing that
    file writes the same fairness table byte for byte."""
    out = tmp_path / "out"
    assert _file_audit(decisions, out) == 0
    printed = capsys.readouterr().out
    assert "sex: parity gap" in printed and f"declaration: {out / 'loans.yaml'}" in printed
    first = (out / "loans" / "fairness.csv").read_bytes()
    manifest = load_log(out / "loans.yaml")
    assert [a.name for a in manifest.protected_attributes] == ["sex", "age"]
    assert main(["audit", str(out / "loans.yaml"), "--out", str(out), *FAST]) == 0
    assert (out / "loans" / "fairness.csv").read_bytes() == first


def test_a_dataframe_audit_equals_the_file_audit(decisions: Path, tmp_path: Path) -> None:
    """`faircode.audit_decisions` on the DataFrame gives the numbers of the command on its
    file."""
    assert _file_audit(decisions, tmp_path / "out") == 0
    results = faircode.audit_decisions(
        pd.read_csv(decisions), group=["sex=F", "age<25"], label="repaid", decision="approved",
        score="p", scale="probability", config=CONFIG)
    got = results.fairness.sort_values(["protected_attribute", "metric"]).reset_index(drop=True)
    want = _numbers(tmp_path / "out" / "loans")
    pd.testing.assert_frame_equal(got[NUMBERS].astype(float), want[NUMBERS].astype(float))


def test_a_stratum_gives_the_gap_within_its_levels(decisions: Path, tmp_path: Path) -> None:
    """``--stratum city`` writes stratified.csv: per attribute the Mantel-Haenszel gap within
    the cities, its raw gap equal to the parity gap of fairness.csv."""
    assert _file_audit(decisions, tmp_path / "out", "--stratum", "city") == 0
    strata = pd.read_csv(tmp_path / "out" / "loans" / "stratified.csv")
    fairness = _numbers(tmp_path / "out" / "loans")
    assert list(strata["protected_attribute"]) == ["sex", "age"]
    assert set(strata["strata"]) == {3}
    parity = fairness[fairness["metric"] == "demographic_parity_diff"].set_index(
        "protected_attribute")["value"]
    for row in strata.itertuples():
        assert row.raw_gap == pytest.approx(parity[row.protected_attribute], abs=1e-12)
    assert set(strata["estimator"]) == {"mantel_haenszel"}
    assert strata["heterogeneity_p_value"].notna().all()


def test_a_log_refuses_a_regression_stratum_in_one_line(decisions: Path, tmp_path: Path) -> None:
    """A log keeps each row's stratum level, not a covariate matrix: a ``logistic_regression``
    stratum in its declaration is one line naming the field."""
    assert _file_audit(decisions, tmp_path / "out", "--stratum", "city") == 0
    declaration = tmp_path / "out" / "loans.yaml"
    doc = yaml.safe_load(declaration.read_text())
    doc["strata"][0]["estimator"] = "logistic_regression"
    declaration.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ConfigError, match=r"loans\.yaml: strata\[0\]\.estimator: expected "
                                          r"mantel_haenszel in a decision log .*, got "
                                          r"'logistic_regression'"):
        load_log(declaration)


@pytest.mark.parametrize("option, value, message", [
    ("--group", "age>25", "--group: expected COL<X (below X disadvantaged) or COL>=X"),
    ("--group", "sex=", "--group: expected COL, COL=V[,V...] or COL>=X, got 'sex='"),
    ("--group", "sexx=F", "--group column: expected a column of loans.csv, got 'sexx' (str); "
                          "closest: sex"),
    ("--stratum", "ci ty", "--stratum: expected COL[,COL...] of columns whose names"),
])
def test_a_bad_column_spec_is_one_line(decisions: Path, tmp_path: Path, option: str,
                                       value: str, message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A spec the short form cannot read, or a column the file lacks, is one line naming the
    option, exit 2, nothing written."""
    code = main(["audit", str(decisions), "--group", "sex=F", "--label", "repaid",
                 "--decision", "approved", option, value, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]
    assert not (tmp_path / "out" / "loans").exists()


def test_the_dataframe_form_names_its_keywords(decisions: Path) -> None:
    """A DataFrame without a label column name is one line naming the keyword."""
    with pytest.raises(ConfigError, match="audit_decisions: expected decision= and label="):
        faircode.audit_decisions(pd.read_csv(decisions), group="sex=F", decision="approved")


def test_help_shows_both_forms_and_its_yaml_example_is_a_declaration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`faircode audit --help` shows the options form and the YAML form; the YAML example
    loads as a log declaration."""
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    text = capsys.readouterr().out
    assert "faircode audit holdout.csv --group 'age<30'" in text
    block = text.split("the same audit declared in YAML", 1)[1].split("\n\n", 1)[0]
    lines = [line[2:] for line in block.splitlines()[1:]]
    (tmp_path / "holdout.yaml").write_text("\n".join(lines))
    manifest = load_log(tmp_path / "holdout.yaml")
    assert manifest.system is not None and manifest.system.score is not None
    assert manifest.protected_attributes[0].threshold == 30


def test_the_one_candidate_key_column_is_found_and_named(
        audit_repo: Any, german: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without --key, German credit's (dataset.row_id: position) key is the file's one column
    that is no output and no raw column, and the command says which."""
    positions = german.keys.kept.astype(int)[german.test_index]
    file = tmp_path / "preds.csv"
    pd.DataFrame({"position": positions, "approve": _approve(1000)[positions]}).to_csv(
        file, index=False)
    assert main(["audit", AUDIT, "--predictions", str(file), "--decision", "approve",
                 "--out", str(tmp_path / "out"), "--audits", str(audit_repo.audits),
                 *FAST]) == 0
    assert re.search(r"key column 'position': the one integer column of preds.csv that is no "
                     r"decision, score or column of credit_customers.csv",
                     capsys.readouterr().out)


def test_two_candidate_keys_are_one_line_naming_them(
        audit_repo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two columns that could name the rows: exit 2, one line naming both and --key."""
    file = tmp_path / "preds.csv"
    pd.DataFrame({"row": [0], "other": [1], "approve": [1]}).to_csv(file, index=False)
    code = main(["audit", AUDIT, "--predictions", str(file), "--decision", "approve",
                 "--audits", str(audit_repo.audits), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--key" in err[0] and "2 candidates (row, other)" in err[0]


def test_a_file_on_its_own_split_gets_no_training_row_warning(
        audit_repo: Any, german: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A model's held-out half of German credit (its own random split): the held-out default
    says the file follows another split and names --rows all --allow-partial, which audits its
    rows without a warning about the benchmark's training rows; its score column (not audited)
    is no key candidate, so the row column is found."""
    half = np.sort(np.random.default_rng(3).permutation(1000)[:500])
    file = tmp_path / "half.csv"
    pd.DataFrame({"row": half, "approve": _approve(1000)[half],
                  "p_good": np.linspace(0.01, 0.99, 500)}).to_csv(file, index=False)
    base = ["audit", AUDIT, "--predictions", str(file), "--decision", "approve",
            "--audits", str(audit_repo.audits), "--out", str(tmp_path / "out"), *FAST]
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "made on another split" in err and "--rows all --allow-partial" in err
    assert main([*base, "--rows", "all", "--allow-partial"]) == 0
    assert "warning" not in capsys.readouterr().err
    record = yaml.safe_load((tmp_path / "out" / AUDIT / "run.json").read_text())
    assert record["predictions"]["rows"] == 500 and not record["predictions"]["follows_split"]
