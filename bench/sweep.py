"""One sweep value end to end: where ``dvc exp run -S ...`` spends its wall time, before and after.

Run from the repository root on one or two *reproduced scratch clones* (a clone of a checkout
on which ``dvc repro`` has run and whose state is committed, so HEAD is the baseline; never
/work/main or a worktree you work in -- the script runs experiments there):

    .venv/bin/python bench/sweep.py BEFORE_CLONE [AFTER_CLONE] [--value 0.4]
    .venv/bin/python bench/sweep.py BEFORE_CLONE [AFTER_CLONE] --eps 0.02

Default mode: ``dvc exp run -S models.decision_threshold=VALUE`` in each clone.  ``--eps E``:
``dvc exp run -S mitigation.eps=E``; then every results table is compared with HEAD's strategy by
strategy (rows bit for bit, with and without the audit-wide q-values), and ``dvc exp show
--only-changed`` is printed.  Each clone is restored to HEAD afterwards (``git checkout``,
``dvc checkout``); the experiment stays listed in ``dvc exp show``.

How it measures: a ``python`` shim first on ``PATH`` (DVC starts every stage as ``python -m
...``) runs each stage under ``bench/_stage_timer.py``, which logs the process start, the
seconds spent importing and inside the library calls of each phase (load, scoring, curves,
writing, report figures and tables, the MLflow sync).  DVC's own time is what lies outside the
stage processes: set-up (before the first stage), between stages (hashing outputs, the lock),
and after the last one (the experiment's commit).  One run per clone; timings move with the
machine's load (``os.getloadavg()`` is printed).

The clone's MLflow store (``mlflow.db`` and ``mlartifacts/``) is set aside before the run and put
back after it, so every measurement logs its value as a new state against the same store (a
value measured twice would otherwise find its state logged and sync nothing); ``--keep-store``
leaves what the run logged in the store.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

HERE = Path(__file__).resolve().parent
SHIM = """#!/bin/sh
SWEEP_TIMER_T0=$(date +%s.%N); export SWEEP_TIMER_T0
if [ "$1" = "-m" ]; then shift; exec "{python}" "{timer}" "$@"; fi
exec "{python}" "$@"
"""
TABLES = ("fairness", "performance", "intersectional", "counterfactual")
FAMILY = ("q_value", "significant")  # the audit's one BH family: shared by every strategy


def stage_name(record: dict[str, Any]) -> str:
    """``evaluate@compas`` etc. from a timer record (``evaluate``: the one stage over every
    audit, ``evaluate PREPARED_ROOT PREDICTIONS_ROOT RESULTS`` since issue 34, and ``...
    TEXT_ROOT RESULTS`` with the text audits since)."""
    kind, args = record["module"].rsplit(".", 1)[-1], record["args"]
    if kind == "evaluate" and len(args) in (3, 4):
        return kind
    if kind in ("evaluate", "prepare", "fetch"):
        return f"{kind}@{args[0]}"
    if kind == "fit":
        part = {"unmitigated": "fit", "in_processing": "fit-in-processing",
                "post_processing": "fit-post-processing"}[args[1]]
        return f"{part}@{args[0]}"
    return kind.replace("_", "-")


STORE = ("mlflow.db", "mlflow.db-wal", "mlflow.db-shm", "mlartifacts")


def set_aside(clone: Path, where: Path) -> None:
    """Copy the clone's MLflow store (:data:`STORE`) into ``where``."""
    for name in STORE:
        path = clone / name
        if path.is_dir():
            shutil.copytree(path, where / name)
        elif path.is_file():
            shutil.copy2(path, where / name)


def put_back(clone: Path, where: Path) -> None:
    """Replace the clone's MLflow store by the copy in ``where``."""
    for name in STORE:
        path = clone / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        if (where / name).exists():
            shutil.move(where / name, path)


