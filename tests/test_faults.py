"""Faults of processes, not of inputs: concurrent syncs, killed runs, an interrupted result swap.

Issue 25, the process half.  Concurrent ``faircode track`` of one state into a new SQLite file
and into a real ``mlflow server`` (one parent, one child per key, every process exits 0); a sync
killed mid-way completed by the next; the state's claim in the store taken over from a dead or
silent holder; ``faircode run`` killed by SIGKILL, SIGTERM or SIGINT during fitting leaving no
process behind (checked in ``/proc``); the results swap interrupted between its steps; a results
table cut mid-row refused by ``track``; ``perturb`` writing to a full disk.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from mlflow_server import mlflow_server

from faircode.core.cells import grid_cells
from faircode.evaluate import swap
from faircode.pipeline import cli
from faircode.record import _claim
from faircode.record.tracking import sync_results

REPO = Path(__file__).resolve().parent.parent
AUDIT = "german_credit_lending"  # committed results: one attribute (age); 800 training rows


def _children(results: Path) -> int:
    """The child runs a sync of ``results`` logs (what ``faircode track`` collects: one per grid
    cell on the one attribute, and the bag stage's ensemble and multiplicity children); these
    tests are of logging each exactly once, not of which children there are
    (tests/test_tracking.py, tests/test_arbitrariness_runs.py)."""
    from faircode.record.tracking import collect_children

    return len(collect_children(results)[0])

LINUX = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def _env() -> dict[str, str]:
    """The environment of a subprocess that imports this worktree's faircode."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "MLFLOW_DISABLE_TELEMETRY": "true",
            "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in tmp: a SQLite store's default artifact root is ``./mlruns``."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder holding a copy of the committed ``results/german_credit_lending``."""
    out = tmp_path / "results"
    shutil.copytree(REPO / "results" / AUDIT, out / AUDIT)
    return out


# ------------------------------------------------------------------ concurrent syncs


def _track_at_once(results: Path, uri: str, experiment: str, n: int = 3) -> list[tuple[int, str]]:
    """Start ``n`` ``faircode track`` processes together; their (exit code, stderr)."""
    command = [sys.executable, "-m", "faircode.pipeline.cli", "track", "--results", str(results),
               "--tracking-uri", uri, "--experiment", experiment]
    processes = [subprocess.Popen(command, cwd=results.parent, env=_env(), text=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for _ in range(n)]
    done = []
    for process in processes:
        _, err = process.communicate(timeout=600)
        done.append((process.returncode, err))
    return done


def _state(uri: str, experiment: str) -> tuple[int, collections.Counter[str], set[str]]:
    """(parents, child runs per key, child statuses) through MLflow's search API."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    runs = client.search_runs([found.experiment_id], max_results=1000)
    parents = [r for r in runs if "faircode.digest" in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    keys = collections.Counter(r.data.tags["faircode.child_key"] for r in children)
    return len(parents), keys, {r.info.status for r in children}


def test_concurrent_syncs_into_a_new_sqlite_file_log_the_state_once(results: Path) -> None:
    """Three syncs of one state creating one SQLite store at once: all exit 0, one parent."""
    uri = f"sqlite:///{results.parent / 'new' / 'mlflow.db'}"
    done = _track_at_once(results, uri, "faults")
    assert [code for code, _ in done] == [0, 0, 0], done
    parents, keys, statuses = _state(uri, "faults")
    assert parents == 1
    assert len(keys) == _children(results) > len(grid_cells())
    assert set(keys.values()) == {1} and statuses == {"FINISHED"}


_KILLED_SYNC = """
import os, signal, sys, threading
from faircode.pipeline import cli
from faircode.record import _shared, _store
_shared.FINISH_CHUNK = 5  # SQLite: five children a transaction; a server: one a call, 2 threads
server = any(a.startswith("http") for a in sys.argv)
module, name = (_shared, "log_new_children") if server else (_store, "_insert_inputs")
calls, original, one = [0], getattr(module, name), threading.Lock()
def dying(*args, **kwargs):
    with one:  # calls in turn: the kill comes after five children are in
        calls[0] += 1
        if calls[0] > (5 if server else 1):  # SQLite: inside the next transaction
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
setattr(module, name, dying)
sys.exit(cli.main(sys.argv[1:]))
"""


def _kill_a_sync(results: Path, uri: str, experiment: str) -> None:
    """Run a sync that SIGKILLs itself after five children (one transaction of five)."""
    done = subprocess.run([sys.executable, "-c", _KILLED_SYNC, "track", "--results",
                           str(results), "--tracking-uri", uri, "--experiment", experiment],
                          cwd=results.parent, env=_env(), capture_output=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_a_sync_killed_mid_way_is_completed_by_the_next(results: Path) -> None:
    """A SIGKILLed sync's file lock dies with it; the next sync completes the state, no dupes."""
    uri = f"sqlite:///{results.parent / 'mlflow.db'}"
    _kill_a_sync(results, uri, "killed")
    report = sync_results(results, tracking_uri=uri, experiment="killed")
    children = _children(results)
    assert (report.status, report.children_logged) == ("completed", children - 5)
    parents, keys, statuses = _state(uri, "killed")
    assert parents == 1
    assert len(keys) == children and set(keys.values()) == {1} and statuses == {"FINISHED"}


def test_duplicate_children_of_a_complete_state_are_removed(results: Path) -> None:
    """Children logged twice (by syncs before the claim) are reduced to one per key."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{results.parent / 'mlflow.db'}"
    first = sync_results(results, tracking_uri=uri, experiment="dupes")
    client = MlflowClient(tracking_uri=uri)
    original = client.search_runs([first.experiment_id],
                                  f"tags.`mlflow.parentRunId` = '{first.parent_run_id}'")[0]
    twin = client.create_run(first.experiment_id, tags=original.data.tags)
    client.set_terminated(twin.info.run_id)
    assert sum(_state(uri, "dupes")[1].values()) == _children(results) + 1
    again = sync_results(results, tracking_uri=uri, experiment="dupes")
    assert (again.status, again.parent_run_id) == ("unchanged", first.parent_run_id)
    assert set(_state(uri, "dupes")[1].values()) == {1}


# ------------------------------------------------------------------ the claim on a server store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """An MlflowClient of a SQLite store, used through the lease protocol like a server."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("claims") / "mlflow.db"
    return MlflowClient(tracking_uri=f"sqlite:///{path}")


def _lock(store, name: str, holder: dict[str, object]) -> str:
    """Create a lock experiment as another sync would have."""
    return str(store.create_experiment(name, tags={_claim.HOLDER: json.dumps(holder),
                                                   _claim.BEAT: "0"}))


def _dead_pid() -> int:
    """The pid of a process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_a_dead_local_holder_is_taken_over_at_once(store) -> None:
    """A lock held by a pid of this host that no longer runs is superseded without waiting."""
    holder = {**_claim._holder(), "pid": _dead_pid(), "start": "0"}
    _lock(store, _claim.lock_name("x", "dead", 0), holder)
    started = time.monotonic()
    with _claim.claim_state(store, experiment="x", digest="dead", done=lambda: False,
                            lease=600) as claim:
        assert claim.held
        assert store.get_experiment_by_name(_claim.lock_name("x", "dead", 1)) is not None
        old = store.get_experiment_by_name(_claim.lock_name("x", "dead", 0))
        assert old.lifecycle_stage == "deleted"  # out of the way of later waiters
    assert time.monotonic() - started < 60
    assert store.get_experiment_by_name(_claim.lock_name("x", "dead", 1)).lifecycle_stage == \
        "deleted"  # released


def test_a_silent_remote_holder_is_taken_over_after_the_lease(store) -> None:
    """A lock of another host whose heartbeat stops is superseded once the lease has passed."""
    _lock(store, _claim.lock_name("x", "remote", 0), {"host": "elsewhere", "boot": "", "pid": 1})
    started = time.monotonic()
    with _claim.claim_state(store, experiment="x", digest="remote", done=lambda: False,
                            lease=1.0, poll=0.1) as claim:
        waited = time.monotonic() - started
        assert claim.held
    assert waited >= 1.0


def test_a_waiter_finds_the_state_completed_by_the_live_holder(store) -> None:
    """While one sync holds the claim the other waits, then sees the state done, unheld."""
    completed = threading.Event()
    outcome: list[bool] = []

    def waiter() -> None:
        with _claim.claim_state(store, experiment="x", digest="live", done=completed.is_set,
                                poll=0.05) as claim:
            outcome.append(claim.held)

    with _claim.claim_state(store, experiment="x", digest="live", done=completed.is_set,
                            beat=0.05) as held:
        assert held.held
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.5)
        assert outcome == []  # still waiting for the holder
        completed.set()
    thread.join(timeout=30)
    assert outcome == [False]


def test_a_holder_that_was_superseded_stops_logging(store) -> None:
    """If a next generation appears (the holder stalled past the lease), check() raises."""
    with _claim.claim_state(store, experiment="x", digest="stalled", done=lambda: False,
                            beat=0.05) as claim:
        claim.check()
        _lock(store, _claim.lock_name("x", "stalled", 1), _claim._holder())
        deadline = time.monotonic() + 30
        while not claim.lost.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(_claim.ClaimLost, match="took this state over"):
            claim.check()


# ------------------------------------------------------------------ a real mlflow server


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """An ``mlflow server`` for this module's tests (:func:`mlflow_server.mlflow_server`),
    importing this worktree's faircode."""
    with mlflow_server("faircode-faults-mlflow-", _env()) as url:
        yield url


@pytest.mark.slow
def test_concurrent_syncs_into_a_server_log_the_state_once(results: Path, server: str) -> None:
    """Three syncs of one state into a new experiment on a server: all exit 0, one parent."""
    done = _track_at_once(results, server, "faults-server")
    assert [code for code, _ in done] == [0, 0, 0], done
    parents, keys, statuses = _state(server, "faults-server")
    assert parents == 1
    assert len(keys) == _children(results)
    assert set(keys.values()) == {1} and statuses == {"FINISHED"}


@pytest.mark.slow
def test_a_sync_killed_mid_way_on_a_server_is_completed_by_the_next(results: Path,
                                                                     server: str) -> None:
    """A SIGKILLed holder's lease is taken over at once (same host); the state is completed."""
    _kill_a_sync(results, server, "faults-killed")
    report = sync_results(results, tracking_uri=server, experiment="faults-killed")
    children = _children(results)
    assert (report.status, report.children_logged) == ("completed", children - 5)
    parents, keys, statuses = _state(server, "faults-killed")
    assert parents == 1
    assert len(keys) == children and set(keys.values()) == {1} and statuses == {"FINISHED"}


# ------------------------------------------------------------------ killed runs


@pytest.fixture(scope="module")
def german_repo(tmp_path_factory: pytest.TempPathFactory, mirrors: tuple[Path, ...]) -> Path:
    """A repo-like tmp folder with the german credit manifest and its raw file fetched."""
    from faircode.audit.fetch import fetch
    from faircode.audit.manifest import load_manifest

    root = tmp_path_factory.mktemp("german")
    (root / "pyproject.toml").write_text("# test repository root\n")
    (root / "audits" / AUDIT).mkdir(parents=True)
    shutil.copy(REPO / "audits" / AUDIT / "audit.yaml", root / "audits" / AUDIT / "audit.yaml")
    fetch(load_manifest(root / "audits" / AUDIT / "audit.yaml"), mirrors=mirrors)
    return root


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, state) of every process in /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(entry.name)] = (int(fields[1]), fields[19], fields[0])
    return table


def _descendants(root: int) -> dict[int, str]:
    """pid -> start time of every process below ``root``."""
    table, found, frontier = _processes(), {}, {root}
    while frontier:
        frontier = {pid for pid, (ppid, _, _) in table.items()
                    if ppid in frontier and pid not in found}
        found.update({pid: table[pid][1] for pid in frontier})
    return found


def _alive(recorded: dict[int, str]) -> list[int]:
    """The recorded processes that still run (same pid and start time, not a zombie)."""
    table = _processes()
    return [pid for pid, start in recorded.items()
            if pid in table and table[pid][1] == start and table[pid][2] != "Z"]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@LINUX
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT],
                         ids=["SIGKILL", "SIGTERM", "SIGINT"])
