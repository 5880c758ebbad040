"""A decision log of any size audited in bounded memory: streamed, on Dask, and against memory.

Run from the repository root (``PYTHONPATH=$PWD``); every measured audit is a fresh
``faircode audit`` process whose wall time and peak resident memory (the process's own
accounting, ``os.wait4``) are printed:

    .venv/bin/python bench/log_scale.py generate --rows 100000000 --out ../logs/1e8
    .venv/bin/python bench/log_scale.py stream ../logs/1e7 ../logs/2e7     # one row per log
    .venv/bin/python bench/log_scale.py dask ../logs/1e7 --workers 1 2 4   # LocalCluster
    .venv/bin/python bench/log_scale.py compare ../logs/1e6                # streamed vs memory

``generate`` writes a synthetic log once, in chunks of 10⁶ rows, as Parquet (row groups of 10⁶):
``customer`` (units: each row's customer drawn uniformly from ``rows / 2`` customers, so a
customer has Poisson(2) decisions spread over the whole log), ``sex`` (F for 40 % of customers,
0.5 % of rows missing), ``age`` (per customer, 18-77), ``repaid`` (the label), ``approved`` (the
decision, ``risk > 0.5``) and ``risk`` (a model's probability, full float64 precision: about one
distinct value per row) -- plus ``log.yaml``, its declaration (attributes sex and age < 25, units
by customer, the score on its probability scale).  ``stream`` audits each log with
``faircode audit LOG.yaml`` (rows per second, peak memory: the goal is < 2 GB whatever the
length); ``dask`` starts a ``LocalCluster`` on 127.0.0.1 with 1, 2, 4 single-threaded worker
processes and audits the log on it (``--scheduler``), checking that every table equals the
streamed one (each worker's own peak memory read on it by ``Client.run``); ``compare`` audits
one log streamed and ``--in-memory`` and compares every output file byte for byte (``run.json``
without its timings and its own output path).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

CHUNK = 1_000_000
TABLES = ("fairness", "performance", "intersectional", "counterfactual", "groups",
          "calibration", "calibration_gap")
DECLARATION = """name: loans
title: Synthetic loan decisions ({rows:,} rows)
log: {{path: log.parquet}}
target: {{column: repaid, method: binary, favourable: 1}}
system:
  name: scorecard
  decision: {{column: approved, equals: 1}}
  score: {{column: risk, scale: probability}}
unit: customer
protected_attributes:
  - {{name: sex, type: categorical, column: sex, disadvantaged_values: [F],
     advantaged_values: [M]}}
  - {{name: young, type: numeric_threshold, column: age, threshold: 25, disadvantaged: below}}
"""


def _mix(x: np.ndarray, salt: int) -> np.ndarray:
    """A per-customer pseudo-random integer (splitmix64 of id and salt)."""
    z = (x.astype(np.uint64) + np.uint64(salt)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    return z ^ (z >> np.uint64(31))


def generate(rows: int, out: Path, *, seed: int = 0) -> None:
    """Write ``out/log.parquet`` (``rows`` decisions) and ``out/log.yaml``, chunk by chunk."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    customers = max(1, rows // 2)
    schema = pa.schema([("customer", pa.int64()), ("sex", pa.string()), ("age", pa.int16()),
                        ("repaid", pa.int8()), ("approved", pa.int8()), ("risk", pa.float64())])
    t0 = time.perf_counter()
    with pq.ParquetWriter(out / "log.parquet", schema) as writer:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            customer = rng.integers(0, customers, n)
            female = (_mix(customer, 1) % np.uint64(5)) < 2
            age = (18 + _mix(customer, 2) % np.uint64(60)).astype(np.int16)
            sex = np.where(female, "F", "M").astype(object)
            sex[rng.random(n) < 0.005] = None
            logit = -0.4 + 0.5 * ~female + 0.02 * (age - 40) + rng.normal(0, 1.2, n)
            risk = 1 / (1 + np.exp(-logit))
            repaid = (rng.random(n) < risk).astype(np.int8)
            writer.write_table(pa.table(
                {"customer": customer, "sex": sex, "age": age, "repaid": repaid,
                 "approved": (risk > 0.5).astype(np.int8), "risk": risk}, schema=schema),
                row_group_size=CHUNK)
    (out / "log.yaml").write_text(DECLARATION.format(rows=rows))
    size = (out / "log.parquet").stat().st_size
    print(f"{out}: {rows:,} rows, {size / 2**20:,.0f} MiB, {time.perf_counter() - t0:.1f} s")


