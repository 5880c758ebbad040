"""What the pinned numerical configuration costs: the fit stages under it and natively.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD FAIRCODE_DATA_MIRROR=... nice python bench/numerics.py
        [--audits german_credit_lending insurance_denial] [--seeds 5] [--jobs 2]
        [--repeats 3] [--workdir DIR] [--only pinned|native]

It sets up a scratch project in ``--workdir`` (default: a temporary folder, removed): the
audits' manifests, ``params.yaml`` with ``run.seeds: --seeds`` in split mode (K = 5: the paper
state) and ``run.jobs: --jobs``, the raw files fetched from the mirrors and the prepared tables
(the ``prepare`` stage's output).  Then, ``--repeats`` times, it runs the DVC ``fit`` stage
entry point of every audit and part (``python -m faircode.pipeline.stages.fit AUDIT PART ...``:
S0-S2, S3 with ExponentiatedGradient, S4; every replicate), once with the declared
configuration (``FAIRCODE_NUMERICS`` unset: OpenBLAS Haswell, numpy dispatch up to X86_V3, one
thread) and once natively (``FAIRCODE_NUMERICS=native``: the CPU's own kernels), alternating
which goes first, each in fresh processes.  It prints every pass's wall and CPU seconds (user +
system of the stages and their workers: steadier than wall time on a shared machine), the kernels
each mode ran (from the stores' ``cells.json``), the median per mode and the median of the
per-pair ratios pinned / native.  ``--only MODE`` runs one mode once (for an external timer);
the stores of both modes are compared byte for byte when both ran.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from faircode.audit.data import load_audit
from faircode.audit.fetch import MIRROR_ENV, default_mirror, fetch, mirror_dirs
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import prepare, save_prepared
from faircode.core.numerics import KERNEL_FLAGS, MODE_ENV, declared_environment, describe

REPO = Path(__file__).resolve().parent.parent
PARTS = ("unmitigated", "in_processing", "post_processing")


def set_up(workdir: Path, audits: list[str], *, seeds: int, jobs: int) -> None:
    """A scratch project: manifests, params.yaml, fetched raw files, prepared tables."""
    (workdir / "pyproject.toml").write_text("# bench/numerics.py scratch project\n")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["audits"] = audits
    params["run"].update(seeds=seeds, seed_mode="split", jobs=jobs, backend="local",
                         scheduler=None)
    (workdir / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    mirrors = mirror_dirs(None, os.environ.get(MIRROR_ENV) or default_mirror(REPO))
    for audit in audits:
        target = workdir / "audits" / audit / "audit.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "audits" / audit / "audit.yaml", target)
        manifest = load_manifest(target)
        fetch(manifest, mirrors=mirrors)
        save_prepared(prepare(load_audit(manifest)), workdir / "prepared" / audit)


def fit_all(workdir: Path, audits: list[str], *, mode: str) -> tuple[float, float]:
    """(wall, CPU) seconds of every fit stage of ``audits`` (fresh processes) under ``mode``;
    CPU is user + system of the stages and their worker processes (steadier than wall time on
    a shared machine)."""
    # a plain shell: none of the declared values (this process set them on importing faircode)
    env = {k: v for k, v in os.environ.items() if k not in declared_names()}
    env["PYTHONPATH"] = str(REPO)
    if mode == "native":
        env[MODE_ENV] = "native"
    start, cpu = time.perf_counter(), _children_cpu()
    for audit in audits:
        for part in PARTS:
            subprocess.run([sys.executable, "-m", "faircode.pipeline.stages.fit", audit, part,
                            str(workdir / "prepared" / audit),
                            str(workdir / mode / audit / part)],
                           cwd=workdir, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def declared_names() -> set[str]:
    """Every variable the declared configuration sets, and the mode itself."""
    env, _ = declared_environment("x86_64", KERNEL_FLAGS)
    return {MODE_ENV, "NPY_ENABLE_CPU_FEATURES", *env}


def kernels(workdir: Path, mode: str) -> str:
    """The kernels the stores of ``mode`` record (one phrase, ``mixed`` if they differ)."""
    found = {describe(json.loads(p.read_text()).get("numerics"))
             for p in (workdir / mode).rglob("cells.json")}
    return found.pop() if len(found) == 1 else f"mixed: {sorted(found)}"


def same_stores(workdir: Path) -> tuple[int, int]:
    """(files identical, files compared) between the pinned and the native stores."""
    files = sorted(p.relative_to(workdir / "pinned") for p in (workdir / "pinned").rglob("*")
                   if p.is_file())
    same = sum((workdir / "pinned" / f).read_bytes() == (workdir / "native" / f).read_bytes()
               for f in files if (workdir / "native" / f).is_file())
    return same, len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", nargs="+",
                        default=["german_credit_lending", "insurance_denial"])
    parser.add_argument("--seeds", type=int, default=5, help="training replicates K (default 5)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes per fit stage")
    parser.add_argument("--repeats", type=int, default=3, help="pinned/native pairs")
    parser.add_argument("--workdir", type=Path, help="scratch project (kept; default: temporary)")
    parser.add_argument("--only", choices=("pinned", "native"), help="run one mode once")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="faircode-bench-numerics-"))
    try:
        if not (workdir / "params.yaml").is_file():
            workdir.mkdir(parents=True, exist_ok=True)
            set_up(workdir, args.audits, seeds=args.seeds, jobs=args.jobs)
        if args.only:
            wall, cpu = fit_all(workdir, args.audits, mode=args.only)
            print(f"{args.only}: {wall:.1f} s wall, {cpu:.1f} s CPU "
                  f"({kernels(workdir, args.only)})")
            return
        times: dict[str, list[tuple[float, float]]] = {"pinned": [], "native": []}
        for repeat in range(args.repeats):
            order = ("pinned", "native") if repeat % 2 == 0 else ("native", "pinned")
            for mode in order:
                times[mode].append(fit_all(workdir, args.audits, mode=mode))
                wall, cpu = times[mode][-1]
                print(f"pass {repeat + 1} {mode}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
        report(times, workdir, args)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def report(times: dict[str, list[tuple[float, float]]], workdir: Path,
           args: argparse.Namespace) -> None:
    """Medians per mode and of the pair ratios, wall and CPU; whether the stores agree."""
    print(f"fit stages of {', '.join(args.audits)} (3 parts each, K = {args.seeds} split, "
          f"jobs {args.jobs}), {args.repeats} alternating pairs:")
    for mode, values in times.items():
        for i, what in enumerate(("wall", "CPU")):
            column = [v[i] for v in values]
            print(f"  {mode:<6} {what:<4} median {statistics.median(column):7.1f} s  "
                  f"(min {min(column):.1f}, max {max(column):.1f})"
                  + (f"  {kernels(workdir, mode)}" if i == 0 else ""))
    for i, what in enumerate(("wall", "CPU")):
        ratios = [p[i] / n[i] for p, n in zip(times["pinned"], times["native"], strict=True)]
        print(f"  pinned / native {what}: median ratio {statistics.median(ratios):.3f} "
              f"(pairs {', '.join(f'{r:.3f}' for r in ratios)})")
    same, total = same_stores(workdir)
    print(f"  stores identical under the two configurations: {same} of {total} files")


if __name__ == "__main__":
    main()
