"""Tests of the JSONL reader: splitting on newlines only, nesting depth, bounded parsing, output."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from faircode.core.errors import ConfigError
from faircode.counterfactual._jsonl import (
    MAX_JSON_DEPTH,
    dumps_line,
    nesting_depth,
    parse_line,
    split_lines,
)

TEXT = st.text(alphabet=st.sampled_from('ab"\\[]{}\u2028 :,'), max_size=6)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=20,
)


def reference_depth(value: object) -> int:
    """Nesting depth of a parsed value: each list or dict adds one level (slow reference)."""
    if isinstance(value, list):
        return 1 + max((reference_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((reference_depth(v) for v in value.values()), default=0)
    return 0


@given(VALUES)
def test_nesting_depth_matches_the_parsed_structure(value: object) -> None:
    """The vectorised bracket count equals the depth of the value the text encodes."""
    assert nesting_depth(json.dumps(value, ensure_ascii=False)) == reference_depth(value)


def test_split_lines_splits_on_newline_only() -> None:
    """U+2028, U+0085 and form feeds stay inside their line; a CRLF's \\r is dropped."""
    assert split_lines('{"a": "x\u2028y"}\r\n{"b": "\x85\x0c"}\n\n') == [
        '{"a": "x\u2028y"}', '{"b": "\x85\x0c"}', ""]


@pytest.mark.parametrize(("line", "message"), [
    ('{"x": 1e999}', "expected a finite number, got '1e999' (str), which overflows"),
    ('{"x": -Infinity}', "expected a JSON number, got -Infinity"),
    ('{"x": ' + "9" * 4301 + "}", "expected an integer of at most 4300 digits, got one of 4301"),
    ('{"x": ', "expected a JSON object, got invalid JSON"),
])
def test_parse_line_refuses_what_is_not_bounded_json(line: str, message: str) -> None:
    """Non-finite numbers, over-long integers and broken JSON are one line naming the place."""
    with pytest.raises(ConfigError) as info:
        parse_line(line, where="in.jsonl:3")
    assert str(info.value).startswith(f"in.jsonl:3: {message}")


def test_the_largest_allowed_integer_parses() -> None:
    """An integer of exactly 4,300 digits is accepted and written back unchanged."""
    line = '{"x": ' + "9" * 4300 + "}"
    assert dumps_line(parse_line(line, where="in.jsonl:1")) == line


def test_a_line_at_the_depth_limit_round_trips() -> None:
    """MAX_JSON_DEPTH nested arrays parse and are written back (recursion headroom added)."""
    line = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert dumps_line(parse_line(line, where="in.jsonl:1")) == line
