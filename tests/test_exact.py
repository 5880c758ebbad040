"""The exact conditional p-values (faircode.stats.exact): brute force, Monte Carlo, the P rule."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from faircode.core.config import StatsConfig
from faircode.evaluate.counted import family_tests, p_value_record, permutations
from faircode.stats import _metric_defs as defs
from faircode.stats import metrics
from faircode.stats.exact import exact_p_value, monte_carlo_draws, rate_tail, smallest_q
from faircode.stats.intersectional import intersectional_from_counts
from faircode.stats.resampling import TIE_RTOL, confusion_counts, permutation_p_value

OWN_NULLS = [m for m in defs.FAIRNESS_METRICS if m not in defs.SAME_NULL]


def _brute_force(metric: str, y: np.ndarray, yhat: np.ndarray, dis: np.ndarray) -> float:
    """The share of every relabelling within the metric's strata (each stratum keeps its
    disadvantaged count) whose |statistic| reaches the observed one: the permutation test's
    exact p, by enumeration."""
    cell = 2 * y + yhat
    spec = defs.spec(metric)
    strata = [np.flatnonzero(np.isin(cell, s)) for s in spec.subsets]
    choices = [list(itertools.combinations(rows, int(dis[rows].sum()))) for rows in strata]
    observed = abs(float(metrics.metric_values(metric, confusion_counts(y[dis], yhat[dis]),
                                               confusion_counts(y[~dis], yhat[~dis]))))
    hits = total = 0
    for picked in itertools.product(*choices):
        label = dis.copy()
        for rows, chosen in zip(strata, picked, strict=True):
            label[rows] = False
            label[list(chosen)] = True
        with np.errstate(divide="ignore", invalid="ignore"):
            value = abs(float(metrics.metric_values(
                metric, confusion_counts(y[label], yhat[label]),
                confusion_counts(y[~label], yhat[~label]))))
        hits += value >= observed * (1 - TIE_RTOL)
        total += 1
    return hits / total


@pytest.mark.parametrize("metric", OWN_NULLS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_p_equals_the_enumeration_of_every_relabelling(metric: str, seed: int) -> None:
    """On a table of 12 rows the exact p of each own-null metric (equalized odds: two strata)
    is the share of all relabellings at least as extreme."""
    rng = np.random.default_rng(seed)
    y, yhat = rng.integers(0, 2, 12), rng.integers(0, 2, 12)
    dis = np.zeros(12, bool)
    dis[rng.choice(12, 5, replace=False)] = True
    d, a = confusion_counts(y[dis], yhat[dis]), confusion_counts(y[~dis], yhat[~dis])
    exact = exact_p_value(metric, d, a)
    if math.isnan(exact):  # an empty subset: nothing to enumerate
        assert math.isnan(float(metrics.metric_values(metric, d, a)))
        return
    assert exact == pytest.approx(_brute_force(metric, y, yhat, dis), rel=1e-12)


@pytest.mark.parametrize("metric", OWN_NULLS)
def test_exact_p_is_the_limit_of_the_monte_carlo_permutation(metric: str) -> None:
    """At P = 200,000 the Monte-Carlo permutation p lies within 5 standard errors of the
    exact p the fairness table reports."""
    rng = np.random.default_rng(11)
    y, yhat, dis = rng.integers(0, 2, 120), rng.integers(0, 2, 120), rng.random(120) < 0.35
    yhat[dis & (y == 1)] = 0  # a gap of some size in every metric
    reported = {r.metric: r.p_value for r in metrics.fairness_metrics(y, yhat, dis, seed=3)}
    observed, permuted = metrics.permutation_distribution(metric, y, yhat, dis,
                                                          n_permutations=200_000, seed=4)
    p_mc = permutation_p_value(observed, permuted)
    se = math.sqrt(reported[metric] * (1 - reported[metric]) / 200_000)
    assert abs(p_mc - reported[metric]) < 5 * se + 1 / 200_000


def test_equalized_odds_is_the_product_of_its_two_tails() -> None:
    """P(max(|T1|, |T2|) >= t) = 1 - (1 - P(|T1| >= t)) (1 - P(|T2| >= t)): the y = 1 and y = 0
    rows are shuffled independently."""
    d, a = np.array([20, 5, 8, 12]), np.array([30, 9, 4, 25])
    t = float(metrics.metric_values("equalized_odds_diff", d, a)) * (1 - TIE_RTOL)
    tails = [rate_tail(defs.SPECS[c].subsets[0], defs.SPECS[c].success, d, a, threshold=t,
                       statistic=defs.SPECS[c].statistic) for c in ("tpr_gap", "fpr_gap")]
    assert exact_p_value("equalized_odds_diff", d, a) == pytest.approx(
        1 - (1 - tails[0]) * (1 - tails[1]), rel=1e-12)


def test_twins_report_the_exact_p_of_their_null() -> None:
    """Disparate impact reports demographic parity's exact p (the ratio is monotone in the same
    count given the margins), tpr_gap equal opportunity's."""
    rng = np.random.default_rng(5)
    y, yhat, dis = rng.integers(0, 2, 200), rng.integers(0, 2, 200), rng.random(200) < 0.3
    r = {m.metric: m.p_value for m in metrics.fairness_metrics(y, yhat, dis, seed=1)}
    d, a = confusion_counts(y[dis], yhat[dis]), confusion_counts(y[~dis], yhat[~dis])
    assert r["disparate_impact_ratio"] == r["demographic_parity_diff"] == exact_p_value(
        "demographic_parity_diff", d, a)
    assert r["tpr_gap"] == r["equal_opportunity_diff"]


