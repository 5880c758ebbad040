"""Render the DVC views of a results folder as a reader gets them: metrics, exp show, plots.

Builds a scratch git + DVC repository with this checkout's ``dvc.yaml``, ``params.yaml``,
``.dvc/config`` and ``.dvc/plots`` (the templates and the offline page), writes the evaluate
stages' views of every audit of ``params.yaml`` from the tables of ``RESULTS/<audit>/`` (a
``faircode run`` folder or a copy of ``results/``; an audit without a folder, or with
``unavailable.json``, gets the views of an audit without data), commits, and prints:

1. ``dvc metrics show`` as a terminal shows it, and its widest line;
2. every ``dvc exp show`` recipe of README.md and docs/pipeline.md run in the table view at
   ``--columns`` (120) columns: its widest line and whether a kept column was dropped (``…``);
3. ``dvc plots show`` into ``--out`` (``index.html``): with ``--screenshot PNG`` headless Chromium
   photographs it with every host unresolvable (offline: a chart that needs the network stays
   blank) and reads from the page how many charts were drawn and which were skipped (no data).

Usage: ``PYTHONPATH=$PWD .venv/bin/python bench/dvc_views.py RESULTS [--out DIR] [--columns 120]
[--screenshot PNG]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from faircode.evaluate.curves import curve_plot
from faircode.evaluate.summary import (
    headline,
    strategy_plot,
    summary,
    unavailable_headline,
    unavailable_summary,
)
from faircode.evaluate.tables import AuditResults

REPO = Path(__file__).resolve().parent.parent
DOCS = (REPO / "README.md", REPO / "docs" / "pipeline.md")
CHROMIUM = ("/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars")


def _tables(folder: Path) -> AuditResults:
    """The tables of one results folder that the views read."""
    stability = folder / "stability.csv"
    return AuditResults(fairness=pd.read_csv(folder / "fairness.csv"),
                        performance=pd.read_csv(folder / "performance.csv"),
                        intersectional=pd.DataFrame(), counterfactual=pd.DataFrame(), cells=(),
                        rule=None,
                        stability=pd.read_csv(stability) if stability.is_file() else None)


def write_views(root: Path, results: Path, audit: str) -> None:
    """The four files the evaluate stage of ``audit`` writes, under ``root/results``."""
    metrics, curves = root / "results" / "metrics", root / "results" / "curves"
    for folder in (metrics / "full", curves):
        folder.mkdir(parents=True, exist_ok=True)
    folder = results / audit
    if not (folder / "fairness.csv").is_file():
        (metrics / f"{audit}.json").write_text(json.dumps(unavailable_headline()))
        (metrics / "full" / f"{audit}.json").write_text(json.dumps(unavailable_summary(audit)))
        (metrics / f"{audit}-strategies.json").write_text("[]\n")
        curve_plot(None).to_csv(curves / f"{audit}.csv", index=False)
        return
    tables = _tables(folder)
    (metrics / f"{audit}.json").write_text(json.dumps(headline(tables), indent=1))
    (metrics / "full" / f"{audit}.json").write_text(json.dumps(summary(tables, audit=audit)))
    (metrics / f"{audit}-strategies.json").write_text(
        json.dumps(strategy_plot(tables, audit=audit), indent=1))
    frame = None
    if (folder / "curves.csv").is_file():
        frame = pd.read_csv(folder / "curves.csv", keep_default_na=False, na_values=[""])
        frame["protected_attribute"] = frame["protected_attribute"].fillna("")
    curve_plot(frame).to_csv(curves / f"{audit}.csv", index=False)


def scratch(root: Path, results: Path) -> list[str]:
    """A committed scratch repository at ``root`` with every audit's views; the audits."""
    for name in ("dvc.yaml", "upstream/dvc.yaml", "params.yaml", ".dvcignore", ".dvc/config"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / ".dvc" / "plots", root / ".dvc" / "plots")
    audits = list(yaml.safe_load((REPO / "params.yaml").read_text())["audits"])
    for audit in audits:
        write_views(root, results, audit)
    figures = results / "figures"
    if figures.is_dir():
        shutil.copytree(figures, root / "results" / "figures")
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
    for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "views"]):
        subprocess.run(args, cwd=root, check=True, capture_output=True, env=env)
    return audits


def dvc(root: Path, *args: str, columns: int | None = None) -> str:
    """``dvc ARGS`` in ``root`` (a terminal of ``columns`` for the table views)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True,
                          text=True, check=True, timeout=300, env=env)
    return done.stdout


def recipes() -> list[list[str]]:
    """The ``dvc exp show`` recipes of the docs that print a table (no ``--csv``/``--json``)."""
    out = []
    for doc in DOCS:
        for line in doc.read_text().splitlines():
            line = line.removeprefix(".venv/bin/")
            if line.startswith("dvc exp show ") and "--csv" not in line and "--json" not in line:
                out.append(shlex.split(line, comments=True))
    return out


def plots(root: Path, out: Path, screenshot: Path | None) -> None:
    """``dvc plots show`` into ``out``; with ``screenshot``, what an offline browser draws."""
    dvc(root, "plots", "show", "-o", str(out.resolve()))
    page = out / "index.html"
    text = page.read_text()
    scripts = sorted(set(re.findall(r'<script[^>]+src="([^"]+)"', text)))
    print(f"\n3. dvc plots show: {page} ({page.stat().st_size / 1e6:.1f} MB; "
          f"{text.count('vegaEmbed(')} charts, {text.count('<img')} images; "
          f"scripts loaded from elsewhere: {scripts or 'none'})")
    if screenshot is None:
        return
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run([*CHROMIUM, f"--user-data-dir={profile}", "--window-size=1280,1600",
                              "--virtual-time-budget=15000", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=300).stdout
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([*CHROMIUM, f"--user-data-dir={profile}", "--window-size=1280,1600",
                        "--virtual-time-budget=15000", f"--screenshot={screenshot.resolve()}",
                        page.as_uri()], capture_output=True, timeout=300, check=False)
    drawn = dom.count('class="marks"')  # one per chart Vega drew
    note = re.search(r'<p id="no-data"[^>]*>(.*?)</p>', dom, re.S)
    print(f"   offline in Chromium: {drawn} charts drawn; skipped: "
          f"{note.group(1) if note and note.group(1) else 'none'}; screenshot {screenshot}")


def main(argv: list[str] | None = None) -> None:
    """Build the views of ``RESULTS`` and print what each DVC command shows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--out", type=Path, default=Path("dvc_plots"))
    parser.add_argument("--columns", type=int, default=120)
    parser.add_argument("--screenshot", type=Path, help="PNG of the plots page, offline")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        audits = scratch(root, args.results.resolve())
        shown = dvc(root, "metrics", "show")
        widest = max(map(len, shown.splitlines()))
        print(f"1. dvc metrics show ({len(audits)} audits): {len(shown.splitlines())} lines, "
              f"the widest {widest} characters\n{shown}")
        print(f"2. dvc exp show recipes at {args.columns} columns:")
        for command in recipes():
            table = dvc(root, *command[1:], columns=args.columns)
            lines = table.splitlines()
            dropped = any("…" in line for line in lines)
            print(f"   {shlex.join(command)}\n     widest line {max(map(len, lines))}, "
                  f"{'a column DROPPED (…)' if dropped else 'every kept column shown'}")
            print("\n".join(f"     {line}" for line in lines))
        plots(root, args.out, args.screenshot)


if __name__ == "__main__":
    main()