def run_experiment(clone: Path, setting: str, *, pythonpath: str = "") -> dict[str, Any]:
    """``dvc exp run -S setting`` in ``clone`` with the shim; the timer records and the wall.
    ``pythonpath`` is appended to ``PYTHONPATH`` (e.g. a folder holding ruamel.yaml.clib)."""
    python = Path(sys.executable)
    with tempfile.TemporaryDirectory(prefix="sweep-shim-") as tmp:
        shim_dir = Path(tmp)
        (shim_dir / "python").write_text(SHIM.format(python=python,
                                                     timer=HERE / "_stage_timer.py"))
        (shim_dir / "python").chmod(0o755)
        log = shim_dir / "timer.jsonl"
        env = {**os.environ, "PATH": f"{shim_dir}{os.pathsep}{python.parent}{os.pathsep}"
               f"{os.environ.get('PATH', '')}",
               "PYTHONPATH": os.pathsep.join(p for p in (str(clone), pythonpath) if p),
               "SWEEP_TIMER_LOG": str(log), "PYTHONWARNINGS": "ignore"}
        load = os.getloadavg()[0]
        t0 = time.time()
        done = subprocess.run([str(python.parent / "dvc"), "exp", "run", "-S", setting],
                              cwd=clone, env=env, capture_output=True, text=True)
        t1 = time.time()
        if done.returncode != 0:
            raise SystemExit(f"{clone}: dvc exp run -S {setting} exited {done.returncode}:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        records = [json.loads(line) for line in log.read_text().splitlines()]
    return {"clone": str(clone), "setting": setting, "t0": t0, "t1": t1, "load": load,
            "records": records, "stdout": done.stdout, "pythonpath": pythonpath}


def breakdown(run: dict[str, Any]) -> dict[str, float]:
    """Seconds per row of the table (see :func:`show`)."""
    records = sorted(run["records"], key=lambda r: r["t0"])
    out: dict[str, float] = defaultdict(float)
    out["total wall"] = run["t1"] - run["t0"]
    out["DVC set-up (before the first stage)"] = records[0]["t0"] - run["t0"]
    out["DVC after the last stage (experiment commit)"] = run["t1"] - max(
        r["t_end"] for r in records)
    gaps = [b["t0"] - a["t_end"] for a, b in itertools.pairwise(records)]
    out["DVC between stages"] = sum(max(0.0, g) for g in gaps)
    for r in records:
        name = stage_name(r)
        group = name.split("@")[0]
        wall = r["t_end"] - r["t0"]
        calls = r["calls"]
        out[f"{group} (stages: {sum(stage_name(x).split('@')[0] == group for x in records)})"] \
            += wall
        out[f"{name}"] = wall
        out[f"{name} | interpreter start"] = r["t_main"] - r["t0"]
        out[f"{name} | imports"] = r["imports"]
        phases = phase_seconds(group, calls)
        for phase, seconds in phases.items():
            out[f"{name} | {phase}"] = seconds
        out[f"{name} | other"] = wall - (r["t_main"] - r["t0"]) - r["imports"] - sum(
            phases.values())
    return dict(out)


def phase_seconds(group: str, calls: dict[str, float]) -> dict[str, float]:
    """A stage's library seconds by phase (nested calls taken out of their parent)."""
    get = calls.get
    if group == "evaluate":
        curves = get("audit_curves", 0.0)
        return {"load": get("load_prepared", 0.0) + get("load_predictions", 0.0)
                + get("merge_predictions", 0.0),
                "reuse check": get("inputs_key", 0.0) + get("refresh_record", 0.0),
                "scoring": get("evaluate_audit", 0.0) - curves, "curves": curves,
                "writing": get("write_audit", 0.0)}
    if group == "report":
        return {"load": get("load_results", 0.0), "tables": get("write_tables", 0.0),
                "figures": get("write_figures", 0.0) + get("draw", 0.0),
                "curve figures": get("write_curve_figures", 0.0), "html": get("write_html", 0.0)}
    if group == "track":
        return {"MLflow sync": get("sync_results", 0.0)}
    return {}


def show(label: str, runs: list[dict[str, Any]]) -> None:
    """Print one table: a row per measured item, a column per clone."""
    tables = [breakdown(r) for r in runs]
    keys: list[str] = []
    for table in tables:
        keys += [k for k in table if k not in keys]
    summary = [k for k in keys if "@" not in k and " | " not in k]
    width = max(len(k) for k in keys) + 2
    print(f"\n== {label} ==")
    print(f"{'':{width}}" + "".join(f"{Path(r['clone']).name:>12}" for r in runs))
    for r in runs:
        if r.get("pythonpath"):
            print(f"  {Path(r['clone']).name}: PYTHONPATH += {r['pythonpath']}")
    print(f"{'load average (1 min) at start':{width}}"
          + "".join(f"{r['load']:>12.2f}" for r in runs))
    for key in summary:
        print(f"{key:{width}}" + "".join(_cell(t.get(key)) for t in tables))
    stages = sorted({k.split(" | ")[0] for k in keys if "@" in k or " | " in k})
    for stage in stages:
        print(f"  {stage}")
        for key in [k for k in keys if k.split(" | ")[0] == stage and " | " in k]:
            print(f"    {key.split(' | ')[1]:{width - 4}}" + "".join(_cell(t.get(key))
                                                             for t in tables))
            if key.endswith("other"):
                print(f"    {'= wall':{width - 4}}" + "".join(_cell(t.get(stage))
                                                           for t in tables))


def _cell(value: float | None) -> str:
    return f"{'-':>12}" if value is None else f"{value:>11.2f}s"


def restore(clone: Path) -> None:
    """Back to HEAD: tracked files and the DVC outputs of HEAD's dvc.lock."""
    env = {**os.environ, "PYTHONPATH": str(clone)}
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=clone, check=True)
    subprocess.run(["git", "clean", "-qfd", "--", "results"], cwd=clone, check=True)
    subprocess.run([str(Path(sys.executable).parent / "dvc"), "checkout", "-q", "--force"],
                   cwd=clone, env=env, check=True, capture_output=True)


