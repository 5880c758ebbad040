"""The audits of decisions made by people: the published tables, count for count, and the gaps.

Run from the repository root after `faircode data fetch resume_callbacks mortgage_denials
toronto_arrests minneapolis_stops`:

    .venv/bin/python bench/people_decisions.py [--permutations 2000] [--seed 42]

Everything is read through the audits' own manifests (``faircode.audit.data.load_audit``: the R
data reader, the target, the groups and the declared strata) and computed with the library's
statistics: per-cell decision rates with Wilson intervals (:mod:`faircode.stats.groups`), the
parity gap with its Newcombe interval and permutation p (:mod:`faircode.stats.metrics`), the gap
within strata (:mod:`faircode.stats.stratified`: Mantel–Haenszel, Sato interval, within-strata
permutation p, CMH p, Cochran's Q of a common difference) and the gap conditional on covariates
(:mod:`faircode.stats.adjusted`: a logistic regression's average marginal effect) on every row of
each audit.  It prints, in order:

1. ``resume_callbacks``: callbacks and applicants per race, per race x sex, per race x city and
   per race x résumé quality, each rate with its interval, beside the percentage Bertrand &
   Mullainathan (AER 2004) publish for that cell (Table 1: all résumés, by city and by sex;
   Table 4 Panel A: by the subjective résumé quality), and whether it rounds to it.
2. ``resume_callbacks``: the raw callback gap by race and sex and the gap within résumé quality,
   city and both.
3. ``mortgage_denials``: denials and applications by race with rates and intervals, against the
   textbook's "about 28 % vs about 9 %"; the raw gap (favourable = not denied), the gaps within
   consumer credit history and within the full credit history (consumer, mortgage, public), and
   the gap conditional on the lender's stated criteria.
4. ``toronto_arrests``: releases with a summons and arrests by skin colour against the counts the
   carData documentation and the Toronto Star publish (955 of 1,288 Black, 3,379 of 3,938 White
   arrestees); the gaps within employment, citizenship, prior checks and all three.
5. ``minneapolis_stops``: persons searched and stops by race (Black 3,099 of 15,220, White 954 of
   11,703) and the gaps within precinct; then the *vehicle* searched, a second decision the
   manifest's one target does not carry, with the same statistics on the same rows.
6. Every audit: how well each candidate feature predicts race and the decision (AUC; 5-fold
   cross-validated logistic regressions of the feature sets), the numbers behind the datasheets'
   proxies.

It backs the datasheets ``audits/{resume_callbacks,mortgage_denials,toronto_arrests,
minneapolis_stops}/README.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import cross_val_predict

from faircode.audit.data import AuditData, load_audit
from faircode.audit.manifest import load_manifest
from faircode.audit.strata import stratum_codes
from faircode.stats.adjusted import adjusted_gap
from faircode.stats.groups import group_rates
from faircode.stats.metrics import fairness_metrics, orient
from faircode.stats.stratified import stratified_gap

RESUME = Path("audits/resume_callbacks/audit.yaml")
HMDA = Path("audits/mortgage_denials/audit.yaml")
TORONTO = Path("audits/toronto_arrests/audit.yaml")
STOPS = Path("audits/minneapolis_stops/audit.yaml")
# (row label, column, value) -> the published percentages (White names, African-American names)
PUBLISHED = {
    ("Table 1: all sent résumés", None, None): (9.65, 6.45),
    ("Table 1: Chicago", "city", "chicago"): (8.06, 5.40),
    ("Table 1: Boston", "city", "boston"): (11.63, 7.76),
    ("Table 1: females", "gender", "female"): (9.89, 6.63),
    ("Table 1: males", "gender", "male"): (8.87, 5.83),
    ("Table 4A: low-quality résumés", "quality", "low"): (8.50, 6.19),
    ("Table 4A: high-quality résumés", "quality", "high"): (10.79, 6.70),
}


def _rate(y: np.ndarray, masks: dict[str, np.ndarray]) -> dict[str, tuple[int, int, str]]:
    """Per mask: (decided 1, rows, 'rate [low, high]') with Wilson 95 % intervals."""
    rates = group_rates(y, y, masks)  # the decision is the outcome: its rate is the base rate
    out = {}
    for g in rates:
        r = g.rate("selection_rate")
        out[g.group] = (r.numerator, r.denominator,
                        f"{100 * r.value:6.2f} % [{100 * r.ci_low:5.2f}, {100 * r.ci_high:5.2f}]")
    return out


def resume_tables(data: AuditData) -> None:
    """Section 1: every published cell of Tables 1 and 4A, count for count."""
    raw, y = data.raw, data.y
    white, black = (raw["ethnicity"] == "cauc").to_numpy(), (raw["ethnicity"] == "afam").to_numpy()
    print("resume_callbacks: callbacks / applicants, rate [Wilson 95 %] (White names | "
          "African-American names)")
    for (label, column, value), (pub_w, pub_b) in PUBLISHED.items():
        cell = np.ones(len(y), dtype=bool) if column is None else \
            (raw[column] == value).to_numpy()
        found = _rate(y, {"W": white & cell, "B": black & cell})
        (kw, nw, tw), (kb, nb, tb) = found["W"], found["B"]
        same = round(100 * kw / nw, 2) == pub_w and round(100 * kb / nb, 2) == pub_b
        print(f"  {label:<31} {kw:>3}/{nw:>5,} {tw} | {kb:>3}/{nb:>5,} {tb}   published "
              f"{pub_w:.2f} | {pub_b:.2f}  {'equal' if same else 'DIFFERENT'}")
    both = {f"{e} {s}": ((raw["ethnicity"] == e) & (raw["gender"] == s)).to_numpy()
            for e in ("cauc", "afam") for s in ("female", "male")}
    print("  race x sex (the four cells):")
    for name, (k, n, text) in _rate(y, both).items():
        print(f"    {name:<13} {k:>3}/{n:>5,} {text}")


def gaps(data: AuditData, *, permutations: int, seed: int) -> None:
    """The raw gap and the gap conditional on every declared stratum, every attribute."""
    m = data.manifest
    y_fav, yhat_fav = orient(data.y, data.y, favourable=m.target.favourable)
    strata = dict(data.strata)
    pooled = [s for s in m.strata if not s.regression]
    columns = tuple(dict.fromkeys(c for s in pooled for c in s.columns))
    if pooled and all(s.columns != columns for s in pooled):  # every declared column at once
        strata[" x ".join(columns)] = stratum_codes(data.raw, columns)
    print(f"{m.name}: gaps of the favourable rate (target.favourable {m.target.favourable}), "
          "disadvantaged minus advantaged, every row")
    for a, attribute in enumerate(m.protected_attributes):
        mask = data.disadvantaged[attribute.name]
        dp = fairness_metrics(y_fav, yhat_fav, mask, n_permutations=permutations,
                              seed=np.random.SeedSequence(seed, spawn_key=(a,)))[0]
        print(f"  {attribute.name}: raw {dp.value:+.4f} [{dp.ci_low:+.4f}, {dp.ci_high:+.4f}] "
              f"p {dp.p_value:.4f} (Newcombe; permutation, P = {permutations})")
        for j, (name, codes) in enumerate(strata.items()):
            g = stratified_gap(yhat_fav, mask, codes, n_permutations=permutations,
                               seed=np.random.SeedSequence(seed, spawn_key=(a, j)))
            h = g.heterogeneity
            print(f"    within {name:<28} {g.value:+.4f} [{g.ci_low:+.4f}, {g.ci_high:+.4f}] "
                  f"p {g.p_value:.4f}, CMH p {g.cmh_p_value:.2g}; {g.strata_compared} of "
                  f"{g.strata} strata compared; Cochran's Q {h.q:.2f}, df {h.df}, "
                  f"p {h.p_value:.3g}{'; ' + g.note if g.note else ''}")
        for name, design in data.covariates.items():
            g2 = adjusted_gap(yhat_fav, mask, design.to_numpy())
            note = f"; {g2.note}" if g2.note else ""
            print(f"    conditional on {name:<20} {g2.value:+.4f} [{g2.ci_low:+.4f}, "
                  f"{g2.ci_high:+.4f}] p {g2.p_value:.2g} (logistic regression, average "
                  f"marginal effect; {g2.terms} covariate terms){note}")


def hmda_table(data: AuditData) -> None:
    """Section 3's counts: denials and applications by race."""
    african = data.disadvantaged["race"]
    print("mortgage_denials: denials / applications, rate [Wilson 95 %]; textbook: about 28 % "
          "vs about 9 %")
    for name, (k, n, text) in _rate(data.y, {"African-American": african,
                                             "other applicants": ~african}).items():
        print(f"  {name:<17} {k:>3}/{n:>5,} {text}")


