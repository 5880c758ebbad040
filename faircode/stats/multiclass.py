"""Multi-class outcomes by group: each class's share per group with intervals, a joint exact test
across the classes, and the gap's decomposition into classes.

A multi-class outcome (a job grade: custodial / admin / manage) is compared between an
attribute's disadvantaged and advantaged rows as a ``2 x C`` table of counts (:func:`class_counts`:
row 0 the disadvantaged group, row 1 the advantaged; column ``j`` class ``j``).  For each class
the *share* of the group's rows in it is estimated with Wilson's score interval, and the *class
share gap* (disadvantaged minus advantaged share) with Newcombe's hybrid score interval
(:func:`faircode.stats.resampling.newcombe_interval`) and an exact test of that class against
the others (:func:`class_gaps`).  The groups' whole distributions are compared by one joint
test (:func:`joint_test`) and by their total variation distance ``TV = ½ Σ_j |gap_j|``, of which
class ``j`` holds the share ``|gap_j| / Σ_k |gap_k|`` (the classes of a headline, largest first).

Design decisions
----------------
* **The joint test is exact where it can be** (:func:`exact_test`): conditional on both margins
  (the groups' sizes and the classes' totals, fixed by the permutation of group labels), the
  disadvantaged row is multivariate hypergeometric, ``P(x) = Π_j C(c_j, x_j) / C(N, n_d)``; every
  table with those margins is enumerated (vectorised, column by column) and the p-value is the
  probability of the tables whose Pearson statistic is at least the observed one (the
  Freeman-Halton test with the chi-square ordering).  This *is* the permutation test of the
  group labels, computed without drawing.  Where the tables are more than ``max_tables`` (many
  classes and rows) the same null is drawn instead: ``P`` multivariate hypergeometric first
  rows (:func:`monte_carlo_test`), ``p = (1 + #{X² ≥ x²}) / (1 + P)``.
* **The small-cell guard**: the asymptotic chi-square p-value is never used.  With expected
  counts below 5 (``small_cells``) or a zero cell -- BankWages has no woman in a custodial job --
  it would be unreliable; the exact and drawn tests are valid at any count.  A class no row of
  either group is in (a model that never predicts it) has no column: it is left out of the
  statistic, its degrees of freedom and the decomposition (its share and gap are 0 with
  intervals), and ``classes_absent`` counts it.  No ratio of shares is reported: a zero share
  (the 0 cell) makes it 0 or undefined.
* **Per-class tests** are the exact test of the ``2 x 2`` table "class j or not" (the chi-square
  ordering of a ``2 x 2`` table is ``|x - E|``: the two-sided conditional test of the share gap)
  as Lancaster's *mid-p* -- the tables exactly as extreme as the observed one count half.  A
  ``2 x 2`` table with a rare class has few possible tables, and the plain exact test rejects a
  true null far less often than ``alpha`` (``bench/multiclass_ranking.py``: 0.02-0.037 for a
  class of 6 % in groups of 43 and 52 rows, 0.03 in groups of 216 and 258); its mid-p rejects
  0.044-0.054.  The joint test keeps the plain exact p-value (at most ``alpha``: it decides a
  row set's verdict); its many tables make it far less discrete (0.043 and 0.050 there).
* Numbers depend only on the counts; ``seed`` feeds the drawn test alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from faircode.core import checks
from faircode.core.errors import describe
from faircode.stats import resampling

__all__ = ["EXACT", "MAX_TABLES", "MONTE_CARLO", "ClassGaps", "JointTest", "chi_square",
           "class_counts", "class_gaps", "exact_test", "joint_test", "monte_carlo_test"]

Counts = NDArray[np.int64]
Floats = NDArray[np.float64]

MAX_TABLES = 2_000_000
"""The most ``2 x C`` tables the exact test enumerates; past it the null is drawn."""
EXACT = "exact"
MONTE_CARLO = "monte_carlo"
"""The ``method`` of a joint test: every table enumerated, or ``P`` tables drawn."""
_TIE = 1e-9
"""Relative tolerance under which a table's statistic ties the observed one (counted as hit)."""


def class_counts(labels: ArrayLike, disadvantaged: ArrayLike, *, n_classes: int) -> Counts:
    """The ``2 x n_classes`` table of ``labels`` (class codes ``0..n_classes-1``) by group: row 0
    the rows where ``disadvantaged`` is true, row 1 the others."""
    checks.check_positive_int("n_classes", n_classes)
    y = np.asarray(labels)
    dis = checks.as_mask("disadvantaged", np.asarray(disadvantaged))
    if y.ndim != 1 or y.shape != dis.shape:
        raise ValueError(f"labels: expected a 1-D array of {dis.size} class codes, got shape "
                         f"{y.shape}")
    if y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0
                   or y.max() >= n_classes):
        bad = y[(y < 0) | (y >= n_classes)] if np.issubdtype(y.dtype, np.integer) else y
        raise ValueError(f"labels: expected class codes in 0..{n_classes - 1}, got "
                         f"{describe(bad.flat[0].item())}")
    return np.stack([np.bincount(y[dis], minlength=n_classes),
                     np.bincount(y[~dis], minlength=n_classes)]).astype(np.int64)