def test_a_tiny_p_is_kept_in_log_space_and_never_zero() -> None:
    """20,000 rows per group at rates 0.2 and 0.8: the p is far below any Monte-Carlo floor,
    positive, and the floor of a double at most."""
    p = exact_p_value("demographic_parity_diff", np.array([16000, 4000, 0, 0]),
                      np.array([4000, 16000, 0, 0]))
    assert 0 < p < 1e-300


def test_intersectional_gap_p_is_exact_with_independent_rows() -> None:
    """The DD-vs-AA gap's p is the hypergeometric tail of DD's favourable count."""
    cells = {"dd": np.array([30, 10, 0, 0]), "da": np.array([20, 20, 0, 0]),
             "ad": np.array([15, 25, 0, 0]), "aa": np.array([12, 28, 0, 0])}
    result = intersectional_from_counts(cells, None, None, n_permutations=50, seed=1)
    rows = np.r_[np.zeros(30), np.ones(10), np.zeros(12), np.ones(28)].astype(int)
    dis = np.r_[np.ones(40), np.zeros(40)].astype(bool)
    brute = _brute_force_selection(rows, dis)
    assert result.p_value == pytest.approx(brute, rel=1e-12)


def _brute_force_selection(yhat: np.ndarray, dis: np.ndarray) -> float:
    """The exact two-sided p of a selection-rate difference, summing the hypergeometric law
    over the disadvantaged group's favourable count (every relabelling, grouped by that count)."""
    from scipy import stats as sps
    n_d, n, k = int(dis.sum()), dis.size, int(yhat.sum())
    t = abs(yhat[dis].mean() - yhat[~dis].mean())
    law = sps.hypergeom(n, k, n_d)
    return float(sum(law.pmf(x) for x in range(max(0, k - (n - n_d)), min(n_d, k) + 1)
                     if abs(x / n_d - (k - x) / (n - n_d)) >= t * (1 - TIE_RTOL)))


def test_monte_carlo_draws_reach_half_of_alpha_in_the_family() -> None:
    """P is raised until a test alone at its floor reaches q <= alpha / 2, and never lowered."""
    draws = monte_carlo_draws(200, tests=90, alpha=0.05)
    assert draws == 3599 and smallest_q(draws, tests=90) <= 0.025
    assert smallest_q(draws - 1, tests=90) > 0.025
    assert monte_carlo_draws(20_000, tests=90, alpha=0.05) == 20_000
    with pytest.raises(ValueError, match="tests: expected a positive int"):
        monte_carlo_draws(200, tests=0, alpha=0.05)


def test_the_family_bound_and_run_json_record() -> None:
    """A grid audit of 15 cells and one attribute has at most 90 fairness tests (six own
    nulls); two attributes add the gap and interaction of their pair per cell."""
    assert family_tests(1, 15) == 90 and family_tests(2, 15) == 15 * (12 + 2)
    stats = StatsConfig(n_permutations=200, n_resamples=200)
    assert permutations(stats, attributes=1, row_sets=15) == 3599
    record = p_value_record(stats, attributes=1, row_sets=15)
    assert record["permutations"] == 3599 and record["configured_permutations"] == 200
    assert record["smallest_q"] == pytest.approx(90 / 3600)
