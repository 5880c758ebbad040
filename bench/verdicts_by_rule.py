"""The claims of a results folder under the verdict rule, against the v0.3 star rule.

Run from the repository root (reads results only; nothing is fitted):

    PYTHONPATH=$PWD python bench/verdicts_by_rule.py [RESULTS] [--before BEFORE]
        [--metric demographic_parity_diff] [--out DIR]

``RESULTS`` (default ``results``) is a results folder at K > 1.  If its ``fairness.csv`` carries
verdicts (written by this code), they are read as written.  If it was written before verdicts
(the committed v0.3 paper state), the verdict rule is re-derived from its replicate tables with
the shipped code (:func:`faircode.evaluate.combine.combine_gaps`,
:func:`faircode.evaluate.claims.gap_claims_table`): each replicate's value from
``stability_replicates.csv``, its within-replicate interval ``± z·sd_bootstrap`` (v0.3 kept no
per-replicate interval: the mean bootstrap SD of the cell, on the log scale for disparate
impact), the sampling fraction from ``run.json``'s rows.  v0.3 kept no per-replicate effects
either, so an effect's K-replicate estimate is built from ``effects_stability.csv``'s mean and
between-replicate SD over its ``n_defined`` replicates with replicate 0's interval as the
within-replicate variance, the same formula.  The re-derived tables are written into a copy of
the folder (``--out``, default a temporary one) and rendered with the report, whose headline is
printed.

``BEFORE`` (default ``RESULTS`` itself) supplies the v0.3 rule: its ``summary.csv`` ``star``
(replicate 0's q < alpha, the pooled interval excluding no gap, no sign flip, every replicate
informative) and its report's headline.  Printed: per audit the verdict counts of S0-S4 for the
metric (every family and attribute), the headline before and after, and the cells whose star
(v0.3) and ``gap`` verdict (now) differ, both directions, with what they are now.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from faircode.core.config import VerdictsConfig
from faircode.core.digests import folder_digests
from faircode.evaluate.claims import effect_claims_table, gap_claims_table
from faircode.evaluate.combine import GAP_KEYS, combine_gaps
from faircode.report.build import write_report
from faircode.stats.verdicts import Evidence, gap_claims, margins_of

VERDICTS = ("gap", "parity", "inconclusive", "uninformative")
CODES = {"baseline": "S0", "unawareness": "S1", "unawareness_proxy_removal": "S2",
         "in_processing": "S3", "post_processing": "S4"}
CONFIDENCE, ALPHA = 0.95, 0.05


def _read(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, keep_default_na=False, na_values=["", "NaN", "nan"])
    if "note" in frame:
        frame["note"] = frame["note"].astype(object).where(frame["note"].notna(), "")
    return frame


def _fraction(run: dict) -> float:
    rows = run.get("rows", {})
    mode = run.get("config", {}).get("seed_mode", "model")
    return 1.0 if mode == "model" else rows["test"] / (rows["train"] + rows["test"])


def _replicate_tables(folder: Path) -> list[pd.DataFrame]:
    """v0.3's replicates as fairness tables with an interval of ± z·sd_bootstrap."""
    reps = _read(folder / "stability_replicates.csv")
    stab = _read(folder / "stability.csv").set_index(list(GAP_KEYS))
    z = sps.norm.ppf(0.5 + CONFIDENCE / 2)
    out = []
    for _, rows in reps.groupby("replicate", sort=True):
        rows = rows.reset_index(drop=True)
        sd = stab.reindex(pd.MultiIndex.from_frame(rows.loc[:, list(GAP_KEYS)]))[
            "sd_bootstrap"].to_numpy(dtype=float)
        value = rows["value"].to_numpy(dtype=float)
        ratio = rows["metric"].to_numpy(dtype=str) == "disparate_impact_ratio"
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_sd = sd / value
            low = np.where(ratio, value * np.exp(-z * log_sd), value - z * sd)
            high = np.where(ratio, value * np.exp(z * log_sd), value + z * sd)
        out.append(rows.assign(ci_low=low, ci_high=high))
    return out


def _effects(folder: Path, fraction: float, verdicts: VerdictsConfig) -> pd.DataFrame:
    """v0.3's effects with their K-replicate estimate from the summaries (module docstring)."""
    effects = _read(folder / "effects.csv")
    pooled = _read(folder / "effects_stability.csv")
    keys = ["strategy", "reference", "model", "protected_attribute", "metric"]
    both = effects.merge(pooled.loc[:, [*keys, "mean", "sd_between", "n_defined", "seeds",
                                        "n_degenerate"]], on=keys, how="left")
    z = sps.norm.ppf(0.5 + CONFIDENCE / 2)
    n = both["n_defined"].to_numpy(dtype=float)
    within = ((both["ci_high"] - both["ci_low"]).to_numpy(dtype=float) / (2 * z)) ** 2
    share = both["sd_between"].to_numpy(dtype=float) ** 2 / n
    total = share + fraction * within
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = np.where(share > 0, (n - 1) * total / share, np.inf)
    ok = n >= 2
    se = np.where(ok, np.sqrt(total), np.nan)
    evidence = Evidence(np.where(ok, both["mean"].to_numpy(dtype=float), np.nan), se, se,
                        nu, nu)
    claims = gap_claims("effect", evidence, confidence=CONFIDENCE, alpha=ALPHA,
                        margins=margins_of(verdicts))
    required = np.ceil(verdicts.min_informative_share * both["seeds"].to_numpy(dtype=float))
    few = n < required
    note = both["note"].fillna("").astype(str)
    note = note.where(~few | note.str.contains("degenerate_decisions"),
                      note.str.cat(["degenerate_decisions"] * len(note), sep=";").str.strip(";"))
    combined = both.loc[:, keys].assign(
        value=claims.value, ci_low=claims.ci_low, ci_high=claims.ci_high,
        ci_method="random_effects_t", p_value=np.where(few, np.nan, claims.p_value),
        se_low=se, se_high=se, df_low=nu, df_high=nu, note=note.to_numpy())
    return effect_claims_table(effects, combined=combined, confidence=CONFIDENCE, alpha=ALPHA,
                               verdicts=verdicts)


