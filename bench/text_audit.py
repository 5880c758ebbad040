"""The whole bias_madlibs text audit, stage by stage as DVC runs it, timed; then its findings.

Runs the four text stages and the evaluation (text-fetch, text-prepare, text-train, text-score,
then evaluate over this audit alone -- no grid audit, no ``audits`` list: the ``python -m
faircode.pipeline.stages.*`` commands of the ``dvc.yaml`` files) as separate processes in a
temporary copy of the project's audit folder and params, with the mirrors of
``$FAIRCODE_DATA_MIRROR``; prints each stage's wall and CPU seconds, then the tables a reader
cites from ``results/bias_madlibs/``: the systems (a trained one's held-out AUC), FPED and FNED,
the per-term false positive rates of the sexual-orientation, religion and race/ethnicity terms
at each system's global operating point with their pinned AUC, the flip rates of every axis and
kind (explicit and proxy), every swap against its placebo, and the CTF gaps.  ``--out`` keeps
the results folder; ``--n-resamples``/``--n-permutations`` override ``params.yaml`` (B = P =
2000 by default); ``--findings FOLDER`` prints the tables of a kept folder and runs nothing.

    PYTHONPATH=$PWD FAIRCODE_DATA_MIRROR=../shared/datasets:../shared/datasets-extra \\
        .venv/bin/python bench/text_audit.py --out /tmp/text-audit
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parent.parent
AUDIT = "bias_madlibs"
STAGES = (
    ("text-fetch", ["fetch", AUDIT]),
    ("text-prepare", ["text_prepare", AUDIT, f"data/raw/{AUDIT}", f"data/text/{AUDIT}/payloads"]),
    ("text-train", ["text_train", AUDIT, f"data/raw/{AUDIT}", f"data/text/{AUDIT}/systems"]),
    ("text-score", ["text_score", AUDIT, f"data/text/{AUDIT}/payloads",
                    f"data/text/{AUDIT}/systems", f"data/text/{AUDIT}/scores"]),
    ("evaluate", ["evaluate", "data/prepared", "data/predictions", "data/text", "results"]),
)


def _project(root: Path, *, n_resamples: int | None, n_permutations: int | None) -> None:
    shutil.copytree(REPO / "audits" / AUDIT, root / "audits" / AUDIT)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params.pop("audits", None)  # no grid audit: evaluate runs this text audit alone
    params["text_audits"] = [AUDIT]
    for key, value in (("n_resamples", n_resamples), ("n_permutations", n_permutations)):
        if value is not None:
            params["stats"][key] = value
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def run_stages(root: Path) -> list[tuple[str, float, float]]:
    """Run every stage in ``root``; return (stage, wall seconds, CPU seconds of the process)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = []
    for name, args in STAGES:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", f"faircode.pipeline.stages.{args[0]}", *args[1:]],
                       cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        out.append((name, wall, cpu))
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def findings(folder: Path) -> str:
    """The tables a reader cites, as Markdown."""
    terms = pd.read_csv(folder / "terms.csv")
    flips = pd.read_csv(folder / "flips.csv")
    ctf = pd.read_csv(folder / "ctf.csv")
    points = pd.read_csv(folder / "operating_points.csv")
    systems = pd.read_csv(folder / "systems.csv")
    auc = pd.read_csv(folder / "auc.csv")
    lines = ["## Systems", "", systems.loc[:, ["system", "origin", "n_train", "n_test",
                                                "test_auc", "test_auc_ci_low",
                                                "test_auc_ci_high", "test_accuracy"]]
             .to_markdown(index=False, floatfmt=".4f"), "",
             "## Operating points", "", points.to_markdown(index=False, floatfmt=".4f"), ""]
    fp = terms[(terms["operating_point"] == "global") & (terms["metric"] == "false_positive_rate")
               & terms["category"].isin(["sexual_orientation", "religion", "race_ethnicity"])]
    for system, part in fp.groupby("system", sort=False):
        table = pd.DataFrame({
            "category": part["category"], "term": part["term"], "n": part["n"],
            "FP": part["errors"],
            "FPR % [95 % CI]": [f"{_pct(r)} [{_pct(lo)}, {_pct(hi)}]" for r, lo, hi in
                                zip(part["rate"], part["ci_low"], part["ci_high"], strict=True)],
            "background %": [_pct(b) for b in part["background_rate"]],
            "q": [f"{q:.2g}" for q in part["q_value"]],
            "pinned AUC": [_pinned(auc, system, term) for term in part["term"]]})
        lines += [f"## {system}: false positive rate per term, non-toxic sentences, global point",
                  "", table.to_markdown(index=False), ""]
    for (system, point), part in flips.groupby(["system", "operating_point"], sort=False):
        table = pd.DataFrame({
            "axis": part["axis"], "kind": part["kind"], "changed": part["n_changed"],
            "flipped": part["n_flipped"],
            "flip % [95 % CI]": [f"{_pct(r)} [{_pct(lo)}, {_pct(hi)}]" for r, lo, hi in
                                 zip(part["flip_rate"], part["ci_low"], part["ci_high"],
                                     strict=True)],
            "to flagged %": [_pct(x) for x in part["to_positive"]],
            "to not flagged %": [_pct(x) for x in part["to_negative"]],
            "q": ["n/a" if pd.isna(q) else f"{q:.2g}" for q in part["q_value"]]})
        threshold = part["threshold"].iat[0]
        lines += [f"## {system}: flip rates at {point} ({threshold:.4g})", "",
                  table.to_markdown(index=False), ""]
    lines += placebo_lines(pd.read_csv(folder / "placebo.csv"))
    table = ctf.loc[:, ["system", "axis", "kind", "set", "n_pairs", "n_units", "ctf_gap",
                        "ci_low", "ci_high", "shift", "q_value"]]
    lines += ["## CTF gap per axis", "", table.to_markdown(index=False, floatfmt=".4f"), ""]
    return "\n".join(lines)