def test_a_killed_run_leaves_no_process_behind(signum: int, german_repo: Path,
                                               tmp_path: Path) -> None:
    """Killing ``faircode run`` during fitting ends its workers and resource tracker too."""
    err = tmp_path / "stderr"  # a file, not a pipe: surviving workers would hold a pipe open
    with err.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "faircode.pipeline.cli", "run", AUDIT, "--audits",
             str(german_repo / "audits"), "--out", str(tmp_path / "out"), "--jobs", "2",
             "--n-resamples", "20", "--n-permutations", "20", "--quiet"],
            cwd=german_repo, env=_env(), stdout=subprocess.DEVNULL, stderr=handle,
            # as from a terminal: a runner started in the background (`cmd &`) ignores SIGINT,
            # and the run rightly keeps an inherited SIG_IGN, which would void this test
            preexec_fn=_default_sigint)
    family: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 180
        while sum(b"spawn_main" in _cmdline(pid) for pid in _descendants(process.pid)) < 2:
            assert process.poll() is None and time.monotonic() < deadline, "no workers started"
            time.sleep(0.1)
        time.sleep(1.0)  # the workers are fitting
        family = _descendants(process.pid)
        assert process.poll() is None, "the run ended before the kill"
        assert any(b"resource_tracker" in _cmdline(pid) for pid in family)
        os.kill(process.pid, signum)
        process.wait(timeout=60)
        deadline = time.monotonic() + 10
        while _alive(family) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive(family) == []
        if signum != signal.SIGKILL:
            text = err.read_text()
            assert process.returncode == 128 + signum
            assert f"stopped by {signal.Signals(signum).name}" in text
            assert "Traceback" not in text
    finally:
        if process.poll() is None:
            process.kill()
        for pid in _alive(family):
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------ the results swap