def published(data: AuditData, counts: dict[str, tuple[int, int]], what: str) -> None:
    """Decisions 1 and rows per group of the first attribute against the published counts."""
    attribute = data.manifest.protected_attributes[0].name
    dis = data.disadvantaged[attribute]
    names = list(counts)
    print(f"{data.manifest.name}: {what} / rows, rate [Wilson 95 %]; published counts")
    found = _rate(data.y, {names[0]: dis, names[1]: ~dis})
    for name, (k, n, text) in found.items():
        same = (k, n) == counts[name]
        print(f"  {name:<8} {k:>5,}/{n:>7,} {text}   published {counts[name][0]:,} of "
              f"{counts[name][1]:,}  {'equal' if same else 'DIFFERENT'}")


def vehicle_searches(data: AuditData, *, permutations: int, seed: int) -> None:
    """Section 5's second decision: the vehicle searched, on the audit's own rows, by race, raw
    and within precinct (the manifest's target is the person searched)."""
    from faircode.audit._data_rdb import read_lazyload

    m = data.manifest
    raw = read_lazyload(m.dataset.path, object_name=str(m.dataset.object), where="bench")
    kept = raw[raw[m.target.column].notna() & raw["race"].isin(["Black", "White"])]
    searched = (kept["vehicleSearch"] == "YES").to_numpy(dtype=np.int8)
    black = (kept["race"] == "Black").to_numpy()
    assert np.array_equal(black, data.disadvantaged["race"])  # the audit's rows, in its order
    print("minneapolis_stops: vehicle searched / stops, rate [Wilson 95 %]")
    for name, (k, n, text) in _rate(searched, {"Black": black, "White": ~black}).items():
        print(f"  {name:<8} {k:>5,}/{n:>7,} {text}")
    not_searched = 1 - searched  # favourable: the vehicle not searched
    dp = fairness_metrics(not_searched, not_searched, black, n_permutations=permutations,
                          seed=np.random.SeedSequence(seed, spawn_key=(7,)))[0]
    g = stratified_gap(not_searched, black, data.strata["precinct"], n_permutations=permutations,
                       seed=np.random.SeedSequence(seed, spawn_key=(7, 0)))
    print(f"  gap of vehicles not searched, Black minus White: raw {dp.value:+.4f} "
          f"[{dp.ci_low:+.4f}, {dp.ci_high:+.4f}] p {dp.p_value:.4f}; within precinct "
          f"{g.value:+.4f} [{g.ci_low:+.4f}, {g.ci_high:+.4f}] p {g.p_value:.4f}, "
          f"Cochran's Q {g.heterogeneity.q:.2f}, df {g.heterogeneity.df}, "
          f"p {g.heterogeneity.p_value:.3g}")