def _checked(table: ArrayLike) -> Counts:
    counts = np.asarray(table)
    if counts.ndim != 2 or counts.shape[0] != 2 or counts.shape[1] < 1:
        raise ValueError(f"table: expected a 2 x C array of counts, got shape {counts.shape}")
    if not np.issubdtype(counts.dtype, np.integer) or (counts < 0).any():
        raise ValueError("table: expected non-negative integer counts")
    return counts.astype(np.int64)


def _margins(counts: Counts) -> tuple[Counts, int, int] | None:
    """(the class totals with rows, n_d, n_a); None when the statistic is undefined (a group
    without rows, or fewer than two classes with rows)."""
    columns = counts.sum(axis=0)
    kept = columns[columns > 0]
    n_d, n_a = int(counts[0].sum()), int(counts[1].sum())
    if n_d == 0 or n_a == 0 or kept.size < 2:
        return None
    return kept, n_d, n_a


def _statistic(first: Floats, columns: Counts, n_d: int, n_a: int) -> Floats:
    """Pearson's X² of tables with first row(s) ``first`` (``..., C``) and margins
    ``columns``, ``n_d``, ``n_a``: ``N² / (n_d n_a) · Σ_j (x_j − n_d c_j / N)² / c_j``."""
    n = n_d + n_a
    expected = n_d * columns / n
    return (n * n / (n_d * n_a)) * (((first - expected) ** 2) / columns).sum(axis=-1)


def chi_square(table: ArrayLike) -> float:
    """Pearson's X² (no continuity correction) of a ``2 x C`` table over the classes with rows;
    NaN when a group has no rows or fewer than two classes have any."""
    counts = _checked(table)
    margins = _margins(counts)
    if margins is None:
        return float("nan")
    columns, n_d, n_a = margins
    first = counts[0][counts.sum(axis=0) > 0].astype(np.float64)
    return float(_statistic(first, columns, n_d, n_a))


def _log_choose(c: int) -> Floats:
    x = np.arange(c + 1, dtype=np.float64)
    return special.gammaln(c + 1.0) - special.gammaln(x + 1.0) - special.gammaln(c - x + 1.0)


def exact_test(table: ArrayLike, *, max_tables: int = MAX_TABLES,
               mid: bool = False) -> tuple[float, int] | None:
    """The exact conditional p-value of "no association" in a ``2 x C`` table and the number of
    tables enumerated (module docstring); None when there are more than ``max_tables``.  NaN
    (with 0 tables) when the statistic is undefined.  ``mid``: Lancaster's mid-p, the tables
    as extreme as the observed one counted half."""
    counts = _checked(table)
    checks.check_positive_int("max_tables", max_tables)
    margins = _margins(counts)
    if margins is None:
        return float("nan"), 0
    columns, n_d, n_a = margins
    observed = float(_statistic(counts[0][counts.sum(axis=0) > 0].astype(np.float64), columns,
                                n_d, n_a))
    n = n_d + n_a
    expected = n_d * columns / n
    scale = n * n / (n_d * n_a)
    after = np.concatenate([np.cumsum(columns[::-1])[::-1][1:], [0]])  # capacity to the right
    filled = np.zeros(1, dtype=np.int64)
    log_weight = np.zeros(1)
    statistic = np.zeros(1)
    for j, c in enumerate(columns):
        low = np.maximum(0, n_d - filled - after[j])
        high = np.minimum(c, n_d - filled)
        sizes = np.maximum(high - low + 1, 0)
        total = int(sizes.sum())
        if total > max_tables:
            return None
        parent = np.repeat(np.arange(filled.size), sizes)
        x = low[parent] + np.arange(total) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        filled = filled[parent] + x
        log_weight = log_weight[parent] + _log_choose(int(c))[x]
        statistic = statistic[parent] + scale * (x - expected[j]) ** 2 / c
    weight = np.exp(log_weight - special.logsumexp(log_weight))
    tie = _TIE * max(1.0, observed)
    p = weight[statistic >= observed - tie].sum()
    if mid:
        p -= 0.5 * weight[np.abs(statistic - observed) <= tie].sum()
    return float(min(1.0, p)), int(filled.size)


