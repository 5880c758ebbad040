"""Benchmark: issue 25's process faults, before (a base commit) and after (this tree), as a table.

Each case runs in subprocesses whose ``PYTHONPATH`` is one code tree -- ``--base`` (default
``70e205b``, extracted with ``git archive`` into a temporary folder with its ``.gitignore``) and
this checkout -- on the committed ``results/german_credit_lending`` (15 child runs) and the german
credit raw file from ``$FAIRCODE_DATA_MIRROR``:

* three ``faircode track`` at once into a new SQLite file, an existing one and (unless
  ``--no-server``) a new experiment of an ``mlflow server`` on 127.0.0.1; a sync SIGKILLed after
  five children, then a normal sync (SQLite and server); counted through MLflow's search API;
* ``faircode run german_credit_lending --jobs 2`` killed by SIGKILL, SIGTERM and SIGINT one second
  after its two workers appear: its descendants (from ``/proc``) still alive five seconds later;
* ``write_audit`` SIGKILLed just before and just after the first step of its folder swap (a rename,
  or the exchange): what ``results/<audit>`` holds, the hidden leftovers, and after the next
  write the leftovers and ``git status`` of a repository with the tree's ``.gitignore``;
* ``track`` of a fairness.csv cut mid-row, and ``perturb`` writing to ``/dev/full``.

Survivors of the base code are killed by the script (by their recorded pids).  Usage:
``FAIRCODE_DATA_MIRROR=... PYTHONPATH=. python bench/faults.py [--base REV] [--no-server]``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AUDIT = "german_credit_lending"


def run(code: Path, args: list[str], *, cwd: Path, **kwargs: object) -> subprocess.Popen[bytes]:
    """Start ``python args`` importing the faircode of ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code), "MLFLOW_DISABLE_TELEMETRY": "true",
           "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}
    return subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, **kwargs)  # type: ignore[call-overload]


def counted(uri: str, experiment: str) -> str:
    """``P parent(s), R child runs / K keys`` through the search API."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return "no experiment"
    runs = client.search_runs([found.experiment_id], max_results=1000)
    parents = sum("faircode.digest" in r.data.tags for r in runs)
    keys = collections.Counter(r.data.tags["faircode.child_key"] for r in runs
                               if "faircode.child_key" in r.data.tags)
    return f"{parents} parent(s), {sum(keys.values())} child runs / {len(keys)} keys"


def track_at_once(code: Path, work: Path, uri: str, experiment: str) -> str:
    """Three concurrent syncs of one state: their exit codes and what the store holds."""
    command = ["-m", "faircode.pipeline.cli", "track", "--results", str(work / "results"),
               "--tracking-uri", uri, "--experiment", experiment]
    processes = [run(code, command, cwd=work, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL) for _ in range(3)]
    codes = sorted(p.wait(timeout=900) for p in processes)
    return f"exit {','.join(map(str, codes))}; {counted(uri, experiment)}"


KILL_SYNC = """
import os, signal, sys
from mlflow.tracking import MlflowClient
from faircode.pipeline import cli
calls, original = [0], MlflowClient.set_terminated
def dying(self, run_id, *args, **kwargs):
    calls[0] += 1
    if calls[0] > 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(self, run_id, *args, **kwargs)
