"""Tests of the counterfactual perturbation engine (faircode.counterfactual.perturb)."""

from __future__ import annotations

import re
from collections import OrderedDict, namedtuple
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faircode import AxisSpec, Perturbation, PerturbationKind, Substitution, perturb
from faircode.core.errors import ConfigError, PerturbationError
from faircode.counterfactual.perturb import axis_from_config, transfer_case

EXPLICIT, PROXY = PerturbationKind.EXPLICIT, PerturbationKind.PROXY

GENDER = AxisSpec(
    name="gender",
    substitutions=(
        Substitution("he", "she"),
        Substitution("him", "her"),
        Substitution("his", "her"),
        Substitution("man", "woman"),
        Substitution("mr", "ms"),
    ),
)
SWAP = AxisSpec(
    "swap",
    (
        Substitution("he", "she"),
        Substitution("she", "he"),
        Substitution("his", "her"),
        Substitution("her", "his"),
        Substitution("man", "woman"),
        Substitution("woman", "man"),
    ),
)


def one(payload: object, *subs: Substitution) -> object:
    """Apply a single-kind axis made of ``subs`` and return the perturbed payload."""
    (result,) = perturb(payload, [AxisSpec("a", subs)])
    return result.perturbed


# --- matching -------------------------------------------------------------------------------


def test_spec_example() -> None:
    """The spec's example letter becomes the female counterfactual."""
    (p,) = perturb({"letter": "He is a hardworking man; his record is strong."}, [GENDER])
    assert p.perturbed == {"letter": "She is a hardworking woman; her record is strong."}
    assert p.fired == (("he", 1), ("his", 1), ("man", 1))
    assert p.changed is True
    assert (p.axis, p.kind) == ("gender", EXPLICIT)


def test_uppercase_word_gives_uppercase_replacement() -> None:
    """HIS becomes HER."""
    assert one("HIS RECORD", Substitution("his", "her")) == "HER RECORD"


def test_swap_axis_swaps_in_one_pass() -> None:
    """he→she and she→he applied together swap instead of undoing each other."""
    (p,) = perturb("she told him he was her man", [SWAP])
    assert p.perturbed == "he told him she was his woman"
    assert p.fired == (("he", 1), ("she", 1), ("her", 1), ("man", 1))


def test_no_substring_edits() -> None:
    """'he' never edits inside 'the', 'hello', 'ahead' or 'she'."""
    text = "the hello ahead she_he he1 1he"
    assert one(text, Substitution("he", "HIM")) == text


def test_case_insensitive_match() -> None:
    """A lowercase pattern matches any casing of the word."""
    assert one("Man MAN man", Substitution("man", "woman")) == "Woman WOMAN woman"


def test_longest_pattern_first() -> None:
    """A longer pattern wins over a shorter one that is its prefix, whatever the declaration."""
    subs = (Substitution("mr", "ms"), Substitution("mr smith", "ms jones"))
    assert one("Mr Smith and Mr Brown", *subs) == "Ms Jones and Ms Brown"


def test_longest_first_is_by_pattern_not_replacement_length() -> None:
    """The longer *pattern* wins even when the shorter pattern has the longer replacement."""
    subs = (Substitution("mr", "mister of the house"), Substitution("mr smith", "x"))
    assert one("Mr Smith and Mr Brown", *subs) == "X and Mister of the house Brown"


def test_multiword_pattern_matches_any_whitespace_run() -> None:
    """A multi-word pattern matches across several spaces, tabs and newlines."""
    out = one("a young \t\n man here", Substitution("young man", "old woman"))
    assert out == "a old woman here"


def test_multiword_pattern_is_whole_word() -> None:
    """A multi-word pattern is not matched inside longer words at either end."""
    text = "ayoung man youngman young mans"
    assert one(text, Substitution("young man", "old woman")) == text


def test_dr_matches_before_space_comma_and_end() -> None:
    """'Dr.' matches in 'Dr. Smith', before a comma and at the end of the text."""
    assert one("Dr. Smith, Dr., dr.", Substitution("Dr.", "Prof.")) == "Prof. Smith, Prof., prof."


def test_dr_not_glued_to_word() -> None:
    """'Dr.' does not match when a word character follows the dot or precedes the D."""
    text = "Dr.Smith XDr. Smith"
    assert one(text, Substitution("Dr.", "Prof.")) == text


def test_cpp_pattern_edges() -> None:
    """'C++' matches as a word but not glued to a following word character ('C++x')."""
    out = one("C++ developer, (C++) C++x aC++", Substitution("C++", "Rust"))
    assert out == "Rust developer, (Rust) C++x aC++"


def test_pattern_is_literal_not_regex() -> None:
    """Regex metacharacters in a pattern are matched literally."""
    assert one("a.c abc", Substitution("a.c", "X")) == "x abc"
    assert one("(x) x", Substitution("(x)", "y")) == "y x"