def _auc(y: np.ndarray, values: pd.Series, *, numeric: bool) -> float:
    """A feature's AUC for ``y``: its values, or for a categorical each level's rate of y."""
    if numeric:  # a missing number at the median, as the encoder fills it
        x = values.astype(float)
        x = x.fillna(x.median()).to_numpy()
    else:  # a missing value is a level of its own
        text = values.astype(object).where(values.notna(), "(missing)").astype(str)
        x = text.map(pd.Series(y).groupby(text.to_numpy()).mean()).to_numpy(dtype=float)
    a = roc_auc_score(y, np.asarray(x, dtype=float))
    return max(a, 1.0 - a)


def proxies(data: AuditData) -> None:
    """Section 4: each feature's AUC for race and for the decision; the feature sets' CV AUC."""
    m, X = data.manifest, data.X
    race = data.disadvantaged[m.protected_attributes[0].name].astype(int)
    print(f"{m.name}: single-feature AUC for race / for the decision (a categorical feature "
          "scored by its levels' rates)")
    for column in (*m.core_features, *m.proxy_features):
        kind = "proxy" if column in m.proxy_features else "core"
        numeric = data.encoder.kinds[column] == "numeric"
        values = data.raw[column].reset_index(drop=True)
        print(f"  {column:<12} {kind:<5} race {_auc(race, values, numeric=numeric):.3f}  "
              f"decision {_auc(data.y, values, numeric=numeric):.3f}")

    def cv(columns: tuple[str, ...], target: np.ndarray) -> float:
        model = LogisticRegression(max_iter=2000)
        p = cross_val_predict(model, pd.get_dummies(X[list(columns)].astype(str))
                              if "name" in columns else X[list(columns)], target, cv=5,
                              method="predict_proba")[:, 1]
        return float(roc_auc_score(target, p))

    core, every = tuple(m.core_features), (*m.core_features, *m.proxy_features)
    print(f"  5-fold CV AUC, core / core + proxies: decision {cv(core, data.y):.3f} / "
          f"{cv(every, data.y):.3f}; race {cv(core, race):.3f} / {cv(every, race):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--permutations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    every = dict(permutations=args.permutations, seed=args.seed)
    resume = load_audit(load_manifest(RESUME))
    resume_tables(resume)
    gaps(resume, **every)
    hmda = load_audit(load_manifest(HMDA))
    hmda_table(hmda)
    gaps(hmda, **every)
    toronto = load_audit(load_manifest(TORONTO))
    published(toronto, {"Black": (955, 1288), "White": (3379, 3938)}, "released with a summons")
    gaps(toronto, **every)
    stops = load_audit(load_manifest(STOPS))
    published(stops, {"Black": (3099, 15220), "White": (954, 11703)}, "persons searched")
    gaps(stops, **every)
    vehicle_searches(stops, **every)
    for data in (resume, hmda, toronto, stops):
        proxies(data)


if __name__ == "__main__":
    main()
