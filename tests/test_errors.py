"""Tests of faircode.core.errors.describe: the bounded rendering is repr's first 80 characters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from faircode.core.errors import describe

LEAVES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30) \
    | st.binary(max_size=10)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner) | st.tuples()
    | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    | st.frozensets(st.integers(), max_size=3) | st.sets(st.text(max_size=3), max_size=3),
    max_leaves=30,
)


@given(VALUES)
def test_describe_equals_the_cut_repr(value: object) -> None:
    """For any value small enough to repr, describe shows repr cut at 80 with its type."""
    text = repr(value)
    shown = text if len(text) <= 80 else text[:77] + "..."
    assert describe(value) == f"{shown} ({type(value).__name__})"


def test_a_huge_integer_is_summarised_without_str() -> None:
    """A 5,001-digit integer (beyond int-to-str's limit) is named by its size, not rendered."""
    assert describe(10**5000) == "<an integer of about 5,001 digits> (int)"
