"""Issue 57's third round: no silent wrong number from a log, nothing left behind by a failed
command, bounded work on any input -- each failure class through a real entry point.

Each docstring opens with its class in issue 57's order (``Numbers``, ``State``, ``Bounds``,
``Traceback``, ``Message``).  The logs are tests/test_streamed.py's synthetic loan log; the
tiny grid project is tests/test_hostile_inputs.py's (audit ``toy``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_freeze import CLEAN_DVC, make_repo
from test_streamed import STATS, declare, make_log

from faircode.pipeline.cli import main
from faircode.record.freeze import freeze, verify


def one_line(argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 2) -> str:
    """Run the CLI: exit ``code`` and the one line it printed on stderr."""
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# ------------------------------------------------------------------ Numbers: kinds per shard


def _two_kinds(folder: Path) -> Path:
    """A log of two Parquet files: ``approved`` 0/1 in the first, ``yes``/``no`` in the second."""
    frame = make_log(np.random.default_rng(3), n=400)
    (folder / "log").mkdir()
    first, second = frame.iloc[:200].copy(), frame.iloc[200:].copy()
    second["approved"] = np.where(second["approved"] == 1, "yes", "no")
    first.to_parquet(folder / "log" / "part-0.parquet", row_group_size=100)
    second.to_parquet(folder / "log" / "part-1.parquet", row_group_size=100)
    return declare(folder, "log")


KIND_LINE = ("part-1.parquet: row 1: column 'approved' (system.decision.column): expected "
             "number values as from part-0.parquet: row 1, got text: ")


def test_a_decision_column_changing_kind_between_files_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: 0/1 decisions in one file and yes/no in the next (read as decision 0 before):
    exit 2, one line naming the file, the row, the column and both kinds; nothing written."""
    declaration = _two_kinds(tmp_path)
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err.startswith(f"{tmp_path / 'log'}: {KIND_LINE}")
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """A LocalCluster of two single-threaded in-process workers on 127.0.0.1."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as running:
        yield running


def test_a_decision_column_changing_kind_between_shards_is_refused(
        tmp_path: Path, cluster: object, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: the same log counted in shards on Dask workers (each shard read apart): the
    driver compares the shards' kinds and refuses in the same one line."""
    declaration = _two_kinds(tmp_path)
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), "--scheduler",
                    cluster.scheduler_address, *STATS],  # type: ignore[attr-defined]
                   capsys)
    assert err.startswith(f"{tmp_path / 'log'}: {KIND_LINE}")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ Numbers: look-alike groups


def _sexes(folder: Path, values: list[str], **extra: object) -> Path:
    """The synthetic log with its ``sex`` column replaced by ``values`` (cycled)."""
    frame = make_log(np.random.default_rng(5), n=120)
    frame["sex"] = [values[i % len(values)] for i in range(len(frame))]
    frame.to_csv(folder / "log.csv", index=False)
    return declare(folder, "log.csv", **extra)


def test_a_cyrillic_look_alike_of_a_group_value_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: a Cyrillic ``М`` where the declaration says ``M`` (a blank fairness.csv on half
    the rows before): exit 2 naming the row, the value and the character that differs."""
    declaration = _sexes(tmp_path, ["F", "\u041c"])
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err == (f"{tmp_path / 'log.csv'}: line 3: column 'sex' (protected_attributes[0]): "
                   "expected 'M' exactly or a value unlike it, got '\u041c', which only looks "
                   "like it (character 1 is U+041C CYRILLIC CAPITAL LETTER EM, not U+004D "
                   "LATIN CAPITAL LETTER M)")
    assert not (tmp_path / "out").exists()


def test_a_group_value_with_a_hidden_character_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: ``M`` followed by a zero-width space in the log is no silent non-match."""
    declaration = _sexes(tmp_path, ["F", "M\u200b"])
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err.endswith("which only looks like it (it holds U+200B ZERO WIDTH SPACE at "
                        "character 2)")


def test_canonically_equal_group_values_match(tmp_path: Path) -> None:
    """Numbers: ``é`` decomposed in the log (e + U+0301) is the declared composed ``é``."""
    frame = make_log(np.random.default_rng(5), n=120)
    frame["sex"] = ["F\u00e9" if i % 2 else "Me\u0301" for i in range(len(frame))]
    frame.to_csv(tmp_path / "log.csv", index=False)
    declaration = declare(tmp_path, "log.csv")
    text = declaration.read_text().replace("- F\n", "- \"F\\xE9\"\n").replace(
        "- M\n", "- \"M\\xE9\"\n")
    declaration.write_text(text)
    assert main(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS]) == 0
    run = json.loads((tmp_path / "out" / "loans" / "run.json").read_text())
    assert run["rows"]["steps"][-1] == ["classified by every attribute", 120]


