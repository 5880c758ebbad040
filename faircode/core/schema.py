"""Typed, one-line-error accessors and the one bounded YAML reader of faircode's schemas.

Private helpers of :mod:`faircode.audit.manifest`, :mod:`faircode.core.config` and
:mod:`faircode.stats.flips`: :class:`Checker` turns "is this value of the right shape?" into a
:class:`~faircode.core.errors.ManifestError` whose one line names the file, the key path, the
expectation and the value with its type; :func:`read_yaml` reads every YAML file faircode takes
(params, manifests, axes files) and turns every malformed input into one line
``<file>: line L: expected ..., got ...``.

Design decisions of :func:`read_yaml`
-------------------------------------
* **Bounded before it is built.**  The document is composed into PyYAML's node graph (where an
  alias is a reference to its anchor's node, so composing costs the file's size), then its
  *expanded* size is counted with one memo per node — the number of values a consumer would meet
  walking it with every alias followed — and refused above :data:`MAX_YAML_VALUES` before any
  Python object is constructed.  A 1 KB alias bomb of 10**9 leaves is refused in microseconds; a
  recursive alias (a value containing itself) is refused too.  Nesting deeper than
  :data:`MAX_YAML_DEPTH` is refused while composing (PyYAML composes recursively, so 5,000
  nested ``[`` would otherwise end in a ``RecursionError``), and a file is read through
  :func:`faircode.core.files.read_bounded`: a regular file only (a FIFO or ``/dev/zero`` is one
  line, not a hang or a ``MemoryError``), and never more than :data:`MAX_YAML_BYTES` + 1 bytes
  of it, whatever its ``st_size`` says.  The shipped files are far below every limit (a manifest:
  ~300 values, depth 5).
* **UTF-8 only**, decoded by faircode so that a bad byte is named by line and byte offset.
* **A key repeated within one mapping is an error** (plain ``safe_load`` keeps the last), but a
  **merge key** ``<<`` is YAML 1.1's merge, not a duplicate: the merged mappings' keys come first
  and are overridden by the mapping's own keys; in ``<<: [*a, *b]`` the earlier mapping wins.
* A scalar PyYAML cannot construct (a 5,000-digit integer, the date ``2024-13-45``) is one line
  naming its line instead of Python's ``ValueError``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import yaml

from faircode.core.errors import ConfigError, ManifestError, config_error, describe
from faircode.core.files import read_bounded
from faircode.core.text import visible_or_none

Scalar = str | int | float | bool

__all__ = [
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_VALUES",
    "Checker",
    "Scalar",
    "UniqueKeyLoader",
    "check_expanded_size",
    "decode_utf8",
    "parse_yaml",
    "read_yaml",
]


MAX_YAML_BYTES = 4 * 2**20
"""A YAML file larger than this (4 MiB) is refused after reading one byte more."""
MAX_YAML_VALUES = 100_000
"""Most values (scalars, lists, mappings) a YAML document may expand to, aliases followed."""
MAX_YAML_DEPTH = 64
"""Most levels of nested lists and mappings in a YAML document."""
_MERGE_TAG = "tag:yaml.org,2002:merge"


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a depth limit, YAML 1.1 merge keys and no repeated keys.

    Use :func:`parse_yaml` / :func:`read_yaml`, which also bound the expanded size; the loader
    alone bounds only the depth.  Its errors are :class:`~faircode.core.errors.ConfigError` messages
    starting with ``line L:`` (the caller prefixes the file).
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):  # a reference: no deeper, and composed already
            return cast(yaml.Node, super().compose_node(parent, index))
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(f"line {line}: expected at most {MAX_YAML_DEPTH} levels of "
                                  f"nested lists and mappings, got more")
            return cast(yaml.Node, super().compose_node(parent, index))
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            if isinstance(exc, ConfigError):
                raise
            line = node.start_mark.line + 1
            kind = str(node.tag).rsplit(":", 1)[-1]
            if kind == "int" and "digits" in str(exc):
                raise ConfigError(
                    f"line {line}: expected an integer of at most "
                    f"{sys.get_int_max_str_digits() or 4300} digits, got {describe(node.value)}"
                ) from None
            raise ConfigError(f"line {line}: expected a valid {kind}, got "
                              f"{describe(node.value)}") from None


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    """A mapping: merged keys (``<<``) first, then the mapping's own, each written once."""
    merged: dict[Any, Any] = {}
    own: dict[Any, Any] = {}
    lines: dict[Any, int] = {}  # own key -> its line
    merge_line = 0
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if key_node.tag == _MERGE_TAG:
            if merge_line:
                raise ConfigError(f"line {line}: expected each key once in a mapping, got '<<' "
                                  f"again (first at line {merge_line})")
            merge_line = line
            for source in _merge_sources(value_node, line):
                for key, value in loader.construct_object(source, deep=True).items():
                    merged.setdefault(key, value)  # earlier mappings of <<: [...] win
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in own
        except TypeError:  # unhashable key: reported later as an unknown key
            duplicate = False
            key = _shown(key)
        if duplicate:
            raise ConfigError(f"line {line}: expected each key once in a mapping, got "
                              f"{_shown(key)} again (first at line {lines[key]})")
        lines[key] = line
        own[key] = loader.construct_object(value_node, deep=True)
    return {**merged, **own}