def measured(argv: list[str], *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv``; its wall seconds and peak resident memory (MiB, the process's own)."""
    t0 = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    out, err = child.communicate()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{err.decode()[-3000:]}")
    return {"wall": wall, "rss_mib": usage.ru_maxrss / 1024, "user": usage.ru_utime,
            "sys": usage.ru_stime, "stdout": out.decode().strip()}


def faircode_audit(log: Path, out: Path, *extra: str) -> dict[str, Any]:
    # the module, not the venv's ``faircode`` script: the code of the tree the bench runs from
    return measured([sys.executable, "-m", "faircode.pipeline.cli", "audit",
                     str(log / "log.yaml"), "--out", str(out), *extra])


def rows_of(log: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(log / "log.parquet").metadata.num_rows)


def digests(folder: Path) -> dict[str, str]:
    return {t: hashlib.sha256((folder / f"{t}.csv").read_bytes()).hexdigest()[:12]
            for t in TABLES}


def stream(logs: list[Path], extra: list[str]) -> None:
    """Each log streamed: wall, rows per second, peak memory."""
    print(f"{'rows':>13} {'wall s':>8} {'rows/s':>12} {'peak MiB':>9} {'CPU s':>7}")
    for log in logs:
        with tempfile.TemporaryDirectory(prefix="log-scale-") as tmp:
            got = faircode_audit(log, Path(tmp), *extra)
        n = rows_of(log)
        print(f"{n:>13,} {got['wall']:>8.1f} {n / got['wall']:>12,.0f} {got['rss_mib']:>9.0f} "
              f"{got['user'] + got['sys']:>7.1f}")


def dask(log: Path, workers: list[int], extra: list[str]) -> None:
    """The log on a LocalCluster of 1, 2, 4 worker processes; tables equal the streamed ones."""
    from distributed import Client, LocalCluster

    code = _code()
    with tempfile.TemporaryDirectory(prefix="log-scale-") as tmp:
        base = faircode_audit(log, Path(tmp) / "streamed", *extra)
        reference = digests(Path(tmp) / "streamed" / "loans")
        print(f"streamed: {base['wall']:.1f} s, peak {base['rss_mib']:.0f} MiB")
        for w in workers:
            with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                              host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster, \
                    Client(cluster, set_as_default=False) as client:
                got = faircode_audit(log, Path(tmp) / f"dask{w}", "--scheduler",
                                     cluster.scheduler_address, *extra)
                peaks = sorted(client.run(_peak_mib).values())
            if _code() != code:  # the workers import faircode when their first task comes
                raise SystemExit("faircode's code changed while the log was audited: the "
                                 "comparison with the streamed tables is void; run it again")
            got_digests = digests(Path(tmp) / f"dask{w}" / "loans")
            differ = [t for t in TABLES if got_digests[t] != reference[t]]
            if differ:  # kept for a look: both folders outlive the bench's temporary one
                kept = Path(tempfile.mkdtemp(prefix="log-scale-differ-"))
                for name in ("streamed", f"dask{w}"):
                    shutil.copytree(Path(tmp) / name, kept / name)
                differ.append(f"both kept in {kept}")
            print(f"{w} workers: {got['wall']:.1f} s, driver peak {got['rss_mib']:.0f} MiB, "
                  f"workers' peaks {', '.join(f'{p:.0f}' for p in peaks)} MiB, tables "
                  + ("identical to the streamed ones" if not differ
                     else f"DIFFERENT from the streamed ones: {', '.join(differ)}"))


def _code() -> str:
    from faircode.provenance.state import code_digest

    return code_digest()


def _peak_mib() -> float:
    """This process's peak resident memory (MiB): run on every worker by ``Client.run``."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_json(folder: Path) -> dict[str, Any]:
    run = json.loads((folder / "run.json").read_text())
    for key in ("seconds", "git_commit", "git_dirty"):
        run.pop(key, None)
    run["cells"] = [{k: v for k, v in c.items() if k != "seconds"} for c in run["cells"]]
    run.pop("files", None)  # compared file by file below
    return run


def compare(log: Path, extra: list[str]) -> None:
    """One log streamed and in memory: every output file byte for byte."""
    with tempfile.TemporaryDirectory(prefix="log-scale-") as tmp:
        a = faircode_audit(log, Path(tmp) / "streamed", *extra)
        b = faircode_audit(log, Path(tmp) / "memory", "--in-memory", *extra)
        left, right = Path(tmp) / "streamed" / "loans", Path(tmp) / "memory" / "loans"
        names = sorted(p.name for p in left.iterdir())
        print(f"{rows_of(log):,} rows: streamed {a['wall']:.1f} s / {a['rss_mib']:.0f} MiB, "
              f"in memory {b['wall']:.1f} s / {b['rss_mib']:.0f} MiB")
        for name in names:
            if name == "run.json":
                same = _run_json(left) == _run_json(right)
                print(f"  run.json (without its timings): {'identical' if same else 'DIFFERS'}")
                continue
            same = (left / name).read_bytes() == (right / name).read_bytes()
            print(f"  {name}: {'identical' if same else 'DIFFERS'} byte for byte")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--rows", type=int, required=True)
    g.add_argument("--out", type=Path, required=True)
    for name in ("stream", "dask", "compare"):
        p = sub.add_parser(name)
        p.add_argument("logs", type=Path, nargs="+")
        p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
        p.add_argument("--stats", default="200", help="B = P for every test (default 200)")
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.rows, args.out)
        return
    extra = ["--n-resamples", args.stats, "--n-permutations", args.stats]
    print(f"load average {os.getloadavg()[0]:.2f}; B = P = {args.stats}")
    if args.command == "stream":
        stream(args.logs, extra)
    elif args.command == "dask":
        for log in args.logs:
            dask(log, args.workers, extra)
    else:
        for log in args.logs:
            compare(log, extra)


if __name__ == "__main__":
    main()
