"""What a reader sees first: the report of small real runs, measured in headless Chromium.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD FAIRCODE_DATA_MIRROR=... nice python bench/report_first_screen.py
        [--audits german_credit_lending student_performance] [--resamples 200] [--out DIR]
        [--reuse]

It fits and evaluates each audit through the library (``faircode run``'s steps, K = 1, B = P =
``--resamples``), renders the folder with ``write_report`` and prints:

1. the headline sentences and the per-audit lines, as the page prints them;
2. the page's size (bytes) and, from headless Chromium at 1280 x 1000, its height and where
   the headline, legend and heatmap end (the page's own render check), and a screenshot of the
   first screen (``<out>/first_screen.png``);
3. every star of the paper table against the audit's own ``q_value`` in ``fairness.csv`` and
   the benchmark-wide ``q_benchmark`` of ``summary.csv`` (how many stars the other family would
   take away or add).

Results go to ``--out`` (default ``/tmp/faircode-first-screen``); ``--reuse`` skips the runs
whose folder is already there.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path

import pandas as pd

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import prepare
from faircode.core.config import BenchmarkConfig
from faircode.evaluate.write import write_audit
from faircode.pipeline.run import evaluate, fit
from faircode.provenance.state import REPORT_CODE, provenance
from faircode.report.build import write_report

CHROMIUM = ("/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars",
            "--window-size=1280,1000")


def run(audits: list[str], *, out: Path, resamples: int, reuse: bool) -> None:
    """Fit, evaluate and write every audit not already in ``out``; render the report."""
    config = BenchmarkConfig(jobs=1).with_params({
        "stats.n_resamples": resamples, "stats.n_permutations": resamples
    })
    for name in audits:
        if reuse and (out / name / "fairness.csv").is_file():
            continue
        t0 = time.perf_counter()
        data = prepare(load_audit(load_manifest(Path("audits") / name / "audit.yaml")))
        results = evaluate(data, fit(data, config=config), config=config)
        write_audit(data, results, config=config, out_dir=out, provenance_record=provenance())
        print(f"ran {name} in {time.perf_counter() - t0:.0f} s")
    write_report(out, provenance=provenance(code=REPORT_CODE))


def headline(page: str) -> None:
    """Section 1: the lead and the per-audit lines, markup stripped."""
    lead = re.search(r'<p class="lead" id="lead">(.*?)</p>', page, re.S)
    print("1. Headline\n   " + (lead.group(1) if lead else "(none)"))
    for item in re.findall(r'<ul class="findings">(.*?)</ul>', page, re.S)[:1]:
        for li in re.findall(r"<li>(.*?)</li>", item, re.S):
            print("   - " + re.sub(r"<[^>]+>", "", li))


def layout(out: Path) -> None:
    """Section 2: bytes, the render check's layout facts and a first-screen screenshot."""
    page = out / "report.html"
    dom = subprocess.run([*CHROMIUM, "--virtual-time-budget=5000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    check = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    facts = json.loads(check.group(1).replace("&quot;", '"')) if check else {}
    shot = out / "first_screen.png"
    subprocess.run([*CHROMIUM, f"--screenshot={shot}", page.as_uri()], capture_output=True,
                   timeout=120, check=False)
    lay = facts.get("layout", {})
    print(f"\n2. Page: {page.stat().st_size / 1e6:.2f} MB, height {lay.get('height')} px "
          f"({(lay.get('height') or 0) / 1000:.1f} screens of 1000 px), width "
          f"{lay.get('width')} px at viewport {lay.get('viewport')}")
    for key in ("lead", "headline", "legend", "heatmap"):
        print(f"   {key:9} {lay.get(key)}")
    print(f"   before the first table: {lay.get('before_first_table')}; "
          f"screenshot {shot} ({shot.stat().st_size if shot.is_file() else 0} bytes)")


def stars(out: Path) -> None:
    """Section 3: the paper table's stars against both families."""
    summary = pd.read_csv(out / "summary.csv")
    dp = summary[summary["metric"] == "demographic_parity_diff"]
    starred = dp[dp["star"].astype(bool)]
    fairness = pd.concat([pd.read_csv(p) for p in sorted(out.glob("*/fairness.csv"))])
    keys = ["audit", "strategy", "model", "protected_attribute", "metric"]
    joined = starred.merge(fairness[[*keys, "q_value"]], on=keys, suffixes=("", "_csv"))
    bad = joined[~(joined["q_value_csv"] < joined["alpha"])]
    print(f"\n3. Stars (demographic parity): {len(starred)} of {len(dp)} cells; "
          f"{len(bad)} without the audit's own q < alpha in fairness.csv")
    lost = starred[~starred["significant_benchmark"].astype(bool)]
    gained = dp[~dp["star"].astype(bool) & dp["significant_benchmark"].astype(bool)]
    print(f"   benchmark-wide family (q_benchmark) would take away {len(lost)} star(s), "
          f"add {len(gained)}")
    for r in lost.itertuples():
        print(f"   - {r.audit} {r.strategy_code} {r.model} {r.protected_attribute}: "
              f"q_value {r.q_value:.3f}, q_benchmark {r.q_benchmark:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", nargs="+",
                        default=["german_credit_lending", "student_performance"])
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("/tmp/faircode-first-screen"))
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    run(args.audits, out=args.out, resamples=args.resamples, reuse=args.reuse)
    headline((args.out / "report.html").read_text())
    layout(args.out)
    stars(args.out)


if __name__ == "__main__":
    main()
