"""Tests of faircode.stats.multiclass: hand-computed tables, the slow reference, and BankWages."""

from __future__ import annotations

import math

import multiclass_reference as ref
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from faircode.stats.multiclass import (
    EXACT,
    MONTE_CARLO,
    chi_square,
    class_counts,
    class_gaps,
    exact_test,
    joint_test,
    monte_carlo_test,
)

BANK_GENDER = np.array([[0, 206, 10], [27, 157, 74]])
"""BankWages' job (custodial, admin, manage) by gender: female (row 0), male."""
BANK_MINORITY = np.array([[13, 87, 4], [14, 276, 80]])
"""BankWages' job by minority: yes (row 0), no."""


def test_class_counts_by_group() -> None:
    """Row 0 counts the disadvantaged rows' classes, row 1 the others'."""
    labels = np.array([0, 2, 2, 1, 0, 1])
    dis = np.array([True, True, False, False, False, True])
    assert class_counts(labels, dis, n_classes=3).tolist() == [[1, 1, 1], [1, 1, 1]]
    assert class_counts(labels[:2], dis[:2], n_classes=4).tolist() == [[1, 0, 1, 0],
                                                                       [0, 0, 0, 0]]


def test_class_counts_refuse_a_code_out_of_range() -> None:
    """A label outside 0..C-1 is one line naming it."""
    with pytest.raises(ValueError, match=r"class codes in 0\.\.1, got 2"):
        class_counts(np.array([0, 2]), np.array([True, False]), n_classes=2)


def test_exact_test_of_a_hand_computed_two_by_two() -> None:
    """[[2, 0], [0, 2]]: first rows 0, 1, 2 with probabilities 1/6, 4/6, 1/6; X² is 4 at 0 and
    2, so p = 1/3 from three tables."""
    p, tables = exact_test(np.array([[2, 0], [0, 2]]))
    assert p == pytest.approx(1 / 3)
    assert tables == 3
    assert chi_square(np.array([[2, 0], [0, 2]])) == pytest.approx(4.0)


def test_exact_test_of_a_symmetric_table_is_one() -> None:
    """One row in one of three classes, two in the others: every table is as extreme."""
    assert exact_test(np.array([[1, 0, 0], [0, 1, 1]]))[0] == pytest.approx(1.0)


@given(st.lists(st.integers(0, 4), min_size=6, max_size=6))
def test_exact_test_matches_the_brute_force_reference(cells: list[int]) -> None:
    """Every small 2 x 3 table: the same p-value (and mid-p) as brute-force enumeration with
    fractions."""
    table = np.array(cells).reshape(2, 3)
    kept = table[:, table.sum(axis=0) > 0]
    p, _ = exact_test(table)
    if table[0].sum() == 0 or table[1].sum() == 0 or kept.shape[1] < 2:
        assert math.isnan(p)
        return
    assert p == pytest.approx(ref.exact_p(table), rel=1e-9)
    assert exact_test(table, mid=True)[0] == pytest.approx(ref.exact_p(table, mid=True),
                                                           rel=1e-9)
    assert chi_square(table) == pytest.approx(ref.statistic(table), rel=1e-12)


def test_exact_test_gives_way_to_draws_past_its_limit() -> None:
    """Over ``max_tables`` tables the joint test draws its null (and says so)."""
    assert exact_test(BANK_GENDER, max_tables=100) is None
    test = joint_test(BANK_MINORITY, n_permutations=400, seed=3, max_tables=100)
    assert (test.method, test.tables) == (MONTE_CARLO, 400)
    assert test.p_value == pytest.approx(1 / 401)


def test_drawn_test_agrees_with_the_exact_one() -> None:
    """20,000 drawn tables give the exact p-value within its Monte-Carlo error."""
    table = np.array([[6, 9, 3], [10, 8, 12]])
    exact = exact_test(table)[0]
    drawn = monte_carlo_test(table, draws=20_000, seed=11)
    assert abs(drawn - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4


def test_bank_wages_published_counts_and_tests() -> None:
    """BankWages' tables: the published counts, the zero cell guarded (exact test, no
    asymptotics), the joint test's degrees of freedom and its exactness."""
    gender = joint_test(BANK_GENDER, n_permutations=500, seed=1)
    assert gender.method == EXACT and gender.df == 2 and gender.classes_absent == 0
    assert gender.statistic == pytest.approx(ref.statistic(BANK_GENDER))
    assert gender.p_value < 1e-15
    minority = joint_test(BANK_MINORITY, n_permutations=500, seed=1)
    assert minority.small_cells == 0
    assert minority.min_expected == pytest.approx(104 * 27 / 474)  # minority custodial
    assert 1e-6 < minority.p_value < 1e-4


def test_class_gaps_by_hand_on_bank_wages() -> None:
    """Shares, gaps and the decomposition of job by gender, by hand: women 0/216, 206/216,
    10/216; men 27/258, 157/258, 74/258; TV = (27/258 + |206/216 - 157/258| + |10/216 -
    74/258|) / 2, of which admin holds half."""
    gaps = class_gaps(BANK_GENDER, confidence=0.95)
    women, men = np.array([0, 206, 10]) / 216, np.array([27, 157, 74]) / 258
    assert gaps.share[0] == pytest.approx(women)
    assert gaps.gap == pytest.approx(women - men)
    assert gaps.tv_distance == pytest.approx(np.abs(women - men).sum() / 2)
    assert gaps.share_of_gap[1] == pytest.approx(0.5)
    assert gaps.share_of_gap.sum() == pytest.approx(1.0)
    z = 1.959963984540054
    for j in range(3):
        assert (gaps.share_low[0, j], gaps.share_high[0, j]) == pytest.approx(
            ref.wilson(int(BANK_GENDER[0, j]), 216, z))
        assert (gaps.gap_low[j], gaps.gap_high[j]) == pytest.approx(
            ref.newcombe(int(BANK_GENDER[0, j]), 216, int(BANK_GENDER[1, j]), 258, z))
        two = np.array([[BANK_GENDER[0, j], 216 - BANK_GENDER[0, j]],
                        [BANK_GENDER[1, j], 258 - BANK_GENDER[1, j]]])
        assert gaps.p_value[j] == pytest.approx(ref.exact_p(two, mid=True), rel=1e-9)


def test_a_class_without_rows_leaves_the_test() -> None:
    """A class no row is in (never predicted) has no column: it is counted, not tested."""
    test = joint_test(np.array([[5, 0, 3], [2, 0, 7]]), n_permutations=10, seed=0)
    assert test.classes_absent == 1 and test.df == 1
    assert test.p_value == pytest.approx(ref.exact_p(np.array([[5, 3], [2, 7]])))
    gaps = class_gaps(np.array([[5, 0, 3], [2, 0, 7]]), confidence=0.95)
    assert gaps.gap[1] == 0 and math.isnan(gaps.p_value[1])


def test_undefined_without_both_groups() -> None:
    """A group without rows: no statistic, no p-value."""
    test = joint_test(np.array([[0, 0], [3, 4]]), n_permutations=10, seed=0)
    assert math.isnan(test.statistic) and math.isnan(test.p_value)