def _folder(path: Path, text: str) -> Path:
    path.mkdir(parents=True)
    (path / "fairness.csv").write_text(text)
    return path


def _write(final: Path, text: str) -> None:
    with swap.replacing(final) as staging:
        (staging / "fairness.csv").write_text(text)


def _hidden(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


def test_a_failure_during_the_writes_keeps_the_old_folder(tmp_path: Path) -> None:
    """An exception while the new files are written leaves the old folder and no staging."""
    final = _folder(tmp_path / "results" / "a", "old\n")
    with pytest.raises(RuntimeError), swap.replacing(final) as staging:
        (staging / "fairness.csv").write_text("new\n")
        raise RuntimeError("disk full")
    assert (final / "fairness.csv").read_text() == "old\n"
    assert _hidden(final.parent) == []


def test_an_exception_between_the_two_fallback_renames_rolls_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the atomic exchange, a failing second rename puts the old folder back."""
    final = _folder(tmp_path / "results" / "a", "old\n")
    real, calls = swap._rename, []

    def failing(source: Path, target: Path) -> None:
        calls.append(target)
        if len(calls) == 2:
            raise OSError("injected between the steps")
        real(source, target)

    monkeypatch.setattr(swap, "_exchange", lambda a, b: False)
    monkeypatch.setattr(swap, "_rename", failing)
    with pytest.raises(OSError, match="injected"):
        _write(final, "new\n")
    assert (final / "fairness.csv").read_text() == "old\n"
    assert _hidden(final.parent) == []


_KILLED_SWAP = """
import os, signal, sys
from pathlib import Path
from faircode.core.cells import grid_cells
from faircode.evaluate import swap
mode, final = sys.argv[1], Path(sys.argv[2])
real_exchange, real_rename, calls = swap._exchange, swap._rename, []
def die():
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "before-exchange":
    swap._exchange = lambda a, b: die()
elif mode == "after-exchange":
    swap._exchange = lambda a, b: real_exchange(a, b) and die()
else:  # between the fallback's two renames
    swap._exchange = lambda a, b: False
    def rename(source, target):
        calls.append(target)
        if len(calls) == 2:
            die()
        real_rename(source, target)
    swap._rename = rename
with swap.replacing(final) as staging:
    (staging / "fairness.csv").write_text("new\\n")
"""


@pytest.mark.parametrize(("mode", "left"), [("before-exchange", "old\n"),
                                            ("after-exchange", "new\n")])
def test_a_kill_at_the_exchange_leaves_the_old_or_the_new_folder(
        mode: str, left: str, tmp_path: Path) -> None:
    """SIGKILL just before or after the exchange: a whole folder is in place, never none; the
    next write removes the leftover."""
    final = _folder(tmp_path / "results" / "a", "old\n")
    done = subprocess.run([sys.executable, "-c", _KILLED_SWAP, mode, str(final)], env=_env(),
                          capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (final / "fairness.csv").read_text() == left
    assert len(_hidden(final.parent)) == 1  # the staging folder (new or old files)
    _write(final, "next\n")
    assert (final / "fairness.csv").read_text() == "next\n"
    assert _hidden(final.parent) == []


def test_a_kill_between_the_fallback_renames_is_restored_by_the_next_write(
        tmp_path: Path) -> None:
    """Without the exchange a kill between the renames leaves only ``.previous``; recover()
    (the next write's first step) puts the old folder back."""
    final = _folder(tmp_path / "results" / "a", "old\n")
    done = subprocess.run([sys.executable, "-c", _KILLED_SWAP, "fallback", str(final)],
                          env=_env(), capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert not final.exists() and any(n.endswith(".previous") for n in _hidden(final.parent))
    swap.recover(final)
    assert (final / "fairness.csv").read_text() == "old\n"
    assert _hidden(final.parent) == []


def test_stale_folders_are_removed_but_not_a_live_writers_or_another_audits(
        tmp_path: Path) -> None:
    """Leftovers of this audit go; a locked staging folder and ``a-2``'s leftovers stay."""
    import fcntl

    out = tmp_path / "results"
    final = _folder(out / "a", "old\n")
    for name in (".a-abcd1234", ".a-efgh5678.previous", ".a-2-abcd1234", ".a-live1234"):
        _folder(out / name, "leftover\n")
    fd = os.open(out / ".a-live1234", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _write(final, "new\n")
    finally:
        os.close(fd)
    assert (final / "fairness.csv").read_text() == "new\n"
    assert _hidden(out) == [".a-2-abcd1234", ".a-live1234"]


def test_write_audit_removes_a_stale_staging_folder(german_repo: Path, tmp_path: Path) -> None:
    """``write_audit`` writes through the swap: an old run's hidden staging folder is gone."""
    from faircode.audit.data import load_audit
    from faircode.audit.manifest import load_manifest
    from faircode.core.config import BenchmarkConfig
    from faircode.evaluate.tables import AuditResults
    from faircode.evaluate.write import write_audit
    from faircode.grid.predictions import timings_path

    data = load_audit(load_manifest(german_repo / "audits" / AUDIT / "audit.yaml"))
    _folder(tmp_path / f".{AUDIT}-x1y2z3w4", "from a killed run\n")
    frame = pd.DataFrame({"audit": [AUDIT], "value": [0.5]})
    folder = write_audit(data, AuditResults(frame, frame, frame, frame, cells=(), rule=None),
                         config=BenchmarkConfig(jobs=1), out_dir=tmp_path, provenance_record={})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        AUDIT, f"{AUDIT}.seconds.json"] == [folder.name, timings_path(folder).name]


def test_hidden_results_folders_are_ignored_by_git() -> None:
    """A leftover ``results/.<audit>-xxxxxxxx/`` never makes the tree dirty for ``freeze``."""
    done = subprocess.run(["git", "check-ignore", "-q", "--no-index",
                           f"results/.{AUDIT}-abcd1234/run.json"], cwd=REPO)
    assert done.returncode == 0


# ------------------------------------------------------------------ small ones


def _rerecord(folder: Path) -> None:
    """Record ``folder``'s files as they are now in its run.json (a writer that wrote them so):
    past the readers' sha256 check, the table checks of the sync itself are what is tested."""
    from faircode.core.digests import folder_digests

    run = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**run, "files": folder_digests(folder)}))