def _shown(value: object) -> str:
    """``repr(value)``, bounded like every error value (:func:`~faircode.core.errors.describe`)."""
    return describe(value).removesuffix(f" ({type(value).__name__})")


def _merge_sources(node: yaml.Node, line: int) -> list[yaml.MappingNode]:
    """The mappings a ``<<`` merges, in precedence order (YAML 1.1 merge key)."""
    if isinstance(node, yaml.MappingNode):
        return [node]
    if isinstance(node, yaml.SequenceNode) and all(
            isinstance(n, yaml.MappingNode) for n in node.value):
        return list(node.value)
    raise ConfigError(f"line {line}: <<: expected a mapping or a list of mappings to merge, got "
                      f"{describe(getattr(node, 'value', node))}")


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def check_expanded_size(root: yaml.Node, *, budget: int = MAX_YAML_VALUES) -> int:
    """Return how many values ``root`` expands to (aliases followed); raise above ``budget``.

    An iterative post-order walk with one memo per node, so a node reached through many aliases
    is counted in O(1) after its first visit and the cost is linear in the composed graph.
    Raises :class:`ConfigError` naming the line of the smallest value over the budget, or of a
    value that contains itself.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        if finished:
            open_nodes.discard(id(node))
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > budget:
                raise ConfigError(
                    f"line {node.start_mark.line + 1}: expected at most {budget:,} values once "
                    f"aliases are expanded, got {total:,} (an alias expanding exponentially?)")
            sizes[id(node)] = total
            continue
        if id(node) in sizes:
            continue
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                raise ConfigError(f"line {child.start_mark.line + 1}: expected a finite value, "
                                  "got a value holding an alias to itself")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _yaml_error(exc: yaml.YAMLError, text: str) -> ConfigError:
    """The one line of a PyYAML syntax, reader or constructor error (``line L: ...``)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        return ConfigError(f"line {line}: expected printable YAML text, got the character "
                           f"{describe(chr(cast(int, exc.character)))}")
    where = f"line {mark.line + 1}" if mark is not None else "top level"
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if isinstance(exc, yaml.constructor.ConstructorError):  # e.g. a !!python/object tag
        return ConfigError(f"{where}: expected valid YAML without language-specific tags, got "
                           f"a value it cannot construct ({problem})")
    return ConfigError(f"{where}: expected valid YAML, got a syntax error ({problem})")