# --- case transfer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matched", "replacement", "expected"),
    [
        ("he", "She", "she"),  # lowercase -> lowercase
        ("h", "Xy", "xy"),  # single lowercase letter -> lowercase
        ("HE", "she", "SHE"),  # uppercase, two letters -> uppercase
        ("He", "she", "She"),  # Title -> first letter capitalised
        ("Greg", "deShawn", "DeShawn"),  # Title -> rest as written
        ("I", "we", "We"),  # single capital letter counts as Title
        ("hE", "sHe", "sHe"),  # other mixed case -> as written
        ("McDonald", "smith", "smith"),  # other mixed case -> as written
        ("90210", "10453", "10453"),  # no cased letter -> as written
        ("Young Man", "old woman", "Old Woman"),  # per-word Title
        ("Greg", "jamal smith", "Jamal smith"),  # one Title word: only the first letter
        ("Young man", "old woman", "Old woman"),  # sentence Title
        ("YOUNG MAN", "old woman", "OLD WOMAN"),  # uppercase multi-word
        ("young Man", "old woman", "old woman"),  # mixed multi-word -> as written
        ("Dr.", "prof.", "Prof."),  # punctuation does not affect the case class
    ],
)
def test_case_transfer_rule(matched: str, replacement: str, expected: str) -> None:
    """Every branch of the documented case rule gives the hand-written result."""
    assert transfer_case(matched, replacement) == expected


def test_case_transfer_in_text() -> None:
    """Case transfer applies to matches inside a text, per occurrence."""
    out = one("greg Greg GREG gReG", Substitution("greg", "jamal"))
    assert out == "jamal Jamal JAMAL jamal"


# --- payloads -------------------------------------------------------------------------------


def test_nested_payload_edits_only_string_leaves() -> None:
    """Strings in nested containers are edited; keys, numbers, None and bools are untouched."""
    payload = {"he": ["he", ("his", 3, None)], "n": 1.5, "ok": True, "x": {"y": "man"}}
    (p,) = perturb(payload, [GENDER])
    out: Any = p.perturbed
    assert out == {"he": ["she", ("her", 3, None)], "n": 1.5, "ok": True,
                           "x": {"y": "woman"}}
    assert type(out["he"][1]) is tuple
    assert p.fired == (("he", 1), ("his", 1), ("man", 1))


def test_original_payload_not_mutated() -> None:
    """The original payload is left exactly as it was and kept on the result."""
    payload = {"a": ["he"], "b": {"c": "his"}}
    (p,) = perturb(payload, [GENDER])
    assert payload == {"a": ["he"], "b": {"c": "his"}}
    assert p.original is payload
    out: Any = p.perturbed
    out["a"].append("x")
    out["b"]["d"] = "y"
    assert payload == {"a": ["he"], "b": {"c": "his"}}


def test_container_subclasses_preserved() -> None:
    """OrderedDict and namedtuple payloads come back as the same types."""
    Pair = namedtuple("Pair", "left right")
    payload = OrderedDict(p=Pair("he", "him"))
    out = one(payload, Substitution("he", "she"))
    assert type(out) is OrderedDict and type(out["p"]) is Pair
    assert out["p"] == Pair("she", "him")


def test_unsupported_leaf_names_its_path() -> None:
    """A leaf of an unsupported type raises TypeError naming its path in the payload."""
    with pytest.raises(TypeError, match=re.escape("payload['letters'][2]: expected a string")):
        perturb({"letters": ["a", "b", b"he"]}, [GENDER])


def test_unchanged_payload_kept_and_flagged() -> None:
    """A payload where nothing matches yields a result with changed=False and no firings."""
    (p,) = perturb("nothing to see", [GENDER])
    assert (p.perturbed, p.changed, p.fired) == ("nothing to see", False, ())


def test_explicit_and_proxy_are_separate_explicit_first() -> None:
    """Explicit and proxy substitutions of one axis give two perturbations, explicit first."""
    axis = AxisSpec("g", (Substitution("Greg", "Lakisha", kind=PROXY), Substitution("he", "she")))
    a, b = perturb("He is Greg", [axis, AxisSpec("h", (Substitution("is", "was"),))])[:2]
    assert (a.kind, a.perturbed, a.fired) == (EXPLICIT, "She is Greg", (("he", 1),))
    assert (b.kind, b.perturbed, b.fired) == (PROXY, "He is Lakisha", (("Greg", 1),))


def test_results_follow_axis_order() -> None:
    """Results come in the order the axes were given; an absent kind yields nothing."""
    axes = [AxisSpec("z", (Substitution("a", "b"),)), AxisSpec("y", (Substitution("c", "d"),))]
    assert [(p.axis, p.kind) for p in perturb("a c", axes)] == [("z", EXPLICIT), ("y", EXPLICIT)]