def test_a_results_table_cut_mid_row_is_refused(results: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``track`` of a fairness.csv cut in the middle of a row (and so recorded): exit 2, one
    line naming it."""
    table = results / AUDIT / "fairness.csv"
    data = table.read_bytes()
    table.write_bytes(data[: len(data) // 2])
    _rerecord(results / AUDIT)
    code = cli.main(["track", "--results", str(results), "--tracking-uri", "http://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"{table}: line ") and "cut short" in err


def test_a_row_narrower_than_the_header_is_refused(results: Path) -> None:
    """A row with a field missing is named by its line, not logged with an empty cell."""
    from faircode.record.tracking import ResultsError

    table = results / AUDIT / "performance.csv"
    lines = table.read_text().splitlines(keepends=True)
    lines[3] = lines[3].rsplit(",", 1)[0] + "\n"
    table.write_text("".join(lines))
    _rerecord(results / AUDIT)
    with pytest.raises(ResultsError, match=rf"{table.name}: line 4: expected \d+ fields"):
        sync_results(results, tracking_uri="http://127.0.0.1:9")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_perturb_to_a_full_disk_is_one_line(tmp_path: Path) -> None:
    """``faircode perturb > /dev/full``: exit 1 and one line on stderr, no traceback."""
    axes = tmp_path / "axes.yaml"
    axes.write_text("- name: g\n  substitutions: [{pattern: he, replacement: she}]\n")
    source = tmp_path / "in.jsonl"
    source.write_text(textwrap.dedent("""\
        {"id": 1, "payload": "he said"}
        {"id": 2, "payload": "he went"}
    """))
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "faircode.pipeline.cli", "perturb", "--axes",
                               str(axes), str(source)], env=_env(), stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == "stdout: cannot write the output: No space left on device (OSError)\n"
