"""Tests of ``faircode flips``: a model's two score files in, flip rates and CTF gaps out; every
bad file is one line, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from faircode.pipeline.cli import main

ORIGINALS = "id,score\n1,0.9\n2,0.2\n3,0.7\n"
COPIES = [
    {"id": 1, "axis": "g", "kind": "explicit", "changed": True, "score": 0.1},
    {"id": 2, "axis": "g", "kind": "explicit", "changed": True, "score": 0.8},
    {"id": 3, "axis": "g", "kind": "explicit", "changed": False},
]


def _files(tmp_path: Path, originals: str = ORIGINALS, copies: list[dict] | str = COPIES,
           suffix: str = ".jsonl") -> tuple[Path, Path]:
    o, c = tmp_path / "originals.csv", tmp_path / f"copies{suffix}"
    o.write_text(originals)
    c.write_text(copies if isinstance(copies, str)
                 else "".join(json.dumps(r) + "\n" for r in copies))
    return o, c


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], o: Path, c: Path,
         *extra: str) -> tuple[int, str, str]:
    code = main(["flips", str(o), str(c), "--out", str(tmp_path / "out"), "--n-resamples",
                 "50", "--n-permutations", "50", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_flips_writes_both_tables_and_a_run_record(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Two of three copies changed, both flipped at 0.5 (1: to not flagged, 2: to flagged);
    the CTF gap is (0.8 + 0.6) / 2 and the run record names both files' sha256."""
    code, out, err = _run(tmp_path, capsys, *_files(tmp_path))
    assert (code, err) == (0, "")
    flips = pd.read_csv(tmp_path / "out" / "flips.csv")
    row = flips.iloc[0]
    assert (row["n_changed"], row["n_unchanged"], row["n_flipped"]) == (2, 1, 2)
    assert (row["to_positive"], row["to_negative"]) == (0.5, 0.5)
    ctf = pd.read_csv(tmp_path / "out" / "ctf.csv")
    assert ctf["ctf_gap"].iat[0] == pytest.approx(0.7)
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["kind"] == "counterfactual_scores" and len(run["copies"]["sha256"]) == 64
    assert "wrote" in out


BAD = [
    ("a copy without its original",
     dict(copies=[*COPIES, {"id": 9, "axis": "g", "kind": "explicit", "changed": True,
                            "score": 0.5}]),
     "line 4: id: expected the id of an original"),
    ("a score above 1", dict(originals="id,score\n1,1.5\n2,0.2\n3,0.7\n"),
     "originals.csv: line 2: score: expected a number in [0, 1], got '1.5' (str)"),
    ("a negative copy score", dict(copies=[{**COPIES[0], "score": -0.1}, *COPIES[1:]]),
     "copies.jsonl: line 1: score: expected a number in [0, 1], got -0.1 (float)"),
    ("a score that is no number", dict(originals="id,score\n1,high\n2,0.2\n3,0.7\n"),
     "line 2: score: expected a number in [0, 1], got 'high' (str)"),
    ("a duplicate original id", dict(originals="id,score\n1,0.9\n1,0.2\n3,0.7\n"),
     "line 3: id: duplicate id '1' (also line 2)"),
    ("a duplicate copy", dict(copies=[*COPIES, COPIES[0]]),
     "line 4: id: duplicate copy '1' of axis 'g' (explicit) (also line 1)"),
    ("a changed copy without a score", dict(copies=[{**COPIES[0], "score": None}, *COPIES[1:]]),
     "line 1: score: expected a number in [0, 1], got None (NoneType)"),
    ("an unknown kind", dict(copies=[{**COPIES[0], "kind": "implicit"}, *COPIES[1:]]),
     "line 1: kind: expected one of explicit, proxy, got 'implicit' (str)"),
    ("changed not a boolean", dict(copies=[{**COPIES[0], "changed": "yes"}, *COPIES[1:]]),
     "line 1: changed: expected true or false, got 'yes' (str)"),
    ("a missing column", dict(originals="id,value\n1,0.9\n"),
     "line 2: score: expected a value (required field), got nothing"),
    ("invalid JSON", dict(copies="{\"id\": 1,\n"), "copies.jsonl: line 1: expected a JSON"),
    ("an empty copies file", dict(copies=""), "expected one line per copy"),
]


@pytest.mark.parametrize(("what", "files", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_score_file_is_one_line_exit_2_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, files: dict,
        message: str) -> None:
    """Every defect of a score file: exit 2, one line naming file, line and field, no output."""
    code, _, err = _run(tmp_path, capsys, *_files(tmp_path, **files))
    assert code == 2, what
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_unknown_file_type_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copies file that is neither .csv nor .jsonl: one line, exit 2, nothing written."""
    code, _, err = _run(tmp_path, capsys, *_files(tmp_path, suffix=".txt"))
    assert code == 2 and "expected a .csv or .jsonl score file" in err
    assert not (tmp_path / "out").exists()


def test_a_folder_holding_other_files_is_never_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--out naming a folder with someone else's file is refused; the file stays."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    code, _, err = _run(tmp_path, capsys, *_files(tmp_path))
    assert code == 2 and "--out: expected a new folder or one faircode flips wrote" in err
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


def test_flips_rewrites_its_own_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second run into the folder the first wrote replaces it whole."""
    files = _files(tmp_path)
    assert _run(tmp_path, capsys, *files)[0] == 0
    assert _run(tmp_path, capsys, *files, "--threshold", "0.3")[0] == 0
    assert set(pd.read_csv(tmp_path / "out" / "flips.csv")["threshold"]) == {0.3}


def test_flips_prints_each_axis_and_kinds_rate_and_interval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command prints, per operating point x axis x kind, flips.csv's rate with its
    interval and counts."""
    code, out, _ = _run(tmp_path, capsys, *_files(tmp_path))
    row = pd.read_csv(tmp_path / "out" / "flips.csv").iloc[0]
    assert code == 0
    assert (f"{row['operating_point']}: {row['axis']} ({row['kind']}): flip rate "
            f"{row['flip_rate']:.1%} [{row['ci_low']:.1%}, {row['ci_high']:.1%}]") in out
    assert "2 of 2 changed copies" in out