def test_same_pattern_allowed_in_both_kinds() -> None:
    """One pattern may appear once as explicit and once as proxy in an axis."""
    axis = AxisSpec("g", (Substitution("he", "she"), Substitution("he", "they", kind=PROXY)))
    assert [p.perturbed for p in perturb("he", [axis])] == ["she", "they"]


# --- validation -----------------------------------------------------------------------------


def test_no_axes_raises_with_reason() -> None:
    """perturb with an empty axis list refuses and explains that axes are the caller's choice."""
    with pytest.raises(PerturbationError, match=r"no built-in axis list.*editorial"):
        perturb("he", [])


def test_single_axis_not_in_sequence_rejected() -> None:
    """Passing a bare AxisSpec instead of a sequence is an error, not silently wrapped."""
    with pytest.raises(PerturbationError, match="expected a sequence of AxisSpec"):
        perturb("he", GENDER)  # type: ignore[arg-type]


def test_duplicate_axis_names_rejected() -> None:
    """Two axes with one name in one call are rejected, naming the axis."""
    with pytest.raises(PerturbationError, match="axes\\[1\\]: duplicate axis name 'gender'"):
        perturb("he", [GENDER, GENDER])


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_axis_name_rejected(name: str) -> None:
    """An axis needs a non-empty name."""
    with pytest.raises(PerturbationError, match="axis name: expected a non-empty string"):
        AxisSpec(name, (Substitution("he", "she"),))


def test_axis_without_substitutions_rejected() -> None:
    """An axis with no substitutions is rejected, naming the axis."""
    with pytest.raises(PerturbationError, match="axis 'g': has no substitutions"):
        AxisSpec("g", ())


@pytest.mark.parametrize("pattern", ["", "  "])
def test_empty_pattern_rejected(pattern: str) -> None:
    """An empty or whitespace-only pattern is rejected."""
    with pytest.raises(PerturbationError, match="pattern must not be empty"):
        Substitution(pattern, "x")


def test_pattern_with_edge_whitespace_rejected() -> None:
    """Leading or trailing whitespace in a pattern is rejected, not stripped silently."""
    with pytest.raises(PerturbationError, match="substitution ' he': pattern must not begin"):
        Substitution(" he", "she")


def test_pattern_equal_to_replacement_rejected() -> None:
    """A replacement equal to the pattern (case-insensitively) is rejected, naming the pattern."""
    with pytest.raises(PerturbationError, match="substitution 'He': replacement 'hE' equals"):
        Substitution("He", "hE")


def test_duplicate_pattern_rejected_case_insensitively() -> None:
    """Two patterns equal up to case in one axis and kind are rejected, naming axis and pattern."""
    with pytest.raises(PerturbationError, match="axis 'g': pattern 'HE' duplicates 'he'"):
        AxisSpec("g", (Substitution("he", "she"), Substitution("HE", "they")))


def test_kind_must_be_perturbation_kind() -> None:
    """A kind given as a string is rejected, naming the pattern and the value received."""
    with pytest.raises(PerturbationError, match=r"substitution 'he': kind: .*'proxy' \(str\)"):
        Substitution("he", "she", kind="proxy")  # type: ignore[arg-type]


def test_non_substitution_in_axis_rejected() -> None:
    """An axis element that is not a Substitution is rejected, naming the axis and index."""
    with pytest.raises(PerturbationError, match="axis 'g': substitutions\\[0\\]: expected"):
        AxisSpec("g", (("he", "she"),))  # type: ignore[arg-type]


def test_types_are_frozen() -> None:
    """Substitution, AxisSpec and Perturbation cannot be mutated after construction."""
    (p,) = perturb("he", [GENDER])
    for obj, field in ((GENDER, "name"), (GENDER.substitutions[0], "pattern"), (p, "changed")):
        with pytest.raises(AttributeError):
            setattr(obj, field, "x")


def test_list_of_substitutions_stored_as_tuple() -> None:
    """A list of substitutions is stored as a tuple."""
    axis = AxisSpec("g", [Substitution("he", "she")])  # type: ignore[arg-type]
    assert axis.substitutions == (Substitution("he", "she"),)


def test_perturbation_rejects_inconsistent_changed() -> None:
    """A Perturbation whose changed flag contradicts its firings cannot be built."""
    with pytest.raises(PerturbationError, match="contradicts"):
        Perturbation("g", EXPLICIT, "he", "she", (), True)


# --- axis_from_config -----------------------------------------------------------------------

WHERE = "audits/compas/audit.yaml: counterfactual_axes[0]"


