"""Tests of faircode.core.schema's bounded YAML reader: merge keys, expanded size, depth, cycles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from faircode.core.errors import ConfigError, ManifestError
from faircode.core.schema import (
    MAX_YAML_DEPTH,
    UniqueKeyLoader,
    check_expanded_size,
    parse_yaml,
    read_yaml,
)


def test_own_keys_override_merged_ones_and_keep_the_merged_order() -> None:
    """``{<<: *base, b: 3}`` is base with b replaced, keys in the merged mapping's order."""
    doc = parse_yaml("base: &base {a: 1, b: 2}\nover: {<<: *base, b: 3, c: 4}\n")
    assert isinstance(doc, dict)
    assert doc == {"base": {"a": 1, "b": 2}, "over": {"a": 1, "b": 3, "c": 4}}
    assert list(doc["over"]) == ["a", "b", "c"]


def test_earlier_mappings_of_a_merge_list_win() -> None:
    """In ``<<: [*x, *y]`` a key of x overrides the same key of y (YAML 1.1 merge key)."""
    doc = parse_yaml("x: &x {k: x}\ny: &y {k: y, only_y: 1}\nz: {<<: [*x, *y]}\n")
    assert doc["z"] == {"k": "x", "only_y": 1}  # type: ignore[index]


def test_merge_matches_pyyaml_where_no_key_repeats() -> None:
    """Without a repeated own key the result is PyYAML's own ``safe_load``."""
    text = "a: &a {p: 1, q: [1, 2]}\nb: &b {q: 3, r: 4}\nc: {<<: [*a, *b], s: 5}\n"
    assert parse_yaml(text) == yaml.safe_load(text)


def test_merge_of_a_scalar_is_one_line() -> None:
    """``<<: 1`` names its line: a merge takes a mapping or a list of mappings."""
    with pytest.raises(ConfigError, match=r"^line 2: <<: expected a mapping or a list of "):
        parse_yaml("a: 1\nb: {<<: 1}\n")


def test_expanded_size_counts_every_alias_use() -> None:
    """Hand count: mapping 1 + key a 1 + [1, 2] 3 + key b 1 + [*x, *x] 1 + 3 + 3 = 13 values."""
    node = UniqueKeyLoader("a: &x [1, 2]\nb: [*x, *x]\n").get_single_node()
    assert node is not None and check_expanded_size(node) == 13


def test_budget_names_the_line_of_the_smallest_value_over_it() -> None:
    """Budget 10: the anchored list (5 values) fits, b's list of it twice (11) fails at line 2."""
    node = UniqueKeyLoader("a: &x [1, 2, 3, 4]\nb: [*x, *x]\n").get_single_node()
    assert node is not None
    with pytest.raises(ConfigError, match=r"^line 2: expected at most 10 values .* got 11 "):
        check_expanded_size(node, budget=10)


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    """A recursive alias would expand forever: one line naming the anchor's line."""
    with pytest.raises(ConfigError, match=r"^line 1: expected a finite value, got a value "
                                          r"holding an alias to itself$"):
        parse_yaml("a: &a\n  - *a\n")


@pytest.mark.parametrize(("depth", "ok"), [(MAX_YAML_DEPTH, True), (MAX_YAML_DEPTH + 1, False)])
def test_depth_limit_is_exact(depth: int, ok: bool) -> None:
    """MAX_YAML_DEPTH nested lists parse; one more is refused while composing."""
    text = "[" * depth + "]" * depth
    if ok:
        assert parse_yaml(text) is not None
    else:
        with pytest.raises(ConfigError, match=r"^line 1: expected at most 64 levels"):
            parse_yaml(text)


def test_read_yaml_prefixes_the_file_and_uses_the_callers_error(tmp_path: Path) -> None:
    """Errors of read_yaml start with the path and are of the class the caller asked for."""
    path = tmp_path / "audit.yaml"
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(ManifestError) as info:
        read_yaml(path, error=ManifestError)
    assert str(info.value) == (f"{path}: line 2: expected each key once in a mapping, got 'a' "
                               "again (first at line 1)")


def test_an_invalid_date_is_one_line() -> None:
    """A scalar PyYAML resolves as a timestamp but cannot build names its line, not ValueError."""
    with pytest.raises(ConfigError, match=r"^line 1: expected a valid timestamp, got "
                                          r"'2024-13-45' \(str\)$"):
        parse_yaml("when: 2024-13-45\n")