MlflowClient.set_terminated = dying
sys.exit(cli.main(sys.argv[1:]))
"""


def killed_sync(code: Path, work: Path, uri: str, experiment: str) -> str:
    """A sync SIGKILLed after five children, then a normal one."""
    args = ["track", "--results", str(work / "results"), "--tracking-uri", uri,
            "--experiment", experiment]
    run(code, ["-c", KILL_SYNC, *args], cwd=work, stderr=subprocess.DEVNULL).wait(timeout=600)
    again = run(code, ["-m", "faircode.pipeline.cli", *args], cwd=work, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL)
    out = (again.communicate(timeout=600)[0] or b"").decode().split(":")[0]
    return f"next sync exit {again.returncode} ({out}); {counted(uri, experiment)}"


def processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, start time, state) from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(entry.name)] = (int(fields[1]), fields[19], fields[0])
    return table


def descendants(root: int) -> dict[int, str]:
    table, found, frontier = processes(), {}, {root}
    while frontier:
        frontier = {p for p, (pp, _, _) in table.items() if pp in frontier and p not in found}
        found.update({p: table[p][1] for p in frontier})
    return found


def alive(recorded: dict[int, str]) -> list[int]:
    """The recorded processes still running (same pid and start time, not a zombie)."""
    table = processes()
    return [p for p, s in recorded.items() if p in table and table[p][1] == s
            and table[p][2] != "Z"]


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def killed_run(code: Path, repo: Path, signum: int) -> str:
    """``faircode run`` killed during fitting: its exit code and the descendants left."""
    process = run(code, ["-m", "faircode.pipeline.cli", "run", AUDIT,
                          "--audits", str(repo / "audits"),
                         "--out", str(repo / f"out-{signum}"), "--jobs", "2", "--n-resamples",
                         "20", "--n-permutations", "20", "--quiet"],
                  cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while sum(b"spawn_main" in cmdline(p) for p in descendants(process.pid)) < 2:
        if process.poll() is not None or time.monotonic() > deadline:
            return f"no workers seen (exit {process.poll()})"
        time.sleep(0.1)
    time.sleep(1.0)
    family = descendants(process.pid)
    os.kill(process.pid, signum)
    killed = time.perf_counter()
    status = process.wait(timeout=300)
    took = time.perf_counter() - killed
    time.sleep(5)
    left = alive(family)
    for pid in left:  # the base code's orphans
        os.kill(pid, signal.SIGKILL)
    return (f"exit {status} after {took:.1f} s; {len(left)} of {len(family)} descendants "
            "alive 5 s later")


SWAP = """
import os, signal, sys
from pathlib import Path
import pandas as pd
from faircode.config import BenchmarkConfig
from faircode.data import load_audit
from faircode.evaluate import AuditResults, write_audit
from faircode.manifest import load_manifest
when, repo = sys.argv[1], Path(sys.argv[2])
data = load_audit(load_manifest(repo / "audits" / "german_credit_lending" / "audit.yaml"))
def write(value):
    frame = pd.DataFrame({"audit": ["german_credit_lending"], "value": [value]})
    write_audit(data, AuditResults(frame, frame, frame, frame, cells=()),
                config=BenchmarkConfig(jobs=1), out_dir=repo / "results", provenance_record={})
if when == "none":  # the next write, nothing injected
    write(3.0)
    sys.exit()
write(1.0)  # the old results
def dying(step):
    def wrapped(*args):
        if when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        done = step(*args)
        os.kill(os.getpid(), signal.SIGKILL)
        return done
    return wrapped
try:
    from faircode.evaluate import swap
    swap._exchange = dying(swap._exchange)
except ImportError:  # the base code: two os.replace
    os.replace = dying(os.replace)
write(2.0)
"""


def killed_swap(code: Path, repo: Path, when: str) -> str:
    """write_audit SIGKILLed before/after the swap's first step; then the next write."""
    out = repo / "results"
    shutil.rmtree(out, ignore_errors=True)
    run(code, ["-c", SWAP, when, str(repo)], cwd=repo, stderr=subprocess.DEVNULL).wait(600)
    table = out / AUDIT / "fairness.csv"
    held = ("missing" if not table.is_file() else
            "old" if table.read_text().endswith("1.0\n") else "new")
    hidden = len([p for p in out.iterdir() if p.name.startswith(".")])
    run(code, ["-c", SWAP, "none", str(repo)], cwd=repo).wait(600)
    after = len([p for p in out.iterdir() if p.name.startswith(".")])
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copy(code / ".gitignore", repo / ".gitignore")
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "results"],
                           cwd=repo, capture_output=True, text=True).stdout
    dirty_lines = [line for line in dirty.splitlines() if "/." in line]
    return (f"results/{AUDIT}: {held}; {hidden} hidden leftover(s); after the next write: "
            f"{after}, git {'dirty' if dirty_lines else 'clean'}")


def cut_csv(code: Path, work: Path) -> str:
    """track of a results folder whose fairness.csv is cut mid-row."""
    cut = work / "cut"
    shutil.copytree(work / "results", cut, dirs_exist_ok=True)
    table = cut / AUDIT / "fairness.csv"
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    done = run(code, ["-m", "faircode.pipeline.cli", "track", "--results", str(cut),
                       "--tracking-uri",
                      f"sqlite:///{work / 'cut.db'}", "--experiment", "cut"], cwd=work,
               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = (b.decode().replace(f"{work}/", "") for b in done.communicate(timeout=600))
    if done.returncode == 0:
        return f"exit 0: {out.strip().split(' in ')[0]}"
    return f"exit {done.returncode}: {err.strip().splitlines()[-1]}"


def full_disk(code: Path, work: Path) -> str:
    """perturb with stdout on /dev/full."""
    (work / "axes.yaml").write_text("- name: g\n  substitutions: [{pattern: he, replacement: "
                                    "she}]\n")
    (work / "in.jsonl").write_text('{"id": 1, "payload": "he said"}\n')
    with open("/dev/full", "w") as full:
        done = run(code, ["-m", "faircode.pipeline.cli", "perturb",
                           "--axes", str(work / "axes.yaml"),
                          str(work / "in.jsonl")], cwd=work, stdout=full, stderr=subprocess.PIPE)
        err = (done.communicate(timeout=120)[1] or b"").decode()
    return (f"exit {done.returncode}; {len(err.splitlines())} stderr line(s)"
            f"{', traceback' if 'Traceback' in err else ''}")


def start_server(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``mlflow server`` on a free 127.0.0.1 port with a temp store; (process, url)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'server.db'}",
         "--artifacts-destination", str(root / "artifacts")],
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
             "MLFLOW_DISABLE_TELEMETRY": "true"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(360):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return process, url
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("mlflow server did not start")


