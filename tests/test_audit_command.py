"""Tests of `faircode audit` on a raw file without a key column (German credit, whose manifest
declares ``dataset.row_id: position``): the row identity, the held-out rows, the warning for
training rows, what it prints, and `faircode report` on its folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.core.errors import ManifestError
from faircode.pipeline.cli import main

AUDIT = "german_credit_lending"
FAST = ["--n-resamples", "50", "--n-permutations", "50"]


@pytest.fixture(scope="module")
def german(audit_repo: Any) -> Any:
    """German credit loaded with its declared row identity (positions)."""
    return load_audit(audit_repo.manifests[AUDIT], by_position=True)


def _decisions(n: int) -> np.ndarray:
    """A fixed, label-free decision per raw row: approve every row whose position is not a
    multiple of 3."""
    return (np.arange(n) % 3 != 0).astype(int)


def _file(tmp_path: Path, positions: np.ndarray, decision: np.ndarray) -> Path:
    path = tmp_path / "preds.csv"
    order = np.random.default_rng(5).permutation(positions.size)  # never joined on row order
    pd.DataFrame({"row": positions[order], "approve": decision[order]}).to_csv(path, index=False)
    return path


def _audit(audit_repo: Any, tmp_path: Path, file: Path, *extra: str) -> int:
    return main(["audit", AUDIT, "--predictions", str(file), "--key", "row", "--decision",
                 "approve", "--name", "mine", "--out", str(tmp_path / "out"), "--audits",
                 str(audit_repo.audits), *FAST, *extra])


def test_the_manifest_declares_position_as_the_row_identity(audit_repo: Any) -> None:
    """German credit's raw file has no key column; its manifest declares the row position."""
    row_id = audit_repo.manifests[AUDIT].dataset.row_id
    assert row_id is not None and row_id.column is None


def test_keyless_audit_by_position_gives_the_hand_computed_parity_gap(
        audit_repo: Any, german: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Decisions keyed by the raw file's row positions, shuffled, audited on the held-out rows:
    the parity gap is the difference of the two groups' approval rates, computed here by hand,
    and the command prints it."""
    n = 1000
    decision = _decisions(n)
    code = _audit(audit_repo, tmp_path, _file(tmp_path, np.arange(n), decision))
    assert code == 0
    positions = german.keys.kept.astype(int)  # raw position of each prepared row
    test = german.test_index
    approved = decision[positions[test]]
    dis = german.disadvantaged["age"][test]
    want = approved[dis].mean() - approved[~dis].mean()  # favourable = 1 (good): approval
    fairness = pd.read_csv(tmp_path / "out" / AUDIT / "fairness.csv")
    got = fairness.loc[fairness["metric"] == "demographic_parity_diff", "value"].item()
    assert got == pytest.approx(want, abs=1e-12)
    out = capsys.readouterr().out
    assert f"parity gap {want:+.3f} [" in out and f"on {test.size:,} held-out rows" in out


def test_training_rows_in_the_file_warn_and_are_not_audited(
        audit_repo: Any, german: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file covering every raw row (the audit's training rows too) audits the held-out rows
    only and warns, naming the count of training rows."""
    assert _audit(audit_repo, tmp_path, _file(tmp_path, np.arange(1000), _decisions(1000))) == 0
    err = capsys.readouterr().err
    n_train = german.train_index.size
    assert f"{n_train:,} of its rows are rows {AUDIT} trains on: not audited" in err
    run = json.loads((tmp_path / "out" / AUDIT / "run.json").read_text())["predictions"]
    assert (run["rows"], run["training_rows_in_file"], run["rows_audited"]) == (
        german.test_index.size, n_train, "held_out")


def test_rows_all_audits_every_row_and_warns(
        audit_repo: Any, german: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--rows all`` audits every audit row, training rows included, with a warning."""
    file = _file(tmp_path, np.arange(1000), _decisions(1000))
    assert _audit(audit_repo, tmp_path, file, "--rows", "all") == 0
    assert "auditing every row" in capsys.readouterr().err
    run = json.loads((tmp_path / "out" / AUDIT / "run.json").read_text())["predictions"]
    assert run["rows"] == len(german.y)


def test_a_file_of_held_out_rows_only_audits_without_a_warning(
        audit_repo: Any, german: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file of exactly the held-out rows is audited silently (nothing to warn about)."""
    positions = german.keys.kept.astype(int)[german.test_index]
    assert _audit(audit_repo, tmp_path, _file(tmp_path, positions,
                                              _decisions(1000)[positions])) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_missing_held_out_row_is_one_line_and_writes_nothing(
        audit_repo: Any, german: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --allow-partial every held-out row must be there: exit 2, one line naming the
    file, the key and the first missing row; no results folder."""
    positions = german.keys.kept.astype(int)[german.test_index][1:]
    assert _audit(audit_repo, tmp_path, _file(tmp_path, positions,
                                              _decisions(1000)[positions])) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "preds.csv" in err[0] and "held-out rows" in err[0]
    assert not (tmp_path / "out").exists()


def test_no_key_and_no_declared_identity_is_one_line(
        audit_repo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An audit that declares no row identity needs --key: exit 2, one line that says how a
    keyless raw file can declare one."""
    file = tmp_path / "p.csv"
    pd.DataFrame({"x": [1]}).to_csv(file, index=False)
    code = main(["audit", "insurance_denial", "--predictions", str(file), "--decision", "x",
                 "--audits", str(audit_repo.audits)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--key" in err[0] and "dataset.row_id: position" in err[0]


def test_report_renders_an_audit_command_folder(
        audit_repo: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`faircode report` on the folder `faircode audit` wrote opens on the given model's numbers
    and its per-group table, which names what label 1 is."""
    assert _audit(audit_repo, tmp_path, _file(tmp_path, np.arange(1000), _decisions(1000))) == 0
    printed = capsys.readouterr().out.splitlines()
    code = main(["report", AUDIT, "--results", str(tmp_path / "out"), "--audits",
                 str(audit_repo.audits)])
    assert code == 0
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Given model</h2>" in page
    parity = next(line.strip() for line in printed if line.strip().startswith("age: parity gap"))
    assert parity.replace("'", "&#x27;") in page
    assert "positive = label 1 = class = &#x27;good&#x27; (favourable)" in page


@pytest.mark.parametrize("value, message", [
    ("row", "dataset.row_id: expected position or {column: <a key column of the raw file>}"),
    ({"column": 3}, "dataset.row_id.column"),
])
def test_a_bad_row_id_is_one_line(tmp_path: Path, value: object, message: str) -> None:
    """``dataset.row_id`` is ``position`` or ``{column: NAME}``; anything else names the key."""
    import yaml

    (tmp_path / "pyproject.toml").write_text("")
    source = Path(__file__).resolve().parent.parent / "audits" / AUDIT / "audit.yaml"
    data = yaml.safe_load(source.read_text())
    data["dataset"]["row_id"] = value
    path = tmp_path / "audits" / AUDIT / "audit.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ManifestError, match=message.replace("{", r"\{").replace("}", r"\}")):
        load_manifest(path)
