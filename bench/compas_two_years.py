"""The compas_two_years audit's facts: which rows, the groups, proxies, the deployed tool's tables.

Run from the repository root after `faircode data fetch compas_two_years`:

    .venv/bin/python bench/compas_two_years.py [--resamples 2000] [--seed 42]

It reads only the columns it names from ``compas-scores-two-years.csv`` (never ``name``,
``first``, ``last`` or ``dob``) and prints, in order:

1. ProPublica's truth tables (decision ``score_text != "Low"``, outcome ``two_year_recid``) on all
   rows and on the notebook's regression filter, against the published Black and White tables.
2. Race counts of the file and the rows the audit keeps (``faircode.audit.data.load_audit``).
3. Race disparities of the candidate features and how well each feature set predicts race and
   the outcome (5-fold cross-validated AUC of a logistic regression).
4. The deployed tool's per-group table on the audit's rows (:mod:`faircode.stats.groups`).
5. Its calibration by race, decile by decile, the calibration gap of every attribute
   (:mod:`faircode.stats.calibration`, ``B = P = --resamples``, ``seed``) and the logistic check.

It backs the datasheet ``audits/compas_two_years/README.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import cross_val_predict

from faircode.audit.data import load_audit
from faircode.audit.manifest import load_manifest
from faircode.stats.calibration import calibration_gap, calibration_table
from faircode.stats.calibration_regression import calibration_regression
from faircode.stats.groups import format_group_table, group_table

MANIFEST = Path("audits/compas_two_years/audit.yaml")
COLUMNS = ["race", "sex", "age", "priors_count", "c_charge_degree", "juv_fel_count",
           "juv_misd_count", "juv_other_count", "days_b_screening_arrest", "is_recid",
           "score_text", "decile_score", "two_year_recid", "age_cat", "decile_score.1",
           "priors_count.1", "event", "c_charge_desc"]
PUBLISHED = {"African-American": (990, 805, 532, 1369), "Caucasian": (1139, 349, 461, 505)}
JUVENILE = ["juv_fel_count", "juv_misd_count", "juv_other_count"]


def truth_tables(frame: pd.DataFrame, label: str) -> None:
    """Print TN, FP, FN, TP per race (AA, Caucasian) and whether they equal the published ones."""
    flagged = (frame["score_text"] != "Low").to_numpy().astype(int)
    race = frame["race"].to_numpy()
    masks = {r: race == r for r in PUBLISHED}
    table = group_table(frame["two_year_recid"].to_numpy(), flagged, masks,
                        protected_attribute="race", row_set=label)
    print(f"{label}: {len(frame):,} rows")
    for race_name, counts in PUBLISHED.items():
        row = table[(table["group"] == race_name) & (table["metric"] == "fpr")].iloc[0]
        ours = tuple(int(row[c]) for c in ("TN", "FP", "FN", "TP"))
        print(f"  {race_name:<17} n {sum(ours):>5,}  TN/FP/FN/TP {ours}  published {counts}  "
              f"{'equal' if ours == counts else 'DIFFERENT'}")


def features(frame: pd.DataFrame) -> None:
    """Print race disparities of the candidate features and cross-validated AUCs."""
    aa = (frame["race"] == "African-American").astype(int).to_numpy()
    y = frame["two_year_recid"].to_numpy()
    x = frame.assign(felony=(frame["c_charge_degree"] == "F").astype(int),
                     male=(frame["sex"] == "Male").astype(int))
    for column in ["priors_count", *JUVENILE]:
        by = x.groupby("race")[column]
        print(f"  {column:<16} mean AA {by.mean()['African-American']:.3f} / Cauc "
              f"{by.mean()['Caucasian']:.3f}   share > 0 AA "
              f"{(x[column] > 0).groupby(x['race']).mean()['African-American']:.3f} / Cauc "
              f"{(x[column] > 0).groupby(x['race']).mean()['Caucasian']:.3f}")
    felony = x.groupby("race")["felony"].mean()
    print(f"  felony charge    AA {felony['African-American']:.3f} / "
          f"Cauc {felony['Caucasian']:.3f}")
    core = ["priors_count", "felony"]
    sets = {"core (priors, felony)": core, "core + juvenile": core + JUVENILE,
            "core + age + sex": [*core, "age", "male"],
            "core + age + sex + juvenile": [*core, "age", "male", *JUVENILE],
            "juvenile only": JUVENILE}
    model = LogisticRegression(max_iter=2000)
    for name, cols in sets.items():
        aucs = [roc_auc_score(t, cross_val_predict(model, x[cols], t, cv=5,
                                                   method="predict_proba")[:, 1])
                for t in (aa, y)]
        print(f"  AUC {name:<28} race {aucs[0]:.3f}  re-arrest {aucs[1]:.3f}")


def deployed(frame: pd.DataFrame, masks: dict[str, dict[str, np.ndarray]], resamples: int,
             seed: int) -> None:
    """Print the tool's per-group tables, calibration by race and the gaps."""
    y = frame["two_year_recid"].to_numpy()
    flagged = (frame["score_text"] != "Low").to_numpy().astype(int)
    decile = frame["decile_score"].to_numpy()
    tables = [group_table(y, flagged, groups, protected_attribute=name, row_set="deployed")
              for name, groups in masks.items()]
    print(format_group_table(pd.concat(tables), metrics=("fpr", "fnr", "ppv", "selection_rate")))
    race = masks["race"]
    cal = calibration_table(y, decile, race, scale="ordinal", protected_attribute="race",
                            row_set="deployed")
    print("\ncalibration by race (decile; rows, re-arrested, observed rate [95% Wilson]):")
    wide = cal.pivot(index="bin", columns="group",
                     values=["n", "positives", "observed_rate", "ci_low", "ci_high"])
    for k in [str(v) for v in range(1, 11)]:
        cells = [f"{int(wide.loc[k, ('n', g)]):>4} {int(wide.loc[k, ('positives', g)]):>4} "
                 f"{wide.loc[k, ('observed_rate', g)]:.3f} [{wide.loc[k, ('ci_low', g)]:.3f}, "
                 f"{wide.loc[k, ('ci_high', g)]:.3f}]" for g in race]
        print(f"  decile {k:>2}  AA {cells[0]}   Cauc {cells[1]}")
    print(f"\ncalibration gap (MH-weighted within-decile re-arrest rate, disadvantaged - "
          f"advantaged; B = P = {resamples:,}, seed {seed}):")
    for name, groups in masks.items():
        (dis_name, dis), (_, adv) = groups.items()
        gap = calibration_gap(y, decile, dis, adv, scale="ordinal", seed=seed,
                              n_resamples=resamples, n_permutations=resamples)
        fit = calibration_regression(y, decile, dis, adv, scale="ordinal")
        print(f"  {name:<5} ({dis_name:<16}) gap {gap.value:+.4f} [{gap.ci_low:+.4f}, "
              f"{gap.ci_high:+.4f}]  p {gap.p_value:.4f}  bins {gap.bins_compared}   logistic: "
              f"group {fit.group_coef:+.3f} (p {fit.group_p:.3f}), decile x group "
              f"{fit.interaction_coef:+.3f} (p {fit.interaction_p:.3f}), joint p {fit.joint_p:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    manifest = load_manifest(MANIFEST)
    raw = pd.read_csv(manifest.dataset.path, usecols=COLUMNS)
    print("1. Which rows reproduce ProPublica's truth tables (flagged = score_text != Low)")
    truth_tables(raw, "all rows")
    near = raw["days_b_screening_arrest"].between(-30, 30)
    notebook = raw[near & (raw["is_recid"] != -1) & (raw["c_charge_degree"] != "O")
                   & (raw["score_text"] != "N/A")]
    truth_tables(notebook, "notebook regression filter")
    print(f"  days_b_screening_arrest missing {raw['days_b_screening_arrest'].isna().sum():,}, "
          f"outside +-30 {(~near & raw['days_b_screening_arrest'].notna()).sum():,}; "
          f"is_recid -1: {(raw['is_recid'] == -1).sum()}, charge degree O: "
          f"{(raw['c_charge_degree'] == 'O').sum()}")

    print("  the file's own columns:")
    bands = raw.groupby("score_text")["decile_score"].agg(["min", "max", "size"])
    print("  " + ", ".join(f"{band} deciles {r['min']}-{r['max']} ({r['size']:,})"
                           for band, r in bands.iterrows()))
    print(f"  age < 25 {(raw['age'] < 25).sum():,} rows, age_cat 'Less than 25' "
          f"{(raw['age_cat'] == 'Less than 25').sum():,}, same rows: "
          f"{((raw['age'] < 25) == (raw['age_cat'] == 'Less than 25')).all()}")
    for column in ("priors_count", "decile_score"):
        print(f"  {column} equals {column}.1 on every row: "
              f"{(raw[column] == raw[column + '.1']).all()}")
    print(f"  two_year_recid rate {raw['two_year_recid'].mean():.4f} of {len(raw):,}; event "
          f"agrees with it on {(raw['event'] == raw['two_year_recid']).mean():.4f} of rows; "
          f"c_charge_desc has {raw['c_charge_desc'].nunique():,} distinct values")

    print("\n2. Race in the file and the audit's rows")
    print("  " + ", ".join(f"{k} {v:,}" for k, v in raw["race"].value_counts().items()))
    data = load_audit(manifest)
    frame = raw[raw["race"].isin(["African-American", "Caucasian"])].reset_index(drop=True)
    assert (frame["race"].to_numpy() == data.raw["race"].to_numpy()).all()
    assert (frame["two_year_recid"].to_numpy() == data.y).all()
    flagged = (frame["score_text"] != "Low").to_numpy()
    outside = ~frame["days_b_screening_arrest"].between(-30, 30)
    print(f"  audit rows the notebook filter would remove: {int(outside.sum()):,}")
    print(f"  audit rows {len(data.y):,}; label rate {data.y.mean():.4f}; the tool flags "
          f"{flagged.mean():.4f} of them, {flagged[data.test_index].mean():.4f} of the "
          f"{len(data.test_index):,} test rows")

    print("\n3. Candidate features by race (audit rows)")
    features(frame)

    print("\n4. The deployed tool on the audit's rows (flagged = Medium or High)")
    names = {"race": ("African-American", "Caucasian"), "sex": ("Female", "Male"),
             "age": ("under 25", "25 or over")}
    masks = {attr: {dis: data.disadvantaged[attr], adv: ~data.disadvantaged[attr]}
             for attr, (dis, adv) in names.items()}
    deployed(frame, masks, args.resamples, args.seed)


if __name__ == "__main__":
    main()