def cases(server: str | None) -> dict[str, Callable[[Path, Path, str], str]]:
    """Case label -> function of (code tree, work folder, tag)."""
    table: dict[str, Callable[[Path, Path, str], str]] = {
        "3 x track, new SQLite file": lambda c, w, t: track_at_once(
            c, w, f"sqlite:///{w / 'new.db'}", "faults"),
        "3 x track, existing SQLite store": lambda c, w, t: track_at_once(
            c, w, f"sqlite:///{w / 'old.db'}", "faults"),
        "track SIGKILLed after 5 children, then track (SQLite)": lambda c, w, t: killed_sync(
            c, w, f"sqlite:///{w / 'killed.db'}", "killed"),
    }
    if server is not None:
        table["3 x track, mlflow server (new experiment)"] = lambda c, w, t: track_at_once(
            c, w, server, f"faults-{t}")
        table["track SIGKILLed after 5 children, then track (server)"] = \
            lambda c, w, t: killed_sync(c, w, server, f"killed-{t}")
    for signum in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
        table[f"faircode run, {signum.name} during fitting"] = functools.partial(
            lambda c, w, t, s: killed_run(c, w / "repo", s), s=signum)
    table["write_audit SIGKILLed before the swap's first step"] = \
        lambda c, w, t: killed_swap(c, w / "repo", "before")
    table["write_audit SIGKILLed after the swap's first step"] = \
        lambda c, w, t: killed_swap(c, w / "repo", "after")
    table["track of a fairness.csv cut mid-row"] = lambda c, w, t: cut_csv(c, w)
    table["perturb > /dev/full"] = lambda c, w, t: full_disk(c, w)
    return table


def prepare(work: Path) -> None:
    """The results copy, an existing SQLite store and a repo with the german raw file."""
    from mlflow.tracking import MlflowClient

    from faircode.audit.fetch import fetch
    from faircode.audit.manifest import load_manifest

    shutil.copytree(REPO / "results" / AUDIT, work / "results" / AUDIT)
    MlflowClient(tracking_uri=f"sqlite:///{work / 'old.db'}").create_experiment(
        "faults", artifact_location=(work / "artifacts").as_uri())
    repo = work / "repo"
    (repo / "audits" / AUDIT).mkdir(parents=True)
    (repo / "pyproject.toml").write_text("# bench repository root\n")
    shutil.copy(REPO / "audits" / AUDIT / "audit.yaml", repo / "audits" / AUDIT)
    mirrors = tuple(Path(p) for p in os.environ.get("FAIRCODE_DATA_MIRROR", "").split(os.pathsep)
                    if p)
    fetch(load_manifest(repo / "audits" / AUDIT / "audit.yaml"), mirrors=mirrors)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="70e205b", help="the 'before' commit (70e205b)")
    parser.add_argument("--no-server", action="store_true", help="skip the mlflow server cases")
    args = parser.parse_args(argv)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
    root = Path(tempfile.mkdtemp(prefix="faircode-faults-"))
    server = None
    try:
        before = root / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", args.base, "faircode", ".gitignore"],
                                 cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        if not args.no_server:
            server, url = start_server(root)
        rows: dict[str, dict[str, str]] = {}
        for tag, code in (("before", before), ("after", REPO)):
            work = root / tag
            work.mkdir(exist_ok=True)
            prepare(work)
            for label, case in cases(url if server else None).items():
                started = time.perf_counter()
                rows.setdefault(label, {})[tag] = case(code, work, tag)
                print(f"{tag}: {label}: {rows[label][tag]} ({time.perf_counter() - started:.0f}s)",
                      file=sys.stderr)
        print(f"| case | before ({args.base}) | after ({head}) |\n|---|---|---|")
        for label, row in rows.items():
            print(f"| {label} | {row['before']} | {row['after']} |")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