def head_table(clone: Path, path: str) -> pd.DataFrame | None:
    done = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=clone, capture_output=True,
                          text=True)
    return pd.read_csv(io.StringIO(done.stdout), dtype=str, keep_default_na=False) \
        if done.returncode == 0 else None


def compare(clone: Path) -> pd.DataFrame:
    """Per audit x table x strategy: rows of the workspace equal to HEAD's (as text)."""
    rows = []
    for folder in sorted(p for p in (clone / "results").iterdir() if (p / "run.json").is_file()):
        for table in TABLES:
            old = head_table(clone, f"results/{folder.name}/{table}.csv")
            new = pd.read_csv(folder / f"{table}.csv", dtype=str, keep_default_na=False)
            if old is None:
                continue
            for strategy in dict.fromkeys(new["strategy"]):
                a = old[old["strategy"] == strategy].reset_index(drop=True)
                b = new[new["strategy"] == strategy].reset_index(drop=True)
                own = [c for c in b.columns if c not in FAMILY]
                rows.append({"audit": folder.name, "table": table, "strategy": strategy,
                             "rows": len(b), "equal": a.equals(b),
                             "equal_but_q": a[own].equals(b[own]) if len(a) == len(b)
                             else False})
    return pd.DataFrame(rows)


def eps_report(clone: Path) -> None:
    """Which strategies' rows moved, and ``dvc exp show --only-changed``."""
    frame = compare(clone)
    by = frame.groupby("strategy", sort=False).agg(
        tables=("equal", "size"), rows=("rows", "sum"), bit_identical=("equal", "sum"),
        identical_but_q_value=("equal_but_q", "sum"))
    print(f"\n{clone.name}: results tables (audit x table) equal to HEAD's, per strategy")
    print(by.to_string())
    env = {**os.environ, "PYTHONPATH": str(clone)}
    shown = subprocess.run([str(Path(sys.executable).parent / "dvc"), "exp", "show",
                            "--only-changed", "--no-pager", "--md"], cwd=clone, env=env,
                           capture_output=True, text=True)
    print(f"\n{clone.name}: dvc exp show --only-changed (metrics: S0, S2 and S3 per family)")
    print(shown.stdout.strip()[:6000])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clones", nargs="+", type=Path, help="reproduced scratch clones")
    parser.add_argument("--value", type=float, default=0.4, help="models.decision_threshold")
    parser.add_argument("--eps", type=float, default=None, help="mitigation.eps instead")
    parser.add_argument("--keep", action="store_true", help="leave the experiment checked out")
    parser.add_argument("--keep-store", action="store_true",
                        help="keep what the run logged in the clone's MLflow store")
    parser.add_argument("--json", type=Path, default=None, help="write the raw records here")
    parser.add_argument("--pythonpath", default="", help="appended to PYTHONPATH for DVC and "
                        "the stages; a comma-separated list: one entry per clone")
    args = parser.parse_args()
    setting = (f"mitigation.eps={args.eps}" if args.eps is not None
               else f"models.decision_threshold={args.value}")
    runs = []
    paths = args.pythonpath.split(",") if "," in args.pythonpath else [args.pythonpath] * len(
        args.clones)
    for clone, extra in zip(args.clones, paths, strict=True):
        clone = clone.resolve()
        if not (clone / "dvc.lock").is_file() or shutil.which("git") is None:
            raise SystemExit(f"{clone}: expected a reproduced DVC clone")
        with tempfile.TemporaryDirectory(prefix="sweep-store-", dir=clone.parent) as aside:
            if not args.keep_store:
                set_aside(clone, Path(aside))
            try:
                runs.append(run_experiment(clone, setting, pythonpath=extra))
            finally:
                if not args.keep_store:
                    put_back(clone, Path(aside))
        if args.eps is not None:
            eps_report(clone)
        if not args.keep:
            restore(clone)
    show(f"dvc exp run -S {setting}", runs)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