def test_axis_from_config_builds_axis() -> None:
    """A valid mapping gives the AxisSpec it describes, kind defaulting to explicit."""
    item = {"name": "g", "substitutions": [{"pattern": "he", "replacement": "she"},
                                           {"pattern": "Greg", "replacement": "Jamal",
                                            "kind": "proxy"}]}
    assert axis_from_config(item, where=WHERE) == AxisSpec(
        "g", (Substitution("he", "she"), Substitution("Greg", "Jamal", kind=PROXY))
    )


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"name": "g", "substitutions": [{"pattern": "a", "replacement": "b"},
                                         {"pattern": "he", "replacement": "she",
                                          "kind": "implicit"}]},
         f"{WHERE}.substitutions[1].kind: expected one of explicit, proxy, got 'implicit' (str)"),
        ({"name": "g", "substitutions": [], "colour": 1},
         f"{WHERE}: expected only keys name, substitutions; unknown key, got 'colour' (str)"),
        ({"substitutions": []}, f"{WHERE}.name: expected a value, got nothing"),
        ({"name": 3, "substitutions": []}, f"{WHERE}.name: expected a string, got 3 (int)"),
        ({"name": "g", "substitutions": "he"},
         f"{WHERE}.substitutions: expected a list of substitutions, got 'he' (str)"),
        ({"name": "g", "substitutions": [{"pattern": "he"}]},
         f"{WHERE}.substitutions[0].replacement: expected a value, got nothing"),
        ({"name": "g", "substitutions": [{"pattern": "he", "replacement": 1}]},
         f"{WHERE}.substitutions[0].replacement: expected a string, got 1 (int)"),
        ({"name": "g", "substitutions": [{"pattern": "he", "replacement": "HE"}]},
         f"{WHERE}.substitutions[0]: substitution 'he': replacement 'HE' equals"),
        ({"name": "g", "substitutions": []}, f"{WHERE}: axis 'g': has no substitutions"),
        (["g"], f"{WHERE}: expected a mapping with keys name, substitutions, got ['g'] (list)"),
    ],
)
def test_axis_from_config_errors(item: object, message: str) -> None:
    """Each malformed mapping raises a one-line ConfigError naming the key path."""
    with pytest.raises(ConfigError) as info:
        axis_from_config(item, where=WHERE)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


# --- properties -----------------------------------------------------------------------------

WORDS = ["the", "hello", "shelf", "ahead", "human", "shed", "hers", "manly", "x", "HEx", "Theo"]
SEPARATORS = st.sampled_from([" ", "  ", "\n", ", ", ". ", "; ", "-", "'"])


# re.IGNORECASE also equates the Turkish dotless/dotted i and the long s with i and s.
RE_FOLDS = str.maketrans({"ı": "i", "İ": "i", "ſ": "s", "K": "k"})


def tokens(text: str) -> set[str]:
    """Independent whole-word tokeniser used to decide whether a pattern occurs."""
    return {t.translate(RE_FOLDS).casefold() for t in re.findall(r"\w+", text)}


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_property_identity_when_no_pattern_occurs(text: str) -> None:
    """Any text containing none of the swap words as a whole word comes back unchanged."""
    patterns = {"he", "she", "his", "her", "man", "woman"}
    if tokens(text) & patterns:
        return
    (p,) = perturb(text, [SWAP])
    assert (p.perturbed, p.changed, p.fired) == (text, False, ())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), SEPARATORS), max_size=12))
def test_property_no_substring_edits(parts: list[tuple[str, str]]) -> None:
    """Words merely containing 'he', 'man' or 'her' are never edited."""
    text = "".join(w + s for w, s in parts)
    assert perturb(text, [SWAP])[0].perturbed == text


SWAP_WORDS = st.sampled_from(["he", "she", "his", "her", "man", "woman"]).flatmap(
    lambda w: st.sampled_from([w, w.upper(), w.title()])
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(SWAP_WORDS, SEPARATORS), min_size=1, max_size=12))
def test_property_swap_twice_is_identity(parts: list[tuple[str, str]]) -> None:
    """Applying a swap axis twice restores any text made of the swapped words."""
    text = "".join(w + s for w, s in parts)
    once = perturb(text, [SWAP])[0]
    assert once.changed
    assert perturb(once.perturbed, [SWAP])[0].perturbed == text


LEAVES = st.one_of(st.text(max_size=20), st.integers(), st.floats(allow_nan=False), st.none(),
                   st.booleans(), st.sampled_from(["he", "his man", "He said"]))
PAYLOADS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=20,
)


def same_structure(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` have the same container types, keys and non-string leaves."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_structure(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same_structure(x, y) for x, y in zip(a, b, strict=True))
    return isinstance(a, str) or a == b


@settings(max_examples=200, deadline=None)
@given(PAYLOADS)
def test_property_structure_preserved(payload: object) -> None:
    """Perturbing keeps every container type, key and non-string leaf of a nested payload."""
    (p,) = perturb(payload, [SWAP])
    assert same_structure(payload, p.perturbed)
