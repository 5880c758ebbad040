"""Typed, one-line-error accessors and a strict safe YAML loader for faircode's schemas.

Private helpers of :mod:`faircode.audit.manifest`: :class:`Checker` turns "is this value of the
right
shape?" into a :class:`~faircode.core.errors.ManifestError` whose one line names the file, the key
path, the expectation and the value with its type; :class:`UniqueKeyLoader` is PyYAML's safe
loader that also refuses a key repeated within one mapping (plain ``safe_load`` keeps the last);
it raises :class:`~faircode.core.errors.ConfigError` and every YAML reader of faircode (manifests,
axes files) uses it and prefixes the error with its file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import yaml

from faircode.core.errors import ConfigError, ManifestError, config_error

Scalar = str | int | float | bool

__all__ = ["Checker", "Scalar", "UniqueKeyLoader"]


class UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that rejects a key repeated within one mapping."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: reported later as an unknown key
            duplicate = False
            key = repr(key)
        if duplicate:
            line = key_node.start_mark.line + 1
            raise ConfigError(f"line {line}: key {key!r} appears twice in one mapping")
        seen[key] = loader.construct_object(value_node, deep=True)
    return seen


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


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