def parse_yaml(text: str) -> object:
    """Parse one YAML document within the bounds of this module; ``None`` when it is empty.

    Raises :class:`ConfigError` whose message starts with ``line L:`` (callers prefix the file).
    """
    try:
        loader = UniqueKeyLoader(text)
    except yaml.YAMLError as exc:  # a non-printable character, found when the text is read
        raise _yaml_error(exc, text) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expanded_size(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text) from None
    finally:
        loader.dispose()


def decode_utf8(data: bytes, *, where: str) -> str:
    """``data`` as UTF-8 text; a bad byte is one :class:`ConfigError` line naming its offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{where}: line {line}: expected UTF-8 text, got byte "
                          f"0x{data[exc.start]:02x} at byte offset {exc.start}") from None


def read_yaml(path: Path, *, error: type[ConfigError] = ConfigError) -> object:
    """Read the YAML file at ``path`` within this module's bounds; ``None`` when it is empty.

    Every malformed input is one ``error`` line ``<path>: line L: expected ..., got ...``
    (not a regular file, size, UTF-8, syntax, depth, expanded size, repeated keys,
    unconstructable scalars).  A missing or unreadable file raises ``OSError`` for the caller
    to word.
    """
    try:
        data = read_bounded(path, limit=MAX_YAML_BYTES, error=error, what="YAML file")
        return parse_yaml(decode_utf8(data, where=str(path)))
    except ConfigError as exc:
        text = str(exc)
        raise error(text if text.startswith(f"{path}: ") else f"{path}: {text}") from None


class Checker:
    """Typed accessors that raise one-line :class:`ManifestError` messages prefixed by the file."""

    def __init__(self, file: Path) -> None:
        self.file = file

    def fail(self, where: str, expected: str, got: object) -> ManifestError:
        return cast(
            ManifestError, config_error(f"{self.file}: {where}", expected, got, cls=ManifestError)
        )

    def mapping(self, value: object, where: str, keys: Mapping[str, bool]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where or "top level", "a mapping", value)
        prefix = f"{where}." if where else ""
        for key in value:
            if key not in keys:
                raise self.fail(f"{prefix}{key}", f"one of the keys {', '.join(keys)}", key)
        for key, required in keys.items():
            if required and key not in value:
                raise ManifestError(
                    f"{self.file}: {prefix}{key}: expected a value (required key), got nothing"
                )
        return value

    def string(self, value: object, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, "a non-empty string", value)
        return value

    def visible(self, value: str, where: str) -> str:
        """``value`` unless it holds a hidden character (:mod:`faircode.core.text`): a format
        or control character such as a zero-width space or a bidirectional override."""
        hidden = visible_or_none(value)
        if hidden is not None:
            raise self.fail(where, f"visible text (no format or control character; {hidden})",
                            value)
        return value

    def optional_string(self, value: object, where: str) -> str | None:
        return None if value is None else self.string(value, where)

    def scalar(self, value: object, where: str) -> Scalar:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(where, "a finite number, string or boolean", value)
        if not isinstance(value, str | int | float | bool):
            raise self.fail(where, "a string, number or boolean", value)
        return value

    def scalars(self, value: object, where: str) -> tuple[Scalar, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(where, "a non-empty list", value)
        return tuple(self.scalar(v, f"{where}[{i}]") for i, v in enumerate(value))

    def columns(self, value: object, where: str, *, allow_empty: bool) -> tuple[str, ...]:
        if not isinstance(value, list) or (not value and not allow_empty):
            raise self.fail(
                where, "a list of column names" + ("" if allow_empty else " (non-empty)"), value
            )
        names = tuple(self.string(v, f"{where}[{i}]") for i, v in enumerate(value))
        for i, name in enumerate(names):
            if name in names[:i]:
                raise self.fail(f"{where}[{i}]", "each column listed once", name)
        return names

    def number(self, value: object, where: str) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise self.fail(where, "a finite number", value)
        return float(value)

    def choice(self, value: object, where: str, options: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in options:
            raise self.fail(where, f"one of {', '.join(options)}", value)
        return value
