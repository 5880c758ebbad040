"""The linear matcher (faircode.counterfactual._match) gives exactly what the old one gave.

The old engine (one named group per substitution, tests/perturb_reference.py) is the reference:
a Hypothesis property draws axes and texts from an alphabet chosen to reach every rule -- the
characters ``re.IGNORECASE`` equates without one casefold (I, i, İ, ı), long s, sharp s, the
Kelvin sign, whitespace runs inside multi-word patterns, word-edge punctuation, digits, patterns
that are prefixes of others -- and the two must agree on the perturbed text and the fired counts.
A second test checks over all of Unicode that the lookup key of the map back is sound.
"""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from perturb_reference import reference_apply

from faircode import AxisSpec, PerturbationKind, Substitution, perturb
from faircode.core.errors import PerturbationError
from faircode.counterfactual._match import _key

LETTERS = ["h", "e", "s", "i", "I", "\u0130", "\u0131", "\u017f", "\u00df", "\u212a", "k", "S"]
WORDS = st.text(alphabet=[*LETTERS, "+", ".", "1"], min_size=1, max_size=4).filter(
    lambda w: w.strip() == w and w.strip() != "")
PATTERNS = st.lists(WORDS, min_size=1, max_size=2).map(" ".join)
TEXT = st.lists(st.one_of(WORDS, st.sampled_from([" ", "  ", "\t", "\n", ",", "-", "x"])),
                max_size=25).map("".join)


def _axis(pairs: list[tuple[str, str]]) -> AxisSpec | None:
    """An explicit axis of ``pairs``, or None when they do not make a valid one (a duplicate
    pattern, a replacement equal to its pattern)."""
    try:
        return AxisSpec("a", tuple(Substitution(p, r) for p, r in pairs))
    except PerturbationError:
        return None


@settings(max_examples=400, deadline=None)
@given(pairs=st.lists(st.tuples(PATTERNS, st.sampled_from(["he", "She", "THEY", "x y", "Ⅰ"])),
                      min_size=1, max_size=6),
       text=TEXT)
def test_linear_matching_equals_the_named_group_reference(pairs: list[tuple[str, str]],
                                                          text: str) -> None:
    """For any axis and text, the perturbed text and fired counts equal the old engine's."""
    axis = _axis(pairs)
    if axis is None:
        return
    [result] = perturb(text, [axis])
    expected, fired = reference_apply(text, axis.substitutions)
    assert (result.perturbed, result.fired) == (expected, fired)


def test_patterns_equal_under_ignorecase_but_not_casefold_keep_their_order() -> None:
    """``his`` and ``hıs`` match the same texts; the one tried first (declared first, same
    length) takes each match, as in the old engine."""
    axis = AxisSpec("a", (Substitution("h\u0131s", "one"), Substitution("his", "two")))
    [result] = perturb("his HIS h\u0131s H\u0130S", [axis])
    assert result.perturbed == "one ONE one ONE"
    assert result.fired == (("h\u0131s", 4),)
    assert reference_apply("his HIS h\u0131s H\u0130S", axis.substitutions)[0] == result.perturbed


def test_three_thousand_substitutions_give_the_reference_result() -> None:
    """A 3,000-substitution axis on a text where many fire: identical to the reference."""
    subs = tuple(Substitution(f"w{i}x", f"r{i}") for i in range(3000))
    axis = AxisSpec("big", subs)
    text = " ".join(f"W{i * 37 % 3000}X w{i}x, {i}" for i in range(60))
    [result] = perturb(text, [axis])
    assert (result.perturbed, result.fired) == reference_apply(text, subs)


def test_a_proxy_kind_is_matched_on_its_own() -> None:
    """Explicit and proxy substitutions stay separate perturbations with the linear matcher."""
    axis = AxisSpec("a", (Substitution("he", "she"),
                          Substitution("Greg", "Jamal", kind=PerturbationKind.PROXY)))
    explicit, proxy = perturb("he met Greg", [axis])
    assert (explicit.perturbed, proxy.perturbed) == ("she met Greg", "he met Jamal")


def _ignorecase_classes() -> list[list[str]]:
    """Every class of two or more characters ``re.IGNORECASE`` equates (its own rule: the simple
    lower case, then the extra equivalences of ``re._casefix``)."""
    import _sre
    from re import _casefix  # type: ignore[attr-defined]

    classes: dict[int, list[str]] = {}
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code < 0xE000:
            continue
        lower = _sre.unicode_tolower(code)
        classes.setdefault(min((lower, *_casefix._EXTRA_CASES.get(lower, ()))), []).append(
            chr(code))
    return [c for c in classes.values() if len(c) > 1]


def test_the_lookup_key_is_one_per_class_re_ignorecase_equates() -> None:
    """Characters ``re.IGNORECASE`` equates share one key (so the map back finds every match's
    substitution); checked on every class of Unicode, and the rule checked against ``re``."""
    classes = _ignorecase_classes()
    assert len(classes) > 1000
    for members in classes:
        assert len({_key(c) for c in members}) == 1, members
    for members in classes[::50]:  # the rule above is re's own
        assert all(re.fullmatch(re.escape(members[0]), c, re.IGNORECASE) for c in members)


@pytest.mark.parametrize(("text", "expected"), [("Straße", "strasse"), ("A\t \nB", "a b"),
                                                 ("\u0130I\u0131", "iii")])
def test_the_key_folds_case_and_whitespace(text: str, expected: str) -> None:
    """The key: whitespace runs as one space, casefold, the four i's as i."""
    assert _key(text) == expected