def rederive(source: Path, out: Path, verdicts: VerdictsConfig) -> Path:
    """A copy of ``source`` whose fairness.csv and effects.csv carry the verdict rule."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out, ignore=shutil.ignore_patterns("figures"))
    for folder in sorted(p for p in out.iterdir() if (p / "stability_replicates.csv").is_file()):
        run = json.loads((folder / "run.json").read_text())
        f = _fraction(run)
        combined = combine_gaps(_replicate_tables(folder), audit=folder.name,
                                seed_mode=run["config"].get("seed_mode", "model"), fraction=f,
                                confidence=CONFIDENCE, alpha=ALPHA, verdicts=verdicts)
        fairness = _read(folder / "fairness.csv")
        inter = _read(folder / "intersectional.csv")
        claimed, inter = gap_claims_table(fairness, inter, combined=combined,
                                          confidence=CONFIDENCE, alpha=ALPHA, verdicts=verdicts)
        claimed.to_csv(folder / "fairness.csv", index=False)
        inter.to_csv(folder / "intersectional.csv", index=False)
        _effects(folder, f, verdicts).to_csv(folder / "effects.csv", index=False)
        if "files" in run:  # readers check the folder against its record: re-record it
            run["files"] = folder_digests(folder)
            (folder / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    write_report(out)
    return out


def lead(folder: Path) -> str:
    """The report's headline (plain text)."""
    found = re.search(r'<p class="lead" id="lead">(.*?)</p>',
                      (folder / "report.html").read_text(), re.S)
    return unescape(found.group(1)) if found else "(no headline)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=Path("results"))
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--metric", default="demographic_parity_diff")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    before = args.before or args.results
    first = next(p for p in sorted(args.results.iterdir()) if (p / "fairness.csv").is_file())
    temp = None
    after = args.results
    if "verdict" not in _read(first / "fairness.csv").columns:
        temp = args.out or Path(tempfile.mkdtemp(prefix="verdicts_")) / "results"
        after = rederive(args.results, temp, VerdictsConfig())
        print(f"{args.results} has no verdicts: re-derived from its replicate tables into "
              f"{after}\n")
    summary = _read(after / "summary.csv")
    rows = summary[summary["metric"] == args.metric]
    print(f"{args.metric}: verdicts per audit and strategy (every model family and attribute)")
    print(f"{'audit':24}" + "".join(f"{c:>22}" for c in CODES.values()))
    print(f"{'':24}" + "".join(f"{'g/p/i/u':>22}" for _ in CODES))
    for audit, group in rows.groupby("audit", sort=True):
        cells = []
        for strategy in CODES:
            mine = group[group["strategy"] == strategy]["verdict"]
            cells.append("/".join(str(int((mine == v).sum())) for v in VERDICTS))
        print(f"{audit:24}" + "".join(f"{c:>22}" for c in cells))
    total = {v: int((rows["verdict"] == v).sum()) for v in VERDICTS}
    print(f"{'all':24}" + f"{', '.join(f'{k} {n}' for k, n in total.items()):>60}")
    old = _read(before / "summary.csv")
    old = old[old["metric"] == args.metric].loc[:, ["audit", "strategy", "model",
                                                    "protected_attribute", "star"]]
    both = rows.merge(old, on=["audit", "strategy", "model", "protected_attribute"],
                      suffixes=("", "_v03"))
    was = both["star_v03"].astype(bool)
    now = both["verdict"] == "gap"
    print(f"\nstar (v0.3 rule) against verdict gap (now), {len(both)} cells: "
          f"{int((was & now).sum())} both, {int((was & ~now).sum())} lost, "
          f"{int((~was & now).sum())} gained, {int((~was & ~now).sum())} neither")
    for label, mask in (("lost", was & ~now), ("gained", ~was & now)):
        for r in both[mask].itertuples():
            print(f"  {label}: {r.audit} {CODES.get(r.strategy, r.strategy)} {r.model} "
                  f"{r.protected_attribute}: now {r.value:+.3f} [{r.ci_low:+.3f}, "
                  f"{r.ci_high:+.3f}] {r.verdict} (replicate 0 {r.rep0_value:+.3f})")
    print(f"\nheadline before ({before}):\n  {lead(before)}")
    print(f"\nheadline after ({after}):\n  {lead(after)}")
    if temp is not None and args.out is None:
        shutil.rmtree(temp.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