def test_a_log_with_an_empty_group_is_refused_not_blank(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: no row of the declared advantaged ``M`` (every gap would be blank): exit 2."""
    declaration = _sexes(tmp_path, ["F", "X"])
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err == (f"{declaration}: protected_attributes[0] (sex): expected a non-empty "
                   "advantaged group among the log's 60 audited rows, got 0 rows")


def test_a_look_alike_of_a_declared_target_value_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: a label ``y\u0435s`` (Cyrillic ``е``) where the target declares ``yes`` would
    be counted as label 0: exit 2 naming the row and ``(target)``."""
    frame = make_log(np.random.default_rng(5), n=120)
    frame["repaid"] = np.where(frame["repaid"] == 1, "yes", "no").astype(object)
    frame.loc[3, "repaid"] = "y\u0435s"
    frame.to_csv(tmp_path / "log.csv", index=False)
    declaration = declare(tmp_path, "log.csv", target={
        "column": "repaid", "method": "isin", "values": ["yes"], "favourable": 1})
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err.startswith(f"{tmp_path / 'log.csv'}: line 5: column 'repaid' (target): expected "
                          "'yes' exactly or a value unlike it")


def test_a_dataframe_with_a_nested_value_is_one_line() -> None:
    """Traceback: a DataFrame audited in code whose group column holds a list (a row of a JSON
    export) is one line naming the row and the column, as a Parquet struct column is."""
    import pandas as pd

    from faircode.core.errors import DataError
    from faircode.pipeline.run import audit_decisions

    frame = make_log(np.random.default_rng(5), n=120)
    frame["sex"] = frame["sex"].astype(object)
    frame.at[7, "sex"] = ["F", "M"]
    with pytest.raises(DataError) as info:
        audit_decisions(pd.DataFrame(frame), group="sex=F", label="repaid",
                        decision="approved")
    assert "row 8: column 'sex'" in str(info.value)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ Numbers: hidden characters


@pytest.mark.parametrize(("axes", "message"), [
    ("- name: gender\n  substitutions:\n    - {pattern: \"s\\u200Bhe\", replacement: he}\n",
     "substitution 's\\u200bhe': pattern: expected visible text (no format or control "
     "character), got U+200B ZERO WIDTH SPACE at character 2"),
    ("- name: \"\\u202Egender\"\n  substitutions:\n    - {pattern: she, replacement: he}\n",
     "axis '\\u202egender': name: expected visible text (no format or control character), got "
     "U+202E RIGHT-TO-LEFT OVERRIDE at character 1"),
])
def test_axes_with_hidden_characters_are_refused(tmp_path: Path, axes: str, message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: a pattern with a zero-width space (it never fires) and an axis name with a
    right-to-left override (it shows another name): exit 2, the character and its position."""
    (tmp_path / "axes.yaml").write_text(axes)
    (tmp_path / "in.jsonl").write_text('{"text": "she said"}\n')
    err = one_line(["perturb", "--axes", str(tmp_path / "axes.yaml"),
                    str(tmp_path / "in.jsonl")], capsys)
    assert err.endswith(message)


def test_a_manifest_group_value_with_a_hidden_character_is_refused(tmp_path: Path) -> None:
    """Numbers: ``disadvantaged_values: ["a\\u200b"]`` is refused when the manifest loads."""
    from test_hostile_inputs import MANIFEST, make_project

    from faircode.audit.manifest import load_manifest
    from faircode.core.errors import ManifestError

    project = make_project(tmp_path)
    manifest = project / "audits" / "toy" / "audit.yaml"
    manifest.write_text(MANIFEST.replace("disadvantaged_values: [a]",
                                         'disadvantaged_values: ["a\\u200B"]'))
    with pytest.raises(ManifestError) as info:
        load_manifest(manifest)
    assert str(info.value) == (
        f"{manifest}: protected_attributes[0].disadvantaged_values[0]: expected visible text "
        "(no format or control character; U+200B ZERO WIDTH SPACE at character 2), got "
        "'a\\u200b' (str)")


# ------------------------------------------------------------------ Numbers: scores are numbers


def test_a_json_string_score_is_refused(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers: ``"score": "0.5"`` in a JSON Lines copies file is text, not a number."""
    (tmp_path / "originals.csv").write_text("id,score\n1,0.9\n2,0.2\n")
    (tmp_path / "copies.jsonl").write_text(
        '{"id": 1, "axis": "g", "kind": "explicit", "changed": true, "score": 0.1}\n'
        '{"id": 2, "axis": "g", "kind": "explicit", "changed": true, "score": "0.5"}\n')
    err = one_line(["flips", str(tmp_path / "originals.csv"), str(tmp_path / "copies.jsonl"),
                    "--out", str(tmp_path / "out"), "--n-resamples", "50",
                    "--n-permutations", "50"], capsys)
    assert err == (f"{tmp_path / 'copies.jsonl'}: line 2: score: expected a number in [0, 1], "
                   "got '0.5' (str)")


# ------------------------------------------------------------------ State: verify and stop


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """tests/test_freeze.py's committed repository (dvc stubbed)."""
    return make_repo(tmp_path)


LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, PDEATHSIG")
_VERIFY = """\
import sys
from pathlib import Path
from faircode.pipeline._boundary import run_command
from faircode.record.freeze import verify
sys.exit(run_command(lambda: verify("v1", root=Path(sys.argv[1]), command=(
    "sh", "-c", "sleep 300 & echo $! > " + sys.argv[2] + "; wait")) and 0))
"""


def _worktrees(repo: Path) -> list[str]:
    return [line for line in subprocess.run(
        ["git", "worktree", "list"], cwd=repo, capture_output=True, text=True,
        check=True).stdout.splitlines() if "faircode-verify" in line]


def _start_verify(repo: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A verify in a subprocess whose re-run (``sh`` starting ``sleep``) is running; the pid of
    its ``sleep``."""
    pid_file = tmp_path / "rerun.pid"
    process = subprocess.Popen([sys.executable, "-c", _VERIFY, str(repo), str(pid_file)],
                               cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not pid_file.is_file() or not pid_file.read_text().strip():
        assert process.poll() is None and time.monotonic() < deadline, "verify did not start"
        time.sleep(0.05)
    return process, int(pid_file.read_text())


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@LINUX
def test_a_verify_stopped_by_sigterm_ends_its_rerun(repo: Path, tmp_path: Path) -> None:
    """State: SIGTERM to verify ends the re-run it started (its whole process group) and
    removes the worktree: exit 143, one line, nothing left running or registered."""
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    process, sleep = _start_verify(repo, tmp_path)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143 and err.decode().count("\n") == 1
    deadline = time.monotonic() + 15
    while _running(sleep) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(sleep)
    assert _worktrees(repo) == []


@LINUX
def test_a_verify_killed_by_sigkill_is_cleaned_by_the_next(repo: Path, tmp_path: Path) -> None:
    """State: a verify killed by SIGKILL leaves its worktree registered and its re-run's
    ``sleep`` running; the next verify ends that process and removes the worktree first."""
    freeze("v1", root=repo, dvc=CLEAN_DVC)
    process, sleep = _start_verify(repo, tmp_path)
    process.kill()
    process.wait(timeout=30)
    time.sleep(0.5)
    try:
        assert len(_worktrees(repo)) == 1 and _running(sleep)
        report = verify("v1", root=repo, command=("true",))
        assert report.identical
        time.sleep(0.2)
        assert _worktrees(repo) == [] and not _running(sleep)
    finally:
        if _running(sleep):
            os.kill(sleep, signal.SIGKILL)


_HANGS_AT_EXIT = """\
import sys, threading
from faircode.pipeline._boundary import run_command

def body():
    # a non-daemon thread that never ends: as a process pool's manager thread stuck on a dead
    # worker, which the interpreter joins at exit
    threading.Thread(target=threading.Event().wait).start()
    print("ready", flush=True)
    threading.Event().wait()
    return 0

sys.exit(run_command(body))
"""


def _stopped(script: str, *argv: str, signum: int = signal.SIGTERM, twice: bool = False,
             timeout: float = 30) -> tuple[int, str]:
    """Run ``script`` (printing ``ready``, then ``cleaning`` when its clean-up starts) and stop
    it with ``signum`` -- ``twice``: again once its clean-up has started; its exit code and
    stderr."""
    process = subprocess.Popen([sys.executable, "-c", script, *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               # as from a terminal: a test worker ignores SIGINT, and a command
                               # rightly keeps an inherited SIG_IGN, which would void the test
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    process.send_signal(signum)
    if twice:
        assert process.stdout.readline() == "cleaning\n"
        process.send_signal(signum)
    try:
        _, err = process.communicate(timeout=timeout)
    finally:
        process.kill()
    return process.returncode, err


def test_a_command_that_hangs_at_exit_still_ends_on_sigterm(tmp_path: Path) -> None:
    """State: SIGTERM stops the command, whose exit then hangs joining a thread (the fit stage
    that ran on for 38 minutes): it is ended STOP_GRACE_SECONDS later, exit 143."""
    from faircode.pipeline._boundary import STOP_GRACE_SECONDS

    code, err = _stopped(_HANGS_AT_EXIT, timeout=STOP_GRACE_SECONDS + 20)
    assert code == 143
    assert err.splitlines() == [
        "stopped by SIGTERM: results written before stay as they were, nothing half-written is "
        "left",
        f"stopped by SIGTERM: still running {STOP_GRACE_SECONDS:g} s after it; ended, with the "
        "processes it started"]



_CLEANS_UP = """
import os, shutil, sys, time
from faircode.pipeline._boundary import run_command

folder = sys.argv[1]

def body():
    os.makedirs(os.path.join(folder, "records"))
    try:
        print("ready", flush=True)
        time.sleep(60)
    finally:
        print("cleaning", flush=True)
        time.sleep(1.0)  # a clean-up that takes a while: gigabytes of spilled records
        shutil.rmtree(folder)
    return 0

sys.exit(run_command(body))
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_second_stop_signal_lets_the_clean_up_finish(tmp_path: Path, signum: int,
                                                       code: int) -> None:
    """State: a second SIGTERM (or Ctrl-C) while the first one's clean-up runs does not end the
    clean-up where it is (a 10⁸-row audit so left 1.1 GB of spill behind): the folder is
    removed, one line, the first signal's exit code."""
    folder = tmp_path / "spill"
    got, err = _stopped(_CLEANS_UP, str(folder), signum=signum, twice=True)
    assert not folder.exists()
    assert got == code and len(err.splitlines()) == 1, err


_HANGS_IN_CLEAN_UP = """
import sys, threading
from faircode.pipeline._boundary import run_command

def body():
    try:
        print("ready", flush=True)
        threading.Event().wait()
    finally:
        print("cleaning", flush=True)
        threading.Event().wait()  # a clean-up that never ends: a join on a dead worker
    return 0

sys.exit(run_command(body))
"""


def test_a_second_sigterm_ends_a_clean_up_that_hangs(tmp_path: Path) -> None:
    """State: the second signal raises nothing, but it arms the watchdog: a clean-up that hangs
    is ended STOP_GRACE_SECONDS later, exit 143."""
    from faircode.pipeline._boundary import STOP_GRACE_SECONDS

    code, err = _stopped(_HANGS_IN_CLEAN_UP, twice=True, timeout=STOP_GRACE_SECONDS + 20)
    assert code == 143
    assert err.splitlines() == [
        f"stopped by SIGTERM: still running {STOP_GRACE_SECONDS:g} s after it; ended, with the "
        "processes it started"], err



_TURNED_INTO_ANOTHER = """
import sys, time
from faircode.pipeline._boundary import run_command

def body():
    try:
        print("ready", flush=True)
        time.sleep(60)
    except BaseException:  # as a C extension being imported does: its own error, no chain
        raise ImportError("pd_datetime.c could not import module pandas") from None
    return 0

sys.exit(run_command(body))
"""


@pytest.mark.parametrize(("signum", "code", "said"), [
    (signal.SIGTERM, 143, "stopped by SIGTERM"), (signal.SIGINT, 130, "interrupted by SIGINT")],
    ids=["SIGTERM", "SIGINT"])
def test_a_stop_turned_into_another_error_on_its_way_up_is_the_stop(
        signum: int, code: int, said: str) -> None:
    """State: SIGINT landing while pandas imports its C extensions came back as an ImportError
    (a traceback, exit 1, in the CI simulation): once a stop signal has been raised, whatever
    ends the command is that stop -- one line, 128 + signal."""
    got, err = _stopped(_TURNED_INTO_ANOTHER, signum=signum)
    assert got == code and len(err.splitlines()) == 1 and err.startswith(said), err


# ------------------------------------------------------------------ State: a refused experiment

PARAMS_TEXT = """\
# the toy audit's params (this comment must survive)
audits: [toy]
stats:
  n_resamples: 10      # small: a test
  n_permutations: 10
"""


def test_a_refused_experiment_puts_params_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """State (the cheap twin of the dvc test below): check-params accepts params.yaml once, then
    refuses ``run.seeds: 0`` written by an experiment (DVC_EXP_BASELINE_REV set): exit 2, one
    line saying the file is put back, params.yaml byte for byte the accepted one, the refused
    one kept."""
    from test_hostile_inputs import check_params, make_project

    project = make_project(tmp_path)
    (project / "params.yaml").write_text(PARAMS_TEXT)
    assert check_params(project, monkeypatch, capsys)[0] == 0
    refused = PARAMS_TEXT.replace("audits: [toy]\n", "audits: [toy]\nrun: {seeds: 0}\n")
    (project / "params.yaml").write_text(refused)
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", "0" * 40)
    code, err = check_params(project, monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "run.seeds" in err and err.rstrip().endswith(
        "params.yaml is put back as it was accepted last (dvc exp run had rewritten it; the "
        "refused file is .dvc/tmp/faircode/params.refused.yaml)")
    assert (project / "params.yaml").read_text() == PARAMS_TEXT
    assert (project / ".dvc/tmp/faircode/params.refused.yaml").read_text() == refused


def test_a_refused_hand_edit_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """State: outside an experiment (a plain dvc repro) the refused file is the user's edit:
    it stays as it is."""
    from test_hostile_inputs import check_params, make_project

    project = make_project(tmp_path)
    assert check_params(project, monkeypatch, capsys)[0] == 0
    monkeypatch.delenv("DVC_EXP_BASELINE_REV", raising=False)
    (project / "params.yaml").write_text("audits: [toy]\nrun: {seeds: 0}\n")
    code, err = check_params(project, monkeypatch, capsys)
    assert code == 2 and "put back" not in err
    assert (project / "params.yaml").read_text() == "audits: [toy]\nrun: {seeds: 0}\n"


DVC_YAML = """\
stages:
  check-params:
    cmd: python -m faircode.pipeline.stages.check_params data/params.ok
    deps: [audits]
    params: [run]
    outs:
      - data/params.ok:
          cache: false
    always_changed: true
  evaluate:
    cmd: "true"
    deps: [audits/toy]
"""
UPSTREAM_YAML = """\
stages:
  fetch:
    foreach: [toy]
    do:
      cmd: "true"
"""
"""A pipeline of check-params only (what ``check_written_for`` reads of the pipeline files:
the data stages' audit lists, the evaluate stage's manifests)."""


def test_dvc_exp_run_refused_leaves_params_yaml_as_it_was(tmp_path: Path) -> None:
    """State: a real ``dvc exp run -S run.seeds=0`` in a git repository whose pipeline is
    check-params: the experiment fails and params.yaml is byte for byte what it was, comments
    included (DVC had rewritten it)."""
    from test_hostile_inputs import make_project

    (tmp_path / "repo").mkdir()
    project = make_project(tmp_path / "repo")
    (project / "params.yaml").write_text(PARAMS_TEXT.replace("audits: [toy]\n",
                                                             "audits: [toy]\nrun:\n  seeds: 1\n"))
    before = (project / "params.yaml").read_bytes()
    (project / "dvc.yaml").write_text(DVC_YAML)
    (project / "upstream").mkdir()
    (project / "upstream" / "dvc.yaml").write_text(UPSTREAM_YAML)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for args in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.org"],
                 ["git", "config", "user.name", "t"], [sys.executable, "-m", "dvc", "init", "-q"],
                 [sys.executable, "-m", "dvc", "repro", "-q", "check-params"],
                 ["git", "add", "-A"],
                 ["git", "commit", "-q", "-m", "state"]):
        subprocess.run(args, cwd=project, env=env, check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-m", "dvc", "exp", "run", "-S", "run.seeds=0",
                           "check-params"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "run.seeds" in done.stdout + done.stderr
    assert (project / "params.yaml").read_bytes() == before


# ------------------------------------------------------------------ State: the tracking store


def _committed_results(tmp_path: Path) -> Path:
    """A copy of the committed results/german_credit_lending (tests/test_reliability.py's)."""
    from test_reliability import _committed

    return _committed(tmp_path)


def test_track_refuses_a_sqlite_file_that_is_no_mlflow_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """State: ``--tracking-uri sqlite:///data.db`` naming the user's own database (MLflow would
    add its forty tables): exit 2, one line naming it, the file untouched, no lock beside it."""
    import sqlite3

    database = tmp_path / "data.db"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    connection.commit()
    connection.close()
    before = database.read_bytes()
    err = one_line(["track", "--results", str(_committed_results(tmp_path)), "--tracking-uri",
                    f"sqlite:///{database}"], capsys)
    assert err == (f"{database}: expected an MLflow tracking store (a SQLite file with MLflow's "
                   "tables) or no file, got a SQLite database of other tables (users); nothing "
                   "was written to it")
    assert database.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.db", "results"]


def test_a_failed_track_removes_the_store_it_created(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """State: a sync into a new SQLite file that fails once the file exists (a full disk):
    exit 3, one line, and neither the store, its WAL files nor its lock are left."""
    import sqlite3

    from faircode.record import tracking

    store = tmp_path / "mlflow.db"

    def full(*args: object, **kwargs: object) -> None:
        sqlite3.connect(store).execute("CREATE TABLE t (x)").connection.commit()
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(tracking, "_sync", full)
    results = _committed_results(tmp_path)
    err = one_line(["track", "--results", str(results), "--tracking-uri", f"sqlite:///{store}"],
                   capsys, code=3)
    assert err.startswith("tracking failed: OperationalError: database or disk is full; ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


# ------------------------------------------------------------------ Bounds


def test_limits_on_work_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bounds: --seeds 10**9 (accepted and run before), run.seeds in params.yaml, 10**7
    permutations and a chunk of 0 rows: exit 2, one line naming the flag or key and the
    limit."""
    from test_hostile_inputs import make_project

    project = make_project(tmp_path)
    err = one_line(["run", "toy", "--audits", str(project / "audits"), "--seeds",
                    "1000000000"], capsys)
    assert err == ("faircode run: --seeds: expected an integer in [1, 100] (the limit on "
                   "work), got 1000000000 (int)")
    (project / "params.yaml").write_text("audits: [toy]\nrun: {seeds: 1000000000}\n")
    err = one_line(["run", "toy", "--audits", str(project / "audits"), "--params",
                    str(project / "params.yaml")], capsys)
    assert err.endswith("run.seeds: expected an integer in [1, 100] (the limit on work), got "
                        "1000000000 (int)")
    declaration = _sexes(tmp_path, ["F", "M"])
    err = one_line(["audit", str(declaration), "--n-permutations", "10000000"], capsys)
    assert err == ("faircode audit: --n-permutations: expected an integer in [1, 100,000] (the "
                   "limit on work), got 10000000 (int)")
    err = one_line(["audit", str(declaration), "--chunk-rows", "0"], capsys)
    assert err == ("faircode audit: --chunk-rows: expected an integer in [1, 50,000,000] (the "
                   "limit on work), got 0 (int)")


def test_a_compressed_log_inflating_past_its_bound_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Bounds: a 2 kB .csv.bz2 holding 40 MB of rows (a small bomb; the bound is lowered to
    10 times the file here): exit 2, one line naming the file, reading stopped."""
    import bz2

    from faircode.audit import table_file

    header = "customer,sex,region,repaid,approved,risk\n"
    (tmp_path / "log.csv.bz2").write_bytes(bz2.compress(
        (header + "1,F,north,1,1,0.5\n" * 2_000_000).encode()))
    declaration = declare(tmp_path, "log.csv.bz2")
    size = (tmp_path / "log.csv.bz2").stat().st_size
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(table_file, "MAX_INFLATION", 10)
        patch.setattr(table_file, "INFLATION_SLACK", 0)
        err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS],
                       capsys)
    assert err == (f"{tmp_path / 'log.csv.bz2'}: expected a compressed table of at most "
                   f"{10 * size:,} bytes once decompressed (10 times its {size:,} bytes), got "
                   "more (a compression bomb? reading stopped)")


def test_an_rda_of_deeply_nested_lists_is_one_line(tmp_path: Path) -> None:
    """Bounds: an .rda whose object is 5,000 lists nested in each other (a RecursionError of
    2,671 lines before): one line naming the file."""
    from rda_writer import RVector, rda

    from faircode.audit._data_rdata import read_rdata
    from faircode.core.errors import DataError

    nested = RVector("double", [1.0])
    for _ in range(5_000):
        nested = RVector("list", [nested])
    import sys as _sys

    limit = _sys.getrecursionlimit()
    _sys.setrecursionlimit(max(limit, 30_000))  # the writer recurses too
    try:
        data = rda({"deep": nested}, compression="none")
    finally:
        _sys.setrecursionlimit(limit)
    (tmp_path / "deep.rda").write_bytes(data)
    with pytest.raises(DataError) as info:
        read_rdata(tmp_path / "deep.rda", object_name="deep", where="m.yaml: dataset")
    assert str(info.value).startswith("m.yaml: dataset.path: expected R data nested at most "
                                      "about 250 levels deep, got deep.rda nested deeper")


_READ_BOMB = """\
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from faircode.pipeline._boundary import run_command
from faircode.audit._data_rdata import read_rdata
sys.exit(run_command(lambda: read_rdata(Path(sys.argv[1]), object_name="x",
                                        where="m.yaml: dataset") is None))
"""


def test_an_rda_compression_bomb_stops_at_the_cap_under_1_gib(tmp_path: Path) -> None:
    """Bounds: a bzip2 .rda of a few hundred bytes inflating to 300 MiB (past the 256 MiB cap;
    it peaked at 2.3 GB before and ended "out of memory" naming nothing): one line naming the
    file, exit 2, under a 1 GiB address-space cap."""
    import bz2

    bomb = tmp_path / "bomb.rda"
    bomb.write_bytes(bz2.compress(b"RDX2\nX\n" + bytes(300 * 2**20)))
    assert bomb.stat().st_size < 1000
    done = subprocess.run([sys.executable, "-c", _READ_BOMB, str(bomb)], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr == ("m.yaml: dataset.path: expected R data of at most 268,435,456 bytes "
                           "once decompressed, got bomb.rda inflating past that (reading "
                           "stopped)\n")


# ------------------------------------------------------------------ Traceback -> one line


def test_a_parquet_struct_column_is_one_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Traceback: a log whose group column is a Parquet struct (pyarrow's cast error before):
    exit 2, one line naming the column, its role and its type."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = make_log(np.random.default_rng(1), n=50)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.set_column(table.schema.get_field_index("sex"), "sex",
                             pa.array([{"a": str(v)} for v in frame["sex"]]))
    pq.write_table(table, tmp_path / "log.parquet")
    err = one_line(["audit", str(declare(tmp_path, "log.parquet")), "--out",
                    str(tmp_path / "out"), *STATS], capsys)
    assert err == (f"{tmp_path / 'log.parquet'}: schema: column 'sex' "
                   "(protected_attributes[0].column): expected numbers, booleans or text, got "
                   "the nested type struct<a: string>")


def test_a_nul_byte_in_a_path_is_one_line(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Traceback: a NUL byte in a log's path (``ValueError: embedded null byte`` before), and in
    a path on the command line: exit 2, one line each."""
    declaration = declare(tmp_path, "log.csv")
    declaration.write_text(declaration.read_text().replace("path: log.csv",
                                                           'path: "log\\0.csv"'))
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out")], capsys)
    assert err == f"{declaration}: log.path: expected a path without a NUL character, got " \
                  "'log\\x00.csv' (str)"
    err = one_line(["audit", "log\0.yaml"], capsys)
    assert err == ("faircode: argument 2: expected no NUL character (a path never holds one), "
                   "got 'log\\x00.yaml' (str)")


def test_a_lone_surrogate_in_a_payload_is_one_line(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Traceback: ``\\ud800`` alone in a JSONL payload (a UnicodeEncodeError on output before):
    exit 2, one line naming the line; a proper surrogate pair is text and passes."""
    (tmp_path / "axes.yaml").write_text("- name: g\n  substitutions: [{pattern: she, "
                                        "replacement: he}]\n")
    (tmp_path / "in.jsonl").write_text('{"id": 1, "text": "she \\ud800 said"}\n')
    err = one_line(["perturb", "--axes", str(tmp_path / "axes.yaml"),
                    str(tmp_path / "in.jsonl")], capsys)
    assert err == (f"{tmp_path / 'in.jsonl'}:1: expected text (a \\uD800-\\uDFFF escape only "
                   "in a surrogate pair), got a lone \\ud800 in 'she \\ud800 said'")
    (tmp_path / "in.jsonl").write_text('{"id": 1, "text": "she \\ud83d\\ude00 said"}\n')
    assert main(["perturb", "--axes", str(tmp_path / "axes.yaml"),
                 str(tmp_path / "in.jsonl")]) == 0
    assert '"he \U0001f600 said"' in capsys.readouterr().out


@pytest.mark.parametrize(("change", "message"), [
    ({"environment": {"python": "3.11", "packages": []}},
     "environment.packages: expected a mapping, got [] (list)"),
    ({"state": {"code_sha256": 7}}, "state.code_sha256: expected a string, got 7 (int)"),
    ({"results": {"results/german/run.json": None}},
     "results.results/german/run.json: expected a string, got None (NoneType)"),
])
def test_freeze_records_with_fields_of_the_wrong_type_are_one_line(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        change: dict[str, object], message: str) -> None:
    """Traceback: a freeze record whose inner fields have the wrong type (AttributeError,
    TypeError before): ``faircode verify`` exits 2 with one line naming the field."""
    path = freeze("v1", root=repo, dvc=CLEAN_DVC)
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, **change}))
    monkeypatch.chdir(repo)
    err = one_line(["verify", "v1"], capsys)
    assert err == f"{path}: {message}"


def test_a_freeze_record_nested_too_deep_is_one_line(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Traceback: a record of 100,000 nested arrays (json's RecursionError before)."""
    (repo / "freezes").mkdir(exist_ok=True)
    (repo / "freezes" / "v1.json").write_text("[" * 100_000 + "]" * 100_000)
    monkeypatch.chdir(repo)
    err = one_line(["verify", "v1"], capsys)
    assert "v1.json: expected a freeze record in JSON, got one nested deeper than" in err


def test_a_malformed_scheduler_is_one_line_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Traceback: ``--scheduler tcp://127.0.0.1:notaport`` (the right line, then a Dask
    traceback 20 s later, before): one line, no client made, within seconds."""
    declaration = _sexes(tmp_path, ["F", "M"])
    started = time.monotonic()
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), "--scheduler",
                    "tcp://127.0.0.1:notaport"], capsys)
    assert err == ("--scheduler: expected a dask scheduler address such as tcp://host:8786 "
                   "(tcp, tls, ws, wss or ucx; a port 1-65535), or null, got "
                   "'tcp://127.0.0.1:notaport' (str)")
    assert time.monotonic() - started < 5


# ------------------------------------------------------------------ Messages name the thing


def test_a_full_disk_names_the_results_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Message: writing the tables on a full disk (``No space left on device (OSError)`` with
    no path before): exit 1, one line naming the folder being written."""
    import errno

    import pandas as pd

    def full(self: object, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    declaration = _sexes(tmp_path, ["F", "M"])
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS],
                   capsys, code=1)
    assert err == f"{tmp_path / 'out' / 'loans'}: No space left on device (OSError)"
    assert list((tmp_path / "out").iterdir()) == []


def test_a_bom_in_an_originals_csv_is_no_part_of_its_header(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Message: an originals CSV saved with a byte-order mark (Excel) read as if it had none
    (it was blamed on "line 2: id" before)."""
    (tmp_path / "originals.csv").write_text("\ufeffid,score\n1,0.9\n2,0.2\n", encoding="utf-8")
    (tmp_path / "copies.jsonl").write_text(
        '{"id": 1, "axis": "g", "kind": "explicit", "changed": true, "score": 0.1}\n'
        '{"id": 2, "axis": "g", "kind": "explicit", "changed": true, "score": 0.6}\n')
    assert main(["flips", str(tmp_path / "originals.csv"), str(tmp_path / "copies.jsonl"),
                 "--out", str(tmp_path / "out"), "--n-resamples", "50",
                 "--n-permutations", "50"]) == 0
    assert (tmp_path / "out" / "flips.csv").is_file()


def test_an_out_that_is_a_file_is_refused_before_any_reading(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Message: ``--out`` naming a regular file (a warning, then exit 1 before): exit 2, one
    line naming it, before the log is read; the file unchanged."""
    declaration = _sexes(tmp_path, ["F", "M"])
    (tmp_path / "out").write_text("my notes\n")
    err = one_line(["audit", str(declaration), "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err == (f"{tmp_path / 'out'}: expected a folder to write the results of loans into, "
                   "got a file that is not a folder; nothing was written")
    assert (tmp_path / "out").read_text() == "my notes\n"


def test_an_out_that_is_a_file_is_refused_for_a_decisions_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Message: the same for ``faircode audit FILE --group ...`` (it saves its declaration
    into ``--out``, so the check comes before that)."""
    make_log(np.random.default_rng(5), n=120).to_csv(tmp_path / "log.csv", index=False)
    (tmp_path / "out").write_text("my notes\n")
    err = one_line(["audit", str(tmp_path / "log.csv"), "--group", "sex=F", "--label", "repaid",
                    "--decision", "approved", "--out", str(tmp_path / "out"), *STATS], capsys)
    assert err == (f"{tmp_path / 'out'}: expected a folder to write the results of log into, "
                   "got a file that is not a folder; nothing was written")
    assert (tmp_path / "out").read_text() == "my notes\n"


# ------------------------------------------------------------------ Bounds: memory


def test_densify_is_collapse_without_its_copies(rng: np.random.Generator) -> None:
    """Bounds: the unit types' dense histogram built in order (the streamed audit's peak grew
    with its copies) is exactly :func:`collapse` of the same units, keys fitting or not."""
    from faircode.stats.units import collapse, densify, sparse_types

    for n_units, n_slots, top in ((500, 20, 3), (300, 40, 50), (1, 4, 1)):
        dense = rng.integers(0, top + 1, size=(n_units, n_slots))
        dense[dense.sum(axis=1) == 0, 0] = 1  # a unit has rows
        dense[: n_units // 3] = dense[0]      # repeated types
        unit, slot = np.nonzero(dense)
        got = densify(sparse_types(unit, slot, dense[unit, slot]), n_slots)
        want = collapse(dense, np.ones(n_units, dtype=np.int64))
        assert np.array_equal(got.vectors, want.vectors)
        assert np.array_equal(got.multiplicity, want.multiplicity)
        assert got.vectors.dtype == want.vectors.dtype == np.int64


_CAPPED_AUDIT = """\
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from faircode.pipeline.cli import main
sys.exit(main(sys.argv[2:]))
"""


def test_the_streamed_audit_runs_under_an_address_space_cap(tmp_path: Path) -> None:
    """Bounds: ``faircode audit`` of a 300,000-row log in chunks of 30,000 rows, in a process
    whose address space is capped at 1 GiB (pyarrow on the system allocator, one thread per
    pool: their reservations are address space, not memory): it completes, exit 0."""
    frame = make_log(np.random.default_rng(9), n=300_000)
    frame.to_parquet(tmp_path / "log.parquet", row_group_size=30_000)
    declaration = declare(tmp_path, "log.parquet")
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _CAPPED_AUDIT, str(1 << 30), "audit",
                           str(declaration), "--out", str(tmp_path / "out"), "--chunk-rows",
                           "30000", *STATS], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "out" / "loans" / "fairness.csv").is_file()


def test_a_log_counted_on_dask_worker_processes_writes_the_streamed_bytes(
        tmp_path: Path) -> None:
    """Bounds: a Parquet log counted on a LocalCluster of two separate worker processes
    (``processes=True``, started and stopped here on 127.0.0.1; the other Dask tests use
    thread workers) gives the streamed path's tables byte for byte."""
    distributed = pytest.importorskip("distributed")
    from test_streamed import tables

    frame = make_log(np.random.default_rng(13), n=3_000)
    (tmp_path / "log").mkdir()
    frame.iloc[:1_500].to_parquet(tmp_path / "log" / "part-0.parquet", row_group_size=500)
    frame.iloc[1_500:].to_parquet(tmp_path / "log" / "part-1.parquet", row_group_size=500)
    declaration = declare(tmp_path, "log")
    assert main(["audit", str(declaration), "--out", str(tmp_path / "streamed"), *STATS]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster:
        assert main(["audit", str(declaration), "--out", str(tmp_path / "dask"),
                     "--scheduler", cluster.scheduler_address, *STATS]) == 0
        pids = cluster.scheduler_info["workers"]
        assert len(pids) == 2
    assert tables(tmp_path / "dask" / "loans") == tables(tmp_path / "streamed" / "loans")