def monte_carlo_test(table: ArrayLike, *, draws: int, seed: int | np.random.SeedSequence
                     ) -> float:
    """The drawn p-value of the same null: ``draws`` first rows of the multivariate
    hypergeometric with the table's margins, ``(1 + #{X² ≥ x²}) / (1 + draws)``; NaN when the
    statistic is undefined."""
    counts = _checked(table)
    checks.check_positive_int("draws", draws)
    margins = _margins(counts)
    if margins is None:
        return float("nan")
    columns, n_d, n_a = margins
    observed = float(_statistic(counts[0][counts.sum(axis=0) > 0].astype(np.float64), columns,
                                n_d, n_a))
    rng = np.random.default_rng(seed)
    first = rng.multivariate_hypergeometric(columns, n_d, size=draws).astype(np.float64)
    drawn = _statistic(first, columns, n_d, n_a)
    hits = int(np.count_nonzero(drawn >= observed - _TIE * max(1.0, observed)))
    return (1.0 + hits) / (1.0 + draws)


@dataclass(frozen=True, slots=True)
class JointTest:
    """The joint test of "no class's share differs between the groups" (module docstring)."""

    statistic: float
    """Pearson's X² over the classes with rows."""
    df: int
    """Its degrees of freedom, ``(classes with rows) − 1``."""
    p_value: float
    method: str
    """:data:`EXACT` or :data:`MONTE_CARLO`."""
    tables: int
    """The tables enumerated (exact) or drawn (Monte Carlo)."""
    min_expected: float
    """The smallest expected count of a cell (classes with rows)."""
    small_cells: int
    """Cells whose expected count is below 5: where the asymptotic test would not hold."""
    classes_absent: int
    """Classes with no row in either group (left out of the test)."""


def joint_test(table: ArrayLike, *, n_permutations: int, seed: int | np.random.SeedSequence,
               max_tables: int = MAX_TABLES) -> JointTest:
    """The joint test of a ``2 x C`` table: exact when at most ``max_tables`` tables have its
    margins, else ``n_permutations`` drawn tables (module docstring)."""
    counts = _checked(table)
    columns = counts.sum(axis=0)
    absent = int(np.count_nonzero(columns == 0))
    margins = _margins(counts)
    if margins is None:
        return JointTest(float("nan"), 0, float("nan"), EXACT, 0, float("nan"), 0, absent)
    kept, n_d, n_a = margins
    expected = np.outer([n_d, n_a], kept) / (n_d + n_a)
    exact = exact_test(counts, max_tables=max_tables)
    if exact is not None:
        p, tables, method = exact[0], exact[1], EXACT
    else:
        p = monte_carlo_test(counts, draws=n_permutations, seed=seed)
        tables, method = n_permutations, MONTE_CARLO
    return JointTest(chi_square(counts), int(kept.size) - 1, p, method, tables,
                     float(expected.min()), int(np.count_nonzero(expected < 5.0)), absent)


@dataclass(frozen=True, slots=True)
class ClassGaps:
    """Each class's share per group with intervals, its share gap and the gap's decomposition
    (arrays of one entry per class)."""

    counts: Counts
    """The ``2 x C`` table (row 0 disadvantaged)."""
    share: Floats
    """``2 x C``: each group's share of its rows in each class."""
    share_low: Floats
    share_high: Floats
    """Wilson's interval of each share."""
    gap: Floats
    """Disadvantaged minus advantaged share."""
    gap_low: Floats
    gap_high: Floats
    """Newcombe's hybrid score interval of each gap."""
    p_value: Floats
    """The exact mid-p test of each class against the others (NaN for a class without rows)."""
    tv_distance: float
    """``½ Σ_j |gap_j|``: the total variation distance of the groups' class distributions."""
    share_of_gap: Floats
    """``|gap_j| / Σ_k |gap_k|`` (NaN when no class differs)."""


def class_gaps(table: ArrayLike, *, confidence: float) -> ClassGaps:
    """Every class's shares, gap, intervals at ``confidence`` and exact test (module docstring)."""
    counts = _checked(table)
    sizes = counts.sum(axis=1, keepdims=True)
    share_low, share_high = resampling.wilson_interval(counts, np.broadcast_to(sizes, counts.shape),
                                                       confidence=confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(sizes > 0, counts / np.where(sizes > 0, sizes, 1), np.nan)
    n_d, n_a = int(sizes[0, 0]), int(sizes[1, 0])
    gap = share[0] - share[1]
    low, high = resampling.newcombe_interval(counts[0], n_d, counts[1], n_a, confidence=confidence)
    p = np.full(counts.shape[1], np.nan)
    for j in range(counts.shape[1]):  # C two-by-two tables of a few hundred cells each
        if counts[:, j].sum() > 0:
            two = np.stack([counts[:, j], sizes[:, 0] - counts[:, j]], axis=1)
            found = exact_test(two, mid=True)  # at most min(class total, group) + 1 tables
            p[j] = found[0] if found is not None else float("nan")
    total = float(np.nansum(np.abs(gap)))
    shares = np.abs(gap) / total if total > 0 else np.full(gap.shape, np.nan)
    return ClassGaps(counts, share, share_low, share_high, gap, np.clip(low, -1.0, 1.0),
                     np.clip(high, -1.0, 1.0), p, total / 2.0 if math.isfinite(total) else
                     float("nan"), shares)
