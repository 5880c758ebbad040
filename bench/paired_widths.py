"""Paired effect intervals on real audits: the shipped interval against faircode 0.3's box and BCa.

Run from the repository root (the machine is shared: ``nice``):

    PYTHONPATH=$PWD FAIRCODE_DATA_MIRROR=... nice python bench/paired_widths.py
        [--audits german_credit_lending compas] [--resamples 2000] [--family logistic_regression]

For each audit the five strategies of one model family (default logistic regression, the
cheapest to fit) are fitted on the prepared split at the manifest's seed (the grid's own fits,
:func:`faircode.grid.fit.fit_cell`) and decided at the audit's operating point; every comparison
of :data:`faircode.evaluate.effects.COMPARISONS` gets the engine's paired draws
(:func:`faircode.stats.paired.paired_draws`, B = ``--resamples``, the grid's seeds), and from those
same draws three 95 % intervals of every fairness effect: faircode 0.3's signed box (99 % sums),
the shipped interval (:class:`faircode.stats._paired_interval.PairedInterval`: the percentile
interval where the draws keep their pieces, else the box with 97.5 % sums) and BCa (count-level
jackknife, ``bench/paired_coverage.py``'s; rows deleted even where units repeat, as a
yardstick).  It prints each demographic-parity effect with the
three intervals and widths, then per audit the median and range of the width ratios over every
fairness effect (shipped / 0.3 box, shipped / BCa, 0.3 box / BCa) and how many effects take the
percentile interval.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

from faircode.audit.data import load_audit
from faircode.audit.decision import resolve_rule
from faircode.audit.manifest import load_manifest
from faircode.audit.prepared import prepare
from faircode.core.cells import ModelFamily
from faircode.core.config import BenchmarkConfig
from faircode.core.seeds import Stream, child_seed
from faircode.evaluate.effects import COMPARISONS
from faircode.evaluate.score import decide_cell
from faircode.grid.fit import fit_cell
from faircode.stats import paired
from faircode.stats._paired_interval import PairedInterval

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_coverage import bca, effect  # the same BCa as the coverage bench

FAIR = [k for k, m in enumerate(paired.EFFECT_METRICS)
        if m not in paired.PERFORMANCE_EFFECTS and m != "tpr_gap"]
DP = paired.EFFECT_METRICS.index("demographic_parity_diff")


def main() -> None:
    """Fit, draw and compare the intervals of every audit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audits", nargs="+", default=["german_credit_lending", "compas"])
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--family", default=ModelFamily.LOGISTIC_REGRESSION.value)
    args = parser.parse_args()
    family = ModelFamily(args.family)
    config = BenchmarkConfig(jobs=1)
    warnings.simplefilter("ignore", RuntimeWarning)
    print(f"# paired intervals on real audits: {family.value}, B = {args.resamples}\n")
    for name in args.audits:
        data = prepare(load_audit(load_manifest(Path("audits") / name / "audit.yaml")))
        rule = resolve_rule(data.manifest.decision,
                            default_threshold=config.models.decision_threshold)
        master = data.manifest.random_state
        decided = {}
        for strategy in {s for c in COMPARISONS for s in (c.strategy, c.reference)}:
            cell = fit_cell(data, strategy, family, mitigation=config.mitigation, seed=master,
                            train=data.train_index, test=data.test_index, perturbed=None,
                            keep_train_scores=rule.rule == "top_fraction")
            decided[strategy] = decide_cell(data, cell, rule=rule)
        units = None if data.unit is None else np.asarray(data.unit)[data.test_index]
        ratios: dict[str, list[float]] = {"shipped/box": [], "shipped/bca": [], "box/bca": []}
        smooth = total = 0
        m = list(ModelFamily).index(family)
        for k, attribute in enumerate(data.manifest.protected_attributes):
            mask = np.asarray(data.disadvantaged[attribute.name][data.test_index], dtype=bool)
            for c in COMPARISONS:
                da, db = decided[c.strategy], decided[c.reference]
                draws = paired.paired_draws(da.y_fav, da.yhat_fav, db.yhat_fav, mask,
                                            seed=child_seed(master, Stream.EFFECTS, c.stream, m,
                                                            k),
                                            units=units, n_resamples=args.resamples)
                old = PairedInterval(draws.draws_a, draws.draws_b, draws.estimate_a,
                                     draws.estimate_b, n_units=draws.n_units, box_only=True,
                                     nuisance_ratio=0.2)
                new = PairedInterval(draws.draws_a, draws.draws_b, draws.estimate_a,
                                     draws.estimate_b, n_units=draws.n_units)
                joint = paired.joint_counts(da.y_fav, da.yhat_fav, db.yhat_fav, mask)
                eye = np.eye(16, dtype=np.int64).reshape(16, 2, 8)
                jack = np.where((joint.reshape(16) > 0)[:, None], effect(joint[None] - eye),
                                np.nan)
                b_iv = bca(draws.delta, draws.value, jack, joint.reshape(16).astype(float))
                o_lo, o_hi = old.bounds(0.95)
                n_lo, n_hi = new.bounds(0.95)
                w_old, w_new, w_bca = o_hi - o_lo, n_hi - n_lo, b_iv[:, 1] - b_iv[:, 0]
                for j in FAIR:
                    if np.isfinite(draws.value[j]) and w_bca[j] > 0 and w_old[j] > 0:
                        ratios["shipped/box"].append(w_new[j] / w_old[j])
                        ratios["shipped/bca"].append(w_new[j] / w_bca[j])
                        ratios["box/bca"].append(w_old[j] / w_bca[j])
                        smooth += bool(new.smooth[j])
                        total += 1
                a, b = c.strategy.value, c.reference.value
                print(f"{name:22} {attribute.name[:10]:10} {a[:14]:14}-{b[:10]:10} DP "
                      f"{draws.value[DP]:+.3f}  0.3 box [{o_lo[DP]:+.3f}, {o_hi[DP]:+.3f}] "
                      f"{w_old[DP]:.3f}  shipped [{n_lo[DP]:+.3f}, {n_hi[DP]:+.3f}] "
                      f"{w_new[DP]:.3f} ({'pct' if new.smooth[DP] else 'box'})  BCa "
                      f"[{b_iv[DP, 0]:+.3f}, {b_iv[DP, 1]:+.3f}] {w_bca[DP]:.3f}")
        for key, values in ratios.items():
            v = np.array(values)
            print(f"  {name}: width {key}: median {np.median(v):.2f}, range "
                  f"{v.min():.2f}-{v.max():.2f} ({v.size} fairness effects)")
        print(f"  {name}: {smooth} of {total} fairness effects take the percentile interval\n")


if __name__ == "__main__":
    main()