def _pinned(auc: pd.DataFrame, system: object, term: object) -> str:
    row = auc[(auc["system"] == system) & (auc["term"] == term)
              & (auc["metric"] == "pinned_auc")]
    return f"{row['value'].iat[0]:.3f}" if len(row) else "n/a"


def placebo_lines(placebo: pd.DataFrame) -> list[str]:
    """Every swap against its placebo at the global point (flip rate) and the shift."""
    part = placebo[(placebo["measure"] == "shift") | (placebo["operating_point"] == "global")]
    lines = []
    for system, rows in part.groupby("system", sort=False):
        table = pd.DataFrame({
            "set": rows["set"], "axis": rows["axis"], "measure": rows["measure"],
            "swap": rows["between"], "placebo": rows["placebo"],
            "difference [95 % CI]": [f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]" for d, lo, hi in
                                     zip(rows["difference"], rows["ci_low"], rows["ci_high"],
                                         strict=True)],
            "q": ["n/a" if pd.isna(q) else f"{q:.2g}" for q in rows["q_value"]],
            "verdict": rows["verdict"]})
        lines += [f"## {system}: each swap against its placebo (flip rate at the global point, "
                  "shift)", "", table.to_markdown(index=False, floatfmt=".4f"), ""]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="keep results/bias_madlibs here")
    parser.add_argument("--n-resamples", type=int)
    parser.add_argument("--n-permutations", type=int)
    parser.add_argument("--quiet", action="store_true", help="print the timings only")
    parser.add_argument("--findings", type=Path, help="print a kept results folder's tables")
    args = parser.parse_args(argv)
    if args.findings is not None:
        print(findings(args.findings))
        return 0
    with tempfile.TemporaryDirectory(prefix="text-audit-") as tmp:
        root = Path(tmp)
        _project(root, n_resamples=args.n_resamples, n_permutations=args.n_permutations)
        timings = run_stages(root)
        for name, wall, cpu in timings:
            print(f"{name:<14} wall {wall:7.1f} s   cpu {cpu:7.1f} s")
        print(f"{'total':<14} wall {sum(t[1] for t in timings):7.1f} s   cpu "
              f"{sum(t[2] for t in timings):7.1f} s")
        folder = root / "results" / AUDIT
        if not args.quiet:
            print(findings(folder))
        if args.out is not None:
            shutil.rmtree(args.out, ignore_errors=True)
            shutil.copytree(folder, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
