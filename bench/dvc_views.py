"""Render the DVC views of a results folder: ``dvc exp show`` columns and ``dvc plots show``.

Builds a scratch git + DVC repository with this checkout's ``dvc.yaml``, ``params.yaml`` and
``.dvc/plots`` templates, writes the evaluate stages' views (:mod:`faircode.evaluate.summary`,
:func:`faircode.evaluate.curves.curve_plot`) from the tables of ``RESULTS/<audit>/`` (a
``faircode run`` folder or ``results/``), and reports what DVC shows: how many ``dvc exp show``
columns of each kind, whether two share a name, and the plots' HTML. With ``--screenshot`` it also
photographs the page in headless Chromium; DVC's page loads Vega from a CDN, so ``--vega DIR``
(vega.min.js, vega-lite.min.js, vega-embed.min.js: the npm packages ``vega@5.20.2``,
``vega-lite@5.2.0``, ``vega-embed@6.18.2`` DVC names) points it at local copies instead.

Usage: ``PYTHONPATH=$PWD .venv/bin/python bench/dvc_views.py RESULTS AUDIT [--out DIR]
[--vega DIR --screenshot PNG]``
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd

from faircode.evaluate.curves import curve_plot
from faircode.evaluate.summary import strategy_plot, summary
from faircode.evaluate.tables import AuditResults

REPO = Path(__file__).resolve().parent.parent
CDN = {"https://cdn.jsdelivr.net/npm/vega@5.20.2": "vega.min.js",
       "https://cdn.jsdelivr.net/npm/vega-lite@5.2.0": "vega-lite.min.js",
       "https://cdn.jsdelivr.net/npm/vega-embed@6.18.2": "vega-embed.min.js"}


def _tables(folder: Path) -> AuditResults:
    """The fairness and performance tables of one results folder (all the views read)."""
    return AuditResults(fairness=pd.read_csv(folder / "fairness.csv"),
                        performance=pd.read_csv(folder / "performance.csv"),
                        intersectional=pd.DataFrame(), counterfactual=pd.DataFrame(), cells=(),
                        rule=None)


def _scratch(root: Path, results: Path, audit: str) -> None:
    """A committed scratch repository at ``root`` holding ``audit``'s views."""
    for name in ("dvc.yaml", "params.yaml", ".dvcignore", ".dvc/config"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / ".dvc" / "plots", root / ".dvc" / "plots")
    (root / "results" / "metrics").mkdir(parents=True)
    (root / "results" / "curves").mkdir(parents=True)
    tables = _tables(results / audit)
    (root / "results" / "metrics" / f"{audit}.json").write_text(
        json.dumps(summary(tables, audit=audit), indent=2))
    (root / "results" / "metrics" / f"{audit}-strategies.json").write_text(
        json.dumps(strategy_plot(tables, audit=audit), indent=1))
    curves = results / audit / "curves.csv"
    frame = pd.read_csv(curves, keep_default_na=False, na_values=[""]) if curves.is_file() else None
    if frame is not None:
        frame["protected_attribute"] = frame["protected_attribute"].fillna("")
    curve_plot(frame).to_csv(root / "results" / "curves" / f"{audit}.csv", index=False)
    for args in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org", "commit",
                  "-qm", "views"]):
        subprocess.run(args, cwd=root, check=True, capture_output=True)


def _dvc(root: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True,
                          text=True, check=True, timeout=300)
    return done.stdout


def main(argv: list[str] | None = None) -> None:
    """Write the views of one audit, print the columns DVC shows, render the plots."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("audit")
    parser.add_argument("--out", type=Path, default=Path("dvc_plots"))
    parser.add_argument("--vega", type=Path, help="folder of local Vega scripts")
    parser.add_argument("--screenshot", type=Path, help="PNG of the page (needs --vega)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _scratch(root, args.results.resolve(), args.audit)
        header = next(csv.reader(io.StringIO(_dvc(root, "exp", "show", "--csv"))))
        metrics = [c for c in header if c.startswith(f"{args.audit}.")]
        print(f"dvc exp show: {len(header)} columns, {len(metrics)} of them {args.audit}'s "
              f"metrics (e.g. {metrics[1]}); names shared by two columns: "
              f"{[n for n, k in Counter(header).items() if k > 1]}")
        targets = [f"results/metrics/{args.audit}-strategies.json",
                   f"{args.audit} threshold curve"]
        _dvc(root, "plots", "show", *targets, "-o", str(args.out.resolve()))
    page = args.out / "index.html"
    print(f"dvc plots show: {page} ({len(targets)} plots)")
    if args.vega is not None:
        html = page.read_text()
        for url, name in CDN.items():
            html = html.replace(f'src="{url}"',
                                f'charset="utf-8" src="{(args.vega / name).resolve().as_uri()}"')
        page = args.out / "index.local.html"
        page.write_text(html)
        if args.screenshot is not None:
            subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-background-networking", "--virtual-time-budget=5000",
                            f"--screenshot={args.screenshot.resolve()}",
                            "--window-size=1280,1600", page.resolve().as_uri()],
                           check=True, capture_output=True, timeout=120)
            print(f"screenshot: {args.screenshot}")


if __name__ == "__main__":
    main()
